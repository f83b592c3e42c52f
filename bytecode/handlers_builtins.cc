// Builtins called in captured code (len, isinstance, min, zip, ...) whose result is known at
// capture time are folded into constants or values of the trace.
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bytecode/interp.h"
#include "guards/guards.h"
#include "interop/convert.h"

namespace pijit::bytecode {

using guards::Source;

namespace {

// Builtins whose result capture can compute from known arguments.
enum class Builtin { kNone, kLen, kIsinstance, kRange, kZip, kEnumerate, kMin, kMax, kAbs, kInt,
                     kFloat, kBool, kTuple, kList, kGetattr, kHasattr, kStr, kSorted, kSum, kAll,
                     kAny, kCallable, kSet, kFrozenset, kSlice, kRound, kPow, kDivmod, kDict,
                     kIter, kNext, kType, kReversed, kMap, kFilter };

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
    if (fn == reinterpret_cast<PyObject*>(&PyType_Type)) return Builtin::kType;
    if (fn == reinterpret_cast<PyObject*>(&PyReversed_Type)) return Builtin::kReversed;
    if (fn == reinterpret_cast<PyObject*>(&PyMap_Type)) return Builtin::kMap;
    if (fn == reinterpret_cast<PyObject*>(&PyFilter_Type)) return Builtin::kFilter;
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

// `v` (a new reference), the value a folded call gave, as *out; nullptr: `what` (the builtin,
// the math function) raised, which fails the capture so that Python raises it.
bool FoldedResult(Interp& in, PyObject* v, const char* what, Value* out) {
  if (!v) {
    PyErr_Clear();
    in.Fail(BreakCategory::kPythonError, absl::StrCat(what, " raises on these arguments"),
            "the function runs eagerly and raises the error there");
    return false;
  }
  *out = Value::Const(in.values().Keep(v));
  return true;
}

// One builtin call being folded.
struct FoldCall {
  Interp& in;
  Frame& f;
  Builtin b;
  ValueList& args;
  Value* out;
  // The folded value (a new reference) as the result; nullptr: the builtin raised.
  bool Result(PyObject* v) { return FoldedResult(in, v, "the builtin", out); }
  // Whether every argument from `from` on is a Python object known now.
  bool AllKnown(size_t from) {
    for (size_t i = from; i < args.size(); ++i)
      if (!in.AsPyObject(args[i])) return false;
    return true;
  }
  // The folds, one per family of builtins. nullopt: not folded (arguments unknown at capture
  // time); otherwise whether folding succeeded.
  // The class of args[k] when capture knows it (guarding what it read); nullptr otherwise.
  PyTypeObject* TypeOf(size_t k, bool guard_identity);
  std::optional<bool> Introspection();
  std::optional<bool> Numeric();
  std::optional<bool> Construct();
  std::optional<bool> Collection();
  std::optional<bool> Sequence();  // tuple, list, zip, enumerate
  std::optional<bool> StrOfException();
};

// str(e) of an exception made in the trace whose `args` are known: the same exception made
// now gives the text, unless its class defines __str__ in Python (which may do anything).
std::optional<bool> FoldCall::StrOfException() {
  const Value& e = args[0];
  static PyObject* const str_name = PyUnicode_InternFromString("__str__");
  PyObject* str = _PyType_Lookup(reinterpret_cast<PyTypeObject*>(e.seq_type), str_name);
  PyObject* exc_args = in.AsPyObject(e.items->front());
  if (!exc_args || !str || PyFunction_Check(str)) return std::nullopt;
  in.UseConst(e.items->front());
  PyObject* made = PyObject_CallObject(e.seq_type, exc_args);
  PyObject* text = made ? PyObject_Str(made) : nullptr;
  Py_XDECREF(made);
  return Result(text);
}

PyTypeObject* FoldCall::TypeOf(size_t k, bool guard_identity) {
  const Value& v = args[k];
  if (v.kind == Value::kTensor) return v.type;
  if ((v.kind == Value::kSeq || v.kind == Value::kObject) && v.seq_type)
    return reinterpret_cast<PyTypeObject*>(v.seq_type);
  if (v.kind == Value::kSeq) return v.is_list ? &PyList_Type : &PyTuple_Type;
  if (v.kind != Value::kConst) return nullptr;
  // An input needs only its class guarded; isinstance keeps its identity guard.
  if (v.source >= 0 && !guard_identity) in.gp().GuardType(v.source, v.obj);
  else in.UseConst(v);
  return Py_TYPE(v.obj);
}

// Len, isinstance, type, callable, getattr and hasattr.
std::optional<bool> FoldCall::Introspection() {
  switch (b) {
    case Builtin::kLen: {
      if (args.size() != 1) break;
      const Value& v = args[0];
      Py_ssize_t n;
      if (const Value* model = in.ShadowDict(v)) return Result(PyLong_FromSize_t(model->items->size()));
      if (in.ListLength(v, &n)) return Result(PyLong_FromSsize_t(n));
      if (!in.FailIfMutated(v)) return false;
      if (v.kind == Value::kTensor) {
        in.NoteShapeRead();
        const auto& shape = in.g().node(v.node).meta.shape;
        if (shape.empty()) {
          in.Fail(BreakCategory::kPythonError, "len() of a 0-d tensor");
          return false;
        }
        return Result(PyLong_FromLongLong(shape[0]));
      }
      if (v.kind == Value::kSeq || v.kind == Value::kDict) return Result(PyLong_FromSize_t(v.items->size()));
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
        return Result(PyLong_FromSsize_t(PyObject_Length(v.obj)));
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
      PyTypeObject* tp = TypeOf(0, true);
      if (!tp) break;
      int r = PyObject_IsSubclass(reinterpret_cast<PyObject*>(tp), cls);
      if (r < 0) return Result(nullptr);
      return Result(PyBool_FromLong(r));
    }
    case Builtin::kType: {
      // type(x): the class (three-argument type() makes a class and is not folded).
      if (args.size() != 1) break;
      PyTypeObject* tp = TypeOf(0, false);
      if (!tp) break;
      PyObject* cls = in.values().Keep(Py_NewRef(reinterpret_cast<PyObject*>(tp)));
      // The class of an input keeps a source, so its attributes are read (and guarded) as a
      // global class's are.
      if (args[0].kind == Value::kConst && args[0].source >= 0)
        return in.values().FromSource(in.gp().AddSource(Source::kTypeOf, args[0].source, -1), cls, out);
      *out = Value::Const(cls);
      return true;
    }
    case Builtin::kCallable: {
      // Whether the type has a call slot: no user code runs.
      if (args.size() != 1) break;
      const Value& v = args[0];
      if (v.kind == Value::kFunction) return Result(PyBool_FromLong(1));
      if (v.kind == Value::kTensor) return Result(PyBool_FromLong(v.type->tp_call != nullptr));
      if (v.kind != Value::kConst) break;
      if (v.source >= 0) in.gp().GuardType(v.source, v.obj);
      else in.UseConst(v);
      return Result(PyBool_FromLong(PyCallable_Check(v.obj)));
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
          args[0].kind == Value::kConst ? in.effects().PendingAttr(args[0].obj, args[1].obj) : nullptr;
      // Deleted earlier in the trace (which guarded the object's type): missing, unless the
      // class has it or computes it (__getattr__).
      const bool plain_get =
          pending && Py_TYPE(args[0].obj)->tp_getattro == PyObject_GenericGetAttr;
      if (pending && pending->kind == Value::kUndef && !plain_get) break;
      const bool deleted = pending && pending->kind == Value::kUndef &&
                           !_PyType_Lookup(Py_TYPE(args[0].obj), args[1].obj);
      if (pending) in.UseConst(args[0]);  // its identity, as LoadAttr guards it
      if (b == Builtin::kHasattr) {
        if (pending) return Result(PyBool_FromLong(!deleted));
        if (args[0].kind == Value::kConst) {
          in.UseConst(args[0]);
          if (IsDTypeObject(args[0].obj))  // an immutable dtype's own C++ attributes
            return Result(PyBool_FromLong(PyObject_HasAttr(args[0].obj, args[1].obj)));
          if (guards::SafeGetAttr(args[0].obj, args[1].obj)) return Result(PyBool_FromLong(1));
          PyErr_Clear();
        }
        break;
      }
      if (deleted && args.size() == 3) {
        *out = args[2];
        return true;
      }
      // getattr(obj, name, default) of an attribute the object has (or the trace stored) is
      // that attribute; of one it lacks (told without running its code), the default, with
      // the absence guarded.
      if (args.size() == 3 && !pending) {
        if (args[0].kind != Value::kConst) break;
        PyObject* found = guards::SafeGetAttr(args[0].obj, args[1].obj);
        if (!found && args[0].source >= 0 && !in.effects().Mutated(args[0]) &&
            guards::AttrMissing(args[0].obj, args[1].obj)) {
          in.gp().GuardType(args[0].source, args[0].obj);
          in.gp().GuardAttrMissing(args[0].source, args[1].obj);
          *out = args[2];
          return true;
        }
        if (!found) break;
      }
      if (args.size() > 3 || !in.LoadAttr(tmp, args[0], args[1].obj, false)) break;
      *out = tmp.stack.back();
      return true;
    }
    default:
      break;
  }
  return std::nullopt;
}

// Numbers: pow, round, divmod, range, min, max, abs, int, float, bool.
std::optional<bool> FoldCall::Numeric() {
  // abs(tensor) is the op.
  if (b == Builtin::kAbs && args.size() == 1 && args[0].kind == Value::kTensor)
    return in.ops().Call(PyOp::kAbs, args, {}, out);
  switch (b) {
    case Builtin::kPow:
      // pow(tensor, y) is the op; pow of Python numbers folds below.
      if ((args.size() == 2) && (args[0].kind == Value::kTensor || args[1].kind == Value::kTensor))
        return in.ops().Call(PyOp::kPow, args, {}, out);
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
      // range() of tensors: a for loop over it becomes a loop node in whole-graph mode.
      if (b == Builtin::kRange && in.WholeGraph() &&
          std::any_of(args.begin(), args.end(), [](const Value& a) { return a.kind == Value::kTensor; })) {
        return in.TensorRange(args, out);
      }
      // int("3") and float("-inf") parse a constant string.
      const bool parses_str = b == Builtin::kInt || b == Builtin::kFloat;
      for (const Value& a : args) {
        // NumPy scalars (items of a constant array) are immutable numbers too.
        if (a.kind != Value::kConst ||
            !(guards::IsPythonNumber(a.obj) || IsNumpyScalar(a.obj) ||
              (parses_str && PyUnicode_CheckExact(a.obj)))) {
          if (b == Builtin::kMin || b == Builtin::kMax) {
            if (a.kind == Value::kSeq || (a.kind == Value::kConst && PyTuple_CheckExact(a.obj))) continue;
          }
          if (a.kind == Value::kTensor && (b == Builtin::kInt || b == Builtin::kFloat)) {
            in.Fail(BreakCategory::kDataDependent, "converting a tensor to a Python number needs its data",
                    "keep the value a tensor, or move this outside the jitted function");
            return false;
          }
          return std::nullopt;
        }
      }
      if (!AllKnown(0)) return std::nullopt;
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
            in.values().Keep(fn);
          }
        }
        PyObject* r = PyObject_Call(fn, tuple, nullptr);
        Py_DECREF(tuple);
        return Result(r);
      }
    }
    default:
      break;
  }
  return std::nullopt;
}

