// Convolution and pooling on the GPU, forward and backward (kernels/cuda/device_ops.h):
// direct kernels compiled with NVRTC, NCHW, float32 and float64. Correct for every window
// the CPU accepts (padding, 'same', stride, dilation, groups, ceil_mode); not tuned: a
// library (cuDNN) is the way to peak speed, these are the fallback the issue allows.
//
// cuDNN runs the three convolution passes where it is loaded and takes the window
// (kernels/cuda/cudnn.h); these kernels are the fallback and the PIJIT_CUDNN=0 path:
//   conv2d             one thread per output element, summing its window
//   conv2d_grad_input  one thread per input element, gathering the outputs whose windows
//                      hold it (no atomics: deterministic)
//   conv2d_grad_weight one block per weight element, threads striding over N x OH x OW and a
//                      shared-memory tree to combine them
//   pooling            one thread per output element; the gradient scatters with atomicAdd
//                      into a zeroed input gradient (max: to the window's first maximum, as
//                      on the CPU; avg: evenly, with the forward's divisor)
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kernels/cpu/window.h"
#include "kernels/cuda/allocator.h"
#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/cudnn.h"
#include "kernels/cuda/device_ops.h"
#include "kernels/cuda/kernel_source.h"
#include "kernels/cuda/module_cache.h"
#include "kernels/errors.h"

namespace pijit::cuda {
namespace {

struct WindowArgs {
  const void* a;  // conv: x (grad_input: dout); pool: x
  const void* b;  // conv: w (grad_weight: dout); pool grad: dout
  const void* bias;
  void* out;
  long long n, c, h, w;    // the input's shape
  long long o, kh, kw;     // output channels and the window
  long long oh, ow;        // the output's spatial size
  long long stride_h, stride_w, pad_top, pad_left, dil_h, dil_w, groups;
  long long total;         // elements the launch covers
  long long bottom_limit, right_limit;  // avg pooling's divisor bounds: h + pad_bottom_given, ...
  int include_pad, positive_only;
};

constexpr const char* kWindowArgsSource = R"(
struct WindowArgs {
  const void* a; const void* b; const void* bias; void* out;
  long long n, c, h, w, o, kh, kw, oh, ow;
  long long stride_h, stride_w, pad_top, pad_left, dil_h, dil_w, groups;
  long long total, bottom_limit, right_limit;
  int include_pad, positive_only;
};
// Each of the launch's `a.total` elements, over a grid of any size.
#define PJ_EACH_ELEMENT(i) \
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < a.total; \
       i += (long long)gridDim.x * blockDim.x)
// The taps of the window whose corner is (y0, x0) that fall inside the h x w plane: f(the
// tap's offset in the plane, its index ky * kw + kx).
template <typename F>
__device__ __forceinline__ void pj_for_taps(const WindowArgs& a, long long y0, long long x0, F f) {
  for (long long ky = 0; ky < a.kh; ++ky) {
    const long long iy = y0 + ky * a.dil_h;
    if (iy < 0 || iy >= a.h) continue;
    for (long long kx = 0; kx < a.kw; ++kx) {
      const long long ix = x0 + kx * a.dil_w;
      if (ix < 0 || ix >= a.w) continue;
      f(iy * a.w + ix, ky * a.kw + kx);
    }
  }
}
)";

constexpr const char* kConvSource = R"(
extern "C" __global__ void pijit_conv2d(WindowArgs a) {
  const T* x = static_cast<const T*>(a.a);
  const T* w = static_cast<const T*>(a.b);
  const T* bias = static_cast<const T*>(a.bias);
  T* out = static_cast<T*>(a.out);
  const long long cg = a.c / a.groups, og = a.o / a.groups;
  PJ_EACH_ELEMENT(i) {
    const long long ox = i % a.ow, oy = (i / a.ow) % a.oh, oc = (i / (a.ow * a.oh)) % a.o;
    const long long n = i / (a.ow * a.oh * a.o), g = oc / og;
    const long long y0 = oy * a.stride_h - a.pad_top, x0 = ox * a.stride_w - a.pad_left;
    T acc = T(0);
    for (long long c = 0; c < cg; ++c) {
      const T* xp = x + ((n * a.c + g * cg + c) * a.h) * a.w;
      const T* wp = w + ((oc * cg + c) * a.kh) * a.kw;
      pj_for_taps(a, y0, x0, [&](long long at, long long k) { acc += xp[at] * wp[k]; });
    }
    if (bias) acc += bias[oc];
    if (a.positive_only) acc = acc > T(0) ? acc : (acc != acc ? acc : T(0));
    out[i] = acc;
  }
}

