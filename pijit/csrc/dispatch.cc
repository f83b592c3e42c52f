#include "pijit/csrc/dispatch.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "pijit/csrc/convert.h"

namespace pijit {

ThreadControl& Control() {
  static thread_local ThreadControl control;
  return control;
}

bool LogEnabled(const char* what) {
  static const std::string spec = [] {
    const char* v = std::getenv("PIJIT_LOG");
    return v ? std::string(v) : std::string();
  }();
  if (spec.empty()) return false;
  for (absl::string_view part : absl::StrSplit(spec, ','))
    if (part == what || part == "all") return true;
  return false;
}

PyObject* g_graph_break_error = nullptr;

namespace {

using guards::CacheEntry;
using guards::CodeState;

std::string CodeName(PyCodeObject* code) {
  return absl::StrCat(PyUnicode_AsUTF8(code->co_qualname), " (", PyUnicode_AsUTF8(code->co_filename),
                      ":", code->co_firstlineno, ")");
}

PyObject* BuildOutput(const bytecode::OutputSpec& spec, std::vector<Tensor>& outs,
                      std::vector<PyObject*>& made, PyObject* const* values) {
  using K = bytecode::OutputSpec;
  switch (spec.kind) {
    case K::kGraphOutput: {
      PyObject*& o = made[spec.index];
      if (!o) o = WrapTensor(std::move(outs[spec.index]));
      Py_XINCREF(o);
      return o;
    }
    case K::kSource:
      Py_INCREF(values[spec.index]);
      return values[spec.index];
    case K::kConstant:
      Py_INCREF(spec.constant);
      return spec.constant;
    case K::kTuple:
    case K::kList: {
      const Py_ssize_t n = static_cast<Py_ssize_t>(spec.items.size());
      PyObject* seq = spec.kind == K::kTuple ? PyTuple_New(n) : PyList_New(n);
      if (!seq) return nullptr;
      for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject* item = BuildOutput(spec.items[i], outs, made, values);
        if (!item) {
          Py_DECREF(seq);
          return nullptr;
        }
        if (spec.kind == K::kTuple) PyTuple_SET_ITEM(seq, i, item);
        else PyList_SET_ITEM(seq, i, item);
      }
      return seq;
    }
  }
  return nullptr;
}

// Runs an entry's graph and builds the result. A graph with symbolic sizes may meet sizes
// its ops reject (shapes that do not broadcast, say): that call then runs eagerly, which
// raises the error exactly as without jit.
PyObject* RunEntry(const CacheEntry& e, PyObject* const* values, bool* run_eager) {
  std::vector<Tensor> outs;
  outs.reserve(4);
  if (e.graph) {
    absl::InlinedVector<const Tensor*, 8> inputs;
    for (int32_t src : e.param_sources) inputs.push_back(AsTensor(values[src]));
    absl::Status st = e.graph->Run(inputs, &outs);
    if (!st.ok()) {
      if (e.dynamic) {
        *run_eager = true;
        return nullptr;
      }
      SetPyError(st);
      return nullptr;
    }
  }
  std::vector<PyObject*> made(outs.size(), nullptr);
  PyObject* result = BuildOutput(e.output, outs, made, values);
  for (PyObject* o : made) Py_XDECREF(o);
  return result;
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
                                 " as one graph: ", r.category, " at ", r.file, ":", r.line,
                                 "\n    ", line.substr(line.find_first_not_of(' ') == std::string::npos ? 0 : line.find_first_not_of(' ')),
                                 "\n", r.explanation);
  if (!r.hint.empty()) absl::StrAppend(&msg, "\nhint: ", r.hint);
  absl::StrAppend(&msg, "\n(use jit(mode=\"PIJit\") to run such code eagerly instead)");
  PyErr_SetString(g_graph_break_error, msg.c_str());
}

// Errors of the user's own code (bad shapes, Python errors) surface from the eager run,
// exactly as without jit; only code pijit cannot capture is an error in strict mode.
bool IsUserError(const bytecode::BreakReason& r) {
  return r.category == "invalid_input" || r.category == "python_error";
}

}  // namespace