// Str, slice, iter and next.
std::optional<bool> FoldCall::Construct() {
  switch (b) {
    case Builtin::kStr: {
      if (args.size() != 1) break;
      if (IsMadeException(args[0])) return StrOfException();
      PyObject* o = in.AsPyObject(args[0]);
      if (!o || !(o == Py_None || PyBool_Check(o) || PyLong_CheckExact(o) || PyFloat_CheckExact(o) ||
                  PyUnicode_CheckExact(o))) {
        break;
      }
      in.UseConst(args[0]);
      return Result(PyObject_Str(o));
    }
    case Builtin::kIter:  // iter(x): what a for loop over x iterates (the same state)
      if (args.size() != 1) break;
      return in.IterOf(f, args[0], out);
    case Builtin::kNext: {
      // next(it[, default]) on an iterator of the trace: its next item, which it gives up.
      if (args.empty() || args.size() > 2 || args[0].kind != Value::kIter || args[0].view) break;
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
        if (!o || !guards::IsPlainValue(o)) return std::nullopt;
        in.UseConst(args[i]);
        parts[args.size() == 1 ? 1 : i] = o;
      }
      return Result(PySlice_New(parts[0], parts[1], parts[2]));
    }
    default:
      break;
  }
  return std::nullopt;
}

// Set, frozenset, sorted, sum, all, any, zip, enumerate, tuple and list.
std::optional<bool> FoldCall::Sequence() {
  if (b != Builtin::kZip && b != Builtin::kEnumerate && b != Builtin::kTuple && b != Builtin::kList)
    return std::nullopt;
  std::vector<ValueList> seqs;
  const bool lazy = b == Builtin::kZip || b == Builtin::kEnumerate;
  // enumerate(seq, start): the count starts at a known int.
  long long start = 0;
  if (b == Builtin::kEnumerate && args.size() == 2) {
    PyObject* s = in.AsPyObject(args[1]);
    if (!s || !PyLong_CheckExact(s)) return std::nullopt;
    in.UseConst(args[1]);
    start = PyLong_AsLongLong(s);
    if (start == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      return std::nullopt;
    }
    args.pop_back();
  }
  bool opaque = false;  // over an iterator that cannot be handed to Python at a break
  for (const Value& a : args) {
    if (lazy && a.kind == Value::kIter && !a.view) {
      // An iterator argument is taken from only as the zip or enumerate is (its link).
      seqs.push_back(*a.items);
      opaque |= a.opaque;
      continue;
    }
    Value it;
    if (!in.GetIter(a, &it)) return false;
    seqs.push_back(*it.items);
    opaque |= it.opaque && !it.view;
  }
  ValueList items;
  if (b == Builtin::kTuple || b == Builtin::kList) {
    if (seqs.size() > 1) return std::nullopt;
    if (!seqs.empty()) items = seqs[0];
    *out = Value::Seq(std::move(items), b == Builtin::kList);
    return true;
  }
  if (b == Builtin::kEnumerate) {
    if (seqs.size() != 1) return std::nullopt;
    for (size_t i = 0; i < seqs[0].size(); ++i)
      items.push_back(Value::Seq(
          {Value::Const(in.values().Keep(PyLong_FromLongLong(start + static_cast<long long>(i)))),
           seqs[0][i]},
          false));
  } else {
    size_t n = seqs.empty() ? 0 : SIZE_MAX;
    for (auto& s : seqs) n = std::min(n, s.size());
    for (size_t i = 0; i < n; ++i) {
      ValueList t;
      for (auto& s : seqs) t.push_back(s[i]);
      items.push_back(Value::Seq(std::move(t), false));
    }
  }
  if (!in.MakeDerivedIter(args, std::move(items), out)) return false;
  out->opaque |= opaque;
  return true;
}

