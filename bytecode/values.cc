// Guarding the values a trace depends on, known values as Python objects, and how a result
// becomes Python objects on each call (output specs). Reading inputs: value_model.cc.
#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bytecode/interp.h"
#include "interop/convert.h"

namespace pijit::bytecode {

using guards::Source;

Value Interp::SnapshotValue(const Value& v, absl::flat_hash_map<const ValueList*, Value>& copies) {
  // Every container is rebuilt (tuples and iterators too, since they may hold lists), each
  // once: values that shared a container share its copy.
  const bool container = v.kind == Value::kSeq || v.kind == Value::kDict ||
                         v.kind == Value::kIter || v.kind == Value::kObject;
  if (!container || !v.items) return v;
  auto it = copies.find(v.items.get());
  if (it != copies.end()) return it->second;
  Value c = v;
  c.items = std::make_shared<ValueList>();
  copies[v.items.get()] = c;  // placeholder first: a container may hold itself
  for (const Value& item : *v.items) c.items->push_back(SnapshotValue(item, copies));
  if (v.keys) c.keys = std::make_shared<std::vector<PyObject*>>(*v.keys);
  if (v.iter_list) {  // the copy of the list it loops over
    // With its source: the copy stands for the list wherever it appears (a local naming the
    // caller's list shares it), and a break hands Python that list itself.
    Value list = Value::Seq({}, true);
    list.items = v.iter_list;
    list.source = v.iter_list_source;
    c.iter_list = SnapshotValue(list, copies).items;
  }
  if (v.link) {  // a zip or enumerate: its sources are the copies of the iterators it takes from
    c.link = std::make_shared<IterLink>(*v.link);
    for (Value& src : c.link->sources) src = SnapshotValue(src, copies);
  }
  copies[v.items.get()] = c;
  return c;
}

void Interp::UseConst(const Value& v) {
  if (v.kind == Value::kConst && v.number) {
    for (const auto& [source, obj] : v.number->origins) gp().GuardValue(source, obj);
  }
  if (v.kind == Value::kConst && v.source >= 0) gp().GuardValue(v.source, v.obj);
  if (v.kind == Value::kSeq) UseAll(*v.items);
}

void Interp::UseAll(const ValueList& vs) {
  for (const Value& v : vs) UseConst(v);
}

PyObject* Interp::AsPyObject(const Value& v) {
  if (v.kind == Value::kConst) return effects_.Mutated(v) ? nullptr : v.obj;
  if (v.kind != Value::kSeq) return nullptr;
  // A snapshot of the sequence (a list is a new list: nothing captured mutates it).
  const Py_ssize_t n = static_cast<Py_ssize_t>(v.items->size());
  PyObject* t = v.is_list ? PyList_New(n) : PyTuple_New(n);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = AsPyObject((*v.items)[i]);
    if (!item || PySet_CheckExact(item)) {  // a set built during capture stays one object
      Py_DECREF(t);
      return nullptr;
    }
    Py_INCREF(item);
    if (v.is_list) PyList_SET_ITEM(t, i, item);
    else PyTuple_SET_ITEM(t, i, item);
  }
  if (v.seq_type && v.source < 0) {  // a namedtuple made here
    PyObject* nt = NamedTupleOf(v.seq_type, t);
    Py_DECREF(t);
    if (!nt) PyErr_Clear();
    return nt ? values_.Keep(nt) : nullptr;
  }
  return values_.Keep(t);
}

// One container built during capture is one Python object wherever it appears (a list in
// a local and on the stack, a tuple returned twice): later appearances refer to the first.
// A set built during capture is one object wherever it appears: memoised by its identity.
Value Interp::SetMemoKey(const Value& v) {
  Value key;
  key.items = std::shared_ptr<ValueList>(std::shared_ptr<ValueList>(),
                                         reinterpret_cast<ValueList*>(v.obj));
  return key;
}

std::string Interp::CurrentLocation() const {
  if (!cur_code_) return "?";
  return absl::StrCat(PyUnicode_AsUTF8(cur_code_->co_filename), ":",
                      PyCode_Addr2Line(cur_code_, cur_offset_ * 2));
}

void Interp::NoteRebuilt(PyObject* cls) {
  std::vector<std::string>& seen = out_->rebuilt_objects;
  std::string what = reinterpret_cast<PyTypeObject*>(cls)->tp_name;
  if (seen.size() < 64 && std::find(seen.begin(), seen.end(), what) == seen.end())
    seen.push_back(std::move(what));
}

