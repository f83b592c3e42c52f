// Entry points of the extension's parts, called from PYBIND11_MODULE.
#pragma once
#include <pybind11/pybind11.h>

#include "pijit/csrc/pyops.h"

namespace pijit {
void BindTensor(pybind11::module_& m);
void BindJit(pybind11::module_& m);
void BindDLPack(pybind11::module_& m, pybind11::object tensor_class);
void BindTape(pybind11::module_& m);
// The op a pijit.ops builtin performs; false for any other object.
bool PyOpOfBuiltin(PyObject* fn, PyOp* out);
}  // namespace pijit
