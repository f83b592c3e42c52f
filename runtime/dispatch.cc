#include "kernels/flags.h"
#include "runtime/dispatch.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "frame_eval/eval_frame.h"
#include "interop/convert.h"
#include "interop/python_objects.h"
#include "runtime/continuation.h"
#include "runtime/dispatch_trace.h"
#include "runtime/trace.h"
#include "runtime/tape.h"

namespace pijit {

ThreadControl& Control() {
  static thread_local ThreadControl control;
  return control;
}

namespace {
std::vector<std::string> g_skip_prefixes;

// Adds `x` to a code object's list of dynamic sizes or numbers unless it is there already.

// Frames whose parameters the fast path can take straight from the call.
bool SimpleSignature(PyCodeObject* code) {
  return !(code->co_flags & (CO_VARARGS | CO_VARKEYWORDS)) && code->co_kwonlyargcount == 0;
}

// Runs `fn` through the interpreter; the hook then treats its frame as a capture target
// (`capture`) or leaves it alone (eager).
PyObject* CallThroughFrame(PyObject* fn, PyCodeObject* code, const DispatchOptions& options,
                           PyObject* const* args, size_t nargsf, PyObject* kwnames, bool capture) {
  ThreadControl& c = Control();
  PyCodeObject* prev_target = c.target;
  PyCodeObject* prev_bypass = c.bypass;
  DispatchOptions prev_options = c.target_options;
  if (capture) {
    c.target = code;
    c.target_options = options;
    pijit_hook_acquire();
  } else {
    c.bypass = code;
  }
  PyObject* r = PyObject_Vectorcall(fn, args, nargsf, kwnames);
  if (capture) pijit_hook_release();
  c.target = prev_target;
  c.target_options = prev_options;
  c.bypass = prev_bypass;
  return r;
}
}  // namespace

void SetSkipPrefixes(std::vector<std::string> prefixes) { g_skip_prefixes = std::move(prefixes); }

bool Skipped(PyCodeObject* code) {
  const char* file = PyUnicode_AsUTF8(code->co_filename);
  if (!file) {
    PyErr_Clear();
    return true;
  }
  std::string_view f(file);
  if (!f.empty() && f[0] == '<' && f != "<stdin>" && f != "<string>") return true;
  for (const std::string& p : g_skip_prefixes)
    if (f.substr(0, p.size()) == p) return true;
  return false;
}

bool g_mutable_made = false;

namespace {

// An argument pijit.mutable marked: an int, float, tuple or list subclass whose type has
// __ms_mutable__. Exact ints, floats, tuples and lists (and everything else) cost four flag
// tests.
bool IsMutableArg(PyObject* a) {
  if (!PyLong_Check(a) && !PyFloat_Check(a) && !PyTuple_Check(a) && !PyList_Check(a)) return false;
  if (PyLong_CheckExact(a) || PyFloat_CheckExact(a) || PyTuple_CheckExact(a) || PyList_CheckExact(a)) {
    return false;
  }
  static PyObject* marker = PyUnicode_InternFromString("__ms_mutable__");
  return _PyType_Lookup(Py_TYPE(a), marker) != nullptr;
}

// The plain value a mutable argument holds (a new reference). Its numbers, the argument's
// own or its items', are added to `dynamic` (a code object's dynamic numbers, by source
// text), so that the first compile already makes them graph inputs where they meet floating
// tensors; nullptr records none.
PyObject* PlainMutable(PyObject* a, const std::string& where, std::vector<std::string>* dynamic) {
  auto note = [dynamic](std::string source) {
    if (dynamic) runtime::AddOnce(*dynamic, std::move(source));
  };
  if (PyBool_Check(a)) return PyBool_FromLong(a == Py_True);
  if (PyLong_Check(a)) {
    note(where);
    return _PyLong_Copy(reinterpret_cast<PyLongObject*>(a));
  }
  if (PyFloat_Check(a)) {
    note(where);
    return PyFloat_FromDouble(PyFloat_AS_DOUBLE(a));
  }
  PyObject* seq = PyTuple_Check(a) ? PySequence_Tuple(a) : PySequence_List(a);
  if (!seq) return nullptr;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PySequence_Fast_ITEMS(seq)[i];
    if (PyLong_CheckExact(item) || PyFloat_CheckExact(item)) note(absl::StrCat(where, "[", i, "]"));
  }
  return seq;
}

}  // namespace