extern "C" __global__ void pijit_conv2d_grad_input(WindowArgs a) {
  const T* dout = static_cast<const T*>(a.a);
  const T* w = static_cast<const T*>(a.b);
  T* dx = static_cast<T*>(a.out);
  const long long cg = a.c / a.groups, og = a.o / a.groups;
  PJ_EACH_ELEMENT(i) {
    const long long ix = i % a.w, iy = (i / a.w) % a.h, c = (i / (a.w * a.h)) % a.c;
    const long long n = i / (a.w * a.h * a.c), g = c / cg, cc = c % cg;
    T acc = T(0);
    for (long long ky = 0; ky < a.kh; ++ky) {
      const long long ty = iy + a.pad_top - ky * a.dil_h;
      if (ty < 0 || ty % a.stride_h != 0) continue;
      const long long oy = ty / a.stride_h;
      if (oy >= a.oh) continue;
      for (long long kx = 0; kx < a.kw; ++kx) {
        const long long tx = ix + a.pad_left - kx * a.dil_w;
        if (tx < 0 || tx % a.stride_w != 0) continue;
        const long long ox = tx / a.stride_w;
        if (ox >= a.ow) continue;
        for (long long k = 0; k < og; ++k) {
          const long long oc = g * og + k;
          acc += dout[((n * a.o + oc) * a.oh + oy) * a.ow + ox] * w[((oc * cg + cc) * a.kh + ky) * a.kw + kx];
        }
      }
    }
    dx[i] = acc;
  }
}

extern "C" __global__ void pijit_conv2d_grad_weight(WindowArgs a) {
  __shared__ T part[BLOCK];
  const T* x = static_cast<const T*>(a.a);
  const T* dout = static_cast<const T*>(a.b);
  T* dw = static_cast<T*>(a.out);
  const long long cg = a.c / a.groups, og = a.o / a.groups;
  const long long per = a.n * a.oh * a.ow;
  for (long long e = blockIdx.x; e < a.total; e += gridDim.x) {
    const long long kx = e % a.kw, ky = (e / a.kw) % a.kh, cc = (e / (a.kw * a.kh)) % cg;
    const long long oc = e / (a.kw * a.kh * cg), g = oc / og, c = g * cg + cc;
    T acc = T(0);
    for (long long r = threadIdx.x; r < per; r += blockDim.x) {
      const long long ox = r % a.ow, oy = (r / a.ow) % a.oh, n = r / (a.ow * a.oh);
      const long long iy = oy * a.stride_h - a.pad_top + ky * a.dil_h;
      const long long ix = ox * a.stride_w - a.pad_left + kx * a.dil_w;
      if (iy < 0 || iy >= a.h || ix < 0 || ix >= a.w) continue;
      acc += x[((n * a.c + c) * a.h + iy) * a.w + ix] * dout[((n * a.o + oc) * a.oh + oy) * a.ow + ox];
    }
    part[threadIdx.x] = acc;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
      if (threadIdx.x < half) part[threadIdx.x] += part[threadIdx.x + half];
      __syncthreads();
    }
    if (threadIdx.x == 0) dw[e] = part[0];
    __syncthreads();
  }
}
)";

