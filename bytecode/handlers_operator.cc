// Operators: arithmetic (BINARY_OP), comparisons, truth tests and subscripts.
#include "absl/strings/str_format.h"
#include "bytecode/interp.h"
#include "guards/guards.h"
#include "interop/convert.h"

namespace pijit::bytecode {
namespace {

// BINARY_OP arguments of the running interpreter.
enum NbOp : int {
#define PIJIT_NB_OP(name, num, symbol) name = num,
#include "bytecode/binops_py311.def"
#undef PIJIT_NB_OP
};

using guards::IsPlainValue;
using guards::IsPythonNumber;

}  // namespace

bool Interp::BinaryOp(int nb, const Value& a, const Value& b, Value* out) {
  const int base = nb >= NB_INPLACE_ADD ? nb - NB_INPLACE_ADD : nb;
  if (a.kind == Value::kTensor || b.kind == Value::kTensor) {
    PyOp op;
    switch (base) {
      case NB_ADD: op = PyOp::kAdd; break;
      case NB_SUBTRACT: op = PyOp::kSub; break;
      case NB_MULTIPLY: op = PyOp::kMul; break;
      case NB_TRUE_DIVIDE: op = PyOp::kDiv; break;
      case NB_MATRIX_MULTIPLY: op = PyOp::kMatMul; break;
      default: {
        // Operators added to the op table later (pow, ...) are found by name.
        static const char* const kNames[] = {nullptr, "bitwise_and", "floor_divide", nullptr,
                                             nullptr, nullptr, "remainder", "bitwise_or", "pow",
                                             nullptr, nullptr, nullptr, "bitwise_xor"};
        if (base > NB_XOR || !kNames[base] || !PyOpByName(kNames[base], &op)) {
          Fail(BreakCategory::kUnsupportedOperator,
               absl::StrFormat("binary operator #%d on tensors is not captured yet", nb));
          return false;
        }
      }
    }
    return ops_.Operator(op, a, b, out);
  }
  // Sequences built during capture: concatenation and repetition.
  if (a.kind == Value::kSeq && b.kind == Value::kSeq && base == NB_ADD && a.is_list &&
      b.is_list && nb != base) {
    // list += list extends the list itself, which every alias sees: a list made during
    // capture and not being looped over is extended in the trace; an input list breaks.
    if (a.source >= 0 || effects_.ItemsViewed(a.items.get())) {
      Fail(BreakCategory::kUnsupportedOperator, "+= on a list the trace does not own",
           "the graph breaks here; the list is extended in Python");
      return false;
    }
    a.items->insert(a.items->end(), b.items->begin(), b.items->end());
    *out = a;
    return true;
  }
  if (a.kind == Value::kSeq && b.kind == Value::kSeq && base == NB_ADD && a.is_list == b.is_list) {
    ValueList items = *a.items;
    items.insert(items.end(), b.items->begin(), b.items->end());
    *out = Value::Seq(std::move(items), a.is_list);
    return true;
  }
  // seq * n and n * seq: a new sequence of the items repeated (list *= n, which changes the
  // list itself, is left to the general path).
  const bool a_seq = a.kind == Value::kSeq, b_seq = b.kind == Value::kSeq;
  if (base == NB_MULTIPLY && a_seq != b_seq && !(nb != base && a_seq && a.is_list)) {
    const Value& seq = a_seq ? a : b;
    const Value& count = a_seq ? b : a;
    if (count.kind == Value::kConst && PyLong_CheckExact(count.obj)) {
      int overflow = 0;
      const long long n = PyLong_AsLongLongAndOverflow(count.obj, &overflow);
      constexpr long long kMaxItems = 4096;  // a trace holds every item
      if (!overflow && (n <= 0 || static_cast<long long>(seq.items->size()) * n <= kMaxItems)) {
        UseConst(count);
        ValueList items;
        for (long long i = 0; i < n; ++i) items.insert(items.end(), seq.items->begin(), seq.items->end());
        *out = Value::Seq(std::move(items), seq.is_list);
        return true;
      }
    }
  }
  if (ops_.NumberArith(base, a, b, out)) return true;
  PyObject* x = AsPyObject(a);
  PyObject* y = AsPyObject(b);
  // Whole-graph mode's JIT Fallback: an operator on other values known at capture time (NumPy
  // arrays a fallback call made) is computed now; not in place on an object of the caller's.
  const bool fallback = !allow_break_ && x && y && (nb == base || a.source < 0) &&
                        FixedAtCompileTime(a) && FixedAtCompileTime(b);
  if (x && y && ((IsPlainValue(x) && IsPlainValue(y)) || fallback)) {
    UseConst(a);
    UseConst(b);
    static PyObject* (*const kOps[])(PyObject*, PyObject*) = {
        PyNumber_Add, PyNumber_And, PyNumber_FloorDivide, PyNumber_Lshift, nullptr,
        PyNumber_Multiply, PyNumber_Remainder, PyNumber_Or, nullptr, PyNumber_Rshift,
        PyNumber_Subtract, PyNumber_TrueDivide, PyNumber_Xor};
    // Plain values are immutable: in-place operators give the plain result.
    PyObject* r = nullptr;
    if (base == NB_POWER) r = PyNumber_Power(x, y, Py_None);
    else if (base <= NB_XOR && kOps[base]) r = kOps[base](x, y);
    if (!r) {
      PyErr_Clear();
      Fail(BreakCategory::kPythonError, "the operator raises on these Python values",
           "the function runs eagerly and raises the error there");
      return false;
    }
    *out = Value::Const(values_.Keep(r));
    return true;
  }
  Fail(BreakCategory::kUnsupportedOperator, "operator on values that are not tensors or plain Python values");
  return false;
}

bool Interp::CompareOp(int cmp, const Value& a, const Value& b, Value* out) {
  if (a.kind == Value::kTensor || b.kind == Value::kTensor) {
    static const char* const kNames[] = {"less", "less_equal", "equal", "not_equal", "greater",
                                         "greater_equal"};
    PyOp op;
    if (cmp < 0 || cmp > 5 || !PyOpByName(kNames[cmp], &op)) {
      Fail(BreakCategory::kUnsupportedOperator, "comparison of tensors is not captured yet");
      return false;
    }
    return ops_.Call(op, {a, b}, {}, out);
  }
  PyObject* x = AsPyObject(a);
  PyObject* y = AsPyObject(b);
  // Enum members compare as object identity (or int's or str's comparison), dtypes as their
  // enum values: no code runs.
  if (!x || !y || !ComparesWithoutCode(x) || !ComparesWithoutCode(y)) {
    Fail(BreakCategory::kUnsupportedOperator, "comparison of values that are not known plain Python values");
    return false;
  }
  UseConst(a);
  UseConst(b);
  PyObject* r = PyObject_RichCompare(x, y, cmp);
  if (!r) {
    PyErr_Clear();
    Fail(BreakCategory::kPythonError, "the comparison raises on these values");
    return false;
  }
  *out = Value::Const(values_.Keep(r));
  return true;
}

bool Interp::Truth(const Value& v, bool* out) {
  if (const Value* model = ShadowDict(v)) {
    *out = !model->items->empty();
    return true;
  }
  if (!FailIfMutated(v)) return false;
  switch (v.kind) {
    case Value::kTensor:
      Fail(BreakCategory::kDataDependent, "the truth value of a tensor depends on its data",
           "the graph breaks here and each way continues in its own resume function; "
           "ops.where or ops.select keeps both ways in one graph");
      return false;
    case Value::kSeq:
    case Value::kDict:
      *out = !v.items->empty();
      return true;
    case Value::kFunction:
      *out = true;
      return true;
    case Value::kConst: {
      PyObject* o = v.obj;
      const bool known_set = PyFrozenSet_CheckExact(o) || (PySet_CheckExact(o) && v.source < 0);
      if (!IsPlainValue(o) && !known_set && !PyList_CheckExact(o) && !PyDict_CheckExact(o) &&
          !PyRange_Check(o) &&
          !PyModule_Check(o) && !PyFunction_Check(o) && !PyCFunction_Check(o) && !PyType_Check(o)) {
        // __bool__ / __len__ of other objects could run code; tensors (by Python type) too.
        if (AsTensor(o)) {
          Fail(BreakCategory::kDataDependent, "the truth value of a tensor depends on its data");
          return false;
        }
        PyTypeObject* tp = Py_TYPE(o);
        bool custom = (tp->tp_as_number && tp->tp_as_number->nb_bool) ||
                      (tp->tp_as_mapping && tp->tp_as_mapping->mp_length) ||
                      (tp->tp_as_sequence && tp->tp_as_sequence->sq_length);
        if (custom) {
          Fail(BreakCategory::kUnsupportedOperator, absl::StrFormat("truth value of a %s", tp->tp_name));
          return false;
        }
      }
      if (v.source >= 0 && (PyList_CheckExact(o) || PyDict_CheckExact(o))) {
        gp().GuardType(v.source, o);  // contents may change: the length decides truth
      } else {
        UseConst(v);
      }
      int t = PyObject_IsTrue(o);
      if (t < 0) {
        PyErr_Clear();
        Fail(BreakCategory::kPythonError, "truth value raises");
        return false;
      }
      *out = t != 0;
      return true;
    }
    default:
      Fail(BreakCategory::kUnsupportedOperator, "truth value of a value unknown at capture time");
      return false;
  }
}

bool Interp::GetItemInPython(Frame& f, const Value& c, const Value& index, Value* out,
                             bool* inlined) {
  *inlined = false;
  if (c.kind != Value::kConst || c.source < 0 || PyType_Check(c.obj)) return false;
  static PyObject* const name = PyUnicode_InternFromString("__getitem__");
  PyObject* fn = _PyType_Lookup(Py_TYPE(c.obj), name);
  if (!fn || !PyFunction_Check(fn)) return false;
  *inlined = true;
  Value method;  // type(obj).__getitem__, guarded by identity: another class reads afresh
  if (!values_.FromSource(gp().AddSource(guards::Source::kTypeAttr, c.source, -1, name), fn, &method)) return false;
  UseConst(method);
  return Inline(f, reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(fn)), fn, method.source,
                nullptr, {c, index}, {}, out);
}

