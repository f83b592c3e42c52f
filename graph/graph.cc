#include "graph/graph.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/control_flow.h"
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

// A constant's or parameter tensor's values: "2", "[0,0.5]" or "<12 elements>".
std::string ValueText(const Tensor& t) {
  if (!t.defined()) return "none";
  const int64_t n = t.numel();
  if (n > 4) return absl::StrCat("<", n, " elements>");
  std::vector<std::string> items;
  Tensor c = t.Contiguous();
  DispatchDType(c.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, bool>) items.push_back(c.data<T>()[i] ? "true" : "false");
      else items.push_back(absl::StrCat(static_cast<ComputeType<T>>(c.data<T>()[i])));
    }
  });
  if (t.ndim() == 0) return items[0];
  return absl::StrCat("[", absl::StrJoin(items, ","), "]");
}

std::string IndexText(absl::Span<const int64_t> enc) {
  std::vector<std::string> items;
  auto bound = [](int64_t v) { return v == IndexItem::kNone ? std::string() : absl::StrCat(v); };
  for (size_t i = 0; i + 3 < enc.size(); i += 4) {
    switch (enc[i]) {
      case IndexItem::kInt: items.push_back(absl::StrCat(enc[i + 1])); break;
      case IndexItem::kSlice:
        items.push_back(absl::StrCat(bound(enc[i + 1]), ":", bound(enc[i + 2]), ":", enc[i + 3]));
        break;
      case IndexItem::kNewAxis: items.push_back("None"); break;
      case IndexItem::kArray: items.push_back(absl::StrCat("array", enc[i + 1])); break;
      default: items.push_back("..."); break;
    }
  }
  return absl::StrCat("[", absl::StrJoin(items, ","), "]");
}

// The attributes an op uses (graph/ops.def), as "name=value" texts.
std::vector<std::string> AttrTexts(const Node& n) {
  std::vector<std::string> a;
  auto ints = [&](const char* name) {
    a.push_back(absl::StrCat(name, "=[", absl::StrJoin(n.ints, ","), "]"));
  };
  switch (n.op) {
    case Op::kSum: case Op::kMean: case Op::kProd: case Op::kMax: case Op::kMin:
    case Op::kAll: case Op::kAny: case Op::kVar: case Op::kStd: case Op::kArgMax:
    case Op::kArgMin:
      ints("axes");
      a.push_back(absl::StrCat("keepdims=", n.keepdims ? "true" : "false"));
      if (n.op == Op::kVar || n.op == Op::kStd) a.push_back(absl::StrCat("ddof=", n.attr));
      break;
    case Op::kReshape: case Op::kBroadcastTo: ints("shape"); break;
    case Op::kTranspose: ints("perm"); break;
    case Op::kSqueeze: ints("axes"); break;
    case Op::kClip: ints("bounds"); break;
    case Op::kFlatten: ints("dims"); break;
    case Op::kIndex: case Op::kAdvIndex:
      a.push_back(absl::StrCat("index=", IndexText(n.ints)));
      break;
    case Op::kIndexGrad: case Op::kAdvIndexGrad: {
      absl::Span<const int64_t> all(n.ints);
      const size_t rank = std::min<size_t>(std::max<int64_t>(n.attr, 0), all.size());
      a.push_back(absl::StrCat("shape=[", absl::StrJoin(all.subspan(0, rank), ","), "]"));
      a.push_back(absl::StrCat("index=", IndexText(all.subspan(rank))));
      break;
    }
    case Op::kUnsqueeze: case Op::kSoftmax: case Op::kLogSoftmax: case Op::kConcat:
    case Op::kStack:
      a.push_back(absl::StrCat("axis=", n.attr));
      break;
    case Op::kFull: case Op::kUniform: case Op::kNormal:
      ints("shape");
      a.push_back(absl::StrCat("value=", ValueText(n.value)));
      if (n.op != Op::kFull) a.push_back(absl::StrCat("seed=", n.attr));
      break;
    case Op::kFullLike: a.push_back(absl::StrCat("value=", ValueText(n.value))); break;
    case Op::kConv2D: case Op::kMaxPool2D: case Op::kAvgPool2D: case Op::kMaxPool2DGrad:
    case Op::kAvgPool2DGrad:
      ints("window");
      if (n.op == Op::kConv2D && n.attr == kConvReluEpilogue) a.push_back("epilogue=relu");
      if (n.op == Op::kMaxPool2DGrad && n.attr == kPoolGradPositiveOnly) {
        a.push_back("mask=positive");
      }
      break;
    case Op::kConv2DGradInput: case Op::kConv2DGradWeight:
      ints("window_shape");
      if (n.attr != 0) a.push_back(absl::StrCat("block=", n.attr));
      break;
    case Op::kAllReduce: case Op::kReduceScatter:
      a.push_back(absl::StrCat("op=", kAllReduceOpNames[CollectiveReduction(n)]));
      a.push_back(absl::StrCat("group=", CollectiveGroup(n)));
      break;
    case Op::kAllGather: a.push_back(absl::StrCat("group=", n.attr)); break;
    case Op::kToBlocked: a.push_back(absl::StrCat("block=", n.attr)); break;
    case Op::kBroadcast:
      a.push_back(absl::StrCat("root=", BroadcastRoot(n)));
      a.push_back(absl::StrCat("group=", CollectiveGroup(n)));
      break;
    case Op::kConv2DTranspose: ints("window_outpad"); break;
    case Op::kWhileLoop: case Op::kWhileGrad: a.push_back(absl::StrCat("carried=", n.attr)); break;
    case Op::kResult: return {absl::StrCat("index=", n.attr)};  // its meta is its declared one
    case Op::kFusedMatMul: case Op::kFusedConv2D: {
      absl::Span<const int64_t> post(n.ints);
      if (n.op == Op::kFusedConv2D) {
        const size_t w = std::min(post.size(), kWindowInts);
        a.push_back(absl::StrCat("window=[", absl::StrJoin(post.subspan(0, w), ","), "]"));
        post.remove_prefix(w);
      }
      std::vector<std::string> names;
      for (int64_t p : post) {
        names.push_back(p >= 0 && p < kNumMatMulPosts ? MatMulPostName(static_cast<MatMulPost>(p))
                                                      : absl::StrCat(p));
      }
      a.push_back(absl::StrCat("post=[", absl::StrJoin(names, ","), "]"));
      if (n.op == Op::kFusedConv2D && n.attr != 0) a.push_back(absl::StrCat("block=", n.attr));
      break;
    }
    case Op::kLayerNorm: case Op::kLayerNormGrad:
      ints("params");
      a.push_back(absl::StrCat("value=", ValueText(n.value)));
      break;
    case Op::kGroupNorm:
      a.push_back(absl::StrCat("groups=", n.attr));
      a.push_back(absl::StrCat("value=", ValueText(n.value)));
      break;
    case Op::kOneHot: ints("params"); a.push_back(absl::StrCat("value=", ValueText(n.value))); break;
    case Op::kBatchNorm: case Op::kBatchNormTrain: case Op::kBatchNormGradSums:
      a.push_back(absl::StrCat("value=", ValueText(n.value)));
      if (n.attr != 0) a.push_back(absl::StrCat("block=", n.attr));
      if (n.op == Op::kBatchNormTrain && BatchNormAppliesRelu(n)) a.push_back("epilogue=relu");
      break;
    case Op::kBatchNormGradInput:
      if (n.attr != 0) a.push_back(absl::StrCat("block=", n.attr));
      break;
    case Op::kArange: case Op::kLinspace: case Op::kEye:
      ints("sizes");
      if (n.op != Op::kEye) a.push_back(absl::StrCat("value=", ValueText(n.value)));
      break;
    default: break;
  }
  if (n.dtype) a.push_back(absl::StrCat("dtype=", DTypeShortName(*n.dtype)));
  return a;
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
  n.program.reset();
  n.region.reset();
  n.meta = MetaOf(value);
  n.value = std::move(value);
}

