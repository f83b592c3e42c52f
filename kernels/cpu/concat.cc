// concat and stack: copies each input (converted to the result dtype) into its block of the
// output, which is [outer, sum of axis sizes, inner] in row-major order.
#include <cstring>

#include "kernels/errors.h"
#include "kernels/ops.h"

namespace pijit {

absl::StatusOr<TensorMeta> InferConcat(bool stack, absl::Span<const TensorMeta* const> in,
                                       int64_t axis) {
  const char* name = stack ? "stack" : "concat";
  if (in.empty()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: need at least one tensor to %s", name, name));
  }
  const Shape& first = in[0]->shape;
  const int64_t nd = static_cast<int64_t>(first.size());
  if (!stack && nd == 0) {
    return absl::InvalidArgumentError(
        "concat: zero-dimensional tensors cannot be concatenated (use stack)");
  }
  PIJIT_ASSIGN_OR_RETURN(int64_t ax, NormalizeAxis(name, axis, stack ? nd + 1 : nd));
  DType dt = in[0]->dtype;
  Shape out = first;
  if (stack) out.insert(out.begin() + ax, static_cast<int64_t>(in.size()));
  for (size_t i = 1; i < in.size(); ++i) {
    const Shape& s = in[i]->shape;
    PIJIT_ASSIGN_OR_RETURN(dt, PromoteOrError(stack ? "stack" : "concat", dt, in[i]->dtype));
    if (stack) {
      if (s != first) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "stack: all inputs must have the same shape, but input 0 has shape %s and input %d "
            "has shape %s", ShapeToString(first), i, ShapeToString(s)));
      }
      continue;
    }
    bool ok = static_cast<int64_t>(s.size()) == nd;
    for (int64_t d = 0; ok && d < nd; ++d) ok = d == ax || s[d] == first[d];
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "concat: input 0 has shape %s and input %d has shape %s; all sizes must match "
          "except along axis %d", ShapeToString(first), i, ShapeToString(s), ax));
    }
    out[ax] += s[ax];
  }
  return TensorMeta{dt, std::move(out)};
}

absl::StatusOr<Tensor> Concat(bool stack, absl::Span<const Tensor* const> in, int64_t axis) {
  absl::InlinedVector<TensorMeta, 4> metas;
  absl::InlinedVector<const TensorMeta*, 4> ptrs;
  for (const Tensor* t : in) metas.push_back(MetaOf(*t));
  for (const TensorMeta& m : metas) ptrs.push_back(&m);
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferConcat(stack, ptrs, axis));
  const int64_t nd = static_cast<int64_t>(meta.shape.size());
  const int64_t ax = axis < 0 ? axis + nd : axis;
  Tensor out = Tensor::Empty(meta.shape, meta.dtype);
  if (out.numel() == 0) return out;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < ax; ++d) outer *= meta.shape[d];
  for (int64_t d = ax + 1; d < nd; ++d) inner *= meta.shape[d];
  const size_t item = out.itemsize();
  const int64_t out_row = meta.shape[ax] * inner;  // elements per outer index
  int64_t at = 0;                                  // where the current block starts in a row
  for (const Tensor* t : in) {
    PIJIT_ASSIGN_OR_RETURN(Tensor c, Cast(*t, meta.dtype));
    c = c.Contiguous();
    const int64_t block = stack ? inner : t->shape()[ax] * inner;
    const char* src = static_cast<const char*>(c.raw_data());
    char* dst = static_cast<char*>(out.raw_data());
    for (int64_t o = 0; o < outer; ++o) {
      std::memcpy(dst + (o * out_row + at) * item, src + o * block * item, block * item);
    }
    at += block;
  }
  return out;
}

}  // namespace pijit
