#include "runtime/continuation.h"

#include "absl/strings/str_format.h"
#include "bytecode/bridge.h"
#include "bytecode/resume.h"
#include "frame_eval/eval_frame.h"
#include "interop/convert.h"
#include "runtime/dispatch.h"
#include "runtime/tape.h"

namespace pijit {

using bytecode::BreakInfo;
using bytecode::OutputSpec;

namespace {
// A tuple, a list, or an iterator over a new tuple (BuildValue).
PyObject* BuildSequence(const OutputSpec& spec, BuildContext& cx) {
  switch (spec.kind) {
    case OutputSpec::kTuple:
    case OutputSpec::kList:
    case OutputSpec::kIterator: {
      const Py_ssize_t n = static_cast<Py_ssize_t>(spec.items.size());
      PyObject* seq = spec.kind == OutputSpec::kList ? PyList_New(n) : PyTuple_New(n);
      if (!seq) return nullptr;
      // The memo holds what aliases refer to: the sequence, or for an iterator the iterator
      // itself (set once it exists: its items cannot hold it).
      const bool iterator = spec.kind == OutputSpec::kIterator;
      // A namedtuple (`constant`: its class) is made from the built tuple.
      const bool named = spec.kind == OutputSpec::kTuple && spec.constant && PyType_Check(spec.constant);
      if (!iterator && !named) cx.Remember(spec.memo, seq);
      for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject* item = BuildValue(spec.items[i], cx);
        if (!item) {
          if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "pijit: NULL inside a sequence");
          Py_DECREF(seq);
          return nullptr;
        }
        if (spec.kind == OutputSpec::kList) PyList_SET_ITEM(seq, i, item);
        else PyTuple_SET_ITEM(seq, i, item);
      }
      if (named) {
        // No Python code runs (a frame here could be captured in turn).
        PyObject* nt = NamedTupleOf(spec.constant, seq);
        Py_DECREF(seq);
        if (nt) cx.Remember(spec.memo, nt);
        return nt;
      }
      if (!iterator) return seq;
      PyObject* it = PyObject_GetIter(seq);
      Py_DECREF(seq);
      if (it) cx.Remember(spec.memo, it);
      return it;
    }
    default:
      break;
  }
  return nullptr;
}

// Iterator `it` (null: failed) advanced past the spec.constant items the trace took, and
// remembered in its memo slot; null with SystemError(`too_short`) when it has fewer.
PyObject* AdvancedIterator(PyObject* it, const OutputSpec& spec, BuildContext& cx,
                           const char* too_short) {
  const Py_ssize_t skip = it ? PyLong_AsSsize_t(spec.constant) : 0;
  for (Py_ssize_t i = 0; it && i < skip; ++i) {
    PyObject* item = PyIter_Next(it);
    if (!item) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, too_short);
      Py_CLEAR(it);
      break;
    }
    Py_DECREF(item);
  }
  if (it) cx.Remember(spec.memo, it);
  return it;
}

// A list or dict iterator, advanced to where the trace left it (BuildValue).
PyObject* BuildIterator(const OutputSpec& spec, BuildContext& cx) {
  switch (spec.kind) {
    case OutputSpec::kListIterator: {
      // The list (shared with the locals that name it) and its own iterator, advanced past
      // the items the trace took.
      PyObject* list = BuildValue(spec.items[0], cx);
      PyObject* it = list ? PyObject_GetIter(list) : nullptr;
      Py_XDECREF(list);
      return AdvancedIterator(it, spec, cx, "pijit: a list shorter than its loop");
    }
    case OutputSpec::kDictIterator: {
      // The keys the trace took are taken again from the dict's own iterator (the dict is
      // as it was on entry: the trace records no mutation of it after the loop began).
      PyObject* it = PyObject_GetIter(cx.values[spec.index]);
      return AdvancedIterator(it, spec, cx, "pijit: a dict shorter than its guarded keys");
    }
    default:
      break;
  }
  return nullptr;
}

// `target` with spec.items[first], ... stored by `store` under the names in spec.constant (a
// dict's keys, an object's attributes); null (target released) when one cannot be built or
// stored, with `null_item` as the error where none is set.
PyObject* StoreItems(PyObject* target, const OutputSpec& spec, size_t first, BuildContext& cx,
                     int (*store)(PyObject*, PyObject*, PyObject*), const char* null_item) {
  for (size_t i = first; i < spec.items.size(); ++i) {
    PyObject* v = BuildValue(spec.items[i], cx);
    if (!v || store(target, PyTuple_GET_ITEM(spec.constant, i - first), v) < 0) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, null_item);
      Py_XDECREF(v);
      Py_DECREF(target);
      return nullptr;
    }
    Py_DECREF(v);
  }
  return target;
}

