// CALL: pijit ops and primitives become graph nodes; user functions, methods and Cells are
// inlined; builtins whose result is known at capture time are folded.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bytecode/interp.h"
#include "guards/guards.h"
#include "interop/convert.h"
#include "interop/python_objects.h"

namespace pijit::bytecode {

using guards::Source;

namespace {

// Whether `fn` (a Python function) is decorated with ops.constexpr, which marks it with
// __pijit_constexpr__ in its __dict__.
bool IsConstexprFunction(PyObject* fn) {
  PyObject* d = reinterpret_cast<PyFunctionObject*>(fn)->func_dict;
  if (d == nullptr) return false;
  static PyObject* marker = PyUnicode_InternFromString("__pijit_constexpr__");
  PyObject* v = PyDict_GetItemWithError(d, marker);
  if (!v && PyErr_Occurred()) PyErr_Clear();
  return v == Py_True;
}

}  // namespace

bool Interp::InlineMethod(Frame& f, const Value& self, PyObject* method, PyObject* name,
                          ValueList args, const std::vector<std::string>& names, Value* out) {
  Value mv;  // type(self).name, guarded by identity through the callable's class
  if (!values_.FromSource(MethodSource(self, name), method, &mv)) return false;
  UseConst(mv);
  args.insert(args.begin(), self);
  return Inline(f, reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(method)), method,
                mv.source, nullptr, std::move(args), names, out);
}

bool Interp::CallPrimitive(PyObject* fn, ValueList args, std::vector<std::string> names,
                           Value* out, bool* handled) {
  // A primitive instance (ops.Add()): its class names the op it performs.
  *handled = false;
  PyObject* prim = PyObject_GetAttrString(reinterpret_cast<PyObject*>(Py_TYPE(fn)), "_pijit_op");
  if (!prim) {
    PyErr_Clear();
    return false;
  }
  PyOp pop;
  const bool known = PyOpOfBuiltin(prim, &pop);
  Py_DECREF(prim);
  PyObject* attrs = known ? PyObject_CallMethod(fn, "_pijit_kwargs", nullptr) : nullptr;
  if (!attrs || !PyDict_Check(attrs)) {
    Py_XDECREF(attrs);
    PyErr_Clear();
    return false;
  }
  *handled = true;
  // Primitive attributes (keep_dims, ...) are keyword arguments of the op.
  values_.Keep(attrs);
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  while (PyDict_Next(attrs, &pos, &k, &v)) {
    names.emplace_back(PyUnicode_AsUTF8(k));
    args.push_back(Value::Const(v));
  }
  return ops_.Call(pop, args, names, out);
}

bool Interp::CallPartial(Frame& f, const Value& callable, ValueList args,
                         const std::vector<std::string>& names, Value* out) {
  // The partial is guarded by identity; its function, arguments and keywords (a dict that
  // may change) are read through sources of their own.
  PyObject* p = callable.obj;
  auto part = [&](int i) { return gp().AddSource(Source::kPartialPart, callable.source, i); };
  Value func, stored;
  if (!values_.FromSource(part(0), guards::PartialPart(p, 0), &func) ||
      !values_.FromSource(part(1), guards::PartialPart(p, 1), &stored)) {
    return false;
  }
  ValueList merged;
  if (stored.kind == Value::kSeq) {
    merged = *stored.items;
  } else {  // a tuple without tensors: constants of the guarded partial
    UseConst(stored);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(stored.obj); ++i)
      merged.push_back(Value::Const(PyTuple_GET_ITEM(stored.obj, i)));
  }
  const size_t npos = args.size() - names.size();
  merged.insert(merged.end(), args.begin(), args.begin() + static_cast<std::ptrdiff_t>(npos));
  std::vector<std::string> merged_names;
  PyObject* keywords = guards::PartialPart(p, 2);
  if (keywords && PyDict_Check(keywords) && PyDict_GET_SIZE(keywords) > 0) {
    Value kw;
    if (!InputDictSnapshot(Value::Const(keywords, part(2)), &kw)) return false;
    for (size_t i = 0; i < kw.keys->size(); ++i) {
      PyObject* k = (*kw.keys)[i];
      if (!PyUnicode_Check(k)) {
        Fail(BreakCategory::kPythonError, "keywords must be strings");
        return false;
      }
      const std::string name = PyUnicode_AsUTF8(k);
      if (std::find(names.begin(), names.end(), name) != names.end()) continue;  // overridden
      merged.push_back((*kw.items)[i]);
      merged_names.push_back(name);
    }
  }
  for (size_t i = 0; i < names.size(); ++i) {
    merged.push_back(args[npos + i]);
    merged_names.push_back(names[i]);
  }
  return CallWithNames(f, func, std::move(merged), merged_names, out);
}

