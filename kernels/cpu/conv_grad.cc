// The gradients of conv2d with respect to its input and its weight: float32 on oneDNN's
// backward primitives (cached by problem), float64 on direct loops.
#include <array>
#include <cstring>
#include <memory>
#include <unordered_map>

#include "absl/container/flat_hash_map.h"
#include "kernels/blocked_layout.h"
#include "kernels/cpu/conv_onednn.h"
#include "kernels/cpu/window.h"
#include "kernels/errors.h"
#include "kernels/thread_pool.h"

namespace pijit {
namespace {

// N, C, H, W, O, KH, KW, strides 2, pads 4, dilations 2, groups, which (0 data, 1 weights),
// whether the activations are given in NHWC (then the primitive computes in NHWC: oneDNN's
// NHWC backward-data kernels are its fastest on AVX2 for 3x3 layers, and no reorder runs).
using ConvGradKey = std::array<int64_t, 18>;

struct ConvGradPrimitive : ConvProblem {
  dnnl::primitive prim;
  // The layouts the primitive computes in (the forward's: blocked for many channels): its
  // operands are reordered into them and its result out of its own, as the forward does.
  dnnl::memory::desc src_in, weights_in, dst_in;
};

// The primitive descriptor of the backward pass `Backward` (oneDNN's backward data or
// weights convolution) of p's problem, on operands in the layouts src, wts and dst.
template <typename Backward>
typename Backward::primitive_desc BackwardDesc(
    const ConvProblem& p, const dnnl::memory::desc& src, const dnnl::memory::desc& wts,
    const dnnl::memory::desc& dst, const dnnl::convolution_forward::primitive_desc& hint) {
  return typename Backward::primitive_desc(DnnlEngine(), dnnl::algorithm::convolution_direct,
                                           src, wts, dst, p.strides, p.dilates, p.pad_l, p.pad_r,
                                           hint);
}

const ConvGradPrimitive& GetConvGrad(const ConvGradKey& k) {
  return *CachedPrimitive(k, [&] {
    auto p = std::make_unique<ConvGradPrimitive>();
    static_cast<ConvProblem&>(*p) = MakeConvProblem(k.data());
    const auto alg = dnnl::algorithm::convolution_direct;
    // Many channels: oneDNN's blocked layouts, where its direct (jit) backward kernels run;
    // on plain NCHW it runs the backward passes as im2col + GEMM, several times slower, and the
    // reorders cost less than that difference (benchmarks/conv_backward.py). Few channels:
    // plain layouts, as the forward (kernels/cpu/conv.cc).
    // A stem's weight gradient (few input channels, many output) too: oneDNN's first-layer
    // kernels read NCHW input and a blocked output gradient (ResNet-50's 7x7 stem at batch 8:
    // see FirstLayerLayoutsPay).
    const bool blocked = BlockedLayoutsPay(k[1], k[4], k[15]) ||
                         (k[16] == 1 && FirstLayerLayoutsPay(k[1], k[4], k[15]));
    using dnnl::memory;
    const bool nhwc = k[17] != 0;
    memory::desc src = nhwc ? ActivationLayout(p->src.get_dims(), k[1])
                            : LayoutFor(blocked, p->src);
    memory::desc dst = nhwc ? ActivationLayout(p->dst.get_dims(), k[4])
                            : LayoutFor(blocked, p->dst);
    if (!nhwc && DepthwiseRunsBlocked(k[1], k[4], k[15])) {  // its direct kernels, as forward
      src = ActivationLayout(p->src.get_dims(), DirectKernelBlock(k[1], k[4]));
      dst = ActivationLayout(p->dst.get_dims(), DirectKernelBlock(k[1], k[4]));
    }
    const memory::desc wts = LayoutFor(blocked || nhwc, p->weights);
    // The backward primitives take the forward one as a hint.
    const dnnl::convolution_forward::primitive_desc hint(
        DnnlEngine(), dnnl::prop_kind::forward_training, alg, src, wts, dst, p->strides,
        p->dilates, p->pad_l, p->pad_r);
    if (k[16] == 0) {
      const auto pd = BackwardDesc<dnnl::convolution_backward_data>(*p, src, wts, dst, hint);
      p->prim = dnnl::convolution_backward_data(pd);
      p->src_in = pd.diff_src_desc();
      p->weights_in = pd.weights_desc();
      p->dst_in = pd.diff_dst_desc();
    } else {
      const auto pd = BackwardDesc<dnnl::convolution_backward_weights>(*p, src, wts, dst, hint);
      p->prim = dnnl::convolution_backward_weights(pd);
      p->src_in = pd.src_desc();
      p->weights_in = pd.diff_weights_desc();
      p->dst_in = pd.diff_dst_desc();
    }
    return p;
  });
}

// x_or_dx and dout in the layouts of x_block and dout_block (0: NCHW; kernels/
// blocked_layout.h), xs the NCHW shape.
void ConvGradF32(bool weights, const Tensor& x_or_dx, const Tensor& w_or_dw, const Tensor& dout,
                 const Shape& xs, const Shape& ws, const Geometry2D& g, const Window2D& win,
                 int64_t x_block = 0, int64_t dout_block = 0) {
  ConvGradKey key = ConvKeyOf<ConvGradKey>(xs, ws, g, win, weights);
  key[17] = x_block != 0 && x_block == xs[1];
  const ConvGradPrimitive& p = GetConvGrad(key);
  using dnnl::memory;
  memory src(ActivationLayout(p.src.get_dims(), x_block), DnnlEngine(), x_or_dx.raw_data());
  memory wts(p.weights, DnnlEngine(), w_or_dw.raw_data());
  memory dst(ActivationLayout(p.dst.get_dims(), dout_block), DnnlEngine(), dout.raw_data());
  // Operands into the primitive's layouts, the result (in its layout) back out: no-ops for
  // plain layouts.
  auto out = [](memory& plain, const memory::desc& want) {
    return plain.get_desc() == want ? plain : memory(want, DnnlEngine());
  };
  memory dst_in = InLayout(dst, p.dst_in);
  if (weights) {
    memory src_in = InLayout(src, p.src_in), dw = out(wts, p.weights_in);
    p.prim.execute(DnnlStream(), {{DNNL_ARG_SRC, src_in}, {DNNL_ARG_DIFF_DST, dst_in},
                                  {DNNL_ARG_DIFF_WEIGHTS, dw}});
    if (!(dw.get_desc() == wts.get_desc())) dnnl::reorder(dw, wts).execute(DnnlStream(), dw, wts);
  } else {
    memory wts_in = InLayout(wts, p.weights_in), dx = out(src, p.src_in);
    p.prim.execute(DnnlStream(), {{DNNL_ARG_DIFF_SRC, dx}, {DNNL_ARG_DIFF_DST, dst_in},
                                  {DNNL_ARG_WEIGHTS, wts_in}});
    if (!(dx.get_desc() == src.get_desc())) dnnl::reorder(dx, src).execute(DnnlStream(), dx, src);
  }
  DnnlStream().wait();
}

// Visits every (input pixel, weight tap, output pixel) triple of the convolution once per
// batch item and output channel: f(x offset, w offset, out offset).
template <typename F>
void ForEachTap(const Shape& xs, const Shape& ws, const Geometry2D& g, const Window2D& win,
                int64_t b, int64_t oc, F&& f) {
  const int64_t c = xs[1], h = xs[2], wd = xs[3], o = ws[0], kh = ws[2], kw = ws[3];
  const int64_t cg = c / win.groups, og = o / win.groups, oh = g.out[0], ow = g.out[1];
  const int64_t grp = oc / og;
  for (int64_t ic = 0; ic < cg; ++ic) {
    const int64_t xplane = ((b * c) + grp * cg + ic) * h * wd;
    const int64_t wplane = ((oc * cg) + ic) * kh * kw;
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t xo = 0; xo < ow; ++xo) {
        const int64_t oidx = ((b * o + oc) * oh + y) * ow + xo;
        ForEachTapInPlane(kh, kw, win.dilation[0], win.dilation[1], h, wd,
                          y * win.stride[0] - g.pad[0], xo * win.stride[1] - g.pad[2],
                          [&](int64_t at, int64_t k) { f(xplane + at, wplane + k, oidx); });
      }
  }
}

template <typename T>
void ConvGradInputLoop(const Tensor& dout, const Tensor& w, const Shape& xs, const Geometry2D& g,
                       const Window2D& win, Tensor& dx) {
  const Shape& ws = w.shape();
  const T* pd = dout.data<T>();
  const T* pw = w.data<T>();
  T* px = dx.data<T>();
  // Batch items write disjoint parts of dx.
  ParallelFor(xs[0], 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b)
      for (int64_t oc = 0; oc < ws[0]; ++oc)
        ForEachTap(xs, ws, g, win, b, oc,
                   [&](int64_t xi, int64_t wi, int64_t oi) { px[xi] += pd[oi] * pw[wi]; });
  });
}