PyObject* CallCaptured(PyObject* fn, PyObject* const* args, size_t nargsf, PyObject* kwnames,
                       const DispatchOptions& options, bool always) {
  const Py_ssize_t nall =
      g_mutable_made ? PyVectorcall_NARGS(nargsf) + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0) : 0;
  for (Py_ssize_t i = 0; i < nall; ++i) {
    if (!IsMutableArg(args[i])) continue;
    // pijit.mutable arguments: the call goes on with the plain values they hold.
    runtime::CodeState* st = PyFunction_Check(fn) ? runtime::GetCodeState(
        reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(fn)), true) : nullptr;
    std::vector<PyObject*> plain(args, args + nall);
    std::vector<PyObject*> owned;
    const Py_ssize_t npos = PyVectorcall_NARGS(nargsf);
    for (Py_ssize_t j = i; j < nall; ++j) {
      if (!IsMutableArg(args[j])) continue;
      // Positional ones are graph inputs at args[j]; keyword ones are only made plain.
      PyObject* p = PlainMutable(args[j], absl::StrCat("args[", j, "]"),
                                 st && j < npos ? &st->dynamic_numbers : nullptr);
      if (!p) {
        for (PyObject* o : owned) Py_DECREF(o);
        return nullptr;
      }
      owned.push_back(p);
      plain[j] = p;
    }
    PyObject* r = CallCaptured(fn, plain.data(), nargsf & ~PY_VECTORCALL_ARGUMENTS_OFFSET,
                               kwnames, options, always);
    for (PyObject* o : owned) Py_DECREF(o);
    return r;
  }
  // While a gradient tape records, jitted code runs eagerly so that the tape sees its ops.
  if (!PyFunction_Check(fn) || Control().in_pijit > 0 || ActiveTape() != nullptr) {
    return PyObject_Vectorcall(fn, args, nargsf, kwnames);
  }
  auto* code = reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(fn));
  if (!always && Skipped(code)) return PyObject_Vectorcall(fn, args, nargsf, kwnames);
  runtime::CodeState* st = runtime::GetCodeState(code, true);
  if (!st) return PyObject_Vectorcall(fn, args, nargsf, kwnames);
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (kwnames == nullptr && nargs == code->co_argcount && SimpleSignature(code)) {
    bool run_eager = false;
    PyObject* r = Dispatch(st, code, fn, args, static_cast<int>(nargs), options, &run_eager);
    if (!run_eager) return r;
    return CallThroughFrame(fn, code, options, args, nargsf, kwnames, /*capture=*/false);
  }
  // Keywords, defaults or a wrong argument count: let CPython bind the arguments (and raise
  // its own TypeError), then capture the frame.
  return CallThroughFrame(fn, code, options, args, nargsf, kwnames, /*capture=*/true);
}

namespace {

using runtime::CacheEntry;
using runtime::CodeState;

std::string CodeName(PyCodeObject* code) {
  return absl::StrCat(PyUnicode_AsUTF8(code->co_qualname), " (", PyUnicode_AsUTF8(code->co_filename),
                      ":", code->co_firstlineno, ")");
}

// A vector for a graph's outputs, reused across calls on this thread so that a call makes
// none. A call made while another is running (from a graph break's resume function, say)
// takes a vector of its own.
class OutputsLease {
 public:
  OutputsLease() {
    std::vector<std::vector<Tensor>>& idle = Idle();
    if (!idle.empty()) {
      v_ = std::move(idle.back());
      idle.pop_back();
    }
  }
  ~OutputsLease() {
    v_.clear();
    std::vector<std::vector<Tensor>>& idle = Idle();
    if (idle.size() < 4) idle.push_back(std::move(v_));
  }
  OutputsLease(const OutputsLease&) = delete;
  OutputsLease& operator=(const OutputsLease&) = delete;
  std::vector<Tensor>& get() { return v_; }

