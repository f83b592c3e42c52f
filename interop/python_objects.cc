#include "interop/python_objects.h"

namespace pijit {

PyObject* g_vjp_fn = nullptr;
PyObject* g_cell_call = nullptr;
PyObject* g_graph_break_error = nullptr;
PyObject* g_graph_break_fn = nullptr;
PyObject* g_dtype_type = nullptr;

}  // namespace pijit
