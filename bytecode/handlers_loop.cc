// A `while` loop on a tensor's value in whole-graph mode (capture_mode="ast", GRAPH_MODE,
// PSJit, fullgraph) becomes one while_loop node (graph/control_flow.h), as MindSpore's graph mode and
// lax.while_loop compile it.
//
// CPython compiles `while cond: body` to the condition, a forward jump to the exit, the body,
// the condition again and a jump back to the body (3.11: one conditional backward jump; 3.12
// and 3.13: a conditional forward jump to the exit, then JUMP_BACKWARD). At the first jump the
// interpreter captures the body once, over stand-ins for the tensors in the frame's locals and
// stack, up to the second condition: the tensors the body changes are the loop's carried
// values, the values from before the loop it reads are its invariants. The nodes the body added
// move into the loop node's body graph; the frame continues at the exit with the loop's results.
//
// A `for` over range() of tensors is the same loop with a carried counter (FOR_ITER's item).
//
// What the body may do: compute tensors (in locals, on the stack or inside tuples held there)
// of the dtype and shape they had before the loop (or leave them), read anything from before
// it, branch on tensors (cond nodes) and on values known at capture time. A body that changes a
// Python value (`i += 1`), records a side effect (a store, a print), leaves the loop (break,
// continue, return) or changes a tensor's dtype or shape stops capture with the reason, as
// whole-graph mode reports it.
#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "bytecode/interp.h"
#include "graph/control_flow.h"

