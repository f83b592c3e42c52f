#include "graph/loop.h"

#include <memory>
#include <utility>

#include "absl/strings/str_format.h"
#include "graph/autodiff.h"
#include "kernels/errors.h"

namespace pijit::graph {
namespace {

const TensorMeta kStayMeta{DType::kBool, {}};

std::string MetaString(const TensorMeta& m) {
  return absl::StrFormat("%s%s", DTypeName(m.dtype), ShapeToString(m.shape));
}

// `what`'s metas must equal `want`'s, position by position.
absl::Status SameMetas(const char* op, const char* what, absl::Span<const TensorMeta* const> got,
                       absl::Span<const TensorMeta* const> want) {
  if (got.size() != want.size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %s has %d values, expected %d", op, what, got.size(), want.size()));
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(*got[i] == *want[i])) {
      return absl::InvalidArgumentError(absl::StrFormat("%s: %s %d is %s, expected %s", op, what, i,
                                                        MetaString(*got[i]), MetaString(*want[i])));
    }
  }
  return absl::OkStatus();
}

std::vector<const TensorMeta*> ParamMetas(const Graph& g) {
  std::vector<const TensorMeta*> m;
  for (NodeId p : g.params()) m.push_back(&g.node(p).meta);
  return m;
}

std::vector<const TensorMeta*> OutputMetas(const Graph& g) {
  std::vector<const TensorMeta*> m;
  for (NodeId o : g.outputs()) m.push_back(&g.node(o).meta);
  return m;
}

}  // namespace

int64_t LoopInvariants(const Node& n) {
  // while_loop: (stay, k carried, m invariants); while_grad: also k seeds and m zeros.
  const int64_t inputs = static_cast<int64_t>(n.inputs.size());
  return n.op == Op::kWhileGrad ? (inputs - 1 - 2 * n.attr) / 2 : inputs - 1 - n.attr;
}

absl::StatusOr<TensorMeta> InferLoop(const Node& n, absl::Span<const TensorMeta* const> in) {
  const char* op = OpName(n.op);
  if (n.op == Op::kLoopResult) {
    if (!(*in[0] == kStayMeta)) return absl::InvalidArgumentError("loop_result: its first input is not a loop");
    return *in[1];
  }
  if (!n.region) return absl::InvalidArgumentError(absl::StrFormat("%s: no body", op));
  const int64_t k = LoopCarried(n);
  const int64_t inputs = static_cast<int64_t>(in.size());
  const bool grad = n.op == Op::kWhileGrad;
  if (k < 0 || inputs < 1 + k || (grad && (inputs - 1 - 2 * k < 0 || (inputs - 1 - 2 * k) % 2 != 0))) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: %d inputs do not fit %d carried values", op, inputs, k));
  }
  if (!(*in[0] == kStayMeta)) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: the condition is %s, expected bool[]", op, MetaString(*in[0])));
  }
  const int64_t m = LoopInvariants(n);
  const auto loop_in = in.subspan(1, static_cast<size_t>(k + m));
  const Graph& body = n.region->body;
  PIJIT_RETURN_IF_ERROR(SameMetas(op, "the body's parameter list", ParamMetas(body), loop_in));
  std::vector<const TensorMeta*> want(loop_in.begin(), loop_in.begin() + k);
  want.push_back(&kStayMeta);
  PIJIT_RETURN_IF_ERROR(SameMetas(op, "the body's result list", OutputMetas(body), want));
  if (grad) {
    const Graph& vjp = n.region->body_vjp;
    PIJIT_RETURN_IF_ERROR(SameMetas(op, "the backward body's parameter list", ParamMetas(vjp), in.subspan(1)));
    PIJIT_RETURN_IF_ERROR(SameMetas(op, "the backward body's result list", OutputMetas(vjp), loop_in));
  }
  return kStayMeta;
}

absl::Status VerifyLoopResult(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  const Node& loop = g.node(n.inputs[0]);
  if (loop.op != Op::kWhileLoop && loop.op != Op::kWhileGrad) {
    return absl::InternalError(absl::StrFormat("verify: %%%d reads a result of %%%d, a %s", id, n.inputs[0], OpName(loop.op)));
  }
  const int64_t results = LoopCarried(loop) + (loop.op == Op::kWhileGrad ? LoopInvariants(loop) : 0);
  if (n.attr < 0 || n.attr >= results) {
    return absl::InternalError(absl::StrFormat("verify: %%%d reads result %d of %%%d, which has %d", id, n.attr,
                                               n.inputs[0], results));
  }
  if (!(g.node(loop.inputs[1 + n.attr]).meta == n.meta)) {
    return absl::InternalError(absl::StrFormat("verify: %%%d has another meta than result %d of %%%d", id, n.attr,
                                               n.inputs[0]));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<NodeId>> AppendWhileLoop(Graph& g, absl::Span<const NodeId> inputs,
                                                    int64_t carried, Graph body) {
  Node loop;
  loop.op = Op::kWhileLoop;
  loop.inputs.assign(inputs.begin(), inputs.end());
  loop.attr = carried;
  auto region = std::make_shared<Region>();
  region->body = std::move(body);
  loop.region = std::move(region);
  PIJIT_ASSIGN_OR_RETURN(const NodeId id, g.AddNode(std::move(loop)));
  std::vector<NodeId> results;
  for (int64_t i = 0; i < carried; ++i) {
    Attrs a;
    a.attr = i;
    PIJIT_ASSIGN_OR_RETURN(NodeId r, g.AddOp(Op::kLoopResult, {id, inputs[1 + i]}, std::move(a)));
    results.push_back(r);
  }
  return results;
}

absl::StatusOr<Graph> LoopBodyVjp(const Graph& body, int64_t carried) {
  Graph vjp = body;
  const std::vector<NodeId> params = vjp.params();
  const std::vector<NodeId> outs(vjp.outputs().begin(), vjp.outputs().begin() + carried);
  std::vector<NodeId> seeds, acc;
  for (NodeId o : outs) seeds.push_back(vjp.AddParam(vjp.node(o).meta));
  for (size_t j = static_cast<size_t>(carried); j < params.size(); ++j) acc.push_back(vjp.AddParam(vjp.node(params[j]).meta));
  PIJIT_ASSIGN_OR_RETURN(std::vector<NodeId> grads, AppendBackward(vjp, outs, seeds, params));
  std::vector<NodeId> results;
  for (size_t j = 0; j < params.size(); ++j) {
    NodeId gj = grads[j];
    const TensorMeta& m = vjp.node(params[j]).meta;
    if (gj == kNoGradient) {
      Attrs zeros;
      zeros.ints = m.shape;
      zeros.dtype = m.dtype;
      zeros.value = Tensor::Scalar<int64_t>(0);
      PIJIT_ASSIGN_OR_RETURN(gj, vjp.AddOp(Op::kFull, {}, std::move(zeros)));
    }
    if (j >= static_cast<size_t>(carried)) {
      const NodeId sum_to = acc[j - static_cast<size_t>(carried)];
      if (CarriesGradient(m.dtype)) {
        PIJIT_ASSIGN_OR_RETURN(gj, vjp.AddOp(Op::kAdd, {sum_to, gj}));
      } else {
        gj = sum_to;
      }
    }
    results.push_back(gj);
  }
  vjp.SetOutputs(std::move(results));
  return vjp;
}

}  // namespace pijit::graph
