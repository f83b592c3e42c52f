// Bindings of the complex tensors' parts (pijit/_ops_complex.py builds on them).
#include <pybind11/pybind11.h>

#include "absl/strings/str_format.h"
#include "interop/convert.h"
#include "kernels/cpu/complex.h"
#include "pijit/csrc/module.h"
#include "runtime/tape.h"

namespace py = pybind11;

namespace pijit {

void BindComplex(py::module_& m) {
  // Complex tensors live on the host (graph/complex_support.h), and no gradient flows through
  // them: these read host memory, and refuse a tensor that a gradient tape differentiates
  // (unrecorded, its gradient would silently be missing).
  auto operand = [](py::handle obj, const char* op) -> const Tensor& {
    const Tensor* t = AsTensor(obj.ptr());
    if (t == nullptr) {
      ThrowStatus(absl::UnimplementedError(absl::StrFormat(
          "%s: expected a Tensor, got %s", op, Py_TYPE(obj.ptr())->tp_name)));
    }
    if (t->device() != Device::kCPU) {
      ThrowStatus(absl::UnimplementedError(absl::StrFormat(
          "%s: the tensor is on the %s; complex tensors are supported on the CPU only", op,
          DeviceName(t->device()))));
    }
    if (Tape* tape = ActiveTape(); tape != nullptr && tape->Tracks(obj.ptr())) {
      ThrowStatus(absl::UnimplementedError(absl::StrFormat(
          tape->RecordsEverything() ? "%s: complex tensors cannot be held in a graph file"
                                    : "%s: gradients through complex tensors are not supported",
          op)));
    }
    return *t;
  };
  // The parts come back as new tensors, as MindSpore's ops return them: a view would let an
  // in-place update of one change the complex tensor.
  auto copy_or_throw = [](absl::StatusOr<Tensor> view) {
    if (!view.ok()) ThrowStatus(view.status());
    Tensor out = Tensor::Empty(view->shape(), view->dtype());
    CopyInto(*view, out);
    return out;
  };
  m.def("_complex_part", [operand, copy_or_throw](py::handle t, bool imag) {
    return copy_or_throw(ComplexPart(operand(t, imag ? "imag" : "real"), imag));
  }, "The real or imaginary part of a complex tensor (a copy).");
  m.def("_view_as_real", [operand, copy_or_throw](py::handle t) {
    return copy_or_throw(ViewAsReal(operand(t, "view_as_real")));
  }, "A complex tensor's parts as a real tensor of shape (..., 2) (a copy).");
  m.def("_make_complex", [operand, copy_or_throw](py::handle re, py::handle im) {
    auto r = MakeComplex(operand(re, "Complex"), operand(im, "Complex"));
    if (!r.ok()) ThrowStatus(r.status());
    return *std::move(r);
  }, "real + imag * 1j for float32 or float64 tensors of one dtype, broadcast together.");
}

}  // namespace pijit
