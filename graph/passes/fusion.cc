#include "graph/passes/fusion.h"

#include <functional>
#include <set>

#include "absl/container/flat_hash_map.h"

namespace pijit::graph::fusion {

// IR op -> fused opcode, for the elementwise ops fused code supports (kernels/fused.h's table:
// sin, gelu, ... have no vectorised version yet).
bool FusedOpcodeOf(Op op, FusedOpcode* out) {
  if (!IsElementwise(op)) return false;
  switch (op) {
#define PIJIT_FUSED_CASE(e, name, arity) \
  case Op::e: *out = FusedOpcode::e; return true;
    PIJIT_FUSED_OPCODES(PIJIT_FUSED_CASE)
#undef PIJIT_FUSED_CASE
    default: return false;
  }
}

namespace {

// clip with one or both bounds (x, [lo], [hi]; bounds=[has lo, has hi]).
bool IsClip(const Node& n) {
  return n.op == Op::kClip && n.ints.size() == 2 && (n.ints[0] != 0 || n.ints[1] != 0) &&
         n.inputs.size() == static_cast<size_t>(1 + (n.ints[0] != 0) + (n.ints[1] != 0));
}

// Whether `id` can be part of a program computing in `dtype`: a comparison of two `dtype`
// values (a bool mask), a where of `dtype` values selected by a bool condition, or another op
// of `dtype` values.
bool Candidate(const Graph& g, NodeId id, DType dtype) {
  const Node& n = g.node(id);
  FusedOpcode op;
  // Generated kernels have float32 and float64 lanes only; other dtypes (the 16-bit floats
  // included) stay as single-op nodes run by the eager kernels.
  if (!FusedKernelSupports(dtype)) return false;
  if (IsClip(n)) {  // bounds of x's dtype: no cast to fold in
    bool same = n.meta.dtype == dtype;
    for (NodeId in : n.inputs) same = same && g.node(in).meta.dtype == dtype;
    return same;
  }
  if (!FusedOpcodeOf(n.op, &op)) return false;
  const bool compare = FusedOpcodeIsCompare(op);
  if (n.meta.dtype != (compare ? DType::kBool : dtype)) return false;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const bool cond = op == FusedOpcode::kWhere && k == 0;
    if (g.node(n.inputs[k]).meta.dtype != (cond ? DType::kBool : dtype)) return false;
  }
  return true;
}

bool IsScalarConstant(const Graph& g, NodeId id, size_t max_rank) {
  const Node& n = g.node(id);
  return n.op == Op::kConstant && n.value.numel() == 1 && n.meta.shape.size() <= max_rank;
}

// Builds the program of `members` (ascending ids, root last); `inputs` receives the nodes
// feeding it from outside. `literals`: inline scalar constants.
FusedProgram BuildProgram(const Graph& g, const std::vector<NodeId>& members, bool literals,
                          std::vector<NodeId>* inputs) {
  const Node& root = g.node(members.back());
  FusedProgram p;
  p.dtype = root.meta.dtype;
  // A member's value is its last instruction's (a clip takes two); members come in id order,
  // so each one's inputs from the cluster have their instructions already.
  absl::flat_hash_map<NodeId, int> temp_of, input_of;
  for (NodeId m : members) temp_of[m] = -1;
  auto operand = [&](NodeId i) {
    FusedOperand o;
    if (auto t = temp_of.find(i); t != temp_of.end()) {
      o.kind = FusedOperand::kTemp;
      o.index = t->second;
    } else if (literals && IsScalarConstant(g, i, root.meta.shape.size())) {
      o.kind = FusedOperand::kConst;
      Tensor v = g.node(i).value.Contiguous();
      o.value = p.dtype == DType::kFloat32 ? *v.data<float>() : *v.data<double>();
    } else {
      auto [it, added] = input_of.try_emplace(i, static_cast<int>(inputs->size()));
      if (added) inputs->push_back(i);
      o.kind = FusedOperand::kInput;
      o.index = it->second;
    }
    return o;
  };
  for (NodeId m : members) {
    const Node& n = g.node(m);
    if (IsClip(n)) {
      // np.clip's bounds: Max(x, lo) is Maximum(lo, x) (of equal operands x, as np.clip keeps
      // -0.0 at a bound of +0.0; a NaN on either side gives NaN), then Min(_, hi) likewise.
      FusedOperand value = operand(n.inputs[0]);
      size_t k = 1;
      for (int side = 0; side < 2; ++side) {
        if (n.ints[side] == 0) continue;
        FusedInst inst{};
        inst.op = side == 0 ? FusedOpcode::kMaximum : FusedOpcode::kMinimum;
        inst.a = operand(n.inputs[k++]);
        inst.b = value;
        p.insts.push_back(inst);
        value.kind = FusedOperand::kTemp;
        value.index = static_cast<int>(p.insts.size()) - 1;
      }
    } else {
      FusedInst inst{};
      FusedOpcodeOf(n.op, &inst.op);
      inst.a = operand(n.inputs[0]);
      if (n.inputs.size() > 1) inst.b = operand(n.inputs[1]);
      if (n.inputs.size() > 2) inst.c = operand(n.inputs[2]);
      p.insts.push_back(inst);
    }
    temp_of[m] = static_cast<int>(p.insts.size()) - 1;
  }
  p.num_inputs = static_cast<int>(inputs->size());
  return p;
}

}  // namespace

