// conv2d over NCHW data: float32 on oneDNN (primitives cached by problem and attributes),
// float64 on a direct loop.
#include <array>
#include <memory>
#include <optional>
#include <unordered_map>

#include "absl/container/flat_hash_map.h"
#include "kernels/cpu/conv_direct.h"
#include "kernels/cpu/loops.h"
#include "kernels/cpu/window.h"
#include "kernels/errors.h"

namespace pijit {
namespace {

absl::Status CheckFloat(const char* op, const char* what, DType d, DType want) {
  if (!IsFloating(d)) {
    return absl::UnimplementedError(absl::StrFormat(
        "%s: unsupported dtype %s for %s, expected a floating dtype (Float16, BFloat16, Float32 or Float64)", op, DTypeName(d), what));
  }
  if (d != want) {
    return absl::UnimplementedError(absl::StrFormat(
        "%s: %s has dtype %s but the input has dtype %s", op, what, DTypeName(d), DTypeName(want)));
  }
  return absl::OkStatus();
}

// N, C, H, W, O, KH, KW, strides 2, pads 4, dilations 2, groups, has_bias.
using ConvKey = std::array<int64_t, 17>;

struct ConvPrimitive : ConvProblem {
  dnnl::memory::desc bias;
  dnnl::convolution_forward prim;
  // The layouts the primitive computes in, when they are not the plain ones: the input and
  // the weights are reordered into them and the result back out of its.
  dnnl::memory::desc src_in, weights_in, dst_in;
  bool blocked = false;
};

const ConvPrimitive& GetConv(const ConvKey& k) {
  static thread_local absl::flat_hash_map<ConvKey, std::unique_ptr<ConvPrimitive>> cache;
  auto it = cache.find(k);
  if (it != cache.end()) return *it->second;
  auto p = std::make_unique<ConvPrimitive>();
  static_cast<ConvProblem&>(*p) = MakeConvProblem(k.data());
  const auto prop = dnnl::prop_kind::forward_inference;
  const auto alg = dnnl::algorithm::convolution_direct;
  // Many channels: let oneDNN choose blocked layouts (its direct kernels); the reorders cost
  // less than the GEMM-based kernel it runs on plain NCHW. Few channels: plain layouts.
  p->blocked = k[1] / k[15] >= 16 && k[4] / k[15] >= 16;
  using dnnl::memory;
  const auto any = memory::format_tag::any;
  const memory::desc src = p->blocked ? memory::desc(p->src.dims(), memory::data_type::f32, any) : p->src;
  const memory::desc wts = p->blocked ? memory::desc(p->weights.dims(), memory::data_type::f32, any) : p->weights;
  const memory::desc dst = p->blocked ? memory::desc(p->dst.dims(), memory::data_type::f32, any) : p->dst;
  dnnl::convolution_forward::primitive_desc pd;
  if (k[16]) {
    p->bias = memory::desc({k[4]}, memory::data_type::f32, memory::format_tag::a);
    pd = dnnl::convolution_forward::primitive_desc(
        dnnl::convolution_forward::desc(prop, alg, src, wts, p->bias, dst, p->strides,
                                        p->dilates, p->pad_l, p->pad_r),
        DnnlEngine());
  } else {
    pd = dnnl::convolution_forward::primitive_desc(
        dnnl::convolution_forward::desc(prop, alg, src, wts, dst, p->strides, p->dilates,
                                        p->pad_l, p->pad_r),
        DnnlEngine());
  }
  p->prim = dnnl::convolution_forward(pd);
  p->src_in = pd.src_desc();
  p->weights_in = pd.weights_desc();
  p->dst_in = pd.dst_desc();
  p->blocked = p->src_in != p->src || p->weights_in != p->weights || p->dst_in != p->dst;
  TrimCache(cache);
  return *cache.emplace(k, std::move(p)).first->second;
}

void ConvF32(const Tensor& x, const Tensor& w, const Tensor* bias, const Geometry2D& g,
             const Window2D& win, Tensor& out) {
  const Shape& xs = x.shape();
  const Shape& ws = w.shape();
  const ConvKey key{xs[0], xs[1], xs[2], xs[3], ws[0], ws[2], ws[3], win.stride[0],
                    win.stride[1], g.pad[0], g.pad[1], g.pad[2], g.pad[3], win.dilation[0],
                    win.dilation[1], win.groups, bias != nullptr};
  const ConvPrimitive& p = GetConv(key);
  using dnnl::memory;
  memory src(p.src, DnnlEngine(), x.raw_data());
  memory wts(p.weights, DnnlEngine(), w.raw_data());
  memory dst(p.dst, DnnlEngine(), out.raw_data());
  // Into the primitive's layouts (no-ops when they are the plain ones).
  auto to = [](memory& from, const memory::desc& want) {
    if (from.get_desc() == want) return from;
    memory m(want, DnnlEngine());
    dnnl::reorder(from, m).execute(DnnlStream(), from, m);
    return m;
  };
  memory src_in = to(src, p.src_in), wts_in = to(wts, p.weights_in);
  memory dst_in = p.dst_in == p.dst ? dst : memory(p.dst_in, DnnlEngine());
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src_in}, {DNNL_ARG_WEIGHTS, wts_in},
                                       {DNNL_ARG_DST, dst_in}};
  if (bias) args.emplace(DNNL_ARG_BIAS, memory(p.bias, DnnlEngine(), bias->raw_data()));
  p.prim.execute(DnnlStream(), args);
  if (!(p.dst_in == p.dst)) dnnl::reorder(dst_in, dst).execute(DnnlStream(), dst_in, dst);
  DnnlStream().wait();
}

