// Side effects on objects from outside the trace: attribute stores on plain objects, stores
// to the function's globals and appends to input lists. Each is recorded (target, name,
// value) and replayed in order after the graph runs (pijit/csrc/graph_break.cc, ReplayEffects),
// or before the instruction of a graph break. Later reads in the trace see the stored value
// (attributes, globals); a list with pending appends is not read again: such a read breaks
// the graph, where the appends have been replayed.
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

}  // namespace

bool Interp::Mutated(const Value& v) const {
  return v.kind == Value::kConst && !mutated_.empty() && mutated_.contains(v.obj);
}

bool Interp::FailIfMutated(const Value& v) {
  if (!Mutated(v)) return true;
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
