// Side effects on objects from outside the trace: attribute stores on plain objects, stores
// to the function's globals, item stores into input dicts and appends (extend, insert) to
// input lists. Each is recorded (target, name, value) and replayed in order after the graph
// runs (pijit/csrc/graph_break.cc, ReplayEffects), or before the instruction of a graph break.
// Later reads in the trace see the stored value (attributes, globals, dict items by their key:
// other keys read the caller's items); a list with pending appends, or a dict with pending item
// stores, is not otherwise read again: such a read breaks the graph, where the effects have
// been replayed.
#include "absl/strings/str_format.h"
#include "bytecode/interp.h"
#include "guards/guards.h"
#include "pijit/csrc/convert.h"

namespace pijit::bytecode {

namespace {

// Values that stay what they were when stored: a list or dict built during capture could be
// mutated after the store, which the replay (from the state at the end) would not order.
bool Immutable(const Value& v) {
  if (v.kind == Value::kTensor || v.kind == Value::kConst) return true;
  if (v.kind != Value::kSeq || v.is_list) return false;
  for (const Value& item : *v.items)
    if (!Immutable(item)) return false;
  return true;
}

// The key of an item store as text ("s" + a str, "i" + an int); false for other keys, which
// could compare equal across types (True == 1 == 1.0) or run code to hash.
bool ItemKey(PyObject* key, std::string* out) {
  if (PyUnicode_CheckExact(key)) {
    const char* s = PyUnicode_AsUTF8(key);
    if (!s) {
      PyErr_Clear();
      return false;
    }
    *out = std::string("s") + s;
    return true;
  }
  if (PyLong_CheckExact(key)) {
    PyObject* r = PyObject_Repr(key);
    const char* s = r ? PyUnicode_AsUTF8(r) : nullptr;
    if (!s) {
      Py_XDECREF(r);
      PyErr_Clear();
      return false;
    }
    *out = std::string("i") + s;
    Py_DECREF(r);
    return true;
  }
  return false;
}

}  // namespace

bool Interp::Mutated(const Value& v) const {
  return v.kind == Value::kConst && !mutated_.empty() && mutated_.contains(v.obj);
}

bool Interp::FailIfMutated(const Value& v) {
  if (!Mutated(v)) {
    // A list or dict from the inputs read after effects on another one: its identity, so that
    // a later call passing the mutated object here too does not read the state before them.
    if (!mutated_.empty() && v.kind == Value::kConst && v.source >= 0 &&
        (PyList_CheckExact(v.obj) || PyDict_CheckExact(v.obj))) {
      gp().GuardValue(v.source, v.obj);
    }
    return true;
  }
  Fail("side_effect", "a read of an object the trace has mutated",
       "the graph breaks here; the recorded mutations run first");
  return false;
}

const Value* Interp::PendingAttr(PyObject* obj, PyObject* name) const {
  if (pending_.empty()) return nullptr;
  auto it = pending_.find(std::make_pair(obj, std::string(PyUnicode_AsUTF8(name))));
  return it == pending_.end() ? nullptr : &it->second;
}

const Value* Interp::PendingGlobal(PyObject* globals, PyObject* name) const {
  return PendingAttr(globals, name);
}

bool IsItemKey(PyObject* key) {
  std::string ignored;
  return ItemKey(key, &ignored);
}

const Value* Interp::PendingItem(PyObject* dict, PyObject* key) const {
  std::string k;
  if (pending_items_.empty() || !ItemKey(key, &k)) return nullptr;
  auto it = pending_items_.find(std::make_pair(dict, k));
  return it == pending_items_.end() ? nullptr : &it->second;
}

bool Interp::StoreAttr(const Value& owner, PyObject* name, const Value& value) {
  auto refuse = [&](const char* why) {
    if (!failed()) Fail("side_effect", absl::StrFormat("attribute store: %s", why),
                        "the graph breaks here; the store runs in Python");
    return false;
  };
  if (gen_depth_ > 0) return refuse("inside a generator run ahead of its consumer");
  if (owner.kind != Value::kConst || owner.source < 0) return refuse("on a value made in the trace");
  if (!Immutable(value)) return refuse("of a mutable container");
  PyObject* obj = owner.obj;
  PyTypeObject* tp = Py_TYPE(obj);
  // Only a plain instance dict store: no __setattr__, no data descriptor (property, slot).
  if (PyType_Check(obj) || PyModule_Check(obj) || tp->tp_setattro != PyObject_GenericSetAttr ||
      !_PyObject_GetDictPtr(obj) || PyObject_TypeCheck(obj, g_tensor_type)) {
    return refuse("on an object whose attributes are set by code");
  }
  PyObject* descr = _PyType_Lookup(tp, name);
  if (descr && Py_TYPE(descr)->tp_descr_set) return refuse("through a descriptor");
  gp().GuardType(owner.source, obj);
  UseConst(owner);  // the object itself (attribute reads guard it the same way)
  effects_.push_back({Effect::kSetAttr, owner, name, value});
  pending_[std::make_pair(obj, std::string(PyUnicode_AsUTF8(name)))] = value;
  return true;
}

bool Interp::StoreGlobal(Frame& f, PyObject* name, const Value& value) {
  if (gen_depth_ > 0 || f.depth > 0 || !Immutable(value)) {
    Fail("side_effect", "a global store the trace does not replay",
         "the graph breaks here; the store runs in Python");
    return false;
  }
  PyObject* globals = PyFunction_GET_GLOBALS(root_func_);
  effects_.push_back({Effect::kSetGlobal, Value(), name, value});
  pending_[std::make_pair(globals, std::string(PyUnicode_AsUTF8(name)))] = value;
  return true;
}

bool Interp::AppendEffect(const Value& list, const Value& value) {
  if (gen_depth_ > 0 || !Immutable(value)) {
    Fail("side_effect", "an append the trace does not replay",
         "the graph breaks here; the append runs in Python");
    return false;
  }
  effects_.push_back({Effect::kAppend, list, nullptr, value});
  mutated_.insert(list.obj);
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
    Fail("side_effect", "an extend the trace does not replay",
         "the graph breaks here; the extend runs in Python");
    return false;
  }
  if (!GetIter(items, &it)) return false;
  for (const Value& v : *it.items) {
    if (!Immutable(v)) {
      Fail("side_effect", "an extend the trace does not replay",
           "the graph breaks here; the extend runs in Python");
      return false;
    }
  }
  for (const Value& v : *it.items) effects_.push_back({Effect::kAppend, list, nullptr, v});
  mutated_.insert(list.obj);
  return true;
}

