// Shape-only ops: reshape, transpose, squeeze, unsqueeze, flatten (views where the layout
// allows).
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

absl::Status CheckShape(const char* op, absl::Span<const int64_t> shape) {
  int64_t n = 1;
  bool overflow = false;
  for (int64_t d : shape) {
    if (d < 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: negative dimension %d in shape %s", op, d, ShapeToString(shape)));
    }
    overflow = overflow || __builtin_mul_overflow(n, d, &n);
  }
  // Every element must be addressable in bytes by the widest dtype (NumPy: "array is too big").
  if (overflow || n > (int64_t{1} << 59)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: a tensor of shape %s is too big", op, ShapeToString(shape)));
  }
  return absl::OkStatus();
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

namespace {
absl::StatusOr<absl::InlinedVector<bool, 6>> SqueezedAxes(const TensorMeta& a,
                                                         absl::Span<const int64_t> axes) {
  const int64_t nd = static_cast<int64_t>(a.shape.size());
  absl::InlinedVector<bool, 6> drop(nd, false);
  for (int64_t i = 0; i < nd; ++i) drop[i] = axes.empty() && a.shape[i] == 1;
  for (int64_t ax : axes) {
    PIJIT_ASSIGN_OR_RETURN(int64_t k, NormalizeAxis("squeeze", ax, nd));
    if (drop[k]) {
      return absl::InvalidArgumentError(
          absl::StrFormat("squeeze: repeated axis in %s", ShapeToString(axes)));
    }
    if (a.shape[k] != 1) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "squeeze: cannot remove axis %d of size %d from a tensor of shape %s (only size-1 "
          "axes can be squeezed)", ax, a.shape[k], ShapeToString(a.shape)));
    }
    drop[k] = true;
  }
  return drop;
}
}  // namespace

absl::StatusOr<TensorMeta> InferSqueeze(const TensorMeta& a, absl::Span<const int64_t> axes) {
  PIJIT_ASSIGN_OR_RETURN(auto drop, SqueezedAxes(a, axes));
  Shape out;
  for (size_t i = 0; i < a.shape.size(); ++i)
    if (!drop[i]) out.push_back(a.shape[i]);
  return TensorMeta{a.dtype, std::move(out)};
}

absl::StatusOr<Tensor> Squeeze(const Tensor& a, absl::Span<const int64_t> axes) {
  PIJIT_ASSIGN_OR_RETURN(auto drop, SqueezedAxes(MetaOf(a), axes));
  Shape shape, strides;
  for (int64_t i = 0; i < a.ndim(); ++i) {
    if (drop[i]) continue;
    shape.push_back(a.shape()[i]);
    strides.push_back(a.strides()[i]);
  }
  return Tensor::View(a.storage(), a.dtype(), std::move(shape), std::move(strides), a.offset());
}

absl::StatusOr<TensorMeta> InferUnsqueeze(const TensorMeta& a, int64_t axis) {
  const int64_t nd = static_cast<int64_t>(a.shape.size());
  PIJIT_ASSIGN_OR_RETURN(int64_t k, NormalizeAxis("unsqueeze", axis, nd + 1));
  Shape out = a.shape;
  out.insert(out.begin() + k, 1);
  return TensorMeta{a.dtype, std::move(out)};
}

absl::StatusOr<Tensor> Unsqueeze(const Tensor& a, int64_t axis) {
  PIJIT_ASSIGN_OR_RETURN(int64_t k, NormalizeAxis("unsqueeze", axis, a.ndim() + 1));
  Shape shape = a.shape(), strides = a.strides();
  // Any stride is valid for a size-1 axis; use the one a contiguous layout would have.
  int64_t s = k < a.ndim() ? a.strides()[k] * a.shape()[k] : 1;
  shape.insert(shape.begin() + k, 1);
  strides.insert(strides.begin() + k, s);
  return Tensor::View(a.storage(), a.dtype(), std::move(shape), std::move(strides), a.offset());
}

absl::StatusOr<TensorMeta> InferFlatten(const TensorMeta& a, int64_t start, int64_t end) {
  const int64_t nd = static_cast<int64_t>(a.shape.size());
  if (nd == 0) {
    // A 0-d tensor flattens to one element; only axes 0 and -1 name it.
    for (int64_t ax : {start, end}) {
      if (ax != 0 && ax != -1) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "flatten: axis %d is out of bounds for a tensor of dimension 0", ax));
      }
    }
    return TensorMeta{a.dtype, Shape{1}};
  }
  PIJIT_ASSIGN_OR_RETURN(int64_t s, NormalizeAxis("flatten", start, nd));
  PIJIT_ASSIGN_OR_RETURN(int64_t e, NormalizeAxis("flatten", end, nd));
  if (s > e) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "flatten: start_dim %d comes after end_dim %d for a tensor of dimension %d", start, end,
        nd));
  }
  Shape out(a.shape.begin(), a.shape.begin() + s);
  out.push_back(NumElements(absl::MakeSpan(a.shape).subspan(s, e - s + 1)));
  out.insert(out.end(), a.shape.begin() + e + 1, a.shape.end());
  return TensorMeta{a.dtype, std::move(out)};
}

absl::StatusOr<Tensor> Flatten(const Tensor& a, int64_t start, int64_t end) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferFlatten(MetaOf(a), start, end));
  return Reshape(a, meta.shape);
}

}  // namespace pijit
