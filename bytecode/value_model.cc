// Graph inputs and outputs of the trace's values (value_model.h).
#include "bytecode/value_model.h"

#include "interop/convert.h"

namespace pijit::bytecode {

using guards::Source;

namespace {

// Tuples and lists of tensors nest this deep at most to be read item by item (a layer's
// ((w_ih, w_hh, b_ih, b_hh), ...) weights); deeper ones stay Python objects.
constexpr int kNestedTensorDepth = 4;

// Whether the tuple or list `obj` holds a tensor, directly or in tuples/lists within `depth`.
bool HoldsTensor(PyObject* obj, int depth) {
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(obj); ++i) {
    PyObject* item = PySequence_Fast_ITEMS(obj)[i];
    if (AsTensor(item)) return true;
    if (depth > 1 && (PyTuple_Check(item) || PyList_Check(item)) && HoldsTensor(item, depth - 1))
      return true;
  }
  return false;
}

}  // namespace
bool ValueModel::FromSource(int32_t source, PyObject* obj, Value* out) {
  if (Tensor* t = AsTensor(obj)) {
    auto it = param_of_source_.find(source);
    graph::NodeId node;
    auto same = param_of_object_.find(obj);
    if (it != param_of_source_.end()) {
      node = it->second;
    } else if (same != param_of_object_.end()) {
      // Another path to a tensor already read (a Cell's weight and the optimizer's tuple
      // item): one graph input, and a guard that both paths keep leading to one object.
      gp().GuardSameAs(source, same->second.second);
      node = same->second.first;
      param_of_source_[source] = node;
    } else {
      uint64_t dynamic = 0;
      if (!dynamic_dims_.empty()) {
        const std::string where = gp().SourceText(source);
        for (const auto& [src, dim] : dynamic_dims_)
          if (src == where && dim < 64 && dim < t->ndim()) dynamic |= uint64_t{1} << dim;
      }
      out_->dynamic |= dynamic != 0;
      gp().GuardTensor(source, obj, *t, dynamic);
      node = g().AddParam(MetaOf(*t));
      out_->param_sources.push_back(source);
      out_->param_numbers.push_back(kNoNumber);
      param_of_source_[source] = node;
      param_of_object_[obj] = {node, source};
    }
    out->kind = Value::kTensor;
    out->node = node;
    out->source = source;
    out->type = Py_TYPE(obj);
    return true;
  }
  if (PyTuple_Check(obj) || PyList_Check(obj)) {
    if (HoldsTensor(obj, kNestedTensorDepth)) {
      // A container of tensors: guard its type and length, then each item at its own source.
      // A list is read like a tuple; the trace changes none (a store, append or other
      // mutating call on it breaks the graph there), so it stays the caller's own object.
      gp().GuardType(source, obj);
      ValueList items;
      for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(obj); ++i) {
        Value item;
        if (!FromSource(gp().AddSource(Source::kItem, source, static_cast<int32_t>(i)),
                        PySequence_Fast_ITEMS(obj)[i], &item)) {
          return false;
        }
        items.push_back(std::move(item));
      }
      *out = Value::Seq(std::move(items), PyList_Check(obj));
      out->source = source;
      if (NamedTupleFields(reinterpret_cast<PyObject*>(Py_TYPE(obj)))) {
        out->seq_type = reinterpret_cast<PyObject*>(Py_TYPE(obj));  // its fields by name
      }
      return true;
    }
  }
  *out = Value::Const(obj, source);
  return true;
}

bool ValueModel::IsDynamicNumber(const Value& v) {
  if (v.kind != Value::kConst || v.source < 0 || dynamic_numbers_.empty() || numbers_fixed_ ||
      !(PyLong_CheckExact(v.obj) || PyFloat_CheckExact(v.obj))) {
    return false;
  }
  const std::string where = gp().SourceText(v.source);
  for (const std::string& s : dynamic_numbers_)
    if (s == where) return true;
  return false;
}