// A dict, or an object made in the trace (BuildValue).
PyObject* BuildMapping(const OutputSpec& spec, BuildContext& cx) {
  switch (spec.kind) {
    case OutputSpec::kDict: {
      PyObject* d = PyDict_New();
      if (!d) return nullptr;
      cx.Remember(spec.memo, d);
      return StoreItems(d, spec, 0, cx, PyDict_SetItem, "pijit: NULL inside a dict");
    }
    case OutputSpec::kObject: {
      // object.__new__(cls), then each attribute stored as plain instance data (the class
      // has no __setattr__: capture checked).
      PyObject* cls = BuildValue(spec.items[0], cx);
      PyObject* none = PyTuple_New(0);
      // An exception made in the trace is made by its class's own __new__ (BaseException's:
      // capture checked), and its `args` is then set through BaseException's descriptor.
      newfunc make = cls && PyExceptionClass_Check(cls) ? reinterpret_cast<PyTypeObject*>(cls)->tp_new
                                                        : PyBaseObject_Type.tp_new;
      PyObject* o = cls && none ? make(reinterpret_cast<PyTypeObject*>(cls), none, nullptr) : nullptr;
      Py_XDECREF(none);
      Py_XDECREF(cls);
      if (!o) return nullptr;
      cx.Remember(spec.memo, o);
      return StoreItems(o, spec, 1, cx, PyObject_GenericSetAttr, "pijit: NULL attribute");
    }
    default:
      break;
  }
  return nullptr;
}

}  // namespace

PyObject* BuildValue(const OutputSpec& spec, BuildContext& cx) {
  switch (spec.kind) {
    case OutputSpec::kGraphOutput: {
      PyObject*& o = cx.made[spec.index];
      if (!o) o = WrapTensor(cx.outs[spec.index]);
      Py_XINCREF(o);
      return o;
    }
    case OutputSpec::kGraphNumber: {
      const Tensor& t = cx.outs[spec.index];
      if (spec.constant == reinterpret_cast<PyObject*>(&PyFloat_Type))
        return PyFloat_FromDouble(*t.Contiguous().data<double>());
      return PyLong_FromLongLong(*t.Contiguous().data<int64_t>());
    }
    case OutputSpec::kSource:
      Py_INCREF(cx.values[spec.index]);
      return cx.values[spec.index];
    case OutputSpec::kConstant: {
      // A NumPy array whole-graph mode computed at compile time (JIT Fallback): a copy on
      // each call, as eager code makes a new array each time.
      if (IsNumpyArray(spec.constant)) {
        PyObject* copy = PyObject_CallMethod(spec.constant, "copy", nullptr);
        if (copy) cx.Remember(spec.memo, copy);  // one copy wherever the array appears
        return copy;
      }
      if (!PySet_CheckExact(spec.constant)) {
        Py_INCREF(spec.constant);
        return spec.constant;
      }
      // A set computed at capture time: a new one on each call, shared where it was shared.
      PyObject* set = PySet_New(spec.constant);
      if (set) cx.Remember(spec.memo, set);
      return set;
    }
    case OutputSpec::kRef: {
      PyObject* o = spec.index < static_cast<int32_t>(cx.memo.size()) ? cx.memo[spec.index] : nullptr;
      if (!o) {
        PyErr_SetString(PyExc_SystemError, "pijit: reference to a container not built yet");
        return nullptr;
      }
      Py_INCREF(o);
      return o;
    }
    case OutputSpec::kMethod:
      return PyObject_GetAttr(reinterpret_cast<PyObject*>(g_tensor_type), spec.constant);
    case OutputSpec::kBoundMethod: {
      PyObject* owner = BuildValue(spec.items[0], cx);
      if (!owner) return nullptr;
      PyObject* m = PyObject_GetAttr(owner, spec.constant);
      Py_DECREF(owner);
      return m;
    }
    case OutputSpec::kNull:
    case OutputSpec::kUnbound:
      return nullptr;
    case OutputSpec::kTuple:
    case OutputSpec::kList:
    case OutputSpec::kIterator:
      return BuildSequence(spec, cx);
    case OutputSpec::kListIterator:
    case OutputSpec::kDictIterator:
      return BuildIterator(spec, cx);
    case OutputSpec::kDict:
    case OutputSpec::kObject:
      return BuildMapping(spec, cx);
  }
  return nullptr;
}

