// Loop skeletons shared by the elementwise kernels: contiguous fast paths that GCC
// vectorises, and an index walk over broadcast (strided) views otherwise. Binary and Unary
// also take an optional vector loop (isa_loops.h) for the stretches it can run.
#pragma once
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernels/tensor.h"

namespace pijit::loops {

// Calls body(offsets, base, inner) for every innermost run of `shape` (the output's, which is
// contiguous), where offsets are the element offsets of each operand at the start of the run
// and element i of a run is at offset + i * (the operand's stride of the last axis). Axes
// before the last join the run where every operand steps over them as over the run taken
// whole (size-1 axes always do): a broadcast over (N, C, H, W) with H and W broadcast runs
// H * W elements at a time, not W.
template <size_t N, typename F>
void ForEachRun(const Shape& shape, const Shape* const (&strides)[N], F body) {
  const int64_t n = NumElements(shape);
  if (n == 0) return;
  const int64_t nd = static_cast<int64_t>(shape.size());
  int64_t inner = nd ? shape[nd - 1] : 1;
  int64_t outer_axes = nd ? nd - 1 : 0;  // axes [0, outer_axes) are walked one by one
  while (outer_axes > 0) {
    const int64_t d = outer_axes - 1;
    bool joins = true;
    for (size_t k = 0; k < N && shape[d] != 1; ++k)
      joins = joins && (*strides[k])[d] == (*strides[k])[nd - 1] * inner;
    if (!joins) break;
    inner *= shape[d];
    --outer_axes;
  }
  Shape idx(outer_axes, 0);
  for (int64_t base = 0; base < n; base += inner) {
    int64_t off[N] = {};
    for (int64_t k = 0; k < outer_axes; ++k)
      for (size_t j = 0; j < N; ++j) off[j] += idx[k] * (*strides[j])[k];
    body(off, base, inner);
    for (int64_t k = outer_axes - 1; k >= 0; --k) {
      if (++idx[k] < shape[k]) break;
      idx[k] = 0;
    }
  }
}

inline int64_t InnerStride(const Tensor& t) { return t.ndim() ? t.strides()[t.ndim() - 1] : 0; }

// A loop computing out[i] = f(a[i * sa], b[i * sb]) for i in [0, n), with sa and sb each 0 or
// 1 (not both 0), and one computing out[i] = f(a[i]); the loops of isa_loops.h.
template <typename T, typename R>
using BinaryRunFn = void (*)(const T* a, int64_t sa, const T* b, int64_t sb, R* out, int64_t n);
template <typename T>
using UnaryRunFn = void (*)(const T* a, T* out, int64_t n);

// out[i] = f(a[i], b[i]) over views `a` and `b` broadcast to out's shape. `run`, when not
// null, computes the same f over the stretches where each operand is contiguous or a single
// value.
template <typename T, typename R, typename F>
void Binary(const Tensor& a, const Tensor& b, const Tensor& out, F f,
            BinaryRunFn<T, R> run = nullptr) {
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  R* po = out.data<R>();
  const int64_t n = out.numel();
  if (n == 0) return;
  if (a.is_contiguous() && b.is_contiguous()) {
    if (run) return run(pa, 1, pb, 1, po, n);
    for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i]);
    return;
  }
  const int64_t sa = InnerStride(a), sb = InnerStride(b);
  const Shape* strides[2] = {&a.strides(), &b.strides()};
  const bool use_run = run && (sa == 0 || sa == 1) && (sb == 0 || sb == 1) && sa + sb > 0;
  ForEachRun<2>(out.shape(), strides, [&](const int64_t* off, int64_t base, int64_t inner) {
    const T* xa = pa + off[0];
    const T* xb = pb + off[1];
    R* xo = po + base;
    if (use_run) {
      run(xa, sa, xb, sb, xo, inner);
    } else if (sa == 1 && sb == 1) {
      for (int64_t i = 0; i < inner; ++i) xo[i] = f(xa[i], xb[i]);
    } else if (sa == 1 && sb == 0) {
      const T vb = *xb;
      for (int64_t i = 0; i < inner; ++i) xo[i] = f(xa[i], vb);
    } else if (sa == 0 && sb == 1) {
      const T va = *xa;
      for (int64_t i = 0; i < inner; ++i) xo[i] = f(va, xb[i]);
    } else if (sa == 0 && sb == 0) {  // both broadcast along the run: one value
      std::fill(xo, xo + inner, f(*xa, *xb));
    } else {
      for (int64_t i = 0; i < inner; ++i) xo[i] = f(xa[i * sa], xb[i * sb]);
    }
  });
}