Tensor ZerosOf(const TensorMeta& m) {
  Tensor t = Tensor::Empty(m.shape, m.dtype);
  std::memset(t.raw_data(), 0, t.numel() * ItemSize(m.dtype));
  return t;
}

// dW by rows: for each weight tap, the dot products of output-gradient rows with the input
// rows the tap reads (contiguous when the stride is 1, so the inner loop vectorises). Faster
// than oneDNN's GEMM-based backward-weights for few input channels or small batches.
template <typename T>
void ConvGradWeightRows(const Tensor& x, const Tensor& dout, const Shape& ws, const Geometry2D& g,
                        const Window2D& win, Tensor& dw) {
  const Shape& xs = x.shape();
  const int64_t n = xs[0], c = xs[1], h = xs[2], wd = xs[3], o = ws[0], kh = ws[2], kw = ws[3];
  const int64_t cg = c / win.groups, og = o / win.groups, oh = g.out[0], ow = g.out[1];
  const int64_t sy = win.stride[0], sx = win.stride[1];
  const T* pd = dout.data<T>();
  const T* px = x.data<T>();
  T* pw = dw.data<T>();
  ParallelFor(o * cg, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t oc = t / cg, ic = t % cg, grp = oc / og;
      for (int64_t i = 0; i < kh; ++i)
        for (int64_t j = 0; j < kw; ++j) {
          // Output columns xo whose input column off + xo * sx is inside the image: x0 is the
          // first with off + xo * sx >= 0, x1 one past the last with off + xo * sx <= wd - 1.
          // A tap lying wholly in the right padding (wd - 1 - off < 0) reads no column; C++
          // division truncates toward zero, so that case must not go through the division.
          const int64_t off = j * win.dilation[1] - g.pad[2];
          const int64_t last = wd - 1 - off;
          const int64_t x0 = off >= 0 ? 0 : (-off + sx - 1) / sx;
          const int64_t x1 = last < 0 ? 0 : std::min(ow, last / sx + 1);
          double acc = 0;
          for (int64_t b = 0; b < n; ++b) {
            const T* drow0 = pd + (b * o + oc) * oh * ow;
            const T* xplane = px + (b * c + grp * cg + ic) * h * wd;
            for (int64_t y = 0; y < oh; ++y) {
              const int64_t iy = y * sy - g.pad[0] + i * win.dilation[0];
              if (iy < 0 || iy >= h || x1 <= x0) continue;
              const T* drow = drow0 + y * ow;
              const T* xrow = xplane + iy * wd + off;
              T part = 0;
              if (sx == 1) {
                for (int64_t xo = x0; xo < x1; ++xo) part += drow[xo] * xrow[xo];
              } else {
                for (int64_t xo = x0; xo < x1; ++xo) part += drow[xo] * xrow[xo * sx];
              }
              acc += part;
            }
          }
          pw[((oc * cg) + ic) * kh * kw + i * kw + j] = static_cast<T>(acc);
        }
    }
  });
}

