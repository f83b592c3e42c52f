// Python bindings of the tensor runtime: pijit.Tensor, dtypes, NumPy interop and the
// eager ops (as fast-call builtins so that capture can recognise them).
#include <cmath>
#include <cstring>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "absl/strings/str_format.h"
#include "frame_eval/eval_frame.h"
#include "pijit/csrc/convert.h"
#include "pijit/csrc/module.h"
#include "pijit/csrc/pyops.h"
#include "pijit/csrc/tape.h"

namespace py = pybind11;

namespace pijit {
namespace {
allocfunc g_tensor_alloc = nullptr;  // the tensor type's own tp_alloc

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
        "Tensor: unsupported dtype %s, expected one of bool, int8, int16, int32, int64, uint8, "
        "float16, bfloat16, float32, float64", name)));
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

py::array ToNumpy(const Tensor& t) {
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
      auto c = Cast(*t, *wantp);
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

}  // namespace

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

namespace {

// Calls `op` eagerly with fast-call arguments; used by the pijit.ops builtins and methods.
// NumPy scalars are 0-d tensors of their own dtype (they are not weak like Python scalars).
PyObject* CallEager(PyOp op, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  const Py_ssize_t n = nargs + nkw;
  absl::InlinedVector<ArgView, 4> views(n);
  // Item views of list/tuple arguments that hold tensors (concat, stack).
  absl::InlinedVector<std::vector<ArgView>, 1> seqs;
  absl::InlinedVector<std::string, 2> names;
  // NumPy scalars are 0-d tensors of their dtype (not weak like Python scalars): pass them
  // on as pijit Tensors.
  absl::InlinedVector<PyObject*, 4> own;
  struct Release {
    absl::InlinedVector<PyObject*, 4>& v;
    ~Release() {
      for (PyObject* o : v) Py_DECREF(o);
    }
  } release{own};
  absl::InlinedVector<PyObject*, 4> argv(args, args + n);
  for (Py_ssize_t i = 0; i < n; ++i) {
    // A NumPy integer index is a basic index (a view), as in NumPy.
    if (op == PyOp::kGetItem) break;
    if (AsTensor(argv[i]) || IsPyScalar(argv[i])) continue;
    // Where the op takes a Python number (an axis, a size, a fill value), a NumPy scalar or
    // 0-d array is that number; as an operand, a 0-d tensor of its dtype.
    PyObject* item = NumpyNumberItem(argv[i]);
    if (!item && !IsNumpyScalar(argv[i])) continue;
    if (item) {
      views[i].number = item;
      own.push_back(item);
    }
    auto t = NumpyScalarTensor(argv[i]);
    if (!t.ok()) {
      SetPyError(t.status());
      return nullptr;
    }
    argv[i] = WrapTensor(std::move(*t));
    own.push_back(argv[i]);
  }
  args = argv.data();
  for (Py_ssize_t i = 0; i < n; ++i) {
    views[i].object = args[i];
    views[i].is_tensor = AsTensor(args[i]) != nullptr;
    if (!PyList_Check(args[i]) && !PyTuple_Check(args[i])) continue;
    const Py_ssize_t len = PySequence_Fast_GET_SIZE(args[i]);
    PyObject** items = PySequence_Fast_ITEMS(args[i]);
    bool has_tensor = false;
    for (Py_ssize_t j = 0; j < len && !has_tensor; ++j) has_tensor = AsTensor(items[j]) != nullptr;
    if (!has_tensor) continue;
    std::vector<ArgView> item_views(len);
    for (Py_ssize_t j = 0; j < len; ++j) {
      item_views[j].object = items[j];
      item_views[j].is_tensor = AsTensor(items[j]) != nullptr;
    }
    seqs.push_back(std::move(item_views));
    views[i].is_seq = true;
    views[i].is_list = PyList_Check(args[i]);
    views[i].items = seqs.back();
  }
  for (Py_ssize_t k = 0; k < nkw; ++k) names.emplace_back(PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k)));
  auto call = ParseCall(op, views, names);
  if (!call.ok()) {
    SetPyError(call.status());
    return nullptr;
  }
  absl::InlinedVector<PyObject*, 3> objects;
  absl::InlinedVector<const Tensor*, 3> operands;
  for (const Operand& o : call->operands) {
    if (o.scalar || o.array) objects.push_back(nullptr);
    else if (o.item >= 0) objects.push_back(PySequence_Fast_ITEMS(args[o.arg])[o.item]);
    else objects.push_back(args[o.arg]);
    operands.push_back(objects.back() ? AsTensor(objects.back()) : nullptr);
  }
  absl::StatusOr<Tensor> out;
  try {
    out = ApplyEager(*call, operands);
  } catch (const std::bad_alloc&) {
    PyErr_Format(PyExc_MemoryError, "%s: out of memory allocating the result",
                 PyOpName(call->op));
    return nullptr;
  }
  if (!out.ok()) {
    SetPyError(out.status());
    return nullptr;
  }
  PyObject* result = WrapTensor(std::move(*out));
  if (ActiveTape() != nullptr && result != nullptr) RecordCall(*call, objects, operands, result);
  return result;
}

