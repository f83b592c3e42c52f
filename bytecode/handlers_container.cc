// Containers built during capture: dicts (BUILD_MAP, dict comprehensions, **kwargs), the
// methods of lists made during capture (dicts: handlers_dict.cc), `in`, and f-strings of
// known values.
#include "absl/strings/str_format.h"
#include "absl/container/flat_hash_set.h"
#include "bytecode/interp.h"
#include "guards/guards.h"

namespace pijit::bytecode {
// Keys and formatted values must be plain data: comparing or formatting them runs no code.
using guards::IsPlainValue;

bool Interp::FindKey(const Value& dict, const Value& key, PyObject** key_obj, size_t* index,
                     bool* found) {
  PyObject* k = AsPyObject(key);
  if (!k || !IsPlainValue(k)) {
    Fail(BreakCategory::kUnsupportedOperator, "a dict key unknown at capture time");
    return false;
  }
  UseConst(key);
  *key_obj = k;
  *found = false;
  for (size_t i = 0; i < dict.keys->size(); ++i) {
    const int eq = PyObject_RichCompareBool((*dict.keys)[i], k, Py_EQ);
    if (eq < 0) {
      PyErr_Clear();
      Fail(BreakCategory::kPythonError, "comparing dict keys raises");
      return false;
    }
    if (eq) {
      *index = i;
      *found = true;
      return true;
    }
  }
  return true;
}

bool Interp::DictGet(const Value& dict, const Value& key, Value* out, bool* found) {
  PyObject* k;
  size_t i;
  if (!FindKey(dict, key, &k, &i, found)) return false;
  if (*found) *out = (*dict.items)[i];
  return true;
}

bool Interp::DictSet(Value& dict, const Value& key, const Value& value) {
  PyObject* k;
  size_t i;
  bool found;
  if (!FindKey(dict, key, &k, &i, &found)) return false;
  if (found) {
    (*dict.items)[i] = value;
    return true;
  }
  Py_INCREF(k);
  dict.keys->push_back(values_.Keep(k));
  dict.items->push_back(value);
  return true;
}

bool Interp::Contains(const Value& c, const Value& item, bool* out) {
  PyObject* x = AsPyObject(item);
  if (!x || !ComparesWithoutCode(x)) {
    Fail(BreakCategory::kUnsupportedOperator, "`in` with a value unknown at capture time");
    return false;
  }
  UseConst(item);
  if (c.kind == Value::kDict) {
    Value ignored;
    return DictGet(c, item, &ignored, out);
  }
  if (const Value* model = ShadowDict(c)) {  // an input dict the trace mutates
    Value ignored;
    return DictGet(*model, item, &ignored, out);
  }
  if (c.kind == Value::kIter && c.view) {
    // A dict view (an iterator would be consumed): its items, when all are plain values.
    for (const Value& v : *c.items) {
      PyObject* o = AsPyObject(v);
      if (!o || !IsPlainValue(o)) {
        Fail(BreakCategory::kUnsupportedOperator, "`in` over a dict view of values unknown at capture time");
        return false;
      }
      UseConst(v);
      const int eq = PyObject_RichCompareBool(o, x, Py_EQ);
      if (eq < 0) {
        PyErr_Clear();
        Fail(BreakCategory::kPythonError, "`in` raises");
        return false;
      }
      if (eq) {
        *out = true;
        return true;
      }
    }
    *out = false;
    return true;
  }
  if (!FailIfMutated(c)) return false;
  if (c.kind == Value::kConst && c.source >= 0 && PyDict_CheckExact(c.obj) &&
      PyDict_GET_SIZE(c.obj) <= 256) {
    // A key of an input dict: the answer holds while its keys stay the same.
    bool plain_keys = true;
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (plain_keys && PyDict_Next(c.obj, &pos, &k, &v))
      plain_keys = PyUnicode_CheckExact(k) || PyLong_CheckExact(k);
    if (plain_keys) {
      const int r = PyDict_Contains(c.obj, x);
      if (r < 0) {
        PyErr_Clear();
        Fail(BreakCategory::kPythonError, "`in` raises");
        return false;
      }
      gp().GuardType(c.source, c.obj);
      gp().GuardDictKeys(c.source, c.obj);
      *out = r != 0;
      return true;
    }
  }
  PyObject* obj = AsPyObject(c);
  const bool mutable_input =
      obj && c.source >= 0 && (PyList_CheckExact(obj) || PyDict_CheckExact(obj));
  // A set is known when built during capture (source -1); a frozenset never changes.
  const bool known_set = obj && (PyFrozenSet_CheckExact(obj) || (PySet_CheckExact(obj) && c.source < 0));
  if (obj && !mutable_input &&
      (known_set || PyTuple_CheckExact(obj) || PyUnicode_CheckExact(obj) || PyList_CheckExact(obj) ||
       PyDict_CheckExact(obj) || PyRange_Check(obj))) {
    if (!PyUnicode_CheckExact(obj)) {
      // Items compare with ==: only such items compare without running code.
      PyObject* it = PyObject_GetIter(obj);
      bool plain = it != nullptr;
      while (PyObject* v = it ? PyIter_Next(it) : nullptr) {
        plain = plain && ComparesWithoutCode(v);
        Py_DECREF(v);
      }
      Py_XDECREF(it);
      PyErr_Clear();
      if (!plain) {
        Fail(BreakCategory::kUnsupportedOperator, "`in` over items that are not plain values");
        return false;
      }
    }
    UseConst(c);
    int r = PySequence_Contains(obj, x);
    if (r < 0) {
      PyErr_Clear();
      Fail(BreakCategory::kPythonError, "`in` raises");
      return false;
    }
    *out = r != 0;
    return true;
  }
  Fail(BreakCategory::kUnsupportedOperator, "`in` over a container unknown at capture time");
  return false;
}

bool Interp::SetItems(const Value& v, ValueList* out) {
  if (v.kind == Value::kConst &&
      (PyFrozenSet_CheckExact(v.obj) || (PySet_CheckExact(v.obj) && v.source < 0))) {
    UseConst(v);
    return ItemsOfConstant(v.obj, out);
  }
  Value it;
  if (!GetIter(v, &it)) return false;
  *out = *it.items;
  return true;
}

bool Interp::MakeSet(PyObject* base, const ValueList& items, Value* out) {
  // Hashing and comparing plain values runs no code.
  PyObject* set = PySet_New(base);
  if (!set) {
    PyErr_Clear();
    Fail(BreakCategory::kPythonError, "cannot make a set");
    return false;
  }
  values_.Keep(set);
  for (const Value& item : items) {
    PyObject* x = AsPyObject(item);
    if (!x || !IsPlainValue(x)) {
      Fail(BreakCategory::kUnsupportedOperator, "a set item unknown at capture time or not a plain value",
           "sets are captured when their items are numbers, strings, None or tuples of them");
      return false;
    }
    UseConst(item);
    if (PySet_Add(set, x) < 0) {
      PyErr_Clear();
      Fail(BreakCategory::kPythonError, "adding to a set raises");
      return false;
    }
  }
  *out = Value::Const(set);
  return true;
}

namespace {
// str methods that compute a new value from the string and their arguments and run no user
// code (so they fold at capture when everything they are given is a constant).
bool PureStrMethod(std::string_view name) {
  static const absl::flat_hash_set<std::string_view> kPure = {
      "lower", "upper", "casefold", "capitalize", "title", "swapcase", "strip", "lstrip",
      "rstrip", "startswith", "endswith", "replace", "find", "rfind", "count", "split",
      "rsplit", "splitlines", "partition", "rpartition", "join", "zfill", "center", "ljust",
      "rjust", "removeprefix", "removesuffix", "isdigit", "isalpha", "isalnum", "isspace",
      "islower", "isupper", "isidentifier", "isnumeric", "isdecimal"};
  return kPure.contains(name);
}
}  // namespace

bool Interp::IsFoldableStrMethod(const Value& owner, PyObject* name) {
  return owner.kind == Value::kConst && PyUnicode_CheckExact(owner.obj) && !owner.number &&
         PureStrMethod(PyUnicode_AsUTF8(name));
}

bool Interp::CallStrMethod(std::string_view name, const Value& self, const ValueList& args,
                           Value* out) {
  // Every argument a constant str, number, None or a tuple or list of them (join's).
  PyObject* call_args = PyTuple_New(static_cast<Py_ssize_t>(args.size()));
  if (!call_args) return false;
  values_.Keep(call_args);
  for (size_t i = 0; i < args.size(); ++i) {
    const Value& a = args[i];
    PyObject* arg = nullptr;
    if (a.kind == Value::kConst && guards::IsPlainValue(a.obj)) {
      UseConst(a);
      arg = Py_NewRef(a.obj);
    } else if (a.kind == Value::kSeq) {
      arg = PyTuple_New(static_cast<Py_ssize_t>(a.items->size()));
      for (size_t k = 0; arg && k < a.items->size(); ++k) {
        const Value& item = (*a.items)[k];
        if (item.kind != Value::kConst || !guards::IsPlainValue(item.obj)) {
          Py_CLEAR(arg);
          break;
        }
        UseConst(item);
        PyTuple_SET_ITEM(arg, static_cast<Py_ssize_t>(k), Py_NewRef(item.obj));
      }
    }
    if (!arg) {
      if (PyErr_Occurred()) PyErr_Clear();
      Fail(BreakCategory::kUnsupportedCall,
           absl::StrFormat("str.%s with an argument unknown at capture time", std::string(name)));
      return false;
    }
    PyTuple_SET_ITEM(call_args, static_cast<Py_ssize_t>(i), arg);
  }
  PyObject* method = PyObject_GetAttrString(self.obj, std::string(name).c_str());
  PyObject* r = method ? PyObject_Call(method, call_args, nullptr) : nullptr;
  Py_XDECREF(method);
  if (!r) {
    // The eager run raises the same error where the call is.
    PyErr_Clear();
    Fail(BreakCategory::kPythonError, absl::StrFormat("str.%s raised", std::string(name)));
    return false;
  }
  values_.Keep(r);
  if (PyList_CheckExact(r)) {  // split's list: a list made during capture, of constants
    ValueList items;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(r); ++i) items.push_back(Value::Const(PyList_GET_ITEM(r, i)));
    *out = Value::Seq(std::move(items), true);
    return true;
  }
  *out = Value::Const(r);
  return true;
}

