// Maps each IR op to its kernel's inference and execution functions.
#include "graph/graph.h"
#include "kernels/errors.h"

namespace pijit::graph {
namespace {
bool AsBinary(Op op, BinaryOp* out) {
  switch (op) {
    case Op::kAdd: *out = BinaryOp::kAdd; return true;
    case Op::kSub: *out = BinaryOp::kSub; return true;
    case Op::kMul: *out = BinaryOp::kMul; return true;
    case Op::kDiv: *out = BinaryOp::kDiv; return true;
    default: return false;
  }
}
bool AsUnary(Op op, UnaryOp* out) {
  switch (op) {
    case Op::kNeg: *out = UnaryOp::kNeg; return true;
    case Op::kExp: *out = UnaryOp::kExp; return true;
    case Op::kLog: *out = UnaryOp::kLog; return true;
    case Op::kRelu: *out = UnaryOp::kRelu; return true;
    default: return false;
  }
}
ReduceOp AsReduce(Op op) { return op == Op::kSum ? ReduceOp::kSum : ReduceOp::kMean; }

// A fused node's result: the program's dtype, the inputs' broadcast shape.
absl::StatusOr<TensorMeta> InferFused(const Node& n, absl::Span<const TensorMeta* const> in) {
  if (!n.fused) return absl::InternalError("fused: node has no program");
  const FusedProgram& p = n.fused->program();
  if (static_cast<int>(in.size()) != p.num_inputs) {
    return absl::InternalError(absl::StrFormat("fused: %d inputs for a program of %d",
                                               in.size(), p.num_inputs));
  }
  Shape shape;
  for (const TensorMeta* m : in) {
    if (m->dtype != p.dtype) {
      return absl::InternalError(absl::StrFormat("fused: input of dtype %s for a %s program",
                                                 DTypeName(m->dtype), DTypeName(p.dtype)));
    }
    PIJIT_ASSIGN_OR_RETURN(shape, BroadcastShapes("fused", shape, m->shape));
  }
  return TensorMeta{p.dtype, std::move(shape)};
}
}  // namespace

absl::StatusOr<TensorMeta> InferNode(const Node& n, absl::Span<const TensorMeta* const> in) {
  BinaryOp b;
  UnaryOp u;
  if (AsBinary(n.op, &b)) return InferBinary(b, *in[0], *in[1]);
  if (AsUnary(n.op, &u)) return InferUnary(u, *in[0]);
  switch (n.op) {
    case Op::kSum:
    case Op::kMean: return InferReduce(AsReduce(n.op), *in[0], n.ints, n.keepdims);
    case Op::kMatMul: return InferMatMul(*in[0], *in[1]);
    case Op::kReshape: return InferReshape(*in[0], n.ints);
    case Op::kTranspose: return InferTranspose(*in[0], n.ints);
    case Op::kConstant: return MetaOf(n.value);
    case Op::kParam: return n.meta;
    case Op::kFused: return InferFused(n, in);
    default: break;
  }
  return absl::InternalError(absl::StrFormat("no inference rule for %s", OpName(n.op)));
}

absl::StatusOr<Tensor> RunNode(const Node& n, absl::Span<const Tensor* const> in) {
  BinaryOp b;
  UnaryOp u;
  if (AsBinary(n.op, &b)) return Binary(b, *in[0], *in[1]);
  if (AsUnary(n.op, &u)) return Unary(u, *in[0]);
  switch (n.op) {
    case Op::kSum:
    case Op::kMean: return Reduce(AsReduce(n.op), *in[0], n.ints, n.keepdims);
    case Op::kMatMul: return MatMul(*in[0], *in[1]);
    case Op::kReshape: return Reshape(*in[0], n.ints);
    case Op::kTranspose: return Transpose(*in[0], n.ints);
    case Op::kConstant: return n.value;
    case Op::kFused: return n.fused->Run(in, n.meta.shape);
    default: break;
  }
  return absl::InternalError(absl::StrFormat("no kernel for %s", OpName(n.op)));
}

}  // namespace pijit::graph
