// The tensor IR: a graph of nodes in topological order (a node's inputs come before it).
//
//   graph(%0: f32[2,3], %1: f32[3,4]) {
//     %2: f32[2,4] = matmul(%0, %1)
//     %3: f32[] = constant(0.5)
//     %4: f32[2,4] = mul(%2, %3)
//     return (%4)
//   }
//
// Node ids are positions: %i is nodes()[i]. Parameters are printed in the header (in parameter
// order, which is also id order) and may sit anywhere among the ops. The text form is stable
// and round-trips through graph/text_parser.h: constants print their values exactly (shortest
// round-trip decimal; one literal for a scalar or a splat, a list for up to
// kMaxPrintedConstantElements values, "<N elements>" beyond, which the parser rejects).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "kernels/fused.h"
#include "kernels/ops.h"

namespace pijit::graph {

enum class Op : uint8_t {
#define PIJIT_GRAPH_OP(e, name, arity, traits) e,
#include "graph/ops.def"
#undef PIJIT_GRAPH_OP
};

enum Trait : uint8_t {
  kNone = 0, kSource = 1, kElementwise = 2, kReduction = 4, kShape = 8, kStateful = 16,
  kRegion = 32
};

const char* OpName(Op op);
int OpArity(Op op);
bool HasTrait(Op op, Trait t);
inline bool IsElementwise(Op op) { return HasTrait(op, kElementwise); }

using NodeId = int32_t;

inline constexpr int64_t kMaxPrintedConstantElements = 16;

// Node::attr of conv2d with relu applied as its result is written, and of max_pool2d_grad
// keeping the gradient only where its input x > 0 (graph/passes/epilogue.h sets both).
inline constexpr int64_t kConvReluEpilogue = 1;
inline constexpr int64_t kPoolGradPositiveOnly = 1;
// Node::attr of all_reduce: its reduction (kernels/comm ReduceOp: sum, max, min, prod) plus
// kAllReduceOps times its communication group.
inline constexpr int64_t kAllReduceOps = 4;
inline constexpr const char* kAllReduceOpNames[kAllReduceOps] = {"sum", "max", "min", "prod"};
// Node::attr of broadcast: its root rank plus kBroadcastRoots times its group.
inline constexpr int64_t kBroadcastRoots = int64_t{1} << 24;

// An op's attributes; graph/ops.def says which each op uses and what they mean.
struct Attrs {
  Shape ints;                  // axes, shape, perm, encoded index, ...
  bool keepdims = false;       // reductions
  int64_t attr = 0;            // one int: axis, ddof, seed
  std::optional<DType> dtype;  // output dtype of creation ops
  Tensor value;                // constant, fill value, creation parameters
};

struct Region;

struct Node : Attrs {
  Op op;
  absl::InlinedVector<NodeId, 2> inputs;
  TensorMeta meta;
  int param_index = -1;  // param
  // fused, fused_reduce: the device-neutral program; each backend compiles it when the graph
  // is compiled (Backend::Lower), so the IR holds no machine code.
  std::shared_ptr<const FusedProgram> program;
  std::shared_ptr<const Region> region;      // control flow: its branches or body (kRegion ops)
};

// The parts of a collective node's attr (see kAllReduceOps and kBroadcastRoots): its
// reduction (all_reduce, reduce_scatter; a kernels/comm ReduceOp), its root (broadcast) and its
// communication group (every collective).
inline int64_t CollectiveReduction(const Node& n) { return n.attr % kAllReduceOps; }
inline int64_t BroadcastRoot(const Node& n) { return n.attr % kBroadcastRoots; }
// batch_norm_train's ints: {1} where it applies the relu after it (epilogue=relu, blocked
// inputs only: graph/passes/layout_assignment.h), empty otherwise.
inline bool BatchNormAppliesRelu(const Node& n) { return !n.ints.empty() && n.ints[0] != 0; }
inline int64_t CollectiveGroup(const Node& n) {
  if (n.op == Op::kAllGather) return n.attr;
  return n.op == Op::kBroadcast ? n.attr / kBroadcastRoots : n.attr / kAllReduceOps;
}

class Graph {
 public:
  NodeId AddParam(const TensorMeta& meta);
  NodeId AddConstant(Tensor value);
  // Adds an op node; infers its meta and reports bad input as the eager op would.
  absl::StatusOr<NodeId> AddOp(Op op, absl::Span<const NodeId> inputs, Attrs attrs);
  absl::StatusOr<NodeId> AddOp(Op op, absl::Span<const NodeId> inputs, Shape ints = {},
                               bool keepdims = false);
  // Appends a copy of `n` (inputs already refer to this graph). Params are registered in
  // parameter order; ops get their meta inferred (and rejected if inference fails).
  absl::StatusOr<NodeId> AddNode(Node n);
  void SetOutputs(std::vector<NodeId> outputs) { outputs_ = std::move(outputs); }