bool Interp::CallContainerMethod(const Value& m, ValueList args, const std::vector<std::string>& kwnames,
                                 Value* out) {
  const std::string_view name = PyUnicode_AsUTF8(m.obj);
  if (!args.empty() && kwnames.empty() && IsFoldableStrMethod(args[0], m.obj)) {
    const Value self = args[0];
    args.erase(args.begin());
    return CallStrMethod(name, self, args, out);
  }
  if (!args.empty() && (args[0].kind == Value::kDict ||
                        (args[0].kind == Value::kConst && PyDict_CheckExact(args[0].obj)))) {
    const Value self = args[0];
    args.erase(args.begin());
    return DictMethod(self, name, std::move(args), kwnames, out);  // handlers_dict.cc
  }
  if (!kwnames.empty() || args.empty()) {
    Fail(BreakCategory::kUnsupportedCall, "keyword arguments to a container method");
    return false;
  }
  Value self = args[0];
  args.erase(args.begin());
  if (self.kind == Value::kConst && PyList_CheckExact(self.obj) && name == "append" &&
      args.size() == 1) {
    if (!AppendEffect(self, args[0])) return false;
    *out = Value::Const(Py_None);
    return true;
  }
  if (self.kind == Value::kConst && PyList_CheckExact(self.obj) && self.source >= 0 &&
      name == "extend" && args.size() == 1) {
    if (!ExtendEffect(self, args[0])) return false;
    *out = Value::Const(Py_None);
    return true;
  }
  if (self.kind == Value::kConst && PyList_CheckExact(self.obj) && self.source >= 0 &&
      name == "insert" && args.size() == 2) {
    if (!InsertEffect(self, args[0], args[1])) return false;
    *out = Value::Const(Py_None);
    return true;
  }
  if (self.kind == Value::kSeq && self.is_list && self.source < 0 &&
      !effects_.ItemsViewed(self.items.get())) {
    // Lists made during capture (not being looped over): every alias shares `items`, so
    // mutation stays consistent.
    if (name == "append" && args.size() == 1) {
      self.items->push_back(args[0]);
      *out = Value::Const(Py_None);
      return true;
    }
    if (name == "extend" && args.size() == 1) {
      Value it;
      if (!GetIter(args[0], &it)) return false;
      self.items->insert(self.items->end(), it.items->begin(), it.items->end());
      *out = Value::Const(Py_None);
      return true;
    }
  }
  Fail(BreakCategory::kUnsupportedCall, absl::StrFormat("method %s of a container made during capture",
                                           std::string(name)));
  return false;
}

