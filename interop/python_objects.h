// Python objects the engine compares against or raises, set once by module initialisation or
// by pijit's Python layer when it registers them (pijit/csrc/jit.cc). Borrowed from their
// owners' point of view: each holds one reference of its own.
#pragma once
#include <Python.h>

namespace pijit {

extern PyObject* g_vjp_fn;             // pijit._autodiff.vjp: capture inlines its calls
extern PyObject* g_cell_call;          // pijit.nn.Cell.__call__: capture inlines Cell calls
extern PyObject* g_graph_break_error;  // pijit.GraphBreakError: a fullgraph capture failed
extern PyObject* g_graph_break_fn;
extern PyObject* g_dtype_type;         // pijit.dtype: its values (pijit.float32, ...) are immutable     // pijit.graph_break: capture breaks the graph at its calls

}  // namespace pijit