namespace pijit::bytecode {
namespace {

bool IsConditionalForward(Opc op) { return op == Opc::POP_JUMP_FORWARD_IF_TRUE || op == Opc::POP_JUMP_FORWARD_IF_FALSE; }
bool IsConditionalBackward(Opc op) {
  return op == Opc::POP_JUMP_BACKWARD_IF_TRUE || op == Opc::POP_JUMP_BACKWARD_IF_FALSE;
}
bool JumpsOnTrue(Opc op) { return op == Opc::POP_JUMP_FORWARD_IF_TRUE || op == Opc::POP_JUMP_BACKWARD_IF_TRUE; }

// The value at `path` inside `root` (tuples followed), or nullptr where the structure differs.
const Value* ValueAt(const Value& root, const std::vector<size_t>& path) {
  const Value* v = &root;
  for (size_t i : path) {
    if (v->kind != Value::kSeq || v->is_list || !v->items || i >= v->items->size()) return nullptr;
    v = &(*v->items)[i];
  }
  return v;
}

// Sets the value at `path` inside `root`, copying each tuple on the way (the state before the
// loop shares them).
void SetAt(Value& root, const std::vector<size_t>& path, size_t depth, Value value) {
  if (depth == path.size()) {
    root = std::move(value);
    return;
  }
  auto items = std::make_shared<ValueList>(*root.items);
  SetAt((*items)[path[depth]], path, depth + 1, std::move(value));
  root.items = std::move(items);
}

// `v` with its tensors, and those in tuples, cleared: what else a loop's body may not change.
// A tuple rebuilt in the body is a new object of the same shape: its source goes too.
Value WithoutTensors(const Value& v) {
  if (v.kind == Value::kTensor) return Value();
  if (v.kind != Value::kSeq || v.is_list || !v.items) return v;
  Value out = v;
  out.source = -1;
  auto items = std::make_shared<ValueList>();
  for (const Value& item : *v.items) items->push_back(WithoutTensors(item));
  out.items = std::move(items);
  return out;
}

std::vector<Value> WithoutTensors(const std::vector<Value>& vs) {
  std::vector<Value> out;
  for (const Value& v : vs) out.push_back(WithoutTensors(v));
  return out;
}

constexpr size_t kMaxTupleDepth = 4;

}  // namespace

bool Interp::FindWhileLoop(const Frame& f, size_t jump, WhileShape* shape) const {
  const Instr& j = f.instrs[jump];
  const size_t body = jump + 1, target = static_cast<size_t>(j.target);
  if (!IsConditionalForward(j.op) || target <= body + 1 || target > f.instrs.size()) return false;
  // The jump back to the body that ends a trip (the last one: the loop's whole extent).
  size_t back = 0;
  for (size_t i = body + 1; i < f.instrs.size(); ++i) {
    const Instr& in = f.instrs[i];
    const bool backward = IsConditionalBackward(in.op) || in.op == Opc::JUMP_BACKWARD ||
                          in.op == Opc::JUMP_BACKWARD_NO_INTERRUPT;
    if (backward && static_cast<size_t>(in.target) == body) back = i;
  }
  if (back == 0) return false;
  const size_t exit = back + 1;  // where the loop leaves to
  // A jump that leaves the loop may go straight where a JUMP_FORWARD at the exit goes (the
  // compiler threads jumps: a loop ending an `if` block jumps past the `else`).
  auto leaves = [&](size_t to) {
    return to == exit || (exit < f.instrs.size() && f.instrs[exit].op == Opc::JUMP_FORWARD &&
                          static_cast<size_t>(f.instrs[exit].target) == to);
  };
  if (!leaves(target)) return false;
  // The stay condition at the entry: the jump to the exit is not taken.
  shape->entry_stays_on_true = !JumpsOnTrue(j.op);
  const Instr& last = f.instrs[back];
  if (IsConditionalBackward(last.op)) {
    shape->end = back;  // 3.11: jumps back to the body while the condition holds
    shape->end_stays_on_true = JumpsOnTrue(last.op);
  } else if (IsConditionalForward(f.instrs[back - 1].op) && leaves(static_cast<size_t>(f.instrs[back - 1].target))) {
    shape->end = back - 1;  // 3.12, 3.13: leaves for the exit, else jumps back
    shape->end_stays_on_true = !JumpsOnTrue(f.instrs[back - 1].op);
  } else {
    return false;
  }
  shape->body = body;
  shape->exit = exit;
  return true;
}

bool Interp::LeavesLoop(const Frame& f, size_t pc) {
  if (open_loops_.empty() || open_loops_.back().frame != &f) return false;
  const WhileShape& loop = open_loops_.back().shape;
  if (pc >= loop.body && pc < loop.end) return false;  // `end` decides whether to go round again
  Fail(BreakCategory::kUnsupportedBytecode,
       "a jump out of a loop on a tensor (break, continue to its condition) in whole-graph mode",
       "keep the loop's exits in its condition");
  return true;
}

bool Interp::TruthNode(graph::NodeId cond, bool on_true, graph::NodeId* pred) {
  const TensorMeta meta = g().node(cond).meta;
  if (NumElements(meta.shape) != 1) {
    Fail(BreakCategory::kInvalidInput, absl::StrFormat(
        "bool: the truth value of a Tensor with %d elements (shape %s) is ambiguous, use all() or any()",
        NumElements(meta.shape), ShapeToString(meta.shape)));
    return false;
  }
  // A tensor's truth (nonzero, NaN included) as a 0-d bool.
  auto add = [&](graph::Op op, graph::Attrs attrs) {
    auto node = g().AddOp(op, {*pred}, std::move(attrs));
    if (!node.ok()) {
      Fail(BreakCategory::kInternal, std::string(node.status().message()));
      return false;
    }
    *pred = *node;
    return true;
  };
  *pred = cond;
  if (meta.dtype != DType::kBool && !add(graph::Op::kCast, CastTo(DType::kBool))) return false;
  if (!meta.shape.empty()) {
    graph::Attrs scalar;
    if (!add(graph::Op::kReshape, std::move(scalar))) return false;
  }
  return on_true || add(graph::Op::kLogicalNot, {});
}

bool Interp::TensorRange(const ValueList& args, Value* out) {
  if (args.empty() || args.size() > 3) {
    Fail(BreakCategory::kInvalidInput, absl::StrFormat("range expected 1 to 3 arguments, got %d", args.size()));
    return false;
  }
  int64_t step = 1;
  if (args.size() == 3) {
    const Value& st = args[2];
    if (st.kind == Value::kConst && PyLong_CheckExact(st.obj)) step = PyLong_AsLongLong(st.obj);
    if (st.kind != Value::kConst || !PyLong_CheckExact(st.obj) || PyErr_Occurred() || step == 0) {
      PyErr_Clear();
      Fail(BreakCategory::kDataDependent, "range() of tensors with a step that is not a nonzero Python int within 64 bits",
           "in whole-graph mode a loop over range() of tensors takes a fixed step");
      return false;
    }
    UseConst(st);
  }
  // The bounds as 0-d tensors of the first tensor bound's integer dtype.
  std::optional<DType> dtype;
  PyTypeObject* type = nullptr;
  for (size_t i = 0; i < std::min<size_t>(args.size(), 2); ++i) {
    if (args[i].kind != Value::kTensor) continue;
    const TensorMeta& m = g().node(args[i].node).meta;
    if (!IsInteger(m.dtype) || NumElements(m.shape) != 1) {
      Fail(BreakCategory::kInvalidInput, absl::StrFormat("range: a %s tensor of shape %s cannot be interpreted as an "
                                                         "integer", DTypeName(m.dtype), ShapeToString(m.shape)));
      return false;
    }
    if (!dtype) dtype = m.dtype, type = args[i].type;
  }
  auto bound = [&](const Value& v, graph::NodeId* node) {
    absl::StatusOr<graph::NodeId> made = graph::NodeId{-1};
    if (v.kind == Value::kTensor) {
      made = g().AddOp(graph::Op::kReshape, {v.node}, Shape{});
    } else if (v.kind == Value::kConst && PyLong_CheckExact(v.obj)) {
      UseConst(v);
      const long long x = PyLong_AsLongLong(v.obj);
      if (PyErr_Occurred()) {
        PyErr_Clear();
        Fail(BreakCategory::kInvalidInput, "range: a bound beyond 64 bits");
        return false;
      }
      made = g().AddConstant(Tensor::Scalar<int64_t>(x));
    } else {
      Fail(BreakCategory::kInvalidInput, "range: a bound that is neither an int nor an integer tensor");
      return false;
    }
    if (made.ok()) made = g().AddOp(graph::Op::kCast, {*made}, CastTo(*dtype));
    if (!made.ok()) {
      Fail(BreakCategory::kInternal, std::string(made.status().message()));
      return false;
    }
    *node = *made;
    return true;
  };
  graph::NodeId start, stop;
  if (args.size() == 1) {
    if (!bound(Value::Const(values_.Keep(PyLong_FromLong(0))), &start)) return false;
    if (!bound(args[0], &stop)) return false;
  } else if (!bound(args[0], &start) || !bound(args[1], &stop)) {
    return false;
  }
  *out = Value();
  out->kind = Value::kTensorRange;
  out->items = std::make_shared<ValueList>(ValueList{Value::Tensor(start, type), Value::Tensor(stop, type)});
  out->range_step = step;
  return true;
}

bool Interp::ForOverTensorRange(StepState& s, size_t pc) {
  Frame& f = s.f;
  const size_t exit = static_cast<size_t>(f.instrs[pc].target);
  // The trip ends at the jump back to FOR_ITER (the last one: a `continue` jumps there too).
  size_t end = 0;
  for (size_t i = exit; i-- > pc + 1 && end == 0;) {
    const Instr& in = f.instrs[i];
    if ((in.op == Opc::JUMP_BACKWARD || in.op == Opc::JUMP_BACKWARD_NO_INTERRUPT) && static_cast<size_t>(in.target) == pc) {
      end = i;
    }
  }
  if (end == 0) {
    Fail(BreakCategory::kUnsupportedBytecode, "a for loop over range() of tensors whose end pijit does not recognise");
    return false;
  }
  WhileShape shape;
  shape.body = pc + 1;
  shape.end = end;
  shape.exit = exit;
  const Value range = f.stack.back();
  const LoopCounter counter{(*range.items)[0], (*range.items)[1].node, range.range_step};
  auto stay = g().AddOp(range.range_step > 0 ? graph::Op::kLess : graph::Op::kGreater, {counter.start.node, counter.stop});
  if (!stay.ok()) {
    Fail(BreakCategory::kInternal, std::string(stay.status().message()));
    return false;
  }
  return CaptureLoop(s, *stay, shape, &counter);
}

bool Interp::LoopOnTensor(StepState& s, const Value& cond, const WhileShape& shape) {
  graph::NodeId stay;
  if (!TruthNode(cond.node, shape.entry_stays_on_true, &stay)) return false;
  return CaptureLoop(s, stay, shape, nullptr);
}

bool Interp::CaptureLoop(StepState& s, graph::NodeId stay, const WhileShape& shape, const LoopCounter* counter) {
  Frame& f = s.f;
  const std::vector<Value> locals = f.locals, stack = f.stack;
  const size_t first_node = g().nodes().size();
  // Stand-ins for the tensors the body may change: the body's parameters once it is captured.
  // A tensor in a local or on the stack, or inside tuples held there, is a slot.
  std::vector<LoopSlot> slots;
  std::vector<size_t> path;
  std::function<bool(bool, size_t, const Value&)> add_slot = [&](bool local, size_t i, const Value& v) {
    if (v.kind == Value::kSeq && !v.is_list && v.items && path.size() < kMaxTupleDepth) {
      for (size_t k = 0; k < v.items->size(); ++k) {
        path.push_back(k);
        const bool ok = add_slot(local, i, (*v.items)[k]);
        path.pop_back();
        if (!ok) return false;
      }
      return true;
    }
    if (v.kind != Value::kTensor) return true;
    auto node = g().AddOp(graph::Op::kCast, {v.node}, CastTo(g().node(v.node).meta.dtype));
    if (!node.ok()) {
      Fail(BreakCategory::kInternal, std::string(node.status().message()));
      return false;
    }
    slots.push_back({local, i, v, *node, path});
    Value stand_in = v;
    stand_in.node = *node;
    if (i != kCounterSlot) SetAt(local ? f.locals[i] : f.stack[i], path, 0, std::move(stand_in));
    return true;
  };
  for (size_t i = 0; i < locals.size(); ++i)
    if (!add_slot(true, i, locals[i])) return false;
  for (size_t i = 0; i < stack.size(); ++i)
    if (!add_slot(false, i, stack[i])) return false;
  if (counter) {
    // The item FOR_ITER pushes: a carried value of its own, outside the frame.
    if (!add_slot(false, kCounterSlot, counter->start)) return false;
    f.stack.push_back(Value::Tensor(slots.back().stand_in, counter->start.type));
  }
  // Everything else the body could change, to compare after it.
  const size_t state_before = FingerprintOf(WithoutTensors(locals), WithoutTensors(stack));
  const size_t effects_before = effects_.size(), pending_before = effects_.pending_stores(),
               customs_before = customs_.size();
  // The body, then the condition, up to the jump that decides whether to go round again.
  open_loops_.push_back({&f, shape});
  struct Close {
    std::vector<OpenLoop>& loops;
    ~Close() { loops.pop_back(); }
  } close{open_loops_};
  for (size_t pc = shape.body; pc != shape.end;) {
    if (LeavesLoop(f, pc)) return false;
    if (++steps_ > kMaxSteps) {
      Fail(BreakCategory::kTooLong, absl::StrFormat("capture stopped after %d bytecode steps", kMaxSteps));
      return false;
    }
    cur_offset_ = f.instrs[pc].offset;
    bool returned = false;
    Value ignored;
    if (!Step(f, pc, &returned, &ignored)) return false;
    if (returned) {
      Fail(BreakCategory::kUnsupportedBytecode, "a return from a loop on a tensor in whole-graph mode",
           "keep the result in a variable and return after the loop");
      return false;
    }
  }
  graph::NodeId stay_again, next_count = -1;
  if (!GoRoundAgain(f, shape, counter, counter ? slots.back().stand_in : -1, &stay_again, &next_count)) return false;
  if (effects_.size() != effects_before || effects_.pending_stores() != pending_before ||
      customs_.size() != customs_before) {
    Fail(BreakCategory::kSideEffect, "a loop on a tensor has a side effect (a store, a print, a Cell with a bprop)",
         "in whole-graph mode a loop on a tensor computes tensors only: keep side effects out of it");
    return false;
  }
  if (f.stack.size() != stack.size() || f.locals.size() != locals.size()) {
    Fail(BreakCategory::kInternal, "a loop on a tensor leaves a stack of another depth");
    return false;
  }
  auto name_of = [&](const LoopSlot& slot) {
    if (slot.index == kCounterSlot) return std::string("the loop's counter");
    std::string name = "a value on the stack";
    if (slot.local) {
      const char* local = PyUnicode_AsUTF8(PyTuple_GET_ITEM(f.code->co_localsplusnames, slot.index));
      name = absl::StrFormat("`%s`", local ? local : "?");
    }
    for (size_t k : slot.path) name += absl::StrFormat("[%d]", k);
    return name;
  };
  for (size_t i = 0; i < locals.size(); ++i) {
    // A variable the body assigns first (a temporary of the body) is left unassigned after the
    // loop, where Python leaves it holding its value from the last trip, if there was one.
    if (locals[i].kind == Value::kUndef) {
      f.locals[i] = Value();
      continue;
    }
    if ((locals[i].kind == Value::kTensor) != (f.locals[i].kind == Value::kTensor)) {
      const char* name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(f.code->co_localsplusnames, i));
      Fail(BreakCategory::kDataDependent,
           absl::StrFormat("`%s` is %s before a loop on a tensor and %s after its body", name ? name : "?",
                           locals[i].kind == Value::kTensor ? "a tensor" : "not a tensor",
                           f.locals[i].kind == Value::kTensor ? "a tensor" : "not a tensor"),
           "in whole-graph mode the values a loop on a tensor carries are tensors of one dtype and shape");
      return false;
    }
  }
  if (FingerprintOf(WithoutTensors(f.locals), WithoutTensors(f.stack)) != state_before) {
    Fail(BreakCategory::kDataDependent,
         "a loop on a tensor changes a Python value (a counter, a container)",
         "in whole-graph mode a loop on a tensor carries tensors only: make the counter a Tensor "
         "(i = ops.zeros((), ms.int32) before the loop)");
    return false;
  }
  // The carried values: the slots whose tensor the body changed (same dtype and shape).
  std::vector<const LoopSlot*> carried;
  std::vector<Value> after;
  for (const LoopSlot& slot : slots) {
    const Value* at = slot.index == kCounterSlot
                          ? nullptr
                          : ValueAt(slot.local ? f.locals[slot.index] : f.stack[slot.index], slot.path);
    const Value now = slot.index == kCounterSlot ? Value::Tensor(next_count, slot.before.type)
                      : at                       ? *at
                                                 : Value();
    if (now.kind != Value::kTensor) {
      Fail(BreakCategory::kDataDependent, absl::StrFormat("%s is a tensor before a loop on a tensor "
                                                          "but not after its body", name_of(slot)));
      return false;
    }
    if (now.node == slot.stand_in) continue;
    const TensorMeta& a = g().node(slot.before.node).meta;
    const TensorMeta& b = g().node(now.node).meta;
    if (!(a == b)) {
      Fail(BreakCategory::kDataDependent,
           absl::StrFormat("%s is %s%s before a loop on a tensor and %s%s after its body", name_of(slot),
                           DTypeName(a.dtype), ShapeToString(a.shape), DTypeName(b.dtype), ShapeToString(b.shape)),
           "in whole-graph mode a loop on a tensor keeps each value's dtype and shape");
      return false;
    }
    carried.push_back(&slot);
    after.push_back(now);
  }
  f.locals = locals;
  f.stack = stack;
  std::vector<Value> results;
  if (!MoveBodyIntoLoop(stay, stay_again, first_node, slots, carried, after, &results)) return false;
  for (size_t i = 0; i < carried.size(); ++i) {
    const LoopSlot& slot = *carried[i];
    if (slot.index != kCounterSlot) SetAt((slot.local ? f.locals : f.stack)[slot.index], slot.path, 0, results[i]);
  }
  if (counter) f.stack.pop_back();  // the exhausted range, as FOR_ITER leaves it
  s.next = shape.exit;
  return true;
}