bool Interp::FormatValue(const Value& v, int flags, const Value* spec, Value* out) {
  PyObject* x = AsPyObject(v);
  PyObject* s = spec ? AsPyObject(*spec) : nullptr;
  bool plain = x && IsPlainValue(x);
  if (x && PyList_CheckExact(x)) {
    plain = true;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(x); ++i) plain = plain && IsPlainValue(PyList_GET_ITEM(x, i));
  }
  if (!plain || (spec && (!s || !PyUnicode_CheckExact(s)))) {
    Fail(BreakCategory::kUnsupportedOperator, "an f-string of a value unknown at capture time");
    return false;
  }
  UseConst(v);
  if (spec) UseConst(*spec);
  PyObject* conv = nullptr;
  switch (flags & 3) {
    case 1: conv = PyObject_Str(x); break;
    case 2: conv = PyObject_Repr(x); break;
    case 3: conv = PyObject_ASCII(x); break;
    default: Py_INCREF(x); conv = x;
  }
  PyObject* r = conv ? PyObject_Format(conv, s) : nullptr;
  Py_XDECREF(conv);
  if (!r) {
    PyErr_Clear();
    Fail(BreakCategory::kPythonError, "formatting raises");
    return false;
  }
  *out = Value::Const(values_.Keep(r));
  return true;
}