bool Interp::Subscript(const Value& c, const Value& index, Value* out) {
  if (const Value* model = ShadowDict(c)) {
    // An input dict the trace has mutated: its items as the trace left them.
    bool found;
    if (!DictGet(*model, index, out, &found)) return false;
    if (!found) {
      Fail(BreakCategory::kPythonError, "KeyError: the key is not in the dict",
           "the call runs eagerly, where Python raises the KeyError");
    }
    return found;
  }
  if (!FailIfMutated(c)) return false;
  if (c.kind == Value::kTensor) {
    PyOp op;
    // A subclass (Parameter) that keeps Tensor's __getitem__ indexes as a tensor does.
    auto subscript_of = [](PyTypeObject* t) {
      return t->tp_as_mapping ? t->tp_as_mapping->mp_subscript : nullptr;
    };
    if (c.type != g_tensor_type && subscript_of(c.type) != subscript_of(g_tensor_type)) {
      Fail(BreakCategory::kUnsupportedOperator, absl::StrFormat("indexing a %s", c.type->tp_name));
      return false;
    }
    if (PyOpByName("__getitem__", &op)) return ops_.Call(op, {c, index}, {}, out);
    Fail(BreakCategory::kUnsupportedOperator, "tensor indexing is not captured yet");
    return false;
  }
  if (c.kind == Value::kDict) {
    bool found;
    if (!DictGet(c, index, out, &found)) return false;
    if (!found) Fail(BreakCategory::kPythonError, "KeyError: the key is not in the dict");
    return found;
  }
  PyObject* key = AsPyObject(index);
  if (c.kind == Value::kSeq && key) {
    UseConst(index);
    const Py_ssize_t n = static_cast<Py_ssize_t>(c.items->size());
    if (PyLong_CheckExact(key)) {
      Py_ssize_t i = PyLong_AsSsize_t(key);
      if (i < 0) i += n;
      if (i < 0 || i >= n) {
        Fail(BreakCategory::kPythonError, "index out of range");
        return false;
      }
      *out = (*c.items)[i];
      return true;
    }
    if (PySlice_Check(key)) {
      Py_ssize_t start, stop, step;
      if (PySlice_Unpack(key, &start, &stop, &step) < 0) {
        PyErr_Clear();
        Fail(BreakCategory::kPythonError, "bad slice");
        return false;
      }
      Py_ssize_t len = PySlice_AdjustIndices(n, &start, &stop, step);
      ValueList items;
      for (Py_ssize_t k = 0, i = start; k < len; ++k, i += step) items.push_back((*c.items)[i]);
      *out = Value::Seq(std::move(items), c.is_list);
      return true;
    }
  }
  PyObject* obj = AsPyObject(c);
  if (obj && key && c.source >= 0 && IsPlainValue(key) &&
      ((PyList_CheckExact(obj) && PyLong_CheckExact(key)) || PyDict_CheckExact(obj))) {
    // An item of a mutable container from the inputs: guard the item itself, at its own
    // source, since the container may change between calls.
    UseConst(index);
    PyObject* item;
    guards::Source::Kind kind;
    int32_t idx = -1;
    if (PyList_CheckExact(obj)) {
      Py_ssize_t i = PyLong_AsSsize_t(key);
      if (i < 0) i += PyList_GET_SIZE(obj);
      if (i < 0 || i >= PyList_GET_SIZE(obj)) {
        Fail(BreakCategory::kPythonError, "list index out of range");
        return false;
      }
      gp().GuardType(c.source, obj);  // length: negative indices resolve the same way
      item = PyList_GET_ITEM(obj, i);
      kind = guards::Source::kItem;
      idx = static_cast<int32_t>(i);
    } else {
      item = PyDict_GetItemWithError(obj, key);
      if (!item) {
        PyErr_Clear();
        Fail(BreakCategory::kPythonError, "KeyError: the key is not in the dict");
        return false;
      }
      kind = guards::Source::kDictItem;
    }
    Py_INCREF(item);
    values_.Keep(item);
    return values_.FromSource(gp().AddSource(kind, c.source, idx, kind == guards::Source::kDictItem ? key : nullptr),
                      item, out);
  }
  if (obj && key && (PyTuple_CheckExact(obj) || PyUnicode_CheckExact(obj) ||
                     (c.source < 0 && (PyList_CheckExact(obj) || PyDict_CheckExact(obj)))) &&
      (IsPlainValue(key) || PySlice_Check(key))) {
    UseConst(c);
    UseConst(index);
    PyObject* r = PyObject_GetItem(obj, key);
    if (!r) {
      PyErr_Clear();
      Fail(BreakCategory::kPythonError, "the subscript raises");
      return false;
    }
    values_.Keep(r);
    if (c.source >= 0 && PyTuple_CheckExact(obj) && PyLong_CheckExact(key)) {
      // An item of an input tuple keeps a source of its own: a Cell or function in it can
      // be inlined, and its attributes read, as one reached by attribute can.
      Py_ssize_t i = PyLong_AsSsize_t(key);
      if (i < 0) i += PyTuple_GET_SIZE(obj);
      return values_.FromSource(gp().AddSource(guards::Source::kItem, c.source, static_cast<int32_t>(i)),
                        r, out);
    }
    *out = Value::Const(r);
    return true;
  }
  Fail(BreakCategory::kUnsupportedOperator, "subscript of a value unknown at capture time");
  return false;
}

}  // namespace pijit::bytecode