graph::NodeId ValueModel::NumberParam(int32_t source, PyObject* obj, DType dtype) {
  const auto key = std::make_pair(source, static_cast<int>(dtype));
  if (auto it = param_of_number_.find(key); it != param_of_number_.end()) return it->second;
  // The value may change between calls; its type may not (int and float convert differently).
  gp().GuardType(source, obj);
  const graph::NodeId node = g().AddParam(TensorMeta{dtype, {}});
  out_->param_sources.push_back(source);
  out_->param_numbers.push_back(static_cast<int8_t>(dtype));
  param_of_number_[key] = node;
  return node;
}

std::shared_ptr<const NumberInfo> ValueModel::NumberOf(const Value& v) {
  if (v.kind != Value::kConst) return nullptr;
  if (v.number) return v.number;
  if (!IsDynamicNumber(v)) return nullptr;
  auto info = std::make_shared<NumberInfo>();
  if (PyFloat_CheckExact(v.obj)) {
    info->node = NumberParam(v.source, v.obj, DType::kFloat64);
  } else {
    // Ints take part only while small: int64 arithmetic and conversions to float64 are then
    // exact, as Python's are.
    constexpr int kIntBits = 31;
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(v.obj, &overflow);
    if (overflow || x <= -(1LL << kIntBits) || x >= (1LL << kIntBits)) return nullptr;
    gp().GuardIntBound(v.source, kIntBits);
    info->node = NumberParam(v.source, v.obj, DType::kInt64);
    info->bits = kIntBits;
  }
  info->origins.emplace_back(v.source, v.obj);
  return info;
}

bool ValueModel::MemoRef(const Value& v, OutputSpec* spec) {
  auto it = memo_of_items_.find(v.items.get());
  if (it != memo_of_items_.end()) {
    spec->kind = OutputSpec::kRef;
    spec->index = it->second;
    return true;
  }
  spec->memo = static_cast<int32_t>(memo_of_items_.size());
  memo_of_items_[v.items.get()] = spec->memo;
  return false;
}

ValueModel::~ValueModel() {
  for (PyObject* o : keep_) Py_DECREF(o);
}

PyObject* ValueModel::Keep(PyObject* o) {
  if (o) keep_.push_back(o);
  return o;
}

int32_t ValueModel::LibraryClassSource(PyObject* obj) const {
  auto it = library_objects_.find(obj);
  return it == library_objects_.end() ? -1 : it->second;
}

int32_t ValueModel::OutputIndex(graph::NodeId node) {
  auto [it, added] = output_of_node_.try_emplace(node, static_cast<int32_t>(outputs_.size()));
  if (added) outputs_.push_back(node);
  return it->second;
}

void ValueModel::ForgetNodesFrom(size_t first_node) {
  auto gone = [&](graph::NodeId node) { return static_cast<size_t>(node) >= first_node; };
  absl::erase_if(param_of_number_, [&](const auto& entry) { return gone(entry.second); });
  absl::erase_if(param_of_source_, [&](const auto& entry) { return gone(entry.second); });
  absl::erase_if(param_of_object_, [&](const auto& entry) { return gone(entry.second.first); });
}

void ValueModel::RenumberNodes(size_t first_node, const std::vector<graph::NodeId>& new_id) {
  auto fix = [&](graph::NodeId& id) {
    if (id >= 0 && static_cast<size_t>(id) >= first_node) id = new_id[id];
  };
  for (auto& [source, node] : param_of_source_) fix(node);
  for (auto& [key, node] : param_of_number_) fix(node);
  for (auto& [obj, entry] : param_of_object_) fix(entry.first);
  absl::flat_hash_map<graph::NodeId, int32_t> outputs;
  for (const auto& [old_node, index] : output_of_node_) {
    graph::NodeId node = old_node;
    fix(node);
    if (node >= 0) outputs[node] = index;
  }
  output_of_node_ = std::move(outputs);
}

}  // namespace pijit::bytecode
