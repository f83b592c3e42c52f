// Maps each IR op to its kernel's inference and execution functions.
#include <type_traits>

#include "graph/graph.h"
#include "graph/complex_support.h"
#include "graph/control_flow.h"
#include "kernels/blocked_layout.h"
#include "kernels/comm/comm.h"
#include "kernels/errors.h"
#include "kernels/fused_reduce.h"

namespace pijit::graph {
// Binary, unary and reduction graph ops share their enumerators with the kernel enums.
#define PIJIT_AS_KERNEL_OP(e, ...) \
  case Op::e: *out = std::remove_pointer_t<decltype(out)>::e; return true;
bool AsBinary(Op op, BinaryOp* out) {
  switch (op) {
    PIJIT_BINARY_OPS(PIJIT_AS_KERNEL_OP)
    default: return false;
  }
}
bool AsUnary(Op op, UnaryOp* out) {
  switch (op) {
    PIJIT_UNARY_OPS(PIJIT_AS_KERNEL_OP)
    default: return false;
  }
}
bool AsReduce(Op op, ReduceOp* out) {
  switch (op) {
    PIJIT_REDUCE_OPS(PIJIT_AS_KERNEL_OP)
    default: return false;
  }
}
#undef PIJIT_AS_KERNEL_OP

namespace {

absl::StatusOr<DType> NodeDType(const Node& n) {
  if (!n.dtype) return absl::InternalError(absl::StrFormat("%s: node has no dtype", OpName(n.op)));
  return *n.dtype;
}

// The result of all_gather (axis 0 times the group's size; a 0-d input gathers into a
// vector) and reduce_scatter (axis 0 divided by it), with the group's size as it is now.
absl::StatusOr<TensorMeta> InferCollective(const Node& n, const TensorMeta& in) {
  const bool gather = n.op == Op::kAllGather;
  const int group = static_cast<int>(CollectiveGroup(n));
  if (n.attr < 0) return absl::InternalError(absl::StrCat(OpName(n.op), ": negative attr"));
  PIJIT_ASSIGN_OR_RETURN(int size, comm::GroupSize(group));
  TensorMeta out = in;
  if (gather) {
    if (out.shape.empty()) out.shape.push_back(1);
    out.shape[0] *= size;
    return out;
  }
  if (out.shape.empty() || out.shape[0] % size != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "reduce_scatter: the first axis of a tensor of shape %s must be a multiple of the group's %d ranks",
        ShapeToString(in.shape), size));
  }
  out.shape[0] /= size;
  return out;
}

// clip's optional bounds: ints = {has_min, has_max}, inputs = x then the given bounds.
template <typename T>
absl::Status ClipOperands(const Node& n, absl::Span<const T* const> in, const T** lo,
                          const T** hi) {
  if (n.ints.size() != 2 || in.size() != 1 + (n.ints[0] != 0) + (n.ints[1] != 0)) {
    return absl::InternalError("clip: inputs do not match its bounds attribute");
  }
  *lo = n.ints[0] ? in[1] : nullptr;
  *hi = n.ints[1] ? in[1 + (n.ints[0] != 0)] : nullptr;
  return absl::OkStatus();
}

// The optional trailing inputs of conv2d (bias) and layer_norm (gamma, beta).
template <typename T>
const T* OptionalInput(absl::Span<const T* const> in, size_t i) {
  return i < in.size() ? in[i] : nullptr;
}

absl::StatusOr<double> ValueAt(const Node& n, int64_t i) {
  if (n.value.dtype() != DType::kFloat64 || n.value.numel() <= i) {
    return absl::InternalError(absl::StrFormat("%s: expects Float64 parameters in value", OpName(n.op)));
  }
  return n.value.data<double>()[i];
}

// layer_norm: ints = {has_gamma, has_beta, normalized_shape...}; inputs x, [gamma], [beta].
template <typename T>
absl::Status LayerNormOperands(const Node& n, absl::Span<const T* const> in, const T** gamma,
                               const T** beta) {
  if (n.ints.size() < 2 || in.size() != 1 + (n.ints[0] != 0) + (n.ints[1] != 0)) {
    return absl::InternalError("layer_norm: inputs do not match its attributes");
  }
  *gamma = n.ints[0] ? in[1] : nullptr;
  *beta = n.ints[1] ? in[1 + (n.ints[0] != 0)] : nullptr;
  return absl::OkStatus();
}