// Checks that `dout` has the shape conv2d(x, w) has, and resolves the window.
absl::StatusOr<Geometry2D> CheckGrad(const char* op, const TensorMeta& x, const TensorMeta& w,
                                     const TensorMeta& dout, const Window2D& win) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta y, InferConv2D(x, w, nullptr, win));
  if (dout.dtype != y.dtype || dout.shape != y.shape) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: the output gradient is %s %s but conv2d of input %s and weight %s gives %s %s", op,
        DTypeName(dout.dtype), ShapeToString(dout.shape), ShapeToString(x.shape),
        ShapeToString(w.shape), DTypeName(y.dtype), ShapeToString(y.shape)));
  }
  const int64_t kernel[2] = {w.shape[2], w.shape[3]};
  return ResolveWindow(op, x.shape, kernel, win, false);
}

// The meta of the gradient for the input (`of_input`, `other` the weights) or for the weights
// (`other` the input), of `shape`, once CheckGrad accepts the problem.
absl::StatusOr<TensorMeta> GradMeta(bool of_input, const TensorMeta& other, const TensorMeta& dout,
                                    absl::Span<const int64_t> shape, const Window2D& win) {
  const TensorMeta result{other.dtype, Shape(shape.begin(), shape.end())};
  PIJIT_RETURN_IF_ERROR(
      (of_input ? CheckGrad("conv2d_grad_input", result, other, dout, win)
                : CheckGrad("conv2d_grad_weight", other, result, dout, win))
          .status());
  return result;
}