bool Interp::GoRoundAgain(Frame& f, const WhileShape& shape, const LoopCounter* counter, graph::NodeId count,
                          graph::NodeId* stay_again, graph::NodeId* next_count) {
  if (!counter) {  // the loop's condition, on the stack
    Value again;
    if (!Pop(f, &again)) return false;
    if (again.kind != Value::kTensor) {
      Fail(BreakCategory::kDataDependent, "the condition of a while loop on a tensor is not a tensor after the body");
      return false;
    }
    return TruthNode(again.node, shape.end_stays_on_true, stay_again);
  }
  // The counter's next value against the range's end.
  const DType dtype = g().node(count).meta.dtype;
  auto step = g().AddOp(graph::Op::kCast, {g().AddConstant(Tensor::Scalar<int64_t>(counter->step))}, CastTo(dtype));
  auto next = step.ok() ? g().AddOp(graph::Op::kAdd, {count, *step}) : step;
  auto more = next.ok() ? g().AddOp(counter->step > 0 ? graph::Op::kLess : graph::Op::kGreater, {*next, counter->stop})
                        : next;
  if (!more.ok()) {
    Fail(BreakCategory::kInternal, std::string(more.status().message()));
    return false;
  }
  *next_count = *next;
  *stay_again = *more;
  return true;
}