// out[i] = f(a[i]) for any layout of `a` (same shape as out). `run`, when not null, computes
// the same f over contiguous stretches (R is then T).
template <typename T, typename R, typename F>
void Unary(const Tensor& a, const Tensor& out, F f, UnaryRunFn<T> run = nullptr) {
  const T* pa = a.data<T>();
  R* po = out.data<R>();
  const int64_t n = out.numel();
  if (n == 0) return;
  if constexpr (std::is_same_v<T, R>) {
    if (run && a.is_contiguous()) return run(pa, po, n);
  }
  if (a.is_contiguous()) {
    for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i]);
    return;
  }
  const int64_t sa = InnerStride(a);
  const Shape* strides[1] = {&a.strides()};
  ForEachRun<1>(out.shape(), strides, [&](const int64_t* off, int64_t base, int64_t inner) {
    const T* xa = pa + off[0];
    R* xo = po + base;
    if constexpr (std::is_same_v<T, R>) {
      if (run && sa == 1) return run(xa, xo, inner);
    }
    for (int64_t i = 0; i < inner; ++i) xo[i] = f(xa[i * sa]);
  });
}

// Whether pred(a[i]) holds for some element of `a` (any layout).
template <typename T, typename P>
bool AnyOf(const Tensor& a, P pred) {
  const T* pa = a.data<T>();
  bool any = false;
  const int64_t sa = InnerStride(a);
  const Shape* strides[1] = {&a.strides()};
  ForEachRun<1>(a.shape(), strides, [&](const int64_t* off, int64_t, int64_t inner) {
    for (int64_t i = 0; i < inner; ++i) any |= pred(pa[off[0] + i * sa]);
  });
  return any;
}

// out[i] = f(a[i], b[i], c[i]) over views broadcast to out's shape (A may differ from T).
template <typename A, typename T, typename R, typename F>
void Ternary(const Tensor& a, const Tensor& b, const Tensor& c, const Tensor& out, F f) {
  const A* pa = a.data<A>();
  const T* pb = b.data<T>();
  const T* pc = c.data<T>();
  R* po = out.data<R>();
  const int64_t n = out.numel();
  if (n == 0) return;
  if (a.is_contiguous() && b.is_contiguous() && c.is_contiguous()) {
    for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i], pc[i]);
    return;
  }
  const int64_t sa = InnerStride(a), sb = InnerStride(b), sc = InnerStride(c);
  const Shape* strides[3] = {&a.strides(), &b.strides(), &c.strides()};
  ForEachRun<3>(out.shape(), strides, [&](const int64_t* off, int64_t base, int64_t inner) {
    const A* xa = pa + off[0];
    const T* xb = pb + off[1];
    const T* xc = pc + off[2];
    R* xo = po + base;
    for (int64_t i = 0; i < inner; ++i) xo[i] = f(xa[i * sa], xb[i * sb], xc[i * sc]);
  });
}

// np.maximum/np.minimum: a NaN operand gives NaN; of two equal operands (+0.0 and -0.0) the
// second, as NumPy.
template <typename T>
inline T Maximum(T a, T b) {
  if constexpr (kIsFloat<T>) return (a > b || a != a) ? a : b;
  else return a > b ? a : b;
}
template <typename T>
inline T Minimum(T a, T b) {
  if constexpr (kIsFloat<T>) return (a < b || a != a) ? a : b;
  else return a < b ? a : b;
}

// np.clip's bounds and the max/min reductions: a NaN operand gives NaN; of two equal operands
// the first (np.clip keeps x = -0.0 at a bound of +0.0).
template <typename T>
inline T Max(T a, T b) {
  if constexpr (kIsFloat<T>) return (a >= b || a != a) ? a : b;
  else return a >= b ? a : b;
}
template <typename T>
inline T Min(T a, T b) {
  if constexpr (kIsFloat<T>) return (a <= b || a != a) ? a : b;
  else return a <= b ? a : b;
}

// relu as np.maximum(x, 0) on floats: NaN stays NaN, -0.0 gives +0.0. Every relu (the eager
// op, fused programs' interpreter, layer epilogues) computes it this way.
template <typename T>
inline T Relu(T x) {
  return x > T(0) ? x : (x != x ? x : T(0));
}

// sigmoid as the eager op and the fused programs' interpreter compute it: both branches stay
// finite, exp only sees non-positive arguments.
template <typename T>
inline T Sigmoid(T x) {
  if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
  T e = std::exp(x);
  return e / (T(1) + e);
}

}  // namespace pijit::loops
