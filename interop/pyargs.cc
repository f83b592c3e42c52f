// The argument readers of the op parsers (pyargs.h).
#include "interop/pyargs.h"

#include <cstring>

#include "absl/strings/str_format.h"
#include "interop/convert.h"
#include "kernels/errors.h"

namespace pijit {
namespace pyargs {

absl::Status TypeError(const std::string& msg) { return absl::UnimplementedError(msg); }
absl::Status ValueError(const std::string& msg) { return absl::InvalidArgumentError(msg); }

bool IsInt(PyObject* o) {
  if (PyLong_Check(o)) return !PyBool_Check(o);
  PyObject* item = NumpyNumberItem(o);  // a NumPy integer is the int it holds
  const bool is_int = item && PyLong_Check(item) && !PyBool_Check(item);
  Py_XDECREF(item);
  return is_int;
}

absl::Status ReadInt(const char* op, const char* what, PyObject* v, int64_t* out) {
  if (!IsInt(v)) {
    return TypeError(absl::StrFormat("%s: %s must be an int, got %s", op, what, Py_TYPE(v)->tp_name));
  }
  PyObject* item = PyLong_Check(v) ? nullptr : NumpyNumberItem(v);
  int overflow = 0;
  *out = PyLong_AsLongLongAndOverflow(item ? item : v, &overflow);
  Py_XDECREF(item);
  if (overflow) return absl::OutOfRangeError(absl::StrFormat("%s: %s is too large", op, what));
  return absl::OkStatus();
}

// Reads an int (not bool) or a sequence of ints into `out`.
absl::Status ReadInts(const char* op, const char* what, PyObject* o, Shape* out) {
  auto one = [&](PyObject* v) -> absl::Status {
    if (!IsInt(v)) {
      return TypeError(absl::StrFormat("%s: %s must be an int or a tuple of ints, got %s", op, what,
                                       Py_TYPE(v)->tp_name));
    }
    int64_t x;
    PIJIT_RETURN_IF_ERROR(ReadInt(op, what, v, &x));
    out->push_back(x);
    return absl::OkStatus();
  };
  if (PyTuple_Check(o) || PyList_Check(o)) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
    PyObject** items = PySequence_Fast_ITEMS(o);
    for (Py_ssize_t i = 0; i < n; ++i) PIJIT_RETURN_IF_ERROR(one(items[i]));
    return absl::OkStatus();
  }
  return one(o);
}

absl::Status ReadNumber(const char* op, const char* what, PyObject* v, double* out) {
  PyObject* item = PyLong_Check(v) || PyFloat_Check(v) ? nullptr : NumpyNumberItem(v);
  if (item) {  // a NumPy number: the Python number it holds
    const absl::Status s = ReadNumber(op, what, item, out);
    Py_DECREF(item);
    return s;
  }
  if (!IsInt(v) && !PyFloat_Check(v)) {
    return TypeError(absl::StrFormat("%s: %s must be an int or a float, got %s", op, what,
                                     Py_TYPE(v)->tp_name));
  }
  *out = PyFloat_Check(v) ? PyFloat_AS_DOUBLE(v) : PyLong_AsDouble(v);
  if (*out == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    return absl::OutOfRangeError(absl::StrFormat("%s: %s is too large", op, what));
  }
  return absl::OkStatus();
}

// Binds positional and keyword arguments to parameter slots by name.
absl::Status Bind(const char* op, absl::Span<const ArgView> args,
                  absl::Span<const std::string> kwnames,
                  std::initializer_list<std::initializer_list<const char*>> params,
                  absl::InlinedVector<int, 4>* slots, size_t required) {
  const size_t npos = args.size() - kwnames.size();
  slots->assign(params.size(), -1);
  if (npos > params.size()) {
    return TypeError(absl::StrFormat("%s() takes at most %d arguments (%d given)", op,
                                     params.size(), npos));
  }
  for (size_t i = 0; i < npos; ++i) (*slots)[i] = static_cast<int>(i);
  for (size_t k = 0; k < kwnames.size(); ++k) {
    size_t p = 0;
    bool found = false;
    for (auto names : params) {
      for (const char* n : names) found = found || kwnames[k] == n;
      if (found) break;
      ++p;
    }
    if (!found) {
      return TypeError(absl::StrFormat("%s() got an unexpected keyword argument '%s'", op, kwnames[k]));
    }
    if ((*slots)[p] >= 0) {
      return TypeError(absl::StrFormat("%s() got multiple values for argument '%s'", op,
                                       *params.begin()[p].begin()));
    }
    (*slots)[p] = static_cast<int>(npos + k);
  }
  for (size_t p = 0; p < required; ++p) {
    if ((*slots)[p] < 0) {
      return TypeError(absl::StrFormat("%s() missing required argument '%s'", op,
                                       *params.begin()[p].begin()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Operand> TensorOperand(const char* op, absl::Span<const ArgView> args, int slot,
                                      bool allow_scalar) {
  const ArgView& a = args[slot];
  if (a.is_tensor) return Operand{slot};
  if (allow_scalar && !a.is_seq && IsPyScalar(a.object)) {
    Operand o;
    o.scalar = a.object;
    o.scalar_arg = slot;
    return o;
  }
  return TypeError(absl::StrFormat("%s: expected a Tensor%s, got %s", op,
                                   allow_scalar ? " or a Python scalar" : "",
                                   a.is_seq ? "a sequence" : Py_TYPE(a.object)->tp_name));
}

// The Python object bound to `slot`, or nullptr when the argument is absent or None.
// Tensors and sequences of tensors are rejected as `what`.
absl::StatusOr<PyObject*> Plain(const char* op, const char* what, absl::Span<const ArgView> args,
                                int slot) {
  if (slot < 0) return nullptr;
  const ArgView& a = args[slot];
  if (a.number) return a.number;  // a NumPy scalar where a Python value is taken
  if (a.is_tensor || a.is_seq) {
    return TypeError(absl::StrFormat("%s: %s must be a Python value, got a %s", op, what,
                                     a.is_tensor ? "Tensor" : "sequence of tensors"));
  }
  return a.object == Py_None ? nullptr : a.object;
}

absl::Status ReadKeepdims(const char* op, absl::Span<const ArgView> args, int slot, bool* out) {
  PIJIT_ASSIGN_OR_RETURN(PyObject * k, Plain(op, "keepdims", args, slot));
  if (slot < 0) return absl::OkStatus();
  if (k == nullptr || !PyBool_Check(k)) return TypeError(absl::StrFormat("%s: keepdims must be a bool", op));
  *out = k == Py_True;
  return absl::OkStatus();
}

absl::Status ReadDType(const char* op, absl::Span<const ArgView> args, int slot,
                       std::optional<DType>* out) {
  PIJIT_ASSIGN_OR_RETURN(PyObject * d, Plain(op, "dtype", args, slot));
  if (d == nullptr) return absl::OkStatus();
  PIJIT_ASSIGN_OR_RETURN(DType dt, DTypeFromObject(op, d));
  *out = dt;
  return absl::OkStatus();
}

// A size given as positional ints, or as one int/tuple/list: args[first..npos).
absl::Status ReadSizeArgs(const char* op, absl::Span<const ArgView> args, size_t first,
                          size_t npos, Shape* out) {
  for (size_t i = first; i < npos; ++i) {
    PIJIT_ASSIGN_OR_RETURN(PyObject * v, Plain(op, "size", args, static_cast<int>(i)));
    if (v == nullptr) return TypeError(absl::StrFormat("%s: size must be ints, got None", op));
    if (npos - first > 1 && !IsInt(v)) {
      return TypeError(absl::StrFormat("%s: sizes must be ints, got %s", op, Py_TYPE(v)->tp_name));
    }
    PIJIT_RETURN_IF_ERROR(ReadInts(op, "size", v, out));
  }
  return CheckShape(op, *out);
}

absl::Status ReadSeed(const char* op, absl::Span<const ArgView> args, int slot, int64_t* out) {
  *out = -1;
  PIJIT_ASSIGN_OR_RETURN(PyObject * s, Plain(op, "seed", args, slot));
  if (s == nullptr) return absl::OkStatus();
  PIJIT_RETURN_IF_ERROR(ReadInt(op, "seed", s, out));
  if (*out < 0) return ValueError(absl::StrFormat("%s: seed must be non-negative, got %d", op, *out));
  return absl::OkStatus();
}

Tensor Pair(double a, double b) {
  Tensor t = Tensor::Empty({2}, DType::kFloat64);
  t.data<double>()[0] = a;
  t.data<double>()[1] = b;
  return t;
}

// The argument at `slot` as a sequence of tensor operands.
absl::Status ReadTensorSeq(const char* op, absl::Span<const ArgView> args, int slot,
                           absl::InlinedVector<Operand, 3>* out) {
  const ArgView& a = args[slot];
  if (a.is_seq) {
    for (size_t j = 0; j < a.items.size(); ++j) {
      if (!a.items[j].is_tensor) {
        return TypeError(absl::StrFormat("%s: expected a sequence of Tensors, item %d is %s", op,
                                         j, a.items[j].is_seq ? "a sequence"
                                                              : Py_TYPE(a.items[j].object)->tp_name));
      }
      Operand o;
      o.arg = slot;
      o.item = static_cast<int>(j);
      out->push_back(o);
    }
    return absl::OkStatus();
  }
  if (!a.is_tensor && (PyTuple_Check(a.object) || PyList_Check(a.object))) {
    // A sequence without tensors: either empty or holding something else.
    if (PySequence_Fast_GET_SIZE(a.object) == 0) {
      return ValueError(absl::StrFormat("%s: need at least one tensor to %s", op, op));
    }
    return TypeError(absl::StrFormat("%s: expected a sequence of Tensors, item 0 is %s", op,
                                     Py_TYPE(PySequence_Fast_ITEMS(a.object)[0])->tp_name));
  }
  return TypeError(absl::StrFormat("%s: expected a list or tuple of Tensors, got %s", op,
                                   a.is_tensor ? "a Tensor" : Py_TYPE(a.object)->tp_name));
}

}  // namespace pyargs
}  // namespace pijit