// Pooling: `a.c` planes of the input are N*C planes; `o` is unused.
constexpr const char* kPoolSource = R"(
__device__ __forceinline__ bool pj_takes(T v, T best) {
  return (v > best || v != v) && best == best;
}
// The offset in `plane` of the window's first maximum (a NaN, once taken, stays: the CPU's
// choice), or -1 when the window holds no element of the input.
__device__ __forceinline__ long long pj_max_at(const WindowArgs& a, const T* plane, long long y0,
                                               long long x0) {
  T best = -PJ_INF;
  long long at = -1;
  pj_for_taps(a, y0, x0, [&](long long tap, long long) {
    if (at < 0 || pj_takes(plane[tap], best)) {
      best = plane[tap];
      at = tap;
    }
  });
  return at;
}
__device__ __forceinline__ long long pj_divisor(const WindowArgs& a, long long y0, long long x0,
                                                long long count) {
  if (!a.include_pad) return count;
  const long long ye = min(y0 + a.kh, a.bottom_limit), xe = min(x0 + a.kw, a.right_limit);
  return (ye - y0) * (xe - x0);
}
extern "C" __global__ void pijit_pool2d(WindowArgs a) {
  const T* x = static_cast<const T*>(a.a);
  T* out = static_cast<T*>(a.out);
  PJ_EACH_ELEMENT(i) {
    const long long ox = i % a.ow, oy = (i / a.ow) % a.oh, p = i / (a.ow * a.oh);
    const T* plane = x + p * a.h * a.w;
    const long long y0 = oy * a.stride_h - a.pad_top, x0 = ox * a.stride_w - a.pad_left;
    if (IS_MAX) {
      const long long at = pj_max_at(a, plane, y0, x0);
      out[i] = at >= 0 ? plane[at] : -PJ_INF;
      continue;
    }
    T acc = T(0);
    long long count = 0;
    pj_for_taps(a, y0, x0, [&](long long tap, long long) {
      acc += plane[tap];
      ++count;
    });
    const long long d = pj_divisor(a, y0, x0, count);
    out[i] = d > 0 ? acc / T(d) : T(0);
  }
}
extern "C" __global__ void pijit_pool2d_grad(WindowArgs a) {
  const T* x = static_cast<const T*>(a.a);
  const T* dout = static_cast<const T*>(a.b);
  T* dx = static_cast<T*>(a.out);
  PJ_EACH_ELEMENT(i) {
    const long long ox = i % a.ow, oy = (i / a.ow) % a.oh, p = i / (a.ow * a.oh);
    const T* plane = x + p * a.h * a.w;
    T* dplane = dx + p * a.h * a.w;
    const long long y0 = oy * a.stride_h - a.pad_top, x0 = ox * a.stride_w - a.pad_left;
    const T g = dout[i];
    if (IS_MAX) {
      const long long at = pj_max_at(a, plane, y0, x0);
      if (at >= 0 && !(a.positive_only && !(plane[at] > T(0)))) atomicAdd(dplane + at, g);
    } else {
      long long count = 0;
      pj_for_taps(a, y0, x0, [&](long long, long long) { ++count; });
      const long long d = pj_divisor(a, y0, x0, count);
      if (d == 0) continue;
      const T share = g / T(d);
      pj_for_taps(a, y0, x0, [&](long long tap, long long) {
        // relu's mask folded in (as on the CPU): only where the input is positive.
        if (!a.positive_only || plane[tap] > T(0)) atomicAdd(dplane + tap, share);
      });
    }
  }
}
)";

absl::Status CheckFloat(const Tensor& t, const char* op) {
  if (t.device() != Device::kCUDA) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: an input is not on the GPU", op));
  }
  if (t.dtype() != DType::kFloat32 && t.dtype() != DType::kFloat64) {
    return absl::UnimplementedError(absl::StrFormat(
        "the CUDA backend runs %s on float32 and float64, not %s", op, DTypeName(t.dtype())));
  }
  return absl::OkStatus();
}

std::string Source(DType d, const char* body, const std::string& defines) {
  const bool f64 = d == DType::kFloat64;
  return absl::StrCat("typedef ", f64 ? "double" : "float", " T;\n#define BLOCK ", kReduceBlock,
                      "\n#define PJ_INF ", f64 ? "__longlong_as_double(0x7ff0000000000000LL)" : "__int_as_float(0x7f800000)",
                      "\n", defines, kWindowArgsSource, body);
}

absl::Status Launch(DType d, const char* body, const std::string& defines, const char* entry,
                    WindowArgs& args, bool block_per_element) {
  PIJIT_ASSIGN_OR_RETURN(const CudaApi* api, CudaApi::Get());
  if (args.total == 0) return absl::OkStatus();
  // The key names the source: the entry (each source's entries are distinct), dtype, defines.
  PIJIT_ASSIGN_OR_RETURN(
      CUfunction fn,
      CompiledFunction(absl::StrFormat("%s|%d|%s", entry, static_cast<int>(d), defines),
                       [&]() -> absl::StatusOr<std::string> { return Source(d, body, defines); }, entry));
  const long long threads = block_per_element ? kReduceBlock : 256;
  const long long blocks = block_per_element ? std::min(args.total, 1LL << 20)
                                             : std::min((args.total + 255) / 256, 65536LL);
  void* params[] = {&args};
  return DriverStatus(*api, api->cuLaunchKernel(fn, static_cast<unsigned>(blocks), 1, 1,
                                                static_cast<unsigned>(threads), 1, 1, 0, api->stream,
                                                params, nullptr),
                      "cuLaunchKernel");
}

