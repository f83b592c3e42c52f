// Dicts: the methods of dicts built during capture, and input dicts the trace mutates.
//
// An input dict is modelled, from its first mutation on, the way a dict built during capture
// is (a kDict: keys in insertion order and their values). Reads after a store, a deletion or a
// mutating method (pop, update, setdefault, popitem, clear) then see what eager Python sees:
// items, len, `in`, iteration and the views, in insertion order. Each mutation is recorded as
// item stores and deletions (handlers_effects.cc) replayed in order after the graph, which
// leaves the caller's dict with the same items in the same order. The model guards the dict's
// identity (an alias is the same model) and its keys in order.
#include "absl/strings/str_format.h"
#include "bytecode/interp.h"
#include "guards/guards.h"
#include "interop/convert.h"

namespace pijit::bytecode {

using guards::Source;

namespace {

constexpr Py_ssize_t kMaxModelledItems = 256;

// An item value FromSource reads without failing the capture (a list holding tensors fails).
bool ReadableItem(PyObject* v) {
  if (!PyList_Check(v)) return true;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); ++i)
    if (AsTensor(PyList_GET_ITEM(v, i))) return false;
  return true;
}

}  // namespace

Value* Interp::ShadowDict(const Value& v) {
  if (v.kind != Value::kConst || v.source < 0) return nullptr;
  Value* model = effects_.ShadowDict(v.obj);
  if (!model) return nullptr;
  // Its identity at this source too: an alias of the modelled dict on this call may be
  // another dict on the next.
  gp().GuardValue(v.source, v.obj);
  return model;
}

Value* Interp::MakeShadowDict(const Value& v) {
  if (Value* s = ShadowDict(v)) return s;
  if (v.kind != Value::kConst || v.source < 0 || !PyDict_CheckExact(v.obj) || effects_.Mutated(v) ||
      effects_.DictViewed(v.obj) || PyDict_GET_SIZE(v.obj) > kMaxModelledItems) {
    return nullptr;
  }
  if (PyDict_GetItemString(v.obj, "__builtins__")) return nullptr;  // a module's globals
  PyObject *k, *item;
  Py_ssize_t pos = 0;
  while (PyDict_Next(v.obj, &pos, &k, &item)) {
    if ((!PyUnicode_CheckExact(k) && !PyLong_CheckExact(k)) || !ReadableItem(item)) return nullptr;
  }
  // Its identity first (GuardValue adds nothing after a stronger guard), then its keys.
  gp().GuardValue(v.source, v.obj);
  gp().GuardDictKeys(v.source, v.obj);
  Value d = Value::Dict();
  pos = 0;
  while (PyDict_Next(v.obj, &pos, &k, &item)) {
    Py_INCREF(k);
    Py_INCREF(item);
    values_.Keep(k);
    values_.Keep(item);
    Value x;
    if (!values_.FromSource(gp().AddSource(Source::kDictItem, v.source, -1, k), item, &x)) return nullptr;
    d.keys->push_back(k);
    d.items->push_back(std::move(x));
  }
  return effects_.AddShadowDict(v.obj, std::move(d));
}

bool Interp::DictDel(Value& dict, const Value& key, Value* removed, bool* found) {
  PyObject* k;
  size_t i;
  if (!FindKey(dict, key, &k, &i, found)) return false;
  if (*found) {
    *removed = (*dict.items)[i];
    dict.keys->erase(dict.keys->begin() + static_cast<std::ptrdiff_t>(i));
    dict.items->erase(dict.items->begin() + static_cast<std::ptrdiff_t>(i));
  }
  return true;
}

