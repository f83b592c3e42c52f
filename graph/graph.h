// The tensor IR: a graph of nodes in topological order (a node's inputs come before it).
//
//   graph(%0: f32[2,3], %1: f32[3,4]) {
//     %2: f32[2,4] = matmul(%0, %1)
//     return (%2)
//   }
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "kernels/ops.h"

namespace pijit::graph {

enum class Op : uint8_t {
#define PIJIT_GRAPH_OP(e, name, arity, traits) e,
#include "graph/ops.def"
#undef PIJIT_GRAPH_OP
};

enum Trait : uint8_t {
  kNone = 0, kSource = 1, kElementwise = 2, kReduction = 4, kShape = 8, kStateful = 16
};

const char* OpName(Op op);
int OpArity(Op op);
bool HasTrait(Op op, Trait t);
inline bool IsElementwise(Op op) { return HasTrait(op, kElementwise); }

using NodeId = int32_t;

// An op's attributes; graph/ops.def says which each op uses and what they mean.
struct Attrs {
  Shape ints;                  // axes, shape, perm, encoded index, ...
  bool keepdims = false;       // reductions
  int64_t attr = 0;            // one int: axis, ddof, seed
  std::optional<DType> dtype;  // output dtype of creation ops
  Tensor value;                // constant, fill value, creation parameters
};

struct Node : Attrs {
  Op op;
  absl::InlinedVector<NodeId, 2> inputs;
  TensorMeta meta;
  int param_index = -1;  // param
};

class Graph {
 public:
  NodeId AddParam(const TensorMeta& meta);
  NodeId AddConstant(Tensor value);
  // Adds an op node; infers its meta and reports bad input as the eager op would.
  absl::StatusOr<NodeId> AddOp(Op op, absl::Span<const NodeId> inputs, Attrs attrs);
  absl::StatusOr<NodeId> AddOp(Op op, absl::Span<const NodeId> inputs, Shape ints = {},
                               bool keepdims = false);
  void SetOutputs(std::vector<NodeId> outputs) { outputs_ = std::move(outputs); }

  const Node& node(NodeId id) const { return nodes_[id]; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<NodeId>& params() const { return params_; }
  const std::vector<NodeId>& outputs() const { return outputs_; }
  size_t num_ops() const { return nodes_.size() - params_.size(); }

  std::string ToText() const;
  // Checks topological order, arity and that every meta equals what inference gives.
  absl::Status Verify() const;

 private:
  std::vector<Node> nodes_;
  std::vector<NodeId> params_;
  std::vector<NodeId> outputs_;
};

// Infers a node's output meta from its inputs' metas and its attributes.
absl::StatusOr<TensorMeta> InferNode(const Node& n, absl::Span<const TensorMeta* const> inputs);
// Runs one node's eager kernel.
absl::StatusOr<Tensor> RunNode(const Node& n, absl::Span<const Tensor* const> inputs);

}  // namespace pijit::graph
