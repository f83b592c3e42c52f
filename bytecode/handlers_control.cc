// Iteration: GET_ITER/FOR_ITER follow loops over values known at capture time, unrolled.
#include "absl/strings/str_format.h"
#include "bytecode/interp.h"
#include "guards/guards.h"
#include "interop/convert.h"

namespace pijit::bytecode {

using guards::Source;

constexpr Py_ssize_t kMaxUnroll = 4096;
// A loop over a tensor unrolls into one index node per row: beyond this many, it breaks.
constexpr int64_t kMaxTensorRows = 256;

bool Interp::GetIter(const Value& v, Value* out) {
  auto make = [&](ValueList items) {
    out->kind = Value::kIter;
    out->items = std::make_shared<ValueList>(std::move(items));
    return true;
  };
  switch (v.kind) {
    case Value::kIter: {
      if (v.view) {  // a dict view: each iteration is a fresh iterator over it (opaque too)
        make(*v.items);
        out->opaque = true;
        return true;
      }
      // An iterator is its own iterator: the consumer takes what is left, and so exhausts it.
      ValueList rest = *v.items;
      if (!TakeItems(v, rest.size()) || !ExhaustIter(v)) return false;
      return make(std::move(rest));
    }
    case Value::kSeq:
      return make(*v.items);
    case Value::kDict: {
      effects_.ViewItems(v.items);  // no mutating method while the loop may run
      ValueList keys;
      for (PyObject* k : *v.keys) keys.push_back(Value::Const(k));
      return make(std::move(keys));
    }
    case Value::kGenerator:
      // Every consumer that reaches here takes all items (tuple, list, sum, sorted, *args,
      // unpacking, a `for` loop); the generator's items carry no effects (gen_depth_).
      return RunGenerator(v, false, out);
    case Value::kTensor: {
      // Its rows along the first axis, unrolled: the axis's length is part of the shape the
      // graph is specialised to.
      NoteShapeRead();
      const Shape shape = g().node(v.node).meta.shape;  // a copy: the calls below add nodes
      if (shape.empty()) {
        Fail(BreakCategory::kPythonError, "iteration over a 0-d tensor",
             "the function runs eagerly and raises the TypeError there");
        return false;
      }
      if (shape[0] > kMaxTensorRows) {
        Fail(BreakCategory::kTooLong,
             absl::StrFormat("a loop over the %d rows of a tensor is not unrolled", shape[0]),
             "index the rows inside the loop body, or use a tensor op over the axis");
        return false;
      }
      PyOp getitem;
      if (!PyOpByName("__getitem__", &getitem)) return false;
      ValueList rows;
      for (int64_t i = 0; i < shape[0]; ++i) {
        Value row;
        if (!ops_.Call(getitem, {v, Value::Const(values_.Keep(PyLong_FromLongLong(i)))}, {}, &row))
          return false;
        rows.push_back(std::move(row));
      }
      return make(std::move(rows));
    }
    case Value::kConst:
      if (const Value* model = ShadowDict(v)) {
        // An input dict the trace mutates: its keys now. A mutation while the loop runs
        // raises in Python, so none is recorded from here on (and the iterator stays
        // inside the trace: a break cannot hand Python a copy of it).
        effects_.ViewDict(v.obj);
        ValueList keys;
        for (PyObject* k : *model->keys) keys.push_back(Value::Const(k));
        make(std::move(keys));
        out->opaque = true;
        return true;
      }
      if (!FailIfMutated(v)) return false;
      if (v.source >= 0 && PyDict_CheckExact(v.obj)) return IterInputDict(v, out);
      break;
    default:
      Fail(BreakCategory::kUnsupportedOperator, "iterating over a value unknown at capture time");
      return false;
  }
  PyObject* o = v.obj;
  ValueList items;
  if (PyTuple_CheckExact(o) || PyList_CheckExact(o)) {
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
    if (n > kMaxUnroll) {
      Fail(BreakCategory::kTooLong, absl::StrFormat("a loop over %d items is not unrolled", n));
      return false;
    }
    if (v.source >= 0) {
      // Contents of a guarded container: its type and length, and each item at its source.
      gp().GuardType(v.source, o);
      for (Py_ssize_t i = 0; i < n; ++i) {
        Value item;
        if (!values_.FromSource(gp().AddSource(Source::kItem, v.source, static_cast<int32_t>(i)),
                        PySequence_Fast_ITEMS(o)[i], &item)) {
          return false;
        }
        items.push_back(std::move(item));
      }
    } else {
      for (Py_ssize_t i = 0; i < n; ++i) items.push_back(Value::Const(PySequence_Fast_ITEMS(o)[i]));
    }
    return make(std::move(items));
  }
  if (PyRange_Check(o) || PyUnicode_CheckExact(o) || (PyDict_CheckExact(o) && v.source < 0)) {
    UseConst(v);
    Py_ssize_t n = PyObject_Length(o);
    if (n < 0 || n > kMaxUnroll) {
      PyErr_Clear();
      Fail(BreakCategory::kTooLong, absl::StrFormat("a loop over %d items is not unrolled", n));
      return false;
    }
    return ItemsOfConstant(o, &items) && make(std::move(items));
  }
  if (IsNumpyArray(o) && std::string_view(Py_TYPE(o)->tp_name) == "numpy.ndarray") {
    if (!IterConstantArray(v, &items)) return false;
    make(std::move(items));
    // Python's iterator reads the array as it goes: a store into it while the loop runs
    // would be seen there but not in the items read here, so the iterator cannot be handed
    // to Python at a break (the call then runs eagerly).
    out->opaque = true;
    return true;
  }
  Fail(BreakCategory::kUnsupportedOperator, absl::StrFormat("iterating over a %s", Py_TYPE(o)->tp_name));
  return false;
}

bool Interp::IterConstantArray(const Value& v, ValueList* items) {
  // A NumPy array the function reads but does not write (FailIfMutated above): its items
  // (NumPy scalars, or rows as arrays) are constants of the trace. An input array is guarded
  // by its contents, since the same array may hold other values on the next call.
  PyObject* o = v.obj;
  if (v.source >= 0 && !gp().GuardArrayContents(v.source, o)) {
    Fail(BreakCategory::kTooLong,
         absl::StrFormat("iterating over a NumPy array of over %d bytes (or not contiguous), "
                         "which is not guarded by value", guards::kMaxArrayGuardBytes),
         "convert it to a Tensor and loop over rows with tensor ops");
    return false;
  }
  // Rows of an n-d array are views: a store through one changes the array, which constant
  // rows would not. Only 1-d arrays, whose items are immutable NumPy scalars, are unrolled.
  PyObject* ndim = PyObject_GetAttrString(o, "ndim");
  const long nd = ndim ? PyLong_AsLong(ndim) : -1;
  Py_XDECREF(ndim);
  if (nd > 1) {
    Fail(BreakCategory::kUnsupportedOperator, "iterating over the rows of a NumPy array (views of it)",
         "the loop runs in Python; convert the array with Tensor(...) and loop over the tensor");
    return false;
  }
  const Py_ssize_t n = PyObject_Length(o);
  if (n < 0) {
    PyErr_Clear();
    Fail(BreakCategory::kPythonError, "iteration over a 0-d array",
         "the function runs eagerly and raises the TypeError there");
    return false;
  }
  if (n > kMaxUnroll) {
    Fail(BreakCategory::kTooLong, absl::StrFormat("a loop over %d items is not unrolled", n));
    return false;
  }
  return ItemsOfConstant(o, items);
}

bool Interp::ItemsOfConstant(PyObject* o, ValueList* items) {
  PyObject* it = PyObject_GetIter(o);
  while (PyObject* x = it ? PyIter_Next(it) : nullptr) items->push_back(Value::Const(values_.Keep(x)));
  Py_XDECREF(it);
  if (PyErr_Occurred()) {
    PyErr_Clear();
    Fail(BreakCategory::kPythonError, "iteration raises");
    return false;
  }
  return true;
}

bool Interp::SourceInStep(const Value& it, size_t j) {
  if (it.link->sources[j].items->size() == it.link->remaining[j]) return true;
  Fail(BreakCategory::kUnsupportedOperator,
       "an iterator advanced both directly and through a zip or enumerate over it",
       "the loop runs in Python");
  return false;
}

bool Interp::TakeItems(const Value& it, size_t n) {
  if (n == 0) return true;
  if (it.link) {
    IterLink& link = *it.link;
    for (size_t j = 0; j < link.sources.size(); ++j) {
      const Value& src = link.sources[j];
      if (!SourceInStep(it, j) || !TakeItems(src, n)) return false;
      link.remaining[j] -= n;
    }
  }
  it.items->erase(it.items->begin(), it.items->begin() + static_cast<std::ptrdiff_t>(n));
  return true;
}

bool Interp::ExhaustIter(const Value& it) {
  if (!it.link) return true;
  // As zip's __next__: the sources are asked in order, and the first empty one stops it.
  IterLink& link = *it.link;
  for (size_t j = 0; j < link.sources.size(); ++j) {
    const Value& src = link.sources[j];
    if (!SourceInStep(it, j)) return false;
    if (link.remaining[j] == 0) return ExhaustIter(src);
    if (!TakeItems(src, 1)) return false;
    --link.remaining[j];
  }
  return true;
}

bool Interp::MakeDerivedIter(const ValueList& args, ValueList rows, Value* out) {
  out->kind = Value::kIter;
  out->items = std::make_shared<ValueList>(std::move(rows));
  for (const Value& a : args) {
    if (a.kind != Value::kIter || a.view) continue;
    if (!out->link) out->link = std::make_shared<IterLink>();
    out->link->sources.push_back(a);
    out->link->remaining.push_back(a.items->size());
  }
  return true;
}

bool Interp::IterInputDict(const Value& v, Value* out) {
  // An input dict the trace has not mutated: its keys, guarded in their order. A loop over
  // them may break; Python then continues with the dict's own iterator, advanced past the
  // keys taken (a mutation inside the loop raises there as it would eagerly). GET_ITER marks
  // the dict viewed, so the trace records no mutation of it while the loop may run.
  const Py_ssize_t n = PyDict_GET_SIZE(v.obj);
  if (n > 256) {
    Fail(BreakCategory::kTooLong, absl::StrFormat("a loop over a dict of %d items is not unrolled", n));
    return false;
  }
  ValueList keys;
  PyObject *k, *item;
  Py_ssize_t pos = 0;
  while (PyDict_Next(v.obj, &pos, &k, &item)) {
    if (!PyUnicode_CheckExact(k) && !PyLong_CheckExact(k)) {
      Fail(BreakCategory::kUnsupportedOperator, "iterating over a dict with keys that are not str or int");
      return false;
    }
    Py_INCREF(k);
    keys.push_back(Value::Const(values_.Keep(k)));
  }
  gp().GuardType(v.source, v.obj);
  gp().GuardDictKeys(v.source, v.obj);
  out->kind = Value::kIter;
  out->items = std::make_shared<ValueList>(std::move(keys));
  out->iter_dict = v.source;
  out->iter_total = n;
  return true;
}

bool Interp::StepGetIter(Frame& f) {
  Value a;
  if (!Pop(f, &a)) return false;
  if (a.kind == Value::kTensorRange) {  // its own iterator: FOR_ITER makes the loop a loop node
    f.stack.push_back(std::move(a));
    return true;
  }
  Value it;
  if (!IterOf(f, a, &it)) return false;
  f.stack.push_back(std::move(it));
  return true;
}

bool Interp::IterOf(Frame& f, const Value& a, Value* out) {
  if (a.kind == Value::kGenerator && a.gen->lazy == GenState::kNotLazy &&
      (!a.gen->started || a.gen->frame || a.gen->exhausted)) {
    // A generator is its own iterator: a loop steps it an item at a time (StepForIter), so
    // the loop body runs between its items as in Python.
    *out = a;
    return true;
  }
  if (TakesFromGenerator(a)) {
    // Capture runs a generator to its end before its consumer; a loop (or comprehension)
    // body runs between its items in Python and could change what the generator reads next.
    Fail(BreakCategory::kUnsupportedCall, "a loop over a generator",
         "the loop runs in Python; list(generator) or a generator consumed by sum(), tuple() "
         "or unpacking is captured");
    return false;
  }
  if (a.kind == Value::kIter && !a.view) {  // iter(it) is it: the loop shares its state
    *out = a;
    return true;
  }
  if (a.kind == Value::kGenerator && GeneratorTakesSharedIterator(a)) return false;
  // An object whose class defines __iter__ in Python (a CellList, a user iterable): that
  // __iter__ inlined, and the iterator of the trace it returns.
  static PyObject* iter_name = PyUnicode_InternFromString("__iter__");
  PyObject* iter_fn = a.kind == Value::kConst && a.source >= 0 && !PyType_Check(a.obj)
                          ? _PyType_Lookup(Py_TYPE(a.obj), iter_name) : nullptr;
  if (iter_fn && PyFunction_Check(iter_fn)) {
    Value fn;
    if (!values_.FromSource(gp().AddSource(Source::kTypeAttr, a.source, -1, iter_name), iter_fn, &fn)) {
      return false;
    }
    UseConst(fn);
    gp().GuardType(a.source, a.obj);
    Value result;
    if (!Call(f, fn, {a}, &result)) return false;
    if (result.kind != Value::kIter) {
      Fail(BreakCategory::kUnsupportedOperator, "__iter__ returned an iterator capture does not model",
           "the loop runs in Python");
      return false;
    }
    *out = std::move(result);
    return true;
  }
  Value it;
  if (!GetIter(a, &it)) return false;
  // A loop over a list made during capture iterates a copy of its items: no change to the
  // list may follow in the trace (Python's loop would see it), and a break hands Python the
  // list's own iterator.
  if (a.kind == Value::kSeq && a.is_list) {
    effects_.ViewItems(a.items);
    it.iter_list = a.items;
    it.iter_list_source = a.source;
    it.iter_total = static_cast<Py_ssize_t>(a.items->size());
  }
  // A loop over an input dict: a mutation of it while the loop may run raises in Python, so
  // none is recorded from here on (IterInputDict).
  if (it.iter_dict >= 0) effects_.ViewDict(a.obj);
  *out = std::move(it);
  return true;
}

bool Interp::StepForIter(Frame& f, int32_t target, size_t* next) {
  if (!f.stack.empty() && f.stack.back().kind == Value::kConst) {
    // An iterator made outside the trace (a resume function's argument): taking an item is a
    // side effect, so the loop head is a graph break that runs in Python.
    Fail(BreakCategory::kUnsupportedBytecode, "FOR_ITER over an iterator made outside the trace",
         "the loop runs in Python; its body is still captured between breaks");
    return false;
  }
  if (!f.stack.empty() && f.stack.back().kind == Value::kGenerator) {
    const Value gen = f.stack.back();
    Value item;
    bool exhausted = false;
    if (!NextFromGenerator(f, gen, &item, &exhausted)) return false;
    if (exhausted) {
      f.stack.pop_back();
      *next = static_cast<size_t>(target);
    } else {
      f.stack.push_back(std::move(item));
    }
    return true;
  }
  if (f.stack.empty() || f.stack.back().kind != Value::kIter) {
    Fail(BreakCategory::kInternal, "FOR_ITER without an iterator");
    return false;
  }
  Value& it = f.stack.back();
  if (it.items->empty()) {
    const Value done = std::move(it);
    f.stack.pop_back();
    if (!ExhaustIter(done)) return false;
    *next = static_cast<size_t>(target);
    return true;
  }
  Value item = it.items->front();
  if (!TakeItems(it, 1)) return false;
  f.stack.push_back(std::move(item));
  return true;
}

}  // namespace pijit::bytecode
