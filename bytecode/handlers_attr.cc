// Loads of names: globals and builtins, closure variables, attributes and methods.
#include "absl/strings/str_format.h"
#include "bytecode/interp.h"
#include "guards/guards.h"
#include "interop/convert.h"

namespace pijit::bytecode {

using guards::Source;

bool Interp::LoadGlobal(Frame& f, PyObject* name, Value* out) {
  PyObject* globals;
  PyObject* builtins;
  if (f.func) {
    globals = PyFunction_GET_GLOBALS(f.func);
    builtins = reinterpret_cast<PyFunctionObject*>(f.func)->func_builtins;
  } else {
    // A function made during capture shares the globals of the function that made it
    // (read through that function's source when it was inlined).
    PyObject* owner = f.globals_func ? f.globals_func : root_func_;
    if (f.func_source >= 0 && !f.globals_func) {
      Fail(BreakCategory::kInternal, "a nested function's globals are unknown");
      return false;
    }
    globals = PyFunction_GET_GLOBALS(owner);
    builtins = reinterpret_cast<PyFunctionObject*>(owner)->func_builtins;
  }
  if (const Value* p = effects_.PendingGlobal(globals, name)) {  // stored earlier in the trace
    if (p->kind == Value::kUndef) {
      Fail(BreakCategory::kSideEffect, absl::StrFormat("a read of the global '%s' deleted earlier",
                                          PyUnicode_AsUTF8(name)),
           "the graph breaks here; Python reads the name (a builtin, or a NameError)");
      return false;
    }
    *out = *p;
    return true;
  }
  const bool root = f.func_source < 0;
  Source::Kind kind = root ? Source::kGlobal : Source::kFuncGlobal;
  PyObject* v = PyDict_GetItemWithError(globals, name);
  if (!v && !PyErr_Occurred()) {
    kind = root ? Source::kBuiltin : Source::kFuncBuiltin;
    v = PyDict_GetItemWithError(builtins, name);
  }
  if (!v) {
    PyErr_Clear();
    Fail(BreakCategory::kPythonError, absl::StrFormat("name '%s' is not defined", PyUnicode_AsUTF8(name)));
    return false;
  }
  Py_INCREF(v);
  values_.Keep(v);
  return values_.FromSource(gp().AddSource(kind, root ? -1 : f.func_source, -1, name), v, out);
}

bool Interp::LoadDeref(Frame& f, int slot, Value* out) {
  Value& local = f.locals[slot];
  if (const Value* p = effects_.PendingCell(FreeCell(f, slot))) {  // stored earlier in the trace
    *out = *p;
    return true;
  }
  if (local.kind == Value::kCell) {
    if (local.cell->kind == Value::kUndef) {
      Fail(BreakCategory::kPythonError, "free variable referenced before assignment");
      return false;
    }
    *out = *local.cell;
    return true;
  }
  const int first_free = f.code->co_nlocalsplus - f.code->co_nfreevars;
  if (slot < first_free || !f.func) {
    Fail(BreakCategory::kUnsupportedBytecode, "reading a closure variable pijit does not track");
    return false;
  }
  const int idx = slot - first_free;
  PyObject* closure = PyFunction_GET_CLOSURE(f.func);
  PyObject* v = closure ? PyCell_GET(PyTuple_GET_ITEM(closure, idx)) : nullptr;
  if (!v) {
    Fail(BreakCategory::kPythonError, "free variable referenced before assignment");
    return false;
  }
  Py_INCREF(v);
  values_.Keep(v);
  const int32_t src = f.func_source < 0
                          ? gp().AddSource(Source::kClosure, -1, idx)
                          : gp().AddSource(Source::kFuncClosure, f.func_source, idx);
  return values_.FromSource(src, v, out);
}

namespace {
PyObject* TensorAttribute(const TensorMeta& meta, const char* n) {
  std::string_view name(n);
  if (name == "shape") {
    PyObject* v = PyTuple_New(static_cast<Py_ssize_t>(meta.shape.size()));
    for (size_t i = 0; i < meta.shape.size(); ++i)
      PyTuple_SET_ITEM(v, i, PyLong_FromLongLong(meta.shape[i]));
    return v;
  }
  if (name == "ndim") return PyLong_FromSize_t(meta.shape.size());
  if (name == "size") return PyLong_FromLongLong(NumElements(meta.shape));
  if (name == "itemsize") return PyLong_FromSize_t(ItemSize(meta.dtype));
  if (name == "nbytes") return PyLong_FromLongLong(NumElements(meta.shape) * static_cast<int64_t>(ItemSize(meta.dtype)));
  if (name == "dtype") {
    PyObject* probe = WrapTensor(Tensor::Empty({}, meta.dtype));
    PyObject* v = PyObject_GetAttrString(probe, "dtype");
    Py_DECREF(probe);
    return v;
  }
  return nullptr;
}
// Whether `name` on tensors of `type` is a Python function on Tensor itself (not one a
// subclass such as Parameter overrides: the guard reads Tensor's attribute).
bool TensorClassMethod(PyTypeObject* type, PyObject* name) {
  PyObject* fn = _PyType_Lookup(type, name);
  return fn && PyFunction_Check(fn) && fn == _PyType_Lookup(g_tensor_type, name);
}
}  // namespace

// An attribute of a tensor: a method of the op table or astype (pushed for CALL), or a
// metadata attribute known from the node's meta (shape, dtype, ndim, ...).
bool Interp::TensorAttr(Frame& f, const Value& owner, PyObject* name, bool method) {
  const char* n = PyUnicode_AsUTF8(name);
  PyOp op;
  // A subclass could override the method: only take it when it is Tensor's own.
  if (method && PyOpByName(n, &op) &&
      _PyType_Lookup(owner.type, name) == _PyType_Lookup(g_tensor_type, name)) {
    Value m;
    m.kind = Value::kTensorMethod;
    m.method = op;
    PushBoundMethod(f, m, owner);
    return true;
  }
  if (std::string_view(n) == "astype" &&
      _PyType_Lookup(owner.type, name) == _PyType_Lookup(g_tensor_type, name)) {
    Value m;  // Tensor.astype: a cast node (OpBridge::Cast)
    m.kind = Value::kBuiltinMethod;
    m.obj = name;
    if (method) {
      PushBoundMethod(f, m, owner);
    } else {
      m.cell = std::make_shared<Value>(owner);
      f.stack.push_back(m);
    }
    return true;
  }
  if (std::string_view(n) == "T" &&
      _PyType_Lookup(owner.type, name) == _PyType_Lookup(g_tensor_type, name)) {
    Value t;  // Tensor.T: the axes reversed, as transpose() with no axes
    if (!ops_.Call(PyOp::kTranspose, {owner}, {}, &t)) return false;
    PushLoaded(f, std::move(t), method);
    return true;
  }
  if (method && TensorClassMethod(owner.type, name)) {
    // A method written in Python on Tensor (x.roll(1), x.nonzero(): pijit's own, set when
    // it is imported): inlined like any call, with the tensor as self; the class attribute
    // is guarded, so replacing it recompiles.
    Value fn;
    if (!values_.FromSource(gp().AddSource(Source::kTensorClassAttr, -1, -1, name),
                    _PyType_Lookup(owner.type, name), &fn)) {
      return false;
    }
    UseConst(fn);
    PushBoundMethod(f, fn, owner);
    return true;
  }
  if (std::string_view(n) == "shape" || std::string_view(n) == "size") NoteShapeRead();
  PyObject* v = TensorAttribute(g().node(owner.node).meta, n);
  if (!v) {
    if (PyErr_Occurred()) PyErr_Clear();
    Fail(BreakCategory::kUnsupportedAttribute, absl::StrFormat("Tensor.%s is not captured yet", n),
         "use pijit.ops functions or the supported Tensor methods");
    return false;
  }
  PushLoaded(f, Value::Const(values_.Keep(v)), method);
  return true;
}

// A method of an input list (append, extend, insert: recorded and replayed after the graph)
// or of an input dict the trace mutates or models (handlers_dict.cc), pushed for CALL;
// *handled is false for any other attribute.
bool Interp::InputMutatorMethod(Frame& f, const Value& owner, PyObject* name, bool method,
                                bool* handled) {
  const char* n = PyUnicode_AsUTF8(name);
  *handled = true;
  if (PyList_CheckExact(owner.obj) && owner.source >= 0 &&
      (std::string_view(n) == "append" || std::string_view(n) == "extend" ||
       std::string_view(n) == "insert")) {
    // An input list's append, extend or insert: recorded and replayed after the graph
    // (handlers_effects.cc). The bound method carries its list in `cell` (a break rebuilds it
    // as the list's method).
    // Its identity, not its type: a type guard would also pin the length, which the appends
    // change on every call (a list made per call recompiles; a module-level log does not).
    gp().GuardValue(owner.source, owner.obj);
    Value m;
    m.kind = Value::kBuiltinMethod;
    m.obj = name;
    m.cell = std::make_shared<Value>(owner);
    PushLoaded(f, m, method);
    return true;
  }
  if (method && PyDict_CheckExact(owner.obj) && owner.source >= 0) {
    // An input dict the trace mutates (or is about to): its methods act on its model and
    // record their mutations (handlers_dict.cc).
    std::string_view m(n);
    const bool mutating =
        m == "pop" || m == "update" || m == "setdefault" || m == "popitem" || m == "clear";
    const bool reading = m == "items" || m == "keys" || m == "values" || m == "get";
    if (ShadowDict(owner) ? (mutating || reading)
                          : mutating && !effects_.Mutated(owner) && !effects_.DictViewed(owner.obj)) {
      Value bm;
      bm.kind = Value::kBuiltinMethod;
      bm.obj = name;
      bm.cell = std::make_shared<Value>(owner);
      PushLoaded(f, std::move(bm), /*method=*/true);
      return true;
    }
  }
  *handled = false;
  return false;
}

bool Interp::InputDictSnapshot(const Value& owner, Value* out) {
  if (owner.kind != Value::kConst || owner.source < 0 || !PyDict_CheckExact(owner.obj) ||
      PyDict_GET_SIZE(owner.obj) > 256) {
    Fail(BreakCategory::kUnsupportedAttribute, "a mapping unknown at capture time",
         "pass a dict of at most 256 str or int keys");
    return false;
  }
  gp().GuardType(owner.source, owner.obj);
  gp().GuardDictKeys(owner.source, owner.obj);
  Value d = Value::Dict();
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  while (PyDict_Next(owner.obj, &pos, &k, &v)) {
    if (!PyUnicode_CheckExact(k) && !PyLong_CheckExact(k)) {
      Fail(BreakCategory::kUnsupportedAttribute, "a dict input with keys that are not str or int");
      return false;
    }
    Value item;
    Py_INCREF(v);
    values_.Keep(v);
    if (!values_.FromSource(gp().AddSource(guards::Source::kDictItem, owner.source, -1, k), v, &item))
      return false;
    d.keys->push_back(k);
    d.items->push_back(std::move(item));
  }
  *out = std::move(d);
  return true;
}

// items/keys/values/get of an input dict (of at most 256 str or int keys): its keys and
// values are guarded and it acts as a dict built during capture; *handled is false for any
// other attribute.
bool Interp::InputDictReadMethod(Frame& f, const Value& owner, PyObject* name, bool method,
                                 bool* handled) {
  const char* n = PyUnicode_AsUTF8(name);
  *handled = true;
  if (method && PyDict_CheckExact(owner.obj) && owner.source >= 0 &&
      PyDict_GET_SIZE(owner.obj) <= 256) {
    std::string_view m(n);
    if (m == "items" || m == "keys" || m == "values" || m == "get") {
      // An input dict read through its methods: its keys (in their order: the views list
      // them so) and values are guarded; it then acts as a dict built during capture.
      Value d;
      if (!InputDictSnapshot(owner, &d)) return false;
      if (m != "get") effects_.ViewDict(owner.obj);  // views are live; get's result is not
      Value bm;
      bm.kind = Value::kBuiltinMethod;
      bm.obj = name;
      f.stack.push_back(bm);
      f.stack.push_back(std::move(d));
      return true;
    }
  }
  *handled = false;
  return false;
}

bool Interp::LoadAttr(Frame& f, const Value& owner, PyObject* name, bool method) {
  const char* n = PyUnicode_AsUTF8(name);
  if (owner.kind == Value::kTensor) return TensorAttr(f, owner, name, method);
  if (owner.kind == Value::kObject) return ObjectAttr(f, owner, name, method);
  if (Value field; owner.kind == Value::kSeq && NamedTupleField(owner, name, &field)) {
    PushLoaded(f, std::move(field), method);
    return true;
  }
  if (owner.kind == Value::kDict || (owner.kind == Value::kSeq && owner.is_list && owner.source < 0)) {
    // A method of a container made during capture: (method, self) for CALL.
    Value m;
    m.kind = Value::kBuiltinMethod;
    m.obj = name;
    if (method) {
      PushBoundMethod(f, m, owner);
      return true;
    }
    Fail(BreakCategory::kUnsupportedAttribute, absl::StrFormat("bound method %s used as a value", n));
    return false;
  }
  if (owner.kind != Value::kConst) {
    Fail(BreakCategory::kUnsupportedAttribute, absl::StrFormat("attribute '%s' of a value that is not known "
                                                  "at capture time", n));
    return false;
  }
  if (PySet_CheckExact(owner.obj) && owner.source < 0) {
    // Its methods may mutate it: the set is rebuilt in Python and the call runs there.
    Fail(BreakCategory::kUnsupportedAttribute, absl::StrFormat("method '%s' of a set built during capture", n));
    return false;
  }
  if (const Value* p = effects_.PendingAttr(owner.obj, name)) {  // stored earlier in the trace
    UseConst(owner);  // its identity: read through an alias, the object must stay the one
    if (p->kind == Value::kUndef) {
      Fail(BreakCategory::kSideEffect, absl::StrFormat("a read of the attribute '%s' deleted earlier", n),
           "the graph breaks here; Python reads the attribute (of the class, or raises)");
      return false;
    }
    PushLoaded(f, *p, method);
    return true;
  }
  if (bool handled = false, ok = InputMutatorMethod(f, owner, name, method, &handled); handled)
    return ok;
  if (!FailIfMutated(owner)) return false;
  if (bool handled = false, ok = InputDictReadMethod(f, owner, name, method, &handled); handled)
    return ok;
  UseConst(owner);
  PyObject* obj = owner.obj;
  if (method && IsFoldableStrMethod(owner, name)) {  // "SAME".lower(): folded when called
    Value m;
    m.kind = Value::kBuiltinMethod;
    m.obj = name;
    PushBoundMethod(f, m, owner);
    return true;
  }
  // A class's __name__/__qualname__/__module__ through type's own getters (no user code runs
  // when the metaclass reads them as type does). The class's identity is guarded; renaming a
  // class later is not.
  if (PyType_Check(obj) && !method && Py_TYPE(obj)->tp_getattro == PyType_Type.tp_getattro) {
    const std::string_view attr(n);
    if ((attr == "__name__" || attr == "__qualname__" || attr == "__module__") &&
        _PyType_Lookup(Py_TYPE(obj), name) == _PyType_Lookup(&PyType_Type, name)) {
      PyObject* got = PyObject_GetAttr(obj, name);
      if (!got) {
        PyErr_Clear();
      } else if (PyUnicode_CheckExact(got)) {
        f.stack.push_back(Value::Const(values_.Keep(got)));
        return true;
      } else {
        Py_DECREF(got);
      }
    }
  }
  // A dtype's attributes (name, itemsize, ...): computed by its own C++ code from the
  // immutable dtype, so read now.
  if (IsDTypeObject(obj) && !method) {
    if (PyObject* got = PyObject_GetAttr(obj, name); got && guards::IsPlainValue(got)) {
      f.stack.push_back(Value::Const(values_.Keep(got)));
      return true;
    } else {
      Py_XDECREF(got);
      PyErr_Clear();
    }
  }
  PyObject* v = guards::SafeGetAttr(obj, name);
  if (v) {
    Py_INCREF(v);
    values_.Keep(v);
    Value result;
    if (owner.source >= 0) {
      if (!values_.FromSource(gp().AddSource(Source::kAttr, owner.source, -1, name), v, &result)) return false;
    } else {
      result = Value::Const(v);
    }
    PushLoaded(f, std::move(result), method);
    return true;
  }
  if (PyErr_Occurred()) PyErr_Clear();
  // A method defined in Python on the object's class: push (function, self) for inlining.
  PyObject* descr = _PyType_Lookup(Py_TYPE(obj), name);
  // A pijit.jit function in a class body binds like a function (its descriptor makes a method).
  const bool function = descr && (PyFunction_Check(descr) || (guards::g_jit_wrapped_function &&
                                                              guards::g_jit_wrapped_function(descr)));
  if (function && Py_TYPE(obj)->tp_getattro == PyObject_GenericGetAttr &&
      owner.source >= 0) {
    PyObject** dictptr = _PyObject_GetDictPtr(obj);
    bool shadowed = dictptr && *dictptr && PyDict_GetItemWithError(*dictptr, name);
    if (PyErr_Occurred()) PyErr_Clear();
    if (!shadowed) {
      Value fn;
      if (!values_.FromSource(gp().AddSource(Source::kTypeAttr, owner.source, -1, name), descr, &fn))
        return false;
      UseConst(fn);
      if (method) {
        PushBoundMethod(f, fn, owner);
      } else {
        // A bound method value: represent it as a sequence (function, self) for CALL.
        Fail(BreakCategory::kUnsupportedAttribute, absl::StrFormat("bound method %s used as a value", n),
             "call the method directly");
        return false;
      }
      return true;
    }
  }
  bool handled = false;
  if (LoadDescriptorAttr(f, owner, name, method, &handled)) return true;
  if (handled) return false;
  if (Value fallback; FallbackAttr(owner, name, &fallback)) {
    PushLoaded(f, std::move(fallback), method);
    return true;
  }
  Fail(BreakCategory::kUnsupportedAttribute,
       absl::StrFormat("attribute '%s' of %s is computed by code (a property or __getattr__) "
                       "or is missing", n, Py_TYPE(obj)->tp_name),
       "read plain attributes, or move the computation outside the jitted function");
  return false;
}

}  // namespace pijit::bytecode
