// The dispatch path's events for the structured trace (runtime/trace.h): what each compile
// produced and how long its phases took, why a call missed the cache, the recompile limit and
// eager fallbacks. Each function returns at once when no trace sink is installed.
#pragma once
#include <Python.h>

#include "guards/guards.h"
#include "runtime/cache.h"

namespace pijit::runtime {

// Milliseconds per phase of one compile: abstract interpretation (capture), graph
// compilation (passes, memory plan, kernels) and the graph break's bridge and resume code.
struct CompilePhases {
  double capture_ms = 0, compile_ms = 0, settle_ms = 0;
};

// A new cache entry: "capture" with its outcome ("graph", "break" or "eager").
void TraceCapture(const CodeState& st, PyCodeObject* code, const CacheEntry& entry,
                  const CompilePhases& phases);
// A miss of a code object that has compiled before: "recompile" with the guard of the most
// recently used entry that rejects the call and what its value is now.
void TraceRecompile(const CodeState& st, PyCodeObject* code, const guards::Roots& roots);
// "recompile_limit": the cache is full; calls that match no entry run eagerly.
void TraceRecompileLimit(const CodeState& st, PyCodeObject* code, size_t limit);
// "eager_fallback": a compiled entry could not run its graph (the reason says why).
void TraceEagerFallback(PyCodeObject* code, const bytecode::BreakReason& reason);

}  // namespace pijit::runtime
