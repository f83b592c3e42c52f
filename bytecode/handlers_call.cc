// CALL: pijit ops and primitives become graph nodes; user functions, methods and Cells are
// inlined; builtins whose result is known at capture time are folded.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bytecode/interp.h"
#include "guards/guards.h"
#include "interop/convert.h"
#include "interop/python_objects.h"

namespace pijit::bytecode {

using guards::Source;

bool Interp::CallOp(PyOp op, const ValueList& in_args, const std::vector<std::string>& kwnames,
                    Value* out) {
  // NumPy scalars are 0-d tensors of their dtype: constants in the graph.
  ValueList args = in_args;
  // Where the op takes a Python number (an axis, a size), a NumPy scalar is the number it
  // holds (ArgView::number).
  absl::InlinedVector<PyObject*, 4> numbers(args.size(), nullptr);
  for (size_t i = 0; i < args.size(); ++i) {
    Value& a = args[i];
    // A NumPy integer index is a basic index, as in NumPy.
    if (op == PyOp::kGetItem) break;
    if (a.kind != Value::kConst || !IsNumpyScalar(a.obj)) continue;
    auto t = NumpyScalarTensor(a.obj);
    if (!t.ok()) {
      Fail(BreakCategory::kInvalidInput, std::string(t.status().message()));
      return false;
    }
    if (PyObject* item = NumpyNumberItem(a.obj)) numbers[i] = Keep(item);
    UseConst(a);
    Value c;
    c.kind = Value::kTensor;
    c.node = g().AddConstant(std::move(*t));
    c.type = g_tensor_type;
    a = c;
  }
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
    dynamic_number[i] = arithmetic && (IsDynamicNumber(a) || (a.kind == Value::kConst && a.number));
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
          inputs.push_back(NumberParam(args[i].source, args[i].obj, like_dtype));
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

namespace {

// Builtins whose result capture can compute from known arguments.
enum class Builtin { kNone, kLen, kIsinstance, kRange, kZip, kEnumerate, kMin, kMax, kAbs, kInt,
                     kFloat, kBool, kTuple, kList, kGetattr, kHasattr, kStr, kSorted, kSum, kAll,
                     kAny, kCallable, kSet, kFrozenset, kSlice, kRound, kPow, kDivmod, kDict,
                     kIter, kNext };

Builtin BuiltinOf(PyObject* fn) {
  if (!PyCFunction_Check(fn) && !PyType_Check(fn)) return Builtin::kNone;
  if (PyType_Check(fn)) {
    if (fn == reinterpret_cast<PyObject*>(&PyRange_Type)) return Builtin::kRange;
    if (fn == reinterpret_cast<PyObject*>(&PyZip_Type)) return Builtin::kZip;
    if (fn == reinterpret_cast<PyObject*>(&PyEnum_Type)) return Builtin::kEnumerate;
    if (fn == reinterpret_cast<PyObject*>(&PyLong_Type)) return Builtin::kInt;
    if (fn == reinterpret_cast<PyObject*>(&PyFloat_Type)) return Builtin::kFloat;
    if (fn == reinterpret_cast<PyObject*>(&PyBool_Type)) return Builtin::kBool;
    if (fn == reinterpret_cast<PyObject*>(&PyTuple_Type)) return Builtin::kTuple;
    if (fn == reinterpret_cast<PyObject*>(&PyList_Type)) return Builtin::kList;
    if (fn == reinterpret_cast<PyObject*>(&PyUnicode_Type)) return Builtin::kStr;
    if (fn == reinterpret_cast<PyObject*>(&PySet_Type)) return Builtin::kSet;
    if (fn == reinterpret_cast<PyObject*>(&PyFrozenSet_Type)) return Builtin::kFrozenset;
    if (fn == reinterpret_cast<PyObject*>(&PySlice_Type)) return Builtin::kSlice;
    if (fn == reinterpret_cast<PyObject*>(&PyDict_Type)) return Builtin::kDict;
    return Builtin::kNone;
  }
  PyObject* self = PyCFunction_GET_SELF(fn);
  if (!self || !PyModule_Check(self) || std::string_view(PyModule_GetName(self)) != "builtins")
    return Builtin::kNone;
  std::string_view name = reinterpret_cast<PyCFunctionObject*>(fn)->m_ml->ml_name;
  if (name == "len") return Builtin::kLen;
  if (name == "isinstance") return Builtin::kIsinstance;
  if (name == "min") return Builtin::kMin;
  if (name == "max") return Builtin::kMax;
  if (name == "abs") return Builtin::kAbs;
  if (name == "getattr") return Builtin::kGetattr;
  if (name == "hasattr") return Builtin::kHasattr;
  if (name == "sorted") return Builtin::kSorted;
  if (name == "sum") return Builtin::kSum;
  if (name == "all") return Builtin::kAll;
  if (name == "any") return Builtin::kAny;
  if (name == "callable") return Builtin::kCallable;
  if (name == "round") return Builtin::kRound;
  if (name == "pow") return Builtin::kPow;
  if (name == "divmod") return Builtin::kDivmod;
  if (name == "iter") return Builtin::kIter;
  if (name == "next") return Builtin::kNext;
  return Builtin::kNone;
}

}  // namespace

static bool FoldBuiltin(Interp& in, Frame& f, Builtin b, const ValueList& in_args,
                        const std::vector<std::string>& kwnames, Value* out) {
  if (b == Builtin::kDict) return in.MakeDictCall(in_args, kwnames, out);
  if (!kwnames.empty()) {
    in.Fail(BreakCategory::kUnsupportedCall, "keyword arguments to a builtin");
    return false;
  }
  ValueList args = in_args;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].kind != Value::kGenerator) continue;
    // Consumers that take every item run the generator now. all() and any() stop at the
    // first decisive item: only a generator with no tensor work may run ahead of them.
    const bool whole = b == Builtin::kTuple || b == Builtin::kList || b == Builtin::kSorted ||
                       b == Builtin::kSum || b == Builtin::kMin || b == Builtin::kMax ||
                       b == Builtin::kAll || b == Builtin::kAny || b == Builtin::kSet ||
                       b == Builtin::kFrozenset;
    if (!whole || i > 0 || (b != Builtin::kSum && args.size() != 1)) {
      in.Fail(BreakCategory::kUnsupportedCall, "a generator passed to a builtin that may not consume it whole");
      return false;
    }
    Value it;
    if (!in.RunGenerator(args[i], b == Builtin::kAll || b == Builtin::kAny, &it)) return false;
    args[i] = Value::Seq(std::move(*it.items), false);
  }
  auto result = [&](PyObject* v) {
    if (!v) {
      PyErr_Clear();
      in.Fail(BreakCategory::kPythonError, "the builtin raises on these arguments",
              "the function runs eagerly and raises the error there");
      return false;
    }
    *out = Value::Const(in.Keep(v));
    return true;
  };
  auto all_known = [&](size_t from) {
    for (size_t i = from; i < args.size(); ++i)
      if (!in.AsPyObject(args[i])) return false;
    return true;
  };
  switch (b) {
    case Builtin::kLen: {
      if (args.size() != 1) break;
      const Value& v = args[0];
      Py_ssize_t n;
      if (const Value* model = in.ShadowDict(v)) return result(PyLong_FromSize_t(model->items->size()));
      if (in.ListLength(v, &n)) return result(PyLong_FromSsize_t(n));
      if (!in.FailIfMutated(v)) return false;
      if (v.kind == Value::kTensor) {
        in.NoteShapeRead();
        const auto& shape = in.g().node(v.node).meta.shape;
        if (shape.empty()) {
          in.Fail(BreakCategory::kPythonError, "len() of a 0-d tensor");
          return false;
        }
        return result(PyLong_FromLongLong(shape[0]));
      }
      if (v.kind == Value::kSeq || v.kind == Value::kDict) return result(PyLong_FromSize_t(v.items->size()));
      if (v.kind == Value::kConst && (PyTuple_CheckExact(v.obj) || PyList_CheckExact(v.obj) ||
                                      PyFrozenSet_CheckExact(v.obj) ||
                                      (PySet_CheckExact(v.obj) && v.source < 0) ||
                                      PyUnicode_CheckExact(v.obj) || PyDict_CheckExact(v.obj) ||
                                      PyRange_Check(v.obj))) {
        // The length of a mutable container from the inputs is guarded, not its identity.
        if (v.source >= 0 && (PyList_CheckExact(v.obj) || PyDict_CheckExact(v.obj))) {
          in.gp().GuardType(v.source, v.obj);
        } else {
          in.UseConst(v);
        }
        return result(PyLong_FromSsize_t(PyObject_Length(v.obj)));
      }
      break;
    }
    case Builtin::kIsinstance: {
      if (args.size() != 2) break;
      // The class, or a tuple of classes (built from globals: `(int, tuple)`).
      PyObject* cls = args[1].kind == Value::kConst ? args[1].obj
                      : args[1].kind == Value::kSeq ? in.AsPyObject(args[1])
                                                    : nullptr;
      if (!cls) break;
      // A class whose metaclass keeps type's __instancecheck__/__subclasscheck__ runs no code.
      auto plain_type = [](PyObject* c) {
        if (!PyType_Check(c)) return false;
        if (Py_TYPE(c) == &PyType_Type) return true;
        static PyObject* inst = PyUnicode_InternFromString("__instancecheck__");
        static PyObject* sub = PyUnicode_InternFromString("__subclasscheck__");
        return _PyType_Lookup(Py_TYPE(c), inst) == _PyType_Lookup(&PyType_Type, inst) &&
               _PyType_Lookup(Py_TYPE(c), sub) == _PyType_Lookup(&PyType_Type, sub);
      };
      bool ok = plain_type(cls);
      if (PyTuple_Check(cls)) {
        ok = true;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(cls); ++i) ok = ok && plain_type(PyTuple_GET_ITEM(cls, i));
      }
      if (!ok) break;  // metaclasses (ABCs) may run code in __instancecheck__
      in.UseConst(args[1]);
      PyTypeObject* tp = nullptr;
      const Value& v = args[0];
      if (v.kind == Value::kTensor) tp = v.type;
      else if ((v.kind == Value::kSeq || v.kind == Value::kObject) && v.seq_type)
        tp = reinterpret_cast<PyTypeObject*>(v.seq_type);
      else if (v.kind == Value::kSeq) tp = v.is_list ? &PyList_Type : &PyTuple_Type;
      else if (v.kind == Value::kConst) {
        in.UseConst(v);
        tp = Py_TYPE(v.obj);
      }
      if (!tp) break;
      int r = PyObject_IsSubclass(reinterpret_cast<PyObject*>(tp), cls);
      if (r < 0) return result(nullptr);
      return result(PyBool_FromLong(r));
    }
    case Builtin::kPow:
      // pow(tensor, y) is the op; pow of Python numbers folds below.
      if ((args.size() == 2) && (args[0].kind == Value::kTensor || args[1].kind == Value::kTensor))
        return in.CallOp(PyOp::kPow, args, {}, out);
      [[fallthrough]];
    case Builtin::kRound:
    case Builtin::kDivmod:
    case Builtin::kRange:
    case Builtin::kMin:
    case Builtin::kMax:
    case Builtin::kAbs:
    case Builtin::kInt:
    case Builtin::kFloat:
    case Builtin::kBool: {
      if (b == Builtin::kBool && args.size() == 1) {
        bool t;
        if (!in.Truth(args[0], &t)) return false;
        *out = Value::Const(t ? Py_True : Py_False);
        return true;
      }
      for (const Value& a : args) {
        if (a.kind != Value::kConst || !(guards::IsPythonNumber(a.obj) || (b == Builtin::kInt && PyUnicode_CheckExact(a.obj)))) {
          if (b == Builtin::kMin || b == Builtin::kMax) {
            if (a.kind == Value::kSeq || (a.kind == Value::kConst && PyTuple_CheckExact(a.obj))) continue;
          }
          if (a.kind == Value::kTensor && (b == Builtin::kInt || b == Builtin::kFloat)) {
            in.Fail(BreakCategory::kDataDependent, "converting a tensor to a Python number needs its data",
                    "keep the value a tensor, or move this outside the jitted function");
            return false;
          }
          goto unsupported;
        }
      }
      if (!all_known(0)) goto unsupported;
      {
        PyObject* tuple = PyTuple_New(static_cast<Py_ssize_t>(args.size()));
        for (size_t i = 0; i < args.size(); ++i) {
          in.UseConst(args[i]);
          PyObject* o = in.AsPyObject(args[i]);
          Py_INCREF(o);
          PyTuple_SET_ITEM(tuple, i, o);
        }
        PyObject* fn;
        switch (b) {
          case Builtin::kRange: fn = reinterpret_cast<PyObject*>(&PyRange_Type); break;
          case Builtin::kInt: fn = reinterpret_cast<PyObject*>(&PyLong_Type); break;
          case Builtin::kFloat: fn = reinterpret_cast<PyObject*>(&PyFloat_Type); break;
          case Builtin::kBool: fn = reinterpret_cast<PyObject*>(&PyBool_Type); break;
          default: {
            PyObject* mod = PyImport_ImportModule("builtins");
            const char* name = b == Builtin::kMin ? "min" : b == Builtin::kMax ? "max"
                               : b == Builtin::kRound ? "round" : b == Builtin::kPow ? "pow"
                               : b == Builtin::kDivmod ? "divmod" : "abs";
            fn = PyObject_GetAttrString(mod, name);
            Py_DECREF(mod);
            in.Keep(fn);
          }
        }
        PyObject* r = PyObject_Call(fn, tuple, nullptr);
        Py_DECREF(tuple);
        return result(r);
      }
    }
    case Builtin::kStr: {
      if (args.size() != 1) break;
      PyObject* o = in.AsPyObject(args[0]);
      if (!o || !(o == Py_None || PyBool_Check(o) || PyLong_CheckExact(o) || PyFloat_CheckExact(o) ||
                  PyUnicode_CheckExact(o))) {
        break;
      }
      in.UseConst(args[0]);
      return result(PyObject_Str(o));
    }
    case Builtin::kIter:  // iter(x): what a for loop over x iterates (the same state)
      if (args.size() != 1) break;
      return in.IterOf(f, args[0], out);
    case Builtin::kNext: {
      // next(it[, default]) on an iterator of the trace: its next item, which it gives up.
      if (args.empty() || args.size() > 2 || args[0].kind != Value::kIter || args[0].opaque) break;
      const Value& it = args[0];
      if (it.items->empty()) {
        if (args.size() == 2) {
          if (!in.ExhaustIter(it)) return false;
          *out = args[1];
          return true;
        }
        in.Fail(BreakCategory::kPythonError, "next() of an exhausted iterator raises StopIteration",
                "the function runs eagerly and raises it there");
        return false;
      }
      *out = it.items->front();
      return in.TakeItems(it, 1);
    }
    case Builtin::kSlice: {
      // slice(stop) or slice(start, stop[, step]) of plain values, as BUILD_SLICE makes.
      if (args.empty() || args.size() > 3) break;
      PyObject* parts[3] = {Py_None, Py_None, Py_None};
      for (size_t i = 0; i < args.size(); ++i) {
        PyObject* o = args[i].kind == Value::kConst ? in.AsPyObject(args[i]) : nullptr;
        if (!o || !guards::IsPlainValue(o)) goto unsupported;
        in.UseConst(args[i]);
        parts[args.size() == 1 ? 1 : i] = o;
      }
      return result(PySlice_New(parts[0], parts[1], parts[2]));
    }
    case Builtin::kSet:
    case Builtin::kFrozenset: {
      if (args.size() > 1) break;
      ValueList items;
      if (!args.empty() && !in.SetItems(args[0], &items)) return false;
      Value set;
      if (!in.MakeSet(nullptr, items, &set)) return false;
      if (b == Builtin::kSet) {
        *out = set;
        return true;
      }
      return result(PyFrozenSet_New(set.obj));
    }
    case Builtin::kSorted: {
      if (args.size() != 1) break;
      Value it;
      it.items = std::make_shared<ValueList>();
      // Sets are sorted from their items (never iterated in their own order).
      if (!in.SetItems(args[0], it.items.get())) return false;
      PyObject* list = PyList_New(0);
      for (const Value& v : *it.items) {
        PyObject* o = in.AsPyObject(v);
        if (!o || !(PyLong_CheckExact(o) || PyFloat_CheckExact(o) || PyUnicode_CheckExact(o))) {
          Py_DECREF(list);
          goto unsupported;
        }
        in.UseConst(v);
        PyList_Append(list, o);
      }
      if (PyList_Sort(list) < 0) {
        Py_DECREF(list);
        return result(nullptr);
      }
      in.Keep(list);
      ValueList items;
      for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); ++i) items.push_back(Value::Const(PyList_GET_ITEM(list, i)));
      *out = Value::Seq(std::move(items), true);
      return true;
    }
    case Builtin::kSum: {
      // sum(iterable, start=0) is start + item0 + item1 + ...: tensors and numbers alike.
      if (args.empty() || args.size() > 2) break;
      Value it;
      if (!in.GetIter(args[0], &it)) return false;
      Value acc = args.size() == 2 ? args[1] : Value::Const(in.Keep(PyLong_FromLong(0)));
      for (const Value& v : *it.items) {
        Value next;
        if (!in.BinaryOp(0 /* NB_ADD */, acc, v, &next)) return false;
        acc = std::move(next);
      }
      *out = std::move(acc);
      return true;
    }
    case Builtin::kCallable: {
      // Whether the type has a call slot: no user code runs.
      if (args.size() != 1) break;
      const Value& v = args[0];
      if (v.kind == Value::kFunction) return result(PyBool_FromLong(1));
      if (v.kind == Value::kTensor) return result(PyBool_FromLong(v.type->tp_call != nullptr));
      if (v.kind != Value::kConst) break;
      if (v.source >= 0) in.gp().GuardType(v.source, v.obj);
      else in.UseConst(v);
      return result(PyBool_FromLong(PyCallable_Check(v.obj)));
    }
    case Builtin::kAll:
    case Builtin::kAny: {
      // Over items known at capture time (a tensor's truth is data: not folded).
      if (args.size() != 1) break;
      // An iterator argument is taken from up to the decisive item only.
      const bool iterator = args[0].kind == Value::kIter && !args[0].opaque;
      Value it;
      if (iterator) it = args[0];
      else if (!in.GetIter(args[0], &it)) return false;
      const bool want = b == Builtin::kAny;
      const ValueList items = *it.items;
      for (size_t i = 0; i < items.size(); ++i) {
        bool t;
        if (items[i].kind == Value::kTensor || !in.Truth(items[i], &t)) goto unsupported;
        if (t != want) continue;
        if (iterator && !in.TakeItems(it, i + 1)) return false;
        return result(PyBool_FromLong(want));
      }
      if (iterator && (!in.TakeItems(it, items.size()) || !in.ExhaustIter(it))) return false;
      return result(PyBool_FromLong(!want));
    }
    case Builtin::kZip:
    case Builtin::kEnumerate:
    case Builtin::kTuple:
    case Builtin::kList: {
      std::vector<ValueList> seqs;
      const bool lazy = b == Builtin::kZip || b == Builtin::kEnumerate;
      for (const Value& a : args) {
        if (lazy && a.kind == Value::kIter && !a.opaque) {
          // An iterator argument is taken from only as the zip or enumerate is (its link).
          seqs.push_back(*a.items);
          continue;
        }
        Value it;
        if (!in.GetIter(a, &it)) return false;
        seqs.push_back(*it.items);
      }
      ValueList items;
      if (b == Builtin::kTuple || b == Builtin::kList) {
        if (seqs.size() > 1) break;
        if (!seqs.empty()) items = seqs[0];
        *out = Value::Seq(std::move(items), b == Builtin::kList);
        return true;
      }
      if (b == Builtin::kEnumerate) {
        if (seqs.size() != 1) break;
        for (size_t i = 0; i < seqs[0].size(); ++i)
          items.push_back(Value::Seq({Value::Const(in.Keep(PyLong_FromSize_t(i))), seqs[0][i]}, false));
      } else {
        size_t n = seqs.empty() ? 0 : SIZE_MAX;
        for (auto& s : seqs) n = std::min(n, s.size());
        for (size_t i = 0; i < n; ++i) {
          ValueList t;
          for (auto& s : seqs) t.push_back(s[i]);
          items.push_back(Value::Seq(std::move(t), false));
        }
      }
      return in.MakeDerivedIter(args, std::move(items), out);
    }
    case Builtin::kGetattr:
    case Builtin::kHasattr: {
      if (args.size() < 2 || args[1].kind != Value::kConst || !PyUnicode_Check(args[1].obj)) break;
      Frame tmp;
      tmp.code = f.code;
      tmp.func = f.func;
      tmp.func_source = f.func_source;
      tmp.globals_func = f.globals_func;
      const Value* pending =
          args[0].kind == Value::kConst ? in.PendingAttr(args[0].obj, args[1].obj) : nullptr;
      // Deleted earlier in the trace (which guarded the object's type): missing, unless the
      // class has it or computes it (__getattr__).
      const bool plain_get =
          pending && Py_TYPE(args[0].obj)->tp_getattro == PyObject_GenericGetAttr;
      if (pending && pending->kind == Value::kUndef && !plain_get) break;
      const bool deleted = pending && pending->kind == Value::kUndef &&
                           !_PyType_Lookup(Py_TYPE(args[0].obj), args[1].obj);
      if (pending) in.UseConst(args[0]);  // its identity, as LoadAttr guards it
      if (b == Builtin::kHasattr) {
        if (pending) return result(PyBool_FromLong(!deleted));
        if (args[0].kind == Value::kConst) {
          in.UseConst(args[0]);
          if (guards::SafeGetAttr(args[0].obj, args[1].obj)) return result(PyBool_FromLong(1));
          PyErr_Clear();
        }
        break;
      }
      if (deleted && args.size() == 3) {
        *out = args[2];
        return true;
      }
      if (args.size() != 2 || !in.LoadAttr(tmp, args[0], args[1].obj, false)) break;
      *out = tmp.stack.back();
      return true;
    }
    case Builtin::kNone:
      break;
  }
