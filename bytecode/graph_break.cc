// Graph breaks: at the instruction where capture stops, record how to rebuild the value
// stack and the locals in Python, so that the dispatcher can run the graph of the prefix,
// execute the instruction itself and continue in a resume function.
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "bytecode/interp.h"
#include "bytecode/bridge.h"
#include "bytecode/resume.h"
#include "interop/convert.h"

namespace pijit::bytecode {

namespace {

// Adds the iterators reachable from `v` (inside tuples and lists too) to `out`.
void CollectIterators(const Value& v, absl::flat_hash_set<const ValueList*>* out) {
  if ((v.kind != Value::kIter && v.kind != Value::kSeq) || !v.items) return;
  if (v.kind == Value::kIter && !out->insert(v.items.get()).second) return;
  for (const Value& item : *v.items) CollectIterators(item, out);
}

}  // namespace

bool Interp::TakesFromLiveIterator(const Value& v) const {
  // Python gets a new iterator for each value it is handed: a zip or enumerate handed over
  // beside an iterator it takes from would no longer advance it.
  for (const Value& src : v.link->sources) {
    if (live_iters_.contains(src.items.get())) return true;
    if (src.link && TakesFromLiveIterator(src)) return true;
  }
  return false;
}

bool Interp::MakeBreakSpec(const Value& v, OutputSpec* spec) {
  switch (v.kind) {
    case Value::kNull:
      spec->kind = OutputSpec::kNull;
      return true;
    case Value::kUndef:
      spec->kind = OutputSpec::kUnbound;
      return true;
    case Value::kConst:
      if (v.number && v.source < 0) return MakeOutput(v, spec);
      if (v.source >= 0) {
        spec->kind = OutputSpec::kSource;
        spec->index = v.source;
        return true;
      }
      return ConstantOutput(v, spec);
    case Value::kTensor:
    case Value::kDict:
    case Value::kObject:
      return MakeOutput(v, spec);
    case Value::kSeq:
    case Value::kIter:
      if (v.opaque) return false;
      if (v.kind == Value::kSeq && v.source >= 0) {  // the caller's tuple or list itself
        spec->kind = OutputSpec::kSource;
        spec->index = v.source;
        return true;
      }
      if (values_.MemoRef(v, spec)) return true;
      if (v.link && TakesFromLiveIterator(v)) return false;
      if (v.kind == Value::kIter && v.iter_list) {
        Value list = Value::Seq({}, true);
        list.items = v.iter_list;
        list.source = v.iter_list_source;
        spec->kind = OutputSpec::kListIterator;
        spec->constant = PyLong_FromSsize_t(v.iter_total - static_cast<Py_ssize_t>(v.items->size()));
        spec->items.emplace_back();
        return spec->constant != nullptr && MakeBreakSpec(list, &spec->items.back());
      }
      if (v.kind == Value::kIter && v.iter_dict >= 0) {
        spec->kind = OutputSpec::kDictIterator;
        spec->index = v.iter_dict;
        spec->constant = PyLong_FromSsize_t(v.iter_total - static_cast<Py_ssize_t>(v.items->size()));
        return spec->constant != nullptr;
      }
      spec->kind = v.kind == Value::kIter ? OutputSpec::kIterator
                   : v.is_list            ? OutputSpec::kList
                                          : OutputSpec::kTuple;
      return ItemOutputs(v, &Interp::MakeBreakSpec, spec);
    case Value::kTensorMethod:
      spec->kind = OutputSpec::kMethod;
      spec->constant = PyUnicode_FromString(PyOpName(v.method));
      return true;
    case Value::kBuiltinMethod:
      if (!v.cell || v.cell->kind != Value::kConst) return false;
      spec->kind = OutputSpec::kBoundMethod;
      spec->constant = v.obj;
      Py_INCREF(v.obj);
      spec->items.emplace_back();
      return MakeBreakSpec(*v.cell, &spec->items.back());
    default:
      return false;  // cells and functions made during capture stay in the trace
  }
}

void Interp::BuildBreak() {
  const BreakReason reason = out_->reason;
  if (BreakCategoryIsCallError(reason.category) || reason.category == BreakCategory::kInternal ||
      reason.category == BreakCategory::kTooLong || !root_frame_) {
    return;  // user errors surface from the eager run; the rest runs eagerly too
  }
  Frame& f = *root_frame_;
  const std::vector<Instr>& code = f.instrs;
  const Instr& in = code[root_pc_];
  if (f.code->co_ncellvars > 0) return;
  // Breaking pays off only around tensor work (tensor arguments are parameters from the
  // start); plain Python code simply runs.
  if (g().params().empty() && g().num_ops() == 0) return;
  // Breaks inside loops, `with` and `try` blocks need nothing special here: the bridge returns
  // to a driver loop (no recursion per iteration), and an exception the instruction raises is
  // sent to the handler of its exception-table range (runtime/continuation.cc).

  // Nodes and parameters the failed instruction added (a partly inlined call) must not run
  // in the prefix: the bridge runs the whole instruction again (random draws, assigns).
  g().TruncateTo(root_nodes_);
  out_->param_sources.resize(root_params_);
  out_->param_numbers.resize(root_params_);
  values_.ForgetNodesFrom(root_nodes_);
  auto brk = std::make_unique<BreakInfo>();
  brk->index = static_cast<int32_t>(root_pc_);
  brk->op = in.op;
  brk->arg = in.arg;
  brk->offset = in.offset;
  brk->next_offset = root_pc_ + 1 < code.size() ? code[root_pc_ + 1].offset : in.next_offset;
  brk->jump_offset = in.target >= 0 ? code[in.target].offset : -1;
  brk->reason = reason;
  brk->line = PyCode_Addr2Line(f.code, in.offset * 2);
  if (root_kwnames_) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(f.code->co_consts); ++i)
      if (PyTuple_GET_ITEM(f.code->co_consts, i) == root_kwnames_) brk->kwnames_index = static_cast<int32_t>(i);
    if (brk->kwnames_index < 0) return;
  }
  BridgeSpec probe;
  probe.op = in.op;
  probe.arg = in.arg;
  for (const Value& v : root_stack_) probe.stack_null.push_back(v.kind == Value::kNull);
  if (BridgeOutcomes(probe).empty()) return;  // not an instruction a bridge can run
  // Graph outputs for the break must not disturb the failed instruction's half-built nodes;
  // they are unused and pure.
  // Effects before the instruction are replayed before the bridge runs it.
  if (!MakeEffects(effects_.root_count())) return;
  live_iters_.clear();
  for (const Value& v : root_stack_) CollectIterators(v, &live_iters_);
  for (const Value& v : root_locals_) CollectIterators(v, &live_iters_);
  for (const Value& v : root_stack_) {
    brk->stack.emplace_back();
    if (!MakeBreakSpec(v, &brk->stack.back())) return;
  }
  for (int i = 0; i < f.code->co_nlocals; ++i) {
    brk->locals.emplace_back();
    if (!MakeBreakSpec(root_locals_[i], &brk->locals.back())) return;
  }
  g().SetOutputs(values_.outputs());
  out_->num_memo = values_.num_memo();
  out_->brk = std::move(brk);
}

}  // namespace pijit::bytecode
