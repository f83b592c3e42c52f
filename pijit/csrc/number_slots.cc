// The number and comparison slots of pijit.Tensor: the arithmetic, matrix-product, bitwise and
// unary operators and the six comparisons on tensors and Python scalars, without the generic
// slot machinery.
//
// pybind11 defines __add__ and friends as methods, so CPython fills nb_add with its generic
// slot_nb_add, which looks the method up by name and calls it through pybind11's dispatcher;
// the call then goes through the op parser (ParseCall) like any pijit.ops call. That costs
// more than the kernel on small tensors. The slots below compute tensor-tensor and
// tensor-Python-scalar operands directly (exactly what the parsed call does: ScalarOperand,
// then the kernel) and hand everything else (NumPy scalars, other types, an active gradient
// tape) to the general path, BinaryOperator.
//
// Only pijit.Tensor's own slots are replaced. A Python subclass (Parameter) gets CPython's
// generic slots, which call the inherited __add__ methods: the same result by the slower road.
// Assigning Tensor.__add__ from Python makes CPython reset the slot, as for any class.
#include <new>

#include "absl/strings/str_format.h"
#include "kernels/ops.h"
#include "interop/convert.h"
#include "pijit/csrc/module.h"
#include "runtime/eager_ops.h"
#include "runtime/tape.h"

namespace pijit {
namespace {

// `op` on a and b in operand order: tensors and Python scalars through the direct eager path
// (what every surface of the op takes), the rest through BinaryOperator.
PyObject* FastBinary(PyOp op, PyObject* a, PyObject* b) {
  PyObject* args[2] = {a, b};
  if (PyObject* r = DirectEager(op, args, 2)) return r;
  if (PyErr_Occurred()) return nullptr;
  return BinaryOperator(op, a, b);
}

// The same for an op with an elementwise kernel, which the slot knows.
template <PyOp op, BinaryOp kernel>
PyObject* KernelSlot(PyObject* a, PyObject* b) {
  if (PyObject* r = DirectBinary(op, kernel, a, b)) return r;
  if (PyErr_Occurred()) return nullptr;
  return BinaryOperator(op, a, b);
}

// nb_add and friends receive the operands in expression order whichever side is the Tensor
// (CPython calls the right operand's slot for the reflected form): a single function serves
// __add__ and __radd__.
template <PyOp op>
PyObject* NumberSlot(PyObject* a, PyObject* b) {
  return FastBinary(op, a, b);
}

// x ** y: a third argument (pow(x, y, mod)) is not a tensor operation.
PyObject* PowerSlot(PyObject* a, PyObject* b, PyObject* mod) {
  if (mod != Py_None) Py_RETURN_NOTIMPLEMENTED;
  return FastBinary(PyOp::kPow, a, b);
}

// -x, abs(x), ~x: the direct path for a tensor, the general one otherwise.
template <PyOp op>
PyObject* UnarySlot(PyObject* a) {
  if (PyObject* r = DirectEager(op, &a, 1)) return r;
  if (PyErr_Occurred()) return nullptr;
  return CallEager(op, &a, 1, nullptr);
}

// tp_richcompare is called with self first; CPython swaps the operator for the reflected form.
PyObject* RichCompareSlot(PyObject* self, PyObject* other, int cmp) {
  switch (cmp) {
    case Py_EQ: return KernelSlot<PyOp::kEqual, BinaryOp::kEqual>(self, other);
    case Py_NE: return KernelSlot<PyOp::kNotEqual, BinaryOp::kNotEqual>(self, other);
    case Py_LT: return KernelSlot<PyOp::kLess, BinaryOp::kLess>(self, other);
    case Py_LE: return KernelSlot<PyOp::kLessEqual, BinaryOp::kLessEqual>(self, other);
    case Py_GT: return KernelSlot<PyOp::kGreater, BinaryOp::kGreater>(self, other);
    case Py_GE: return KernelSlot<PyOp::kGreaterEqual, BinaryOp::kGreaterEqual>(self, other);
  }
  Py_RETURN_NOTIMPLEMENTED;
}

}  // namespace

void InstallNumberSlots(PyTypeObject* type) {
  PyNumberMethods* nb = type->tp_as_number;
  nb->nb_add = KernelSlot<PyOp::kAdd, BinaryOp::kAdd>;
  nb->nb_subtract = KernelSlot<PyOp::kSub, BinaryOp::kSub>;
  nb->nb_multiply = KernelSlot<PyOp::kMul, BinaryOp::kMul>;
  nb->nb_true_divide = KernelSlot<PyOp::kDiv, BinaryOp::kDiv>;
  nb->nb_floor_divide = KernelSlot<PyOp::kFloorDivide, BinaryOp::kFloorDiv>;
  nb->nb_remainder = KernelSlot<PyOp::kMod, BinaryOp::kMod>;
  nb->nb_matrix_multiply = NumberSlot<PyOp::kMatMul>;
  nb->nb_and = KernelSlot<PyOp::kBitwiseAnd, BinaryOp::kBitwiseAnd>;
  nb->nb_or = KernelSlot<PyOp::kBitwiseOr, BinaryOp::kBitwiseOr>;
  nb->nb_xor = KernelSlot<PyOp::kBitwiseXor, BinaryOp::kBitwiseXor>;
  nb->nb_power = PowerSlot;
  nb->nb_negative = UnarySlot<PyOp::kNeg>;
  nb->nb_absolute = UnarySlot<PyOp::kAbs>;
  nb->nb_invert = UnarySlot<PyOp::kBitwiseNot>;
  type->tp_richcompare = RichCompareSlot;
  PyType_Modified(type);
}

}  // namespace pijit