// pijit.ops functions: one fast-call builtin per op, so each has its own name; capture
// recognises them by their C function.
template <PyOp op>
PyObject* OpFastcall(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return CallEager(op, args, nargs, kwnames);
}
PyMethodDef g_op_defs[] = {
#define PIJIT_PYOP(e, name, gop, sig, surface)                                             \
  {name, reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(OpFastcall<PyOp::e>)), \
   METH_FASTCALL | METH_KEYWORDS, "pijit." name "(...): see pijit.ops"},
#include "pijit/csrc/pyops.def"
#undef PIJIT_PYOP
};

// Tensor methods: one fast-call function per op (methods have no closure to carry it).
template <PyOp op>
PyObject* MethodFastcall(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  const Py_ssize_t n = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
  absl::InlinedVector<PyObject*, 4> all(n + 1);
  all[0] = self;
  for (Py_ssize_t i = 0; i < n; ++i) all[i + 1] = args[i];
  return CallEager(op, all.data(), nargs + 1, kwnames);
}

PyMethodDef g_method_defs[] = {
#define PIJIT_PYOP(e, name, gop, sig, surface)                                               \
  {name, reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(MethodFastcall<PyOp::e>)), \
   METH_FASTCALL | METH_KEYWORDS, nullptr},
#include "pijit/csrc/pyops.def"
#undef PIJIT_PYOP
};

py::object Dunder(PyOp op, py::handle a, py::handle b) {
  PyObject* r = BinaryOperator(op, a.ptr(), b.ptr());
  if (!r) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(r);
}

py::object UnaryDunder(PyOp op, py::handle a) {
  PyObject* args[1] = {a.ptr()};
  PyObject* r = CallEager(op, args, 1, nullptr);
  if (!r) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(r);
}

// The single element of `t` as a Python bool, int or float; `what` names the conversion.
py::object ToPyScalar(const Tensor& t, const char* what) {
  if (t.numel() != 1) {
    ThrowStatus(absl::InvalidArgumentError(absl::StrFormat(
        "%s: only a Tensor with one element can be converted to a Python scalar, this one has "
        "shape %s (%d elements)", what, ShapeToString(t.shape()), t.numel())));
  }
  return DispatchDType(t.dtype(), [&](auto tag) -> py::object {
    using T = decltype(tag);
    const T v = *t.data<T>();  // one element: the view's offset addresses it
    if constexpr (std::is_same_v<T, bool>) return py::bool_(v);
    else if constexpr (std::is_integral_v<T>) return py::int_(static_cast<int64_t>(v));
    else return py::float_(static_cast<double>(v));
  });
}

}  // namespace

PyObject* BinaryOperator(PyOp op, PyObject* a, PyObject* b) {
  auto operand = [](PyObject* o) { return AsTensor(o) || IsPyScalar(o) || IsNumpyScalar(o); };
  if (!operand(a) || !operand(b)) Py_RETURN_NOTIMPLEMENTED;
  PyObject* args[2] = {a, b};
  return CallEager(op, args, 2, nullptr);
}

bool PyOpOfBuiltin(PyObject* fn, PyOp* out) {
  if (!PyCFunction_Check(fn)) return false;
  PyCFunction f = PyCFunction_GET_FUNCTION(fn);
  for (size_t i = 0; i < sizeof(g_op_defs) / sizeof(g_op_defs[0]); ++i) {
    if (g_op_defs[i].ml_meth == f) {
      *out = static_cast<PyOp>(i);
      return true;
    }
  }
  return false;
}

