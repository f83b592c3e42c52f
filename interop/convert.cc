#include "interop/convert.h"

#include <limits>
#include <memory>
#include <new>
#include <string_view>

#include <pybind11/pybind11.h>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "kernels/ops.h"

namespace py = pybind11;

namespace pijit {

PyTypeObject* g_tensor_type = nullptr;

Tensor* AsTensor(PyObject* obj) {
  if (g_tensor_type == nullptr || !PyObject_TypeCheck(obj, g_tensor_type)) return nullptr;
  auto* inst = reinterpret_cast<py::detail::instance*>(obj);
  return inst->get_value_and_holder().value_ptr<Tensor>();
}

PyObject* WrapTensor(Tensor t) {
  // What py::cast(std::move(t)) does (mirrors pybind11's make_new_instance and init_instance),
  // except that the instance is not entered in pybind11's map from C++ pointers to Python
  // objects: that map only lets a binding that returns a reference to an existing Tensor find
  // its Python object, and a fresh result has none. Entering and removing it cost about a
  // third of a small op. (pybind11 deregisters on deallocation only what it registered.)
  using Holder = py::class_<Tensor>::holder_type;
  static_assert(std::is_same_v<Holder, std::unique_ptr<Tensor>>);
  PyObject* obj = g_tensor_type->tp_alloc(g_tensor_type, 0);
  if (obj == nullptr) return nullptr;
  auto* inst = reinterpret_cast<py::detail::instance*>(obj);
  try {
    inst->allocate_layout();
    py::detail::value_and_holder v_h = inst->get_value_and_holder();
    auto* value = new Tensor(std::move(t));
    v_h.value_ptr() = value;
    inst->owned = true;
    new (std::addressof(v_h.holder<Holder>())) Holder(value);
    v_h.set_holder_constructed();
  } catch (const std::bad_alloc&) {
    Py_DECREF(obj);
    PyErr_NoMemory();
    return nullptr;
  }
  return obj;
}

namespace {
// Ops whose result NumPy computes from a Python int's exact value even where it does not fit
// the tensor's integer dtype: comparisons (uint8 < -1 is False) and true division.
bool ScalarNeedNotFit(const char* op) {
  static const absl::flat_hash_set<std::string> kOps = {
      "div", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal"};
  return kOps.contains(op);
}
}  // namespace

absl::StatusOr<Tensor> ScalarOperand(const char* op, PyObject* s, DType other) {
  if (PyBool_Check(s)) {
    return Cast(Tensor::Scalar<bool>(s == Py_True), PromoteWithScalar(other, ScalarKind::kBool));
  }
  if (PyLong_Check(s)) {
    DType dt = PromoteWithScalar(other, ScalarKind::kInt);
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(s, &overflow);
    if (overflow != 0 && IsInteger(dt)) {
      return absl::OutOfRangeError(
          absl::StrFormat("%s: Python integer is out of bounds for %s", op, DTypeName(dt)));
    }
    if (overflow != 0 || IsFloating(dt)) {
      double d = PyLong_AsDouble(s);
      if (d == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return absl::OutOfRangeError(
            absl::StrFormat("%s: Python integer is too large to convert to %s", op, DTypeName(dt)));
      }
      return Cast(Tensor::Scalar<double>(d), dt);
    }
    int64_t lo, hi;
    IntegerRange(dt, &lo, &hi);
    if (IsInteger(dt) && (v < lo || v > hi) && ScalarNeedNotFit(op)) {
      // NumPy compares with the exact value, and divides in float64: the int need not fit.
      // The wide unsigned types mix with no other integer type: a float64 holds the value
      // closely enough there (only negative values fall outside their int64-sized range, and
      // every one of them compares below every unsigned value however it rounds).
      if (IsWideUnsigned(dt)) return Tensor::Scalar<double>(static_cast<double>(v));
      return Tensor::Scalar<int64_t>(v);
    }
    if (IsInteger(dt) && (v < lo || v > hi) && (std::string_view(op) == "clip" || std::string_view(op) == "clamp")) {
      // A bound beyond the dtype's range clips like the range's end (NumPy's clip agrees).
      return Cast(Tensor::Scalar<int64_t>(v < lo ? lo : hi), dt);
    }
    if (IsInteger(dt) && (v < lo || v > hi)) {  // NumPy (NEP 50) raises too
      return absl::OutOfRangeError(absl::StrFormat("%s: Python integer %d is out of bounds for %s",
                                                   op, static_cast<int64_t>(v), DTypeName(dt)));
    }
    return Cast(Tensor::Scalar<int64_t>(v), dt);
  }
  if (PyFloat_Check(s)) {
    return Cast(Tensor::Scalar<double>(PyFloat_AS_DOUBLE(s)),
                PromoteWithScalar(other, ScalarKind::kFloat));
  }
  if (PyComplex_Check(s)) {
    return Cast(Tensor::Scalar(std::complex<double>(PyComplex_RealAsDouble(s),
                                                    PyComplex_ImagAsDouble(s))),
                PromoteWithScalar(other, ScalarKind::kComplex));
  }
  return absl::UnimplementedError(absl::StrFormat(
      "%s: unsupported operand type '%s', expected a Tensor or a Python bool, int, float or complex", op,
      Py_TYPE(s)->tp_name));
}

absl::StatusOr<Tensor> PyScalarTensor(const char* op, PyObject* s) {
  if (PyBool_Check(s)) return Tensor::Scalar<bool>(s == Py_True);
  if (PyLong_Check(s)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(s, &overflow);
    if (overflow != 0) {
      return absl::OutOfRangeError(
          absl::StrFormat("%s: Python integer is out of bounds for Int64", op));
    }
    return Tensor::Scalar<int64_t>(v);
  }
  if (PyFloat_Check(s)) return Tensor::Scalar<double>(PyFloat_AS_DOUBLE(s));
  if (PyComplex_Check(s)) {
    return Tensor::Scalar(
        std::complex<double>(PyComplex_RealAsDouble(s), PyComplex_ImagAsDouble(s)));
  }
  return absl::UnimplementedError(absl::StrFormat(
      "%s: expected a Python bool, int, float or complex, got %s", op, Py_TYPE(s)->tp_name));
}

bool DTypeFromNumpyChar(char c, DType* out) {
  if (c == '\0') return false;  // bfloat16's placeholder: no NumPy char names it
  switch (c) {
#define PIJIT_NP(e, t, n, s, ch) case ch: *out = DType::e; return true;
    PIJIT_DTYPES(PIJIT_NP)
#undef PIJIT_NP
    case 'q': *out = DType::kInt64; return sizeof(long long) == 8;
    case 'Q': *out = DType::kUInt64; return sizeof(unsigned long long) == 8;
    default: return false;
  }
}

bool IsNumpyBFloat16(PyObject* np_dtype) {
  // ml_dtypes.bfloat16 (NumPy has no bfloat16 of its own): recognised by name, so that
  // ml_dtypes need not be installed.
  PyObject* name = PyObject_GetAttrString(np_dtype, "name");
  bool yes = name && PyUnicode_Check(name) && std::string(PyUnicode_AsUTF8(name)) == "bfloat16";
  Py_XDECREF(name);
  if (PyErr_Occurred()) PyErr_Clear();
  return yes;
}

absl::StatusOr<DType> DTypeFromObject(const char* op, PyObject* obj) {
  py::handle d(obj);
  if (py::isinstance<DType>(d)) return d.cast<DType>();
  if (PyUnicode_Check(obj) && std::string(PyUnicode_AsUTF8(obj)) == "bfloat16") {
    return DType::kBFloat16;  // NumPy does not know the name without ml_dtypes
  }
  static PyObject* np_dtype = [] {
    PyObject* np = PyImport_ImportModule("numpy");
    PyObject* f = np ? PyObject_GetAttrString(np, "dtype") : nullptr;
    Py_XDECREF(np);
    return f;
  }();
  PyObject* npd = np_dtype ? PyObject_CallOneArg(np_dtype, obj) : nullptr;
  PyObject* ch = npd ? PyObject_GetAttrString(npd, "char") : nullptr;
  DType out;
  bool ok = ch && PyUnicode_Check(ch) && DTypeFromNumpyChar(PyUnicode_AsUTF8(ch)[0], &out);
  if (!ok && npd) ok = IsNumpyBFloat16(npd) && (out = DType::kBFloat16, true);
  PyObject* r = ok ? nullptr : PyObject_Repr(npd ? npd : obj);
  std::string name = r ? PyUnicode_AsUTF8(r) : Py_TYPE(obj)->tp_name;
  Py_XDECREF(r);
  Py_XDECREF(ch);
  Py_XDECREF(npd);
  if (PyErr_Occurred()) PyErr_Clear();
  if (ok) return out;
  return absl::UnimplementedError(absl::StrFormat(
      "%s: unsupported dtype %s, expected one of %s", op, name, kTensorDTypeNames));
}

static PyObject* ExceptionFor(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kInvalidArgument: return PyExc_ValueError;
    case absl::StatusCode::kUnimplemented: return PyExc_TypeError;
    case absl::StatusCode::kOutOfRange: return PyExc_OverflowError;
    case absl::StatusCode::kNotFound: return PyExc_IndexError;
    case absl::StatusCode::kDeadlineExceeded: return PyExc_TimeoutError;  // a collective's wait
    default: return PyExc_RuntimeError;
  }
}

void SetPyError(const absl::Status& s) {
  // Cancelled with an exception set: Python code interrupted the work (a signal handler's
  // KeyboardInterrupt during a compiled loop); that exception is the error.
  if (s.code() == absl::StatusCode::kCancelled && PyErr_Occurred()) return;
  PyErr_SetString(ExceptionFor(s.code()), std::string(s.message()).c_str());
}

void ThrowStatus(const absl::Status& s) {
  SetPyError(s);
  throw py::error_already_set();
}

}  // namespace pijit
