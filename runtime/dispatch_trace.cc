#include "runtime/dispatch_trace.h"

#include <string>

#include "runtime/trace.h"

namespace pijit::runtime {
namespace {

// The code object's identity in every event: qualified name, file and first line.
TraceEvent& Where(TraceEvent& e, PyCodeObject* code) {
  return e.Str("function", PyUnicode_AsUTF8(code->co_qualname))
      .Str("file", PyUnicode_AsUTF8(code->co_filename))
      .Int("line", code->co_firstlineno);
}

}  // namespace

void TraceCapture(const CodeState& st, PyCodeObject* code, const CacheEntry& entry,
                  const CompilePhases& phases) {
  if (!TraceOn()) return;
  TraceEvent e("capture");
  Where(e, code);
  e.Str("outcome", entry.brk ? "break" : entry.eager ? "eager" : "graph")
      .Int("compile_index", st.compile_count)
      .Int("cache_entries", static_cast<int64_t>(st.entries.size()))
      .Bool("dynamic", entry.dynamic);
  if (entry.graph) {
    const graph::Graph& g = entry.graph->graph();
    e.Str("graph", g.ToText()).Int("num_ops", static_cast<int64_t>(g.num_ops()));
  } else {
    e.None("graph").Int("num_ops", 0);
  }
  e.Str("guards", entry.guards->ToText());
  PyObject* inlined = PyList_New(0);
  for (const std::string& name : entry.inlined) {
    PyObject* n = PyUnicode_DecodeUTF8(name.data(), static_cast<Py_ssize_t>(name.size()), "replace");
    if (n) PyList_Append(inlined, n);
    Py_XDECREF(n);
  }
  e.Steal("inlined", inlined);
  if (entry.brk || entry.eager) e.Steal("reason", entry.reason.ToDict(/*with_text=*/false));
  else e.None("reason");
  PyObject* times = Py_BuildValue("{s:d,s:d,s:d}", "capture_ms", phases.capture_ms, "compile_ms",
                                  phases.compile_ms, "settle_ms", phases.settle_ms);
  e.Steal("phases_ms", times).Emit();
}

void TraceRecompile(const CodeState& st, PyCodeObject* code, const guards::Roots& roots) {
  if (!TraceOn() || st.entries.empty()) return;
  std::string guard, now;
  if (!st.entries.front()->guards->FirstFailure(roots, &guard, &now)) {
    guard = "(the most recent entry's guards pass: another entry's program rejected the call)";
  }
  TraceEvent e("recompile");
  Where(e, code);
  e.Int("cache_entries", static_cast<int64_t>(st.entries.size()))
      .Str("failed_guard", guard)
      .Str("value_now", now)
      .Emit();
}

void TraceRecompileLimit(const CodeState& st, PyCodeObject* code, size_t limit) {
  if (!TraceOn()) return;
  TraceEvent e("recompile_limit");
  Where(e, code);
  e.Int("limit", static_cast<int64_t>(limit)).Int("compile_count", st.compile_count).Emit();
}

void TraceEagerFallback(PyCodeObject* code, const bytecode::BreakReason& reason) {
  if (!TraceOn()) return;
  TraceEvent e("eager_fallback");
  Where(e, code);
  e.Steal("reason", reason.ToDict(/*with_text=*/false)).Emit();
}

}  // namespace pijit::runtime