bool Interp::CallWithNames(Frame& f, const Value& func, ValueList args,
                           const std::vector<std::string>& merged_names, Value* out) {
  if (!merged_names.empty()) {
    PyObject* t = PyTuple_New(static_cast<Py_ssize_t>(merged_names.size()));
    for (size_t i = 0; i < merged_names.size(); ++i)
      PyTuple_SET_ITEM(t, i, PyUnicode_FromString(merged_names[i].c_str()));
    f.kwnames = values_.Keep(t);
  }
  return Call(f, func, std::move(args), out);
}

bool Interp::MakePartial(const ValueList& args, const std::vector<std::string>& names,
                         Value* out) {
  const size_t npos = args.size() - names.size();
  if (npos == 0) {
    Fail(BreakCategory::kPythonError, "functools.partial() without a function");
    return false;
  }
  out->kind = Value::kPartial;
  out->cell = std::make_shared<Value>(args[0]);
  out->items = std::make_shared<ValueList>(args.begin() + 1, args.end());
  out->keys = std::make_shared<std::vector<PyObject*>>();
  for (const std::string& n : names) out->keys->push_back(values_.Keep(PyUnicode_FromString(n.c_str())));
  return true;
}

bool Interp::CallMadePartial(Frame& f, const Value& partial, ValueList args,
                             const std::vector<std::string>& names, Value* out) {
  // As functools.partial calls: its positional arguments, then the call's; its keywords that
  // the call does not give again, then the call's keywords.
  const size_t stored_kw = partial.keys->size();
  const size_t stored_pos = partial.items->size() - stored_kw;
  const size_t npos = args.size() - names.size();
  ValueList merged(partial.items->begin(), partial.items->begin() + static_cast<std::ptrdiff_t>(stored_pos));
  merged.insert(merged.end(), args.begin(), args.begin() + static_cast<std::ptrdiff_t>(npos));
  std::vector<std::string> merged_names;
  for (size_t i = 0; i < stored_kw; ++i) {
    const std::string name = PyUnicode_AsUTF8((*partial.keys)[i]);
    if (std::find(names.begin(), names.end(), name) != names.end()) continue;  // overridden
    merged.push_back((*partial.items)[stored_pos + i]);
    merged_names.push_back(name);
  }
  for (size_t i = 0; i < names.size(); ++i) {
    merged.push_back(args[npos + i]);
    merged_names.push_back(names[i]);
  }
  return CallWithNames(f, *partial.cell, std::move(merged), merged_names, out);
}