bool Interp::InsertEffect(const Value& list, const Value& index, const Value& value) {
  bool plain_index = index.kind == Value::kConst && PyLong_CheckExact(index.obj);
  if (plain_index && PyLong_AsSsize_t(index.obj) == -1 && PyErr_Occurred()) {
    PyErr_Clear();  // too large: Python raises, at its own time
    plain_index = false;
  }
  if (gen_depth_ > 0 || !plain_index || !Immutable(value)) {
    Fail("side_effect", "an insert the trace does not replay",
         "the graph breaks here; the insert runs in Python");
    return false;
  }
  UseConst(index);
  effects_.push_back({Effect::kInsert, list, index.obj, value});
  mutated_.insert(list.obj);
  return true;
}

bool Interp::SetItemEffect(const Value& dict, const Value& key, const Value& value) {
  // Only an exact dict from the inputs (not a module's globals, whose reads go elsewhere, nor
  // one whose views the trace has taken), a str or int key known at capture time and a value
  // that stays what it is. Otherwise the caller falls back to a graph break.
  if (gen_depth_ > 0 || dict.kind != Value::kConst || dict.source < 0 ||
      !PyDict_CheckExact(dict.obj) || viewed_dicts_.contains(dict.obj) ||
      key.kind != Value::kConst || Mutated(key) || !Immutable(value)) {
    return false;
  }
  std::string k;
  if (!ItemKey(key.obj, &k)) return false;
  if (PyDict_GetItemString(dict.obj, "__builtins__")) return false;
  // Its identity, as for appends: an alias of the dict then sees the same pending items.
  gp().GuardValue(dict.source, dict.obj);
  UseConst(key);
  effects_.push_back({Effect::kSetItem, dict, key.obj, value});
  mutated_.insert(dict.obj);
  pending_items_[std::make_pair(dict.obj, k)] = value;
  return true;
}

bool Interp::MakeEffects(size_t count) {
  for (size_t i = 0; i < count; ++i) {
    const EffectRec& r = effects_[i];
    Effect e;
    e.kind = r.kind;
    if (r.kind != Effect::kSetGlobal) {
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