unsupported:
  if (in.failed()) return false;
  in.Fail(BreakCategory::kUnsupportedCall, "a builtin called with arguments unknown at capture time");
  return false;
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

bool Interp::Call(Frame& f, const Value& callable, ValueList args, Value* out) {
  std::vector<std::string> names;
  if (f.kwnames) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(f.kwnames); ++i)
      names.emplace_back(PyUnicode_AsUTF8(PyTuple_GET_ITEM(f.kwnames, i)));
    f.kwnames = nullptr;
  }
  if (callable.kind == Value::kTensorMethod) return CallOp(callable.method, args, names, out);
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
  if (PyFunction_Check(fn)) {
    if (callable.source < 0) {
      Fail(BreakCategory::kUnsupportedCall, "calling a function whose origin cannot be guarded");
      return false;
    }
    return Inline(f, reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(fn)), fn, callable.source,
                  nullptr, std::move(args), names, out);
  }
  if (PyType_Check(fn)) {  // a namedtuple or a plain object made here: values of the trace
    bool handled = false;
    if (MakeNamedTuple(fn, args, names, out, &handled)) return true;
    if (handled) return false;
    if (MakeObject(f, callable, args, names, out, &handled)) return true;
    if (handled) return false;
  }
  Builtin b = BuiltinOf(fn);
  if (b != Builtin::kNone) return FoldBuiltin(*this, f, b, args, names, out);
  // A Cell: calling it runs construct (in either mode), so inline construct.
  PyObject* call_name = PyUnicode_InternFromString("__call__");
  PyObject* call_attr = _PyType_Lookup(Py_TYPE(fn), call_name);
  Py_DECREF(call_name);
  if (g_cell_call && call_attr == g_cell_call && grad_depth_ > 0) {
    // A Cell with its own gradient (bprop): differentiated by it.
    PyObject* bname = Keep(PyUnicode_InternFromString("bprop"));
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
  if (g_cell_call && call_attr == g_cell_call && callable.source >= 0) {
    PyObject* cname = Keep(PyUnicode_InternFromString("construct"));
    PyObject* construct = _PyType_Lookup(Py_TYPE(fn), cname);
    if (construct && PyFunction_Check(construct)) {
      Value cv;
      if (!FromSource(gp().AddSource(Source::kTypeAttr, callable.source, -1, cname), construct, &cv))
        return false;
      UseConst(cv);
      args.insert(args.begin(), callable);
      return Inline(f, reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(construct)), construct,
                    cv.source, nullptr, std::move(args), names, out);
    }
  }
  // A primitive instance (ops.Add()): its class names the op it performs.
  PyObject* prim = PyObject_GetAttrString(reinterpret_cast<PyObject*>(Py_TYPE(fn)), "_pijit_op");
  if (prim) {
    PyOp pop;
    bool known = PyOpOfBuiltin(prim, &pop);
    Py_DECREF(prim);
    PyObject* attrs = known ? PyObject_CallMethod(fn, "_pijit_kwargs", nullptr) : nullptr;
    if (attrs && PyDict_Check(attrs)) {
      // Primitive attributes (keep_dims, ...) are keyword arguments of the op.
      Keep(attrs);
      PyObject *k, *v;
      Py_ssize_t pos = 0;
      while (PyDict_Next(attrs, &pos, &k, &v)) {
        names.emplace_back(PyUnicode_AsUTF8(k));
        args.push_back(Value::Const(v));
      }
      return CallOp(pop, args, names, out);
    }
    Py_XDECREF(attrs);
  }
  if (PyErr_Occurred()) PyErr_Clear();
  // An instance of a class whose __call__ is a Python function (GradOperation(...), user
  // callables): inline type(obj).__call__(obj, ...).
  if (call_attr && PyFunction_Check(call_attr) && callable.source >= 0 && !PyType_Check(fn)) {
    PyObject* cname = Keep(PyUnicode_InternFromString("__call__"));
    Value cv;
    if (!FromSource(gp().AddSource(Source::kTypeAttr, callable.source, -1, cname), call_attr, &cv))
      return false;
    UseConst(cv);
    args.insert(args.begin(), callable);
    return Inline(f, reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(call_attr)), call_attr,
                  cv.source, nullptr, std::move(args), names, out);
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