// dx of x's shape from the contiguous dout and w.
void FillGradInput(const Tensor& cd, const Tensor& cw, const Geometry2D& g, const Window2D& win,
                   Tensor& dx) {
  const Shape& xs = dx.shape();
  if (dx.dtype() == DType::kFloat32) {
    if (const auto depthwise = DepthwiseProblem(xs, cw.shape(), g, win)) {
      conv_depthwise::GradInput(*depthwise, cd.data<float>(), cw.data<float>(),
                                dx.data<float>());
      return;
    }
    if (const auto direct = DirectProblem(xs, cw.shape(), g, win);
        direct && conv_direct::GradInput(*direct, cd.data<float>(), cw.data<float>(),
                                         dx.data<float>())) {
      return;
    }
    ConvGradF32(false, dx, cw, cd, xs, cw.shape(), g, win);
  } else {
    ConvGradInputLoop<double>(cd, cw, xs, g, win, dx);
  }
}

// dw of w's shape from the contiguous x and dout.
void FillGradWeight(const Tensor& cx, const Tensor& cd, const Geometry2D& g, const Window2D& win,
                    Tensor& dw) {
  const Shape& ws = dw.shape();
  const bool f32 = dw.dtype() == DType::kFloat32;
  if (f32) {
    if (const auto depthwise = DepthwiseProblem(cx.shape(), ws, g, win)) {
      conv_depthwise::GradWeight(*depthwise, cx.data<float>(), cd.data<float>(),
                                 dw.data<float>());
      return;
    }
    if (const auto direct = DirectProblem(cx.shape(), ws, g, win);
        direct && conv_direct::GradWeight(*direct, cx.data<float>(), cd.data<float>(),
                                          dw.data<float>())) {
      return;
    }
  }
  // oneDNN's GEMM-based primitive pays off from a few input channels per group on (measured
  // on LeNet's layers: 3x slower than the row loop with 1 channel, 4x faster with 6); its
  // first-layer kernels (blocked output gradient) for a stem with fewer.
  if (f32 && (cx.shape()[1] / win.groups >= 4 ||
              FirstLayerLayoutsPay(cx.shape()[1], ws[0], win.groups))) {
    ConvGradF32(true, cx, dw, cd, cx.shape(), ws, g, win);
  } else if (f32) {
    ConvGradWeightRows<float>(cx, cd, ws, g, win, dw);
  } else {
    ConvGradWeightRows<double>(cx, cd, ws, g, win, dw);
  }
}

