// The recorded side effects and the state later reads see (effect_recorder.h).
#include "bytecode/effect_recorder.h"

namespace pijit::bytecode {

bool ImmutableValue(const Value& v) {
  if (v.kind == Value::kTensor || v.kind == Value::kConst) return true;
  if (v.kind != Value::kSeq || v.is_list) return false;
  for (const Value& item : *v.items)
    if (!ImmutableValue(item)) return false;
  return true;
}

namespace {

std::pair<PyObject*, std::string> PendingKey(PyObject* obj, PyObject* name) {
  return std::make_pair(obj, std::string(PyUnicode_AsUTF8(name)));
}

}  // namespace

void EffectRecorder::Store(PyObject* obj, PyObject* name, const Value& value) {
  pending_[PendingKey(obj, name)] = value;
}

void EffectRecorder::Grow(PyObject* list, Py_ssize_t by) {
  if (auto it = list_len_.find(list); it != list_len_.end()) it->second += by;
}

void EffectRecorder::SetAttr(const Value& owner, PyObject* name, const Value& value) {
  records_.push_back({Effect::kSetAttr, owner, name, value});
  Store(owner.obj, name, value);
}

void EffectRecorder::DelAttr(const Value& owner, PyObject* name) {
  records_.push_back({Effect::kDelAttr, owner, name, Value::Const(Py_None)});
  Store(owner.obj, name, Value());
}

void EffectRecorder::SetGlobal(PyObject* globals, PyObject* name, const Value& value) {
  records_.push_back({Effect::kSetGlobal, Value(), name, value});
  Store(globals, name, value);
}

void EffectRecorder::DelGlobal(PyObject* globals, PyObject* name) {
  records_.push_back({Effect::kDelGlobal, Value(), name, Value::Const(Py_None)});
  Store(globals, name, Value());
}

void EffectRecorder::Append(const Value& list, const Value& value) {
  records_.push_back({Effect::kAppend, list, nullptr, value});
  Mutate(list);
  Grow(list.obj, 1);
}

void EffectRecorder::Extend(const Value& list, const ValueList& items) {
  for (const Value& v : items) records_.push_back({Effect::kAppend, list, nullptr, v});
  Mutate(list);
  Grow(list.obj, static_cast<Py_ssize_t>(items.size()));
}

void EffectRecorder::Insert(const Value& list, PyObject* index, const Value& value) {
  records_.push_back({Effect::kInsert, list, index, value});
  Mutate(list);
  Grow(list.obj, 1);
}

void EffectRecorder::MutateDict(Effect::Kind kind, const Value& dict, PyObject* key,
                                const Value& value) {
  records_.push_back({kind, dict, key, value});
  Mutate(dict);
}

void EffectRecorder::DelListItem(const Value& list, PyObject* index, Py_ssize_t new_length) {
  records_.push_back({Effect::kDelItem, list, index, Value::Const(Py_None)});
  Mutate(list);
  list_len_[list.obj] = new_length;
}

void EffectRecorder::SetCell(PyObject* cell, const Value& function, PyObject* index,
                             const Value& value) {
  records_.push_back({Effect::kSetCell, function, index, value});
  pending_cells_[cell] = value;
}

void EffectRecorder::Call(PyObject* callable, PyObject* kwargs, Value args) {
  records_.push_back({Effect::kCall, Value::Const(callable), kwargs, std::move(args)});
}

const Value* EffectRecorder::PendingAttr(PyObject* obj, PyObject* name) const {
  if (pending_.empty()) return nullptr;
  auto it = pending_.find(PendingKey(obj, name));
  return it == pending_.end() ? nullptr : &it->second;
}

const Value* EffectRecorder::PendingCell(PyObject* cell) const {
  if (pending_cells_.empty() || !cell) return nullptr;
  auto it = pending_cells_.find(cell);
  return it == pending_cells_.end() ? nullptr : &it->second;
}

bool EffectRecorder::KnownListLength(PyObject* list, Py_ssize_t* n) const {
  if (list_len_.empty()) return false;
  auto it = list_len_.find(list);
  if (it == list_len_.end()) return false;
  *n = it->second;
  return true;
}

Py_ssize_t EffectRecorder::LengthAfterEffects(PyObject* list, Py_ssize_t length) const {
  for (const Record& r : records_) {
    if (r.target.kind != Value::kConst || r.target.obj != list) continue;
    if (r.kind == Effect::kAppend || r.kind == Effect::kInsert) ++length;
    if (r.kind == Effect::kDelItem) --length;
  }
  return length;
}

Value* EffectRecorder::ShadowDict(PyObject* dict) {
  if (shadow_dicts_.empty()) return nullptr;
  auto it = shadow_dicts_.find(dict);
  return it == shadow_dicts_.end() ? nullptr : &it->second;
}

}  // namespace pijit::bytecode