std::optional<bool> FoldCall::Collection() {
  switch (b) {
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
      return Result(PyFrozenSet_New(set.obj));
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
          return std::nullopt;
        }
        in.UseConst(v);
        PyList_Append(list, o);
      }
      if (PyList_Sort(list) < 0) {
        Py_DECREF(list);
        return Result(nullptr);
      }
      in.values().Keep(list);
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
      Value acc = args.size() == 2 ? args[1] : Value::Const(in.values().Keep(PyLong_FromLong(0)));
      for (const Value& v : *it.items) {
        Value next;
        if (!in.BinaryOp(0 /* NB_ADD */, acc, v, &next)) return false;
        acc = std::move(next);
      }
      *out = std::move(acc);
      return true;
    }
    case Builtin::kAll:
    case Builtin::kAny: {
      // Over items known at capture time (a tensor's truth is data: not folded).
      if (args.size() != 1) break;
      // An iterator argument is taken from up to the decisive item only.
      const bool iterator = args[0].kind == Value::kIter && !args[0].view;
      Value it;
      if (iterator) it = args[0];
      else if (!in.GetIter(args[0], &it)) return false;
      const bool want = b == Builtin::kAny;
      const ValueList items = *it.items;
      for (size_t i = 0; i < items.size(); ++i) {
        bool t;
        if (items[i].kind == Value::kTensor || !in.Truth(items[i], &t)) return std::nullopt;
        if (t != want) continue;
        if (iterator && !in.TakeItems(it, i + 1)) return false;
        return Result(PyBool_FromLong(want));
      }
      if (iterator && (!in.TakeItems(it, items.size()) || !in.ExhaustIter(it))) return false;
      return Result(PyBool_FromLong(!want));
    }
    case Builtin::kReversed: {
      // reversed() of a tuple, a range, a constant sequence or a list made during capture
      // (looked at from here on, so no later mutation changes what it yields); an input list
      // could change behind the trace, and other objects define __reversed__ in Python.
      if (args.size() != 1) break;
      const Value& a = args[0];
      const bool made_list = a.kind == Value::kSeq && a.is_list && a.source < 0;
      const bool fixed = (a.kind == Value::kSeq && !a.is_list) ||
                         (a.kind == Value::kConst && (PyTuple_CheckExact(a.obj) ||
                                                      PyRange_Check(a.obj) ||
                                                      PyUnicode_CheckExact(a.obj)));
      if (!made_list && !fixed) break;
      Value it;
      if (!in.GetIter(a, &it)) return false;
      if (made_list) in.effects().ViewItems(a.items);
      ValueList items(it.items->rbegin(), it.items->rend());
      out->kind = Value::kIter;
      out->items = std::make_shared<ValueList>(std::move(items));
      return true;
    }
    default:
      break;
  }
  return std::nullopt;
}