// layer_norm_grad's inputs are (x, dy) and gamma when ints[0] says so.
absl::Status LayerNormGradOperands(const Node& n, size_t inputs) {
  if (n.ints.size() < 2 || inputs != 2 + static_cast<size_t>(n.ints[0] != 0)) {
    return absl::InternalError("layer_norm_grad: inputs do not match its attributes");
  }
  return absl::OkStatus();
}

absl::Span<const int64_t> NormalizedShape(const Node& n) {
  return absl::MakeConstSpan(n.ints).subspan(2);
}

bool IsStack(Op op) { return op == Op::kStack; }

// index_grad's attributes: ints = the shape (attr = its rank) followed by the encoded index.
using Span = absl::Span<const int64_t>;
absl::StatusOr<std::pair<Span, Span>> IndexGradParts(const Node& n) {
  if (n.attr < 0 || n.attr > static_cast<int64_t>(n.ints.size())) {
    return absl::InternalError("index_grad: rank attribute out of range");
  }
  Span all(n.ints);
  return std::make_pair(all.subspan(0, n.attr), all.subspan(n.attr));
}

// conv2d_grad_input/weight's attributes: ints = the window followed by a 4-D shape.
absl::StatusOr<std::pair<Window2D, Span>> WindowAndShape(const Node& n) {
  if (n.ints.size() != kWindowInts + 4) {
    return absl::InternalError(absl::StrFormat("%s: expects %d window ints and a 4-D shape",
                                               OpName(n.op), kWindowInts));
  }
  Span all(n.ints);
  PIJIT_ASSIGN_OR_RETURN(Window2D w, DecodeWindow(OpName(n.op), all.subspan(0, kWindowInts)));
  return std::make_pair(w, all.subspan(kWindowInts));
}

// conv2d_transpose's attributes: ints = the window followed by ConvTransposeShape's ints.
absl::StatusOr<std::pair<Window2D, ConvTransposeShape>> TransposedWindow(const Node& n) {
  if (n.ints.size() != kWindowInts + kConvTransposeInts) {
    return absl::InternalError(absl::StrFormat("%s: expects %d window ints and %d more",
                                               OpName(n.op), kWindowInts, kConvTransposeInts));
  }
  Span all(n.ints);
  PIJIT_ASSIGN_OR_RETURN(Window2D w, DecodeWindow(OpName(n.op), all.subspan(0, kWindowInts)));
  ConvTransposeShape out;
  out.output_padding[0] = all[kWindowInts];
  out.output_padding[1] = all[kWindowInts + 1];
  out.valid = all[kWindowInts + 2] != 0;
  return std::make_pair(w, out);
}

// A fused node's result: the program's dtype, the inputs' broadcast shape.
absl::StatusOr<TensorMeta> InferFused(const Node& n, absl::Span<const TensorMeta* const> in) {
  if (!n.program) return absl::InternalError("fused: node has no program");
  const FusedProgram& p = *n.program;
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

// A fused_reduce node's reduction (attr), checked.
absl::StatusOr<ReduceOp> FusedReduceOpOf(const Node& n) {
  const ReduceOp r = static_cast<ReduceOp>(n.attr);
  if (n.attr < 0 || n.attr > static_cast<int64_t>(ReduceOp::kStd) || !FusedReduceSupports(r)) {
    return absl::InternalError(
        absl::StrFormat("fused_reduce: attr %d is not sum, mean, max or min", n.attr));
  }
  return r;
}

// A fused_reduce node's result: the reduction of what the fused node would give.
absl::StatusOr<TensorMeta> InferFusedReduce(const Node& n,
                                            absl::Span<const TensorMeta* const> in) {
  PIJIT_ASSIGN_OR_RETURN(ReduceOp r, FusedReduceOpOf(n));
  PIJIT_ASSIGN_OR_RETURN(TensorMeta produced, InferFused(n, in));
  return InferReduce(r, produced, n.ints, n.keepdims);
}
// fused_conv2d's inputs after x and w: the convolution's own bias when there is one more
// than the post-ops that read an operand, then those operands.
template <typename T>
absl::Status SplitConvEpilogue(const Node& n, absl::Span<const T* const> in, Window2D* win,
                               absl::Span<const int64_t>* post, const T** bias,
                               absl::Span<const T* const>* operands) {
  if (n.ints.size() < kWindowInts || in.size() < 2) {
    return absl::InternalError("fused_conv2d: expects a window and at least 2 inputs");
  }
  Span all(n.ints);
  PIJIT_ASSIGN_OR_RETURN(*win, DecodeWindow("fused_conv2d", all.subspan(0, kWindowInts)));
  *post = all.subspan(kWindowInts);
  size_t reads = 0;
  for (int64_t p : *post) {
    reads += MatMulPostTakesOperand(p);
  }
  const size_t rest = in.size() - 2;
  if (rest != reads && rest != reads + 1) {
    return absl::InternalError(absl::StrFormat(
        "fused_conv2d: %d inputs after x and w for %d bias/add post-ops", rest, reads));
  }
  *bias = rest == reads ? nullptr : in[2];
  *operands = in.subspan(2 + (rest - reads));
  return absl::OkStatus();
}

}  // namespace

