// Entry points of the extension's parts, called from PYBIND11_MODULE.
#pragma once
#include <pybind11/pybind11.h>


namespace pijit {
void BindTensor(pybind11::module_& m);
void BindComplex(pybind11::module_& m);
void BindJit(pybind11::module_& m);
void BindDLPack(pybind11::module_& m, pybind11::object tensor_class);
void BindTape(pybind11::module_& m);
void BindPrimitive(pybind11::module_& m);
void BindCuda(pybind11::module_& m);
void BindComm(pybind11::module_& m);
void BindGraphFile(pybind11::module_& m);
// Replaces the generic number and comparison slots of pijit.Tensor with direct ones
// (number_slots.cc).
void InstallNumberSlots(PyTypeObject* type);
}  // namespace pijit