bool Interp::MoveBodyIntoLoop(graph::NodeId stay, graph::NodeId stay_again, size_t first_node,
                              const std::vector<LoopSlot>& slots, const std::vector<const LoopSlot*>& carried,
                              const std::vector<Value>& after, std::vector<Value>* results) {
  graph::Graph& outer = g();
  const size_t count = outer.nodes().size();
  // The body graph: the carried values' parameters first, then one per value from outside
  // the body it reads (nodes from before the loop, inputs first read in the body, stand-ins
  // of the tensors it leaves as they were), in the order it first reads them.
  graph::Graph body;
  absl::flat_hash_map<graph::NodeId, graph::NodeId> inside;  // outer id -> body id
  std::vector<graph::NodeId> invariants;                   // outer ids, in parameter order
  absl::flat_hash_map<graph::NodeId, graph::NodeId> unchanged;  // stand-in -> its value before the loop
  for (const LoopSlot* c : carried) inside[c->stand_in] = body.AddParam(outer.node(c->stand_in).meta);
  for (const LoopSlot& slot : slots)
    if (!inside.contains(slot.stand_in)) unchanged[slot.stand_in] = slot.before.node;
  auto map = [&](graph::NodeId id) {
    if (auto it = inside.find(id); it != inside.end()) return it->second;
    graph::NodeId from_outside = id;
    if (auto u = unchanged.find(id); u != unchanged.end()) from_outside = u->second;
    const graph::NodeId p = body.AddParam(outer.node(id).meta);
    invariants.push_back(from_outside);
    inside[id] = p;
    return p;
  };
  for (size_t id = first_node; id < count; ++id) {
    const graph::Node& n = outer.node(static_cast<graph::NodeId>(id));
    if (n.op == graph::Op::kParam || inside.contains(static_cast<graph::NodeId>(id)) ||
        unchanged.contains(static_cast<graph::NodeId>(id))) {
      continue;
    }
    graph::NodeId added;
    if (!AddMappedNode(body, n, map, &added)) return false;
    inside[static_cast<graph::NodeId>(id)] = added;
  }
  std::vector<graph::NodeId> outs;
  for (const Value& v : after) outs.push_back(map(v.node));
  outs.push_back(map(stay_again));
  body.SetOutputs(std::move(outs));
  // The outer graph keeps what came before the loop and the inputs the body read first.
  const std::vector<graph::NodeId> new_id = DropNodesFrom(first_node);
  std::vector<graph::NodeId> inputs{stay};
  for (const LoopSlot* c : carried) inputs.push_back(c->before.node);
  for (graph::NodeId v : invariants) inputs.push_back(new_id[v]);
  std::vector<graph::Graph> graphs;
  graphs.push_back(std::move(body));
  auto loop = graph::AppendRegion(outer, graph::Op::kWhileLoop, inputs, std::move(graphs),
                                  static_cast<int64_t>(carried.size()));
  if (!loop.ok()) {
    Fail(BreakCategory::kInternal, std::string(loop.status().message()));
    return false;
  }
  for (size_t i = 0; i < carried.size(); ++i) results->push_back(Value::Tensor((*loop)[i], after[i].type));
  return true;
}

std::vector<graph::NodeId> Interp::DropNodesFrom(size_t first_node) {
  graph::Graph& outer = g();
  const size_t count = outer.nodes().size();
  std::vector<bool> keep(count, false);
  std::vector<graph::NodeId> new_id(count, -1);
  graph::NodeId next = 0;
  for (size_t id = 0; id < count; ++id) {
    keep[id] = id < first_node;
    if (keep[id] || outer.node(static_cast<graph::NodeId>(id)).op == graph::Op::kParam) new_id[id] = next++;
  }
  outer.Compact(keep);
  values_.RenumberNodes(first_node, new_id);  // the node ids it keeps by source and object
  return new_id;
}

}  // namespace pijit::bytecode
