// The gradients of max and average pooling with respect to their input: direct loops,
// parallel over the (batch, channel) planes, which write disjoint parts of the result.
//
// Max pooling sends each output's gradient to the first element of its window that holds
// the maximum (the first NaN, when there is one), the element the forward loop picks.
// Average pooling spreads it evenly over the window, with the forward's divisor.
#include <cmath>
#include <algorithm>
#include <cstring>
#include <limits>

#include "kernels/cpu/reduce_vec.h"
#include "kernels/cpu/window.h"
#include "kernels/errors.h"
#include "kernels/thread_pool.h"
#include "kernels/cpu/fused_x86.h"

namespace pijit {
namespace {

const char* GradName(PoolKind k) {
  return k == PoolKind::kMax ? "max_pool2d_grad" : "avg_pool2d_grad";
}

// One output row of a 2x2, stride-2 max pooling's gradient: each output's gradient goes to the
// element of its window (a = r0[2x], b = r0[2x + 1], c = r1[2x], d = r1[2x + 1], scanned in
// that order) that MaxPoolTakes picks; the other three get zero. `positive` keeps it only
// when that element is > 0.
template <typename T>
void MaxPoolGrad2x2Scalar(const T* r0, const T* r1, const T* g, T* d0, T* d1, int64_t x0,
                          int64_t x1, bool positive) {
  for (int64_t x = x0; x < x1; ++x) {
    const T a = r0[2 * x], b = r0[2 * x + 1], c = r1[2 * x], d = r1[2 * x + 1];
    int at = 0;
    T best = a;
    if (MaxPoolTakes(b, best)) best = b, at = 1;
    if (MaxPoolTakes(c, best)) best = c, at = 2;
    if (MaxPoolTakes(d, best)) best = d, at = 3;
    const T gr = !positive || best > T(0) ? g[x] : T(0);
    d0[2 * x] = at == 0 ? gr : T(0);
    d0[2 * x + 1] = at == 1 ? gr : T(0);
    d1[2 * x] = at == 2 ? gr : T(0);
    d1[2 * x + 1] = at == 3 ? gr : T(0);
  }
}

// float32 on AVX2: eight windows at a time with masks (x != x: NaN), the same choices.
__attribute__((target("avx2"))) void MaxPoolGrad2x2RowAvx2(const float* r0, const float* r1,
                                                           const float* g, float* d0, float* d1,
                                                           int64_t ow, bool positive) {
  typedef float V __attribute__((vector_size(32), aligned(4)));
  typedef int M __attribute__((vector_size(32)));
  const M even = {0, 2, 4, 6, 8, 10, 12, 14}, odd = {1, 3, 5, 7, 9, 11, 13, 15};
  const M lo = {0, 8, 1, 9, 2, 10, 3, 11}, hi = {4, 12, 5, 13, 6, 14, 7, 15};
  const V zero = {};
  auto load = [](const float* p) { return *reinterpret_cast<const V*>(p); };
  auto store = [](float* p, V v) { *reinterpret_cast<V*>(p) = v; };
  // Eight windows: inputs at r0[0..16), r1[0..16), gradients g[0..8).
  auto step = [&](const float* r0, const float* r1, const float* g, float* d0, float* d1) {
    const V p0 = load(r0), p1 = load(r0 + 8), q0 = load(r1), q1 = load(r1 + 8);
    const V a = __builtin_shuffle(p0, p1, even), b = __builtin_shuffle(p0, p1, odd);
    const V c = __builtin_shuffle(q0, q1, even), d = __builtin_shuffle(q0, q1, odd);
    const M tb = ((b > a) | (b != b)) & (a == a);
    const V m1 = tb ? b : a;
    const M tc = ((c > m1) | (c != c)) & (m1 == m1);
    const V m2 = tc ? c : m1;
    const M td = ((d > m2) | (d != d)) & (m2 == m2);
    const V chosen = td ? d : m2;
    const V gv = positive ? ((chosen > zero) ? load(g) : zero) : load(g);
    const V gd = td ? gv : zero;
    const V gc = (tc & ~td) ? gv : zero;
    const V gb = (tb & ~tc & ~td) ? gv : zero;
    const V ga = (tb | tc | td) ? zero : gv;
    store(d0, __builtin_shuffle(ga, gb, lo));
    store(d0 + 8, __builtin_shuffle(ga, gb, hi));
    store(d1, __builtin_shuffle(gc, gd, lo));
    store(d1 + 8, __builtin_shuffle(gc, gd, hi));
  };
  int64_t x = 0;
  for (; x + 8 <= ow; x += 8) step(r0 + 2 * x, r1 + 2 * x, g + x, d0 + 2 * x, d1 + 2 * x);
  if (x == ow) return;
  // The last windows through zero-padded copies (scalar code would branch on random data).
  const int64_t n = ow - x;
  float in0[16] = {}, in1[16] = {}, gr[8] = {}, out0[16], out1[16];
  std::memcpy(in0, r0 + 2 * x, sizeof(float) * 2 * n);
  std::memcpy(in1, r1 + 2 * x, sizeof(float) * 2 * n);
  std::memcpy(gr, g + x, sizeof(float) * n);
  step(in0, in1, gr, out0, out1);
  std::memcpy(d0 + 2 * x, out0, sizeof(float) * 2 * n);
  std::memcpy(d1 + 2 * x, out1, sizeof(float) * 2 * n);
}

template <typename T>
void MaxPoolGrad2x2Row(const T* r0, const T* r1, const T* g, T* d0, T* d1, int64_t ow,
                       bool positive) {
  if constexpr (std::is_same_v<T, float>) {
    if (rvec::HostHasAvx2()) return MaxPoolGrad2x2RowAvx2(r0, r1, g, d0, d1, ow, positive);
  }
  MaxPoolGrad2x2Scalar(r0, r1, g, d0, d1, 0, ow, positive);
}

// The general loops over planes [p0, p1).
template <typename T>
void PoolGradPlanes(PoolKind kind, const T* px, const T* pd, const Window2D& win,
                    const Geometry2D& g, bool include_pad, const Shape& xs, int64_t p0,
                    int64_t p1, T* pdx) {
  const int64_t h = xs[2], w = xs[3], oh = g.out[0], ow = g.out[1];
  const int64_t kh = win.kernel[0], kw = win.kernel[1];
  const bool simple = kind == PoolKind::kMax && g.pad[0] == 0 && g.pad[2] == 0 &&
                      win.dilation[0] == 1 && win.dilation[1] == 1 &&
                      (oh - 1) * win.stride[0] + kh <= h && (ow - 1) * win.stride[1] + kw <= w;
  if (simple) {  // every window inside the input: no bounds checks
    for (int64_t p = p0; p < p1; ++p) {
      const T* plane = px + p * h * w;
      T* dplane = pdx + p * h * w;
      const T* grads = pd + p * oh * ow;
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xo = 0; xo < ow; ++xo) {
          const int64_t base = y * win.stride[0] * w + xo * win.stride[1];
          int64_t best_at = base;
          T best = plane[base];
          for (int64_t i = 0; i < kh; ++i)
            for (int64_t j = 0; j < kw; ++j) {
              const int64_t at = base + i * w + j;
              const T v = plane[at];
              if (MaxPoolTakes(v, best)) {
                best = v;
                best_at = at;
              }
            }
          dplane[best_at] += grads[y * ow + xo];
        }
    }
    return;
  }
  for (int64_t p = p0; p < p1; ++p) {
    const T* plane = px + p * h * w;
    T* dplane = pdx + p * h * w;
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t xo = 0; xo < ow; ++xo) {
        const T grad = pd[(p * oh + y) * ow + xo];
        const int64_t y0 = y * win.stride[0] - g.pad[0], x0 = xo * win.stride[1] - g.pad[2];
        T best = -std::numeric_limits<T>::infinity();
        int64_t best_at = -1, count = 0;
        ForEachInWindow(win, h, w, y0, x0, [&](int64_t at) {
          ++count;
          if (kind != PoolKind::kMax) return;
          const T v = plane[at];
          if (best_at < 0 || MaxPoolTakes(v, best)) {
            best = v;
            best_at = at;
          }
        });
        if (kind == PoolKind::kMax) {
          if (best_at >= 0) dplane[best_at] += grad;
          continue;
        }
        if (include_pad) count = PaddedWindowCount(win, g, h, w, y0, x0);
        if (count == 0) continue;
        const T share = grad / static_cast<T>(count);
        ForEachInWindow(win, h, w, y0, x0, [&](int64_t at) { dplane[at] += share; });
      }
  }
}