 private:
  static std::vector<std::vector<Tensor>>& Idle() {
    static thread_local std::vector<std::vector<Tensor>> idle;
    return idle;
  }
  std::vector<Tensor> v_;
};

// Runs an entry's graph and builds the result. A graph with symbolic sizes may meet sizes
// its ops reject (shapes that do not broadcast, say): that call then runs eagerly, which
// raises the error exactly as without jit.
PyObject* RunEntry(CodeState* st, PyCodeObject* code, PyObject* func, const CacheEntry& e,
                   PyObject* const* values, bool* run_eager) {
  OutputsLease lease;
  std::vector<Tensor>& outs = lease.get();
  if (e.graph) {
    // Dynamic numbers become 0-d tensors, converted as eager arithmetic converts a scalar
    // next to a tensor of the parameter's dtype.
    absl::InlinedVector<Tensor, 2> numbers;
    for (size_t i = 0; i < e.param_sources.size(); ++i) {
      if (e.param_numbers[i] == bytecode::kNoNumber) continue;
      auto t = ScalarOperand("add", values[e.param_sources[i]],
                             static_cast<DType>(e.param_numbers[i]));
      if (!t.ok()) {
        *run_eager = true;  // eager raises whatever the conversion raises
        return nullptr;
      }
      numbers.push_back(std::move(*t));
    }
    absl::InlinedVector<const Tensor*, 8> inputs;
    for (size_t i = 0, k = 0; i < e.param_sources.size(); ++i) {
      inputs.push_back(e.param_numbers[i] == bytecode::kNoNumber
                           ? AsTensor(values[e.param_sources[i]])
                           : &numbers[k++]);
    }
    absl::Status st = e.graph->Run(inputs, &outs);
    if (!st.ok()) {
      if (e.dynamic && !(st.code() == absl::StatusCode::kCancelled && PyErr_Occurred())) {
        if (runtime::TraceOn()) {
          runtime::TraceEagerFallback(code, {bytecode::BreakCategory::kInternal,
                                             PyUnicode_AsUTF8(code->co_filename), code->co_firstlineno,
                                             std::string(st.message()), "symbolic sizes"});
        }
        *run_eager = true;
        return nullptr;
      }
      SetPyError(st);
      return nullptr;
    }
  }
  if (e.brk) return RunBreak(st, e, code, func, values, outs);
  BuildContext cx(outs, values);
  if (!e.effects.empty()) cx.Hold(e.guards->num_sources());
  if (!ReplayEffects(e.effects, cx, func)) return nullptr;
  return BuildValue(e.output, cx);
}

void RaiseGraphBreak(PyCodeObject* code, const bytecode::BreakReason& r) {
  std::string line;
  if (PyObject* linecache = PyImport_ImportModule("linecache")) {
    PyObject* text = PyObject_CallMethod(linecache, "getline", "si", r.file.c_str(), r.line);
    if (text && PyUnicode_Check(text)) line = PyUnicode_AsUTF8(text);
    Py_XDECREF(text);
    Py_DECREF(linecache);
  }
  PyErr_Clear();
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  std::string msg = absl::StrCat("cannot capture ", PyUnicode_AsUTF8(code->co_qualname),
                                 " as one graph: ", bytecode::BreakCategoryName(r.category), " at ", r.file, ":", r.line,
                                 "\n    ", line.substr(line.find_first_not_of(' ') == std::string::npos ? 0 : line.find_first_not_of(' ')),
                                 "\n", r.explanation);
  if (!r.hint.empty()) absl::StrAppend(&msg, "\nhint: ", r.hint);
  absl::StrAppend(&msg, "\n(use jit(mode=\"PIJit\") to run such code eagerly instead)");
  PyErr_SetString(g_graph_break_error, msg.c_str());
}

// Errors of the user's own code (bad shapes, Python errors) surface from the eager run,
// exactly as without jit; only code pijit cannot capture is an error in strict mode.
// The reasons a code object keeps for introspection: the first ones seen (bounded).
void RecordReason(CodeState* st, const bytecode::BreakReason& r) {
  constexpr size_t kMaxReasons = 64;
  if (st->reasons.size() < kMaxReasons) st->reasons.push_back(r);
}

bool IsUserError(const bytecode::BreakReason& r) {
  return bytecode::BreakCategoryIsCallError(r.category);
}

}  // namespace