bool Interp::Call(Frame& f, const Value& callable, ValueList args, Value* out) {
  std::vector<std::string> names;
  if (f.kwnames) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(f.kwnames); ++i)
      names.emplace_back(PyUnicode_AsUTF8(PyTuple_GET_ITEM(f.kwnames, i)));
    f.kwnames = nullptr;
  }
  if (callable.kind == Value::kTensorMethod) return ops_.Call(callable.method, args, names, out);
  if (callable.kind == Value::kPartial) return CallMadePartial(f, callable, std::move(args), names, out);
  if (callable.kind == Value::kObject) return CallObject(f, callable, std::move(args), names, out);
  if (callable.kind == Value::kBuiltinMethod) {
    if (callable.cell) args.insert(args.begin(), *callable.cell);  // bound by LOAD_ATTR
    if (!args.empty() && args[0].kind == Value::kTensor) return ops_.Cast(args, names, out);
    return CallContainerMethod(callable, std::move(args), names, out);
  }
  if (callable.kind == Value::kFunction &&
      (reinterpret_cast<PyCodeObject*>(callable.obj)->co_flags & CO_GENERATOR)) {
    // A generator expression (or a generator defined in the trace): nothing runs until it is
    // iterated, and then only under a consumer that takes every item.
    out->kind = Value::kGenerator;
    out->gen = std::make_shared<GenState>();
    out->gen->fn = callable;
    out->gen->args = std::move(args);
    out->gen->kwnames = std::move(names);
    return true;
  }
  if (callable.kind == Value::kFunction) {
    return Inline(f, reinterpret_cast<PyCodeObject*>(callable.obj), nullptr, -1, &callable,
                  std::move(args), names, out);
  }
  if (callable.kind != Value::kConst) {
    Fail(BreakCategory::kUnsupportedCall, "calling a value that is not known at capture time");
    return false;
  }
  PyObject* fn = callable.obj;
  // Bound methods (list.append of some list, obj.method) are made afresh on each access:
  // guarding their identity would never match again. None of them is captured (ops and
  // primitives are not bound methods), so their type is all the trace depends on.
  const bool bound = PyMethod_Check(fn) ||
                     (PyCFunction_Check(fn) && PyCFunction_GET_SELF(fn) &&
                      !PyModule_Check(PyCFunction_GET_SELF(fn)));
  if (bound && callable.source >= 0) {
    gp().GuardType(callable.source, fn);
  } else {
    UseConst(callable);
  }
  PyOp op;
  if (PyOpOfBuiltin(fn, &op)) return ops_.Call(op, args, names, out);
  if (callable.source >= 0 && guards::PartialPart(fn, 0))
    return CallPartial(f, callable, std::move(args), names, out);
  if (fn == g_vjp_fn && g_vjp_fn) {
    if (!names.empty()) {
      Fail(BreakCategory::kUnsupportedCall, "pijit._autodiff.vjp called with keyword arguments");
      return false;
    }
    return CallVjp(f, std::move(args), out);
  }
  if (PyObject* inner = guards::g_jit_wrapped_function ? guards::g_jit_wrapped_function(fn) : nullptr) {
    // Nested jit: a pijit.jit function (of any mode) called from captured code is inlined
    // into this graph; the callable is guarded by identity, so its function is fixed.
    if (callable.source < 0) {
      Fail(BreakCategory::kUnsupportedCall, "calling a jitted function whose origin cannot be guarded");
      return false;
    }
    return Inline(f, reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(inner)), inner,
                  gp().AddSource(Source::kJitWrapped, callable.source, -1), nullptr,
                  std::move(args), names, out);
  }
  if (IsNumpyConstructor(fn)) {  // some are Python functions: called, not inlined
    bool handled = false;
    if (FallbackCall(fn, args, names, out, &handled)) return true;
    if (handled) return false;
  }
  if (PyFunction_Check(fn) && IsConstexprFunction(fn)) {
    // ops.constexpr: called now with the constants it is given; its result is a constant.
    bool handled = false;
    if (FallbackCall(fn, args, names, out, &handled, /*constexpr_call=*/true)) return true;
    if (!handled) {
      Fail(BreakCategory::kUnsupportedCall,
           absl::StrCat("the constexpr function ", ReprOf(fn), " is called with a value unknown "
                        "at capture time (a tensor, or a value that may change between calls)"),
           "pass constants (shapes, numbers, strings) to functions decorated with ops.constexpr");
    }
    return false;
  }
  if (PyFunction_Check(fn)) {
    if (callable.source < 0) {
      Fail(BreakCategory::kUnsupportedCall, "calling a function whose origin cannot be guarded");
      return false;
    }
    const int flags = reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(fn))->co_flags;
    if ((flags & CO_GENERATOR) && !(flags & (CO_COROUTINE | CO_ASYNC_GENERATOR))) {
      // A generator function: as a generator expression, nothing runs until a consumer
      // takes its items (RunGenerator).
      out->kind = Value::kGenerator;
      out->gen = std::make_shared<GenState>();
      out->gen->func = fn;
      out->gen->func_source = callable.source;
      out->gen->args = std::move(args);
      out->gen->kwnames = names;
      return true;
    }
    return Inline(f, reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(fn)), fn, callable.source,
                  nullptr, std::move(args), names, out);
  }
  if (fn == reinterpret_cast<PyObject*>(guards::PartialType()) && fn) {
    return MakePartial(args, names, out);
  }
  if (PyType_Check(fn)) {  // a namedtuple or a plain object made here: values of the trace
    bool handled = false;
    if (MakeNamedTuple(fn, args, names, out, &handled)) return true;
    if (handled) return false;
    if (MakeLibraryObject(callable, args, names, out, &handled)) return true;
    if (handled) return false;
    if (MakeObject(f, callable, args, names, out, &handled)) return true;
    if (handled) return false;
    if (MakeException(callable, args, names, out, &handled)) return true;
    if (handled) return false;
  }
  bool is_builtin = false;
  if (FoldBuiltinCall(*this, f, fn, args, names, out, &is_builtin)) return true;
  if (is_builtin) return false;
  return CallByClass(f, callable, std::move(args), names, out);
}

