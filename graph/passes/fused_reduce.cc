#include "graph/passes/fused_reduce.h"

#include <algorithm>

#include "graph/passes/fusion.h"
#include "kernels/fused_reduce.h"

namespace pijit::graph::fused_reduce {
namespace {

// Whether the reduced axes of `shape` of size > 1 are adjacent among its axes of size > 1: the
// [outer, reduced, inner] layouts the kernel reduces directly.
bool ReducedAxesAdjacent(const Shape& shape, const Shape& axes) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  std::vector<bool> reduced(nd, axes.empty());
  for (int64_t ax : axes) {
    auto k = NormalizeAxis("fused_reduce", ax, nd);
    if (!k.ok()) return false;
    reduced[*k] = true;
  }
  int phase = 0;  // 0: before the reduced axes, 1: among them, 2: after them
  for (int64_t i = 0; i < nd; ++i) {
    if (shape[i] == 1) continue;
    if (reduced[i]) {
      if (phase == 2) return false;
      phase = 1;
    } else if (phase == 1) {
      phase = 2;
    }
  }
  return true;
}

// The program of a single elementwise op `p` (inputs: its distinct inputs, in order), if fused
// code computes it exactly as the eager kernel does.
std::shared_ptr<const FusedProgram> SingleOpProgram(const Graph& g, const Node& p,
                                                    std::vector<NodeId>* inputs) {
  FusedOpcode op;
  if (!fusion::FusedOpcodeOf(p.op, &op) || op == FusedOpcode::kExp || op == FusedOpcode::kLog ||
      op == FusedOpcode::kTanh || op == FusedOpcode::kErf || op == FusedOpcode::kSigmoid ||
      op == FusedOpcode::kWhere || FusedOpcodeIsCompare(op)) {
    return nullptr;
  }
  FusedProgram program;
  program.dtype = p.meta.dtype;
  FusedInst inst{};
  inst.op = op;
  for (size_t k = 0; k < p.inputs.size(); ++k) {
    const NodeId in = p.inputs[k];
    if (g.node(in).meta.dtype != p.meta.dtype) return nullptr;  // no promotion in fused code
    int index = static_cast<int>(std::find(inputs->begin(), inputs->end(), in) - inputs->begin());
    if (index == static_cast<int>(inputs->size())) inputs->push_back(in);
    FusedOperand& o = k == 0 ? inst.a : inst.b;
    o.kind = FusedOperand::kInput;
    o.index = index;
  }
  program.insts.push_back(inst);
  program.num_inputs = static_cast<int>(inputs->size());
  if (!program.Validate().ok()) return nullptr;
  return std::make_shared<const FusedProgram>(std::move(program));
}

}  // namespace

absl::StatusOr<bool> Run(Graph& g) {
  const NodeId count = static_cast<NodeId>(g.nodes().size());
  std::vector<int> uses(count, 0);
  for (NodeId id = 0; id < count; ++id)
    for (NodeId i : g.node(id).inputs) ++uses[i];
  for (NodeId o : g.outputs()) ++uses[o];  // an output's value is needed

  bool changed = false;
  for (NodeId id = 0; id < count; ++id) {
    const Node& n = g.node(id);
    ReduceOp op;
    if (!AsReduce(n.op, &op) || !FusedReduceSupports(op)) continue;
    const Node& p = g.node(n.inputs[0]);
    if (uses[n.inputs[0]] != 1 || !FusedKernelSupports(p.meta.dtype) ||
        !ReducedAxesAdjacent(p.meta.shape, n.ints)) {
      continue;
    }
    std::vector<NodeId> inputs;
    std::shared_ptr<const FusedProgram> program;
    if (p.op == Op::kFused) {
      inputs.assign(p.inputs.begin(), p.inputs.end());
      program = p.program;
    } else {
      program = SingleOpProgram(g, p, &inputs);
    }
    if (!program) continue;
    // Inputs the kernel reads directly: a single element, or all of the producer's elements
    // (a partial broadcast would always take the materialising path).
    const int64_t total = NumElements(p.meta.shape);
    bool direct = true;
    for (NodeId i : inputs) {
      const int64_t count_i = NumElements(g.node(i).meta.shape);
      direct &= count_i == 1 || count_i == total;
    }
    if (!direct) continue;
    Node& r = g.mutable_node(id);
    r.op = Op::kFusedReduce;
    r.attr = static_cast<int64_t>(op);
    r.inputs.assign(inputs.begin(), inputs.end());
    r.program = std::move(program);
    changed = true;
  }
  return changed;
}

}  // namespace pijit::graph::fused_reduce
