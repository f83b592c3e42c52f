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

// NumPy scalar arguments become 0-d constants of their dtype in the graph; where the op takes
// a Python number (an axis, a size), (*numbers)[i] is the number the scalar holds
// (ArgView::number). (A NumPy integer index is a basic index, as in NumPy: __getitem__'s
// arguments are left alone.)
bool Interp::NumpyScalarsAsConstants(ValueList* args, absl::InlinedVector<PyObject*, 4>* numbers) {
  for (size_t i = 0; i < args->size(); ++i) {
    Value& a = (*args)[i];
    if (a.kind != Value::kConst || !IsNumpyScalar(a.obj)) continue;
    auto t = NumpyScalarTensor(a.obj);
    if (!t.ok()) {
      Fail(BreakCategory::kInvalidInput, std::string(t.status().message()));
      return false;
    }
    if (PyObject* item = NumpyNumberItem(a.obj)) (*numbers)[i] = values_.Keep(item);
    UseConst(a);
    Value c;
    c.kind = Value::kTensor;
    c.node = g().AddConstant(std::move(*t));
    c.type = g_tensor_type;
    a = c;
  }
  return true;
}

bool Interp::CallOp(PyOp op, const ValueList& in_args, const std::vector<std::string>& kwnames,
                    Value* out) {
  ValueList args = in_args;
  absl::InlinedVector<PyObject*, 4> numbers(args.size(), nullptr);
  if (op != PyOp::kGetItem && !NumpyScalarsAsConstants(&args, &numbers)) return false;
  // Views of the arguments for ParseCall; sequences holding tensors (concat, stack) get
  // item views.
  std::vector<ArgView> views(args.size());
  std::vector<std::vector<ArgView>> seqs;
  seqs.reserve(args.size());
  // A dynamic number in arithmetic is not guarded by value: unless it stays a constant
  // below, it becomes a graph parameter.
  const bool arithmetic =
      op == PyOp::kAdd || op == PyOp::kSub || op == PyOp::kMul || op == PyOp::kDiv;
  absl::InlinedVector<bool, 3> dynamic_number(args.size(), false);
  for (size_t i = 0; i < args.size(); ++i) {
    const Value& a = args[i];
    dynamic_number[i] = arithmetic && (values_.IsDynamicNumber(a) || (a.kind == Value::kConst && a.number));
    if (!dynamic_number[i]) UseConst(a);
    if (a.kind == Value::kTensor) {
      views[i].is_tensor = true;
      views[i].number = numbers[i];
      continue;
    }
    bool has_tensor = false;
    if (a.kind == Value::kSeq)
      for (const Value& item : *a.items) has_tensor |= item.kind == Value::kTensor;
    if (has_tensor) {
      std::vector<ArgView> items(a.items->size());
      for (size_t j = 0; j < a.items->size(); ++j) {
        const Value& item = (*a.items)[j];
        items[j].is_tensor = item.kind == Value::kTensor;
        items[j].object = items[j].is_tensor ? nullptr : AsPyObject(item);
        if (!items[j].is_tensor && !items[j].object) {
          Fail(BreakCategory::kUnsupportedCall, absl::StrFormat("item %d of an argument of %s is unknown", j,
                                                   PyOpName(op)));
          return false;
        }
      }
      seqs.push_back(std::move(items));
      views[i].is_seq = true;
      views[i].is_list = a.is_list;
      views[i].items = seqs.back();
      continue;
    }
    views[i].object = AsPyObject(a);
    if (!views[i].object) {
      Fail(BreakCategory::kUnsupportedCall,
           absl::StrFormat("argument of %s is not a tensor or a known Python value", PyOpName(op)));
      return false;
    }
  }
  auto call = ParseCall(op, views, kwnames);
  if (!call.ok()) {
    Fail(BreakCategory::kInvalidInput, std::string(call.status().message()),
         "the call runs eagerly and raises this error there");
    return false;
  }
  auto tensor_of = [&](const Operand& o) {
    return o.item >= 0 ? (*args[o.arg].items)[o.item].node : args[o.arg].node;
  };
  absl::InlinedVector<graph::NodeId, 3> inputs;
  for (const Operand& o : call->operands) {
    if (o.array) {
      // An index given as a list or a bool is a constant of the graph; a NumPy array may
      // change between calls without a guard seeing it, so it is indexed in Python.
      if (!PyList_Check(o.array) && !PyBool_Check(o.array)) {
        Fail(BreakCategory::kUnsupportedOperator, absl::StrFormat("indexing with a %s", Py_TYPE(o.array)->tp_name),
             "index with a pijit Tensor or a list to capture the indexing in the graph");
        return false;
      }
      auto t = IndexArrayTensor(o.array);
      if (!t.ok()) {
        Fail(BreakCategory::kInvalidInput, std::string(t.status().message()),
             "the call runs eagerly and raises this error there");
        return false;
      }
      inputs.push_back(g().AddConstant(std::move(*t)));
      continue;
    }
    if (!o.scalar) {
      inputs.push_back(tensor_of(o));
      continue;
    }
    // A Python scalar follows the dtype of the operand it is combined with.
    const graph::NodeId like = tensor_of(call->operands[o.like]);
    const DType like_dtype = g().node(like).meta.dtype;
    if (const int i = o.scalar_arg; i >= 0 && dynamic_number[i]) {
      // Next to a floating tensor an int or float converts the same way whatever its value;
      // elsewhere (integer tensors may overflow) it stays a guarded constant.
      if (like_dtype == DType::kFloat32 || like_dtype == DType::kFloat64) {
        if (!args[i].number) {
          inputs.push_back(values_.NumberParam(args[i].source, args[i].obj, like_dtype));
          continue;
        }
        // A computed number converts as eager converts the Python result: one rounding.
        graph::NodeId n = args[i].number->node;
        if (g().node(n).meta.dtype != like_dtype) {
          auto c = g().AddOp(graph::Op::kCast, {n}, CastTo(like_dtype));
          if (!c.ok()) {
            Fail(BreakCategory::kInternal, std::string(c.status().message()));
            return false;
          }
          n = *c;
        }
        inputs.push_back(n);
        continue;
      }
      dynamic_number[i] = false;
      UseConst(args[i]);
    }
    auto sc = ScalarOperand(PyOpName(op), o.scalar, like_dtype);
    if (!sc.ok()) {
      Fail(BreakCategory::kInvalidInput, std::string(sc.status().message()));
      return false;
    }
    inputs.push_back(g().AddConstant(std::move(*sc)));
  }
  for (size_t i = 0; i < args.size(); ++i) {
    bool used = false;
    for (const Operand& o : call->operands) used |= o.scalar_arg == static_cast<int>(i);
    if (!used && dynamic_number[i]) UseConst(args[i]);
  }
  if (call->gop == graph::Op::kAdvIndex) {
    for (size_t i = 1; i < inputs.size(); ++i) {
      if (g().node(inputs[i]).meta.dtype != DType::kBool) continue;
      Fail(BreakCategory::kDataDependent, "indexing with a boolean mask: the result's shape depends on the mask's values",
           "the indexing runs in Python; ops.where keeps a masked computation in the graph");
      return false;
    }
  }
  auto node = g().AddOp(call->gop, inputs, call->attrs);
  if (!node.ok()) {
    Fail(BreakCategory::kInvalidInput, std::string(node.status().message()),
         "the call runs eagerly and raises this error there");
    return false;
  }
  *out = Value::Tensor(*node, g_tensor_type);
  return true;
}

