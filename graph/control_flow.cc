#include "graph/control_flow.h"

#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "graph/autodiff.h"
#include "kernels/errors.h"

namespace pijit::graph {
namespace {

const TensorMeta kPredicateMeta{DType::kBool, {}};

std::string MetaString(const TensorMeta& m) {
  return absl::StrFormat("%s%s", DTypeName(m.dtype), ShapeToString(m.shape));
}

using Metas = std::vector<const TensorMeta*>;

// `got`'s metas must equal `want`'s, position by position.
absl::Status SameMetas(const Node& n, const char* what, const Metas& got, absl::Span<const TensorMeta* const> want) {
  const char* op = OpName(n.op);
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

Metas ParamMetas(const Graph& g) {
  Metas m;
  for (NodeId p : g.params()) m.push_back(&g.node(p).meta);
  return m;
}

Metas OutputMetas(const Graph& g) {
  Metas m;
  for (NodeId o : g.outputs()) m.push_back(&g.node(o).meta);
  return m;
}

absl::Status CheckLoop(const Node& n, absl::Span<const TensorMeta* const> in) {
  const int64_t k = LoopCarried(n), m = LoopInvariants(n);
  const int64_t inputs = static_cast<int64_t>(in.size());
  const bool grad = n.op == Op::kWhileGrad;
  if (k < 0 || m < 0 || inputs != 1 + (grad ? 2 : 1) * (k + m)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %d inputs do not fit %d carried values", OpName(n.op), inputs, k));
  }
  const auto loop_in = in.subspan(1, static_cast<size_t>(k + m));
  const auto& graphs = n.region->graphs;
  PIJIT_RETURN_IF_ERROR(SameMetas(n, "the body's parameter list", ParamMetas(graphs[0]), loop_in));
  Metas want(loop_in.begin(), loop_in.begin() + k);
  want.push_back(&kPredicateMeta);
  Metas outs = OutputMetas(graphs[0]);
  if (outs.size() < want.size()) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: the body gives %d values, expected at least %d",
                                                      OpName(n.op), outs.size(), want.size()));
  }
  const Metas residuals(outs.begin() + static_cast<std::ptrdiff_t>(want.size()), outs.end());
  outs.resize(want.size());
  PIJIT_RETURN_IF_ERROR(SameMetas(n, "the body's result list", outs, want));
  if (!grad) return absl::OkStatus();
  // body_bwd: (c, v, r, dc', acc) -> (dc, acc + dv).
  Metas bwd_in(loop_in.begin(), loop_in.end());
  bwd_in.insert(bwd_in.end(), residuals.begin(), residuals.end());
  bwd_in.insert(bwd_in.end(), in.begin() + 1 + k + m, in.end());
  PIJIT_RETURN_IF_ERROR(SameMetas(n, "the backward body's parameter list", ParamMetas(graphs[1]), bwd_in));
  return SameMetas(n, "the backward body's result list", OutputMetas(graphs[1]), loop_in);
}

absl::Status CheckCond(const Node& n, absl::Span<const TensorMeta* const> in) {
  const auto& graphs = n.region->graphs;
  const auto operands = in.subspan(1);
  for (const Graph& branch : graphs) {
    PIJIT_RETURN_IF_ERROR(SameMetas(n, "a branch's parameter list", ParamMetas(branch), operands));
  }
  const Metas results = OutputMetas(graphs[0]);
  if (n.op == Op::kCond) return SameMetas(n, "the false branch's result list", OutputMetas(graphs[1]), results);
  // cond_grad: (x, s) -> dx.
  if (results.size() > operands.size()) {
    return absl::InvalidArgumentError("cond_grad: more gradients than operands");
  }
  for (const Graph& branch : graphs) {
    PIJIT_RETURN_IF_ERROR(SameMetas(n, "a backward branch's result list", OutputMetas(branch),
                                    operands.subspan(0, results.size())));
  }
  return absl::OkStatus();
}

}  // namespace

