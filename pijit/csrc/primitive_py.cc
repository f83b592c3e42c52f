// pijit._C.PrimitiveBase: the native base of pijit.ops.Primitive. Calling a primitive instance
// (`ops.Add()(x, y)`) goes straight to the builtin its class names (`_pijit_op`), with the
// instance's attributes (`_pijit_kwargs()`) appended as keywords, through vectorcall: no Python
// __call__ frame. A subclass that defines __call__ in Python keeps it (CPython gives such a
// class its own call slot).
//
// The builtin and the keywords are read on the first call and kept: a primitive's attributes
// are fixed at construction (Primitive.__setattr__ refuses).
#include <pybind11/pybind11.h>
#include <structmember.h>

#include <cstddef>
#include <vector>

#include "pijit/csrc/module.h"

namespace pijit {
namespace {

struct PrimitiveObject {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* dict;
  PyObject* op;        // the builtin it calls; nullptr until the first call
  PyObject* kwnames;   // its attributes' keyword names (a tuple), or nullptr for none
  PyObject* kwvalues;  // their values (a tuple), or nullptr
};

PrimitiveObject* AsPrimitive(PyObject* self) { return reinterpret_cast<PrimitiveObject*>(self); }

// Reads the builtin and the keywords of `p`'s class and attributes.
bool Resolve(PrimitiveObject* p) {
  PyObject* self = reinterpret_cast<PyObject*>(p);
  PyObject* op = PyObject_GetAttrString(reinterpret_cast<PyObject*>(Py_TYPE(self)), "_pijit_op");
  if (!op) return false;
  if (op == Py_None || !PyCallable_Check(op)) {
    Py_DECREF(op);
    PyErr_Format(PyExc_TypeError, "%s: a primitive without an op cannot be called",
                 Py_TYPE(self)->tp_name);
    return false;
  }
  PyObject* kw = PyObject_CallMethod(self, "_pijit_kwargs", nullptr);
  if (!kw || !PyDict_Check(kw)) {
    if (kw) {
      PyErr_Format(PyExc_TypeError, "%s._pijit_kwargs() must return a dict, got %s",
                   Py_TYPE(self)->tp_name, Py_TYPE(kw)->tp_name);
    }
    Py_XDECREF(kw);
    Py_DECREF(op);
    return false;
  }
  const Py_ssize_t n = PyDict_GET_SIZE(kw);
  if (n > 0) {
    p->kwnames = PyTuple_New(n);
    p->kwvalues = PyTuple_New(n);
    if (!p->kwnames || !p->kwvalues) {
      Py_CLEAR(p->kwnames);
      Py_CLEAR(p->kwvalues);
      Py_DECREF(kw);
      Py_DECREF(op);
      return false;
    }
    PyObject *k, *v;
    Py_ssize_t pos = 0, i = 0;
    while (PyDict_Next(kw, &pos, &k, &v)) {
      Py_INCREF(k);
      Py_INCREF(v);
      PyTuple_SET_ITEM(p->kwnames, i, k);
      PyTuple_SET_ITEM(p->kwvalues, i, v);
      ++i;
    }
  }
  Py_DECREF(kw);
  p->op = op;
  return true;
}

PyObject* PrimitiveCall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  PrimitiveObject* p = AsPrimitive(self);
  if (!p->op && !Resolve(p)) return nullptr;
  if (!p->kwnames) return PyObject_Vectorcall(p->op, args, nargsf, kwnames);
  // The call's own arguments, then the attributes as keywords after the call's keywords.
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  const Py_ssize_t ncall_kw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  const Py_ssize_t nattr = PyTuple_GET_SIZE(p->kwnames);
  std::vector<PyObject*> all(args, args + nargs + ncall_kw);
  for (Py_ssize_t i = 0; i < nattr; ++i) all.push_back(PyTuple_GET_ITEM(p->kwvalues, i));
  PyObject* names = kwnames ? PySequence_Concat(kwnames, p->kwnames) : Py_NewRef(p->kwnames);
  if (!names) return nullptr;
  PyObject* r = PyObject_Vectorcall(p->op, all.data(), nargs, names);
  Py_DECREF(names);
  return r;
}

PyObject* PrimitiveNew(PyTypeObject* type, PyObject*, PyObject*) {
  PyObject* self = type->tp_alloc(type, 0);
  if (self) AsPrimitive(self)->vectorcall = PrimitiveCall;
  return self;
}

int PrimitiveTraverse(PyObject* self, visitproc visit, void* arg) {
  PrimitiveObject* p = AsPrimitive(self);
  Py_VISIT(Py_TYPE(self));
  Py_VISIT(p->dict);
  Py_VISIT(p->op);
  Py_VISIT(p->kwnames);
  Py_VISIT(p->kwvalues);
  return 0;
}

int PrimitiveClear(PyObject* self) {
  PrimitiveObject* p = AsPrimitive(self);
  Py_CLEAR(p->dict);
  Py_CLEAR(p->op);
  Py_CLEAR(p->kwnames);
  Py_CLEAR(p->kwvalues);
  return 0;
}

void PrimitiveDealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  PrimitiveClear(self);
  type->tp_free(self);
  Py_DECREF(type);
}

