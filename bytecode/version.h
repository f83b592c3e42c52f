// Small helpers over the C API where CPython versions differ, so that handlers stay free of
// version tests.
#pragma once
#include <Python.h>

namespace pijit::bytecode {

constexpr bool kPy312 = PY_VERSION_HEX >= 0x030C0000;
constexpr bool kPy313 = PY_VERSION_HEX >= 0x030D0000;

// Where a call's stack puts the NULL beside a callable that is not a bound method: 3.13
// above it ([callable, NULL, arguments]), 3.11 and 3.12 below it ([NULL, callable, ...]).
// A method call is [method, self, arguments] on all three.
constexpr bool kNullAfterCallable = kPy313;
// COMPARE_OP's operator sits above a 4-bit branch mask on 3.12, and above the mask and the
// bool flag (kCompareToBool) on 3.13.
constexpr int kCompareOpShift = kPy313 ? 5 : kPy312 ? 4 : 0;
// How many instructions at an exhausted FOR_ITER's target the interpreter skips: 3.12's
// END_FOR, 3.13's END_FOR and POP_TOP. END_FOR pops, on 3.12,
// the iterator and a finished generator's value (2), on 3.13 the value only (1).
constexpr int kForIterExitLength = kPy313 ? 2 : 1;
constexpr int kEndForPops = kPy313 ? 1 : 2;
// 3.13's conditional jumps and UNARY_NOT take a bool, made by the TO_BOOL before them.
constexpr bool kJumpsTakeBool = kPy313;

// The type's own attribute dict (borrowed). 3.12 keeps the dicts of static builtin types in
// the interpreter, with tp_dict NULL.
inline PyObject* TypeDict(PyTypeObject* type) {
#if PY_VERSION_HEX >= 0x030C0000
  PyObject* dict = PyType_GetDict(type);  // new reference; the type or interpreter keeps one
  Py_XDECREF(dict);
  return dict;
#else
  return type->tp_dict;
#endif
}

}  // namespace pijit::bytecode