// The gradient for the input (`of_input`: a is dout, b the weights) or for the weights (a is
// the input, b dout), of `shape`: 16-bit floats in float32, rounded once at the end.
absl::StatusOr<Tensor> ConvGrad(bool of_input, const Tensor& a, const Tensor& b,
                                absl::Span<const int64_t> shape, const Window2D& win) {
  const TensorMeta ma = MetaOf(a), mb = MetaOf(b);
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, of_input ? GradMeta(true, mb, ma, shape, win)
                                                   : GradMeta(false, ma, mb, shape, win));
  if (IsHalfFloat(meta.dtype)) {
    PIJIT_ASSIGN_OR_RETURN(Tensor a32, Cast(a, DType::kFloat32));
    PIJIT_ASSIGN_OR_RETURN(Tensor b32, Cast(b, DType::kFloat32));
    PIJIT_ASSIGN_OR_RETURN(Tensor r, ConvGrad(of_input, a32, b32, shape, win));
    return Cast(r, meta.dtype);
  }
  PIJIT_ASSIGN_OR_RETURN(Geometry2D g, of_input
                                           ? CheckGrad("conv2d_grad_input", meta, mb, ma, win)
                                           : CheckGrad("conv2d_grad_weight", ma, meta, mb, win));
  if (NumElements(meta.shape) == 0 || a.numel() == 0 || b.numel() == 0) return ZerosOf(meta);
  // The float32 kernels write every element; the float64 input-gradient loop adds into zeros.
  Tensor r = meta.dtype == DType::kFloat32 ? Tensor::Empty(meta.shape, meta.dtype)
                                           : ZerosOf(meta);
  const Tensor ca = a.Contiguous(), cb = b.Contiguous();
  if (of_input) {
    FillGradInput(ca, cb, g, win, r);
  } else {
    FillGradWeight(ca, cb, g, win, r);
  }
  return r;
}

}  // namespace

absl::StatusOr<TensorMeta> InferConv2DGradInput(const TensorMeta& dout, const TensorMeta& w,
                                                absl::Span<const int64_t> x_shape,
                                                const Window2D& win) {
  return GradMeta(true, w, dout, x_shape, win);
}

absl::StatusOr<TensorMeta> InferConv2DGradWeight(const TensorMeta& x, const TensorMeta& dout,
                                                 absl::Span<const int64_t> w_shape,
                                                 const Window2D& win) {
  return GradMeta(false, x, dout, w_shape, win);
}

absl::StatusOr<Tensor> Conv2DGradInput(const Tensor& dout, const Tensor& w,
                                       absl::Span<const int64_t> x_shape, const Window2D& win) {
  return ConvGrad(true, dout, w, x_shape, win);
}

absl::StatusOr<Tensor> Conv2DGradWeight(const Tensor& x, const Tensor& dout,
                                        absl::Span<const int64_t> w_shape, const Window2D& win) {
  return ConvGrad(false, x, dout, w_shape, win);
}

namespace {

absl::Status NotOnBlockedKernels(const char* op, const TensorMeta& x, const TensorMeta& w) {
  return absl::UnimplementedError(absl::StrFormat(
      "%s: blocked layouts are for float32 problems on oneDNN's blocked kernels (one group "
      "and 16 or more channels, or depthwise over multiples of 8), not input %s %s with "
      "weight %s", op, DTypeName(x.dtype),
      ShapeToString(x.shape), ShapeToString(w.shape)));
}

}  // namespace

int64_t Conv2DGradBlock(const TensorMeta& x, const TensorMeta& w, const Window2D& win) {
  if (x.dtype != DType::kFloat32 || w.dtype != x.dtype || x.shape.size() != 4 ||
      w.shape.size() != 4 || NumElements(x.shape) == 0 || NumElements(w.shape) == 0) {
    return 0;
  }
  const bool depthwise = DepthwiseRunsBlocked(x.shape[1], w.shape[0], win.groups);
  if (!depthwise && (win.groups != 1 || !BlockedLayoutsPay(x.shape[1], w.shape[0], 1))) return 0;
  const int64_t kernel[2] = {w.shape[2], w.shape[3]};
  const absl::StatusOr<Geometry2D> g = ResolveWindow("conv2d", x.shape, kernel, win, false);
  if (!g.ok() || g->out[0] <= 0 || g->out[1] <= 0 ||
      (!depthwise && (DepthwiseProblem(x.shape, w.shape, *g, win) ||
                      DirectProblem(x.shape, w.shape, *g, win)))) {
    return 0;
  }
  const int64_t b = conv_onednn::ChosenLayouts(x.shape, w.shape, *g, win).src_block;
  return IsChannelBlock(x.shape[1], b) ? b : 0;
}