  // --- rewriting (passes) ---
  // In-place edits must keep every meta what inference gives; Verify() checks.
  Node& mutable_node(NodeId id) { return nodes_[id]; }
  // Every use of `from` (node inputs and graph outputs) becomes `to`; `to` < `from`, so the
  // order stays topological.
  void ReplaceAllUsesWith(NodeId from, NodeId to);
  // Turns node `id` into a constant holding `value` (whose meta must equal the node's).
  void ReplaceWithConstant(NodeId id, Tensor value);
  // Rebuilds the graph keeping the nodes with keep[id] (params are always kept), in order,
  // renumbering ids densely. Kept nodes must not use dropped ones. Returns the number dropped.
  int Compact(const std::vector<bool>& keep);
  // Puts the nodes in `order`, a permutation of the ids in which every node comes after its
  // inputs, renumbering ids to positions (params keep their parameter order).
  absl::Status Reorder(const std::vector<NodeId>& order);
  // For each node, whether some output depends on it (params count as live).
  std::vector<bool> LiveNodes() const;
  // Drops the nodes with ids >= n (and the parameters among them); nothing kept may use them.
  void TruncateTo(size_t n);

  const Node& node(NodeId id) const { return nodes_[id]; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<NodeId>& params() const { return params_; }
  const std::vector<NodeId>& outputs() const { return outputs_; }
  size_t num_ops() const { return nodes_.size() - params_.size(); }

  std::string ToText() const;
  // Checks topological order, arity, parameter bookkeeping, constants, and that every meta
  // equals what inference gives. Errors name the node (%id).
  absl::Status Verify() const;

 private:
  std::vector<Node> nodes_;
  std::vector<NodeId> params_;
  std::vector<NodeId> outputs_;
};

// The graphs of a control-flow node (graph/control_flow.h says what each takes and gives):
// while_loop {body}, while_grad {body, body_bwd}, cond {if_true, if_false}, cond_grad
// {if_true_vjp, if_false_vjp}.
struct Region {
  std::vector<Graph> graphs;
};

// Infers a node's output meta from its inputs' metas and its attributes.
absl::StatusOr<TensorMeta> InferNode(const Node& n, absl::Span<const TensorMeta* const> inputs);
// Runs one node on the CPU's kernels. A fused or fused_reduce node runs `kernel` (what the
// backend made of its program when the graph was compiled: Backend::Lower), else a kernel
// compiled for this call with `codegen`.
absl::StatusOr<Tensor> RunNode(const Node& n, absl::Span<const Tensor* const> inputs,
                               const FusedKernel* kernel = nullptr,
                               FusedBackend codegen = FusedBackend::kAuto);
// The CPU's kernel for a fused or fused_reduce node's program over inputs of `input_shapes`
// broadcast together, code generated with `codegen` for their layout now (compile time). Where
// code generation fails, the interpreter's kernel: unfused results within the documented
// tolerances either way.
absl::StatusOr<std::shared_ptr<const FusedKernel>> CompileFusedNode(const Node& n,
                                                                    absl::Span<const Shape> input_shapes,
                                                                    FusedBackend codegen);
// The kernel op of a binary or unary elementwise graph op (they share enumerators); false
// for any other op.
bool AsBinary(Op op, BinaryOp* out);
bool AsUnary(Op op, UnaryOp* out);
// The reduction of sum, mean, prod, max, min, all, any, var and std; false for any other op.
bool AsReduce(Op op, ReduceOp* out);

}  // namespace pijit::graph
