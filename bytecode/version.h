// Small helpers over the C API where CPython versions differ, so that handlers stay free of
// version tests.
#pragma once
#include <Python.h>

namespace pijit::bytecode {

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
