#include "kernels/flags.h"
#include "runtime/tape.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "graph/autodiff.h"
#include "graph/backend.h"
#include "graph/executor.h"
#include "kernels/errors.h"
#include "interop/convert.h"
#include "runtime/dispatch.h"
#include "runtime/eager_ops.h"

namespace py = pybind11;

namespace pijit {

int g_tapes_started = 0;

namespace {
std::vector<Tape*>& Stack() {
  static thread_local std::vector<Tape*> stack;
  return stack;
}
}  // namespace

// The tapes that record an eager op: the innermost and those enclosing it, up to a pause.
// Every one of them records, so that a gradient taken inside a gradient is differentiated too.
template <typename Fn>
void ForEachRecording(Fn&& fn) {
  auto& s = Stack();
  for (size_t i = s.size(); i-- > 0 && s[i] != nullptr;) fn(*s[i]);
}

Tape* ActiveTapeSlow() {
  auto& s = Stack();
  return s.empty() ? nullptr : s.back();
}

Tape::~Tape() {
  auto& s = Stack();
  for (size_t i = s.size(); i-- > 0;) {
    if (s[i] != this) continue;
    s.erase(s.begin() + i);
    --g_tapes_started;
  }
  for (PyObject* o : refs_) Py_DECREF(o);
  for (Custom& c : customs_) Py_DECREF(c.bprop);
}

void Tape::Start() {
  Stack().push_back(this);
  ++g_tapes_started;
}

void Tape::Stop() {
  auto& s = Stack();
  if (!s.empty() && s.back() == this) {
    s.pop_back();
    --g_tapes_started;
  }
}

void Tape::Pause() { Stack().push_back(nullptr); }
void Tape::Resume() {
  auto& s = Stack();
  if (!s.empty() && s.back() == nullptr) s.pop_back();
}

absl::Status Tape::Fail(absl::Status s) {
  if (error_.ok()) error_ = std::move(s);
  return error_;
}

graph::NodeId Tape::Track(PyObject* obj, graph::NodeId id, Tensor value) {
  auto [it, added] = node_of_.insert_or_assign(obj, id);
  if (added) {
    Py_INCREF(obj);
    refs_.push_back(obj);
  }
  values_.resize(graph_.nodes().size());
  values_[id] = std::move(value);
  return id;
}

graph::NodeId Tape::OperandNode(PyObject* obj, const Tensor& value) {
  if (obj != nullptr) {
    auto it = node_of_.find(obj);
    if (it != node_of_.end()) return it->second;
  }
  const graph::NodeId id = graph_.AddConstant(value);
  if (obj != nullptr) {
    // An enclosing tape may track it: a gradient of a gradient reads it through this object.
    Py_INCREF(obj);
    refs_.push_back(obj);
    constant_object_[id] = obj;
  }
  return id;
}

absl::StatusOr<int> Tape::Watch(PyObject* obj) {
  Tensor* t = AsTensor(obj);
  if (t == nullptr) {
    return absl::UnimplementedError(absl::StrFormat(
        "grad: only Tensors can be differentiated, got %s", Py_TYPE(obj)->tp_name));
  }
  if (auto it = node_of_.find(obj); it != node_of_.end()) {
    for (size_t i = 0; i < watched_.size(); ++i)
      if (watched_[i] == it->second) return static_cast<int>(i);
  }
  watched_.push_back(Track(obj, graph_.AddParam(MetaOf(*t)), *t));
  return static_cast<int>(watched_.size() - 1);
}

void Tape::Record(graph::Node n, absl::Span<PyObject* const> operands,
                  absl::Span<const Tensor* const> values, PyObject* result) {
  const Tensor* r = AsTensor(result);
  if (!error_.ok() || r == nullptr) return;
  const bool complex = IsComplex(r->dtype());
  if (!complex && !record_everything_ && !graph::CarriesGradient(r->dtype())) return;
  bool any = false;
  for (PyObject* o : operands) any = any || (o != nullptr && Tracks(o));
  const bool random_draw = record_everything_ && operands.empty() &&
                           graph::HasTrait(n.op, graph::kStateful);
  if (!any && !random_draw) return;
  if (complex) {  // not left unrecorded: the gradient (or the export) would miss this path
    Fail(absl::UnimplementedError(absl::StrFormat(
        record_everything_ ? "export: %s tensors cannot be held in a graph file (%s)"
                           : "grad: gradients through %s tensors are not supported (%s of a "
                             "tensor being differentiated)",
        DTypeName(r->dtype()), graph::OpName(n.op))));
    return;
  }
  n.inputs.clear();
  for (size_t i = 0; i < operands.size(); ++i) n.inputs.push_back(OperandNode(operands[i], *values[i]));
  auto id = graph_.AddNode(std::move(n));
  if (!id.ok()) {
    Fail(absl::InternalError(absl::StrFormat("grad: recording an op failed: %s", id.status().message())));
    return;
  }
  Track(result, *id, *r);
}

void Tape::AliasOne(PyObject* source, PyObject* result) {
  auto it = node_of_.find(source);
  if (it != node_of_.end()) Track(result, it->second, values_[it->second]);
}

void Tape::Alias(PyObject* source, PyObject* result) {
  ForEachRecording([&](Tape& t) { t.AliasOne(source, result); });
}

absl::Status Tape::RecordCustom(absl::Span<PyObject* const> inputs,
                                absl::Span<PyObject* const> outputs, PyObject* bprop) {
  Custom c;
  for (PyObject* o : inputs) {
    auto it = node_of_.find(o);
    c.inputs.push_back(it == node_of_.end() ? -1 : it->second);
  }
  for (PyObject* o : outputs) {
    Tensor* t = AsTensor(o);
    if (t == nullptr) {
      return absl::UnimplementedError(absl::StrFormat(
          "grad: a Cell with a bprop must return Tensors, got %s", Py_TYPE(o)->tp_name));
    }
    c.outputs.push_back(Track(o, graph_.AddParam(MetaOf(*t)), *t));
  }
  Py_INCREF(bprop);
  c.bprop = bprop;
  customs_.push_back(std::move(c));
  return absl::OkStatus();
}

void Tape::NoteHostRead(PyObject* obj) {
  ForEachRecording([&](Tape& t) {
    if (t.Tracks(obj)) ++t.host_reads_;
  });
}

absl::StatusOr<graph::Graph> Tape::ForwardGraph(absl::Span<PyObject* const> outputs) const {
  PIJIT_RETURN_IF_ERROR(error_);
  if (host_reads_ > 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "export: the call read values computed from its inputs into Python %d time(s) (asnumpy, "
        "item, bool, int, float or an index: a branch or a size that depends on the data), so "
        "no one graph computes it for other inputs", host_reads_));
  }
  if (!customs_.empty()) {
    return absl::InvalidArgumentError(
        "export: a Cell with a bprop ran; its construct is not recorded, so the graph would "
        "miss it");
  }
  graph::Graph g = graph_;
  std::vector<graph::NodeId> outs;
  for (size_t i = 0; i < outputs.size(); ++i) {
    auto it = node_of_.find(outputs[i]);
    if (it == node_of_.end()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "export: output %d is not computed from the inputs or the parameters (a constant)", i));
    }
    outs.push_back(it->second);
  }
  g.SetOutputs(outs);
  g.Compact(g.LiveNodes());
  return g;
}

