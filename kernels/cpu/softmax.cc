// softmax and log_softmax along one axis, stable: exp(x - max) / sum(exp(x - max)).
// The input is viewed as [outer, n, inner]. inner == 1 (softmax over the last axis) runs rows
// in parallel: float32 rows on an AVX-512 CPU through rows_avx512.h (one pass over the
// input from memory, the exponentials kept in a per-thread buffer, the result streamed out);
// otherwise through vectorised max and sum (reduce_vec.h) and the generated exp(x - max) of
// the fused kernels (kernels/fused.h). inner > 1 runs vectorisable loops over whole inner rows
// instead of transposing.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "kernels/cpu/reduce_vec.h"
#include "kernels/cpu/rows_avx512.h"
#include "kernels/errors.h"
#include "kernels/fused.h"
#include "kernels/ops.h"
#include "kernels/thread_pool.h"

namespace pijit {
namespace {

// exp($0 - $1) with $0 a contiguous row and $1 its broadcast maximum: generated code, or
// nullptr (then std::exp).
template <typename T>
FusedKernel::Fn ShiftedExp() {
  static const std::shared_ptr<const FusedKernel> kernel = [] {
    std::shared_ptr<const FusedKernel> k;
    auto program = FusedProgram::Parse("sub($0, $1); exp(#0)", DTypeOf<T>::value, 2);
    if (program.ok()) {
      auto made = FusedKernel::Create(*program, {Shape{1}, Shape{1}}, Shape{1});
      if (made.ok()) k = *made;
    }
    return k;
  }();
  return kernel ? kernel->NativeFn(/*stride_mask=*/1) : nullptr;
}

// One row of n elements (out may not alias x).
template <typename T>
void SoftmaxRow(bool log, FusedKernel::Fn exp_fn, const T* x, T* out, int64_t n) {
  T mx = rvec::Max(x, n, false);  // NaN propagates: a NaN maximum makes every result NaN
  // All -inf (or a +inf maximum): shift by 0 so that exp gives 0 (-inf) or NaN (+inf).
  if (std::isinf(mx) && mx < 0) mx = T(0);
  if (exp_fn) {
    const void* in[] = {x, &mx};
    exp_fn(out, in, n);
  } else {
    for (int64_t j = 0; j < n; ++j) out[j] = std::exp(x[j] - mx);
  }
  const double sum = rvec::Sum(out, n, false);
  if (log) {
    const T lse = static_cast<T>(std::log(sum));
    for (int64_t j = 0; j < n; ++j) out[j] = x[j] - mx - lse;
  } else {
    const T inv = static_cast<T>(1.0 / sum);
    for (int64_t j = 0; j < n; ++j) out[j] *= inv;
  }
}

template <typename T>
void SoftmaxBlock(bool log, const T* in, T* out, int64_t n, int64_t inner, T* mx, T* sum) {
  for (int64_t j = 0; j < inner; ++j) mx[j] = -INFINITY;
  for (int64_t i = 0; i < n; ++i) {
    const T* row = in + i * inner;
    // NaN propagates: once mx is NaN every result is NaN.
    for (int64_t j = 0; j < inner; ++j) mx[j] = (row[j] > mx[j] || row[j] != row[j]) ? row[j] : mx[j];
  }
  // A row of -inf (or +inf) maxima: shift by 0 so that exp gives 0 (-inf) or NaN (+inf).
  for (int64_t j = 0; j < inner; ++j) {
    if (std::isinf(mx[j])) mx[j] = mx[j] > 0 ? mx[j] : T(0);
    sum[j] = 0;
  }
  for (int64_t i = 0; i < n; ++i) {
    const T* row = in + i * inner;
    T* o = out + i * inner;
    for (int64_t j = 0; j < inner; ++j) {
      o[j] = std::exp(row[j] - mx[j]);
      sum[j] += o[j];
    }
  }
  if (log) {
    for (int64_t j = 0; j < inner; ++j) sum[j] = std::log(sum[j]);
    for (int64_t i = 0; i < n; ++i) {
      const T* row = in + i * inner;
      T* o = out + i * inner;
      for (int64_t j = 0; j < inner; ++j) o[j] = row[j] - mx[j] - sum[j];
    }
  } else {
    for (int64_t j = 0; j < inner; ++j) sum[j] = T(1) / sum[j];
    for (int64_t i = 0; i < n; ++i) {
      T* o = out + i * inner;
      for (int64_t j = 0; j < inner; ++j) o[j] *= sum[j];
    }
  }
}

}  // namespace

absl::StatusOr<TensorMeta> InferSoftmax(bool log, const TensorMeta& a, int64_t axis) {
  const char* name = log ? "log_softmax" : "softmax";
  if (a.dtype == DType::kBool) {
    return absl::UnimplementedError(absl::StrFormat(
        "%s: unsupported dtype Bool, expected an integer or floating dtype", name));
  }
  PIJIT_RETURN_IF_ERROR(NormalizeAxis(name, axis, static_cast<int64_t>(a.shape.size())).status());
  return TensorMeta{FloatFunctionDType(a.dtype), a.shape};
}

absl::StatusOr<Tensor> Softmax(bool log, const Tensor& a, int64_t axis) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferSoftmax(log, MetaOf(a), axis));
  const int64_t ax = axis < 0 ? axis + a.ndim() : axis;
  if (IsHalfFloat(meta.dtype)) {
    // Computed in float32 (max, exponentials and their sum), rounded once at the end.
    PIJIT_ASSIGN_OR_RETURN(Tensor wide, Cast(a, DType::kFloat32));
    PIJIT_ASSIGN_OR_RETURN(Tensor r, Softmax(log, wide, axis));
    return Cast(r, meta.dtype);
  }
  PIJIT_ASSIGN_OR_RETURN(Tensor c, Cast(a, meta.dtype));
  Tensor src = c.Contiguous();
  Tensor out = Tensor::Empty(meta.shape, meta.dtype);
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < ax; ++i) outer *= a.shape()[i];
  for (int64_t i = ax + 1; i < a.ndim(); ++i) inner *= a.shape()[i];
  const int64_t n = a.shape()[ax];
  if (out.numel() == 0) return out;
  DispatchDType(meta.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      const T* x = src.data<T>();
      T* y = out.data<T>();
      if (inner == 1 && std::is_same_v<T, float> && avx512::Available()) {
        // Streamed stores only when the result is larger than the caches.
        const bool stream = out.numel() * sizeof(T) >= (int64_t{8} << 20);
        ParallelFor(outer, std::max<int64_t>(1, (1 << 15) / n), [&](int64_t b, int64_t e) {
          avx512::SoftmaxRows(log, reinterpret_cast<const float*>(x) + b * n,
                              reinterpret_cast<float*>(y) + b * n, e - b, n, stream);
        });
        return;
      }
      if (inner == 1) {
        const FusedKernel::Fn exp_fn = ShiftedExp<T>();
        ParallelFor(outer, std::max<int64_t>(1, (1 << 15) / n), [&](int64_t b, int64_t e) {
          for (int64_t o = b; o < e; ++o) SoftmaxRow<T>(log, exp_fn, x + o * n, y + o * n, n);
        });
        return;
      }
      ParallelFor(outer, std::max<int64_t>(1, (1 << 15) / (n * inner)), [&](int64_t b, int64_t e) {
        std::vector<T> mx(inner), sum(inner);
        for (int64_t o = b; o < e; ++o) {
          SoftmaxBlock<T>(log, x + o * n * inner, y + o * n * inner, n, inner, mx.data(),
                          sum.data());
        }
      });
    }
  });
  return out;
}

}  // namespace pijit