namespace {

// One recorded effect on `target` (see bytecode::Effect) with the value `v`.
int ApplyEffect(const bytecode::Effect& e, PyObject* target, PyObject* v) {
  using bytecode::Effect;
  PyObject* name = e.name.constant;
  switch (e.kind) {
    case Effect::kSetAttr: return PyObject_SetAttr(target, name, v);
    case Effect::kDelAttr: return PyObject_DelAttr(target, name);
    case Effect::kSetItem:
      if (PyDict_Check(target)) return PyDict_SetItem(target, name, v);
      break;
    case Effect::kDelItem:
      if (PyDict_Check(target)) return PyDict_DelItem(target, name);
      if (PyList_Check(target)) return PySequence_DelItem(target, PyLong_AsSsize_t(name));
      break;
    case Effect::kInsert:
      if (PyList_Check(target)) {
        const Py_ssize_t i = PyLong_AsSsize_t(name);
        if (i == -1 && PyErr_Occurred()) return -1;
        return PyList_Insert(target, i, v);
      }
      break;
    case Effect::kAppend:
      if (PyList_Check(target)) return PyList_Append(target, v);
      break;
    case Effect::kSetCell: {
      PyObject* closure = PyFunction_Check(target) ? PyFunction_GET_CLOSURE(target) : nullptr;
      const Py_ssize_t i = PyLong_AsSsize_t(name);
      if (closure && i >= 0 && i < PyTuple_GET_SIZE(closure))
        return PyCell_Set(PyTuple_GET_ITEM(closure, i), v);
      break;
    }
    case Effect::kCall: {
      PyObject* r = PyTuple_Check(v) ? PyObject_Call(target, v, name) : nullptr;
      if (!r) break;
      Py_DECREF(r);
      return 0;
    }
    case Effect::kSetGlobal:
    case Effect::kDelGlobal:
      break;
  }
  if (PyErr_Occurred()) return -1;
  PyErr_SetString(PyExc_SystemError, "pijit: an effect on a value of another type");
  return -1;
}

}  // namespace

bool ReplayEffects(const std::vector<bytecode::Effect>& effects, BuildContext& cx, PyObject* func) {
  using bytecode::Effect;
  for (const Effect& e : effects) {
    PyObject* v = BuildValue(e.value, cx);
    if (!v) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "pijit: an effect without a value");
      return false;
    }
    int rc = -1;
    if (e.kind == Effect::kSetGlobal) {
      rc = PyDict_SetItem(PyFunction_GET_GLOBALS(func), e.name.constant, v);
    } else if (e.kind == Effect::kDelGlobal) {
      rc = PyDict_DelItem(PyFunction_GET_GLOBALS(func), e.name.constant);
      if (rc < 0 && PyErr_ExceptionMatches(PyExc_KeyError)) {
        PyErr_Clear();  // as DELETE_GLOBAL words it
        PyErr_Format(PyExc_NameError, "name '%U' is not defined", e.name.constant);
      }
    } else if (e.target.kind == bytecode::OutputSpec::kNull) {
      rc = ApplyEffect(e, func, v);  // a closure cell of the called function
    } else if (PyObject* target = BuildValue(e.target, cx)) {
      rc = ApplyEffect(e, target, v);
      Py_DECREF(target);
    }
    Py_DECREF(v);
    if (rc < 0) return false;
  }
  return true;
}

