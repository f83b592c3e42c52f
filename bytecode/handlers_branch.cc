// An `if` on a tensor's value in whole-graph mode (capture_mode="ast", GRAPH_MODE, PSJit,
// fullgraph) becomes one cond node (graph/control_flow.h), as MindSpore's graph mode, lax.cond
// and XLA's conditional compile it: both ways are captured, the nodes of each move into a
// branch graph of the node, and every value that differs between the ways becomes one of its
// results. Only the way the condition takes runs, and only its gradient: a way that would
// give NaN or infinity (sqrt or log of what the other way guards against) affects nothing.
//
// What the join accepts: tensors of one dtype and shape (or the same tensor), the same
// Python value, and tuples and lists of those, in locals and on the stack; both ways reach
// the same instruction, or both return. A way that records a side effect (an attribute store,
// a print), mutates a container both ways can see, or leaves the branch by another jump
// (break, continue) stops capture with the reason: whole-graph mode reports it.
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_format.h"
#include "bytecode/interp.h"
#include "graph/control_flow.h"
#include "guards/guards.h"
#include "interop/convert.h"

namespace pijit::bytecode {
namespace {

using guards::IsPlainValue;

// A hash of what `v` holds, containers followed once each: equal before and after a way of
// the branch when that way mutated nothing both ways can reach.
void Fingerprint(const Value& v, absl::flat_hash_set<const void*>& seen, size_t& h) {
  h = absl::HashOf(h, static_cast<int>(v.kind), v.node, v.obj, v.source);
  auto follow = [&](const std::shared_ptr<ValueList>& items) {
    if (!items || !seen.insert(items.get()).second) return;
    h = absl::HashOf(h, items->size());
    for (const Value& item : *items) Fingerprint(item, seen, h);
  };
  follow(v.items);
  follow(v.defaults);
  if (v.cell && seen.insert(v.cell.get()).second) Fingerprint(*v.cell, seen, h);
  if (v.keys) h = absl::HashOf(h, v.keys->size());
}


bool SamePlainValue(PyObject* a, PyObject* b) {
  if (a == b) return true;
  if (Py_TYPE(a) != Py_TYPE(b) || !IsPlainValue(a)) return false;
  const int eq = PyObject_RichCompareBool(a, b, Py_EQ);
  if (eq < 0) PyErr_Clear();
  return eq == 1;
}

// What a value is, for the message of ways that do not join (a tensor with its dtype and shape).
std::string Describe(const Value& v, const graph::Graph& g) {
  switch (v.kind) {
    case Value::kTensor: {
      const TensorMeta& m = g.node(v.node).meta;
      return absl::StrFormat("a %s%s tensor", DTypeName(m.dtype), ShapeToString(m.shape));
    }
    case Value::kConst: return ReprOf(v.obj);
    case Value::kUndef: return "no value";
    case Value::kSeq: return v.is_list ? "a list" : "a tuple";
    default: return "a value built during capture";
  }
}

}  // namespace

size_t FingerprintOf(const std::vector<Value>& locals, const std::vector<Value>& stack) {
  absl::flat_hash_set<const void*> seen;
  size_t h = 0;
  for (const Value& v : locals) Fingerprint(v, seen, h);
  for (const Value& v : stack) Fingerprint(v, seen, h);
  return h;
}

bool Interp::RunBranchPath(Frame& f, size_t start, size_t stop, bool exit_jump, PathEnd* end) {
  for (size_t pc = start;;) {
    if (LeavesLoop(f, pc)) return false;
    if (pc == stop) {
      end->join = stop;
      return true;
    }
    if (exit_jump && pc > stop) {
      // A forward jump past the `else` block (its end; a nested if's join, which the compiler
      // points straight there): where the ways meet.
      end->join = pc;
      return true;
    }
    if (pc < start || pc > stop || pc >= f.instrs.size()) {
      Fail(BreakCategory::kUnsupportedBytecode,
           "a jump out of a way of an if on a tensor (break, continue) in whole-graph mode",
           "compute both results and choose with ops.where");
      return false;
    }
    const Instr& in = f.instrs[pc];
    if (++steps_ > kMaxSteps) {
      Fail(BreakCategory::kTooLong, absl::StrFormat("capture stopped after %d bytecode steps", kMaxSteps));
      return false;
    }
    cur_offset_ = in.offset;
    bool returned = false;
    if (!Step(f, pc, &returned, &end->value)) return false;
    if (returned) {
      end->returned = true;
      return true;
    }
  }
}

bool Interp::MergeBranchValues(BranchJoin& join, const Value& on_true, const Value& on_false,
                               const std::string& what, Value* out) {
  auto differ = [&]() {
    Fail(BreakCategory::kDataDependent,
         absl::StrFormat("%s is %s when the tensor condition is true and %s when it is false", what,
                         Describe(on_true, g()), Describe(on_false, g())),
         "in whole-graph mode both ways of an if on a tensor must give tensors of one dtype and "
         "shape (or the same Python value) to what follows");
    return false;
  };
  // A variable one way assigns and the other does not (a temporary of that way) is unassigned
  // after the if; reading it later stops capture there, as Python would raise if that way
  // had not run.
  if (on_true.kind == Value::kUndef || on_false.kind == Value::kUndef) {
    *out = Value();
    return true;
  }
  if (on_true.kind != on_false.kind) return differ();
  switch (on_true.kind) {
    case Value::kTensor: {
      if (on_true.node == on_false.node) {
        *out = on_true;
        return true;
      }
      if (join.results == nullptr) {  // the first pass: the cond's results are these pairs
        const TensorMeta& a = g().node(on_true.node).meta;
        const TensorMeta& b = g().node(on_false.node).meta;
        if (!(a == b) || on_true.type != on_false.type) return differ();
        join.pairs.push_back({on_true.node, on_false.node});
        *out = on_true;
        return true;
      }
      *out = Value::Tensor((*join.results)[join.next++], on_true.type);
      return true;
    }
    case Value::kConst:
      if (!SamePlainValue(on_true.obj, on_false.obj)) return differ();
      *out = on_true;
      // A number one way computed: its node went with that way's nodes; the value is the same.
      if (out->number && static_cast<size_t>(out->number->node) >= join.first_node) out->number = nullptr;
      return true;
    case Value::kUndef:
    case Value::kNull:
      *out = on_true;
      return true;
    case Value::kSeq: {
      if (on_true.items == on_false.items) {
        *out = on_true;
        return true;
      }
      if (on_true.is_list != on_false.is_list || on_true.seq_type != on_false.seq_type ||
          on_true.items->size() != on_false.items->size()) {
        return differ();
      }
      ValueList items(on_true.items->size());
      for (size_t i = 0; i < items.size(); ++i) {
        if (!MergeBranchValues(join, (*on_true.items)[i], (*on_false.items)[i],
                               absl::StrFormat("item %d of %s", i, what), &items[i])) {
          return false;
        }
      }
      *out = on_true;
      out->items = std::make_shared<ValueList>(std::move(items));
      return true;
    }
    default:
      // Anything else joins only when both ways hold the very same value.
      if (on_true.obj == on_false.obj && on_true.items == on_false.items && on_true.cell == on_false.cell &&
          on_true.gen == on_false.gen && on_true.node == on_false.node) {
        *out = on_true;
        return true;
      }
      return differ();
  }
}

bool Interp::BranchOnTensor(StepState& s, const Value& cond, bool jump_on_true) {
  Frame& f = s.f;
  const size_t fall = s.next, target = static_cast<size_t>(s.in.target);
  graph::NodeId pred;  // the condition as a bool[]
  if (!TruthNode(cond.node, /*on_true=*/true, &pred)) return false;
  const size_t first_node = g().nodes().size();
  const std::vector<Value> locals = f.locals, stack = f.stack;
  const size_t shared_state = FingerprintOf(locals, stack);
  const size_t effects_before = effects_.size(), customs_before = customs_.size();
  auto kept_to_itself = [&](const char* way) {
    if (effects_.size() == effects_before && customs_.size() == customs_before &&
        FingerprintOf(locals, stack) == shared_state) {
      return true;
    }
    Fail(BreakCategory::kSideEffect,
         absl::StrFormat("the %s way of an if on a tensor has a side effect (a store, a print, a "
                         "mutation of a container both ways see, a Cell with a bprop)", way),
         "in whole-graph mode both ways of an if on a tensor are captured: keep side effects out of them");
    return false;
  };
  // The nodes each way adds, as ranges of node ids.
  NodeRanges first_nodes, second_nodes;
  auto record = [&](NodeRanges& ranges, size_t from) { ranges.push_back({from, g().nodes().size()}); };
  // The way that falls through (the `if` block), then the way the jump takes.
  PathEnd first;
  if (!RunBranchPath(f, fall, target, /*exit_jump=*/true, &first) || !kept_to_itself("first")) return false;
  record(first_nodes, first_node);
  std::vector<Value> first_locals = std::move(f.locals), first_stack = std::move(f.stack);
  f.locals = locals;
  f.stack = stack;
  PathEnd second;
  const size_t second_node = g().nodes().size();
  if (first.returned) {
    // `if c: return a` then the rest of the function: the rest must return too.
    if (!RunBranchPath(f, target, f.instrs.size(), false, &second)) return false;
    if (!second.returned) {
      Fail(BreakCategory::kInternal, "the function ends without RETURN_VALUE");
      return false;
    }
  } else if (first.join == target) {
    second.join = target;  // no `else` block: the jump goes straight to the join
  } else if (!RunBranchPath(f, target, first.join, false, &second)) {
    return false;
  }
  if (!kept_to_itself("second")) return false;
  record(second_nodes, second_node);
  if (!first.returned && second.returned) {
    // `if c: ... else: return b` then more code: the first way runs that code to its return
    // (what later CPython versions compile such a function to).
    std::vector<Value> second_locals = std::move(f.locals), second_stack = std::move(f.stack);
    f.locals = std::move(first_locals);
    f.stack = std::move(first_stack);
    const size_t more = g().nodes().size();
    if (!RunBranchPath(f, first.join, f.instrs.size(), false, &first) || !kept_to_itself("first")) return false;
    record(first_nodes, more);
    f.locals = std::move(second_locals);
    f.stack = std::move(second_stack);
  }
  if (first.returned != second.returned || (!first.returned && first.join != second.join)) {
    Fail(BreakCategory::kDataDependent, "the two ways of an if on a tensor do not meet",
         "in whole-graph mode both ways of an if on a tensor must continue at one place or both return");
    return false;
  }
  if (!first.returned && first_stack.size() != f.stack.size()) {
    Fail(BreakCategory::kInternal, "the two ways of an if on a tensor leave stacks of different depths");
    return false;
  }
  // The fall-through way is the one taken when the condition is false if the jump is taken
  // when it is true.
  const bool first_is_true = !jump_on_true;
  // Joins what the ways leave: the first pass finds the tensors that differ (the cond's
  // results), the second puts the results in their places.
  BranchJoin join;
  join.first_node = first_node;
  std::vector<Value> joined_locals(f.locals.size()), joined_stack(f.stack.size());
  Value returned;
  auto join_all = [&]() {
    auto merge = [&](const Value& a, const Value& b, const std::string& what, Value* out) {
      return first_is_true ? MergeBranchValues(join, a, b, what, out) : MergeBranchValues(join, b, a, what, out);
    };
    if (first.returned) return merge(first.value, second.value, "the return value", &returned);
    for (size_t i = 0; i < joined_locals.size(); ++i) {
      const char* name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(f.code->co_localsplusnames, i));
      if (!merge(first_locals[i], f.locals[i], absl::StrFormat("`%s`", name ? name : "?"), &joined_locals[i])) {
        return false;
      }
    }
    for (size_t i = 0; i < joined_stack.size(); ++i) {
      if (!merge(first_stack[i], f.stack[i], "a value on the stack", &joined_stack[i])) return false;
    }
    return true;
  };
  if (!join_all()) return false;
  std::vector<graph::NodeId> results;
  if (!MoveWaysIntoCond(pred, first_node, first_is_true ? first_nodes : second_nodes,
                        first_is_true ? second_nodes : first_nodes, join.pairs, &results)) {
    return false;
  }
  join.results = &results;
  if (!join_all()) return false;
  if (first.returned) {
    *s.result = returned;
    s.returned = true;
    return true;
  }
  f.locals = std::move(joined_locals);
  f.stack = std::move(joined_stack);
  s.next = first.join;
  return true;
}