PyObject* NamedTupleFields(PyObject* cls) {
  if (!PyType_Check(cls) || !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(cls), &PyTuple_Type) ||
      cls == reinterpret_cast<PyObject*>(&PyTuple_Type)) {
    return nullptr;
  }
  static PyObject* fields_name = PyUnicode_InternFromString("_fields");
  static PyObject* make_name = PyUnicode_InternFromString("_make");
  PyObject* fields = _PyType_Lookup(reinterpret_cast<PyTypeObject*>(cls), fields_name);
  if (!fields || !PyTuple_CheckExact(fields) ||
      !_PyType_Lookup(reinterpret_cast<PyTypeObject*>(cls), make_name)) {
    return nullptr;
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fields); ++i)
    if (!PyUnicode_CheckExact(PyTuple_GET_ITEM(fields, i))) return nullptr;
  return fields;
}

bool Interp::MakeNamedTuple(PyObject* cls, const ValueList& args,
                            const std::vector<std::string>& kwnames, Value* out, bool* handled) {
  PyObject* fields = NamedTupleFields(cls);
  *handled = fields != nullptr;
  if (!fields) return false;
  const Py_ssize_t n = PyTuple_GET_SIZE(fields);
  const size_t npos = args.size() - kwnames.size();
  std::vector<const Value*> bound(static_cast<size_t>(n), nullptr);
  if (static_cast<Py_ssize_t>(npos) > n) {
    Fail(BreakCategory::kPythonError, "too many arguments for a namedtuple");
    return false;
  }
  for (size_t i = 0; i < npos; ++i) bound[i] = &args[i];
  for (size_t k = 0; k < kwnames.size(); ++k) {
    Py_ssize_t slot = -1;
    for (Py_ssize_t i = 0; i < n; ++i)
      if (kwnames[k] == PyUnicode_AsUTF8(PyTuple_GET_ITEM(fields, i))) slot = i;
    if (slot < 0 || bound[slot]) {
      Fail(BreakCategory::kPythonError, "an unexpected or repeated keyword argument for a namedtuple");
      return false;
    }
    bound[slot] = &args[npos + k];
  }
  // Missing fields take the class's defaults (plain values: a namedtuple's defaults are fixed
  // when the class is made).
  static PyObject* defaults_name = PyUnicode_InternFromString("_field_defaults");
  PyObject* defaults = _PyType_Lookup(reinterpret_cast<PyTypeObject*>(cls), defaults_name);
  ValueList items;
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (bound[i]) {
      items.push_back(*bound[i]);
      continue;
    }
    PyObject* d = defaults && PyDict_Check(defaults)
                      ? PyDict_GetItem(defaults, PyTuple_GET_ITEM(fields, i)) : nullptr;
    if (!d || !guards::IsPlainValue(d)) {
      Fail(BreakCategory::kPythonError, "a namedtuple field without a value");
      return false;
    }
    items.push_back(Value::Const(d));
  }
  *out = Value::Seq(std::move(items), false);
  out->seq_type = cls;
  return true;
}

bool Interp::NamedTupleField(const Value& owner, PyObject* name, Value* out) {
  PyObject* fields = owner.seq_type ? NamedTupleFields(owner.seq_type) : nullptr;
  if (!fields) return false;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fields) && i < static_cast<Py_ssize_t>(owner.items->size()); ++i) {
    if (PyUnicode_Compare(PyTuple_GET_ITEM(fields, i), name) == 0) {
      *out = (*owner.items)[static_cast<size_t>(i)];
      return true;
    }
  }
  return false;
}

}  // namespace pijit::bytecode

