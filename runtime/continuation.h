// Running a cache entry that ends in a graph break: build the value stack and locals of
// the break point from the graph's outputs, execute the breaking instruction in a bridge,
// and continue in a resume function (captured like any frame). A driver loop runs the chain
// bridge -> resume -> bridge ...: a resume function that breaks again hands its next step
// back instead of nesting, so a break inside a loop costs no Python frames per iteration.
// An exception the instruction raises goes to its exception-table handler, entered as a
// resume function at the handler (with and try blocks behave as without jit).
#pragma once
#include <Python.h>

#include <vector>

#include "absl/container/inlined_vector.h"
#include "runtime/cache.h"

namespace pijit {

// What BuildValue builds from: graph outputs, resolved guard sources, and what it built
// already (one Python object per graph output and per container, so aliasing survives).
struct BuildContext {
  std::vector<Tensor>& outs;
  PyObject* const* values;
  absl::InlinedVector<PyObject*, 4> made;  // owned, per graph output
  std::vector<PyObject*> memo;  // borrowed, per memo slot
  std::vector<PyObject*> held;  // owned: the first values, while effects replay
  BuildContext(std::vector<Tensor>& o, PyObject* const* v) : outs(o), values(v), made(o.size()) {}
  // Remembers `obj` (borrowed) as the object of memo slot `slot` (none when negative).
  void Remember(int32_t slot, PyObject* obj) {
    if (slot < 0) return;
    if (memo.size() <= static_cast<size_t>(slot)) memo.resize(slot + 1, nullptr);
    memo[slot] = obj;
  }
  ~BuildContext() {
    for (PyObject* m : made) Py_XDECREF(m);
    for (PyObject* h : held) Py_XDECREF(h);
  }
  // The resolved sources are borrowed: a replayed store or deletion can drop the last other
  // reference to one (an item popped from a dict) that the output or a later effect uses.
  void Hold(size_t n) {
    for (size_t i = 0; i < n; ++i) {
      Py_XINCREF(values[i]);
      held.push_back(values[i]);
    }
  }
};

// Builds the Python value `spec` describes. Returns a new reference; nullptr either with an
// exception set, or without one for a NULL stack slot or an unbound local.
PyObject* BuildValue(const bytecode::OutputSpec& spec, BuildContext& cx);
// Performs a capture's recorded side effects in order (`func`: whose globals are stored to);
// false with a Python error set when one raises.
bool ReplayEffects(const std::vector<bytecode::Effect>& effects, BuildContext& cx, PyObject* func);

// False deep inside nested graph breaks (a jitted call made by a bridge that breaks itself):
// resume functions then run eagerly.
bool ResumeCaptureAllowed();

// Builds (and caches in the code's state) the bridge and resume code objects a break entry
// needs and stores them in the entry (e.prepared), so that its calls do no setup work; an
// error means the entry must run eagerly instead.
absl::Status PrepareBreak(runtime::CodeState* st, PyCodeObject* code, runtime::CacheEntry& e);

// `outs` are the prefix graph's outputs, `values` the resolved guard sources.
PyObject* RunBreak(runtime::CodeState* st, const runtime::CacheEntry& e, PyCodeObject* code,
                   PyObject* func, PyObject* const* values, std::vector<Tensor>& outs);

}  // namespace pijit
