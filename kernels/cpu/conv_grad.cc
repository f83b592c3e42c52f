// The gradients of conv2d with respect to its input and its weight: float32 on oneDNN's
// backward primitives (cached by problem), float64 on direct loops.
#include <array>
#include <cstring>
#include <memory>
#include <unordered_map>

#include "absl/container/flat_hash_map.h"
#include "kernels/cpu/window.h"
#include "kernels/errors.h"
#include "kernels/thread_pool.h"

namespace pijit {
namespace {

// N, C, H, W, O, KH, KW, strides 2, pads 4, dilations 2, groups, which (0 data, 1 weights).
using ConvGradKey = std::array<int64_t, 17>;

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
  return typename Backward::primitive_desc(
      typename Backward::desc(dnnl::algorithm::convolution_direct, src, wts, dst, p.strides,
                              p.dilates, p.pad_l, p.pad_r),
      DnnlEngine(), hint);
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
    const bool blocked = k[1] / k[15] >= 16 && k[4] / k[15] >= 16;
    using dnnl::memory;
    const memory::desc src = LayoutFor(blocked, p->src), wts = LayoutFor(blocked, p->weights),
                       dst = LayoutFor(blocked, p->dst);
    // The backward primitives take the forward one as a hint.
    const dnnl::convolution_forward::primitive_desc hint(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, alg, src, wts, dst,
                                        p->strides, p->dilates, p->pad_l, p->pad_r),
        DnnlEngine());
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

void ConvGradF32(bool weights, const Tensor& x_or_dx, const Tensor& w_or_dw, const Tensor& dout,
                 const Shape& xs, const Shape& ws, const Geometry2D& g, const Window2D& win) {
  const ConvGradPrimitive& p = GetConvGrad(ConvKeyOf<ConvGradKey>(xs, ws, g, win, weights));
  using dnnl::memory;
  memory src(p.src, DnnlEngine(), x_or_dx.raw_data());
  memory wts(p.weights, DnnlEngine(), w_or_dw.raw_data());
  memory dst(p.dst, DnnlEngine(), dout.raw_data());
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

// For a 16-bit float result: grad(a, b) on float32 copies of a and b, rounded once at the end
// to `dtype`.
template <typename Grad>
absl::StatusOr<Tensor> InFloat32(const Tensor& a, const Tensor& b, DType dtype, Grad grad) {
  PIJIT_ASSIGN_OR_RETURN(Tensor wa, Cast(a, DType::kFloat32));
  PIJIT_ASSIGN_OR_RETURN(Tensor wb, Cast(b, DType::kFloat32));
  PIJIT_ASSIGN_OR_RETURN(Tensor r, grad(wa, wb));
  return Cast(r, dtype);
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
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferConv2DGradInput(MetaOf(dout), MetaOf(w), x_shape, win));
  if (IsHalfFloat(meta.dtype)) {
    return InFloat32(dout, w, meta.dtype, [&](const Tensor& d32, const Tensor& w32) {
      return Conv2DGradInput(d32, w32, x_shape, win);
    });
  }
  PIJIT_ASSIGN_OR_RETURN(Geometry2D g, CheckGrad("conv2d_grad_input", meta, MetaOf(w),
                                                 MetaOf(dout), win));
  Tensor dx = ZerosOf(meta);
  if (dx.numel() == 0 || dout.numel() == 0 || w.numel() == 0) return dx;
  const Tensor cd = dout.Contiguous(), cw = w.Contiguous();
  if (meta.dtype == DType::kFloat32) {
    if (const auto direct = DirectProblem(meta.shape, w.shape(), g, win);
        direct && conv_direct::GradInput(*direct, cd.data<float>(), cw.data<float>(),
                                         dx.data<float>())) {
      return dx;
    }
    ConvGradF32(false, dx, cw, cd, meta.shape, w.shape(), g, win);
  } else {
    ConvGradInputLoop<double>(cd, cw, meta.shape, g, win, dx);
  }
  return dx;
}

absl::StatusOr<Tensor> Conv2DGradWeight(const Tensor& x, const Tensor& dout,
                                        absl::Span<const int64_t> w_shape, const Window2D& win) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferConv2DGradWeight(MetaOf(x), MetaOf(dout), w_shape, win));
  if (IsHalfFloat(meta.dtype)) {
    return InFloat32(x, dout, meta.dtype, [&](const Tensor& x32, const Tensor& d32) {
      return Conv2DGradWeight(x32, d32, w_shape, win);
    });
  }
  PIJIT_ASSIGN_OR_RETURN(Geometry2D g, CheckGrad("conv2d_grad_weight", MetaOf(x), meta,
                                                 MetaOf(dout), win));
  Tensor dw = ZerosOf(meta);
  if (dw.numel() == 0 || dout.numel() == 0 || x.numel() == 0) return dw;
  const Tensor cx = x.Contiguous(), cd = dout.Contiguous();
  if (meta.dtype == DType::kFloat32) {
    if (const auto direct = DirectProblem(x.shape(), meta.shape, g, win);
        direct && conv_direct::GradWeight(*direct, cx.data<float>(), cd.data<float>(),
                                          dw.data<float>())) {
      return dw;
    }
  }
  // oneDNN's GEMM-based primitive pays off from a few input channels per group on (measured
  // on LeNet's layers: 3x slower than the row loop with 1 channel, 4x faster with 6).
  if (meta.dtype == DType::kFloat32 && x.shape()[1] / win.groups >= 4) {
    ConvGradF32(true, cx, dw, cd, x.shape(), meta.shape, g, win);
  } else if (meta.dtype == DType::kFloat32) {
    ConvGradWeightRows<float>(cx, cd, meta.shape, g, win, dw);
  } else {
    ConvGradWeightRows<double>(cx, cd, meta.shape, g, win, dw);
  }
  return dw;
}

}  // namespace pijit
