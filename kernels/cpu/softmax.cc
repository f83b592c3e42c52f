// softmax and log_softmax along one axis, stable: exp(x - max) / sum(exp(x - max)).
// The input is viewed as [outer, n, inner]; inner > 1 runs vectorisable loops over
// whole inner rows instead of transposing.
#include <cmath>
#include <vector>

#include "kernels/errors.h"
#include "kernels/ops.h"

namespace pijit {
namespace {

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
  // Integers compute in float64 (whatever their width), as before the small dtypes existed.
  return TensorMeta{IsFloating(a.dtype) ? a.dtype : DType::kFloat64, a.shape};
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
      std::vector<T> mx(inner), sum(inner);
      for (int64_t o = 0; o < outer; ++o) {
        SoftmaxBlock<T>(log, src.data<T>() + o * n * inner, out.data<T>() + o * n * inner, n,
                        inner, mx.data(), sum.data());
      }
    }
  });
  return out;
}

}  // namespace pijit
