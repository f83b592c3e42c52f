// Which op a pijit.ops builtin performs, for capture (bytecode/handlers_call.cc).
#include "interop/pyops.h"

namespace pijit {
namespace {
absl::Span<const PyMethodDef> g_op_functions;
}  // namespace

void RegisterOpFunctions(absl::Span<const PyMethodDef> defs) { g_op_functions = defs; }

bool PyOpOfBuiltin(PyObject* fn, PyOp* out) {
  if (!PyCFunction_Check(fn)) return false;
  const PyCFunction f = PyCFunction_GET_FUNCTION(fn);
  for (size_t i = 0; i < g_op_functions.size(); ++i) {
    if (g_op_functions[i].ml_meth == f) {
      *out = static_cast<PyOp>(i);
      return true;
    }
  }
  return false;
}

}  // namespace pijit