namespace {

// An eager entry's call: in strict mode an error (unless the call's own inputs are at fault,
// which the eager run reports as Python would), else a request to run the code normally.
PyObject* RunEager(CodeState* st, PyCodeObject* code, const CacheEntry& e,
                   const DispatchOptions& options, bool* run_eager) {
  if (options.fullgraph && !IsUserError(e.reason)) {
    RaiseGraphBreak(code, e.reason);
    return nullptr;
  }
  ++st->eager_count;
  *run_eager = true;
  return nullptr;
}

// The cache is full: run eagerly, warning once (generated code, a resume function
// specialised per loop iteration say, falls back quietly: running the rest of the call
// eagerly is what it is for).
PyObject* LimitReached(CodeState* st, PyCodeObject* code, bool* run_eager) {
  if (!st->limit_traced) {
    st->limit_traced = true;
    runtime::TraceRecompileLimit(*st, code, runtime::CacheLimit());
  }
  if (!st->limit_warned && !st->origin.get()) {
    st->limit_warned = true;
    std::string msg = absl::StrCat("pijit: ", CodeName(code), " hit the recompile limit (",
                                   runtime::CacheLimit(), " cache entries); it runs eagerly "
                                   "for inputs that match no entry");
    if (PyErr_WarnEx(PyExc_RuntimeWarning, msg.c_str(), 1) < 0) return nullptr;
  }
  ++st->eager_count;
  *run_eager = true;
  return nullptr;
}

// jit(dynamic=1): every size of every tensor argument is symbolic from the first compile;
// Cell.set_inputs placeholders name theirs.
void AddRequestedDynamicDims(CodeState* st, const DispatchOptions& options, PyObject* const* args,
                             int nargs) {
  if ((!options.dynamic && options.dynamic_dims.empty()) || st->static_only) return;
  auto add = [st](int arg, int d) {
    runtime::AddOnce(st->dynamic_dims, guards::DynamicDim{absl::StrCat("args[", arg, "]"), d});
  };
  for (int i = 0; i < nargs && options.dynamic; ++i) {
    const Tensor* t = AsTensor(args[i]);
    for (int d = 0; t && d < static_cast<int>(t->ndim()); ++d) add(i, d);
  }
  for (const auto& [arg, d] : options.dynamic_dims) {
    const Tensor* t = arg < nargs ? AsTensor(args[arg]) : nullptr;
    if (t && d < static_cast<int>(t->ndim())) add(arg, d);
  }
}

// Abstract interpretation of the call. Strict mode wants one graph or an error; otherwise an
// unsupported point breaks the graph.
bytecode::CaptureResult CaptureCall(CodeState* st, PyCodeObject* code, PyObject* func,
                                    PyObject* const* args, int nargs, const DispatchOptions& options) {
  ++Control().in_pijit;
  const bool allow_break = !options.fullgraph;
  bytecode::CaptureResult cr = bytecode::Capture(code, func, args, nargs, st->dynamic_dims,
                                                 allow_break, st->dynamic_numbers);
  if (cr.dynamic && cr.read_shape) {
    // The trace used sizes as Python values: specialise on them from now on.
    st->static_only = true;
    st->dynamic_dims.clear();
    cr = bytecode::Capture(code, func, args, nargs, {}, allow_break, st->dynamic_numbers);
  }
  --Control().in_pijit;
  if (flags::LogEnabled("recompiles") && cr.dynamic) {
    PySys_WriteStderr("[pijit] %s: compiling with symbolic sizes\n", CodeName(code).c_str());
  }
  ++st->compile_count;
  st->saw_tensor_work |= cr.graph.params().size() + cr.graph.num_ops() > 0;
  return cr;
}

// Compiles the captured graph into a new entry. A graph runs when it produces outputs or has
// effects of its own (assign, random draws, batch-norm statistics), even if the function
// returns none of its values. A compile failure turns the capture into an eager verdict.
std::unique_ptr<CacheEntry> CompileEntry(PyCodeObject* code, bytecode::CaptureResult& cr,
                                         const DispatchOptions& options) {
  auto entry = std::make_unique<CacheEntry>();
  entry->guards = std::move(cr.guards);
  entry->param_sources = std::move(cr.param_sources);
  entry->param_numbers = std::move(cr.param_numbers);
  entry->output = std::move(cr.output);
  entry->effects = std::move(cr.effects);
  entry->dynamic = cr.dynamic;
  entry->whole_graph = options.fullgraph;
  entry->optimized = options.optimize;
  entry->inlined = std::move(cr.inlined);
  bool stateful = false;
  for (const auto& n : cr.graph.nodes()) stateful |= graph::HasTrait(n.op, graph::kStateful);
  if ((cr.ok || cr.brk) && cr.graph.num_ops() + cr.graph.params().size() > 0 &&
      (!cr.graph.outputs().empty() || stateful)) {
    // Most passes rewrite by the sizes in the graph (reshape elimination, folding): a graph
    // with symbolic sizes only gets the rewrites that hold at any sizes (elementwise fusion).
    // The memory plan sizes its arena by them too: such a graph runs without one.
    graph::CompileOptions copts;
    copts.pipeline.symbolic_sizes = cr.dynamic;
    copts.pipeline.optimize = options.optimize;
    copts.plan_memory = !cr.dynamic;
    // Inputs on a device (their TENSOR_MATCH guards say where): the graph runs there.
    if (entry->guards) {
      for (const guards::Guard& g : entry->guards->guards()) {
        if (g.kind == guards::Guard::kTensorMatch && g.device != Device::kCPU) copts.device = g.device;
      }
    }
    auto compiled = graph::CompiledGraph::Compile(std::move(cr.graph), copts);
    if (compiled.ok()) {
      entry->graph = std::move(*compiled);
    } else {
      cr.ok = false;
      cr.brk.reset();
      cr.reason = {bytecode::BreakCategory::kInternal, PyUnicode_AsUTF8(code->co_filename),
                   code->co_firstlineno, std::string(compiled.status().message()), ""};
    }
  }
  return entry;
}

// Settles what a new entry does: continue after a graph break (its bridge and resume code
// made now), run eagerly, or run its graph; records the reason and writes the PIJIT_LOG
// output.
void SettleEntry(CodeState* st, PyCodeObject* code, bytecode::CaptureResult& cr, CacheEntry& entry) {
  if (flags::LogEnabled("graph_breaks") && !cr.reordered_prints.empty()) {
    PySys_WriteStderr("[pijit] %s: print calls run after the graph, in order: %s\n",
                      CodeName(code).c_str(), absl::StrJoin(cr.reordered_prints, ", ").c_str());
  }
  if (cr.brk) {
    // A graph break: the prefix runs as a graph, the rest continues in a resume function.
    entry.reason = cr.brk->reason;
    entry.brk = std::move(cr.brk);
    absl::Status ready = PrepareBreak(st, code, entry);
    if (!ready.ok()) {
      // No bridge or resume function for this point (e.g. too many closure slots): eager.
      entry.brk.reset();
      entry.graph.reset();
      cr.ok = false;
      cr.reason.explanation += absl::StrCat(" (no graph break here: ", ready.message(), ")");
      entry.reason = cr.reason;
    }
  }
  if (entry.brk) {
    ++st->graph_break_count;
    RecordReason(st, entry.reason);
    if (flags::LogEnabled("graph_breaks")) {
      PySys_WriteStderr("[pijit] graph break in %s: %s\n", CodeName(code).c_str(),
                        entry.reason.ToText().c_str());
    }
    if (flags::LogEnabled("graph") && entry.graph) {
      PySys_WriteStderr("[pijit] graph before the break in %s:\n%s", CodeName(code).c_str(),
                        entry.graph->graph().ToText().c_str());
    }
  } else if (!cr.ok) {
    entry.eager = true;
    // Running eagerly is always right, so an eager entry's guards only decide when to try
    // capture again. They hold the decisions that led to the reason (branch conditions,
    // types); sizes rarely matter to code pijit cannot capture, so unless the trace read
    // sizes the entry serves every size instead of recompiling per shape.
    if (!IsUserError(cr.reason) && !cr.read_shape) entry.guards->RelaxTensorSizes();
    entry.reason = cr.reason;
    ++st->graph_break_count;
    RecordReason(st, cr.reason);
    if (flags::LogEnabled("graph_breaks")) {
      PySys_WriteStderr("[pijit] %s runs eagerly: %s\n", CodeName(code).c_str(),
                        cr.reason.ToText().c_str());
    }
  } else {
    if (flags::LogEnabled("graph") && entry.graph) {
      PySys_WriteStderr("[pijit] graph for %s:\n%s", CodeName(code).c_str(),
                        entry.graph->graph().ToText().c_str());
    }
    if (flags::LogEnabled("guards")) {
      PySys_WriteStderr("[pijit] guards for %s:\n%s", CodeName(code).c_str(),
                        entry.guards->ToText().c_str());
    }
  }
}

}  // namespace