namespace {
absl::StatusOr<TensorMeta> InferNodeMeta(const Node& n, absl::Span<const TensorMeta* const> in) {
  BinaryOp b;
  UnaryOp u;
  ReduceOp r;
  if (AsBinary(n.op, &b)) return InferBinary(b, *in[0], *in[1]);
  if (AsUnary(n.op, &u)) return InferUnary(u, *in[0]);
  if (AsReduce(n.op, &r)) return InferReduce(r, *in[0], n.ints, n.keepdims);
  switch (n.op) {
    case Op::kArgMax:
    case Op::kArgMin: return InferArgReduce(n.op == Op::kArgMax, *in[0], n.ints, n.keepdims);
    case Op::kSoftmax:
    case Op::kLogSoftmax: return InferSoftmax(n.op == Op::kLogSoftmax, *in[0], n.attr);
    case Op::kWhere: return InferWhere(*in[0], *in[1], *in[2]);
    case Op::kClip: {
      const TensorMeta *lo, *hi;
      PIJIT_RETURN_IF_ERROR(ClipOperands<TensorMeta>(n, in, &lo, &hi));
      return InferClip(*in[0], lo, hi);
    }
    case Op::kMatMul: return InferMatMul(*in[0], *in[1]);
    case Op::kFusedMatMul:
      if (in.size() < 2) return absl::InternalError("fused_matmul: expects at least 2 inputs");
      return InferMatMulEpilogue(*in[0], *in[1], n.ints, in.subspan(2));
    case Op::kFusedConv2D: {
      Window2D w;
      absl::Span<const int64_t> post;
      const TensorMeta* bias;
      absl::Span<const TensorMeta* const> operands;
      PIJIT_RETURN_IF_ERROR(SplitConvEpilogue(n, in, &w, &post, &bias, &operands));
      if (n.attr != 0) return InferConv2DBlocked(*in[0], *in[1], bias, w, post, operands, n.attr);
      return InferConv2DEpilogue(*in[0], *in[1], bias, w, post, operands);
    }
    case Op::kToBlocked: return InferToBlocked(*in[0], n.attr);
    case Op::kFromBlocked: return InferFromBlocked(*in[0]);
    case Op::kConv2D: {
      PIJIT_ASSIGN_OR_RETURN(Window2D w, DecodeWindow("conv2d", n.ints));
      if (in.size() < 2 || in.size() > 3) return absl::InternalError("conv2d: expects 2 or 3 inputs");
      return InferConv2D(*in[0], *in[1], OptionalInput(in, 2), w);
    }
    case Op::kConv2DTranspose: {
      PIJIT_ASSIGN_OR_RETURN(auto parts, TransposedWindow(n));
      if (in.size() < 2 || in.size() > 3) return absl::InternalError("conv2d_transpose: expects 2 or 3 inputs");
      return InferConv2DTranspose(*in[0], *in[1], OptionalInput(in, 2), parts.first, parts.second);
    }
    case Op::kMaxPool2D:
    case Op::kAvgPool2D: {
      PIJIT_ASSIGN_OR_RETURN(Window2D w, DecodeWindow(OpName(n.op), n.ints));
      return InferPool2D(n.op == Op::kMaxPool2D ? PoolKind::kMax : PoolKind::kAvg, *in[0], w);
    }
    case Op::kConv2DGradInput:
    case Op::kConv2DGradWeight: {
      PIJIT_ASSIGN_OR_RETURN(auto parts, WindowAndShape(n));
      if (n.op == Op::kConv2DGradInput) {
        if (n.attr != 0 || in[0]->shape.size() == 5) {
          return InferConv2DGradInputBlocked(*in[0], *in[1], parts.second, parts.first, n.attr);
        }
        return InferConv2DGradInput(*in[0], *in[1], parts.second, parts.first);
      }
      if (in[0]->shape.size() == 5 || in[1]->shape.size() == 5) {
        return InferConv2DGradWeightBlocked(*in[0], *in[1], parts.second, parts.first);
      }
      return InferConv2DGradWeight(*in[0], *in[1], parts.second, parts.first);
    }
    case Op::kMaxPool2DGrad:
    case Op::kAvgPool2DGrad: {
      PIJIT_ASSIGN_OR_RETURN(Window2D w, DecodeWindow(OpName(n.op), n.ints));
      return InferPool2DGrad(n.op == Op::kMaxPool2DGrad ? PoolKind::kMax : PoolKind::kAvg, *in[0],
                             *in[1], w);
    }
    case Op::kBatchNorm:
    case Op::kBatchNormTrain:
      if (n.op == Op::kBatchNormTrain && BatchNormAppliesRelu(n) && n.attr == 0) {
        return absl::InvalidArgumentError(
            "batch_norm_train: epilogue=relu is for a blocked input (block=)");
      }
      if (n.op == Op::kBatchNormTrain && n.attr != 0) {
        return InferBatchNormTrainBlocked(*in[0], *in[1], *in[2], *in[3], *in[4], n.attr);
      }
      return InferBatchNorm(*in[0], *in[1], *in[2], *in[3], *in[4], n.op == Op::kBatchNormTrain);
    case Op::kBatchNormGradSums:
      if (n.attr != 0) return InferBatchNormGradSumsBlocked(*in[0], *in[1], n.attr);
      return InferBatchNormGradSums(*in[0], *in[1]);
    case Op::kBatchNormGradInput:
      if (n.attr != 0) return InferBatchNormGradInputBlocked(*in[0], *in[1], *in[2], *in[3], n.attr);
      return InferBatchNormGradInput(*in[0], *in[1], *in[2], *in[3]);
    case Op::kLayerNorm: {
      const TensorMeta *gamma, *beta;
      PIJIT_RETURN_IF_ERROR(LayerNormOperands<TensorMeta>(n, in, &gamma, &beta));
      return InferLayerNorm(*in[0], NormalizedShape(n), gamma, beta);
    }
    case Op::kGroupNorm: return InferGroupNorm(*in[0], n.attr, *in[1], *in[2]);
    case Op::kLayerNormGrad: {
      PIJIT_RETURN_IF_ERROR(LayerNormGradOperands(n, in.size()));
      return InferLayerNormGrad(*in[0], *in[1], NormalizedShape(n), n.ints[0] ? in[2] : nullptr);
    }
    case Op::kOneHot: {
      PIJIT_ASSIGN_OR_RETURN(DType dt, NodeDType(n));
      if (n.ints.size() != 2) return absl::InternalError("one_hot: expects ints={depth, axis}");
      return InferOneHot(*in[0], n.ints[0], n.ints[1], dt);
    }
    case Op::kAssign: return InferAssign(*in[0], *in[1]);
    case Op::kAllReduce: return *in[0];
    case Op::kBroadcast: return *in[0];
    case Op::kAllGather: case Op::kReduceScatter: return InferCollective(n, *in[0]);
    case Op::kReshape: return InferReshape(*in[0], n.ints);
    case Op::kCustomGrad:
      if (in.empty()) return absl::InternalError("custom_grad: expects at least 1 input");
      return *in[0];
    case Op::kTranspose: return InferTranspose(*in[0], n.ints);
    case Op::kBroadcastTo: return InferBroadcastTo(*in[0], n.ints);
    case Op::kSqueeze: return InferSqueeze(*in[0], n.ints);
    case Op::kUnsqueeze: return InferUnsqueeze(*in[0], n.attr);
    case Op::kFlatten:
      if (n.ints.size() != 2) return absl::InternalError("flatten: expects ints={start, end}");
      return InferFlatten(*in[0], n.ints[0], n.ints[1]);
    case Op::kIndex: return InferIndex(*in[0], n.ints);
    case Op::kIndexGrad: {
      PIJIT_ASSIGN_OR_RETURN(auto parts, IndexGradParts(n));
      return InferIndexGrad(*in[0], parts.first, parts.second);
    }
    case Op::kAdvIndex:
      if (in.empty()) return absl::InternalError("adv_index: no input");
      return InferAdvancedIndex(*in[0], in.subspan(1), n.ints);
    case Op::kAdvIndexGrad: {
      if (in.empty()) return absl::InternalError("adv_index_grad: no input");
      PIJIT_ASSIGN_OR_RETURN(auto parts, IndexGradParts(n));
      return InferAdvancedIndexGrad(*in[0], in.subspan(1), parts.first, parts.second);
    }
    case Op::kCast: {
      PIJIT_ASSIGN_OR_RETURN(DType dt, NodeDType(n));
      return TensorMeta{dt, in[0]->shape};
    }
    case Op::kConcat:
    case Op::kStack: return InferConcat(IsStack(n.op), in, n.attr);
    case Op::kFull: {
      PIJIT_ASSIGN_OR_RETURN(DType dt, NodeDType(n));
      return InferFull(n.ints, dt);
    }
    case Op::kFullLike: return TensorMeta{n.dtype.value_or(in[0]->dtype), in[0]->shape};
    case Op::kArange:
    case Op::kLinspace: {
      PIJIT_ASSIGN_OR_RETURN(DType dt, NodeDType(n));
      if (n.ints.size() != 1) return absl::InternalError("arange/linspace: expects ints={n}");
      return InferFull(n.ints, dt);
    }
    case Op::kEye: {
      PIJIT_ASSIGN_OR_RETURN(DType dt, NodeDType(n));
      if (n.ints.size() != 3) return absl::InternalError("eye: expects ints={n, m, k}");
      return InferFull({n.ints[0], n.ints[1]}, dt);
    }
    case Op::kUniform:
    case Op::kNormal: {
      PIJIT_ASSIGN_OR_RETURN(DType dt, NodeDType(n));
      return InferRandom(n.op == Op::kUniform ? Distribution::kUniform : Distribution::kNormal,
                         n.ints, dt);
    }
    case Op::kConstant: return MetaOf(n.value);
    case Op::kParam: return n.meta;
    case Op::kFused: return InferFused(n, in);
    case Op::kWhileLoop:
    case Op::kWhileGrad:
    case Op::kCond:
    case Op::kCondGrad:
    case Op::kResult: return InferRegion(n, in);
    case Op::kFusedReduce: return InferFusedReduce(n, in);
    default: break;
  }
  return absl::InternalError(absl::StrFormat("no inference rule for %s", OpName(n.op)));
}
}  // namespace