bool Interp::DictMethod(const Value& self, std::string_view name, ValueList args,
                        const std::vector<std::string>& kwnames, Value* out) {
  // `self` is a kDict (its aliases share its storage) or an input dict, whose model the
  // mutating methods make and whose mutations are recorded.
  const bool input = self.kind == Value::kConst;
  const bool mutating = name == "pop" || name == "update" || name == "setdefault" ||
                        name == "popitem" || name == "clear";
  auto unsupported = [&]() {
    if (!failed()) {
      Fail(BreakCategory::kUnsupportedCall, absl::StrFormat("dict.%s with these arguments", std::string(name)),
           "the graph breaks here; the call runs in Python");
    }
    return false;
  };
  // A live view or an iteration of the dict (EffectRecorder::DictViewed) sees later mutations in Python,
  // and a loop over it raises on them: those run in Python. So do mutations in a generator
  // run ahead of its consumer (which would see them too early).
  if (mutating && (gen_depth_ > 0 || (input ? effects_.DictViewed(self.obj)
                                            : effects_.ItemsViewed(self.items.get())))) {
    return unsupported();
  }
  Value* model = input ? (mutating ? MakeShadowDict(self) : ShadowDict(self)) : nullptr;
  if (input && !model) return unsupported();
  Value d = input ? *model : self;  // shares keys and items with the model
  const size_t nkw = kwnames.size();
  if (nkw > args.size() || (nkw && name != "update")) return unsupported();
  const size_t npos = args.size() - nkw;
  auto record = [&](Effect::Kind kind, PyObject* key, const Value& value) {
    if (!input) return;
    effects_.MutateDict(kind, self, key, value);
  };
  auto key_of = [&](const Value& key) -> PyObject* {
    PyObject* k = AsPyObject(key);
    return k && guards::IsPlainValue(k) ? k : nullptr;
  };
  auto iter_of = [&](ValueList items) {
    // A view: live in Python, a snapshot here, so the trace records no later mutation of
    // an input dict once one is taken (EffectRecorder::ViewDict).
    if (input) effects_.ViewDict(self.obj);
    else effects_.ViewItems(self.items);
    out->kind = Value::kIter;
    out->items = std::make_shared<ValueList>(std::move(items));
    out->opaque = true;  // a dict view, not an iterator: it stays inside the trace
    out->view = true;
    return true;
  };
  if (name == "items" && npos == 0) {
    ValueList pairs;
    for (size_t i = 0; i < d.keys->size(); ++i)
      pairs.push_back(Value::Seq({Value::Const((*d.keys)[i]), (*d.items)[i]}, false));
    return iter_of(std::move(pairs));
  }
  if (name == "keys" && npos == 0) {
    ValueList keys;
    for (PyObject* k : *d.keys) keys.push_back(Value::Const(k));
    return iter_of(std::move(keys));
  }
  if (name == "values" && npos == 0) return iter_of(*d.items);
  if (name == "get" && (npos == 1 || npos == 2)) {
    bool found;
    if (!DictGet(d, args[0], out, &found)) return false;
    if (!found) *out = npos == 2 ? args[1] : Value::Const(Py_None);
    return true;
  }
  if (name == "pop" && (npos == 1 || npos == 2)) {
    PyObject* k = key_of(args[0]);
    bool found;
    if (!k || !DictDel(d, args[0], out, &found)) return unsupported();
    if (found) {
      record(Effect::kDelItem, k, Value::Const(Py_None));
      return true;
    }
    if (npos == 1) {
      Fail(BreakCategory::kPythonError, "KeyError: dict.pop of a key the dict does not have",
           "the call runs eagerly, where Python raises the KeyError");
      return false;
    }
    *out = args[1];
    return true;
  }
  if (name == "setdefault" && (npos == 1 || npos == 2)) {
    PyObject* k = key_of(args[0]);
    const Value dflt = npos == 2 ? args[1] : Value::Const(Py_None);
    bool found;
    if (!k || !DictGet(d, args[0], out, &found)) return unsupported();
    if (found) return true;
    if (input && !ImmutableValue(dflt)) return unsupported();
    if (!DictSet(d, args[0], dflt)) return false;
    record(Effect::kSetItem, k, dflt);
    *out = dflt;
    return true;
  }
  if (name == "popitem" && npos == 0) {
    if (d.keys->empty()) {
      Fail(BreakCategory::kPythonError, "KeyError: popitem of an empty dict",
           "the call runs eagerly, where Python raises the KeyError");
      return false;
    }
    PyObject* k = d.keys->back();
    Value v = d.items->back();
    d.keys->pop_back();
    d.items->pop_back();
    record(Effect::kDelItem, k, Value::Const(Py_None));
    *out = Value::Seq({Value::Const(k), v}, false);
    return true;
  }
  if (name == "clear" && npos == 0) {
    for (PyObject* k : *d.keys) record(Effect::kDelItem, k, Value::Const(Py_None));
    d.keys->clear();
    d.items->clear();
    *out = Value::Const(Py_None);
    return true;
  }
  if (name == "update" && npos <= 1) {
    // The pairs first (all known before anything changes), then the stores in order.
    std::vector<std::pair<Value, Value>> pairs;
    if (npos == 1) {
      const Value& other = args[0];
      Value from;
      if (other.kind == Value::kDict) {
        from = other;
      } else if (Value* m = other.kind == Value::kConst && PyDict_CheckExact(other.obj)
                               ? MakeShadowDict(other) : nullptr) {
        from = *m;
      } else {
        return unsupported();
      }
      for (size_t i = 0; i < from.keys->size(); ++i)
        pairs.emplace_back(Value::Const((*from.keys)[i]), (*from.items)[i]);
    }
    for (size_t i = 0; i < nkw; ++i) {
      pairs.emplace_back(Value::Const(values_.Keep(PyUnicode_FromString(kwnames[i].c_str()))),
                         args[npos + i]);
    }
    for (const auto& [key, value] : pairs) {
      if (!key_of(key) || (input && !ImmutableValue(value))) return unsupported();
    }
    for (const auto& [key, value] : pairs) {
      if (!DictSet(d, key, value)) return false;
      record(Effect::kSetItem, key_of(key), value);
    }
    *out = Value::Const(Py_None);
    return true;
  }
  return unsupported();
}

