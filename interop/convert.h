// Conversions between Python objects and the tensor runtime, shared by the eager bindings
// and by capture so that both treat Python values identically.
#pragma once
#include <Python.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/tensor.h"

namespace pijit {

// The Python type object of pijit.Tensor (set when the module initialises).
extern PyTypeObject* g_tensor_type;

// The Tensor held by a pijit.Tensor instance (or subclass), or nullptr.
Tensor* AsTensor(PyObject* obj);
// A new pijit.Tensor object owning `t`.
PyObject* WrapTensor(Tensor t);

inline bool IsPyScalar(PyObject* o) {
  return PyBool_Check(o) || PyLong_CheckExact(o) || PyFloat_CheckExact(o) || PyComplex_CheckExact(o);
}

// NumPy scalars (np.float32(2), np.int64(3), ...) act as 0-d tensors of their dtype.
bool IsNumpyScalar(PyObject* o);
absl::StatusOr<Tensor> NumpyScalarTensor(PyObject* o);
// Where a Python number is taken (an axis, a size, a fill value, a bound), a NumPy scalar or
// a 0-d NumPy array of a number (bool, integer or floating kind) is the number it holds, as
// in NumPy and MindSpore: a new reference to that Python bool, int or float, or nullptr
// (no error set) for any other object.
PyObject* NumpyNumberItem(PyObject* o);
// An instance of the namedtuple class `cls` holding the items of tuple `items`, made by
// tuple.__new__ (all a namedtuple's own __new__ does), so that no Python code runs: a new
// reference, or nullptr with an error set.
PyObject* NamedTupleOf(PyObject* cls, PyObject* items);
// A numpy.ndarray (or subclass), and a numpy.dtype.
bool IsNumpyArray(PyObject* o);
bool IsNumpyDType(PyObject* o);

// An index array given as a Python object (a list, a bool, a NumPy array) as an Int64 or a
// Bool tensor of its own (IndexError for other kinds, as NumPy).
absl::StatusOr<Tensor> IndexArrayTensor(PyObject* o);
// A value assigned by __setitem__ into a tensor of dtype `dtype`: a Tensor as it is, anything
// else converted as NumPy converts it for assignment (a Python float NaN into an integer
// tensor is a ValueError, an int beyond the dtype's range an OverflowError).
absl::StatusOr<Tensor> SetItemValue(PyObject* value, DType dtype);
// A Python bool/int/float operand next to a tensor of dtype `other`, as a 0-d tensor of the
// dtype NumPy's weak-scalar rule gives. `op` names the operation in errors.
absl::StatusOr<Tensor> ScalarOperand(const char* op, PyObject* scalar, DType other);

// A Python bool/int/float as a 0-d tensor of Bool, Int64 or Float64 (OverflowError for an int
// beyond Int64).
absl::StatusOr<Tensor> PyScalarTensor(const char* op, PyObject* scalar);

// A pijit dtype, or anything numpy.dtype() accepts (np.float32, "float64", float). `op` names
// the operation in errors.
absl::StatusOr<DType> DTypeFromObject(const char* op, PyObject* obj);
bool DTypeFromNumpyChar(char c, DType* out);
// The dtypes a tensor can have, by their NumPy names, for errors about the others.
inline constexpr const char kTensorDTypeNames[] =
    "bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16, float32, "
    "float64, complex64, complex128";
// Whether a numpy.dtype is ml_dtypes' bfloat16.
bool IsNumpyBFloat16(PyObject* np_dtype);

// Sets the Python exception matching `s` (see kernels/errors.h for the mapping).
void SetPyError(const absl::Status& s);
// Throws the pybind11 exception matching `s` (inside bindings).
[[noreturn]] void ThrowStatus(const absl::Status& s);

}  // namespace pijit