bool Interp::CallByClass(Frame& f, const Value& callable, ValueList args,
                         const std::vector<std::string>& names, Value* out) {
  PyObject* fn = callable.obj;
  // A Cell: calling it runs construct (in either mode), so inline construct.
  PyObject* call_name = PyUnicode_InternFromString("__call__");
  PyObject* call_attr = _PyType_Lookup(Py_TYPE(fn), call_name);
  Py_DECREF(call_name);
  if (g_cell_call && call_attr == g_cell_call && grad_depth_ > 0) {
    // A Cell with its own gradient (bprop): differentiated by it.
    PyObject* bname = values_.Keep(PyUnicode_InternFromString("bprop"));
    if (_PyType_Lookup(Py_TYPE(fn), bname)) {
      if (!names.empty() || callable.source < 0) {
        Fail(BreakCategory::kUnsupportedCall,
             absl::StrCat(Py_TYPE(fn)->tp_name, " defines bprop and is called with keywords"),
             "Cells with a custom bprop are then differentiated on the eager tape");
        return false;
      }
      return CallCellWithBprop(f, callable, args, out);
    }
  }
  if (g_cell_call && call_attr == g_cell_call && HasMethodSource(callable)) {
    PyObject* cname = values_.Keep(PyUnicode_InternFromString("construct"));
    PyObject* construct = _PyType_Lookup(Py_TYPE(fn), cname);
    if (construct && PyFunction_Check(construct))
      return InlineMethod(f, callable, construct, cname, std::move(args), names, out);
  }
  if (bool handled = false, ok = CallPrimitive(fn, args, names, out, &handled); handled) return ok;
  // An instance of a class whose __call__ is a Python function (GradOperation(...), user
  // callables): inline type(obj).__call__(obj, ...).
  if (call_attr && PyFunction_Check(call_attr) && !PyType_Check(fn) &&
      HasMethodSource(callable)) {
    PyObject* cname = values_.Keep(PyUnicode_InternFromString("__call__"));
    return InlineMethod(f, callable, call_attr, cname, std::move(args), names, out);
  }
  if (fn == g_graph_break_fn && fn != nullptr) {
    Fail(BreakCategory::kUnsupportedCall, "pijit.graph_break() breaks the graph here",
         "remove the call to capture the code around it in one graph");
    return false;
  }
  bool handled = false;
  if (FallbackCall(fn, args, names, out, &handled)) return true;
  if (handled) return false;
  Fail(BreakCategory::kUnsupportedCall, absl::StrCat("call to ", ReprOf(fn), " cannot be captured"),
       "pijit ops, primitives, Cells and Python functions are captured; other calls run "
       "eagerly");
  return false;
}

}  // namespace pijit::bytecode
