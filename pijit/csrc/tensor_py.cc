// Python bindings of the tensor runtime: pijit.Tensor, dtypes, its methods and operators, and
// the pijit.ops builtins (the eager op path itself is runtime/eager_ops.cc).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <vector>

#include "absl/strings/str_format.h"
#include "frame_eval/eval_frame.h"
#include "graph/backend.h"
#include "interop/convert.h"
#include "interop/numpy_convert.h"
#include "interop/python_objects.h"
#include "interop/pyops.h"
#include "pijit/csrc/module.h"
#include "runtime/eager_ops.h"
#include "runtime/tape.h"

namespace py = pybind11;

namespace pijit {
namespace {
allocfunc g_tensor_alloc = nullptr;  // the tensor type's own tp_alloc
getbufferproc g_tensor_getbuffer = nullptr;  // and its buffer function (pybind's)

py::object Dunder(PyOp op, py::handle a, py::handle b) {
  PyObject* r = BinaryOperator(op, a.ptr(), b.ptr());
  if (!r) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(r);
}

// `self`'s tensor, its values about to be read into Python: recording tapes that track it
// note the read (runtime/tape.h, NoteHostRead).
const Tensor& HostRead(py::handle self) {
  if (ActiveTape() != nullptr) Tape::NoteHostRead(self.ptr());
  return *AsTensor(self.ptr());
}

py::object UnaryDunder(PyOp op, py::handle a) {
  PyObject* args[1] = {a.ptr()};
  PyObject* r = CallEager(op, args, 1, nullptr);
  if (!r) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(r);
}

// The single element of `t` as a Python bool, int, float or complex; `what` names the conversion.
py::object ToPyScalar(const Tensor& device_or_host, const char* what) {
  if (device_or_host.numel() != 1) {
    ThrowStatus(absl::InvalidArgumentError(absl::StrFormat(
        "%s: only a Tensor with one element can be converted to a Python scalar, this one has "
        "shape %s (%d elements)", what, ShapeToString(device_or_host.shape()), device_or_host.numel())));
  }
  const Tensor t = OnHost(device_or_host);  // its one value comes to the host
  if (IsComplex(t.dtype())) {
    return DispatchComplex(t.dtype(), [&](auto tag) -> py::object {
      const auto v = *t.data<decltype(tag)>();
      return py::reinterpret_steal<py::object>(PyComplex_FromDoubles(v.real(), v.imag()));
    });
  }
  return DispatchDType(t.dtype(), [&](auto tag) -> py::object {
    using T = decltype(tag);
    const T v = *t.data<T>();  // one element: the view's offset addresses it
    if constexpr (std::is_same_v<T, bool>) return py::bool_(v);
    else if constexpr (std::is_integral_v<T>) return py::int_(v);
    else return py::float_(static_cast<double>(v));
  });
}

// MindSpore's device names ("GPU", "CPU"; "cuda" too) as a device.
Device DeviceFromName(const std::string& name, const char* what) {
  if (name == "GPU" || name == "gpu" || name == "cuda" || name == "CUDA") return Device::kCUDA;
  if (name == "CPU" || name == "cpu") return Device::kCPU;
  ThrowStatus(absl::InvalidArgumentError(absl::StrFormat(
      "%s: unknown device '%s'; pijit runs on \"CPU\" and \"GPU\"", what, name)));
  return Device::kCPU;
}

Tensor Moved(const Tensor& t, const std::string& device, const char* what) {
  auto moved = graph::MoveToDevice(t, DeviceFromName(device, what));
  if (!moved.ok()) ThrowStatus(moved.status());
  return *moved;
}

}  // namespace

void BindTensor(py::module_& m) {
  py::enum_<DType> dtype(m, "dtype");
#define PIJIT_ENUMV(e, t, n, s, c) dtype.value(s, DType::e);
  PIJIT_DTYPES(PIJIT_ENUMV)
#undef PIJIT_ENUMV
  dtype.def("__repr__", [](DType d) { return std::string(DTypeName(d)); });
  dtype.def("__str__", [](DType d) { return std::string(DTypeName(d)); });
  dtype.def_property_readonly("itemsize", [](DType d) { return ItemSize(d); });
  dtype.def("to_numpy", [](DType d) { return NumpyDType(d, "to_numpy"); });
  g_dtype_type = dtype.ptr();
  Py_INCREF(g_dtype_type);
  // One Python object per dtype, as in MindSpore (`t.dtype is pijit.float32`): pybind11 would
  // make a new enum instance on each conversion. Leaked: they live as long as the module.
  static auto* const dtype_objects = new std::vector<py::object>();
#define PIJIT_DTYPE_OBJECT(e, t, n, s, c)                                            \
  if (dtype_objects->size() <= static_cast<size_t>(DType::e))                      \
    dtype_objects->resize(static_cast<size_t>(DType::e) + 1);                      \
  (*dtype_objects)[static_cast<size_t>(DType::e)] = dtype.attr(s);
  PIJIT_DTYPES(PIJIT_DTYPE_OBJECT)
#undef PIJIT_DTYPE_OBJECT

  py::class_<Tensor> cls(m, "Tensor", py::dynamic_attr(), py::buffer_protocol());
  // The buffer protocol (memoryview(t), np.frombuffer): zero-copy, strides in bytes. The
  // format is the struct/PEP 3118 character, which bfloat16 does not have.
  cls.def_buffer([](const Tensor& t) -> py::buffer_info {
    if (t.device() != Device::kCPU) {
      ThrowStatus(absl::InvalidArgumentError(absl::StrFormat(
          "buffer: a tensor on the %s has no host memory to share; use asnumpy() (a copy) or "
          "move_to(\"CPU\")", DeviceName(t.device()))));
    }
    if (t.dtype() == DType::kBFloat16) {
      ThrowStatus(absl::UnimplementedError(
          "buffer: bfloat16 has no buffer format; convert with .astype(pijit.float32) first"));
    }
    std::vector<ssize_t> shape(t.shape().begin(), t.shape().end()), strides;
    for (int64_t st : t.strides()) strides.push_back(st * static_cast<ssize_t>(t.itemsize()));
    // PEP 3118 spells a complex element 'Z' before its part's format ('Zf', 'Zd').
    const std::string format = IsComplex(t.dtype())
                                   ? std::string("Z") + NumpyChar(ComplexPartDType(t.dtype()))
                                   : std::string(1, NumpyChar(t.dtype()));
    return py::buffer_info(t.raw_data(), static_cast<ssize_t>(t.itemsize()), format, t.ndim(),
                           shape, strides);
  });
  cls.def(py::init(&MakeTensor), py::arg("input_data") = py::none(), py::arg("dtype") = py::none())
      .def_property_readonly("shape", [](const Tensor& t) {
        py::tuple s(t.ndim());
        for (int64_t i = 0; i < t.ndim(); ++i) s[i] = t.shape()[i];
        return s;
      })
      .def_property_readonly("dtype", [](const Tensor& t) {
        return (*dtype_objects)[static_cast<size_t>(t.dtype())];
      })
      .def_property_readonly("ndim", &Tensor::ndim)
      // Where the values live: "CPU" or "GPU" (MindSpore's device_target names).
      .def_property_readonly("device", [](const Tensor& t) { return std::string(DeviceName(t.device())); })
      .def("_moved_to", [](const Tensor& t, const std::string& device) { return Moved(t, device, "move_to"); })
      .def("_move_in_place", [](Tensor& t, const std::string& device) { t = Moved(t, device, "Tensor"); })
      .def_property_readonly("size", &Tensor::numel)
      .def_property_readonly("strides", [](const Tensor& t) {
        return std::vector<int64_t>(t.strides().begin(), t.strides().end());
      })
      .def("is_contiguous", &Tensor::is_contiguous)
      .def("asnumpy", [](py::handle self) { return ToNumpy(HostRead(self)); })
      .def("numpy", [](py::handle self) { return ToNumpy(HostRead(self)); })
      .def("__array__", [](py::handle self, py::object dtype, py::object copy) {
        const Tensor& t = HostRead(self);
        if (!dtype.is_none() && t.dtype() == DType::kBFloat16) {
          // np.asarray(t, dtype=...) works without ml_dtypes: widen to float32 first (exact).
          auto f = Cast(t, DType::kFloat32);
          if (!f.ok()) ThrowStatus(f.status());
          return ToNumpy(*f).attr("astype")(dtype);
        }
        py::object a = ToNumpy(t);
        if (!dtype.is_none()) a = a.attr("astype")(dtype);
        return a;
      }, py::arg("dtype") = py::none(), py::arg("copy") = py::none())
      .def("astype", [](py::handle self, py::handle d) {
        const Tensor& t = *AsTensor(self.ptr());
        const DType dt = DTypeFromPy(d);
        auto c = graph::CastWhereItIs(t, dt);
        if (!c.ok()) ThrowStatus(c.status());
        py::object result = py::reinterpret_steal<py::object>(WrapTensor(std::move(*c)));
        if (Tape* tape = ActiveTape()) {
          graph::Node n;
          n.op = graph::Op::kCast;
          n.dtype = dt;
          PyObject* operand = self.ptr();
          const Tensor* value = &t;
          tape->Record(std::move(n), {&operand, 1}, {&value, 1}, result.ptr());
        }
        return result;
      })
      .def("__len__", [](const Tensor& t) {
        if (t.ndim() == 0) throw py::type_error("len() of a 0-d tensor");
        return t.shape()[0];
      })
      .def("__add__", [](py::handle a, py::handle b) { return Dunder(PyOp::kAdd, a, b); }, py::is_operator())
      .def("__radd__", [](py::handle a, py::handle b) { return Dunder(PyOp::kAdd, b, a); }, py::is_operator())
      .def("__sub__", [](py::handle a, py::handle b) { return Dunder(PyOp::kSub, a, b); }, py::is_operator())
      .def("__rsub__", [](py::handle a, py::handle b) { return Dunder(PyOp::kSub, b, a); }, py::is_operator())
      .def("__mul__", [](py::handle a, py::handle b) { return Dunder(PyOp::kMul, a, b); }, py::is_operator())
      .def("__rmul__", [](py::handle a, py::handle b) { return Dunder(PyOp::kMul, b, a); }, py::is_operator())
      .def("__truediv__", [](py::handle a, py::handle b) { return Dunder(PyOp::kDiv, a, b); }, py::is_operator())
      .def("__rtruediv__", [](py::handle a, py::handle b) { return Dunder(PyOp::kDiv, b, a); }, py::is_operator())
      .def("__matmul__", [](py::handle a, py::handle b) { return Dunder(PyOp::kMatMul, a, b); }, py::is_operator())
      .def("__rmatmul__", [](py::handle a, py::handle b) { return Dunder(PyOp::kMatMul, b, a); }, py::is_operator())
      .def("__pow__", [](py::handle a, py::handle b) { return Dunder(PyOp::kPow, a, b); }, py::is_operator())
      .def("__rpow__", [](py::handle a, py::handle b) { return Dunder(PyOp::kPow, b, a); }, py::is_operator())
      .def("__floordiv__", [](py::handle a, py::handle b) { return Dunder(PyOp::kFloorDivide, a, b); }, py::is_operator())
      .def("__rfloordiv__", [](py::handle a, py::handle b) { return Dunder(PyOp::kFloorDivide, b, a); }, py::is_operator())
      .def("__mod__", [](py::handle a, py::handle b) { return Dunder(PyOp::kMod, a, b); }, py::is_operator())
      .def("__rmod__", [](py::handle a, py::handle b) { return Dunder(PyOp::kMod, b, a); }, py::is_operator())
      .def("__and__", [](py::handle a, py::handle b) { return Dunder(PyOp::kBitwiseAnd, a, b); }, py::is_operator())
      .def("__rand__", [](py::handle a, py::handle b) { return Dunder(PyOp::kBitwiseAnd, b, a); }, py::is_operator())
      .def("__or__", [](py::handle a, py::handle b) { return Dunder(PyOp::kBitwiseOr, a, b); }, py::is_operator())
      .def("__ror__", [](py::handle a, py::handle b) { return Dunder(PyOp::kBitwiseOr, b, a); }, py::is_operator())
      .def("__xor__", [](py::handle a, py::handle b) { return Dunder(PyOp::kBitwiseXor, a, b); }, py::is_operator())
      .def("__rxor__", [](py::handle a, py::handle b) { return Dunder(PyOp::kBitwiseXor, b, a); }, py::is_operator())
      // Comparisons are elementwise (NumPy); the reflected forms swap the operator.
      .def("__eq__", [](py::handle a, py::handle b) { return Dunder(PyOp::kEqual, a, b); }, py::is_operator())
      .def("__ne__", [](py::handle a, py::handle b) { return Dunder(PyOp::kNotEqual, a, b); }, py::is_operator())
      .def("__lt__", [](py::handle a, py::handle b) { return Dunder(PyOp::kLess, a, b); }, py::is_operator())
      .def("__le__", [](py::handle a, py::handle b) { return Dunder(PyOp::kLessEqual, a, b); }, py::is_operator())
      .def("__gt__", [](py::handle a, py::handle b) { return Dunder(PyOp::kGreater, a, b); }, py::is_operator())
      .def("__ge__", [](py::handle a, py::handle b) { return Dunder(PyOp::kGreaterEqual, a, b); }, py::is_operator())
      // Tensors hash by identity (elementwise __eq__ would otherwise make them unhashable).
      .def("__hash__", [](py::handle a) { return _Py_HashPointer(a.ptr()); })
      .def("__neg__", [](py::handle a) { return UnaryDunder(PyOp::kNeg, a); })
      .def("__abs__", [](py::handle a) { return UnaryDunder(PyOp::kAbs, a); })
      .def("__invert__", [](py::handle a) { return UnaryDunder(PyOp::kBitwiseNot, a); })
      .def("__pos__", [](py::handle self) {
        py::object result = py::reinterpret_steal<py::object>(WrapTensor(*AsTensor(self.ptr())));
        if (ActiveTape() != nullptr) Tape::Alias(self.ptr(), result.ptr());
        return result;
      })
      .def("item", [](py::handle self) { return ToPyScalar(HostRead(self), "item"); })
      .def("__bool__", [](py::handle self) {
        const Tensor& t = HostRead(self);
        if (t.numel() != 1) {
          ThrowStatus(absl::InvalidArgumentError(absl::StrFormat(
              "bool: the truth value of a Tensor with %d elements (shape %s) is ambiguous, use "
              "all() or any()", t.numel(), ShapeToString(t.shape()))));
        }
        return PyObject_IsTrue(ToPyScalar(t, "bool").ptr()) == 1;
      })
      .def("__float__", [](py::handle self) { return py::float_(ToPyScalar(HostRead(self), "float")); })
      .def("__int__", [](py::handle self) {
        const Tensor& t = HostRead(self);
        // PyNumber_Long gives an exact int for a bool too (int() must not return a bool).
        PyObject* r = PyNumber_Long(ToPyScalar(t, "int").ptr());
        if (!r) throw py::error_already_set();
        return py::reinterpret_steal<py::object>(r);
      })
      .def("__index__", [](py::handle self) {
        const Tensor& t = HostRead(self);
        if (!IsInteger(t.dtype()) || t.ndim() != 0) {
          ThrowStatus(absl::UnimplementedError(absl::StrFormat(
              "index: only 0-d integer tensors can be used as an index, got %s of shape %s",
              DTypeName(t.dtype()), ShapeToString(t.shape()))));
        }
        return ToPyScalar(t, "index");
      })
      .def("__setitem__", [](py::handle self, py::handle index, py::handle value) {
        absl::Status st = SetItem(self.ptr(), index.ptr(), value.ptr());
        if (!st.ok()) ThrowStatus(st);
      })
      .def("_data_ptr", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.raw_data()); });
  g_tensor_type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  // NumPy reads a tensor through the buffer protocol (np.asarray): a host read too, which
  // the function pybind installs cannot see the object of.
  g_tensor_getbuffer = g_tensor_type->tp_as_buffer->bf_getbuffer;
  g_tensor_type->tp_as_buffer->bf_getbuffer = [](PyObject* self, Py_buffer* view, int flags) {
    if (ActiveTape() != nullptr) Tape::NoteHostRead(self);
    return g_tensor_getbuffer(self, view, flags);
  };
  // Every tensor object is made here: code running as a skipped subtree that makes one is
  // doing tensor work after all (frame_eval/eval_frame.h).
  g_tensor_alloc = g_tensor_type->tp_alloc;
  g_tensor_type->tp_alloc = [](PyTypeObject* type, Py_ssize_t n) {
    if (pijit_subtree_running != nullptr) pijit_note_tensor_work();
    return g_tensor_alloc(type, n);
  };
  InstallNumberSlots(g_tensor_type);

  for (PyMethodDef& def : OpMethodDefs()) {
    PyOp op;
    if (!PyOpByName(def.ml_name, &op)) continue;  // a function-only op
    PyObject* descr = PyDescr_NewMethod(g_tensor_type, &def);
    if (!descr || PyObject_SetAttrString(cls.ptr(), def.ml_name, descr) < 0) throw py::error_already_set();
    Py_DECREF(descr);
  }
  for (const auto& [alias, method] : kMethodAliases) cls.attr(alias) = cls.attr(method);
  m.def("set_seed", [](int64_t seed) {
    if (seed < 0) ThrowStatus(absl::InvalidArgumentError(absl::StrFormat(
        "set_seed: seed must be non-negative, got %d", seed)));
    SetSeed(static_cast<uint64_t>(seed));
  }, py::arg("seed"), "Seeds the global random generator (pijit.ops.rand, randn, uniform, normal).");
  m.def("get_seed", [] { return GetSeed(); }, "The seed of the global random generator.");
  m.def("_float_functions", [] {
    std::vector<std::string> names;
#define PIJIT_FLOAT_NAME(e, name, ...) names.emplace_back(name);
    PIJIT_FLOAT_FUNCTIONS(PIJIT_FLOAT_NAME)
#undef PIJIT_FLOAT_NAME
    return names;
  }, "The names of the float functions (kernels/ops.h PIJIT_FLOAT_FUNCTIONS), for tests.");
  m.def("_storage_allocations", [] { return StorageAllocations(); },
        "Tensor storages allocated on this thread so far (planned graph slots not counted).");
  py::module_ ops = m.def_submodule("ops", "eager tensor operations");
  const absl::Span<PyMethodDef> op_defs = OpFunctionDefs();
  RegisterOpFunctions(op_defs);
  for (size_t i = 0; i < op_defs.size(); ++i) {
    if (!PyOpIsFunction(static_cast<PyOp>(i))) continue;
    PyMethodDef& def = op_defs[i];
    PyObject* fn = PyCFunction_NewEx(&def, nullptr, ops.attr("__name__").ptr());
    if (!fn) throw py::error_already_set();
    ops.attr(def.ml_name) = py::reinterpret_steal<py::object>(fn);
  }
}

}  // namespace pijit
