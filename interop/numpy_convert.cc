// Conversions between NumPy (and Python sequences) and tensors.
#include "interop/numpy_convert.h"

#include <cmath>
#include <cstring>

#include <pybind11/stl.h>

#include "absl/strings/str_format.h"
#include "graph/backend.h"
#include "interop/convert.h"
#include "kernels/ops.h"

namespace py = pybind11;

namespace pijit {

char NumpyChar(DType d) {
  switch (d) {
#define PIJIT_CH(e, t, n, s, ch) case DType::e: return ch;
    PIJIT_DTYPES(PIJIT_CH)
#undef PIJIT_CH
  }
  return 'f';
}

py::module_& Numpy() {
  static py::module_ np = py::module_::import("numpy");
  return np;
}

// Zero-copy view of a NumPy array whose layout the runtime can address; a copy otherwise.
Tensor FromNumpy(py::array arr, const DType* want) {
  DType dt;
  if (IsNumpyBFloat16(arr.dtype().ptr())) {
    dt = DType::kBFloat16;
  } else if (!DTypeFromNumpyChar(arr.dtype().char_(), &dt)) {
    std::string name = py::str(arr.dtype());
    ThrowStatus(absl::UnimplementedError(absl::StrFormat(
        "Tensor: unsupported dtype %s, expected one of %s", name, kTensorDTypeNames)));
  }
  const ssize_t item = arr.itemsize();
  bool addressable = arr.dtype().byteorder() != '>' &&
                     reinterpret_cast<uintptr_t>(arr.data()) % item == 0;
  for (ssize_t i = 0; i < arr.ndim(); ++i) addressable = addressable && arr.strides(i) % item == 0;
  if (!addressable) {
    // A native-order, aligned, contiguous copy (ascontiguousarray alone keeps byte order).
    py::object native = arr.dtype().attr("newbyteorder")("=");
    arr = py::array::ensure(Numpy().attr("ascontiguousarray")(arr, native));
  }
  Shape shape, strides;
  for (ssize_t i = 0; i < arr.ndim(); ++i) {
    shape.push_back(arr.shape(i));
    strides.push_back(arr.strides(i) / item);
  }
  PyObject* owner = arr.ptr();
  Py_INCREF(owner);
  auto storage = Storage::Wrap(const_cast<void*>(arr.data()), arr.nbytes(), [owner] {
    PyGILState_STATE g = PyGILState_Ensure();
    Py_DECREF(owner);
    PyGILState_Release(g);
  });
  Tensor t = Tensor::View(std::move(storage), dt, std::move(shape), std::move(strides), 0);
  if (want && *want != dt) {
    auto c = Cast(t, *want);
    if (!c.ok()) ThrowStatus(c.status());
    return *c;
  }
  return t;
}

// The NumPy dtype of `d`. bfloat16 is ml_dtypes.bfloat16 where ml_dtypes is installed;
// otherwise `what` raises a TypeError that says how to get a NumPy array.
py::dtype NumpyDType(DType d, const char* what) {
  if (d != DType::kBFloat16) return py::dtype(std::string(1, NumpyChar(d)));
  // Imported on every call (a sys.modules look-up after the first), not cached: whether
  // ml_dtypes is importable is the user's environment, and tests change it.
  py::object bf16 = py::none();
  try {
    bf16 = py::dtype::from_args(py::module_::import("ml_dtypes").attr("bfloat16"));
  } catch (py::error_already_set&) {
  }
  if (bf16.is_none()) {
    ThrowStatus(absl::UnimplementedError(absl::StrFormat(
        "%s: NumPy has no bfloat16 dtype and ml_dtypes is not installed; convert with "
        ".astype(pijit.float32) first (or pip install ml_dtypes)", what)));
  }
  return py::reinterpret_borrow<py::dtype>(bf16);
}

Tensor OnHost(const Tensor& t) {
  if (t.device() == Device::kCPU) return t;
  auto host = graph::MoveToDevice(t, Device::kCPU);
  if (!host.ok()) ThrowStatus(host.status());
  return *host;
}

py::array ToNumpy(const Tensor& device_or_host) {
  const Tensor t = OnHost(device_or_host);  // a device tensor's values are copied first
  std::vector<ssize_t> shape(t.shape().begin(), t.shape().end()), strides;
  for (int64_t s : t.strides()) strides.push_back(s * static_cast<ssize_t>(t.itemsize()));
  auto* keep = new Tensor(t);
  py::capsule base(keep, [](void* p) { delete static_cast<Tensor*>(p); });
  return py::array(NumpyDType(t.dtype(), "asnumpy"), shape, strides, t.raw_data(), base);
}

// A pijit dtype, or anything numpy.dtype() accepts (np.float32, "float64", float).
DType DTypeFromPy(py::handle d) {
  auto dt = DTypeFromObject("Tensor", d.ptr());
  if (!dt.ok()) ThrowStatus(dt.status());
  return *dt;
}

Tensor MakeTensor(py::object data, py::object dtype) {
  DType want;
  const DType* wantp = nullptr;
  if (!dtype.is_none()) {
    want = DTypeFromPy(dtype);
    wantp = &want;
  }
  if (Tensor* t = AsTensor(data.ptr())) {
    if (wantp && *wantp != t->dtype()) {
      auto c = graph::CastWhereItIs(*t, *wantp);
      if (!c.ok()) ThrowStatus(c.status());
      return *c;
    }
    return *t;
  }
  if (data.is_none()) {
    ThrowStatus(absl::UnimplementedError("Tensor: input_data must be given (a NumPy array, a list or a scalar)"));
  }
  if (py::isinstance<py::array>(data)) return FromNumpy(data.cast<py::array>(), wantp);
  // NumPy scalars keep their dtype, like arrays.
  if (py::isinstance(data, Numpy().attr("generic"))) {
    return FromNumpy(py::array::ensure(Numpy().attr("asarray")(data)), wantp);
  }
  // Python scalars and nested lists: floats default to float32, ints to int64 (MindSpore).
  // With a dtype, NumPy converts directly, so an int that does not fit raises OverflowError.
  // bfloat16 goes through float64 (NumPy may not know bfloat16), then rounds once more to
  // bfloat16 in FromNumpy as ml_dtypes does.
  py::object np_want = !wantp ? py::none()
                       : want == DType::kBFloat16 ? py::object(py::dtype("d"))
                                                  : py::object(py::cast(want).attr("to_numpy")());
  py::array arr = wantp ? py::array::ensure(Numpy().attr("asarray")(data, np_want))
                        : py::array::ensure(Numpy().attr("asarray")(data));
  if (!arr) throw py::error_already_set();
  if (!wantp) {
    char c = arr.dtype().char_();
    if (c == 'd') { want = DType::kFloat32; wantp = &want; }
    else if (c == 'l' || c == 'q') { want = DType::kInt64; wantp = &want; }
    else if (c == 'O' || c == 'U' || c == 'S') {
      ThrowStatus(absl::UnimplementedError(absl::StrFormat(
          "Tensor: cannot convert %s to a tensor, expected numbers", std::string(py::str(data.get_type())))));
    }
  }
  return FromNumpy(arr, wantp);
}


bool IsNumpyScalar(PyObject* o) {
  static PyObject* generic = py::object(Numpy().attr("generic")).release().ptr();
  return !PyFloat_CheckExact(o) && !PyLong_CheckExact(o) && !PyBool_Check(o) &&
         PyObject_TypeCheck(o, reinterpret_cast<PyTypeObject*>(generic));
}

PyObject* NamedTupleOf(PyObject* cls, PyObject* items) {
  PyObject* packed = PyTuple_Pack(1, items);
  PyObject* nt = packed ? PyTuple_Type.tp_new(reinterpret_cast<PyTypeObject*>(cls), packed, nullptr)
                        : nullptr;
  Py_XDECREF(packed);
  return nt;
}

bool IsNumpyArray(PyObject* o) {
  static PyObject* ndarray = py::object(Numpy().attr("ndarray")).release().ptr();
  return PyObject_TypeCheck(o, reinterpret_cast<PyTypeObject*>(ndarray));
}

bool IsNumpyDType(PyObject* o) {
  static PyObject* dtype = py::object(Numpy().attr("dtype")).release().ptr();
  return PyObject_TypeCheck(o, reinterpret_cast<PyTypeObject*>(dtype));
}

PyObject* NumpyNumberItem(PyObject* o) {
  // Called for every argument of an eager op that is neither a tensor nor a Python number, so
  // the tests that reject are type checks that call nothing.
  static auto* number = reinterpret_cast<PyTypeObject*>(py::object(Numpy().attr("number")).release().ptr());
  static auto* bool_ = reinterpret_cast<PyTypeObject*>(py::object(Numpy().attr("bool_")).release().ptr());
  if (IsNumpyArray(o)) {
    // A 0-d array of a number: a dtype of kind bool, int, uint, float, complex or timedelta
    // (the kinds whose scalar type is np.number or np.bool_).
    auto arr = py::reinterpret_borrow<py::array>(o);
    const char kind = arr.dtype().kind();
    if (arr.ndim() != 0 || kind == 0 || !std::strchr("biufcm", kind)) return nullptr;
  } else if (!IsNumpyScalar(o) || !(PyObject_TypeCheck(o, number) || PyObject_TypeCheck(o, bool_))) {
    return nullptr;
  }
  PyObject* item = PyObject_CallMethod(o, "item", nullptr);
  if (!item) PyErr_Clear();
  // Complex numbers are numbers too, but no parameter takes one.
  if (item && !IsPyScalar(item)) Py_CLEAR(item);
  return item;
}

absl::StatusOr<Tensor> NumpyScalarTensor(PyObject* o) {
  try {
    return FromNumpy(py::array::ensure(Numpy().attr("asarray")(py::handle(o))), nullptr);
  } catch (py::error_already_set& e) {
    std::string msg = e.what();
    return absl::UnimplementedError(msg);
  }
}

absl::StatusOr<Tensor> IndexArrayTensor(PyObject* o) {
  try {
    // A copy: a graph may keep the index as a constant while the caller changes the array.
    py::array arr = py::array::ensure(Numpy().attr("array")(py::handle(o)));
    if (!arr) throw py::error_already_set();
    const char kind = arr.dtype().kind();
    if (kind == 'b') return FromNumpy(arr, nullptr);
    if (kind == 'i' || kind == 'u' || arr.size() == 0) {
      const DType i64 = DType::kInt64;
      return FromNumpy(py::array::ensure(arr.attr("astype")("int64")), &i64);
    }
    return absl::NotFoundError(absl::StrFormat(
        "index: arrays used as indices must be of integer (or boolean) type, got %s",
        std::string(py::str(arr.dtype()))));
  } catch (py::error_already_set& e) {
    return absl::NotFoundError(absl::StrFormat("index: not a valid index array: %s", e.what()));
  }
}

absl::StatusOr<Tensor> SetItemValue(PyObject* value, DType dtype) {
  if (Tensor* t = AsTensor(value)) return *t;
  if (PyFloat_Check(value) && IsInteger(dtype)) {
    const double v = PyFloat_AS_DOUBLE(value);
    if (std::isnan(v)) return absl::InvalidArgumentError("__setitem__: cannot convert float NaN to integer");
    if (std::isinf(v)) return absl::OutOfRangeError("__setitem__: cannot convert float infinity to integer");
  }
  if (PyLong_Check(value) && !PyBool_Check(value) && IsInteger(dtype)) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    const bool fits = !overflow && (dtype != DType::kInt32 || (v >= INT32_MIN && v <= INT32_MAX));
    if (!fits) {
      return absl::OutOfRangeError(absl::StrFormat(
          "__setitem__: Python integer %s out of bounds for %s",
          std::string(py::str(py::handle(value))), DTypeName(dtype)));
    }
  }
  if (IsPyScalar(value)) return PyScalarTensor("__setitem__", value);
  try {
    py::array arr = py::array::ensure(Numpy().attr("asarray")(py::handle(value)));
    if (!arr) throw py::error_already_set();
    DType dt;
    if (!DTypeFromNumpyChar(arr.dtype().char_(), &dt)) {
      // Let NumPy convert what it can (e.g. float16 values, nested lists of numbers).
      arr = py::array::ensure(Numpy().attr("asarray")(py::handle(value), py::cast(dtype).attr("to_numpy")()));
      if (!arr) throw py::error_already_set();
    }
    return FromNumpy(arr, nullptr);
  } catch (py::error_already_set& e) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "__setitem__: cannot convert a %s to a tensor value: %s", Py_TYPE(value)->tp_name, e.what()));
  }
}

}  // namespace pijit