absl::StatusOr<bool> Run(Graph& g) {
  const NodeId count = static_cast<NodeId>(g.nodes().size());
  std::vector<std::vector<NodeId>> users(count);
  for (NodeId id = 0; id < count; ++id)
    for (NodeId i : g.node(id).inputs) users[i].push_back(id);
  std::vector<bool> is_output(count, false);
  for (NodeId o : g.outputs()) is_output[o] = true;

  std::vector<bool> taken(count, false);
  bool changed = false;
  for (NodeId root = count - 1; root >= 0; --root) {
    const TensorMeta& meta = g.node(root).meta;
    if (taken[root] || !Candidate(g, root, meta.dtype)) continue;
    // A where joins only with the comparison that makes its condition (the mask never leaves
    // registers); a where whose condition stays outside is excluded and the cluster regrown
    // without it.
    std::vector<bool> excluded(count, false);
    std::vector<bool> member;
    std::vector<NodeId> members;
    for (;;) {
      member.assign(count, false);
      member[root] = true;
      members = {root};
      // Largest id first: when a node is considered, every user that could join already has.
      std::set<NodeId, std::greater<NodeId>> frontier(g.node(root).inputs.begin(),
                                                      g.node(root).inputs.end());
      while (!frontier.empty() && static_cast<int>(members.size()) < kMaxClusterOps) {
        NodeId j = *frontier.begin();
        frontier.erase(frontier.begin());
        const Node& n = g.node(j);
        if (taken[j] || excluded[j] || is_output[j] || !Candidate(g, j, meta.dtype) ||
            n.meta.shape != meta.shape) {
          continue;
        }
        bool all_users_inside = true;
        for (NodeId u : users[j]) all_users_inside &= member[u];
        if (!all_users_inside) continue;
        member[j] = true;
        members.push_back(j);
        frontier.insert(n.inputs.begin(), n.inputs.end());
      }
      bool regrow = false;
      for (NodeId m : members) {
        const Node& n = g.node(m);
        if (n.op == Op::kWhere && !member[n.inputs[0]]) excluded[m] = regrow = true;
      }
      if (!regrow || excluded[root]) break;
    }
    // A clip alone too: its own kernel broadcasts its bounds element by element, a loop of
    // two instructions runs vectorised.
    if (excluded[root] || (members.size() < 2 && !IsClip(g.node(root)))) continue;
    std::sort(members.begin(), members.end());

    // Scalar constants become literals only if the other inputs still give the root's shape.
    std::vector<NodeId> inputs;
    FusedProgram program = BuildProgram(g, members, /*literals=*/true, &inputs);
    Shape shape;
    bool shape_kept = !inputs.empty();
    for (NodeId i : inputs) {
      auto s = BroadcastShapes("fused", shape, g.node(i).meta.shape);
      shape_kept &= s.ok();
      if (s.ok()) shape = *s;
    }
    if (!shape_kept || shape != meta.shape) {
      inputs.clear();
      program = BuildProgram(g, members, /*literals=*/false, &inputs);
    }
    if (inputs.empty() || static_cast<int>(inputs.size()) > kMaxClusterInputs) continue;
    if (!program.Validate().ok()) continue;  // unfused is always correct

    for (NodeId m : members) taken[m] = true;
    Node& n = g.mutable_node(root);
    n.op = Op::kFused;
    n.inputs.assign(inputs.begin(), inputs.end());
    n.ints.clear();
    n.program = std::make_shared<const FusedProgram>(std::move(program));
    changed = true;
  }
  return changed;
}

}  // namespace pijit::graph::fusion
