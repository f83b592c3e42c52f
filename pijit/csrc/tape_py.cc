// Python bindings of the gradient tape (runtime/tape.h): pijit._C._Tape, used by pijit.grad.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "absl/strings/match.h"
#include "graph/serialize.h"
#include "interop/convert.h"
#include "pijit/csrc/module.h"
#include "runtime/tape.h"

namespace py = pybind11;

namespace pijit {

namespace {

// autodiff's own refusals (an op without a VJP rule, gradients of gradients) are
// NotImplementedError; a Python error raised by a bprop stays set; the rest map as
// kernels/errors.h says.
[[noreturn]] void ThrowGradError(const absl::Status& s) {
  if (s.code() == absl::StatusCode::kCancelled) throw py::error_already_set();
  if (s.code() == absl::StatusCode::kUnimplemented && absl::StartsWith(s.message(), "grad:")) {
    PyErr_SetString(PyExc_NotImplementedError, std::string(s.message()).c_str());
    throw py::error_already_set();
  }
  ThrowStatus(s);
}

}  // namespace

void BindTape(py::module_& m) {
  py::class_<Tape>(m, "_Tape", "A gradient tape (runtime/tape.h); used by pijit.grad.")
      .def(py::init<>())
      .def("watch", [](Tape& t, py::handle obj) {
        auto r = t.Watch(obj.ptr());
        if (!r.ok()) {
          ThrowStatus(r.status());  // a non-tensor is a TypeError
        }
        return *r;
      })
      .def("tracks", [](const Tape& t, py::handle obj) { return t.Tracks(obj.ptr()); })
      .def("record_everything", &Tape::RecordEverything,
           "Records integer results and random draws too (pijit.export).")
      .def("forward_graph", [](const Tape& t, py::list outputs) {
        std::vector<PyObject*> outs;
        for (py::handle h : outputs) outs.push_back(h.ptr());
        auto g = t.ForwardGraph(outs);
        if (!g.ok()) ThrowStatus(g.status());
        auto bytes = graph::Serialize(*g);
        if (!bytes.ok()) ThrowStatus(bytes.status());
        return py::bytes(*bytes);
      }, "The recorded computation of `outputs` from the watched tensors, as graph-file bytes.")
      .def("start", &Tape::Start)
      .def("stop", &Tape::Stop)
      .def("record_custom", [](Tape& t, py::list inputs, py::list outputs, py::handle bprop) {
        std::vector<PyObject*> in, out;
        for (py::handle h : inputs) in.push_back(h.ptr());
        for (py::handle h : outputs) out.push_back(h.ptr());
        absl::Status st = t.RecordCustom(in, out, bprop.ptr());
        if (!st.ok()) ThrowStatus(st);
      })
      .def("gradient", [](Tape& t, py::list outputs, py::list seeds, std::vector<int> wrt) {
        if (ActiveTape() != nullptr) {  // inside an enclosing gradient: differentiable results
          std::vector<PyObject*> outs, seed_objects;
          for (py::handle h : outputs) outs.push_back(h.ptr());
          for (py::handle h : seeds) seed_objects.push_back(h.ptr());
          auto r = t.RecordedGradient(outs, seed_objects, wrt);
          if (!r.ok()) ThrowGradError(r.status());
          py::list result;
          for (PyObject* g : *r) {
            if (g) result.append(py::reinterpret_steal<py::object>(g));
            else result.append(py::none());
          }
          return result;
        }
        std::vector<PyObject*> outs;
        std::vector<Tensor> seed_values;
        for (py::handle h : outputs) outs.push_back(h.ptr());
        for (py::handle h : seeds) {
          Tensor* s = AsTensor(h.ptr());
          if (s == nullptr) throw py::type_error("grad: a sensitivity must be a Tensor");
          seed_values.push_back(*s);
        }
        auto r = t.Gradient(outs, seed_values, wrt);
        if (!r.ok()) ThrowGradError(r.status());
        py::list result;
        for (auto& g : *r) {
          if (g) result.append(py::reinterpret_steal<py::object>(WrapTensor(std::move(*g))));
          else result.append(py::none());
        }
        return result;
      });
  m.def("_tape_recording", [] { return ActiveTape() != nullptr; },
        "Whether a gradient tape records eager ops on this thread.");
  m.def("_active_tape", [] { return ActiveTape(); }, py::return_value_policy::reference);
  m.def("_pause_recording", &Tape::Pause);
  m.def("_resume_recording", &Tape::Resume);
}

}  // namespace pijit
