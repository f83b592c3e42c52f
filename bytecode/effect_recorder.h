// The side effects a trace records on objects from outside it (internal to bytecode/).
//
// Attribute stores and deletions, global stores and deletions, closure cell stores, item
// stores and deletions on input dicts and lists, appends and inserts on input lists, and
// print in whole-graph mode are recorded in order and replayed after the graph runs (or
// before the instruction of a graph break). The recorder also keeps what later reads of the
// trace must see of them: the values stored, the objects mutated, the model of each input dict
// the trace mutates, the known length of input lists, and the containers whose views or
// iterations are live (no mutation of those is recorded).
//
// It holds no guards and runs no Python: deciding whether an effect may be recorded, and
// guarding what it depends on, is the interpreter's part (handlers_effects.cc, handlers_dict.cc).
#pragma once
#include <Python.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "bytecode/capture.h"
#include "bytecode/value.h"

namespace pijit::bytecode {

// A value an effect may hold until the graph has run: tensors, constants and tuples of them.
// A list or dict built during capture could be mutated after the store, which the replay
// (from the state at the end) would not order.
bool ImmutableValue(const Value& v);

class EffectRecorder {
 public:
  struct Record {
    Effect::Kind kind;
    Value target;
    PyObject* name;  // borrowed (kept alive by the code object or the interpreter)
    Value value;
  };

  const std::vector<Record>& records() const { return records_; }
  size_t size() const { return records_.size(); }
  // Marks the effects recorded before the root frame's current instruction: those are the
  // ones a graph break there replays.
  void MarkRootInstruction() { root_count_ = records_.size(); }
  size_t root_count() const { return root_count_; }
  // How many attributes, globals and cells have stored values pending (a loop body that adds
  // any has effects).
  size_t pending_stores() const { return pending_.size() + pending_cells_.size(); }

  // ---- recording: each appends the effect and updates what later reads see ----
  void SetAttr(const Value& owner, PyObject* name, const Value& value);
  void DelAttr(const Value& owner, PyObject* name);
  // globals: the dict the root function's globals are read from.
  void SetGlobal(PyObject* globals, PyObject* name, const Value& value);
  void DelGlobal(PyObject* globals, PyObject* name);
  void Append(const Value& list, const Value& value);
  // One append per item; the list counts as mutated even when `items` is empty.
  void Extend(const Value& list, const ValueList& items);
  void Insert(const Value& list, PyObject* index, const Value& value);
  // An item store, deletion or mutating method on an input dict (its model is updated by
  // the caller), or a deletion of an input list's item whose length is then `new_length`.
  void MutateDict(Effect::Kind kind, const Value& dict, PyObject* key, const Value& value);
  void DelListItem(const Value& list, PyObject* index, Py_ssize_t new_length);
  // Closure cell `cell`, index `index` (an int object) of `function` (a kNull Value: the
  // called function itself) := value.
  void SetCell(PyObject* cell, const Value& function, PyObject* index, const Value& value);
  // callable(*args, **kwargs) (kwargs a dict or nullptr).
  void Call(PyObject* callable, PyObject* kwargs, Value args);

  // ---- what later reads see ----
  // Whether `v` is an object the trace has recorded an effect on.
  bool Mutated(const Value& v) const {
    return v.kind == Value::kConst && !mutated_.empty() && mutated_.contains(v.obj);
  }
  bool AnyMutated() const { return !mutated_.empty(); }
  // The value the trace stored (kUndef: deleted), or null when the trace has not touched it.
  const Value* PendingAttr(PyObject* obj, PyObject* name) const;
  const Value* PendingGlobal(PyObject* globals, PyObject* name) const {
    return PendingAttr(globals, name);
  }
  const Value* PendingCell(PyObject* cell) const;
  // The length of input list `list` once a deletion has fixed it (false: not known).
  bool KnownListLength(PyObject* list, Py_ssize_t* n) const;
  // `length`, the length of input list `list` on entry, after the effects recorded on it.
  Py_ssize_t LengthAfterEffects(PyObject* list, Py_ssize_t length) const;

  // ---- models of the input dicts the trace mutates (a kDict shared by every alias) ----
  Value* ShadowDict(PyObject* dict);
  Value* AddShadowDict(PyObject* dict, Value model) {
    return &(shadow_dicts_[dict] = std::move(model));
  }

  // ---- live views: containers whose later mutations are not recorded ----
  // An input dict read through its methods (items, keys, values): its views may be live, and
  // a store while iterating one raises.
  void ViewDict(PyObject* dict) { viewed_dicts_.insert(dict); }
  bool DictViewed(PyObject* dict) const { return viewed_dicts_.contains(dict); }
  // A container made during capture looked at (iterated, viewed): Python would see a later
  // change where the trace took its items earlier.
  void ViewItems(const std::shared_ptr<ValueList>& items) {
    if (viewed_items_.insert(items.get()).second) viewed_items_alive_.push_back(items);
  }
  bool ItemsViewed(const ValueList* items) const { return viewed_items_.contains(items); }

 private:
  void Store(PyObject* obj, PyObject* name, const Value& value);
  void Mutate(const Value& target) { mutated_.insert(target.obj); }
  void Grow(PyObject* list, Py_ssize_t by);

  std::vector<Record> records_;
  size_t root_count_ = 0;
  absl::flat_hash_set<PyObject*> mutated_;  // objects with recorded effects
  // Attributes and globals stored by the trace: (object or globals dict, name) -> value.
  absl::flat_hash_map<std::pair<PyObject*, std::string>, Value> pending_;
  // Input dicts the trace mutates: their contents as the trace has left them (a kDict).
  absl::flat_hash_map<PyObject*, Value> shadow_dicts_;
  // Input lists with recorded effects whose length the trace knows (a deletion guards it).
  absl::flat_hash_map<PyObject*, Py_ssize_t> list_len_;
  // Closure cells the trace stored into: cell object -> value.
  absl::flat_hash_map<PyObject*, Value> pending_cells_;
  absl::flat_hash_set<PyObject*> viewed_dicts_;
  // Containers made during capture, by their storage.
  absl::flat_hash_set<const ValueList*> viewed_items_;
  // The containers in viewed_items_, held so that none is freed during the capture: a list
  // made later at a freed one's address would look iterated.
  std::vector<std::shared_ptr<ValueList>> viewed_items_alive_;
};

}  // namespace pijit::bytecode
