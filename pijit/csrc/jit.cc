// pijit._C.JitFunction (the native callable returned by @jit), the frame-hook callback,
// capture regions and introspection.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "bytecode/capture.h"
#include "bytecode/emit.h"
#include "bytecode/instructions.h"
#include "bytecode/resume.h"
#include "frame_eval/eval_frame.h"
#include "interop/convert.h"
#include "runtime/dispatch.h"
#include "graph/control_flow_run.h"
#include "graph/executor.h"
#include "graph/op_profile.h"
#include "runtime/trace.h"
#include "runtime/continuation.h"
#include "interop/python_objects.h"
#include "pijit/csrc/module.h"
#include "runtime/tape.h"

namespace py = pybind11;

namespace pijit {

namespace {

bool g_enabled = false;                  // pijit.enable(): every frame is a candidate
int FrameCallback(PyCodeObject* code, PyObject* func, PyObject* const* args, int nargs,
                  PyObject** result, pijit_skip_info** info) {
  ThreadControl& c = Control();
  // A recording gradient tape must see every op: frames run eagerly meanwhile.
  if (c.in_pijit > 0 || func == nullptr || !PyFunction_Check(func) || ActiveTape() != nullptr) {
    return PIJIT_FRAME_DEFAULT;
  }
  if (c.bypass == code) {
    c.bypass = nullptr;
    return PIJIT_FRAME_DEFAULT;
  }
  DispatchOptions options;
  const bool is_target = c.target == code;
  // One co_extra lookup for code already seen; the file filter runs once per code object.
  runtime::CodeState* known = runtime::GetCodeState(code, false);
  // A resume function is always a capture candidate (see runtime/continuation.cc).
  const bool resume = known && known->capture_always && !is_target;
  if (resume) {
    if (!ResumeCaptureAllowed()) return PIJIT_FRAME_DEFAULT;
  } else if (is_target) {
    c.target = nullptr;
    options = c.target_options;
  } else if (c.capture_depth > 0 || g_enabled) {
    if (known ? known->skip : Skipped(code)) {
      if (!known && (known = runtime::GetCodeState(code, true))) known->skip = true;
      if (!known) return PIJIT_FRAME_DEFAULT;
      // A skipped subtree's runs 1, 2, 4, ..., 64 and every 64th are watched (see
      // frame_eval/eval_frame.h).
      pijit_skip_info& s = known->skip_info;
      *info = &s;
      if (!s.subtree) return PIJIT_FRAME_SKIP;
      const uint32_t n = ++s.calls;
      return (n & (n - 1)) == 0 || (n & 63) == 0 ? PIJIT_FRAME_SKIP : PIJIT_FRAME_SUBTREE;
    }
  } else {
    return PIJIT_FRAME_DEFAULT;
  }
  runtime::CodeState* st = known ? known : runtime::GetCodeState(code, true);
  if (!st) return PIJIT_FRAME_DEFAULT;
  bool run_eager = false;
  const bool first = st->compile_count == 0;
  PyObject* r = Dispatch(st, code, func, args, nargs, options, &run_eager);
  // A code object whose first analysis found no tensor work costs one check from now on.
  if (first && !is_target && !resume && !st->saw_tensor_work) {
    st->skip = true;
    if (run_eager) {
      *info = &st->skip_info;
      return PIJIT_FRAME_SKIP;
    }
  } else {
    pijit_mark_live();
  }
  if (run_eager) return PIJIT_FRAME_DEFAULT;
  *result = r;
  return PIJIT_FRAME_RESULT;
}

// ---- JitFunction --------------------------------------------------------------------------

struct JitFunctionObject {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* fn;  // the Python function
  PyCodeObject* code;
  runtime::CodeState* state;
  DispatchOptions options;
  PyObject* dict;
  PyObject* weakreflist;
};

PyObject* JitVectorcall(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* self = reinterpret_cast<JitFunctionObject*>(callable);
  return CallCaptured(self->fn, args, nargsf, kwnames, self->options, /*always=*/true);
}

PyObject* JitNew(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  static const char* kw[] = {"fn", "fullgraph", "optimize", "dynamic", "dynamic_dims", nullptr};
  PyObject* fn;
  PyObject* dims = nullptr;
  int fullgraph = 0, optimize = 1, dynamic = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|pppO:JitFunction", const_cast<char**>(kw), &fn,
                                   &fullgraph, &optimize, &dynamic, &dims)) {
    return nullptr;
  }
  // dynamic_dims: (argument index, dimension) pairs whose sizes are symbolic from the start.
  std::vector<std::pair<int, int>> dynamic_dims;
  if (dims && dims != Py_None) {
    PyObject* seq = PySequence_Fast(dims, "JitFunction: dynamic_dims must be a sequence of pairs");
    if (!seq) return nullptr;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); ++i) {
      int a = 0, d = 0;
      if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "ii", &a, &d)) {
        Py_DECREF(seq);
        return nullptr;
      }
      dynamic_dims.emplace_back(a, d);
    }
    Py_DECREF(seq);
  }
  if (!PyFunction_Check(fn)) {
    PyErr_Format(PyExc_TypeError, "jit: expected a Python function, got %s", Py_TYPE(fn)->tp_name);
    return nullptr;
  }
  auto* code = reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(fn));
  runtime::CodeState* st = runtime::GetCodeState(code, true);
  if (!st) return PyErr_NoMemory();
  auto* self = reinterpret_cast<JitFunctionObject*>(type->tp_alloc(type, 0));
  if (!self) return nullptr;
  new (&self->options) DispatchOptions();  // destroyed in JitDealloc
  self->vectorcall = JitVectorcall;
  Py_INCREF(fn);
  self->fn = fn;
  self->code = code;
  self->state = st;
  self->options.fullgraph = fullgraph != 0;
  self->options.optimize = optimize != 0;
  self->options.dynamic = dynamic != 0;
  self->options.dynamic_dims = std::move(dynamic_dims);
  self->dict = PyDict_New();
  return reinterpret_cast<PyObject*>(self);
}