std::vector<bool> Graph::LiveNodes() const {
  std::vector<bool> live(nodes_.size(), false);
  for (NodeId o : outputs_) live[o] = true;
  for (NodeId p : params_) live[p] = true;
  // A stateful node (a random draw) advances its generator even when its value is unused.
  for (size_t id = 0; id < nodes_.size(); ++id)
    if (HasTrait(nodes_[id].op, kStateful)) live[id] = true;
  for (size_t id = nodes_.size(); id-- > 0;) {
    if (!live[id]) continue;
    for (NodeId i : nodes_[id].inputs) live[i] = true;
  }
  return live;
}

void Graph::TruncateTo(size_t n) {
  if (n >= nodes_.size()) return;
  nodes_.resize(n);
  while (!params_.empty() && static_cast<size_t>(params_.back()) >= n) params_.pop_back();
  std::vector<NodeId> outputs;
  for (NodeId o : outputs_)
    if (static_cast<size_t>(o) < n) outputs.push_back(o);
  outputs_ = std::move(outputs);
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

absl::Status Graph::Reorder(const std::vector<NodeId>& order) {
  if (order.size() != nodes_.size()) return absl::InternalError("Reorder: not a permutation of the nodes");
  std::vector<NodeId> new_id(nodes_.size(), -1);
  for (size_t pos = 0; pos < order.size(); ++pos) {
    const NodeId id = order[pos];
    if (id < 0 || static_cast<size_t>(id) >= nodes_.size() || new_id[id] >= 0) {
      return absl::InternalError("Reorder: not a permutation of the nodes");
    }
    for (NodeId i : nodes_[id].inputs) {
      if (new_id[i] < 0) return absl::InternalError(absl::StrCat("Reorder: %", id, " before its input %", i));
    }
    new_id[id] = static_cast<NodeId>(pos);
  }
  std::vector<Node> moved;
  moved.reserve(nodes_.size());
  for (NodeId id : order) {
    Node& n = nodes_[id];
    for (NodeId& i : n.inputs) i = new_id[i];
    moved.push_back(std::move(n));
  }
  for (NodeId& p : params_) p = new_id[p];
  for (NodeId& o : outputs_) o = new_id[o];
  nodes_ = std::move(moved);
  return absl::OkStatus();
}

absl::StatusOr<NodeId> Graph::AddOp(Op op, absl::Span<const NodeId> inputs, Shape ints,
                                    bool keepdims) {
  Attrs a;
  a.ints = std::move(ints);
  a.keepdims = keepdims;
  return AddOp(op, inputs, std::move(a));
}

absl::StatusOr<NodeId> Graph::AddOp(Op op, absl::Span<const NodeId> inputs, Attrs attrs) {
  if (OpArity(op) >= 0 && static_cast<int>(inputs.size()) != OpArity(op)) {
    return absl::InternalError(absl::StrFormat("%s takes %d inputs, got %d", OpName(op),
                                               OpArity(op), inputs.size()));
  }
  Node n;
  static_cast<Attrs&>(n) = std::move(attrs);
  n.op = op;
  n.inputs.assign(inputs.begin(), inputs.end());
  absl::InlinedVector<const TensorMeta*, 2> metas;
  for (NodeId i : inputs) metas.push_back(&nodes_[i].meta);
  PIJIT_ASSIGN_OR_RETURN(n.meta, InferNode(n, metas));
  nodes_.push_back(std::move(n));
  return static_cast<NodeId>(nodes_.size() - 1);
}

namespace {

// The text of `g`, each line after `indent` (a loop's body prints inside its node).
void AppendGraphText(const Graph& g, const std::string& indent, std::string* out) {
  const auto& nodes = g.nodes();
  const auto& params = g.params();
  absl::StrAppend(out, "graph(");
  for (size_t i = 0; i < params.size(); ++i) {
    absl::StrAppend(out, i ? ", " : "", "%", params[i], ": ", MetaText(nodes[params[i]].meta));
  }
  absl::StrAppend(out, ") {\n");
  for (size_t id = 0; id < nodes.size(); ++id) {
    const Node& n = nodes[id];
    if (n.op == Op::kParam) continue;
    absl::StrAppend(out, indent, "  %", id, ": ", MetaText(n.meta), " = ", OpName(n.op), "(");
    absl::StrAppend(out, absl::StrJoin(n.inputs, ", ", [](std::string* s, NodeId i) {
                      absl::StrAppend(s, "%", i);
                    }));
    if (n.op == Op::kConstant) {
      AppendConstantValue(out, n.value);
    } else if (n.op == Op::kFused || n.op == Op::kFusedReduce) {
      absl::StrAppend(out, ", program=\"", n.program ? n.program->ToText() : "?", "\"");
      if (n.op == Op::kFusedReduce) {
        const bool known = n.attr >= 0 && n.attr <= static_cast<int64_t>(ReduceOp::kStd);
        absl::StrAppend(out, ", reduce=",
                        known ? ReduceOpName(static_cast<ReduceOp>(n.attr)) : "?", ", axes=[",
                        absl::StrJoin(n.ints, ","), "], keepdims=",
                        n.keepdims ? "true" : "false");
      }
    } else {
      std::vector<std::string> attrs = AttrTexts(n);
      if (!n.inputs.empty() && !attrs.empty()) absl::StrAppend(out, ", ");
      absl::StrAppend(out, absl::StrJoin(attrs, ", "));
    }
    absl::StrAppend(out, ")");
    if (n.region) {
      const std::string inner = indent + "    ";
      absl::StrAppend(out, " {\n", inner);
      for (size_t i = 0; i < n.region->graphs.size(); ++i) {
        if (i) absl::StrAppend(out, inner);
        AppendGraphText(n.region->graphs[i], inner, out);
      }
      absl::StrAppend(out, indent, "  }");
    }
    absl::StrAppend(out, "\n");
  }
  absl::StrAppend(out, indent, "  return (", absl::StrJoin(g.outputs(), ", ", [](std::string* s, NodeId i) {
                    absl::StrAppend(s, "%", i);
                  }), ")\n", indent, "}\n");
}

}  // namespace

std::string Graph::ToText() const {
  std::string out;
  AppendGraphText(*this, "", &out);
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
    if ((n.op == Op::kFused || n.op == Op::kFusedReduce) && !n.program) {
      return absl::InternalError(absl::StrFormat("verify: fused %%%d has no program", id));
    }
    if (n.region) {
      for (const Graph& sub : n.region->graphs) {
        absl::Status inner = sub.Verify();
        if (!inner.ok()) {
          return absl::InternalError(absl::StrFormat("verify: in the body of %%%d: %s", id, inner.message()));
        }
      }
    }
    if (n.op == Op::kResult) PIJIT_RETURN_IF_ERROR(VerifyResult(*this, static_cast<NodeId>(id)));
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