template <typename T>
void PoolGradLoop(PoolKind kind, const Tensor& x, const Tensor& dout, const Window2D& win,
                  const Geometry2D& g, bool include_pad, bool positive_only, Tensor& dx) {
  const Shape& xs = x.shape();
  const int64_t planes = xs[0] * xs[1], h = xs[2], w = xs[3], oh = g.out[0], ow = g.out[1];
  const int64_t kh = win.kernel[0], kw = win.kernel[1];
  const T* px = x.data<T>();
  const T* pd = dout.data<T>();
  T* pdx = dx.data<T>();
  const bool simple = kind == PoolKind::kMax && g.pad[0] == 0 && g.pad[2] == 0 &&
                      win.dilation[0] == 1 && win.dilation[1] == 1 &&
                      (oh - 1) * win.stride[0] + kh <= h && (ow - 1) * win.stride[1] + kw <= w;
  const bool tiles2x2 = simple && kh == 2 && kw == 2 && win.stride[0] == 2 && win.stride[1] == 2;
  ParallelFor(planes, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, h * w)), [&](int64_t p0, int64_t p1) {
    if (tiles2x2) {  // 2x2 windows that tile the input: each input element has one window
      for (int64_t p = p0; p < p1; ++p)
        for (int64_t y = 0; y < oh; ++y) {
          const T* r0 = px + p * h * w + 2 * y * w;
          const T* r1 = r0 + w;
          T* d0 = pdx + p * h * w + 2 * y * w;
          T* d1 = d0 + w;
          const T* grads = pd + (p * oh + y) * ow;
          MaxPoolGrad2x2Row(r0, r1, grads, d0, d1, ow, positive_only);
        }
      return;
    }
    // Any other window: the gradient, then the mask over the planes.
    PoolGradPlanes(kind, px, pd, win, g, include_pad, xs, p0, p1, pdx);
    if (positive_only) {
      for (int64_t i = p0 * h * w; i < p1 * h * w; ++i) pdx[i] = px[i] > T(0) ? pdx[i] : T(0);
    }
  });
}


}  // namespace

