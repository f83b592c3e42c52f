// Objects of plain Python classes made in captured code (a user class, a dataclass, an
// options object): a kObject value holding its attributes (names in `keys`, values in
// `items`, shared by every alias) and its class (`seq_type`, read through the guarded
// source `type_source`). __init__, methods and __call__ are inlined with the object as
// self; attribute stores change it in the trace; returned or handed to a graph break, it is
// rebuilt as an instance of its class with those attributes.
//
// A class qualifies when nothing but its own Python code runs for it: a plain metaclass,
// object's __new__, plain attribute access (no __getattr__/__setattr__/__getattribute__),
// an instance dict, and a Python __init__ (or none).
#include "absl/strings/str_cat.h"
#include "bytecode/interp.h"
#include "bytecode/version.h"
#include "guards/guards.h"
#include "interop/convert.h"
#include "interop/python_objects.h"

namespace pijit::bytecode {

using guards::Source;

namespace {

bool PlainClass(PyTypeObject* t) {
  return Py_TYPE(t) == &PyType_Type && t->tp_new == PyBaseObject_Type.tp_new &&
         t->tp_getattro == PyObject_GenericGetAttr && t->tp_setattro == PyObject_GenericSetAttr &&
         t->tp_dictoffset != 0 && !PyType_IsSubtype(t, g_tensor_type) &&
         (t->tp_flags & Py_TPFLAGS_HEAPTYPE);
}

}  // namespace

bool Interp::MakeLibraryObject(const Value& cls, const ValueList& args,
                               const std::vector<std::string>& kwnames, Value* out,
                               bool* handled) {
  *handled = false;
  if (cls.kind != Value::kConst || cls.source < 0 || !PyType_Check(cls.obj)) return false;
  auto* type = reinterpret_cast<PyTypeObject*>(cls.obj);
  PyObject* dict = TypeDict(type);
  PyObject* module = dict ? PyDict_GetItemString(dict, "__module__") : nullptr;
  if (!module || !PyUnicode_Check(module) ||
      std::string_view(PyUnicode_AsUTF8(module)).rfind("pijit.", 0) != 0) {
    return false;  // a user's class: its __init__ may do anything, it is inlined instead
  }
  static PyObject* const call_name = PyUnicode_InternFromString("__call__");
  static PyObject* const op_name = PyUnicode_InternFromString("_pijit_op");
  const bool cell = g_cell_call && _PyType_Lookup(type, call_name) == g_cell_call;
  const bool primitive = _PyType_Lookup(type, op_name) != nullptr;
  if (!cell && !primitive) return false;
  *handled = true;
  bool unknown = false;
  PyObject* obj = CallWithConstants(cls.obj, args, kwnames, &unknown);
  if (unknown) {
    Fail(BreakCategory::kUnsupportedCall,
         absl::StrCat(type->tp_name, " made in captured code from a value unknown at capture "
                      "time"),
         "build it in __init__, or from constants");
    return false;
  }
  if (!obj) {
    PyErr_Clear();
    Fail(BreakCategory::kPythonError, absl::StrCat(type->tp_name, "(...) raises on these arguments"),
         "the function runs eagerly and raises the error there");
    return false;
  }
  values_.Keep(obj);
  if (cell) {
    // A Cell with Parameters would get new weights on every eager call; one made once here
    // would keep its first ones.
    PyObject* params = PyObject_CallMethod(obj, "parameters_dict", nullptr);
    const Py_ssize_t n = params ? PyObject_Length(params) : -1;
    Py_XDECREF(params);
    if (n != 0) {
      PyErr_Clear();
      Fail(BreakCategory::kUnsupportedCall,
           absl::StrCat(type->tp_name, " made in captured code has Parameters (new ones on "
                        "every call)"),
           "create the layer in __init__ and call it in construct");
      return false;
    }
  }
  values_.NoteLibraryObject(obj, cls.source);
  *out = Value::Const(obj);
  return true;
}

int32_t Interp::MethodSource(const Value& callable, PyObject* name) {
  if (callable.source >= 0) return gp().AddSource(Source::kTypeAttr, callable.source, -1, name);
  const int32_t class_source =
      callable.kind == Value::kConst ? values_.LibraryClassSource(callable.obj) : -1;
  if (class_source < 0) return -1;
  return gp().AddSource(Source::kClassAttr, class_source, -1, name);
}

bool Interp::MakeObject(Frame& f, const Value& cls, const ValueList& args,
                        const std::vector<std::string>& kwnames, Value* out, bool* handled) {
  *handled = false;
  if (cls.kind != Value::kConst || cls.source < 0 || !PyType_Check(cls.obj)) return false;
  auto* type = reinterpret_cast<PyTypeObject*>(cls.obj);
  if (!PlainClass(type)) return false;
  static PyObject* init_name = PyUnicode_InternFromString("__init__");
  PyObject* init = _PyType_Lookup(type, init_name);
  const bool object_init = init == _PyType_Lookup(&PyBaseObject_Type, init_name);
  if (!object_init && !(init && PyFunction_Check(init))) return false;
  *handled = true;
  Value obj = Value::Dict();
  obj.kind = Value::kObject;
  obj.seq_type = cls.obj;
  obj.type_source = cls.source;
  if (object_init) {
    if (!args.empty()) {
      Fail(BreakCategory::kPythonError, absl::StrCat(type->tp_name, "() takes no arguments"));
      return false;
    }
  } else {
    Value init_value;
    if (!values_.FromSource(gp().AddSource(Source::kClassAttr, cls.source, -1, init_name), init, &init_value)) {
      return false;
    }
    UseConst(init_value);
    ValueList init_args{obj};
    init_args.insert(init_args.end(), args.begin(), args.end());
    Value ret;
    if (!Inline(f, reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(init)), init,
                init_value.source, nullptr, std::move(init_args), kwnames, &ret)) {
      return false;
    }
    if (ret.kind != Value::kConst || ret.obj != Py_None) {
      Fail(BreakCategory::kPythonError, "__init__() should return None");
      return false;
    }
  }
  *out = std::move(obj);
  return true;
}