void JitDealloc(PyObject* o) {
  auto* self = reinterpret_cast<JitFunctionObject*>(o);
  PyObject_GC_UnTrack(o);
  if (self->weakreflist) PyObject_ClearWeakRefs(o);
  Py_CLEAR(self->fn);
  Py_CLEAR(self->dict);
  self->options.~DispatchOptions();
  Py_TYPE(o)->tp_free(o);
}

int JitTraverse(PyObject* o, visitproc visit, void* arg) {
  auto* self = reinterpret_cast<JitFunctionObject*>(o);
  Py_VISIT(self->fn);
  Py_VISIT(self->dict);
  return 0;
}

int JitClear(PyObject* o) {
  auto* self = reinterpret_cast<JitFunctionObject*>(o);
  Py_CLEAR(self->dict);
  return 0;
}

PyObject* JitDescrGet(PyObject* self, PyObject* obj, PyObject*) {
  if (obj == nullptr || obj == Py_None) {
    Py_INCREF(self);
    return self;
  }
  return PyMethod_New(self, obj);
}

PyObject* JitGetAttro(PyObject* o, PyObject* name) {
  // __name__, __doc__, __wrapped__ and friends come from the wrapped function.
  PyObject* r = PyObject_GenericGetAttr(o, name);
  if (r || !PyErr_ExceptionMatches(PyExc_AttributeError)) return r;
  PyErr_Clear();
  return PyObject_GetAttr(reinterpret_cast<JitFunctionObject*>(o)->fn, name);
}

PyObject* JitRepr(PyObject* o) {
  auto* self = reinterpret_cast<JitFunctionObject*>(o);
  return PyUnicode_FromFormat("<pijit.jit %U%s>", self->code->co_qualname,
                              self->options.fullgraph ? " fullgraph" : "");
}