void BindTensor(py::module_& m) {
  py::enum_<DType> dtype(m, "dtype");
#define PIJIT_ENUMV(e, t, n, s, c) dtype.value(s, DType::e);
  PIJIT_DTYPES(PIJIT_ENUMV)
#undef PIJIT_ENUMV
  dtype.def("__repr__", [](DType d) { return std::string(DTypeName(d)); });
  dtype.def("__str__", [](DType d) { return std::string(DTypeName(d)); });
  dtype.def_property_readonly("itemsize", [](DType d) { return ItemSize(d); });
  dtype.def("to_numpy", [](DType d) { return NumpyDType(d, "to_numpy"); });

  py::class_<Tensor> cls(m, "Tensor", py::dynamic_attr(), py::buffer_protocol());
  // The buffer protocol (memoryview(t), np.frombuffer): zero-copy, strides in bytes. The
  // format is the struct/PEP 3118 character, which bfloat16 does not have.
  cls.def_buffer([](const Tensor& t) -> py::buffer_info {
    if (t.dtype() == DType::kBFloat16) {
      ThrowStatus(absl::UnimplementedError(
          "buffer: bfloat16 has no buffer format; convert with .astype(pijit.float32) first"));
    }
    std::vector<ssize_t> shape(t.shape().begin(), t.shape().end()), strides;
    for (int64_t st : t.strides()) strides.push_back(st * static_cast<ssize_t>(t.itemsize()));
    return py::buffer_info(t.raw_data(), static_cast<ssize_t>(t.itemsize()),
                           std::string(1, NumpyChar(t.dtype())), t.ndim(), shape, strides);
  });
  cls.def(py::init(&MakeTensor), py::arg("input_data") = py::none(), py::arg("dtype") = py::none())
      .def_property_readonly("shape", [](const Tensor& t) {
        py::tuple s(t.ndim());
        for (int64_t i = 0; i < t.ndim(); ++i) s[i] = t.shape()[i];
        return s;
      })
      .def_property_readonly("dtype", &Tensor::dtype)
      .def_property_readonly("ndim", &Tensor::ndim)
      .def_property_readonly("size", &Tensor::numel)
      .def_property_readonly("strides", [](const Tensor& t) {
        return std::vector<int64_t>(t.strides().begin(), t.strides().end());
      })
      .def("is_contiguous", &Tensor::is_contiguous)
      .def("asnumpy", &ToNumpy)
      .def("numpy", &ToNumpy)
      .def("__array__", [](const Tensor& t, py::object dtype, py::object copy) {
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
        auto c = Cast(t, dt);
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
      .def("item", [](const Tensor& t) { return ToPyScalar(t, "item"); })
      .def("__bool__", [](const Tensor& t) {
        if (t.numel() != 1) {
          ThrowStatus(absl::InvalidArgumentError(absl::StrFormat(
              "bool: the truth value of a Tensor with %d elements (shape %s) is ambiguous, use "
              "all() or any()", t.numel(), ShapeToString(t.shape()))));
        }
        return PyObject_IsTrue(ToPyScalar(t, "bool").ptr()) == 1;
      })
      .def("__float__", [](const Tensor& t) { return py::float_(ToPyScalar(t, "float")); })
      .def("__int__", [](const Tensor& t) {
        // PyNumber_Long gives an exact int for a bool too (int() must not return a bool).
        PyObject* r = PyNumber_Long(ToPyScalar(t, "int").ptr());
        if (!r) throw py::error_already_set();
        return py::reinterpret_steal<py::object>(r);
      })
      .def("__index__", [](const Tensor& t) {
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
  // Every tensor object is made here: code running as a skipped subtree that makes one is
  // doing tensor work after all (frame_eval/eval_frame.h).
  g_tensor_alloc = g_tensor_type->tp_alloc;
  g_tensor_type->tp_alloc = [](PyTypeObject* type, Py_ssize_t n) {
    if (pijit_subtree_running != nullptr) pijit_note_tensor_work();
    return g_tensor_alloc(type, n);
  };
  InstallNumberSlots(g_tensor_type);

  for (PyMethodDef& def : g_method_defs) {
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
  m.def("_storage_allocations", [] { return StorageAllocations(); },
        "Tensor storages allocated on this thread so far (planned graph slots not counted).");
  py::module_ ops = m.def_submodule("ops", "eager tensor operations");
  for (size_t i = 0; i < sizeof(g_op_defs) / sizeof(g_op_defs[0]); ++i) {
    if (!PyOpIsFunction(static_cast<PyOp>(i))) continue;
    PyMethodDef& def = g_op_defs[i];
    PyObject* fn = PyCFunction_NewEx(&def, nullptr, ops.attr("__name__").ptr());
    if (!fn) throw py::error_already_set();
    ops.attr(def.ml_name) = py::reinterpret_steal<py::object>(fn);
  }
}

}  // namespace pijit
