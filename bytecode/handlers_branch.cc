// An `if` on a tensor's value in whole-graph mode (capture_mode="ast", GRAPH_MODE, PSJit,
// fullgraph): both ways are captured and every value that differs between them is joined
// with where(cond, value if true, value if false), as XLA turns a cheap conditional into a
// select. The graph computes both ways; the caller sees the way the condition takes, and
// gradients flow through where to the way taken.
//
// What the join accepts: tensors of one dtype and shape (or the same tensor), the same
// Python value, and tuples and lists of those, in locals and on the stack; both ways reach
// the same instruction, or both return. A way that records a side effect (an attribute store,
// a print), mutates a container both ways can see, or leaves the branch by another jump
// (break, continue) stops capture with the reason: whole-graph mode reports it.
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_format.h"
#include "bytecode/interp.h"
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

std::string Describe(const Value& v) {
  switch (v.kind) {
    case Value::kTensor: return "a tensor";
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

bool Interp::MergeBranchValues(graph::NodeId pred, const Value& on_true, const Value& on_false,
                               const std::string& what, Value* out) {
  auto differ = [&]() {
    Fail(BreakCategory::kDataDependent,
         absl::StrFormat("%s is %s when the tensor condition is true and %s when it is false", what,
                         Describe(on_true), Describe(on_false)),
         "in whole-graph mode both ways of an if on a tensor must give tensors of one dtype and "
         "shape (or the same Python value) to what follows");
    return false;
  };
  if (on_true.kind != on_false.kind) return differ();
  switch (on_true.kind) {
    case Value::kTensor: {
      if (on_true.node == on_false.node) {
        *out = on_true;
        return true;
      }
      const TensorMeta& a = g().node(on_true.node).meta;
      const TensorMeta& b = g().node(on_false.node).meta;
      if (!(a == b) || on_true.type != on_false.type) return differ();
      auto node = g().AddOp(graph::Op::kWhere, {pred, on_true.node, on_false.node});
      if (!node.ok()) {
        Fail(BreakCategory::kInternal, std::string(node.status().message()));
        return false;
      }
      *out = Value::Tensor(*node, on_true.type);
      return true;
    }
    case Value::kConst:
      if (!SamePlainValue(on_true.obj, on_false.obj)) return differ();
      *out = on_true;
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
        if (!MergeBranchValues(pred, (*on_true.items)[i], (*on_false.items)[i],
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
  // The condition as a 0-d bool, so that where broadcasts it over values of any shape.
  graph::NodeId pred;
  if (!TruthNode(cond.node, /*on_true=*/true, &pred)) return false;
  const std::vector<Value> locals = f.locals, stack = f.stack;
  const size_t shared_state = FingerprintOf(locals, stack);
  const size_t effects_before = effects_.size();
  auto kept_to_itself = [&](const char* way) {
    if (effects_.size() == effects_before && FingerprintOf(locals, stack) == shared_state) return true;
    Fail(BreakCategory::kSideEffect,
         absl::StrFormat("the %s way of an if on a tensor has a side effect (a store, a print, a "
                         "mutation of a container both ways see)", way),
         "in whole-graph mode both ways of an if on a tensor are computed: keep side effects out of them");
    return false;
  };
  // The way that falls through (the `if` block), then the way the jump takes.
  PathEnd first;
  if (!RunBranchPath(f, fall, target, /*exit_jump=*/true, &first) || !kept_to_itself("first")) return false;
  std::vector<Value> first_locals = std::move(f.locals), first_stack = std::move(f.stack);
  f.locals = locals;
  f.stack = stack;
  PathEnd second;
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
  if (!first.returned && second.returned) {
    // `if c: ... else: return b` then more code: the first way runs that code to its return
    // (what later CPython versions compile such a function to).
    std::vector<Value> second_locals = std::move(f.locals), second_stack = std::move(f.stack);
    f.locals = std::move(first_locals);
    f.stack = std::move(first_stack);
    if (!RunBranchPath(f, first.join, f.instrs.size(), false, &first) || !kept_to_itself("first")) return false;
    f.locals = std::move(second_locals);
    f.stack = std::move(second_stack);
  }
  if (first.returned != second.returned || (!first.returned && first.join != second.join)) {
    Fail(BreakCategory::kDataDependent, "the two ways of an if on a tensor do not meet",
         "in whole-graph mode both ways of an if on a tensor must continue at one place or both return");
    return false;
  }
  // The fall-through way is the one taken when the condition is false if the jump is taken
  // when it is true.
  const bool first_is_true = !jump_on_true;
  auto merge = [&](const Value& a, const Value& b, const std::string& what, Value* out) {
    return first_is_true ? MergeBranchValues(pred, a, b, what, out) : MergeBranchValues(pred, b, a, what, out);
  };
  if (first.returned) {
    Value result;
    if (!merge(first.value, second.value, "the return value", &result)) return false;
    *s.result = result;
    s.returned = true;
    return true;
  }
  if (first_stack.size() != f.stack.size()) {
    Fail(BreakCategory::kInternal, "the two ways of an if on a tensor leave stacks of different depths");
    return false;
  }
  std::vector<Value> joined_locals(f.locals.size()), joined_stack(f.stack.size());
  for (size_t i = 0; i < joined_locals.size(); ++i) {
    const char* name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(f.code->co_localsplusnames, i));
    if (!merge(first_locals[i], f.locals[i], absl::StrFormat("`%s`", name ? name : "?"), &joined_locals[i])) {
      return false;
    }
  }
  for (size_t i = 0; i < joined_stack.size(); ++i) {
    if (!merge(first_stack[i], f.stack[i], "a value on the stack", &joined_stack[i])) return false;
  }
  f.locals = std::move(joined_locals);
  f.stack = std::move(joined_stack);
  s.next = first.join;
  return true;
}

}  // namespace pijit::bytecode