// zip(..., strict=flag): `args` ends with the flag, which is taken off. With strict=True
// the sequences must be of one length (known here: sequences, not iterators, which a strict
// zip would consume to compare); zip then is the plain zip. Unequal lengths raise in Python
// when the zip reaches the shortest one's end, so that case runs eagerly.
bool ZipStrictHolds(Interp& in, ValueList* args) {
  const Value flag = args->back();
  args->pop_back();
  PyObject* f = in.AsPyObject(flag);
  if (!f || !PyBool_Check(f)) {
    in.Fail(BreakCategory::kUnsupportedCall, "zip(strict=...) with a value unknown at capture time");
    return false;
  }
  in.UseConst(flag);
  if (f == Py_False) return true;
  size_t n = SIZE_MAX;
  for (const Value& a : *args) {
    if (a.kind == Value::kIter || a.kind == Value::kGenerator) {
      in.Fail(BreakCategory::kUnsupportedCall, "zip(strict=True) over an iterator",
              "the zip runs in Python");
      return false;
    }
    Value it;
    if (!in.GetIter(a, &it)) return false;
    if (n != SIZE_MAX && it.items->size() != n) {
      in.Fail(BreakCategory::kPythonError, "zip(strict=True) over sequences of different lengths",
              "the function runs eagerly and raises the ValueError where the zip ends");
      return false;
    }
    n = it.items->size();
  }
  return true;
}