absl::StatusOr<TensorMeta> InferNode(const Node& n, absl::Span<const TensorMeta* const> in) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferNodeMeta(n, in));
  PIJIT_RETURN_IF_ERROR(CheckGraphComplexSupport(n, in, meta.dtype));
  return meta;
}

absl::StatusOr<std::shared_ptr<const FusedKernel>> CompileFusedNode(const Node& n,
                                                                    absl::Span<const Shape> input_shapes,
                                                                    FusedBackend codegen) {
  if (!n.program) return absl::InternalError(absl::StrFormat("%s: node has no program", OpName(n.op)));
  Shape produced;
  for (const Shape& s : input_shapes) {
    PIJIT_ASSIGN_OR_RETURN(produced, BroadcastShapes("fused", produced, s));
  }
  auto kernel = FusedKernel::Create(*n.program, input_shapes, produced, codegen);
  if (kernel.ok() || codegen == FusedBackend::kInterpreter) return kernel;
  return FusedKernel::Create(*n.program, input_shapes, produced, FusedBackend::kInterpreter);
}

namespace {
// The kernel a fused node runs: the compiled graph's, or one made for these inputs.
absl::StatusOr<const FusedKernel*> KernelForCall(const Node& n, absl::Span<const Tensor* const> in,
                                                 const FusedKernel* lowered, FusedBackend codegen,
                                                 std::shared_ptr<const FusedKernel>* made) {
  if (lowered) return lowered;
  absl::InlinedVector<Shape, 4> shapes;
  for (const Tensor* t : in) shapes.push_back(t->shape());
  PIJIT_ASSIGN_OR_RETURN(*made, CompileFusedNode(n, shapes, codegen));
  return made->get();
}
}  // namespace