PyObject* JitGetWrapped(PyObject* o, void*) {
  PyObject* fn = reinterpret_cast<JitFunctionObject*>(o)->fn;
  Py_INCREF(fn);
  return fn;
}

PyObject* JitGetFromFunction(PyObject* o, void* name) {
  return PyObject_GetAttrString(reinterpret_cast<JitFunctionObject*>(o)->fn,
                                static_cast<const char*>(name));
}

PyObject* JitGetFullgraph(PyObject* o, void*) {
  return PyBool_FromLong(reinterpret_cast<JitFunctionObject*>(o)->options.fullgraph);
}

PyGetSetDef g_jit_getset[] = {
    {"__wrapped__", JitGetWrapped, nullptr, "the jitted Python function", nullptr},
    {"fullgraph", JitGetFullgraph, nullptr,
     "whether the whole function is one graph (capture_mode=\"ast\", fullgraph=True)", nullptr},
    {"__doc__", JitGetFromFunction, nullptr, nullptr, const_cast<char*>("__doc__")},
    {"__name__", JitGetFromFunction, nullptr, nullptr, const_cast<char*>("__name__")},
    {"__qualname__", JitGetFromFunction, nullptr, nullptr, const_cast<char*>("__qualname__")},
    {"__module__", JitGetFromFunction, nullptr, nullptr, const_cast<char*>("__module__")},
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyTypeObject g_jit_type = {PyVarObject_HEAD_INIT(nullptr, 0)};

void InitJitType() {
  g_jit_type.tp_name = "pijit._C.JitFunction";
  g_jit_type.tp_basicsize = sizeof(JitFunctionObject);
  g_jit_type.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                        Py_TPFLAGS_METHOD_DESCRIPTOR;
  g_jit_type.tp_doc = "A function compiled by pijit.jit: guard-checked cache of graphs.";
  g_jit_type.tp_new = JitNew;
  g_jit_type.tp_dealloc = JitDealloc;
  g_jit_type.tp_traverse = JitTraverse;
  g_jit_type.tp_clear = JitClear;
  g_jit_type.tp_call = PyVectorcall_Call;
  g_jit_type.tp_vectorcall_offset = offsetof(JitFunctionObject, vectorcall);
  g_jit_type.tp_descr_get = JitDescrGet;
  g_jit_type.tp_getattro = JitGetAttro;
  g_jit_type.tp_repr = JitRepr;
  g_jit_type.tp_getset = g_jit_getset;
  g_jit_type.tp_dictoffset = offsetof(JitFunctionObject, dict);
  g_jit_type.tp_weaklistoffset = offsetof(JitFunctionObject, weakreflist);
}

// The function a JitFunction compiles (guards' kJitWrapped sources, nested jit).
PyObject* JitWrappedFunction(PyObject* obj) {
  return Py_TYPE(obj) == &g_jit_type ? reinterpret_cast<JitFunctionObject*>(obj)->fn : nullptr;
}

PyCodeObject* CodeOf(py::handle fn) {
  PyObject* f = fn.ptr();
  if (Py_TYPE(f) == &g_jit_type) return reinterpret_cast<JitFunctionObject*>(f)->code;
  if (PyMethod_Check(f)) f = PyMethod_GET_FUNCTION(f);
  if (Py_TYPE(f) == &g_jit_type) return reinterpret_cast<JitFunctionObject*>(f)->code;
  if (PyFunction_Check(f)) return reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(f));
  if (PyCode_Check(f)) return reinterpret_cast<PyCodeObject*>(f);
  throw py::type_error(std::string("expected a Python function or a jitted function, got ") +
                       Py_TYPE(fn.ptr())->tp_name);
}

py::dict ReasonDict(const bytecode::BreakReason& r) {
  PyObject* d = r.ToDict(/*with_text=*/true);
  if (!d) throw py::error_already_set();
  return py::reinterpret_steal<py::dict>(d);
}

}  // namespace