bool Interp::ObjectAttr(Frame& f, const Value& owner, PyObject* name, bool method) {
  auto* type = reinterpret_cast<PyTypeObject*>(owner.seq_type);
  if (IsMadeException(owner) && PyUnicode_CompareWithASCIIString(name, "args") == 0) {
    PushLoaded(f, owner.items->front(), method);  // BaseException's `args`, kept first
    return true;
  }
  PyObject* descr = _PyType_Lookup(type, name);
  if (descr && PyObject_TypeCheck(descr, &PyProperty_Type)) {  // a getter, inlined
    Value result;
    bool handled = false;
    if (CallPropertyAccessor(f, owner, name, nullptr, &result, &handled)) {
      PushLoaded(f, std::move(result), method);
      return true;
    }
    if (handled) return false;
  }
  if (descr && Py_TYPE(descr)->tp_descr_set) {
    Fail(BreakCategory::kUnsupportedAttribute, absl::StrCat("attribute '", PyUnicode_AsUTF8(name),
                                               "' of an object made in the trace is a descriptor"));
    return false;
  }
  for (size_t i = 0; i < owner.keys->size(); ++i) {
    if (PyUnicode_Compare((*owner.keys)[i], name) != 0) continue;
    PushLoaded(f, (*owner.items)[i], method);
    return true;
  }
  if (!descr) {
    Fail(BreakCategory::kPythonError, absl::StrCat("'", type->tp_name, "' object has no attribute '",
                                      PyUnicode_AsUTF8(name), "'"));
    return false;
  }
  Value v;
  if (!values_.FromSource(gp().AddSource(Source::kClassAttr, owner.type_source, -1, name), descr, &v)) {
    return false;
  }
  UseConst(v);
  if (PyFunction_Check(descr)) {  // a method: (function, self) for CALL
    if (!method) {
      Fail(BreakCategory::kUnsupportedAttribute, "a bound method of an object made in the trace used as a value",
           "call the method directly");
      return false;
    }
    PushBoundMethod(f, std::move(v), owner);
    return true;
  }
  const bool staticm = PyObject_TypeCheck(descr, &PyStaticMethod_Type);
  const bool classm = PyObject_TypeCheck(descr, &PyClassMethod_Type);
  if (PyObject* fn = staticm || classm ? guards::DescriptorFunction(descr) : nullptr;
      fn && PyFunction_Check(fn)) {
    // A staticmethod: its function; a classmethod: (function, the object's class) for CALL.
    Value fn_value;
    if (!values_.FromSource(gp().AddSource(Source::kDescrFunc, v.source, -1), fn, &fn_value)) return false;
    UseConst(fn_value);
    return PushStaticOrClassMethod(f, std::move(fn_value), staticm, method, [&](Value* cls) {
      return values_.FromSource(owner.type_source, reinterpret_cast<PyObject*>(type), cls);
    });
  }
  if (Py_TYPE(descr)->tp_descr_get) {
    Fail(BreakCategory::kUnsupportedAttribute, absl::StrCat("attribute '", PyUnicode_AsUTF8(name),
                                               "' of an object made in the trace is computed"));
    return false;
  }
  PushLoaded(f, std::move(v), method);  // a plain class attribute
  return true;
}