absl::StatusOr<Tensor> RunNode(const Node& n, absl::Span<const Tensor* const> in,
                               const FusedKernel* kernel, FusedBackend codegen) {
  PIJIT_RETURN_IF_ERROR(CheckEagerComplexSupport(n, in));
  BinaryOp b;
  UnaryOp u;
  ReduceOp r;
  if (AsBinary(n.op, &b)) return Binary(b, *in[0], *in[1]);
  if (AsUnary(n.op, &u)) return Unary(u, *in[0]);
  if (AsReduce(n.op, &r)) return Reduce(r, *in[0], n.ints, n.keepdims, n.attr);
  switch (n.op) {
    case Op::kArgMax:
    case Op::kArgMin: return ArgReduce(n.op == Op::kArgMax, *in[0], n.ints, n.keepdims);
    case Op::kSoftmax:
    case Op::kLogSoftmax: return Softmax(n.op == Op::kLogSoftmax, *in[0], n.attr);
    case Op::kWhere: return Where(*in[0], *in[1], *in[2]);
    case Op::kClip: {
      const Tensor *lo, *hi;
      PIJIT_RETURN_IF_ERROR(ClipOperands<Tensor>(n, in, &lo, &hi));
      return Clip(*in[0], lo, hi);
    }
    case Op::kMatMul: return MatMul(*in[0], *in[1]);
    case Op::kFusedMatMul:
      if (in.size() < 2) return absl::InternalError("fused_matmul: expects at least 2 inputs");
      return MatMulEpilogue(*in[0], *in[1], n.ints, in.subspan(2));
    case Op::kFusedConv2D: {
      Window2D w;
      absl::Span<const int64_t> post;
      const Tensor* bias;
      absl::Span<const Tensor* const> operands;
      PIJIT_RETURN_IF_ERROR(SplitConvEpilogue(n, in, &w, &post, &bias, &operands));
      if (n.attr != 0) return Conv2DBlocked(*in[0], *in[1], bias, w, post, operands, n.attr);
      return Conv2DEpilogue(*in[0], *in[1], bias, w, post, operands);
    }
    case Op::kToBlocked: return ToBlocked(*in[0], n.attr);
    case Op::kFromBlocked: return FromBlocked(*in[0]);
    case Op::kConv2D: {
      PIJIT_ASSIGN_OR_RETURN(Window2D w, DecodeWindow("conv2d", n.ints));
      if (in.size() < 2 || in.size() > 3) return absl::InternalError("conv2d: expects 2 or 3 inputs");
      return Conv2D(*in[0], *in[1], OptionalInput(in, 2), w, n.attr == kConvReluEpilogue);
    }
    case Op::kConv2DTranspose: {
      PIJIT_ASSIGN_OR_RETURN(auto parts, TransposedWindow(n));
      if (in.size() < 2 || in.size() > 3) return absl::InternalError("conv2d_transpose: expects 2 or 3 inputs");
      return Conv2DTranspose(*in[0], *in[1], OptionalInput(in, 2), parts.first, parts.second);
    }
    case Op::kMaxPool2D:
    case Op::kAvgPool2D: {
      PIJIT_ASSIGN_OR_RETURN(Window2D w, DecodeWindow(OpName(n.op), n.ints));
      return Pool2D(n.op == Op::kMaxPool2D ? PoolKind::kMax : PoolKind::kAvg, *in[0], w);
    }
    case Op::kConv2DGradInput:
    case Op::kConv2DGradWeight: {
      PIJIT_ASSIGN_OR_RETURN(auto parts, WindowAndShape(n));
      if (n.op == Op::kConv2DGradInput) {
        if (n.attr != 0 || in[0]->shape().size() == 5) {
          return Conv2DGradInputBlocked(*in[0], *in[1], parts.second, parts.first, n.attr);
        }
        return Conv2DGradInput(*in[0], *in[1], parts.second, parts.first);
      }
      if (in[0]->shape().size() == 5 || in[1]->shape().size() == 5) {
        return Conv2DGradWeightBlocked(*in[0], *in[1], parts.second, parts.first);
      }
      return Conv2DGradWeight(*in[0], *in[1], parts.second, parts.first);
    }
    case Op::kMaxPool2DGrad:
    case Op::kAvgPool2DGrad: {
      PIJIT_ASSIGN_OR_RETURN(Window2D w, DecodeWindow(OpName(n.op), n.ints));
      return Pool2DGrad(n.op == Op::kMaxPool2DGrad ? PoolKind::kMax : PoolKind::kAvg, *in[0],
                        *in[1], w, n.attr == kPoolGradPositiveOnly);
    }
    case Op::kBatchNorm: {
      PIJIT_ASSIGN_OR_RETURN(double eps, ValueAt(n, 0));
      return BatchNorm(*in[0], *in[1], *in[2], *in[3], *in[4], eps);
    }
    case Op::kBatchNormTrain: {
      PIJIT_ASSIGN_OR_RETURN(double eps, ValueAt(n, 0));
      PIJIT_ASSIGN_OR_RETURN(double momentum, ValueAt(n, 1));
      if (n.attr != 0) {
        return BatchNormTrainBlocked(*in[0], *in[1], *in[2], *in[3], *in[4], eps, momentum, n.attr,
                                     BatchNormAppliesRelu(n));
      }
      return BatchNormTrain(*in[0], *in[1], *in[2], *in[3], *in[4], eps, momentum);
    }
    case Op::kBatchNormGradSums: {
      PIJIT_ASSIGN_OR_RETURN(double eps, ValueAt(n, 0));
      if (n.attr != 0) return BatchNormGradSumsBlocked(*in[0], *in[1], eps, n.attr);
      return BatchNormGradSums(*in[0], *in[1], eps);
    }
    case Op::kBatchNormGradInput:
      if (n.attr != 0) return BatchNormGradInputBlocked(*in[0], *in[1], *in[2], *in[3], n.attr);
      return BatchNormGradInput(*in[0], *in[1], *in[2], *in[3]);
    case Op::kLayerNorm: {
      const Tensor *gamma, *beta;
      PIJIT_RETURN_IF_ERROR(LayerNormOperands<Tensor>(n, in, &gamma, &beta));
      PIJIT_ASSIGN_OR_RETURN(double eps, ValueAt(n, 0));
      return LayerNorm(*in[0], NormalizedShape(n), gamma, beta, eps);
    }
    case Op::kGroupNorm: {
      PIJIT_ASSIGN_OR_RETURN(double eps, ValueAt(n, 0));
      return GroupNorm(*in[0], n.attr, *in[1], *in[2], eps);
    }
    case Op::kLayerNormGrad: {
      PIJIT_RETURN_IF_ERROR(LayerNormGradOperands(n, in.size()));
      PIJIT_ASSIGN_OR_RETURN(double eps, ValueAt(n, 0));
      return LayerNormGrad(*in[0], *in[1], NormalizedShape(n), n.ints[0] ? in[2] : nullptr, eps);
    }
    case Op::kOneHot: {
      PIJIT_ASSIGN_OR_RETURN(DType dt, NodeDType(n));
      if (n.ints.size() != 2) return absl::InternalError("one_hot: expects ints={depth, axis}");
      PIJIT_ASSIGN_OR_RETURN(double on, ValueAt(n, 0));
      PIJIT_ASSIGN_OR_RETURN(double off, ValueAt(n, 1));
      return OneHot(*in[0], n.ints[0], n.ints[1], dt, on, off);
    }
    case Op::kAssign: return Assign(*in[0], *in[1]);
    case Op::kAllReduce:
      if (n.attr < 0) return absl::InvalidArgumentError("all_reduce: expects attr = op + 4 * group");
      return comm::AllReduce(*in[0], static_cast<comm::ReduceOp>(CollectiveReduction(n)),
                             static_cast<int>(CollectiveGroup(n)));
    case Op::kAllGather: return comm::AllGather(*in[0], static_cast<int>(n.attr));
    case Op::kReduceScatter:
      return comm::ReduceScatter(*in[0], static_cast<comm::ReduceOp>(CollectiveReduction(n)),
                                 static_cast<int>(CollectiveGroup(n)));
    case Op::kBroadcast:
      return comm::Broadcast(*in[0], static_cast<int>(BroadcastRoot(n)), static_cast<int>(CollectiveGroup(n)));
    case Op::kReshape: return Reshape(*in[0], n.ints);
    case Op::kCustomGrad: return *in[0];
    case Op::kTranspose: return Transpose(*in[0], n.ints);
    case Op::kBroadcastTo: return BroadcastTo(*in[0], n.ints);
    case Op::kSqueeze: return Squeeze(*in[0], n.ints);
    case Op::kUnsqueeze: return Unsqueeze(*in[0], n.attr);
    case Op::kFlatten:
      if (n.ints.size() != 2) return absl::InternalError("flatten: expects ints={start, end}");
      return Flatten(*in[0], n.ints[0], n.ints[1]);
    case Op::kIndex: return Index(*in[0], n.ints);
    case Op::kIndexGrad: {
      PIJIT_ASSIGN_OR_RETURN(auto parts, IndexGradParts(n));
      return IndexGrad(*in[0], parts.first, parts.second);
    }
    case Op::kAdvIndex:
      if (in.empty()) return absl::InternalError("adv_index: no input");
      return AdvancedIndex(*in[0], in.subspan(1), n.ints);
    case Op::kAdvIndexGrad: {
      if (in.empty()) return absl::InternalError("adv_index_grad: no input");
      PIJIT_ASSIGN_OR_RETURN(auto parts, IndexGradParts(n));
      return AdvancedIndexGrad(*in[0], in.subspan(1), parts.first, parts.second);
    }
    case Op::kCast: {
      PIJIT_ASSIGN_OR_RETURN(DType dt, NodeDType(n));
      return Cast(*in[0], dt);
    }
    case Op::kConcat:
    case Op::kStack: return Concat(IsStack(n.op), in, n.attr);
    case Op::kFull: {
      PIJIT_ASSIGN_OR_RETURN(DType dt, NodeDType(n));
      return Full(n.ints, dt, n.value);
    }
    case Op::kFullLike: return Full(in[0]->shape(), n.dtype.value_or(in[0]->dtype()), n.value);
    case Op::kArange: {
      PIJIT_ASSIGN_OR_RETURN(DType dt, NodeDType(n));
      if (n.ints.size() != 1) return absl::InternalError("arange: expects ints={n}");
      return Arange(n.ints[0], dt, n.value);
    }
    case Op::kLinspace: {
      PIJIT_ASSIGN_OR_RETURN(DType dt, NodeDType(n));
      if (n.ints.size() != 1 || n.value.numel() != 2 || n.value.dtype() != DType::kFloat64)
        return absl::InternalError("linspace: expects ints={num}, value={start, stop}");
      return Linspace(n.value.data<double>()[0], n.value.data<double>()[1], n.ints[0], dt);
    }
    case Op::kEye: {
      PIJIT_ASSIGN_OR_RETURN(DType dt, NodeDType(n));
      if (n.ints.size() != 3) return absl::InternalError("eye: expects ints={n, m, k}");
      return Eye(n.ints[0], n.ints[1], n.ints[2], dt);
    }
    case Op::kUniform:
    case Op::kNormal: {
      PIJIT_ASSIGN_OR_RETURN(DType dt, NodeDType(n));
      if (n.value.numel() != 2 || n.value.dtype() != DType::kFloat64)
        return absl::InternalError("uniform/normal: expects value={a, b} in Float64");
      return Random(n.op == Op::kUniform ? Distribution::kUniform : Distribution::kNormal,
                    n.ints, dt, n.value.data<double>()[0], n.value.data<double>()[1], n.attr);
    }
    case Op::kConstant: return n.value;
    case Op::kFused: {
      // The inputs' broadcast shape: a graph with symbolic sizes runs at other sizes than
      // the ones in its metas.
      Shape shape;
      for (const Tensor* t : in) {
        PIJIT_ASSIGN_OR_RETURN(shape, BroadcastShapes("fused", shape, t->shape()));
      }
      std::shared_ptr<const FusedKernel> made;
      PIJIT_ASSIGN_OR_RETURN(const FusedKernel* k, KernelForCall(n, in, kernel, codegen, &made));
      return k->Run(in, shape);
    }
    case Op::kFusedReduce: {
      PIJIT_ASSIGN_OR_RETURN(ReduceOp r, FusedReduceOpOf(n));
      Shape shape;  // as for fused: the run-time sizes
      for (const Tensor* t : in) {
        PIJIT_ASSIGN_OR_RETURN(shape, BroadcastShapes("fused_reduce", shape, t->shape()));
      }
      std::shared_ptr<const FusedKernel> made;
      PIJIT_ASSIGN_OR_RETURN(const FusedKernel* k, KernelForCall(n, in, kernel, codegen, &made));
      return FusedReduce(*k, r, in, shape, n.ints, n.keepdims);
    }
    default: break;
  }
  if (HasTrait(n.op, kRegion) || n.op == Op::kResult) {
    return absl::UnimplementedError(absl::StrFormat("%s runs in a compiled graph (graph/executor.h)", OpName(n.op)));
  }
  return absl::InternalError(absl::StrFormat("no kernel for %s", OpName(n.op)));
}

}  // namespace pijit::graph