void BindJit(py::module_& m) {
  InitJitType();
  if (PyType_Ready(&g_jit_type) < 0) throw py::error_already_set();
  Py_INCREF(&g_jit_type);
  m.attr("JitFunction") = py::handle(reinterpret_cast<PyObject*>(&g_jit_type));
  guards::g_jit_wrapped_function = JitWrappedFunction;
  // Ctrl-C (and other signal handlers) reach a compiled loop that does not end.
  graph::SetLoopInterruptCheck([] { return PyErr_CheckSignals() != 0; });
  g_graph_break_error = PyErr_NewExceptionWithDoc(
      "pijit._C.GraphBreakError",
      "Raised in strict mode (PSJit, fullgraph=True) when a function cannot be one graph.",
      PyExc_RuntimeError, nullptr);
  m.attr("GraphBreakError") = py::handle(g_graph_break_error);
  m.def("graph_break", [] {},
        "Breaks the graph here: captured code before and after the call becomes separate graphs "
        "(a call inside an inlined function makes the call of that function run in Python). "
        "Eagerly it does nothing.");
  g_graph_break_fn = m.attr("graph_break").ptr();
  Py_INCREF(g_graph_break_fn);
  pijit_set_frame_callback(FrameCallback);

  m.def("_capture", [](py::handle func, std::vector<py::object> args, bool allow_break) {
    if (!PyFunction_Check(func.ptr())) throw py::type_error("_capture expects a Python function");
    auto* code = reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(func.ptr()));
    std::vector<PyObject*> raw;
    for (auto& a : args) raw.push_back(a.ptr());
    ++Control().in_pijit;
    bytecode::CaptureResult cr = bytecode::Capture(code, func.ptr(), raw.data(),
                                                   static_cast<int>(raw.size()), {}, allow_break);
    --Control().in_pijit;
    py::dict d;
    d["ok"] = cr.ok;
    // The graph of the whole function, or of the part before its first graph break.
    const bool has_graph = (cr.ok || cr.brk) && cr.graph.num_ops() > 0;
    d["graph"] = has_graph ? cr.graph.ToText() : "";
    d["num_ops"] = has_graph ? cr.graph.num_ops() : 0;
    d["graph_break"] = cr.brk != nullptr;
    d["guards"] = cr.guards->ToText();
    d["reason"] = cr.ok ? py::object(py::none()) : py::object(ReasonDict(cr.reason));
    d["instructions"] = cr.num_instructions;
    d["reordered_prints"] = cr.reordered_prints;
    d["rebuilt_objects"] = cr.rebuilt_objects;
    return d;
  }, py::arg("func"), py::arg("args"), py::arg("allow_break") = true);
  m.def("_code_stats", [](py::handle fn) {
    runtime::CodeState* st = runtime::GetCodeState(CodeOf(fn), false);
    py::dict d;
    d["call_count"] = st ? st->call_count : 0;
    d["compile_count"] = st ? st->compile_count : 0;
    d["cache_hits"] = st ? st->hit_count : 0;
    d["eager_count"] = st ? st->eager_count : 0;
    d["break_count"] = st ? st->graph_break_count : 0;
    d["cache_entries"] = st ? st->entries.size() : 0;
    py::list reasons, graphs, guards_text, arena_bytes;
    if (st) {
      for (const auto& r : st->reasons) reasons.append(ReasonDict(r));
      for (const auto& e : st->entries) {
        graphs.append(e->graph ? e->graph->graph().ToText() : std::string());
        guards_text.append(e->guards->ToText());
        arena_bytes.append(e->graph ? e->graph->memory_plan().arena_bytes : 0);
      }
    }
    d["reasons"] = reasons;
    d["graphs"] = graphs;
    d["guards"] = guards_text;
    d["arena_bytes"] = arena_bytes;  // per entry: its memory plan's arena (0: none)
    // The whole function: this code object and the resume functions its graph breaks made
    // (each resume function is generated once, from the original code).
    py::list all_graphs, all_reasons;
    int64_t resumes = 0, breaks = 0;
    std::vector<runtime::CodeState*> todo;
    if (st) todo.push_back(st);
    while (!todo.empty()) {
      runtime::CodeState* s = todo.back();
      todo.pop_back();
      breaks += s->graph_break_count;
      for (const auto& e : s->entries)
        if (e->graph) all_graphs.append(e->graph->graph().ToText());
      for (const auto& r : s->reasons) all_reasons.append(ReasonDict(r));
      for (const auto& r : s->resumes) {
        ++resumes;
        if (auto* rs = runtime::GetCodeState(reinterpret_cast<PyCodeObject*>(r.code.get()), false))
          todo.push_back(rs);
      }
    }
    d["graph_count"] = py::len(all_graphs);
    d["all_graphs"] = all_graphs;
    d["total_break_count"] = breaks;
    d["all_reasons"] = all_reasons;
    d["resume_functions"] = resumes;
    return d;
  });
  // For tests of the bytecode emitter: a resume code object of `code` at code-unit `offset`.
  m.def("_make_resume_code", [](py::handle code, int offset, std::vector<bool> stack_null,
                                std::vector<int> unbound) {
    if (!PyCode_Check(code.ptr())) throw py::type_error("_make_resume_code expects a code object");
    bytecode::ResumeSpec spec;
    spec.offset = offset;
    spec.stack_null = std::move(stack_null);
    spec.unbound = std::move(unbound);
    auto made = bytecode::MakeResumeCode(reinterpret_cast<PyCodeObject*>(code.ptr()), spec);
    if (!made.ok()) throw py::value_error(std::string(made.status().message()));
    return py::reinterpret_steal<py::object>(*made);
  });
  // For tests of the decoder: `code`'s instructions as the step handlers see them, as
  // (byte offset, neutral opcode name, argument, byte offset of the jump target or -1).
  m.def("_decode_bytecode", [](py::handle code) {
    if (!PyCode_Check(code.ptr())) throw py::type_error("_decode_bytecode expects a code object");
    py::bytes raw = py::reinterpret_steal<py::bytes>(
        PyCode_GetCode(reinterpret_cast<PyCodeObject*>(code.ptr())));
    const std::string bytes = raw;
    auto decoded = bytecode::Decode(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    if (!decoded.ok()) throw py::value_error(std::string(decoded.status().message()));
    py::list out;
    for (const bytecode::Instr& in : *decoded) {
      const int target = in.target >= 0 ? 2 * (*decoded)[in.target].offset : -1;
      out.append(py::make_tuple(2 * in.offset, bytecode::OpcName(in.op), in.arg, target));
    }
    return out;
  });
  // For tests of the emitter: neutral (name, argument) pairs encoded for this interpreter.
  m.def("_encode_instructions", [](const std::vector<std::pair<std::string, int>>& instrs) {
    bytecode::Emitter e;
    for (const auto& [name, arg] : instrs) {
      const bytecode::Opc op = bytecode::OpcByName(name.c_str());
      if (op == bytecode::Opc::kInvalid || !e.Emit(op, arg))
        throw py::value_error("no encoding for " + name + " on this Python");
    }
    return py::bytes(e.code());
  });
  m.def("_reset_code", [](py::handle fn) { runtime::ResetCodeState(CodeOf(fn)); });
  m.def("_reset_all", [] { runtime::ResetAll(); });
  m.def("_set_cache_limit", [](size_t n) { runtime::SetCacheLimit(n); });
  m.def("_cache_limit", [] { return runtime::CacheLimit(); });
  m.def("_set_trace_sink", [](py::object sink) { runtime::SetTraceSink(sink.ptr()); },
        "Installs the structured trace's sink (a callable taking one dict per event; None "
        "removes it): pijit.trace() and PIJIT_TRACE use it.");
  m.def("_trace_on", [] { return runtime::TraceOn(); });
  m.def("_traced_function_stats", [] {
    py::list out;
    runtime::ForEachCodeState([&out](PyCodeObject* code, const runtime::CodeState& st) {
      if (st.compile_count == 0) return;
      py::dict d;
      d["function"] = py::reinterpret_borrow<py::object>(code->co_qualname);
      d["file"] = py::reinterpret_borrow<py::object>(code->co_filename);
      d["line"] = code->co_firstlineno;
      d["calls"] = st.call_count;
      d["cache_hits"] = st.hit_count;
      d["compiles"] = st.compile_count;
      d["breaks"] = st.graph_break_count;
      d["eager_calls"] = st.eager_count;
      d["cache_entries"] = st.entries.size();
      d["compile_ms"] = st.traced_compile_ms;
      d["run_ms"] = st.traced_run_ms;
      out.append(d);
    });
    return out;
  }, "Counters of every function compiled so far, for the structured trace's summary.");
  m.def("_node_profile", [] {
    py::list rows;
    for (const graph::NodeTime& t : graph::OpProfileSnapshot())
      rows.append(py::make_tuple(t.node, t.ms, t.count));
    return rows;
  }, "The recorded (op kind, milliseconds, runs) so far, largest first; eager ops' kinds "
     "start with 'eager '. Empty unless PIJIT_PROFILE is set or _set_op_profiling(True).");
  m.def("_set_op_profiling", [](bool on) { graph::SetOpProfiling(on); },
        "Starts (True) or stops recording the time of every graph node and eager op.");
  m.def("_op_profiling", [] { return graph::OpProfilingOn(); }, "Whether op times are recorded.");
  m.def("_reset_op_profile", [] { graph::ResetOpProfile(); }, "Forgets the recorded op times.");
  m.def("_note_mutable", [] { g_mutable_made = true; },
        "pijit.mutable made a value: jitted calls look for such arguments from now on.");
  m.def("_capture_enter", [] {
    ++Control().capture_depth;
    pijit_hook_acquire();
  });
  m.def("_capture_exit", [] {
    if (Control().capture_depth > 0) {
      --Control().capture_depth;
      pijit_hook_release();
    }
  });
  m.def("_set_enabled", [](bool on) {
    if (on == g_enabled) return;
    g_enabled = on;
    if (on) pijit_hook_acquire();
    else pijit_hook_release();
  });
  m.def("_is_enabled", [] { return g_enabled; });
  m.def("_hook_active", [] { return pijit_hook_active() != 0; });
  m.def("_skip_info", [](py::handle fn) {
    py::dict d;
    const runtime::CodeState* st = runtime::GetCodeState(CodeOf(fn), false);
    d["skip"] = st && st->skip;
    d["subtree"] = st && st->skip_info.subtree;
    d["tainted"] = st && st->skip_info.tainted;
    d["clean_runs"] = st ? st->skip_info.clean_runs : 0;
    return d;
  });
  m.def("_guard_evaluations", [] { return guards::SharedGuards::evaluations(); },
        "Guards evaluated by shared checks (a code object with several cache entries).");
  m.def("_hook_stats", [] {
    const pijit_hook_stats s = pijit_get_hook_stats();
    py::dict d;
    d["frames"] = s.frames;
    d["subtree_runs"] = s.subtree_runs;
    return d;
  });
  m.def("_register_cell_call", [](py::object call) {
    Py_XDECREF(g_cell_call);
    g_cell_call = call.release().ptr();
  });
  m.def("_register_vjp", [](py::object fn) {
    Py_XDECREF(g_vjp_fn);
    g_vjp_fn = fn.release().ptr();
  });
  m.def("_set_skip_prefixes", [](std::vector<std::string> p) { SetSkipPrefixes(std::move(p)); });
}

}  // namespace pijit