// conv2d's bias (along the channels) and relu epilogue after cuDNN's convolution.
absl::StatusOr<Tensor> BiasAndRelu(const Tensor& y, const Tensor* bias, bool relu) {
  if (!bias && !relu) return y;
  std::vector<const Tensor*> in = {&y};
  Tensor along;
  if (bias) {
    along = Tensor::View(bias->storage(), bias->dtype(), y.shape(), {0, bias->strides()[0], 0, 0},
                         bias->offset());
    in.push_back(&along);
  }
  const std::string sum = bias ? "T(x0) + T(x1)" : "T(x0)";
  const std::string body = relu ? absl::StrCat("    const T v = ", sum, ";\n    r = Relu(v);")
                                : absl::StrCat("    r = ", sum, ";");
  return DeviceElementwise(body, y.dtype(), in, MetaOf(y));
}

void FillGeometry(WindowArgs& a, const Shape& xs, const Window2D& win, const Geometry2D& g) {
  a.n = xs[0]; a.c = xs[1]; a.h = xs[2]; a.w = xs[3];
  a.oh = g.out[0]; a.ow = g.out[1];
  a.stride_h = win.stride[0]; a.stride_w = win.stride[1];
  a.pad_top = g.pad[0]; a.pad_left = g.pad[2];
  a.dil_h = win.dilation[0]; a.dil_w = win.dilation[1];
  a.groups = win.groups;
}

}  // namespace

std::vector<std::string> WindowKernelSources(DType d) {
  return {Source(d, kConvSource, ""), Source(d, kPoolSource, "#define IS_MAX 1\n"),
          Source(d, kPoolSource, "#define IS_MAX 0\n")};
}

namespace {

// One convolution pass (forward: a = x, b = w; backward data: a = dout, b = w; backward
// filter: a = x, b = dout) through cuDNN, or the direct kernel when cuDNN does not take it.
absl::StatusOr<Tensor> ConvPassOnDevice(ConvPass pass, const Tensor& a_in, const Tensor& b_in,
                                        const Shape& xs, const Shape& ws, const Window2D& win,
                                        const TensorMeta& out, const Tensor* bias, bool relu) {
  static constexpr const char* kOps[] = {"conv2d", "conv2d_grad_input", "conv2d_grad_weight"};
  static constexpr const char* kEntries[] = {"pijit_conv2d", "pijit_conv2d_grad_input",
                                             "pijit_conv2d_grad_weight"};
  const int k = static_cast<int>(pass);
  PIJIT_RETURN_IF_ERROR(CheckFloat(a_in, kOps[k]));
  PIJIT_RETURN_IF_ERROR(CheckFloat(b_in, kOps[k]));
  PIJIT_ASSIGN_OR_RETURN(const Tensor a, DeviceContiguous(a_in));
  PIJIT_ASSIGN_OR_RETURN(const Tensor b, DeviceContiguous(b_in));
  Tensor bias_c;
  if (bias) {
    PIJIT_ASSIGN_OR_RETURN(bias_c, DeviceContiguous(*bias));
  }
  const int64_t kernel[2] = {ws[2], ws[3]};
  PIJIT_ASSIGN_OR_RETURN(Geometry2D g, ResolveWindow("conv2d", xs, kernel, win, false));
  PIJIT_ASSIGN_OR_RETURN(Tensor result, EmptyOnDevice(out.shape, out.dtype));
  PIJIT_ASSIGN_OR_RETURN(bool by_cudnn, CudnnConv2D(pass, a, b, result, xs, ws, win, g.pad));
  if (by_cudnn) return BiasAndRelu(result, bias ? &bias_c : nullptr, relu);
  WindowArgs args{};
  FillGeometry(args, xs, win, g);
  args.o = ws[0];
  args.kh = kernel[0];
  args.kw = kernel[1];
  args.a = a.raw_data();
  args.b = b.raw_data();
  args.bias = bias ? bias_c.raw_data() : nullptr;
  args.out = result.raw_data();
  args.total = result.numel();
  args.positive_only = relu;
  // The weight gradient sums N x OH x OW products per element: a block each.
  PIJIT_RETURN_IF_ERROR(Launch(a.dtype(), kConvSource, "", kEntries[k], args,
                               pass == ConvPass::kBackwardFilter));
  return result;
}

// Pooling's arguments for input x (contiguous) and its resolved window.
absl::StatusOr<WindowArgs> PoolArgs(const Tensor& x, const Window2D& win) {
  PIJIT_ASSIGN_OR_RETURN(Geometry2D g, ResolveWindow("pool2d", x.shape(), win.kernel, win, true));
  WindowArgs a{};
  FillGeometry(a, x.shape(), win, g);
  a.kh = win.kernel[0];
  a.kw = win.kernel[1];
  a.a = x.raw_data();
  // As on the CPU: 'same' average pooling leaves the padding out of the divisor.
  a.include_pad = win.count_include_pad && !win.same;
  a.bottom_limit = a.h + g.pad_given[1];
  a.right_limit = a.w + g.pad_given[3];
  return a;
}

std::string PoolDefines(PoolKind kind) {
  return absl::StrFormat("#define IS_MAX %d\n", kind == PoolKind::kMax);
}

}  // namespace