int64_t LoopInvariants(const Node& n) {
  // while_loop: (stay, k carried, m invariants); while_grad: also k seeds and m zeros.
  const int64_t inputs = static_cast<int64_t>(n.inputs.size());
  return n.op == Op::kWhileGrad ? (inputs - 1 - 2 * n.attr) / 2 : inputs - 1 - n.attr;
}

int64_t RegionResults(const Node& n) {
  switch (n.op) {
    case Op::kWhileLoop: return LoopCarried(n);
    case Op::kWhileGrad: return LoopCarried(n) + LoopInvariants(n);
    case Op::kCond:
    case Op::kCondGrad: return n.region ? static_cast<int64_t>(n.region->graphs[0].outputs().size()) : 0;
    default: return 0;
  }
}

absl::StatusOr<TensorMeta> RegionResultMeta(const Graph& g, NodeId id, int64_t index) {
  const Node& n = g.node(id);
  if (!HasTrait(n.op, kRegion) || index < 0 || index >= RegionResults(n)) {
    return absl::InvalidArgumentError(absl::StrFormat("%%%d (%s) has no result %d", id, OpName(n.op), index));
  }
  if (n.op == Op::kCond) {
    const Graph& branch = n.region->graphs[0];
    return branch.node(branch.outputs()[static_cast<size_t>(index)]).meta;
  }
  // The loops' results and the gradients have the metas of the inputs they stand for.
  return g.node(n.inputs[static_cast<size_t>(1 + index)]).meta;
}

absl::StatusOr<TensorMeta> InferRegion(const Node& n, absl::Span<const TensorMeta* const> in) {
  const char* op = OpName(n.op);
  if (n.op == Op::kResult) {
    if (!n.dtype) return absl::InvalidArgumentError("result: no dtype");
    if (!(*in[0] == kPredicateMeta)) return absl::InvalidArgumentError("result: its input is not a region node");
    return TensorMeta{*n.dtype, n.ints};
  }
  if (!n.region || n.region->graphs.size() != RegionGraphs(n.op)) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: expects %d graphs", op, RegionGraphs(n.op)));
  }
  if (in.empty() || !(*in[0] == kPredicateMeta)) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: the condition is not a bool[]", op));
  }
  const bool loop = n.op == Op::kWhileLoop || n.op == Op::kWhileGrad;
  PIJIT_RETURN_IF_ERROR(loop ? CheckLoop(n, in) : CheckCond(n, in));
  return kPredicateMeta;
}

