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
// The binary operator `op` on a and b in operand order, as Tensor.__add__ and the other
// operator methods compute it (a new reference; NotImplemented for operands a Tensor does not
// take; nullptr with an exception set on error).
PyObject* BinaryOperator(PyOp op, PyObject* a, PyObject* b);
// Replaces the generic number and comparison slots of pijit.Tensor with direct ones
// (number_slots.cc).
void InstallNumberSlots(PyTypeObject* type);
}  // namespace pijit