// dict(), dict(mapping), dict(pairs) and dict(..., **kwargs): a dict made during capture.
bool Interp::MakeDictCall(const ValueList& args, const std::vector<std::string>& kwnames,
                          Value* out) {
  const size_t npos = args.size() - kwnames.size();
  if (npos > 1) {
    Fail(BreakCategory::kPythonError, "dict expected at most 1 positional argument");
    return false;
  }
  Value d = Value::Dict();
  if (npos == 1 && args[0].kind == Value::kDict) {
    for (size_t i = 0; i < args[0].keys->size(); ++i)
      if (!DictSet(d, Value::Const((*args[0].keys)[i]), (*args[0].items)[i])) return false;
  } else if (npos == 1) {
    Value it;  // an iterable of (key, value) pairs
    if (!GetIter(args[0], &it)) return false;
    for (const Value& pair : *it.items) {
      ValueList kv;
      if (pair.kind == Value::kSeq) kv = *pair.items;
      else if (pair.kind == Value::kConst && PyTuple_CheckExact(pair.obj))
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(pair.obj); ++i)
          kv.push_back(Value::Const(PyTuple_GET_ITEM(pair.obj, i)));
      if (kv.size() != 2) {
        Fail(BreakCategory::kUnsupportedCall,
             "dict() of items that are not (key, value) pairs known at capture time");
        return false;
      }
      if (pair.kind == Value::kConst) UseConst(pair);
      if (!DictSet(d, kv[0], kv[1])) return false;
    }
  }
  for (size_t k = 0; k < kwnames.size(); ++k) {
    PyObject* key = values_.Keep(PyUnicode_FromString(kwnames[k].c_str()));
    if (!DictSet(d, Value::Const(key), args[npos + k])) return false;
  }
  *out = std::move(d);
  return true;
}

}  // namespace pijit::bytecode
