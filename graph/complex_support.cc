#include "graph/complex_support.h"

#include "absl/strings/str_format.h"

namespace pijit::graph {

namespace {

// The ops whose kernels handle complex elements (kernels/cpu/complex.cc and the
// dtype-agnostic copies and views).
bool TakesComplex(Op op) {
  switch (op) {
    case Op::kParam: case Op::kConstant:
    case Op::kAdd: case Op::kSub: case Op::kMul: case Op::kDiv:
    case Op::kEqual: case Op::kNotEqual:
    case Op::kNeg: case Op::kAbs: case Op::kExp: case Op::kLog: case Op::kSqrt: case Op::kSquare:
    case Op::kCast:
    case Op::kSum: case Op::kMean: case Op::kProd:
    case Op::kReshape: case Op::kTranspose: case Op::kBroadcastTo: case Op::kSqueeze:
    case Op::kUnsqueeze: case Op::kFlatten: case Op::kIndex: case Op::kConcat: case Op::kStack:
    case Op::kFull: case Op::kFullLike:
      return true;
    default:
      return false;
  }
}

absl::Status Refuse(const Node& n, DType dtype, const char* why) {
  return absl::UnimplementedError(
      absl::StrFormat("%s: %s tensors are not supported%s", OpName(n.op), DTypeName(dtype), why));
}

}  // namespace

absl::Status CheckEagerComplexSupport(const Node& n, absl::Span<const Tensor* const> inputs) {
  if (TakesComplex(n.op)) return absl::OkStatus();
  for (const Tensor* t : inputs) {
    if (t != nullptr && t->defined() && IsComplex(t->dtype())) return Refuse(n, t->dtype(), "");
  }
  if (n.dtype && IsComplex(*n.dtype)) return Refuse(n, *n.dtype, "");
  return absl::OkStatus();
}

absl::Status CheckGraphComplexSupport(const Node& n, absl::Span<const TensorMeta* const> inputs,
                                      DType result) {
  constexpr const char* kWhy =
      " in compiled graphs or on devices: complex tensors run eagerly, on the CPU";
  for (const TensorMeta* m : inputs) {
    if (m != nullptr && IsComplex(m->dtype)) return Refuse(n, m->dtype, kWhy);
  }
  if (IsComplex(result)) return Refuse(n, result, kWhy);
  return absl::OkStatus();
}

}  // namespace pijit::graph