bool IsMadeException(const Value& v) {
  return v.kind == Value::kObject && v.seq_type && PyExceptionClass_Check(v.seq_type);
}

bool Interp::MakeException(const Value& cls, const ValueList& args,
                           const std::vector<std::string>& kwnames, Value* out, bool* handled) {
  // An exception class whose construction is BaseException's own (the builtin exceptions
  // but those with extra fields, and user subclasses that define no __new__/__init__): its
  // instance is its class and `args`, a kObject rebuilt after the graph as Python would
  // make it (runtime/continuation.cc), so each call gets a new exception object.
  *handled = false;
  if (cls.kind != Value::kConst || cls.source < 0 || !PyExceptionClass_Check(cls.obj)) return false;
  auto* type = reinterpret_cast<PyTypeObject*>(cls.obj);
  auto* base = reinterpret_cast<PyTypeObject*>(PyExc_BaseException);
  if (Py_TYPE(type) != &PyType_Type || type->tp_new != base->tp_new || type->tp_init != base->tp_init ||
      type->tp_getattro != PyObject_GenericGetAttr || type->tp_setattro != PyObject_GenericSetAttr) {
    return false;
  }
  *handled = true;
  if (!kwnames.empty()) {
    Fail(BreakCategory::kPythonError, absl::StrCat(type->tp_name, "() takes no keyword arguments"),
         "the function runs eagerly and raises the TypeError there");
    return false;
  }
  UseConst(cls);
  Value obj = Value::Dict();
  obj.kind = Value::kObject;
  obj.seq_type = cls.obj;
  obj.type_source = cls.source;
  static PyObject* const args_name = PyUnicode_InternFromString("args");
  obj.keys->push_back(args_name);
  obj.items->push_back(Value::Seq(args, false));
  // Shared by the exception's aliases: becomes a constant (True) once the trace raises it
  // (RaiseToHandler), after which it cannot leave the graph (MakeOutput).
  obj.cell = std::make_shared<Value>();
  *out = std::move(obj);
  return true;
}

bool Interp::StoreObjectAttr(const Value& owner, PyObject* name, const Value& value) {
  PyObject* descr = _PyType_Lookup(reinterpret_cast<PyTypeObject*>(owner.seq_type), name);
  if (descr && Py_TYPE(descr)->tp_descr_set) {
    Fail(BreakCategory::kSideEffect, "attribute store through a descriptor of an object made in the trace");
    return false;
  }
  for (size_t i = 0; i < owner.keys->size(); ++i) {
    if (PyUnicode_Compare((*owner.keys)[i], name) == 0) {
      (*owner.items)[i] = value;
      return true;
    }
  }
  owner.keys->push_back(name);
  owner.items->push_back(value);
  return true;
}

bool Interp::CallObject(Frame& f, const Value& obj, ValueList args,
                        const std::vector<std::string>& kwnames, Value* out) {
  static PyObject* call_name = PyUnicode_InternFromString("__call__");
  PyObject* call = _PyType_Lookup(reinterpret_cast<PyTypeObject*>(obj.seq_type), call_name);
  if (!call || !PyFunction_Check(call)) {
    Fail(BreakCategory::kUnsupportedCall, "calling an object made in the trace without a Python __call__");
    return false;
  }
  Value fn;
  if (!values_.FromSource(gp().AddSource(Source::kClassAttr, obj.type_source, -1, call_name), call, &fn)) {
    return false;
  }
  UseConst(fn);
  args.insert(args.begin(), obj);
  return Inline(f, reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(call)), call, fn.source,
                nullptr, std::move(args), kwnames, out);
}

}  // namespace pijit::bytecode
