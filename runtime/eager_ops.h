// The eager op path. Every Python surface of an op (a pijit.ops function, a Tensor method, an
// operator) arrives here: its arguments are parsed (interop/pyops.h), the kernel runs and,
// while a gradient tape records, the call is recorded (runtime/tape.h).
#pragma once
#include <Python.h>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "interop/pyops.h"
#include "kernels/ops.h"

namespace pijit {

// Calls `op` eagerly with fast-call arguments. NumPy scalars are 0-d tensors of their own
// dtype (they are not weak like Python scalars). A new reference, or nullptr with an error.
PyObject* CallEager(PyOp op, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames);
// The direct path of CallEager: `op` on positional operands `args` when it is an elementwise
// op (PyOpElementwiseArity) applied to tensors (binary: or a tensor and a Python scalar) and
// no gradient tape records; exactly what the parsed call computes, without parsing. Returns
// nullptr without an error set when the call is not such a call (the caller parses it).
PyObject* DirectEager(PyOp op, PyObject* const* args, Py_ssize_t nargs);
// The binary case of DirectEager with its kernel known (the Tensor number slots): `op` on a and
// b, tensors or a tensor and a Python scalar, or nullptr without an error for anything else.
PyObject* DirectBinary(PyOp op, BinaryOp kernel, PyObject* a, PyObject* b);
// The binary operator `op` on a and b in operand order, as Tensor.__add__ and the other
// operator methods compute it (a new reference; NotImplemented for operands a Tensor does not
// take; nullptr with an exception set on error).
PyObject* BinaryOperator(PyOp op, PyObject* a, PyObject* b);
// The fast-call definitions of the pijit.ops builtins and of the Tensor methods, indexed by
// PyOp (one C function per op, so that capture recognises a builtin by its function).
absl::Span<PyMethodDef> OpFunctionDefs();
absl::Span<PyMethodDef> OpMethodDefs();
// Tensor.__setitem__: writes `value` (a Tensor, a NumPy array, a list or a Python scalar,
// broadcast to the selection and cast to self's dtype) at `index` (setitem.cc).
absl::Status SetItem(PyObject* self, PyObject* index, PyObject* value);

}  // namespace pijit