namespace {

using Seeds = std::vector<std::pair<graph::NodeId, Tensor>>;

// Gradients of sum <seed, node> over `seeds` with respect to the nodes `wrt`, from the
// recorded values: the forward ops become constants, so only the backward nodes run.
absl::StatusOr<std::vector<std::optional<Tensor>>> Backward(const graph::Graph& forward,
                                                            const std::vector<Tensor>& values,
                                                            const Seeds& seeds,
                                                            absl::Span<const graph::NodeId> wrt) {
  graph::Graph g = forward;
  const graph::NodeId count = static_cast<graph::NodeId>(g.nodes().size());
  std::vector<Tensor> inputs;
  for (graph::NodeId p : g.params()) inputs.push_back(values[p]);
  std::vector<graph::NodeId> outs, seed_params;
  for (const auto& [node, seed] : seeds) {
    outs.push_back(node);
    seed_params.push_back(g.AddParam(MetaOf(seed)));
    inputs.push_back(seed);
  }
  PIJIT_ASSIGN_OR_RETURN(std::vector<graph::NodeId> grads,
                         graph::AppendBackward(g, outs, seed_params, wrt));
  std::vector<graph::NodeId> results;
  for (graph::NodeId id : grads)
    if (id != graph::kNoGradient) results.push_back(id);
  g.SetOutputs(results);
  if (flags::LogEnabled("grad")) PySys_WriteStderr("[pijit] backward graph:\n%s", g.ToText().c_str());
  for (graph::NodeId id = 0; id < count; ++id) {
    const graph::Op op = g.node(id).op;
    if (op != graph::Op::kParam && op != graph::Op::kConstant) g.ReplaceWithConstant(id, values[id]);
  }
  // Op by op, as PyNative runs: compiling (fusion, a memory plan) per gradient call would
  // cost more than it saves on graphs that run once.
  graph::CompileOptions options;
  options.optimize = false;
  options.plan_memory = false;
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : inputs) ptrs.push_back(&t);
  options.device = graph::DeviceOfInputs(ptrs);  // gradients of device tensors run there
  PIJIT_ASSIGN_OR_RETURN(graph::CompiledGraph compiled, graph::CompiledGraph::Compile(std::move(g), options));
  std::vector<Tensor> out;
  PIJIT_RETURN_IF_ERROR(compiled.Run(ptrs, &out));
  std::vector<std::optional<Tensor>> result;
  size_t k = 0;
  for (graph::NodeId id : grads) {
    if (id == graph::kNoGradient) result.emplace_back();
    else result.emplace_back(std::move(out[k++]));
  }
  return result;
}

}  // namespace