absl::Status VerifyResult(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  absl::StatusOr<TensorMeta> want = RegionResultMeta(g, n.inputs[0], n.attr);
  if (!want.ok()) return absl::InternalError(absl::StrFormat("verify: %%%d: %s", id, want.status().message()));
  if (!(*want == n.meta)) {
    return absl::InternalError(absl::StrFormat("verify: %%%d is %s but result %d of %%%d is %s", id,
                                               MetaString(n.meta), n.attr, n.inputs[0], MetaString(*want)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<NodeId>> AppendRegion(Graph& g, Op op, absl::Span<const NodeId> inputs,
                                                 std::vector<Graph> graphs, int64_t attr) {
  Node node;
  node.op = op;
  node.inputs.assign(inputs.begin(), inputs.end());
  node.attr = attr;
  auto region = std::make_shared<Region>();
  region->graphs = std::move(graphs);
  node.region = std::move(region);
  PIJIT_ASSIGN_OR_RETURN(const NodeId id, g.AddNode(std::move(node)));
  std::vector<NodeId> results;
  for (int64_t i = 0; i < RegionResults(g.node(id)); ++i) {
    PIJIT_ASSIGN_OR_RETURN(const TensorMeta meta, RegionResultMeta(g, id, i));
    Attrs a;
    a.attr = i;
    a.ints = meta.shape;
    a.dtype = meta.dtype;
    PIJIT_ASSIGN_OR_RETURN(NodeId r, g.AddOp(Op::kResult, {id}, std::move(a)));
    results.push_back(r);
  }
  return results;
}

absl::StatusOr<Graph> BodyVjp(const Graph& body, int64_t seeded) {
  Graph vjp = body;
  const std::vector<NodeId> params = vjp.params();
  const std::vector<NodeId> outs(vjp.outputs().begin(), vjp.outputs().begin() + seeded);
  std::vector<NodeId> seeds;
  for (NodeId o : outs) seeds.push_back(vjp.AddParam(vjp.node(o).meta));
  PIJIT_ASSIGN_OR_RETURN(std::vector<NodeId> grads, AppendBackward(vjp, outs, seeds, params));
  for (size_t j = 0; j < params.size(); ++j) {
    if (grads[j] != kNoGradient) continue;
    PIJIT_ASSIGN_OR_RETURN(grads[j], AppendZeros(vjp, vjp.node(params[j]).meta));
  }
  vjp.SetOutputs(std::move(grads));
  return vjp;
}

absl::StatusOr<LoopVjpBodies> LoopBodyVjp(const Graph& body, int64_t carried) {
  const size_t k = static_cast<size_t>(carried);
  // The body's own outputs past the stay (residuals of an earlier gradient) are not seeded.
  PIJIT_ASSIGN_OR_RETURN(Graph vjp, BodyVjp(body, carried));
  // vjp is the body's nodes (same ids), then the seeds and the backward nodes.
  const size_t forward_end = body.nodes().size();
  const std::vector<NodeId>& params = body.params();
  const size_t cv = params.size();
  auto forward_value = [&](NodeId id) {
    return static_cast<size_t>(id) < forward_end && vjp.node(id).op != Op::kParam;
  };
  // Residuals: the forward values the backward reads (or gives as a gradient).
  std::vector<NodeId> residuals;
  absl::flat_hash_set<NodeId> noted;
  auto note = [&](NodeId id) {
    if (forward_value(id) && noted.insert(id).second) residuals.push_back(id);
  };
  for (size_t id = forward_end; id < vjp.nodes().size(); ++id)
    for (NodeId i : vjp.node(static_cast<NodeId>(id)).inputs) note(i);
  for (NodeId o : vjp.outputs()) note(o);
  LoopVjpBodies out;
  out.body = body;
  std::vector<NodeId> outs(body.outputs().begin(), body.outputs().begin() + static_cast<std::ptrdiff_t>(k + 1));
  outs.insert(outs.end(), residuals.begin(), residuals.end());
  out.body.SetOutputs(std::move(outs));
  // body_bwd: (c, v, r, dc', acc) -> (dc, acc + dv), the backward nodes alone.
  Graph& bwd = out.body_bwd;
  absl::flat_hash_map<NodeId, NodeId> inside;
  for (NodeId p : params) inside[p] = bwd.AddParam(vjp.node(p).meta);
  for (NodeId r : residuals) inside[r] = bwd.AddParam(vjp.node(r).meta);
  for (size_t id = forward_end; id < vjp.nodes().size(); ++id) {
    const Node& n = vjp.node(static_cast<NodeId>(id));
    if (n.op == Op::kParam) {  // a seed
      inside[static_cast<NodeId>(id)] = bwd.AddParam(n.meta);
      continue;
    }
    Node copy = n;
    for (NodeId& i : copy.inputs) i = inside.at(i);
    PIJIT_ASSIGN_OR_RETURN(inside[static_cast<NodeId>(id)], bwd.AddNode(std::move(copy)));
  }
  std::vector<NodeId> results;
  for (NodeId o : vjp.outputs()) results.push_back(inside.at(o));
  // The invariants' gradients are summed over the trips: acc + dv.
  for (size_t j = k; j < cv; ++j) {
    const TensorMeta& m = vjp.node(params[j]).meta;
    const NodeId acc = bwd.AddParam(m);
    if (CarriesGradient(m.dtype)) {
      PIJIT_ASSIGN_OR_RETURN(results[j], bwd.AddOp(Op::kAdd, {acc, results[j]}));
    } else {
      results[j] = acc;
    }
  }
  bwd.SetOutputs(std::move(results));
  return out;
}

int64_t LoopResiduals(const Node& n) {
  if (!n.region || n.region->graphs.empty()) return 0;
  return static_cast<int64_t>(n.region->graphs[0].outputs().size()) - LoopCarried(n) - 1;
}

}  // namespace pijit::graph
