// The structured trace of the compile path (pijit.trace(dir), PIJIT_TRACE=dir): each capture
// with its outcome, graph, guards, break and compile time per phase, each recompile with the
// guard that rejected the call, each recompile-limit event and eager fallback. The runtime
// builds each event as a Python dict and hands it to a sink set from Python (pijit/trace.py
// writes them as JSON lines); with no sink nothing is built. Only compiles and misses emit
// events, never a cache hit, so a traced program's steady state runs as an untraced one.
#pragma once
#include <Python.h>

#include <cstdint>
#include <string_view>

namespace pijit::runtime {

// Whether a sink is installed.
bool TraceOn();
// Installs `sink` (a callable taking one dict; None or nullptr removes it).
void SetTraceSink(PyObject* sink);

// One event: fields added in order, then Emit() hands the dict to the sink. A sink that
// raises is reported as unraisable and removed: tracing never changes a program's result.
class TraceEvent {
 public:
  explicit TraceEvent(const char* event);
  ~TraceEvent();
  TraceEvent(const TraceEvent&) = delete;
  TraceEvent& operator=(const TraceEvent&) = delete;

  TraceEvent& Str(const char* key, std::string_view value);
  TraceEvent& Int(const char* key, int64_t value);
  TraceEvent& Float(const char* key, double value);
  TraceEvent& Bool(const char* key, bool value);
  TraceEvent& None(const char* key);
  // Takes the reference; a nullptr value (a failed conversion) is cleared and stored as None.
  TraceEvent& Steal(const char* key, PyObject* value);
  void Emit();

 private:
  PyObject* dict_;
};

}  // namespace pijit::runtime