absl::StatusOr<Tensor> DeviceConv2D(const Tensor& x, const Tensor& w, const Tensor* bias,
                                    const Window2D& win, bool relu, const TensorMeta& out) {
  return ConvPassOnDevice(ConvPass::kForward, x, w, x.shape(), w.shape(), win, out, bias, relu);
}

absl::StatusOr<Tensor> DeviceConv2DGradInput(const Tensor& dout, const Tensor& w,
                                             absl::Span<const int64_t> x_shape,
                                             const Window2D& win, const TensorMeta& out) {
  return ConvPassOnDevice(ConvPass::kBackwardData, dout, w, Shape(x_shape.begin(), x_shape.end()),
                          w.shape(), win, out, nullptr, false);
}

absl::StatusOr<Tensor> DeviceConv2DGradWeight(const Tensor& x, const Tensor& dout,
                                              absl::Span<const int64_t> w_shape,
                                              const Window2D& win, const TensorMeta& out) {
  return ConvPassOnDevice(ConvPass::kBackwardFilter, x, dout, x.shape(),
                          Shape(w_shape.begin(), w_shape.end()), win, out, nullptr, false);
}

absl::StatusOr<Tensor> DevicePool2D(PoolKind kind, const Tensor& x_in, const Window2D& win,
                                    const TensorMeta& out) {
  PIJIT_RETURN_IF_ERROR(CheckFloat(x_in, kind == PoolKind::kMax ? "max_pool2d" : "avg_pool2d"));
  PIJIT_ASSIGN_OR_RETURN(const Tensor x, DeviceContiguous(x_in));
  PIJIT_ASSIGN_OR_RETURN(WindowArgs a, PoolArgs(x, win));
  PIJIT_ASSIGN_OR_RETURN(Tensor result, EmptyOnDevice(out.shape, out.dtype));
  a.out = result.raw_data();
  a.total = result.numel();
  PIJIT_RETURN_IF_ERROR(Launch(x.dtype(), kPoolSource, PoolDefines(kind), "pijit_pool2d", a, false));
  return result;
}

absl::StatusOr<Tensor> DevicePool2DGrad(PoolKind kind, const Tensor& x_in, const Tensor& dout_in,
                                        const Window2D& win, bool positive_only,
                                        const TensorMeta& out) {
  PIJIT_RETURN_IF_ERROR(CheckFloat(x_in, "pool2d_grad"));
  PIJIT_ASSIGN_OR_RETURN(const CudaApi* api, CudaApi::Get());
  PIJIT_ASSIGN_OR_RETURN(const Tensor x, DeviceContiguous(x_in));
  PIJIT_ASSIGN_OR_RETURN(const Tensor dout, DeviceContiguous(dout_in));
  PIJIT_ASSIGN_OR_RETURN(WindowArgs a, PoolArgs(x, win));
  // Windows scatter into the gradient with atomicAdd: it starts at zero.
  PIJIT_ASSIGN_OR_RETURN(Tensor result, EmptyOnDevice(out.shape, out.dtype));
  PIJIT_RETURN_IF_ERROR(DriverStatus(
      *api, api->cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(result.raw_data()), 0,
                                 result.numel() * result.itemsize(), api->stream), "cuMemsetD8Async"));
  a.b = dout.raw_data();
  a.out = result.raw_data();
  a.total = dout.numel();
  a.positive_only = positive_only;
  PIJIT_RETURN_IF_ERROR(Launch(x.dtype(), kPoolSource, PoolDefines(kind), "pijit_pool2d_grad", a, false));
  return result;
}

}  // namespace pijit::cuda
