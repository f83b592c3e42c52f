// Dispatch of one call through a code object's cache: guard checks, capture on a miss,
// running the compiled graph, or asking the caller to run the original code eagerly.
#pragma once
#include <Python.h>

#include <string>
#include <utility>
#include <vector>

#include "runtime/cache.h"

namespace pijit {

struct DispatchOptions {
  bool fullgraph = false;  // a capture failure is an error (PSJit / fullgraph=True)
  bool optimize = true;    // jit_level "O0" turns the optimisation passes off
  bool dynamic = false;    // dynamic=1: the arguments' sizes are symbolic from the first compile
  // (argument, dimension) pairs symbolic from the first compile (Cell.set_inputs placeholders).
  std::vector<std::pair<int, int>> dynamic_dims;
};

// Set once pijit.mutable has marked a value: until then calls skip looking for such arguments.
extern bool g_mutable_made;

// Returns a new reference, or nullptr with an exception set, or nullptr with *run_eager set
// when the caller must run the function normally.
PyObject* Dispatch(runtime::CodeState* state, PyCodeObject* code, PyObject* func,
                   PyObject* const* args, int nargs, const DispatchOptions& options,
                   bool* run_eager);

// Thread-local control of what the frame hook captures.
struct ThreadControl {
  int in_pijit = 0;                     // >0 while pijit itself runs Python code
  PyCodeObject* target = nullptr;       // the next frame of this code is a jit call
  DispatchOptions target_options;
  PyCodeObject* bypass = nullptr;       // the next frame of this code runs eagerly
  int capture_depth = 0;                // inside `with pijit.capture()`
};
ThreadControl& Control();

// Calls `fn` with capture: a Python function's code goes through its cache (the fast path
// when CPython need not bind arguments, the frame hook otherwise); anything else, pijit's
// own code and the standard library are simply called. `always` captures even skipped
// files (an explicit @jit).
PyObject* CallCaptured(PyObject* fn, PyObject* const* args, size_t nargsf, PyObject* kwnames,
                       const DispatchOptions& options, bool always = false);

// Files whose code capture-all mode leaves alone (pijit itself, the standard library).
void SetSkipPrefixes(std::vector<std::string> prefixes);
bool Skipped(PyCodeObject* code);


}  // namespace pijit