PyObject* Dispatch(CodeState* st, PyCodeObject* code, PyObject* func, PyObject* const* args,
                   int nargs, const DispatchOptions& options, bool* run_eager) {
  *run_eager = false;
  ++st->call_count;
  guards::Roots roots{args, PyFunction_GET_GLOBALS(func),
                      reinterpret_cast<PyFunctionObject*>(func)->func_builtins,
                      PyFunction_GET_CLOSURE(func)};
  absl::InlinedVector<PyObject*, 16> values;
  auto& entries = st->entries;
  for (size_t i = 0; i < entries.size(); ++i) {
    CacheEntry& e = *entries[i];
    values.resize(e.guards->num_sources());
    if (!e.guards->Check(roots, values.data())) continue;
    if (i > 0) std::rotate(entries.begin(), entries.begin() + i, entries.begin() + i + 1);
    ++e.hits;
    ++st->hit_count;
    if (e.eager) {
      if (options.fullgraph && !IsUserError(e.reason)) {
        RaiseGraphBreak(code, e.reason);
        return nullptr;
      }
      ++st->eager_count;
      *run_eager = true;
      return nullptr;
    }
    return RunEntry(e, values.data(), run_eager);
  }
  // Entries guarding objects that have died can never match again: drop them.
  entries.erase(std::remove_if(entries.begin(), entries.end(),
                               [](const auto& e) { return e->guards->HasDeadReferent(); }),
                entries.end());
  if (entries.size() >= guards::CacheLimit()) {
    if (!st->limit_warned) {
      st->limit_warned = true;
      std::string msg = absl::StrCat("pijit: ", CodeName(code), " hit the recompile limit (",
                                     guards::CacheLimit(), " cache entries); it runs eagerly "
                                     "for inputs that match no entry");
      if (PyErr_WarnEx(PyExc_RuntimeWarning, msg.c_str(), 1) < 0) return nullptr;
    }
    ++st->eager_count;
    *run_eager = true;
    return nullptr;
  }
  if (LogEnabled("recompiles") && st->compile_count > 0) {
    PySys_WriteStderr("[pijit] recompiling %s: no cache entry matched (%zu entries)\n",
                      CodeName(code).c_str(), entries.size());
  }
  // A miss where tensors differ from an entry in sizes only: make those sizes symbolic, so
  // that a loop over varying batch sizes compiles at most twice.
  if (!st->static_only) {
    std::vector<guards::DynamicDim> dims;
    for (const auto& e : entries) {
      if (e->eager) continue;
      values.resize(e->guards->num_sources());
      if (e->guards->ShapeOnlyMismatch(roots, values.data(), &dims)) break;
      dims.clear();
    }
    for (auto& d : dims) {
      if (std::find(st->dynamic_dims.begin(), st->dynamic_dims.end(), d) == st->dynamic_dims.end())
        st->dynamic_dims.push_back(std::move(d));
    }
  }
  ++Control().in_pijit;
  bytecode::CaptureResult cr = bytecode::Capture(code, func, args, nargs, st->dynamic_dims);
  if (cr.dynamic && cr.read_shape) {
    // The trace used sizes as Python values: specialise on them from now on.
    st->static_only = true;
    st->dynamic_dims.clear();
    cr = bytecode::Capture(code, func, args, nargs);
  }
  --Control().in_pijit;
  if (LogEnabled("recompiles") && cr.dynamic) {
    PySys_WriteStderr("[pijit] %s: compiling with symbolic sizes\n", CodeName(code).c_str());
  }
  ++st->compile_count;
  st->saw_tensor_work |= cr.graph.params().size() + cr.graph.num_ops() > 0;
  auto entry = std::make_unique<CacheEntry>();
  entry->guards = std::move(cr.guards);
  entry->param_sources = std::move(cr.param_sources);
  entry->output = std::move(cr.output);
  entry->dynamic = cr.dynamic;
  if (cr.ok && cr.graph.num_ops() + cr.graph.params().size() > 0 && !cr.graph.outputs().empty()) {
    auto compiled = graph::CompiledGraph::Compile(std::move(cr.graph));
    if (compiled.ok()) {
      entry->graph = std::move(*compiled);
    } else {
      cr.ok = false;
      cr.reason = {"internal", PyUnicode_AsUTF8(code->co_filename), code->co_firstlineno,
                   std::string(compiled.status().message()), ""};
    }
  }
  if (!cr.ok) {
    entry->eager = true;
    // Running eagerly is always right, so an eager entry's guards only decide when to try
    // capture again. They hold the decisions that led to the reason (branch conditions,
    // types); sizes rarely matter to code pijit cannot capture, so unless the trace read
    // sizes the entry serves every size instead of recompiling per shape.
    if (!IsUserError(cr.reason) && !cr.read_shape) entry->guards->RelaxTensorSizes();
    entry->reason = cr.reason;
    ++st->graph_break_count;
    st->reasons.push_back(cr.reason);
    if (LogEnabled("graph_breaks")) {
      PySys_WriteStderr("[pijit] %s runs eagerly: %s\n", CodeName(code).c_str(),
                        cr.reason.ToText().c_str());
    }
  } else {
    if (LogEnabled("graph") && entry->graph) {
      PySys_WriteStderr("[pijit] graph for %s:\n%s", CodeName(code).c_str(),
                        entry->graph->graph().ToText().c_str());
    }
    if (LogEnabled("guards")) {
      PySys_WriteStderr("[pijit] guards for %s:\n%s", CodeName(code).c_str(),
                        entry->guards->ToText().c_str());
    }
  }
  entries.insert(entries.begin(), std::move(entry));
  CacheEntry& e = *entries.front();
  if (e.eager) {
    if (options.fullgraph && !IsUserError(e.reason)) {
      RaiseGraphBreak(code, e.reason);
      return nullptr;
    }
    ++st->eager_count;
    *run_eager = true;
    return nullptr;
  }
  values.resize(e.guards->num_sources());
  if (!e.guards->Check(roots, values.data())) {
    // The guards must accept the call they were built from; if not, stay correct.
    e.eager = true;
    e.reason = {"internal", PyUnicode_AsUTF8(code->co_filename), code->co_firstlineno,
                "guards reject the inputs they were built from", ""};
    *run_eager = true;
    return nullptr;
  }
  return RunEntry(e, values.data(), run_eager);
}

}  // namespace pijit
