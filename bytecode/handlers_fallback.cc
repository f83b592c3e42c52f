// JIT Fallback of whole-graph mode (MindSpore's graph mode, PSJit, capture_mode="ast"):
// where a call cannot become graph nodes, whole-graph mode does not give up at once.
//  - print(...) is replayed after the graph, in program order with the other effects, with
//    the values of this call (tensors are graph outputs);
//  - any other Python callable whose arguments are all known at capture time (NumPy,
//    math, Tensor(ndarray), helpers capture cannot inline) runs once, now, and its result is
//    a constant of the graph, guarded as its arguments are; a tensor result is a constant
//    node. Attributes of such results are read now too.
// Bytecode mode breaks the graph at those calls instead, which runs them on every call, but
// for pijit.Tensor(...) of constants: a graph constant in either mode.
#include <algorithm>
#include <string_view>
#include <vector>


#include "absl/strings/str_cat.h"
#include "bytecode/interp.h"
#include "guards/guards.h"
#include "interop/convert.h"
#include "interop/python_objects.h"

namespace pijit::bytecode {

namespace {

PyObject* BuiltinPrint() {
  static PyObject* print = [] {
    PyObject* builtins = PyEval_GetBuiltins();
    return builtins ? PyDict_GetItemString(builtins, "print") : nullptr;
  }();
  return print;
}

// What a fallback result may be: values whose sharing between calls cannot be seen (immutable
// ones; tensors, which become constant nodes; NumPy arrays, copied whenever they leave the
// graph) and the callables and namespaces code uses on them.
bool HoldableResult(PyObject* r) {
  return guards::IsPlainValue(r) || PyBytes_CheckExact(r) || PyFrozenSet_CheckExact(r) ||
         AsTensor(r) || IsNumpyScalar(r) || IsNumpyArray(r) || IsNumpyDType(r) ||
         PyType_Check(r) || PyModule_Check(r) || PyCFunction_Check(r) || PyMethod_Check(r) ||
         PyFunction_Check(r);
}

// Whether calling type `t` makes a value HoldableResult accepts (checked before the call, so
// that no instance of another class is made at compile time).
bool MakesHoldable(PyTypeObject* t) {
  static const PyTypeObject* const kValueTypes[] = {&PyLong_Type, &PyFloat_Type, &PyBool_Type,
                                                    &PyUnicode_Type, &PyTuple_Type,
                                                    &PyBytes_Type, &PyFrozenSet_Type};
  for (const PyTypeObject* v : kValueTypes)
    if (t == v) return true;
  return PyType_IsSubtype(t, g_tensor_type) ||
         std::string_view(t->tp_name).rfind("numpy.", 0) == 0;
}

}  // namespace

// NumPy's functions that make a new array from their arguments alone (no input array is
// changed, no randomness): np.array(...), np.ones(...), np.arange(...), ...
bool IsNumpyConstructor(PyObject* fn) {
  static const std::vector<PyObject*>* const constructors = [] {
    auto* fns = new std::vector<PyObject*>();
    PyObject* np = PyImport_ImportModule("numpy");
    if (!np) {
      PyErr_Clear();
      return fns;
    }
    for (const char* name : {"array", "asarray", "ones", "zeros", "full", "arange", "eye",
                             "identity", "linspace", "ones_like", "zeros_like", "full_like"}) {
      PyObject* f = PyObject_GetAttrString(np, name);
      if (f) fns->push_back(f);  // kept for the process, as numpy itself is
      else PyErr_Clear();
    }
    Py_DECREF(np);
    return fns;
  }();
  return std::find(constructors->begin(), constructors->end(), fn) != constructors->end();
}

std::string ReprOf(PyObject* o) {
  PyObject* r = PyObject_Repr(o);
  std::string s = r ? PyUnicode_AsUTF8(r) : Py_TYPE(o)->tp_name;
  Py_XDECREF(r);
  if (!r) PyErr_Clear();
  return s;
}

bool Interp::FixedAtCompileTime(const Value& v) {
  switch (v.kind) {
    case Value::kConst:
      // Computed during capture (a literal, a fallback result) or guarded by value; an
      // object from outside that is guarded by identity only (a list, an array) may change
      // its contents under the guard, except types, modules, functions and NumPy scalars.
      return v.source < 0 || guards::IsPlainValue(v.obj) || PyType_Check(v.obj) ||
             PyModule_Check(v.obj) || PyCFunction_Check(v.obj) || PyFunction_Check(v.obj) ||
             IsNumpyScalar(v.obj) ||
             (g_dtype_type && PyObject_TypeCheck(v.obj, reinterpret_cast<PyTypeObject*>(g_dtype_type)));
    case Value::kSeq:
      for (const Value& item : *v.items)
        if (!FixedAtCompileTime(item)) return false;
      return true;
    default:
      return false;
  }
}

PyObject* Interp::CallWithConstants(PyObject* fn, const ValueList& args,
                                     const std::vector<std::string>& names, bool* unknown) {
  *unknown = false;
  std::vector<PyObject*> argv;
  for (const Value& a : args) {
    PyObject* o = FixedAtCompileTime(a) ? AsPyObject(a) : nullptr;
    if (!o) {
      *unknown = true;
      return nullptr;
    }
    argv.push_back(o);
  }
  for (const Value& a : args) UseConst(a);
  PyObject* kwnames = nullptr;
  if (!names.empty()) {
    kwnames = PyTuple_New(static_cast<Py_ssize_t>(names.size()));
    for (size_t k = 0; k < names.size(); ++k)
      PyTuple_SET_ITEM(kwnames, k, PyUnicode_FromString(names[k].c_str()));
  }
  PyObject* r = PyObject_Vectorcall(fn, argv.data(), args.size() - names.size(), kwnames);
  Py_XDECREF(kwnames);
  return r;
}

bool Interp::FallbackCall(PyObject* fn, const ValueList& args,
                          const std::vector<std::string>& names, Value* out, bool* handled,
                          bool constexpr_call) {
  *handled = false;
  // print is a side effect replayed after the graph, in order with the others, in either
  // mode (a print the graph cannot hold breaks the graph in bytecode mode).
  if (fn == BuiltinPrint() && fn != nullptr) {
    *handled = true;
    return PrintEffect(args, names, out);
  }
  // Bytecode mode breaks the graph at the other calls instead, except Tensor(...) of values
  // fixed at compile time (a constant of the graph) and NumPy's array constructors of such
  // values (their array is copied wherever it leaves the graph, a break's state included, so
  // each call sees a new one as eager code does).
  if (allow_break_ && fn != reinterpret_cast<PyObject*>(g_tensor_type) && !constexpr_call &&
      !IsNumpyConstructor(fn)) {
    return false;
  }
  const char* label = constexpr_call ? "constexpr function" : "JIT Fallback:";
  *handled = true;
  if (PyType_Check(fn) && !MakesHoldable(reinterpret_cast<PyTypeObject*>(fn))) {
    *handled = false;  // an instance of a user class would be shared by every call
    return false;
  }
  bool unknown = false;
  PyObject* r = CallWithConstants(fn, args, names, &unknown);
  if (unknown) {
    *handled = false;  // a tensor of this call, or a value that may change between calls
    return false;
  }
  if (!r) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    const std::string what = value ? ReprOf(value) : "an error";
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    Fail(BreakCategory::kPythonError, absl::StrCat(label, " ", ReprOf(fn), " raised ", what,
                                                   " at compile time"));
    return false;
  }
  values_.Keep(r);
  if (!HoldableResult(r)) {
    Fail(BreakCategory::kUnsupportedCall, absl::StrCat(label, " ", ReprOf(fn), " returns a ",
                                          Py_TYPE(r)->tp_name, ", which a graph cannot hold as "
                                          "a constant"));
    return false;
  }
  if (Tensor* t = AsTensor(r)) {
    *out = Value::Tensor(g().AddConstant(*t), Py_TYPE(r));
    return true;
  }
  *out = Value::Const(r);
  return true;
}

