#include "graph/graph.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kernels/errors.h"

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
    if (n.op == Op::kConstant) {
      if (n.value.numel() == 1) {
        DispatchDType(n.value.dtype(), [&](auto tag) {
          using T = decltype(tag);
          if constexpr (std::is_same_v<T, bool>) absl::StrAppend(&out, *n.value.data<T>() ? "true" : "false");
          else absl::StrAppend(&out, *n.value.data<T>());
        });
      } else {
        absl::StrAppend(&out, "<", n.value.numel(), " elements>");
      }
    }
    if (n.op == Op::kSum || n.op == Op::kMean) {
      absl::StrAppend(&out, ", axes=[", absl::StrJoin(n.ints, ","), "], keepdims=",
                      n.keepdims ? "true" : "false");
    } else if (n.op == Op::kReshape) {
      absl::StrAppend(&out, ", shape=[", absl::StrJoin(n.ints, ","), "]");
    } else if (n.op == Op::kTranspose) {
      absl::StrAppend(&out, ", perm=[", absl::StrJoin(n.ints, ","), "]");
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
    if (HasTrait(n.op, kSource)) continue;
    auto meta = InferNode(n, metas);
    if (!meta.ok() || !(*meta == n.meta)) {
      return absl::InternalError(absl::StrFormat("verify: %%%d (%s) has a meta that inference "
                                                 "does not reproduce", id, OpName(n.op)));
    }
  }
  for (NodeId o : outputs_) {
    if (o < 0 || static_cast<size_t>(o) >= nodes_.size())
      return absl::InternalError(absl::StrFormat("verify: output %%%d does not exist", o));
  }
  return absl::OkStatus();
}

}  // namespace pijit::graph