absl::StatusOr<std::vector<std::optional<Tensor>>> Tape::Gradient(
    absl::Span<PyObject* const> outputs, absl::Span<const Tensor> seeds, absl::Span<const int> wrt) {
  PIJIT_RETURN_IF_ERROR(error_);
  Seeds seeded;
  for (size_t i = 0; i < outputs.size(); ++i) {
    auto it = node_of_.find(outputs[i]);
    if (it == node_of_.end()) continue;  // not computed from what is differentiated
    const TensorMeta& m = graph_.node(it->second).meta;
    if (seeds[i].shape() != m.shape) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "grad: the sensitivity of output %d has shape %s, but the output has shape %s", i,
          ShapeToString(seeds[i].shape()), ShapeToString(m.shape)));
    }
    seeded.emplace_back(it->second, seeds[i]);
  }
  // Custom bprops, last recorded first: each needs the full gradient of its outputs, which
  // only ops recorded after it contribute to.
  for (size_t c = customs_.size(); c-- > 0;) {
    const Custom& cu = customs_[c];
    PIJIT_ASSIGN_OR_RETURN(auto douts, Backward(graph_, values_, seeded, cu.outputs));
    py::list dlist;
    for (auto& d : douts) dlist.append(d ? py::reinterpret_steal<py::object>(WrapTensor(*d)) : py::none());
    PyObject* r = PyObject_CallOneArg(cu.bprop, dlist.ptr());
    if (r == nullptr) return absl::CancelledError("python error");  // the exception stays set
    py::object grads = py::reinterpret_steal<py::object>(r);
    py::list items(grads);
    if (items.size() != cu.inputs.size()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "grad: bprop returned %d gradients for %d inputs", items.size(), cu.inputs.size()));
    }
    for (size_t k = 0; k < cu.inputs.size(); ++k) {
      if (cu.inputs[k] < 0 || items[k].is_none()) continue;
      const Tensor* t = AsTensor(items[k].ptr());
      const TensorMeta& m = graph_.node(cu.inputs[k]).meta;
      if (t == nullptr || t->shape() != m.shape) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "grad: bprop returned %s as the gradient of input %d, expected a Tensor of shape %s",
            t ? absl::StrCat("a Tensor of shape ", ShapeToString(t->shape())) : std::string(py::str(items[k].get_type())),
            k, ShapeToString(m.shape)));
      }
      seeded.emplace_back(cu.inputs[k], *t);
    }
  }
  std::vector<graph::NodeId> nodes;
  for (int w : wrt) {
    if (w < 0 || static_cast<size_t>(w) >= watched_.size())
      return absl::InternalError(absl::StrFormat("grad: no watched tensor %d", w));
    nodes.push_back(watched_[w]);
  }
  return Backward(graph_, values_, seeded, nodes);
}