// Direct convolution (float64, and any problem oneDNN is not given).
template <typename T>
void ConvLoop(const Tensor& x, const Tensor& w, const Tensor* bias, const Geometry2D& g,
              const Window2D& win, Tensor& out) {
  const Shape& xs = x.shape();
  const Shape& ws = w.shape();
  const int64_t n = xs[0], c = xs[1], h = xs[2], wd = xs[3], o = ws[0], kh = ws[2], kw = ws[3];
  const int64_t cg = c / win.groups, og = o / win.groups, oh = g.out[0], ow = g.out[1];
  const T* px = x.data<T>();
  const T* pw = w.data<T>();
  T* po = out.data<T>();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t oc = 0; oc < o; ++oc) {
      const int64_t grp = oc / og;
      const T b0 = bias ? bias->data<T>()[oc] : T(0);
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xo = 0; xo < ow; ++xo) {
          T acc = 0;
          for (int64_t ic = 0; ic < cg; ++ic) {
            const T* plane = px + ((b * c) + grp * cg + ic) * h * wd;
            const T* kern = pw + ((oc * cg) + ic) * kh * kw;
            for (int64_t i = 0; i < kh; ++i) {
              const int64_t iy = y * win.stride[0] - g.pad[0] + i * win.dilation[0];
              if (iy < 0 || iy >= h) continue;
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t ix = xo * win.stride[1] - g.pad[2] + j * win.dilation[1];
                if (ix < 0 || ix >= wd) continue;
                acc += plane[iy * wd + ix] * kern[i * kw + j];
              }
            }
          }
          po[((b * o + oc) * oh + y) * ow + xo] = acc + b0;
        }
    }
}

}  // namespace

