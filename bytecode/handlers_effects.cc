// Side effects on objects from outside the trace: attribute stores and deletions on plain
// objects, stores to and deletions of the function's globals, stores into closure cells,
// item stores and deletions on input dicts (and their mutating methods, handlers_dict.cc),
// appends (extend, insert) to input lists and deletions of their items. Each is recorded
// (target, name, value) and replayed in order after the graph runs
// (runtime/continuation.cc, ReplayEffects), or before the instruction of a graph break.
// Later reads in the trace see the trace's state: stored attributes, globals and cells, a
// deleted attribute or global as missing (a read that would raise breaks the graph, and Python
// raises), an input dict through its model. A list with pending appends is not otherwise read
// again (except its length, once a deletion has guarded it): such a read breaks the graph,
// where the effects have been replayed.
#include "absl/strings/str_format.h"
#include "bytecode/interp.h"
#include "guards/guards.h"
#include "interop/convert.h"

namespace pijit::bytecode {

using guards::Source;

namespace {

// Why attribute `name` of `obj` is not a plain entry of its instance dict, which a recorded
// store or deletion replays exactly (`by_code`: there is a __setattr__ or the object is a
// class, module or tensor), or null when it is one: no data descriptor (property, slot).
const char* NotInInstanceDict(PyObject* obj, PyObject* name, const char* by_code) {
  PyTypeObject* tp = Py_TYPE(obj);
  if (PyType_Check(obj) || PyModule_Check(obj) || tp->tp_setattro != PyObject_GenericSetAttr ||
      !_PyObject_GetDictPtr(obj) || PyObject_TypeCheck(obj, g_tensor_type)) {
    return by_code;
  }
  PyObject* descr = _PyType_Lookup(tp, name);
  if (descr && Py_TYPE(descr)->tp_descr_set) return "through a descriptor";
  return nullptr;
}

}  // namespace

PyObject* FreeCell(const Frame& f, int slot) {
  const int first_free = f.code->co_nlocalsplus - f.code->co_nfreevars;
  if (slot < first_free || !f.func) return nullptr;
  PyObject* closure = PyFunction_GET_CLOSURE(f.func);
  if (!closure || slot - first_free >= PyTuple_GET_SIZE(closure)) return nullptr;
  return PyTuple_GET_ITEM(closure, slot - first_free);
}

bool Interp::FailIfMutated(const Value& v) {
  if (!effects_.Mutated(v)) {
    // A list or dict from the inputs read after effects on another one: its identity, so that
    // a later call passing the mutated object here too does not read the state before them.
    if (effects_.AnyMutated() && v.kind == Value::kConst && v.source >= 0 &&
        (PyList_CheckExact(v.obj) || PyDict_CheckExact(v.obj))) {
      gp().GuardValue(v.source, v.obj);
    }
    return true;
  }
  Fail(BreakCategory::kSideEffect, "a read of an object the trace has mutated",
       "the graph breaks here; the recorded mutations run first");
  return false;
}

bool Interp::StoreAttr(const Value& owner, PyObject* name, const Value& value) {
  auto refuse = [&](const char* why) {
    if (!failed()) Fail(BreakCategory::kSideEffect, absl::StrFormat("attribute store: %s", why),
                        "the graph breaks here; the store runs in Python");
    return false;
  };
  if (owner.kind == Value::kObject) return StoreObjectAttr(owner, name, value);
  if (gen_depth_ > 0) return refuse("inside a generator run ahead of its consumer");
  if (owner.kind != Value::kConst || owner.source < 0) return refuse("on a value made in the trace");
  if (!ImmutableValue(value)) return refuse("of a mutable container");
  PyObject* obj = owner.obj;
  if (const char* why = NotInInstanceDict(obj, name, "on an object whose attributes are set by code"))
    return refuse(why);
  gp().GuardType(owner.source, obj);
  UseConst(owner);  // the object itself (attribute reads guard it the same way)
  effects_.SetAttr(owner, name, value);
  return true;
}

bool Interp::StoreGlobal(Frame& f, PyObject* name, const Value& value) {
  if (gen_depth_ > 0 || f.depth > 0 || !ImmutableValue(value)) {
    Fail(BreakCategory::kSideEffect, "a global store the trace does not replay",
         "the graph breaks here; the store runs in Python");
    return false;
  }
  PyObject* globals = PyFunction_GET_GLOBALS(root_func_);
  effects_.SetGlobal(globals, name, value);
  return true;
}

bool Interp::AppendEffect(const Value& list, const Value& value) {
  if (gen_depth_ > 0 || !ImmutableValue(value)) {
    Fail(BreakCategory::kSideEffect, "an append the trace does not replay",
         "the graph breaks here; the append runs in Python");
    return false;
  }
  effects_.Append(list, value);
  return true;
}

bool Interp::ExtendEffect(const Value& list, const Value& items) {
  // A sequence known whole at capture time (not a generator, which would run interleaved
  // with the appends, nor a list with pending appends, which GetIter refuses).
  const bool seq = items.kind == Value::kSeq ||
                   (items.kind == Value::kConst &&
                    (PyTuple_CheckExact(items.obj) || PyList_CheckExact(items.obj)));
  Value it;
  if (gen_depth_ > 0 || !seq) {
    Fail(BreakCategory::kSideEffect, "an extend the trace does not replay",
         "the graph breaks here; the extend runs in Python");
    return false;
  }
  if (!GetIter(items, &it)) return false;
  for (const Value& v : *it.items) {
    if (!ImmutableValue(v)) {
      Fail(BreakCategory::kSideEffect, "an extend the trace does not replay",
           "the graph breaks here; the extend runs in Python");
      return false;
    }
  }
  effects_.Extend(list, *it.items);
  return true;
}

bool Interp::InsertEffect(const Value& list, const Value& index, const Value& value) {
  bool plain_index = index.kind == Value::kConst && PyLong_CheckExact(index.obj);
  if (plain_index && PyLong_AsSsize_t(index.obj) == -1 && PyErr_Occurred()) {
    PyErr_Clear();  // too large: Python raises, at its own time
    plain_index = false;
  }
  if (gen_depth_ > 0 || !plain_index || !ImmutableValue(value)) {
    Fail(BreakCategory::kSideEffect, "an insert the trace does not replay",
         "the graph breaks here; the insert runs in Python");
    return false;
  }
  UseConst(index);
  effects_.Insert(list, index.obj, value);
  return true;
}

bool Interp::StoreSubscr(Frame& f) {
  // container[key] = value with the container at TOS1. Writing into a tensor mutates its
  // storage, which views and the caller see: the graph breaks and Python does the write.
  const size_t n = f.stack.size();
  if (n >= 3 && SetItemEffect(f.stack[n - 2], f.stack[n - 1], f.stack[n - 3])) {
    f.stack.resize(n - 3);  // an item of an input dict: recorded
    return true;
  }
  if (failed()) return false;
  if (n >= 3 && StoreIntoBuiltContainer(f.stack[n - 2], f.stack[n - 1], f.stack[n - 3])) {
    f.stack.resize(n - 3);  // a list or dict made during capture: changed in the trace
    return true;
  }
  if (failed()) return false;
  if (n >= 3 && f.stack[n - 2].kind == Value::kTensor) {
    Fail(BreakCategory::kTensorMutation, "assignment into a tensor (t[index] = value) writes in place",
         "the graph breaks here; the assignment runs in Python and later code sees its result");
  } else {
    Fail(BreakCategory::kUnsupportedBytecode, "STORE_SUBSCR is not captured yet",
         "this function runs eagerly; graph breaks will split it around such code");
  }
  return false;
}

bool Interp::StoreIntoBuiltContainer(Value& container, const Value& key, const Value& value) {
  // Containers made during capture live only in the trace: the store is the new state of
  // the value itself, seen by every alias, as in Python.
  const bool dict = container.kind == Value::kDict;
  if (!dict && (container.kind != Value::kSeq || !container.is_list || container.source >= 0)) {
    return false;  // an input list's stores are not replayed: the graph breaks
  }
  // A loop (or a dict view) over it may be running: Python would see the store, the trace's
  // copy of the items would not.
  if (effects_.ItemsViewed(container.items.get())) return false;
  if (dict) return DictSet(container, key, value);
  if (key.kind != Value::kConst || !PyLong_CheckExact(key.obj)) return false;  // slices: Python
  Py_ssize_t i = PyLong_AsSsize_t(key.obj);
  const Py_ssize_t size = static_cast<Py_ssize_t>(container.items->size());
  if (i < 0) i += size;
  if (i < 0 || i >= size) {
    if (PyErr_Occurred()) PyErr_Clear();
    Fail(BreakCategory::kPythonError, "list assignment index out of range",
         "the function runs eagerly and raises the error there");
    return false;
  }
  UseConst(key);
  (*container.items)[static_cast<size_t>(i)] = value;
  return true;
}

bool Interp::DeleteSubscr(Frame& f) {
  // del container[key], the key at TOS: an input dict's item or an input list's item by an
  // int index is recorded; anything else breaks.
  const size_t n = f.stack.size();
  if (n >= 2 && DelItemEffect(f.stack[n - 2], f.stack[n - 1])) {
    f.stack.resize(n - 2);
    return true;
  }
  if (failed()) return false;
  Fail(BreakCategory::kUnsupportedBytecode, "a deletion (del x[k]) the trace does not replay",
       "the graph breaks here; the deletion runs in Python");
  return false;
}

bool Interp::SetItemEffect(const Value& dict, const Value& key, const Value& value) {
  // An exact dict from the inputs (not a module's globals, whose reads go elsewhere, nor one
  // whose views the trace has taken), a plain key and a value that stays what it is: the
  // store goes into the dict's model (handlers_dict.cc). Otherwise the caller breaks.
  if (gen_depth_ > 0 || dict.kind != Value::kConst || dict.source < 0 ||
      !PyDict_CheckExact(dict.obj) || effects_.DictViewed(dict.obj) ||
      key.kind != Value::kConst || effects_.Mutated(key) || !guards::IsPlainValue(key.obj) ||
      !ImmutableValue(value)) {
    return false;
  }
  Value* model = MakeShadowDict(dict);
  if (!model || !DictSet(*model, key, value)) return false;
  effects_.MutateDict(Effect::kSetItem, dict, key.obj, value);
  return true;
}

bool Interp::DelItemEffect(const Value& c, const Value& key) {
  if (gen_depth_ > 0 || c.kind != Value::kConst || c.source < 0 || key.kind != Value::kConst ||
      effects_.Mutated(key)) {
    return false;
  }
  if (PyDict_CheckExact(c.obj)) {
    if (effects_.DictViewed(c.obj) || !guards::IsPlainValue(key.obj)) return false;
    Value* model = MakeShadowDict(c);
    if (!model) return false;
    Value removed;
    bool found = false;
    if (!DictDel(*model, key, &removed, &found)) return false;
    if (!found) {
      Fail(BreakCategory::kPythonError, "KeyError: deleting a key the dict does not have",
           "the call runs eagerly, where Python raises the KeyError");
      return false;
    }
    effects_.MutateDict(Effect::kDelItem, c, key.obj, Value::Const(Py_None));
    return true;
  }
  if (!PyList_CheckExact(c.obj) || !PyLong_CheckExact(key.obj)) return false;
  const Py_ssize_t i = PyLong_AsSsize_t(key.obj);
  if (i == -1 && PyErr_Occurred()) {
    PyErr_Clear();  // too large: Python raises, at its own time
    return false;
  }
  Py_ssize_t n;
  if (!ListLength(c, &n)) {
    // Its identity (as for appends) and its length on entry: the index must stay valid.
    // The effects recorded so far (none has run yet) change that length.
    gp().GuardValue(c.source, c.obj);
    gp().GuardType(c.source, c.obj);
    n = effects_.LengthAfterEffects(c.obj, PyList_GET_SIZE(c.obj));
  }
  if (i < -n || i >= n) {
    Fail(BreakCategory::kPythonError, "IndexError: deleting a list item out of range",
         "the call runs eagerly, where Python raises the IndexError");
    return false;
  }
  UseConst(key);
  effects_.DelListItem(c, key.obj, n - 1);
  return true;
}

bool Interp::ListLength(const Value& v, Py_ssize_t* n) {
  if (v.kind != Value::kConst || v.source < 0 || !effects_.KnownListLength(v.obj, n)) return false;
  gp().GuardValue(v.source, v.obj);  // as ShadowDict: an alias stays the same list
  return true;
}

bool Interp::DeleteAttr(const Value& owner, PyObject* name) {
  auto refuse = [&](const char* why) {
    if (!failed()) Fail(BreakCategory::kSideEffect, absl::StrFormat("attribute deletion: %s", why),
                        "the graph breaks here; the deletion runs in Python");
    return false;
  };
  if (gen_depth_ > 0) return refuse("inside a generator run ahead of its consumer");
  if (owner.kind != Value::kConst || owner.source < 0) return refuse("on a value made in the trace");
  PyObject* obj = owner.obj;
  if (const char* why = NotInInstanceDict(obj, name, "on an object whose attributes are deleted by code"))
    return refuse(why);
  const Value* p = effects_.PendingAttr(obj, name);
  if (p && p->kind == Value::kUndef) {
    Fail(BreakCategory::kPythonError, "AttributeError: the attribute was deleted earlier",
         "the call runs eagerly, where Python raises the AttributeError");
    return false;
  }
  if (!p) {
    // It is in the instance dict now; its source resolves only while it is there, so a call
    // without it fails the guards and is captured (and raises) afresh.
    PyObject* d = PyObject_GenericGetDict(obj, nullptr);
    PyObject* v = d ? PyDict_GetItemWithError(d, name) : nullptr;
    Py_XDECREF(d);
    if (!v) {
      PyErr_Clear();
      Fail(BreakCategory::kPythonError, "AttributeError: deleting an attribute the object does not have",
           "the call runs eagerly, where Python raises the AttributeError");
      return false;
    }
    gp().AddSource(Source::kAttr, owner.source, -1, name);
  }
  gp().GuardType(owner.source, obj);
  UseConst(owner);
  effects_.DelAttr(owner, name);
  return true;
}

bool Interp::DeleteGlobal(Frame& f, PyObject* name) {
  if (gen_depth_ > 0 || f.depth > 0) {
    Fail(BreakCategory::kSideEffect, "a global deletion the trace does not replay",
         "the graph breaks here; the deletion runs in Python");
    return false;
  }
  PyObject* globals = PyFunction_GET_GLOBALS(root_func_);
  const Value* p = effects_.PendingGlobal(globals, name);
  const bool absent = p ? p->kind == Value::kUndef : !PyDict_GetItemWithError(globals, name);
  if (absent) {
    PyErr_Clear();
    Fail(BreakCategory::kPythonError, absl::StrFormat("NameError: name '%s' is not defined",
                                         PyUnicode_AsUTF8(name)),
         "the call runs eagerly, where Python raises the NameError");
    return false;
  }
  if (!p) gp().AddSource(Source::kGlobal, -1, -1, name);  // resolves only while it exists
  effects_.DelGlobal(globals, name);
  return true;
}

bool Interp::StoreCellEffect(Frame& f, int slot, const Value& value) {
  PyObject* cell = FreeCell(f, slot);
  const bool root = f.depth == 0 && f.func == root_func_;
  if (gen_depth_ > 0 || !cell || (!root && f.func_source < 0) || !ImmutableValue(value)) {
    Fail(BreakCategory::kSideEffect, "a store to a closure variable the trace does not replay",
         "the graph breaks here; the store runs in Python");
    return false;
  }
  // The cell is found again on every call from the function (its closure may be another
  // one each time the enclosing function runs): the function, then the cell's index.
  const int first_free = f.code->co_nlocalsplus - f.code->co_nfreevars;
  Value target = root ? Value::Null() : Value::Const(f.func, f.func_source);
  effects_.SetCell(cell, target, values_.Keep(PyLong_FromLong(slot - first_free)), value);
  return true;
}

bool Interp::MakeEffects(size_t count) {
  for (size_t i = 0; i < count; ++i) {
    const EffectRecorder::Record& r = effects_.records()[i];
    Effect e;
    e.kind = r.kind;
    if (r.kind == Effect::kCall) {
      e.target.kind = OutputSpec::kConstant;  // the callable itself
      e.target.constant = r.target.obj;
      Py_INCREF(r.target.obj);
    } else if (r.target.kind == Value::kNull) {
      e.target.kind = OutputSpec::kNull;  // kSetCell: the called function
    } else if (r.kind != Effect::kSetGlobal && r.kind != Effect::kDelGlobal) {
      e.target.kind = OutputSpec::kSource;
      e.target.index = r.target.source;
    }
    if (r.name) {
      e.name.constant = r.name;
      Py_INCREF(r.name);
    }
    if (!MakeOutput(r.value, &e.value)) return false;
    out_->effects.push_back(std::move(e));
  }
  return true;
}

}  // namespace pijit::bytecode