namespace {

// Owned references, NULL allowed.
struct Refs {
  std::vector<PyObject*> v;
  ~Refs() {
    for (PyObject* o : v) Py_XDECREF(o);
  }
};

// A code object generated from `origin` (cached in its state), marked as what it is.
PyObject* Generated(PyCodeObject* origin, PyObject* code, int32_t shift, bool resume) {
  runtime::CodeState* st = runtime::GetCodeState(reinterpret_cast<PyCodeObject*>(code), true);
  if (st && !st->origin.get()) {
    Py_INCREF(origin);
    st->origin = runtime::OwnedRef(reinterpret_cast<PyObject*>(origin));
    st->origin_shift = shift;
    st->capture_always = resume;
    st->skip = !resume;  // a bridge only runs its instruction
  }
  return code;
}

// A code object that could not be made, as a SystemError naming `what` it was.
PyObject* CodegenError(const char* what, const absl::Status& status) {
  PyErr_Format(PyExc_SystemError, "pijit: cannot build %s: %s", what,
               std::string(status.message()).c_str());
  return nullptr;
}

PyObject* ResumeCodeFor(runtime::CodeState* st, PyCodeObject* code, const bytecode::ResumeSpec& spec) {
  for (const auto& r : st->resumes)
    if (r.spec == spec) return r.code.get();
  auto made = bytecode::MakeResumeCode(code, spec);
  if (!made.ok()) return CodegenError("a resume function", made.status());
  st->resumes.push_back({spec, runtime::OwnedRef(*made)});
  // A resume function is its prologue followed by the original code: the prologue's length
  // (in code units) maps its instructions back to the original's.
  const int32_t shift = static_cast<int32_t>(Py_SIZE(reinterpret_cast<PyObject*>(*made)) -
                                             Py_SIZE(reinterpret_cast<PyObject*>(code)));
  return Generated(code, *made, shift, true);
}

PyObject* BridgeCodeFor(runtime::CodeState* st, PyCodeObject* code, const bytecode::BridgeSpec& spec) {
  const std::string key = spec.Key();
  for (const auto& b : st->bridges)
    if (b.key == key) return b.code.get();
  auto made = bytecode::MakeBridgeCode(code, spec);
  if (!made.ok()) return CodegenError("a graph-break bridge", made.status());
  st->bridges.push_back({key, runtime::OwnedRef(*made)});
  return Generated(code, *made, 0, false);
}

PyObject* MakeFunction(PyObject* code, PyObject* like) {
  PyObject* fn = PyFunction_NewWithQualName(code, PyFunction_GET_GLOBALS(like),
                                            reinterpret_cast<PyCodeObject*>(code)->co_qualname);
  if (!fn) return nullptr;
  if (PyObject* closure = PyFunction_GET_CLOSURE(like)) {
    if (PyFunction_SetClosure(fn, closure) < 0) {
      Py_DECREF(fn);
      return nullptr;
    }
  }
  return fn;
}

// Where a break's code objects come from: the original code (breaks in generated code map
// back to it) and the shift of the generated code's instruction offsets.
struct Origin {
  PyCodeObject* code;
  runtime::CodeState* state;
  int32_t shift;
};

bool OriginOf(runtime::CodeState* st, PyCodeObject* code, Origin* o) {
  *o = {code, st, 0};
  if (st->origin.get()) {
    o->code = reinterpret_cast<PyCodeObject*>(st->origin.get());
    o->state = runtime::GetCodeState(o->code, true);
    o->shift = st->origin_shift;
    if (!o->state) {
      PyErr_SetString(PyExc_SystemError, "pijit: no code state for the original code");
      return false;
    }
  }
  return true;
}

// The bridge and resume code objects a break needs, from the NULL slots of its stack and
// the unbound locals (both known when the break is captured).
bool BreakCodes(const BreakInfo& b, const Origin& o, runtime::PreparedBreak* out) {
  auto own = [](PyObject* borrowed) { return runtime::OwnedRef(Py_NewRef(borrowed)); };
  bytecode::BridgeSpec bs;
  bs.op = b.op;
  bs.arg = b.arg;
  bs.line = b.line;
  bs.kwnames_index = b.kwnames_index;
  for (const OutputSpec& spec : b.stack) bs.stack_null.push_back(spec.kind == OutputSpec::kNull);
  const auto outcomes = bytecode::BridgeOutcomes(bs);
  PyObject* bridge = BridgeCodeFor(o.state, o.code, bs);
  if (!bridge) return false;
  out->bridge = own(bridge);
  out->nlocals = o.code->co_nlocals;
  std::vector<int> unbound;
  for (int i = 0; i < o.code->co_nlocals && i < static_cast<int>(b.locals.size()); ++i)
    if (b.locals[i].kind == OutputSpec::kUnbound) unbound.push_back(i);
  out->resumes.clear();
  for (size_t k = 0; k < outcomes.size(); ++k) {
    bytecode::ResumeSpec rs;
    rs.offset = (k == 0 ? b.next_offset : b.jump_offset) - o.shift;
    rs.stack_null = outcomes[k];
    rs.unbound = unbound;
    PyObject* rc = ResumeCodeFor(o.state, o.code, rs);
    if (!rc) return false;
    out->resumes.push_back(own(rc));
  }
  out->handler = runtime::BreakHandler();
  const int32_t offset = b.offset - o.shift;
  const std::optional<bytecode::ExceptionEntry> x = bytecode::HandlerAt(o.code, offset);
  if (!x) return true;
  if (x->depth > static_cast<int32_t>(bs.stack_null.size())) {
    PyErr_SetString(PyExc_SystemError, "pijit: exception handler deeper than the value stack");
    return false;
  }
  PyObject* hc =
      ResumeCodeFor(o.state, o.code, bytecode::HandlerResumeSpec(*x, bs.stack_null, unbound));
  if (!hc) return false;
  out->handler.code = own(hc);
  out->handler.depth = x->depth;
  out->handler.lasti = x->lasti;
  out->handler.lasti_value =
      offset + static_cast<int32_t>(Py_SIZE(hc) - Py_SIZE(reinterpret_cast<PyObject*>(o.code)));
  return true;
}

// Nested graph breaks of one call (a jitted function called by a bridge's instruction that
// breaks itself) use Python stack frames; past this depth resume functions run eagerly.
constexpr int kMaxBreakDepth = 48;
thread_local int g_break_depth = 0;

// One step of a call that broke its graph: the bridge that runs the breaking instruction,
// the resume function per outcome, the handler for an exception, and the values to pass.
struct Continuation {
  Refs bridge_and_resumes;  // the bridge, then one resume function per outcome
  Refs handler_fn;          // empty, or the handler's resume function
  int32_t handler_depth = 0;    // BreakHandler's depth, lasti and lasti_value
  bool handler_lasti = false;
  int32_t handler_lasti_value = 0;
  Refs locals;              // NULL = unbound
  Refs stack;               // NULL = a NULL slot
};

// A resume function called by the driver returns this marker (and leaves its continuation
// in g_pending) instead of driving its own break: a chain of breaks, one per iteration of a
// loop, runs in a loop here rather than in ever deeper Python frames.
thread_local bool g_want_continuation = false;
thread_local std::unique_ptr<Continuation> g_pending;

PyObject* Marker() {
  // Made on first use, which may come with an exception pending (a resume function raised).
  static PyObject* marker = [] {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject* m = PyObject_CallNoArgs(reinterpret_cast<PyObject*>(&PyBaseObject_Type));
    PyErr_Restore(type, value, tb);
    return m;
  }();
  return marker;
}

// Calls a resume function through its cache (the frame hook would too); with a miss that
// runs eagerly, the frame runs the original code normally.
PyObject* CallResume(PyObject* fn, PyObject* const* args, size_t nargs) {
  auto* code = reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(fn));
  runtime::CodeState* st = runtime::GetCodeState(code, false);
  ThreadControl& c = Control();
  if (st && g_break_depth < kMaxBreakDepth && c.in_pijit == 0 && ActiveTape() == nullptr) {
    bool run_eager = false;
    g_want_continuation = true;
    PyObject* r = Dispatch(st, code, fn, args, static_cast<int>(nargs), DispatchOptions(), &run_eager);
    g_want_continuation = false;
    if (!run_eager) return r;
  }
  PyCodeObject* prev = c.bypass;
  c.bypass = code;
  PyObject* r = PyObject_Vectorcall(fn, args, nargs, nullptr);
  c.bypass = prev;
  return r;
}