absl::StatusOr<TensorMeta> InferConv2DGradInputBlocked(const TensorMeta& dout, const TensorMeta& w,
                                                       absl::Span<const int64_t> x_shape,
                                                       const Window2D& win, int64_t dx_block) {
  constexpr const char* op = "conv2d_grad_input";
  PIJIT_ASSIGN_OR_RETURN(TensorMeta d, PlainMetaOfActivation(op, "the output gradient", dout));
  PIJIT_ASSIGN_OR_RETURN(TensorMeta dx, InferConv2DGradInput(d, w, x_shape, win));
  if (Conv2DGradBlock(dx, w, win) == 0) return NotOnBlockedKernels(op, dx, w);
  if (dx_block == 0) return dx;
  if (!IsChannelBlock(dx.shape[1], dx_block)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: block %d is not a layout of the input's %d channels (8, 16 or all of them)", op,
        dx_block, dx.shape[1]));
  }
  const Shape& s = dx.shape;
  return TensorMeta{dx.dtype, {s[0], s[1] / dx_block, s[2], s[3], dx_block}};
}

absl::StatusOr<Tensor> Conv2DGradInputBlocked(const Tensor& dout, const Tensor& w,
                                              absl::Span<const int64_t> x_shape,
                                              const Window2D& win, int64_t dx_block) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferConv2DGradInputBlocked(MetaOf(dout), MetaOf(w),
                                                                      x_shape, win, dx_block));
  const Shape xs(x_shape.begin(), x_shape.end());
  const int64_t kernel[2] = {w.shape()[2], w.shape()[3]};
  PIJIT_ASSIGN_OR_RETURN(Geometry2D g, ResolveWindow("conv2d_grad_input", xs, kernel, win, false));
  Tensor dx = Tensor::Empty(meta.shape, meta.dtype);
  ConvGradF32(false, dx, w.Contiguous(), dout.Contiguous(), xs, w.shape(), g, win, dx_block,
              BlockOfShape(dout.shape()));
  return dx;
}

absl::StatusOr<TensorMeta> InferConv2DGradWeightBlocked(const TensorMeta& x, const TensorMeta& dout,
                                                        absl::Span<const int64_t> w_shape,
                                                        const Window2D& win) {
  constexpr const char* op = "conv2d_grad_weight";
  PIJIT_ASSIGN_OR_RETURN(TensorMeta px, PlainMetaOfActivation(op, "the input", x));
  PIJIT_ASSIGN_OR_RETURN(TensorMeta d, PlainMetaOfActivation(op, "the output gradient", dout));
  PIJIT_ASSIGN_OR_RETURN(TensorMeta dw, InferConv2DGradWeight(px, d, w_shape, win));
  if (Conv2DGradBlock(px, dw, win) == 0) return NotOnBlockedKernels(op, px, dw);
  return dw;
}

absl::StatusOr<Tensor> Conv2DGradWeightBlocked(const Tensor& x, const Tensor& dout,
                                               absl::Span<const int64_t> w_shape,
                                               const Window2D& win) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferConv2DGradWeightBlocked(MetaOf(x), MetaOf(dout),
                                                                       w_shape, win));
  const Shape xs = PlainShapeOfBlocked(x.shape());
  const int64_t kernel[2] = {meta.shape[2], meta.shape[3]};
  PIJIT_ASSIGN_OR_RETURN(Geometry2D g, ResolveWindow("conv2d_grad_weight", xs, kernel, win, false));
  Tensor dw = Tensor::Empty(meta.shape, meta.dtype);
  ConvGradF32(true, x.Contiguous(), dw, dout.Contiguous(), xs, meta.shape, g, win,
              BlockOfShape(x.shape()), BlockOfShape(dout.shape()));
  return dw;
}

}  // namespace pijit