bool Interp::ConstantOutput(const Value& v, OutputSpec* spec) {
  // A set, or a NumPy array a constructor made at compile time: one object wherever it
  // appears, copied once per call.
  if ((PySet_CheckExact(v.obj) || IsNumpyArray(v.obj)) && values_.MemoRef(SetMemoKey(v), spec)) return true;
  spec->kind = OutputSpec::kConstant;  // a set is copied on each call (BuildValue)
  spec->constant = v.obj;
  Py_INCREF(v.obj);
  return true;
}

bool Interp::ItemOutputs(const Value& v, bool (Interp::*make)(const Value&, OutputSpec*),
                         OutputSpec* spec) {
  if (v.kind == Value::kSeq && v.seq_type) {  // a namedtuple: rebuilt as its class
    spec->constant = v.seq_type;
    Py_INCREF(v.seq_type);
  }
  for (const Value& item : *v.items) {
    spec->items.emplace_back();
    if (!(this->*make)(item, &spec->items.back())) return false;
  }
  return true;
}

bool Interp::MakeOutput(const Value& v, OutputSpec* spec) {
  switch (v.kind) {
    case Value::kTensor: {
      const graph::Node& n = g().node(v.node);
      if (n.op == graph::Op::kParam) {  // an input returned as is keeps its identity
        spec->kind = OutputSpec::kSource;
        spec->index = out_->param_sources[n.param_index];
        return true;
      }
      spec->kind = OutputSpec::kGraphOutput;
      spec->index = values_.OutputIndex(v.node);
      return true;
    }
    case Value::kConst:
      if (v.number && v.source < 0) {
        // A computed number: the graph's value, as a Python int or float, on each call.
        spec->kind = OutputSpec::kGraphNumber;
        spec->index = values_.OutputIndex(v.number->node);
        spec->constant = reinterpret_cast<PyObject*>(Py_TYPE(v.obj));
        Py_INCREF(spec->constant);
        return true;
      }
      UseConst(v);
      if (v.source >= 0 && !PyLong_CheckExact(v.obj) && !PyFloat_CheckExact(v.obj) &&
          v.obj != Py_None && !PyBool_Check(v.obj) && !PyUnicode_CheckExact(v.obj)) {
        // Objects keep their identity: read them from their source on every call.
        spec->kind = OutputSpec::kSource;
        spec->index = v.source;
        return true;
      }
      return ConstantOutput(v, spec);
    case Value::kSeq:
      if (v.source >= 0) {  // an input tuple or list returned as is (the trace changes none)
        spec->kind = OutputSpec::kSource;
        spec->index = v.source;
        return true;
      }
      if (values_.MemoRef(v, spec)) return true;
      spec->kind = v.is_list ? OutputSpec::kList : OutputSpec::kTuple;
      if (v.seq_type) NoteRebuilt(v.seq_type);
      return ItemOutputs(v, &Interp::MakeOutput, spec);
    case Value::kObject:
    case Value::kDict: {
      if (IsMadeException(v) && v.cell && v.cell->kind == Value::kConst) {
        // Raised and caught in the trace: Python would have given it a traceback (and a
        // context, raised in a handler), which a rebuilt exception lacks.
        Fail(BreakCategory::kUnsupportedOutput, "an exception raised and caught in captured code leaves it",
             "the function runs in Python, which gives the exception its traceback");
        return false;
      }
      if (values_.MemoRef(v, spec)) return true;
      spec->kind = v.kind == Value::kObject ? OutputSpec::kObject : OutputSpec::kDict;
      if (v.kind == Value::kObject) {  // its class, then its attribute values
        spec->items.emplace_back();
        spec->items.back().kind = OutputSpec::kConstant;
        spec->items.back().constant = v.seq_type;
        Py_INCREF(v.seq_type);
        NoteRebuilt(v.seq_type);
      }
      PyObject* keys = PyTuple_New(static_cast<Py_ssize_t>(v.keys->size()));
      for (size_t i = 0; i < v.keys->size(); ++i) {
        Py_INCREF((*v.keys)[i]);
        PyTuple_SET_ITEM(keys, i, (*v.keys)[i]);
      }
      spec->constant = keys;
      for (const Value& item : *v.items) {
        spec->items.emplace_back();
        if (!MakeOutput(item, &spec->items.back())) return false;
      }
      return true;
    }
    default:
      Fail(BreakCategory::kUnsupportedOutput,
           "the return value is not a tensor, a Python value, or a container of them");
      return false;
  }
}

}  // namespace pijit::bytecode