absl::StatusOr<TensorMeta> InferConv2D(const TensorMeta& x, const TensorMeta& w,
                                       const TensorMeta* bias, const Window2D& win) {
  constexpr const char* op = "conv2d";
  PIJIT_RETURN_IF_ERROR(CheckFloat(op, "input", x.dtype, x.dtype));
  PIJIT_RETURN_IF_ERROR(CheckFloat(op, "weight", w.dtype, x.dtype));
  if (x.shape.size() != 4 || w.shape.size() != 4) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "conv2d: expected a 4-D input (N, C, H, W) and a 4-D weight (C_out, C_in / groups, KH, "
        "KW), got input %s and weight %s", ShapeToString(x.shape), ShapeToString(w.shape)));
  }
  const int64_t c = x.shape[1], o = w.shape[0], groups = win.groups;
  if (groups < 1 || c % groups != 0 || o % groups != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "conv2d: groups (%d) must be positive and divide the input channels (%d) and the output "
        "channels (%d); input %s, weight %s", groups, c, o, ShapeToString(x.shape),
        ShapeToString(w.shape)));
  }
  if (w.shape[1] * groups != c) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "conv2d: input %s has %d channels but weight %s expects %d (%d per group, groups=%d)",
        ShapeToString(x.shape), c, ShapeToString(w.shape), w.shape[1] * groups, w.shape[1],
        groups));
  }
  if (bias) {
    PIJIT_RETURN_IF_ERROR(CheckFloat(op, "bias", bias->dtype, x.dtype));
    if (bias->shape.size() != 1 || bias->shape[0] != o) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "conv2d: bias of shape %s does not match the %d output channels of weight %s",
          ShapeToString(bias->shape), o, ShapeToString(w.shape)));
    }
  }
  const int64_t kernel[2] = {w.shape[2], w.shape[3]};
  PIJIT_ASSIGN_OR_RETURN(Geometry2D g, ResolveWindow(op, x.shape, kernel, win, false));
  return TensorMeta{x.dtype, {x.shape[0], o, g.out[0], g.out[1]}};
}

namespace {

template <typename T>
void ReluInPlace(T* v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) v[i] = loops::Relu(v[i]);
}

}  // namespace

absl::StatusOr<Tensor> Conv2D(const Tensor& x, const Tensor& w, const Tensor* bias,
                              const Window2D& win, bool relu) {
  std::optional<TensorMeta> bias_meta;
  if (bias) bias_meta = MetaOf(*bias);
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferConv2D(MetaOf(x), MetaOf(w),
                                                      bias ? &*bias_meta : nullptr, win));
  if (IsHalfFloat(meta.dtype)) {
    // float16/bfloat16: computed in float32 (oneDNN), rounded once at the end.
    PIJIT_ASSIGN_OR_RETURN(Tensor wx, Cast(x, DType::kFloat32));
    PIJIT_ASSIGN_OR_RETURN(Tensor ww, Cast(w, DType::kFloat32));
    Tensor wb;
    if (bias) { PIJIT_ASSIGN_OR_RETURN(wb, Cast(*bias, DType::kFloat32)); }
    PIJIT_ASSIGN_OR_RETURN(Tensor r, Conv2D(wx, ww, bias ? &wb : nullptr, win, relu));
    return Cast(r, meta.dtype);
  }
  const int64_t kernel[2] = {w.shape()[2], w.shape()[3]};
  PIJIT_ASSIGN_OR_RETURN(Geometry2D g, ResolveWindow("conv2d", x.shape(), kernel, win, false));
  Tensor out = Tensor::Empty(meta.shape, meta.dtype);
  if (out.numel() == 0) return out;
  const Tensor cx = x.Contiguous(), cw = w.Contiguous();
  Tensor cb;
  if (bias) cb = bias->Contiguous();
  const Tensor* pb = bias ? &cb : nullptr;
  if (x.numel() == 0 || w.numel() == 0) {
    // No input channels (or an empty kernel): the bias alone.
    DispatchDType(meta.dtype, [&](auto tag) {
      using T = decltype(tag);
      const int64_t plane = meta.shape[2] * meta.shape[3];
      for (int64_t i = 0; i < out.numel(); ++i)
        out.data<T>()[i] = pb ? pb->data<T>()[(i / plane) % meta.shape[1]] : T(0);
      if (relu) ReluInPlace(out.data<T>(), out.numel());
    });
    return out;
  }
  if (meta.dtype == DType::kFloat32) {
    if (const auto direct = DirectProblem(x.shape(), w.shape(), g, win);
        direct && conv_direct::Forward(*direct, cx.data<float>(), cw.data<float>(),
                                       pb ? pb->data<float>() : nullptr, out.data<float>(),
                                       relu)) {
      return out;
    }
    ConvF32(cx, cw, pb, g, win, out);
    if (relu) ReluInPlace(out.data<float>(), out.numel());
  } else {
    ConvLoop<double>(cx, cw, pb, g, win, out);
    if (relu) ReluInPlace(out.data<double>(), out.numel());
  }
  return out;
}

}  // namespace pijit
