// Attributes Python computes with descriptors, read as CPython's type_getattro and
// PyObject_GenericGetAttr would: on a class (K.attr), class attributes in its MRO, staticmethod
// and classmethod functions; on an instance, staticmethod, classmethod and property (whose
// getter is inlined). Each function is reached through guarded sources (kClassAttr,
// kTypeAttr, kDescrFunc), so a class that is changed later recompiles.
#include "bytecode/interp.h"
#include "bytecode/version.h"
#include "guards/guards.h"
#include "interop/python_objects.h"

namespace pijit::bytecode {

using guards::Source;

namespace {

bool IsDescriptorOf(PyObject* descr, PyTypeObject* type) { return PyObject_TypeCheck(descr, type); }

// The member `name` of an Enum class (borrowed), or nullptr: members are fixed once the class
// is made, so a member read through a guarded class is a constant. Read from the class's own
// _member_map_ (no code runs: EnumType's attribute lookup is Python).
PyObject* EnumMember(PyObject* cls, PyObject* name) {
  if (!IsEnumClass(cls)) return nullptr;
  PyObject* dict = TypeDict(reinterpret_cast<PyTypeObject*>(cls));
  PyObject* members = dict ? PyDict_GetItemString(dict, "_member_map_") : nullptr;
  return members && PyDict_CheckExact(members) ? PyDict_GetItem(members, name) : nullptr;
}

}  // namespace

bool IsEnumClass(PyObject* cls) {
  static PyObject* enum_type = [] {
    PyObject* mod = PyImport_ImportModule("enum");
    PyObject* t = mod ? PyObject_GetAttrString(mod, "EnumType") : nullptr;
    Py_XDECREF(mod);
    if (!t) PyErr_Clear();
    return t;  // kept: the enum module lives as long as the interpreter
  }();
  return enum_type && PyType_Check(cls) &&
         PyObject_TypeCheck(cls, reinterpret_cast<PyTypeObject*>(enum_type));
}

bool IsComparableEnumMember(PyObject* o) {
  PyTypeObject* t = Py_TYPE(o);
  if (!IsEnumClass(reinterpret_cast<PyObject*>(t))) return false;
  const richcmpfunc cmp = t->tp_richcompare;
  return cmp == PyBaseObject_Type.tp_richcompare || cmp == PyLong_Type.tp_richcompare ||
         cmp == PyUnicode_Type.tp_richcompare;
}

bool IsDTypeObject(PyObject* o) {
  return g_dtype_type && PyObject_TypeCheck(o, reinterpret_cast<PyTypeObject*>(g_dtype_type));
}

bool ComparesWithoutCode(PyObject* o) {
  return guards::IsPlainValue(o) || IsComparableEnumMember(o) || IsDTypeObject(o);
}

bool Interp::LoadDescriptorAttr(Frame& f, const Value& owner, PyObject* name, bool method,
                                bool* handled) {
  *handled = false;
  if (owner.kind != Value::kConst) return false;
  PyObject* obj = owner.obj;
  // An Enum member's value and name (Enum's properties over the _value_ and _name_ the member
  // stores), whether the member came from a source or from its class earlier in the trace.
  const char* stored_as = PyUnicode_CompareWithASCIIString(name, "value") == 0  ? "_value_"
                          : PyUnicode_CompareWithASCIIString(name, "name") == 0 ? "_name_"
                                                                                : nullptr;
  if (stored_as && IsEnumClass(reinterpret_cast<PyObject*>(Py_TYPE(obj)))) {
    PyObject* stored = PyUnicode_InternFromString(stored_as);
    PyObject* v = stored ? guards::SafeGetAttr(obj, stored) : nullptr;
    Py_XDECREF(stored);
    if (v) {
      *handled = true;
      UseConst(owner);  // the member, by identity: what it stores never changes
      PushLoaded(f, Value::Const(v), method);
      return true;
    }
  }
  if (owner.source < 0) return false;
  if (PyObject* member = EnumMember(obj, name)) {
    *handled = true;
    UseConst(owner);  // the class, by identity
    PushLoaded(f, Value::Const(member), method);
    return true;
  }
  const bool is_class = PyType_Check(obj);
  // A plain metaclass for classes, plain attribute lookup for instances: anything else may
  // compute the attribute in code of its own.
  if (is_class ? Py_TYPE(obj)->tp_getattro != PyType_Type.tp_getattro ||
                     _PyType_Lookup(Py_TYPE(obj), name) != nullptr
               : Py_TYPE(obj)->tp_getattro != PyObject_GenericGetAttr) {
    return false;
  }
  PyTypeObject* where = is_class ? reinterpret_cast<PyTypeObject*>(obj) : Py_TYPE(obj);
  PyObject* descr = _PyType_Lookup(where, name);
  if (!descr) return false;
  if (!is_class && IsDescriptorOf(descr, &PyProperty_Type)) {  // the getter, inlined
    Value result;
    if (!CallPropertyAccessor(f, owner, name, nullptr, &result, handled)) return false;
    PushLoaded(f, std::move(result), method);
    return true;
  }
  const bool staticm = IsDescriptorOf(descr, &PyStaticMethod_Type);
  const bool classm = IsDescriptorOf(descr, &PyClassMethod_Type);
  const int32_t descr_source = gp().AddSource(is_class ? Source::kClassAttr : Source::kTypeAttr,
                                              owner.source, -1, name);
  if (!is_class) gp().GuardType(owner.source, obj);
  if (is_class && !staticm && !classm) {
    // A class attribute: a plain value, or a function (K.method, unbound).
    if (Py_TYPE(descr)->tp_descr_get && !PyFunction_Check(descr)) return false;
    Value v;
    if (!values_.FromSource(descr_source, descr, &v)) {
      *handled = true;
      return false;
    }
    *handled = true;
    PushLoaded(f, std::move(v), method);
    return true;
  }
  if (!staticm && !classm) return false;
  PyObject* fn = guards::DescriptorFunction(descr);
  // A staticmethod may hold any callable (a builtin op): it is called as it is. Classmethods
  // are inlined, so they must be Python functions.
  if (!fn || (!staticm && !PyFunction_Check(fn))) return false;
  *handled = true;
  Value descr_value;
  Value fn_value;
  if (!values_.FromSource(descr_source, descr, &descr_value) ||
      !values_.FromSource(gp().AddSource(Source::kDescrFunc, descr_source, -1), fn, &fn_value)) {
    return false;
  }
  UseConst(descr_value);
  UseConst(fn_value);
  // A classmethod is bound to the class (an instance's type is guarded above).
  return PushStaticOrClassMethod(f, std::move(fn_value), staticm, method, [&](Value* cls) {
    *cls = owner;
    return is_class || values_.FromSource(gp().AddSource(Source::kTypeOf, owner.source, -1),
                                          reinterpret_cast<PyObject*>(where), cls);
  });
}

bool Interp::PushStaticOrClassMethod(Frame& f, Value fn, bool staticm, bool method,
                                     absl::FunctionRef<bool(Value*)> class_of) {
  if (staticm) {
    PushLoaded(f, std::move(fn), method);
    return true;
  }
  if (!method) {
    Fail(BreakCategory::kUnsupportedAttribute, "a classmethod used as a value", "call it directly");
    return false;
  }
  Value cls;
  if (!class_of(&cls)) return false;
  f.stack.push_back(std::move(fn));
  f.stack.push_back(std::move(cls));
  return true;
}

// The property `name` of an object pijit knows the class of: made in the trace (kObject, its
// class at `type_source`) or an input whose attributes are looked up (`setter`: set) the
// generic way, its type guarded, with the source it is read through. False when there is
// none.
bool Interp::PropertyOf(const Value& owner, PyObject* name, bool setter, PyObject** descr,
                        int32_t* descr_source) {
  PyTypeObject* type = nullptr;
  if (owner.kind == Value::kObject) {
    type = reinterpret_cast<PyTypeObject*>(owner.seq_type);
  } else if (owner.kind == Value::kConst && owner.source >= 0 && !PyType_Check(owner.obj) &&
             !PyModule_Check(owner.obj) &&
             (setter ? Py_TYPE(owner.obj)->tp_setattro == PyObject_GenericSetAttr
                     : Py_TYPE(owner.obj)->tp_getattro == PyObject_GenericGetAttr)) {
    type = Py_TYPE(owner.obj);
  }
  PyObject* d = type ? _PyType_Lookup(type, name) : nullptr;
  if (!d || !IsDescriptorOf(d, &PyProperty_Type)) return false;
  // Sources only for a property that is there: every source must resolve on later calls.
  if (owner.kind == Value::kObject) {
    *descr_source = gp().AddSource(Source::kClassAttr, owner.type_source, -1, name);
  } else {
    gp().GuardType(owner.source, owner.obj);
    *descr_source = gp().AddSource(Source::kTypeAttr, owner.source, -1, name);
  }
  *descr = d;
  return true;
}

// `owner.name` through a property whose getter (or, with `value`, setter) is a Python
// function: the accessor is inlined on the owner, as Python would call it.
bool Interp::CallPropertyAccessor(Frame& f, const Value& owner, PyObject* name, const Value* value,
                                  Value* out, bool* handled) {
  *handled = false;
  PyObject* descr = nullptr;
  int32_t descr_source = -1;
  if (!PropertyOf(owner, name, /*setter=*/value != nullptr, &descr, &descr_source)) return false;
  PyObject* fn = guards::DescriptorFunction(descr, /*setter=*/value != nullptr);
  if (!fn || !PyFunction_Check(fn)) return false;
  *handled = true;
  Value descr_value, fn_value;
  if (!values_.FromSource(descr_source, descr, &descr_value) ||
      !values_.FromSource(gp().AddSource(Source::kDescrFunc, descr_source,
                                 value ? guards::kPropertySetter : -1),
                  fn, &fn_value)) {
    return false;
  }
  UseConst(descr_value);
  UseConst(fn_value);
  ValueList args{owner};
  if (value) args.push_back(*value);
  return Call(f, fn_value, std::move(args), out);
}

}  // namespace pijit::bytecode