bool Interp::PrintEffect(const ValueList& args, const std::vector<std::string>& names,
                         Value* out) {
  const size_t npos = args.size() - names.size();
  PyObject* kwargs = nullptr;
  for (size_t k = 0; k < names.size(); ++k) {
    const Value& v = args[npos + k];
    PyObject* o = v.kind == Value::kConst ? AsPyObject(v) : nullptr;
    if (!o || names[k] == "file") {
      Py_XDECREF(kwargs);
      Fail(BreakCategory::kUnsupportedCall, absl::StrCat("print's ", names[k], "= must be a constant (and "
                                            "no file) in a graph"));
      return false;
    }
    UseConst(v);
    if (!kwargs) kwargs = PyDict_New();
    PyDict_SetItemString(kwargs, names[k].c_str(), o);
  }
  ValueList shown(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(npos));
  for (const Value& v : shown) {
    if (gen_depth_ > 0 || !ImmutableValue(v)) {
      Py_XDECREF(kwargs);
      Fail(BreakCategory::kSideEffect, "print of a list or a value a generator yields inside a graph",
           "print a tensor, a number or a tuple of them");
      return false;
    }
  }
  if (kwargs) values_.Keep(kwargs);
  effects_.Call(BuiltinPrint(), kwargs, Value::Seq(std::move(shown), false));
  out_->reordered_prints.push_back(CurrentLocation());
  *out = Value::Const(Py_None);
  return true;
}

bool Interp::FallbackAttr(const Value& owner, PyObject* name, Value* out) {
  // A value computed at capture time by a fallback call: it is fixed, so its attribute is too.
  if (allow_break_ || owner.kind != Value::kConst || owner.source >= 0 || owner.number) {
    return false;
  }
  PyObject* v = PyObject_GetAttr(owner.obj, name);
  if (!v) {
    PyErr_Clear();
    return false;
  }
  values_.Keep(v);
  if (!HoldableResult(v)) return false;
  *out = Value::Const(v);
  return true;
}

}  // namespace pijit::bytecode
