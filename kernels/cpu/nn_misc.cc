// one_hot (labels for losses) and assign (in-place update of a variable, e.g. a Parameter).
#include <type_traits>

#include "kernels/errors.h"
#include "kernels/ops.h"

namespace pijit {

absl::StatusOr<TensorMeta> InferOneHot(const TensorMeta& indices, int64_t depth, int64_t axis,
                                       DType dtype) {
  if (!IsInteger(indices.dtype)) {
    return absl::UnimplementedError(absl::StrFormat(
        "one_hot: indices must be Int32 or Int64, got %s", DTypeName(indices.dtype)));
  }
  if (depth < 0) {
    return absl::InvalidArgumentError(absl::StrFormat("one_hot: depth must be non-negative, got %d", depth));
  }
  const int64_t nd = static_cast<int64_t>(indices.shape.size()) + 1;
  PIJIT_ASSIGN_OR_RETURN(int64_t ax, NormalizeAxis("one_hot", axis, nd));
  Shape out = indices.shape;
  out.insert(out.begin() + ax, depth);
  return TensorMeta{dtype, std::move(out)};
}

absl::StatusOr<Tensor> OneHot(const Tensor& indices, int64_t depth, int64_t axis, DType dtype,
                              double on, double off) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferOneHot(MetaOf(indices), depth, axis, dtype));
  const int64_t ax = axis < 0 ? axis + indices.ndim() + 1 : axis;
  // The indices are read in their own integer type (each converted as a cast to int64
  // would), so contiguous labels need no scratch copy.
  const Tensor idx = indices.Contiguous();
  // Output viewed as [outer, depth, inner]; indices as [outer, inner].
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < ax; ++i) outer *= indices.shape()[i];
  for (int64_t i = ax; i < indices.ndim(); ++i) inner *= indices.shape()[i];
  Tensor out = Tensor::Empty(meta.shape, dtype);
  DispatchDType(idx.dtype(), [&](auto itag) {
    using I = decltype(itag);
    if constexpr (std::is_integral_v<I>) {
      DispatchDType(dtype, [&](auto tag) {
        using T = decltype(tag);
        T* po = out.data<T>();
        const I* pi = idx.data<I>();
        const T von = static_cast<T>(on), voff = static_cast<T>(off);
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t d = 0; d < depth; ++d)
            for (int64_t i = 0; i < inner; ++i)
              po[(o * depth + d) * inner + i] =
                  static_cast<int64_t>(pi[o * inner + i]) == d ? von : voff;
      });
    }
  });
  return out;
}

namespace {
// The bytes a strided tensor can touch, [lo, hi); empty for an empty tensor.
std::pair<uintptr_t, uintptr_t> ByteExtent(const Tensor& t) {
  if (t.numel() == 0) return {0, 0};
  const auto item = static_cast<int64_t>(t.itemsize());
  int64_t lo = 0, hi = 0;
  for (int64_t i = 0; i < t.ndim(); ++i) {
    const int64_t reach = (t.shape()[i] - 1) * t.strides()[i];
    (reach < 0 ? lo : hi) += reach;
  }
  const auto base = reinterpret_cast<uintptr_t>(t.raw_data());
  return {base + lo * item, base + (hi + 1) * item};
}

// Whether two tensors may share memory: by address, since distinct storages can wrap one
// buffer (NumPy views of one array).
bool MayOverlap(const Tensor& a, const Tensor& b) {
  const auto [alo, ahi] = ByteExtent(a);
  const auto [blo, bhi] = ByteExtent(b);
  return alo < bhi && blo < ahi;
}
}  // namespace

absl::StatusOr<TensorMeta> InferAssign(const TensorMeta& variable, const TensorMeta& value) {
  PIJIT_ASSIGN_OR_RETURN(Shape b, BroadcastShapes("assign", variable.shape, value.shape));
  if (!(b == variable.shape)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "assign: value of shape %s cannot be broadcast to the variable's shape %s",
        ShapeToString(value.shape), ShapeToString(variable.shape)));
  }
  return variable;
}

absl::StatusOr<Tensor> Assign(const Tensor& variable, const Tensor& value) {
  PIJIT_RETURN_IF_ERROR(InferAssign(MetaOf(variable), MetaOf(value)).status());
  if (!variable.is_contiguous()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "assign: the variable (shape %s) must be contiguous to be written in place",
        ShapeToString(variable.shape())));
  }
  PIJIT_ASSIGN_OR_RETURN(Tensor v, BroadcastTo(value, variable.shape()));
  if (!MayOverlap(v, variable)) {
    CopyInto(v, variable);
    return variable;
  }
  // Through a copy: `value` reads memory that the copy writes.
  Tensor tmp = Tensor::Empty(variable.shape(), variable.dtype());
  CopyInto(v, tmp);
  CopyInto(tmp, variable);
  return variable;
}

}  // namespace pijit