absl::StatusOr<std::vector<PyObject*>> Tape::RecordedGradient(absl::Span<PyObject* const> outputs,
                                                              absl::Span<PyObject* const> seeds,
                                                              absl::Span<const int> wrt) {
  PIJIT_RETURN_IF_ERROR(error_);
  if (!customs_.empty()) {
    return absl::UnimplementedError(
        "grad: a gradient of a gradient through a Cell with a custom bprop is not supported");
  }
  graph::Graph g = graph_;
  const graph::NodeId count = static_cast<graph::NodeId>(g.nodes().size());
  // Each forward node's value and an object standing for it (a tracked tensor object).
  std::vector<Tensor> value(values_.begin(), values_.end());
  value.resize(count);
  for (graph::NodeId id = 0; id < count; ++id)
    if (g.node(id).op == graph::Op::kConstant) value[id] = g.node(id).value;
  std::vector<PyObject*> object(count, nullptr);
  for (const auto& [obj, id] : node_of_) object[id] = obj;
  for (const auto& [id, obj] : constant_object_) object[id] = obj;
  std::vector<graph::NodeId> outs, seed_params;
  for (size_t i = 0; i < outputs.size(); ++i) {
    auto it = node_of_.find(outputs[i]);
    if (it == node_of_.end()) continue;
    const Tensor* sv = AsTensor(seeds[i]);
    if (sv == nullptr) return absl::UnimplementedError("grad: a sensitivity must be a Tensor");
    if (sv->shape() != g.node(it->second).meta.shape) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "grad: the sensitivity of output %d has shape %s, but the output has shape %s", i,
          ShapeToString(sv->shape()), ShapeToString(g.node(it->second).meta.shape)));
    }
    outs.push_back(it->second);
    seed_params.push_back(g.AddParam(MetaOf(*sv)));
    value.push_back(*sv);
    object.push_back(seeds[i]);
  }
  std::vector<graph::NodeId> targets;
  for (int w : wrt) {
    if (w < 0 || static_cast<size_t>(w) >= watched_.size())
      return absl::InternalError(absl::StrFormat("grad: no watched tensor %d", w));
    targets.push_back(watched_[w]);
  }
  PIJIT_ASSIGN_OR_RETURN(std::vector<graph::NodeId> grads,
                         graph::AppendBackward(g, outs, seed_params, targets));
  // Run the backward nodes one by one, as eager ops, recorded by the recording tapes.
  std::vector<py::object> made;  // owns the objects of the backward's results
  for (graph::NodeId id = static_cast<graph::NodeId>(value.size()); id < static_cast<graph::NodeId>(g.nodes().size()); ++id) {
    const graph::Node& n = g.node(id);
    if (n.op == graph::Op::kConstant) {
      value.push_back(n.value);
      object.push_back(nullptr);
      continue;
    }
    absl::InlinedVector<const Tensor*, 3> args;
    absl::InlinedVector<PyObject*, 3> objs;
    for (graph::NodeId i : n.inputs) {
      args.push_back(&value[i]);
      objs.push_back(object[i]);
    }
    // Where the values are: the backward of device tensors runs on their device.
    PIJIT_ASSIGN_OR_RETURN(Tensor v, graph::RunNodeWhereInputsAre(n, args, /*move_host_inputs=*/true));
    PyObject* o = WrapTensor(v);
    if (o == nullptr) return absl::CancelledError("python error");
    made.push_back(py::reinterpret_steal<py::object>(o));
    graph::Node copy = n;
    ForEachRecording([&](Tape& t) { t.Record(copy, objs, args, o); });
    value.push_back(std::move(v));
    object.push_back(o);
  }
  std::vector<PyObject*> result;
  for (graph::NodeId id : grads) {
    if (id == graph::kNoGradient) {
      result.push_back(nullptr);
    } else if (object[id] != nullptr) {
      Py_INCREF(object[id]);
      result.push_back(object[id]);
    } else {
      result.push_back(WrapTensor(value[id]));  // a constant: nothing to differentiate
    }
  }
  return result;
}

void RecordCall(const ParsedCall& call, absl::Span<PyObject* const> operand_objects,
                absl::Span<const Tensor* const> operands, PyObject* result) {
  // The constants ApplyEager used for Python scalars and index arrays.
  absl::InlinedVector<Tensor, 3> constants;
  absl::InlinedVector<const Tensor*, 3> values;
  // The eager call succeeded, so this does not fail.
  if (!ResolveOperands(call, operands, &constants, &values).ok()) return;
  graph::Node n;
  static_cast<graph::Attrs&>(n) = call.attrs;
  // The variant the arguments chose: basic or advanced indexing for __getitem__, training or
  // inference for batch_norm (recording batch_norm_train as batch_norm would differentiate
  // it with its running statistics, already advanced, as if they were given).
  n.op = call.gop;
  absl::InlinedVector<PyObject*, 3> objects(operand_objects.begin(), operand_objects.end());
  std::vector<Tensor> arrays;
  if (n.op == graph::Op::kAdvIndex) {
    // Boolean masks become the index arrays of their true positions, so that the recorded
    // node's shape is known (the mask's values decide it).
    for (size_t i = 1; i < values.size(); ++i) arrays.push_back(*values[i]);
    if (!ExpandBooleanMasks(&n.ints, &arrays).ok()) return;
    values.resize(1);
    objects.resize(1);
    for (const Tensor& a : arrays) {
      values.push_back(&a);
      objects.push_back(nullptr);
    }
  }
  ForEachRecording([&](Tape& t) { t.Record(n, objects, values, result); });
}

}  // namespace pijit
