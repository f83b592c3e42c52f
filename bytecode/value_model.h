// How the trace's values meet the graph and Python (internal to bytecode/).
//
// The value model reads Python objects at guard sources into values of the trace: a tensor
// becomes one graph parameter however many sources lead to it (each guarded), a container
// of tensors a sequence of such values, a dynamic number a 0-d parameter of the dtype it is
// used as. It numbers the graph outputs and the memo slots that the output specs refer to,
// remembers the library objects built during capture (with their class's source), and holds
// the references the trace keeps alive until the capture ends.
//
// It owns the maps from sources and objects to graph nodes, so that a graph that loses or
// renumbers nodes (a graph break, a loop body moved into a loop node) tells it here.
#pragma once
#include <Python.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "bytecode/capture.h"
#include "bytecode/value.h"

namespace pijit::bytecode {

class ValueModel {
 public:
  // `out` receives the parameters' sources; its guard program and graph are the trace's.
  ValueModel(CaptureResult* out, const std::vector<guards::DynamicDim>& dynamic_dims,
             const std::vector<std::string>& dynamic_numbers)
      : out_(out), dynamic_dims_(dynamic_dims), dynamic_numbers_(dynamic_numbers) {}
  ~ValueModel();
  ValueModel(const ValueModel&) = delete;
  ValueModel& operator=(const ValueModel&) = delete;

  // Holds a reference until the capture ends: steals `o` (may be null) and returns it.
  PyObject* Keep(PyObject* o);

  // The value of `obj`, read at guard source `source`: tensors (alone or in tuples and lists)
  // become graph parameters, guarded; anything else a constant at its source.
  bool FromSource(int32_t source, PyObject* obj, Value* out);

  // Dynamic numbers (see Capture): a Python int or float at a source the caller named. In a
  // gradient transform numbers stay constants (SetNumbersFixed).
  bool IsDynamicNumber(const Value& v);
  void SetNumbersFixed(bool fixed) { numbers_fixed_ = fixed; }
  // The graph parameter for the number `obj` at `source` as a 0-d tensor of `dtype`.
  graph::NodeId NumberParam(int32_t source, PyObject* obj, DType dtype);
  // `v`'s number as a float64 / int64 graph node: a dynamic number read from its source, or
  // a computed one; nullptr when `v` is neither.
  std::shared_ptr<const NumberInfo> NumberOf(const Value& v);

  // Objects MakeLibraryObject built (kept alive by the trace), with their class's source.
  void NoteLibraryObject(PyObject* obj, int32_t class_source) { library_objects_[obj] = class_source; }
  bool IsLibraryObject(PyObject* obj) const { return library_objects_.contains(obj); }
  int32_t LibraryClassSource(PyObject* obj) const;  // -1 when `obj` is not one

  // The index of `node` among the graph outputs (added on first use).
  int32_t OutputIndex(graph::NodeId node);
  const std::vector<graph::NodeId>& outputs() const { return outputs_; }
  // A container whose identity the output keeps: a reference to its earlier memo slot
  // (true: spec is a kRef), or a new slot in spec->memo (false).
  bool MemoRef(const Value& v, OutputSpec* spec);
  int32_t num_memo() const { return static_cast<int32_t>(memo_of_items_.size()); }

  // The graph lost its nodes from `first_node` on (the instruction of a graph break).
  void ForgetNodesFrom(size_t first_node);
  // Nodes from `first_node` on were renumbered: new_id[old] (-1: gone).
  void RenumberNodes(size_t first_node, const std::vector<graph::NodeId>& new_id);

 private:
  guards::GuardProgram& gp() { return *out_->guards; }
  graph::Graph& g() { return out_->graph; }

  CaptureResult* out_;
  const std::vector<guards::DynamicDim>& dynamic_dims_;
  const std::vector<std::string>& dynamic_numbers_;
  bool numbers_fixed_ = false;
  std::vector<PyObject*> keep_;
  absl::flat_hash_map<int32_t, graph::NodeId> param_of_source_;
  // Dynamic numbers read as graph inputs: (source, dtype) -> node.
  absl::flat_hash_map<std::pair<int32_t, int>, graph::NodeId> param_of_number_;
  // Tensors read as graph inputs, by object: their node and first source.
  absl::flat_hash_map<PyObject*, std::pair<graph::NodeId, int32_t>> param_of_object_;
  absl::flat_hash_map<PyObject*, int32_t> library_objects_;
  absl::flat_hash_map<graph::NodeId, int32_t> output_of_node_;
  std::vector<graph::NodeId> outputs_;
  absl::flat_hash_map<const ValueList*, int32_t> memo_of_items_;
};

}  // namespace pijit::bytecode
