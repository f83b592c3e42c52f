#include "graph/graph.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kernels/errors.h"
#include "kernels/number_text.h"

namespace pijit::graph {
namespace {
struct OpInfo {
  const char* name;
  int arity;
  uint8_t traits;
};
constexpr OpInfo kOpInfo[] = {
#define PIJIT_GRAPH_OP(e, name, arity, traits) {name, arity, traits},
#include "graph/ops.def"
#undef PIJIT_GRAPH_OP
};

std::string MetaText(const TensorMeta& m) {
  return absl::StrCat(DTypeShortName(m.dtype), "[", absl::StrJoin(m.shape, ","), "]");
}

// One literal for a scalar or a splat, a list up to kMaxPrintedConstantElements, else elided.
void AppendConstantValue(std::string* out, const Tensor& value) {
  Tensor v = value.Contiguous();
  const int64_t n = v.numel();
  const size_t item = v.itemsize();
  const char* p = static_cast<const char*>(v.raw_data());
  bool splat = n >= 1;
  for (int64_t i = 1; i < n && splat; ++i) splat = std::memcmp(p, p + i * item, item) == 0;
  if (splat) {
    AppendElement(out, v.dtype(), p);
  } else if (n <= kMaxPrintedConstantElements) {
    out->append("[");
    for (int64_t i = 0; i < n; ++i) {
      if (i) out->append(", ");
      AppendElement(out, v.dtype(), p + i * item);
    }
    out->append("]");
  } else {
    absl::StrAppend(out, "<", n, " elements>");
  }
}
}  // namespace

const char* OpName(Op op) { return kOpInfo[static_cast<int>(op)].name; }
int OpArity(Op op) { return kOpInfo[static_cast<int>(op)].arity; }
bool HasTrait(Op op, Trait t) { return (kOpInfo[static_cast<int>(op)].traits & t) != 0; }

NodeId Graph::AddParam(const TensorMeta& meta) {
  Node n;
  n.op = Op::kParam;
  n.meta = meta;
  n.param_index = static_cast<int>(params_.size());
  nodes_.push_back(std::move(n));
  NodeId id = static_cast<NodeId>(nodes_.size() - 1);
  params_.push_back(id);
  return id;
}

NodeId Graph::AddConstant(Tensor value) {
  Node n;
  n.op = Op::kConstant;
  n.meta = MetaOf(value);
  n.value = std::move(value);
  nodes_.push_back(std::move(n));
  return static_cast<NodeId>(nodes_.size() - 1);
}

absl::StatusOr<NodeId> Graph::AddNode(Node n) {
  for (NodeId i : n.inputs) {
    if (i < 0 || static_cast<size_t>(i) >= nodes_.size()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s uses %%%d, which does not exist yet", OpName(n.op), i));
    }
  }
  if (n.op == Op::kParam) {
    n.param_index = static_cast<int>(params_.size());
    params_.push_back(static_cast<NodeId>(nodes_.size()));
  } else if (n.op == Op::kConstant) {
    n.meta = MetaOf(n.value);
  } else {
    absl::InlinedVector<const TensorMeta*, 2> metas;
    for (NodeId i : n.inputs) metas.push_back(&nodes_[i].meta);
    PIJIT_ASSIGN_OR_RETURN(n.meta, InferNode(n, metas));
  }
  nodes_.push_back(std::move(n));
  return static_cast<NodeId>(nodes_.size() - 1);
}

void Graph::ReplaceAllUsesWith(NodeId from, NodeId to) {
  for (size_t id = from + 1; id < nodes_.size(); ++id)
    for (NodeId& i : nodes_[id].inputs)
      if (i == from) i = to;
  for (NodeId& o : outputs_)
    if (o == from) o = to;
}

void Graph::ReplaceWithConstant(NodeId id, Tensor value) {
  Node& n = nodes_[id];
  n.op = Op::kConstant;
  n.inputs.clear();
  n.ints.clear();
  n.keepdims = false;
  n.fused.reset();
  n.meta = MetaOf(value);
  n.value = std::move(value);
}

std::vector<bool> Graph::LiveNodes() const {
  std::vector<bool> live(nodes_.size(), false);
  for (NodeId o : outputs_) live[o] = true;
  for (NodeId p : params_) live[p] = true;
  for (size_t id = nodes_.size(); id-- > 0;) {
    if (!live[id]) continue;
    for (NodeId i : nodes_[id].inputs) live[i] = true;
  }
  return live;
}

int Graph::Compact(const std::vector<bool>& keep) {
  std::vector<NodeId> new_id(nodes_.size(), -1);
  std::vector<Node> kept;
  kept.reserve(nodes_.size());
  params_.clear();
  for (size_t id = 0; id < nodes_.size(); ++id) {
    Node& n = nodes_[id];
    if (n.op != Op::kParam && !keep[id]) continue;
    for (NodeId& i : n.inputs) i = new_id[i];
    new_id[id] = static_cast<NodeId>(kept.size());
    if (n.op == Op::kParam) params_.push_back(new_id[id]);
    kept.push_back(std::move(n));
  }
  for (NodeId& o : outputs_) o = new_id[o];
  const int dropped = static_cast<int>(nodes_.size() - kept.size());
  nodes_ = std::move(kept);
  return dropped;
}

absl::StatusOr<NodeId> Graph::AddOp(Op op, absl::Span<const NodeId> inputs, Shape ints,
                                    bool keepdims) {
  Node n;
  n.op = op;
  n.inputs.assign(inputs.begin(), inputs.end());
  n.ints = std::move(ints);
  n.keepdims = keepdims;
  absl::InlinedVector<const TensorMeta*, 2> metas;
  for (NodeId i : inputs) metas.push_back(&nodes_[i].meta);
  PIJIT_ASSIGN_OR_RETURN(n.meta, InferNode(n, metas));
  nodes_.push_back(std::move(n));
  return static_cast<NodeId>(nodes_.size() - 1);
}

std::string Graph::ToText() const {
  std::string out = "graph(";
  for (size_t i = 0; i < params_.size(); ++i) {
    absl::StrAppend(&out, i ? ", " : "", "%", params_[i], ": ", MetaText(nodes_[params_[i]].meta));
  }
  absl::StrAppend(&out, ") {\n");
  for (size_t id = 0; id < nodes_.size(); ++id) {
    const Node& n = nodes_[id];
    if (n.op == Op::kParam) continue;
    absl::StrAppend(&out, "  %", id, ": ", MetaText(n.meta), " = ", OpName(n.op), "(");
    absl::StrAppend(&out, absl::StrJoin(n.inputs, ", ", [](std::string* s, NodeId i) {
                      absl::StrAppend(s, "%", i);
                    }));
    if (n.op == Op::kConstant) AppendConstantValue(&out, n.value);
    if (n.op == Op::kSum || n.op == Op::kMean) {
      absl::StrAppend(&out, ", axes=[", absl::StrJoin(n.ints, ","), "], keepdims=",
                      n.keepdims ? "true" : "false");
    } else if (n.op == Op::kReshape) {
      absl::StrAppend(&out, ", shape=[", absl::StrJoin(n.ints, ","), "]");
    } else if (n.op == Op::kTranspose) {
      absl::StrAppend(&out, ", perm=[", absl::StrJoin(n.ints, ","), "]");
    } else if (n.op == Op::kFused) {
      absl::StrAppend(&out, ", program=\"", n.fused ? n.fused->program().ToText() : "?", "\"");
    }
    absl::StrAppend(&out, ")\n");
  }
  absl::StrAppend(&out, "  return (", absl::StrJoin(outputs_, ", ", [](std::string* s, NodeId i) {
                    absl::StrAppend(s, "%", i);
                  }), ")\n}\n");
  return out;
}

absl::Status Graph::Verify() const {
  for (size_t id = 0; id < nodes_.size(); ++id) {
    const Node& n = nodes_[id];
    int arity = OpArity(n.op);
    if (arity >= 0 && static_cast<int>(n.inputs.size()) != arity) {
      return absl::InternalError(absl::StrFormat("verify: %%%d (%s) has %d inputs, expected %d",
                                                 id, OpName(n.op), n.inputs.size(), arity));
    }
    absl::InlinedVector<const TensorMeta*, 2> metas;
    for (NodeId i : n.inputs) {
      if (i < 0 || static_cast<size_t>(i) >= id) {
        return absl::InternalError(
            absl::StrFormat("verify: %%%d uses %%%d, which does not come before it", id, i));
      }
      metas.push_back(&nodes_[i].meta);
    }
    if (n.op == Op::kParam) {
      if (n.param_index < 0 || static_cast<size_t>(n.param_index) >= params_.size() ||
          params_[n.param_index] != static_cast<NodeId>(id)) {
        return absl::InternalError(absl::StrFormat(
            "verify: %%%d is parameter %d, which the parameter list does not map to it", id,
            n.param_index));
      }
      continue;
    }
    if (n.op == Op::kConstant) {
      if (!n.value.defined() || !(MetaOf(n.value) == n.meta)) {
        return absl::InternalError(
            absl::StrFormat("verify: constant %%%d has no value or a value of another meta", id));
      }
      continue;
    }
    if (n.op == Op::kFused && !n.fused) {
      return absl::InternalError(absl::StrFormat("verify: fused %%%d has no kernel", id));
    }
    auto meta = InferNode(n, metas);
    if (!meta.ok()) {
      return absl::InternalError(absl::StrFormat("verify: %%%d (%s) fails inference: %s", id,
                                                 OpName(n.op), meta.status().message()));
    }
    if (!(*meta == n.meta)) {
      return absl::InternalError(absl::StrFormat(
          "verify: %%%d (%s) is declared %s but inference gives %s", id, OpName(n.op),
          MetaText(n.meta), MetaText(*meta)));
    }
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    NodeId p = params_[i];
    if (p < 0 || static_cast<size_t>(p) >= nodes_.size() || nodes_[p].op != Op::kParam ||
        (i > 0 && p <= params_[i - 1])) {
      return absl::InternalError(
          absl::StrFormat("verify: parameter %d is %%%d, not a param node in id order", i, p));
    }
  }
  for (NodeId o : outputs_) {
    if (o < 0 || static_cast<size_t>(o) >= nodes_.size())
      return absl::InternalError(absl::StrFormat("verify: output %%%d does not exist", o));
  }
  return absl::OkStatus();
}

}  // namespace pijit::graph