// dict(...) is built as a value of the trace; the others take positional arguments, and a
// generator argument runs first (only for consumers that take every item).
bool FoldBuiltin(Interp& in, Frame& f, Builtin b, const ValueList& in_args,
                 const std::vector<std::string>& kwnames, Value* out) {
  if (b == Builtin::kDict) return in.MakeDictCall(in_args, kwnames, out);
  ValueList args = in_args;
  if (b == Builtin::kZip && kwnames.size() == 1 && kwnames[0] == "strict") {
    if (!ZipStrictHolds(in, &args)) return false;
  } else if (!kwnames.empty()) {
    in.Fail(BreakCategory::kUnsupportedCall, "keyword arguments to a builtin");
    return false;
  }
  if (b == Builtin::kMap || b == Builtin::kFilter) return in.MakeLazyMap(b == Builtin::kFilter, args, out);
  if (b == Builtin::kNext && (args.size() == 1 || args.size() == 2) &&
      args[0].kind == Value::kGenerator && args[0].gen->lazy == GenState::kNotLazy) {
    // next(generator[, default]): the generator runs to its next yield (NextFromGenerator).
    Value item;
    bool exhausted = false;
    if (!in.NextFromGenerator(f, args[0], &item, &exhausted)) return false;
    if (!exhausted || args.size() == 2) {
      *out = exhausted ? args[1] : std::move(item);
      return true;
    }
    in.Fail(BreakCategory::kPythonError, "next() of an exhausted generator raises StopIteration",
            "the function runs eagerly and raises it there");
    return false;
  }
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
  // Each family's fold knows its own builtins and gives nullopt for the others.
  FoldCall c{in, f, b, args, out};
  std::optional<bool> folded = c.Introspection();
  if (!folded) folded = c.Numeric();
  if (!folded) folded = c.Construct();
  if (!folded) folded = c.Collection();
  if (!folded) folded = c.Sequence();
  if (folded) return *folded;
  if (in.failed()) return false;
  in.Fail(BreakCategory::kUnsupportedCall, "a builtin called with arguments unknown at capture time");
  return false;
}

}  // namespace