// lookup -> (miss) promote -> capture -> compile -> install -> run.
PyObject* Dispatch(CodeState* st, PyCodeObject* code, PyObject* func, PyObject* const* args,
                   int nargs, const DispatchOptions& options, bool* run_eager) {
  *run_eager = false;
  ++st->call_count;
  guards::Roots roots{args, PyFunction_GET_GLOBALS(func),
                      reinterpret_cast<PyFunctionObject*>(func)->func_builtins,
                      PyFunction_GET_CLOSURE(func)};
  runtime::SourceValues values;
  CacheEntry* hit = st->Lookup(roots, &values);
  if (hit && !hit->Serves(options.fullgraph, options.optimize)) {
    hit = st->LookupServing(roots, &values, options.fullgraph, options.optimize);
  }
  if (hit) {
    ++hit->hits;
    ++st->hit_count;
    if (hit->eager) return RunEager(st, code, *hit, options, run_eager);
    if (runtime::TraceOn()) {  // the trace's run time: one test on the untraced hot path
      const auto t = std::chrono::steady_clock::now();
      PyObject* r = RunEntry(st, code, func, *hit, values.data(), run_eager);
      st->traced_run_ms +=
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
      return r;
    }
    return RunEntry(st, code, func, *hit, values.data(), run_eager);
  }
  st->DropDeadEntries();
  if (st->AtLimit()) return LimitReached(st, code, run_eager);
  if (flags::LogEnabled("recompiles") && st->compile_count > 0) {
    PySys_WriteStderr("[pijit] recompiling %s: no cache entry matched (%zu entries)\n",
                      CodeName(code).c_str(), st->entries.size());
  }
  if (st->compile_count > 0) runtime::TraceRecompile(*st, code, roots);
  st->PromoteOnMiss(roots, &values);
  AddRequestedDynamicDims(st, options, args, nargs);
  // Phase times for the trace only: a compile costs milliseconds, a clock read nanoseconds.
  using Clock = std::chrono::steady_clock;
  const bool timed = runtime::TraceOn();
  auto ms_since = [](Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  };
  runtime::CompilePhases phases;
  Clock::time_point t = timed ? Clock::now() : Clock::time_point{};
  bytecode::CaptureResult cr = CaptureCall(st, code, func, args, nargs, options);
  if (timed) phases.capture_ms = ms_since(t), t = Clock::now();
  std::unique_ptr<CacheEntry> entry = CompileEntry(code, cr, options);
  if (timed) phases.compile_ms = ms_since(t), t = Clock::now();
  SettleEntry(st, code, cr, *entry);
  if (timed) phases.settle_ms = ms_since(t);
  CacheEntry& e = st->Install(std::move(entry));
  st->traced_compile_ms += phases.capture_ms + phases.compile_ms + phases.settle_ms;
  runtime::TraceCapture(*st, code, e, phases);
  if (e.eager) return RunEager(st, code, e, options, run_eager);
  values.resize(e.guards->num_sources());
  if (!e.guards->Check(roots, values.data())) {
    // The guards must accept the call they were built from; if not, stay correct.
    e.eager = true;
    e.reason = {bytecode::BreakCategory::kInternal, PyUnicode_AsUTF8(code->co_filename),
                code->co_firstlineno, "guards reject the inputs they were built from", ""};
    runtime::TraceEagerFallback(code, e.reason);
    *run_eager = true;
    return nullptr;
  }
  return RunEntry(st, code, func, e, values.data(), run_eager);
}

}  // namespace pijit
