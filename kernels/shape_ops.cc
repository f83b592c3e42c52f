// Shape-only ops: reshape and transpose (views where the layout allows).
#include <algorithm>

#include "kernels/errors.h"
#include "kernels/ops.h"

namespace pijit {

absl::StatusOr<int64_t> NormalizeAxis(const char* op, int64_t axis, int64_t ndim) {
  if (axis < -ndim || axis >= ndim) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: axis %d is out of bounds for a tensor of dimension %d", op, axis, ndim));
  }
  return axis < 0 ? axis + ndim : axis;
}

absl::StatusOr<TensorMeta> InferReshape(const TensorMeta& a, absl::Span<const int64_t> shape) {
  Shape out(shape.begin(), shape.end());
  int64_t known = 1;
  int infer_at = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      if (infer_at >= 0) {
        return absl::InvalidArgumentError("reshape: can only specify one unknown dimension");
      }
      infer_at = static_cast<int>(i);
    } else if (out[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("reshape: negative dimension %d in shape %s", out[i],
                          ShapeToString(shape)));
    } else {
      known *= out[i];
    }
  }
  const int64_t n = NumElements(a.shape);
  if (infer_at >= 0 && known != 0 && n % known == 0) out[infer_at] = n / known;
  if (NumElements(out) != n || (infer_at >= 0 && known == 0)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "reshape: cannot reshape a tensor of %d elements with shape %s into shape %s", n,
        ShapeToString(a.shape), ShapeToString(shape)));
  }
  return TensorMeta{a.dtype, std::move(out)};
}

absl::StatusOr<Tensor> Reshape(const Tensor& a, absl::Span<const int64_t> shape) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferReshape(MetaOf(a), shape));
  Tensor src = a.Contiguous();
  return Tensor::View(src.storage(), src.dtype(), meta.shape, ContiguousStrides(meta.shape),
                      src.offset());
}

absl::StatusOr<TensorMeta> InferTranspose(const TensorMeta& a, absl::Span<const int64_t> perm) {
  const int64_t nd = static_cast<int64_t>(a.shape.size());
  if (perm.empty()) {
    Shape out(a.shape.rbegin(), a.shape.rend());
    return TensorMeta{a.dtype, std::move(out)};
  }
  if (static_cast<int64_t>(perm.size()) != nd) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "transpose: axes %s do not match a tensor of dimension %d", ShapeToString(perm), nd));
  }
  Shape out(nd);
  absl::InlinedVector<bool, 6> seen(nd, false);
  for (int64_t i = 0; i < nd; ++i) {
    PIJIT_ASSIGN_OR_RETURN(int64_t ax, NormalizeAxis("transpose", perm[i], nd));
    if (seen[ax]) {
      return absl::InvalidArgumentError(
          absl::StrFormat("transpose: repeated axis in %s", ShapeToString(perm)));
    }
    seen[ax] = true;
    out[i] = a.shape[ax];
  }
  return TensorMeta{a.dtype, std::move(out)};
}

absl::StatusOr<Tensor> Transpose(const Tensor& a, absl::Span<const int64_t> perm) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferTranspose(MetaOf(a), perm));
  const int64_t nd = a.ndim();
  Shape strides(nd);
  for (int64_t i = 0; i < nd; ++i) {
    int64_t ax = perm.empty() ? nd - 1 - i : (perm[i] < 0 ? perm[i] + nd : perm[i]);
    strides[i] = a.strides()[ax];
  }
  return Tensor::View(a.storage(), a.dtype(), meta.shape, std::move(strides), a.offset());
}

}  // namespace pijit