namespace {

// A function of the math module: pure, so a call on numbers known now is computed now.
bool IsMathFunction(PyObject* fn) {
  if (!PyCFunction_Check(fn)) return false;
  PyObject* self = PyCFunction_GET_SELF(fn);
  return self && PyModule_Check(self) && std::string_view(PyModule_GetName(self)) == "math";
}

// math.f(numbers...): the result, a constant guarded through its arguments' values; false
// with *handled unset when an argument is not a Python number known now.
bool FoldMathCall(Interp& in, PyObject* fn, const ValueList& args,
                  const std::vector<std::string>& names, Value* out, bool* handled) {
  if (!names.empty()) return false;
  for (const Value& a : args)
    if (a.kind != Value::kConst || !guards::IsPythonNumber(a.obj)) return false;
  *handled = true;
  PyObject* tuple = PyTuple_New(static_cast<Py_ssize_t>(args.size()));
  if (!tuple) {
    PyErr_Clear();
    in.Fail(BreakCategory::kInternal, "out of memory building a math call");
    return false;
  }
  for (size_t i = 0; i < args.size(); ++i) {
    in.UseConst(args[i]);
    PyTuple_SET_ITEM(tuple, i, Py_NewRef(args[i].obj));
  }
  PyObject* r = PyObject_Call(fn, tuple, nullptr);
  Py_DECREF(tuple);
  return FoldedResult(in, r, "the math function", out);
}

}  // namespace

bool FoldBuiltinCall(Interp& in, Frame& f, PyObject* fn, const ValueList& args,
                     const std::vector<std::string>& names, Value* out, bool* handled) {
  *handled = false;
  if (IsMathFunction(fn)) {
    const bool ok = FoldMathCall(in, fn, args, names, out, handled);
    if (*handled) return ok;
  }
  const Builtin b = BuiltinOf(fn);
  *handled = b != Builtin::kNone;
  return *handled && FoldBuiltin(in, f, b, args, names, out);
}

}  // namespace pijit::bytecode