// Runs continuations until a resume function returns the call's result (or raises).
PyObject* Drive(std::unique_ptr<Continuation> k) {
  PyObject* result = nullptr;
  Refs tags;
  for (int i = 0; i < 2; ++i) tags.v.push_back(PyLong_FromLong(i));
  ++g_break_depth;
  // The hook stays on while bridges run, so frames inside a capture region stay candidates.
  pijit_hook_acquire();
  while (k) {
    std::vector<PyObject*> args;
    for (PyObject* v : k->locals.v) args.push_back(v ? v : Py_None);
    const size_t nlocals = args.size();
    for (PyObject* v : k->stack.v)
      if (v) args.push_back(v);
    const auto& fns = k->bridge_and_resumes.v;
    for (size_t i = 1; i < fns.size(); ++i) args.push_back(tags.v[i - 1]);
    Refs hold;
    PyObject* r = PyObject_Vectorcall(fns[0], args.data(), args.size(), nullptr);
    args.resize(nlocals);
    PyObject* next;
    if (r) {
      // (outcome, the value stack's non-NULL values)
      hold.v.push_back(r);
      const long outcome = PyLong_AsLong(PyTuple_GET_ITEM(r, 0));
      for (Py_ssize_t i = 1; i < PyTuple_GET_SIZE(r); ++i) args.push_back(PyTuple_GET_ITEM(r, i));
      next = fns[1 + outcome];
    } else {
      if (k->handler_fn.v.empty()) break;
      // mirrors exception_unwind, Python/ceval.c: the stack down to the range's depth, the
      // offset of the raising instruction when the range asks for it, then the exception.
      PyObject *type, *value, *tb;
      PyErr_Fetch(&type, &value, &tb);
      PyErr_NormalizeException(&type, &value, &tb);
      if (tb && value) PyException_SetTraceback(value, tb);
      Py_XDECREF(type);
      Py_XDECREF(tb);
      if (!value) break;
      hold.v.push_back(value);
      for (int i = 0; i < k->handler_depth; ++i)
        if (k->stack.v[i]) args.push_back(k->stack.v[i]);
      if (k->handler_lasti) {
        hold.v.push_back(PyLong_FromLong(k->handler_lasti_value));
        args.push_back(hold.v.back());
      }
      args.push_back(value);
      next = k->handler_fn.v[0];
    }
    g_pending.reset();
    PyObject* res = CallResume(next, args.data(), args.size());
    if (!res || res != Marker()) {
      result = res;
      break;
    }
    Py_DECREF(res);
    k = std::move(g_pending);
  }
  pijit_hook_release();
  --g_break_depth;
  return result;
}

}  // namespace