bool Interp::AddMappedNode(graph::Graph& sub, const graph::Node& n,
                           absl::FunctionRef<graph::NodeId(graph::NodeId)> map, graph::NodeId* added) {
  graph::Node copy = n;
  for (graph::NodeId& i : copy.inputs) i = map(i);
  auto id = sub.AddNode(std::move(copy));
  if (!id.ok()) {
    Fail(BreakCategory::kInternal, std::string(id.status().message()));
    return false;
  }
  *added = *id;
  return true;
}

bool Interp::MoveWaysIntoCond(graph::NodeId pred, size_t first_node, const NodeRanges& if_true,
                              const NodeRanges& if_false,
                              const std::vector<std::pair<graph::NodeId, graph::NodeId>>& pairs,
                              std::vector<graph::NodeId>* results) {
  graph::Graph& outer = g();
  const NodeRanges* ways[2] = {&if_true, &if_false};
  auto way_of = [&](graph::NodeId id) {
    for (int w = 0; w < 2; ++w)
      for (auto [begin, end] : *ways[w])
        if (static_cast<size_t>(id) >= begin && static_cast<size_t>(id) < end) return w;
    return -1;
  };
  // The operands: what the ways read from before the if (inputs they read first included),
  // in the order they are first read; both branches take them all.
  std::vector<graph::NodeId> operands;
  absl::flat_hash_set<graph::NodeId> noted;
  auto note = [&](graph::NodeId id, int way) {
    const int owner = way_of(id);
    if (owner == way && outer.node(id).op != graph::Op::kParam) return true;
    if (owner >= 0 && outer.node(id).op != graph::Op::kParam) {
      Fail(BreakCategory::kInternal, "one way of an if on a tensor reads a value the other way computed");
      return false;
    }
    if (noted.insert(id).second) operands.push_back(id);
    return true;
  };
  for (int w = 0; w < 2; ++w) {
    for (auto [begin, end] : *ways[w]) {
      for (size_t id = begin; id < end; ++id) {
        const graph::Node& n = outer.node(static_cast<graph::NodeId>(id));
        if (n.op == graph::Op::kParam) continue;
        for (graph::NodeId i : n.inputs)
          if (!note(i, w)) return false;
      }
    }
  }
  for (const auto& [a, b] : pairs)
    if (!note(a, 0) || !note(b, 1)) return false;
  // Each way's nodes, copied into its branch over the operands.
  std::vector<graph::Graph> branches(2);
  for (int w = 0; w < 2; ++w) {
    graph::Graph& branch = branches[w];
    absl::flat_hash_map<graph::NodeId, graph::NodeId> inside;
    for (graph::NodeId id : operands) inside[id] = branch.AddParam(outer.node(id).meta);
    for (auto [begin, end] : *ways[w]) {
      for (size_t id = begin; id < end; ++id) {
        const graph::Node& n = outer.node(static_cast<graph::NodeId>(id));
        if (n.op == graph::Op::kParam) continue;
        auto map = [&](graph::NodeId i) { return inside.at(i); };
        graph::NodeId added;
        if (!AddMappedNode(branch, n, map, &added)) return false;
        inside[static_cast<graph::NodeId>(id)] = added;
      }
    }
    std::vector<graph::NodeId> outs;
    for (const auto& pair : pairs) outs.push_back(inside.at(w == 0 ? pair.first : pair.second));
    branch.SetOutputs(std::move(outs));
  }
  // The outer graph keeps what came before the if and the inputs the ways read first.
  const std::vector<graph::NodeId> new_id = DropNodesFrom(first_node);
  if (pairs.empty()) return true;  // nothing differs: the ways' nodes were dead
  std::vector<graph::NodeId> inputs{pred};
  for (graph::NodeId id : operands) inputs.push_back(new_id[id]);
  auto made = graph::AppendRegion(outer, graph::Op::kCond, inputs, std::move(branches));
  if (!made.ok()) {
    Fail(BreakCategory::kInternal, std::string(made.status().message()));
    return false;
  }
  *results = std::move(*made);
  return true;
}

}  // namespace pijit::bytecode
