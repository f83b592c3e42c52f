// Runs a verified graph natively: one kernel call per node, no Python.
//
// Compile optimises the graph (graph/passes/pipeline.h) without changing its interface:
// params keep their order and count (the cache maps them to the call's arguments) and
// outputs keep their order, metas and values. Passes may make an output share storage with
// a param, a constant or another output where eager execution gave a fresh tensor (x*1 -> x,
// folding, cse); Run copies such outputs, and constant ones, so callers see the storage eager
// would give them.
//
// Memory: after the passes, Compile plans the intermediates into one arena (graph/memory_plan.h).
// Run checks an arena out of the graph's pool (one per overlapping call), runs each
// planned node's kernel with its slot open (kernels/tensor.h PlannedSlot), so the result is
// written there directly, and checks the arena back in. A steady-state call allocates only its
// outputs (and whatever a kernel allocates for scratch). A value that lands in arena memory the
// plan did not give it (a kernel returned an input the plan did not expect it to share) is
// copied out before anything can overwrite it: a plan can cost speed, never correctness.
// Graphs with symbolic sizes (PipelineOptions::symbolic_sizes) and PIJIT_MEMORY_PLAN=0 (read
// per compile) run without a plan.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/memory_plan.h"
#include "graph/passes/pipeline.h"

namespace pijit::graph {



class Backend;

struct CompileOptions {
  bool optimize = true;
  const Backend* backend = nullptr;  // what the nodes run on; nullptr: by `device`, else DefaultBackend()
  // Where the caller's inputs are: with no backend named, a graph for inputs on a device
  // compiles for that device's backend (for the CPU's when it has a node that device lacks).
  Device device = Device::kCPU;
  bool plan_memory = true;  // and PIJIT_MEMORY_PLAN is not 0
  PipelineOptions pipeline;
};

class ArenaPool;
class LoweredNode;
class DeviceReplay;
struct RegionPrograms;

class CompiledGraph {
 public:
  static absl::StatusOr<CompiledGraph> Compile(Graph g, const CompileOptions& options = {});
  // `inputs` in parameter order; returns the graph outputs in order. On a device backend,
  // host inputs are copied to the device for the call (and back into the caller's tensor
  // when the graph assigns to it), and the outputs come back to the host when no input was
  // on the device. On the CPU, device inputs are copied to the host the same way, and the
  // outputs go to their device.
  absl::Status Run(absl::Span<const Tensor* const> inputs, std::vector<Tensor>* outputs) const;
  const Graph& graph() const { return graph_; }
  const MemoryPlan& memory_plan() const { return plan_; }
  const Backend& backend() const { return *backend_; }
  // Why the graph runs on the CPU although the default backend is another ("" if it does not).
  const std::string& backend_note() const { return backend_note_; }
  // Device graphs replayed as a whole (graph/device_replay.h); nullptr where none is made.
  const DeviceReplay* replay() const { return replay_.get(); }

 private:
  friend class DeviceReplay;
  absl::Status RunOnBackend(absl::Span<const Tensor* const> inputs, std::vector<Tensor>* outputs) const;
  // Runs with every input on `backend`'s device, copying those that are elsewhere there and
  // back (written params), and the outputs to `outputs_to` when some input was there.
  absl::Status RunWithInputsMoved(absl::Span<const Tensor* const> inputs, std::vector<Tensor>* outputs,
                                  const Backend& here, Device outputs_to) const;
  // For a device backend: checks every node runs there, notes the params the graph writes,
  // and copies the constants to the device.
  absl::Status PrepareForDevice(const Graph& g);
  // Compiles the graphs of the control-flow nodes of `g` for this graph's backend.
  absl::Status CompileRegions(const Graph& g, const CompileOptions& options);
  // What the backend compiles of each node before it runs (Backend::Lower: fused code).
  absl::Status LowerNodes(const Graph& g);
  Graph graph_;
  const Backend* backend_ = nullptr;  // graph/backend.h
  std::string backend_note_;
  std::vector<int> written_params_;  // params assign writes (for callers on another device)
  std::vector<Tensor> device_constants_;  // device backends: per node, its constant's copy
  std::vector<int32_t> last_use_;  // per node: index of the last node reading it
  std::vector<bool> copy_output_;  // per output: copy it (see the header comment)
  MemoryPlan plan_;                // empty: every value gets fresh memory
  std::shared_ptr<ArenaPool> arenas_;  // with a plan: arenas idle between calls
  std::shared_ptr<DeviceReplay> replay_;  // device backends that record whole calls
  // Per node, a control-flow node's compiled graphs (graph/control_flow_run.h); empty when
  // the graph has none.
  std::vector<std::shared_ptr<const RegionPrograms>> regions_;
  std::vector<bool> keeps_trips_;  // per node: a while_loop whose while_grad reads its trips
  // Per node, what the backend made of it at compile time; empty when it made nothing.
  std::vector<std::shared_ptr<const LoweredNode>> lowered_;
};

}  // namespace pijit::graph