absl::StatusOr<TensorMeta> InferPool2DGrad(PoolKind kind, const TensorMeta& x,
                                           const TensorMeta& dout, const Window2D& win) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta y, InferPool2D(kind, x, win));
  if (dout.dtype != y.dtype || dout.shape != y.shape) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: the output gradient is %s %s but pooling input %s gives %s %s", GradName(kind),
        DTypeName(dout.dtype), ShapeToString(dout.shape), ShapeToString(x.shape),
        DTypeName(y.dtype), ShapeToString(y.shape)));
  }
  return x;
}

absl::StatusOr<Tensor> Pool2DGrad(PoolKind kind, const Tensor& x, const Tensor& dout,
                                  const Window2D& win, bool positive_only) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferPool2DGrad(kind, MetaOf(x), MetaOf(dout), win));
  if (IsHalfFloat(meta.dtype)) {  // in float32, rounded once at the end
    PIJIT_ASSIGN_OR_RETURN(Tensor wx, Cast(x, DType::kFloat32));
    PIJIT_ASSIGN_OR_RETURN(Tensor wd, Cast(dout, DType::kFloat32));
    PIJIT_ASSIGN_OR_RETURN(Tensor r, Pool2DGrad(kind, wx, wd, win, positive_only));
    return Cast(r, meta.dtype);
  }
  PIJIT_ASSIGN_OR_RETURN(Geometry2D g, ResolveWindow(GradName(kind), x.shape(), win.kernel, win, true));
  Tensor dx = Tensor::Empty(meta.shape, meta.dtype);
  std::memset(dx.raw_data(), 0, dx.numel() * ItemSize(meta.dtype));
  if (dx.numel() == 0 || dout.numel() == 0) return dx;
  const Tensor cx = x.Contiguous(), cd = dout.Contiguous();
  const bool include_pad = win.count_include_pad && !win.same;
  DispatchDType(meta.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
      PoolGradLoop<T>(kind, cx, cd, win, g, include_pad, positive_only, dx);
  });
  return dx;
}

}  // namespace pijit