bool ResumeCaptureAllowed() { return g_break_depth < kMaxBreakDepth; }

absl::Status PrepareBreak(runtime::CodeState* st, PyCodeObject* code, runtime::CacheEntry& e) {
  Origin o;
  runtime::PreparedBreak prepared;
  if (OriginOf(st, code, &o) && BreakCodes(*e.brk, o, &prepared)) {
    e.prepared = std::move(prepared);
    return absl::OkStatus();
  }
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyObject* str = value ? PyObject_Str(value) : nullptr;
  std::string msg = str && PyUnicode_Check(str) ? PyUnicode_AsUTF8(str) : "unknown error";
  Py_XDECREF(str);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  PyErr_Clear();
  return absl::UnimplementedError(msg);
}

PyObject* RunBreak(runtime::CodeState* st, const runtime::CacheEntry& e, PyCodeObject* code,
                   PyObject* func, PyObject* const* values, std::vector<Tensor>& outs) {
  const bool want_continuation = g_want_continuation;
  g_want_continuation = false;
  const BreakInfo& b = *e.brk;
  if (!e.prepared) {
    PyErr_SetString(PyExc_SystemError, "pijit: a graph-break entry without its code objects");
    return nullptr;
  }
  const runtime::PreparedBreak& p = *e.prepared;
  auto k = std::make_unique<Continuation>();
  k->handler_depth = p.handler.depth;
  k->handler_lasti = p.handler.lasti;
  k->handler_lasti_value = p.handler.lasti_value;

  BuildContext cx(outs, values);
  if (!e.effects.empty()) cx.Hold(e.guards->num_sources());
  if (!ReplayEffects(e.effects, cx, func)) return nullptr;
  for (const OutputSpec& spec : b.stack) {
    PyObject* v = BuildValue(spec, cx);
    if (!v && PyErr_Occurred()) return nullptr;
    k->stack.v.push_back(v);
  }
  for (int i = 0; i < p.nlocals && i < static_cast<int>(b.locals.size()); ++i) {
    PyObject* v = BuildValue(b.locals[i], cx);
    if (!v && PyErr_Occurred()) return nullptr;
    k->locals.v.push_back(v);
  }
  PyObject* bridge = MakeFunction(p.bridge.get(), func);
  if (!bridge) return nullptr;
  k->bridge_and_resumes.v.push_back(bridge);
  for (const runtime::OwnedRef& rc : p.resumes) {
    PyObject* fn = MakeFunction(rc.get(), func);
    if (!fn) return nullptr;
    k->bridge_and_resumes.v.push_back(fn);
  }
  if (p.handler.code.get()) {
    PyObject* fn = MakeFunction(p.handler.code.get(), func);
    if (!fn) return nullptr;
    k->handler_fn.v.push_back(fn);
  }
  if (want_continuation && Marker()) {
    g_pending = std::move(k);
    Py_INCREF(Marker());
    return Marker();
  }
  return Drive(std::move(k));
}

}  // namespace pijit