bool Interp::CallTensorCast(const ValueList& args, const std::vector<std::string>& names,
                            Value* out) {
  // Tensor.astype(dtype): the dtype must be known at capture time (it is guarded).
  if (args.size() != 2 || (!names.empty() && names[0] != "dtype") || args[1].kind != Value::kConst) {
    Fail(BreakCategory::kUnsupportedCall, "Tensor.astype with a dtype unknown at capture time");
    return false;
  }
  auto dtype = DTypeFromObject("astype", args[1].obj);
  if (!dtype.ok()) {
    Fail(BreakCategory::kInvalidInput, std::string(dtype.status().message()));
    return false;
  }
  UseConst(args[1]);
  auto node = g().AddOp(graph::Op::kCast, {args[0].node}, CastTo(*dtype));
  if (!node.ok()) {
    Fail(BreakCategory::kInvalidInput, std::string(node.status().message()));
    return false;
  }
  *out = Value::Tensor(*node, g_tensor_type);
  return true;
}

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
  return CallOp(pop, args, names, out);
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
  if (callable.kind == Value::kTensorMethod) return CallOp(callable.method, args, names, out);
  if (callable.kind == Value::kPartial) return CallMadePartial(f, callable, std::move(args), names, out);
  if (callable.kind == Value::kObject) return CallObject(f, callable, std::move(args), names, out);
  if (callable.kind == Value::kBuiltinMethod) {
    if (callable.cell) args.insert(args.begin(), *callable.cell);  // bound by LOAD_ATTR
    if (!args.empty() && args[0].kind == Value::kTensor) return CallTensorCast(args, names, out);
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
  if (PyOpOfBuiltin(fn, &op)) return CallOp(op, args, names, out);
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
