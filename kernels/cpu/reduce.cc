// Reductions over axes (sum, mean). Accumulates in double (float) or int64 (integers).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/errors.h"
#include "kernels/ops.h"

namespace pijit {

const char* ReduceOpName(ReduceOp op) { return op == ReduceOp::kSum ? "sum" : "mean"; }

namespace {
struct ReducePlan {
  TensorMeta meta;
  absl::InlinedVector<bool, 6> reduced;  // per input axis
};

absl::StatusOr<ReducePlan> Plan(ReduceOp op, const TensorMeta& a, absl::Span<const int64_t> axes,
                                bool keepdims) {
  const int64_t nd = static_cast<int64_t>(a.shape.size());
  ReducePlan p;
  p.reduced.assign(nd, axes.empty());
  for (int64_t ax : axes) {
    PIJIT_ASSIGN_OR_RETURN(int64_t k, NormalizeAxis(ReduceOpName(op), ax, nd));
    if (p.reduced[k]) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: duplicate value in axis %s", ReduceOpName(op), ShapeToString(axes)));
    }
    p.reduced[k] = true;
  }
  DType dt = a.dtype;
  if (op == ReduceOp::kSum && !IsFloating(dt)) dt = DType::kInt64;
  if (op == ReduceOp::kMean && !IsFloating(dt)) dt = DType::kFloat64;
  p.meta.dtype = dt;
  for (int64_t i = 0; i < nd; ++i) {
    if (!p.reduced[i]) p.meta.shape.push_back(a.shape[i]);
    else if (keepdims) p.meta.shape.push_back(1);
  }
  return p;
}

template <typename T, typename Acc, typename R>
void ReduceRows(const T* in, R* out, int64_t rows, int64_t cols, double scale) {
  for (int64_t r = 0; r < rows; ++r) {
    Acc acc = 0;
    const T* row = in + r * cols;
    for (int64_t c = 0; c < cols; ++c) acc += static_cast<Acc>(row[c]);
    out[r] = static_cast<R>(scale == 1.0 ? acc : static_cast<double>(acc) * scale);
  }
}

template <typename T, typename Acc, typename R>
void ReduceCols(const T* in, R* out, int64_t rows, int64_t cols, double scale) {
  std::vector<Acc> acc(cols, Acc(0));
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = in + r * cols;
    for (int64_t c = 0; c < cols; ++c) acc[c] += static_cast<Acc>(row[c]);
  }
  for (int64_t c = 0; c < cols; ++c)
    out[c] = static_cast<R>(scale == 1.0 ? acc[c] : static_cast<double>(acc[c]) * scale);
}
}  // namespace

absl::StatusOr<TensorMeta> InferReduce(ReduceOp op, const TensorMeta& a,
                                       absl::Span<const int64_t> axes, bool keepdims) {
  PIJIT_ASSIGN_OR_RETURN(ReducePlan p, Plan(op, a, axes, keepdims));
  return p.meta;
}

absl::StatusOr<Tensor> Reduce(ReduceOp op, const Tensor& a, absl::Span<const int64_t> axes,
                              bool keepdims) {
  PIJIT_ASSIGN_OR_RETURN(ReducePlan p, Plan(op, MetaOf(a), axes, keepdims));
  const int64_t nd = a.ndim();
  // Move kept axes first and reduced axes last, then reduce contiguous rows. When the
  // reduced axes already lead, reduce columns instead and skip the copy.
  Shape perm, kept_perm;
  int64_t kept = 1, red = 1;
  for (int64_t i = 0; i < nd; ++i)
    if (!p.reduced[i]) { perm.push_back(i); kept *= a.shape()[i]; }
  for (int64_t i = 0; i < nd; ++i)
    if (p.reduced[i]) { perm.push_back(i); red *= a.shape()[i]; }
  bool leading = true;
  for (int64_t i = 0, seen_kept = 0; i < nd; ++i) {
    if (!p.reduced[i]) seen_kept = 1;
    else if (seen_kept && a.shape()[i] != 1) leading = false;
  }
  Tensor out = Tensor::Empty(p.meta.shape, p.meta.dtype);
  const double scale = op == ReduceOp::kMean ? 1.0 / static_cast<double>(red) : 1.0;
  Tensor src;
  bool by_cols = false;
  if (a.is_contiguous() && leading && kept > 1) {
    src = a;
    by_cols = true;
  } else {
    PIJIT_ASSIGN_OR_RETURN(Tensor t, Transpose(a, perm));
    src = t.Contiguous();
  }
  // mean over zero elements is NaN (NumPy warns and returns nan).
  DispatchDType(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    DispatchDType(p.meta.dtype, [&](auto rtag) {
      using R = decltype(rtag);
      using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
      if constexpr (std::is_floating_point_v<R> || std::is_same_v<R, int64_t>) {
        const double s = red == 0 && op == ReduceOp::kMean ? NAN : scale;
        if (by_cols) ReduceCols<T, Acc, R>(src.data<T>(), out.data<R>(), red, kept, s);
        else ReduceRows<T, Acc, R>(src.data<T>(), out.data<R>(), kept, red, s);
      }
    });
  });
  return out;
}

}  // namespace pijit