PyType_Slot g_primitive_slots[] = {
    {Py_tp_new, reinterpret_cast<void*>(PrimitiveNew)},
    {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
    {Py_tp_traverse, reinterpret_cast<void*>(PrimitiveTraverse)},
    {Py_tp_clear, reinterpret_cast<void*>(PrimitiveClear)},
    {Py_tp_dealloc, reinterpret_cast<void*>(PrimitiveDealloc)},
    {Py_tp_doc, const_cast<char*>("Native base of pijit.ops.Primitive: calls the class's op.")},
    {0, nullptr},
};

PyMemberDef g_primitive_members[] = {
    {"__dictoffset__", T_PYSSIZET, offsetof(PrimitiveObject, dict), READONLY, nullptr},
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(PrimitiveObject, vectorcall), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

PyGetSetDef g_primitive_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

}  // namespace

void BindPrimitive(pybind11::module_& m) {
  static PyType_Slot slots[sizeof(g_primitive_slots) / sizeof(g_primitive_slots[0]) + 2];
  size_t n = 0;
  for (const PyType_Slot& s : g_primitive_slots) {
    if (s.slot == 0) break;
    slots[n++] = s;
  }
  slots[n++] = {Py_tp_members, g_primitive_members};
  slots[n++] = {Py_tp_getset, g_primitive_getset};
  slots[n] = {0, nullptr};
  static PyType_Spec spec = {"pijit._C.PrimitiveBase", sizeof(PrimitiveObject), 0,
                             Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC |
                                 Py_TPFLAGS_HAVE_VECTORCALL,
                             slots};
  PyObject* type = PyType_FromSpec(&spec);
  if (!type) throw pybind11::error_already_set();
  m.attr("PrimitiveBase") = pybind11::reinterpret_steal<pybind11::object>(type);
  // CPython before 3.12 does not pass the vectorcall flag on to Python subclasses, which then
  // reach PrimitiveCall through PyVectorcall_Call (a tuple and a dict per call). A subclass
  // that keeps the base's call slot (no __call__ of its own) gets the flag back here, from
  // Primitive.__init_subclass__. (Assigning __call__ to such a class later is not supported
  // before 3.12, which clears the flag itself.)
  m.def("_primitive_fast_call", [](pybind11::handle cls) {
    if (!PyType_Check(cls.ptr())) throw pybind11::type_error("_primitive_fast_call: expected a class");
    auto* t = reinterpret_cast<PyTypeObject*>(cls.ptr());
    if (t->tp_call == PyVectorcall_Call && t->tp_vectorcall_offset > 0) {
      t->tp_flags |= Py_TPFLAGS_HAVE_VECTORCALL;
      return true;
    }
    return false;
  });
}

}  // namespace pijit
