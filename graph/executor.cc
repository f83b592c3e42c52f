#include "graph/executor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "kernels/comm/comm.h"
#include "kernels/errors.h"
#include "graph/backend.h"
#include "graph/device_replay.h"
#include "graph/op_profile.h"
#include "graph/control_flow_run.h"
#include "kernels/flags.h"

namespace pijit::graph {
namespace {

// Per output: whether its storage may be shared with a param, a constant or an earlier
// output. Views (reshape, transpose) share their input's storage, so they are looked through.
NodeId BaseOf(const Graph& g, NodeId id) {
  while (HasTrait(g.node(id).op, kShape)) id = g.node(id).inputs[0];
  return id;
}

std::vector<bool> SharedOutputs(const Graph& g) {
  auto base = [&g](NodeId id) { return BaseOf(g, id); };
  std::vector<bool> shared;
  std::vector<NodeId> bases;
  for (NodeId o : g.outputs()) {
    NodeId b = base(o);
    bool s = HasTrait(g.node(b).op, kSource);
    for (NodeId earlier : bases) s |= earlier == b;
    bases.push_back(b);
    shared.push_back(s);
  }
  return shared;
}

// PIJIT_MEMORY_PLAN=0 compiles graphs without a memory plan (read per compile: tests compare).
bool MemoryPlanningEnabled() {
  return flags::MemoryPlanning();
}

}  // namespace

// One arena: a buffer of the plan's size on the backend's device (Backend::AllocateArena) and,
// per slot, a storage over the slot's bytes. Each slot storage holds the buffer, so memory that
// a value somehow kept after its call stays valid; such an arena is then dropped instead of
// reused (ArenaPool::Give).
struct Arena {
  std::shared_ptr<Storage> buffer;
  std::vector<std::shared_ptr<Storage>> slots;

  Arena(const MemoryPlan& plan, const Backend& backend) : buffer(backend.AllocateArena(plan.arena_bytes)) {
    char* base = static_cast<char*>(buffer->data());
    slots.reserve(plan.slots.size());
    for (const MemoryPlan::Slot& s : plan.slots) {
      slots.push_back(Storage::Wrap(base + s.offset, s.nbytes, [keep = buffer] {}, buffer->device()));
    }
  }
  bool Contains(const void* p) const {
    const char* base = static_cast<const char*>(buffer->data());
    return p >= base && p < base + buffer->nbytes();
  }
  // Whether only the arena holds its slots (no value of the last call outlived it).
  bool Unshared() const {
    for (const auto& s : slots)
      if (s.use_count() != 1) return false;
    return true;
  }
};

// The arenas of one compiled graph that no call is using. A call takes one (or makes one, the
// first time and whenever calls overlap: other threads, or a call made on the same thread
// while another is in progress, e.g. from a Python finalizer run when a value is released)
// and gives it back; at most kMaxIdle are kept. The usual case, one call at a time, swaps one
// pointer each way and takes no lock.
class ArenaPool {
 public:
  static constexpr size_t kMaxIdle = 2;
  explicit ArenaPool(const Backend& backend) : backend_(backend) {}
  ~ArenaPool() {
    delete spare_.load();
    for (Arena* a : idle_) delete a;
  }
  std::unique_ptr<Arena> Take(const MemoryPlan& plan) {
    if (Arena* a = spare_.exchange(nullptr)) return std::unique_ptr<Arena>(a);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!idle_.empty()) {
        Arena* a = idle_.back();
        idle_.pop_back();
        return std::unique_ptr<Arena>(a);
      }
    }
    return std::make_unique<Arena>(plan, backend_);
  }
  void Give(std::unique_ptr<Arena> a) {
    if (!a->Unshared()) return;  // dropped: its buffer lives as long as what holds it
    Arena* expected = nullptr;
    if (spare_.compare_exchange_strong(expected, a.get())) {
      a.release();
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (idle_.size() + 1 < kMaxIdle) idle_.push_back(a.release());
  }

 private:
  const Backend& backend_;  // where the arenas' memory is
  std::atomic<Arena*> spare_{nullptr};
  std::mutex mu_;
  std::vector<Arena*> idle_;
};

namespace {

// Holds an arena for the duration of one call.
class ArenaLease {
 public:
  ArenaLease(ArenaPool* pool, const MemoryPlan& plan) : pool_(pool) {
    if (pool_) arena_ = pool_->Take(plan);
  }
  ~ArenaLease() {
    if (arena_) pool_->Give(std::move(arena_));
  }
  ArenaLease(const ArenaLease&) = delete;
  ArenaLease& operator=(const ArenaLease&) = delete;
  Arena* get() const { return arena_.get(); }

 private:
  ArenaPool* pool_;
  std::unique_ptr<Arena> arena_;
};

// The all-reduces a call has started and not yet waited for. The executor starts each one when
// its node comes (graph/passes/collective_schedule.h moves them up to where their inputs are
// ready) and waits only when a node reads its result, so the communication runs behind the
// nodes in between (a backward's remaining layers).
class InFlight {
 public:
  ~InFlight() { (void)WaitAll(); }  // an error left some: they finish before the arena goes
  bool empty() const { return items_.empty(); }
  void Add(NodeId id, std::shared_ptr<comm::Work> work) { items_.push_back({id, std::move(work)}); }
  absl::Status WaitFor(NodeId id) {
    for (size_t i = 0; i < items_.size(); ++i) {
      if (items_[i].first != id) continue;
      std::shared_ptr<comm::Work> work = std::move(items_[i].second);
      items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(i));
      return work->Wait();
    }
    return absl::OkStatus();
  }
  absl::Status WaitAll() {
    absl::Status first;
    for (auto& [id, work] : items_) first.Update(work->Wait());
    items_.clear();
    return first;
  }

 private:
  std::vector<std::pair<NodeId, std::shared_ptr<comm::Work>>> items_;
};

// Runs node `n`: all-reduces on the host start and return (their value arrives before a reader
// waits for it in `in_flight`); any other node runs to completion on `backend`.
absl::StatusOr<Tensor> StartNode(const Backend& backend, const Node& n, absl::Span<const Tensor* const> args,
                                 const LoweredNode* lowered, NodeId id, InFlight& in_flight) {
  if (n.op != Op::kAllReduce || backend.device() != Device::kCPU || n.attr < 0) {
    return backend.RunNode(n, args, lowered);
  }
  PIJIT_ASSIGN_OR_RETURN(comm::Pending p,
                         comm::AllReduceStart(*args[0], static_cast<comm::ReduceOp>(CollectiveReduction(n)),
                                              static_cast<int>(CollectiveGroup(n))));
  if (p.work) in_flight.Add(id, std::move(p.work));
  return std::move(p.result);
}

// A computed value must live in its root's slot (its own, or its base's for a view), or
// outside the arena. Anything else sits in memory the plan gives to other values at other
// times (a kernel returned an input that the plan did not expect it to share): copy it out.
void KeepInPlan(const MemoryPlan& plan, const Arena& arena, NodeId id, Tensor& v) {
  if (!v.defined()) return;
  const Storage* s = v.storage().get();
  const int32_t home = plan.slot[plan.root[id]];
  if (home != MemoryPlan::kNoSlot && s == arena.slots[home].get()) return;
  if (!arena.Contains(s->data())) return;
  Tensor fresh = Tensor::Empty(v.shape(), v.dtype());
  CopyInto(v, fresh);
  v = std::move(fresh);
}

}  // namespace

// The first node of `g` that `backend` does not run, as an error naming it; OK if none.
absl::Status CheckSupported(const Graph& g, const Backend& backend) {
  absl::InlinedVector<const TensorMeta*, 4> metas;
  for (const Node& n : g.nodes()) {
    if (n.op == Op::kParam || n.op == Op::kConstant) continue;
    metas.clear();
    for (NodeId i : n.inputs) metas.push_back(&g.node(i).meta);
    PIJIT_RETURN_IF_ERROR(backend.Supports(n, metas));
  }
  return absl::OkStatus();
}

absl::StatusOr<CompiledGraph> CompiledGraph::Compile(Graph g, const CompileOptions& options) {
  if (!options.backend) {  // resolved first; the compile with a backend verifies the graph
    const Backend* chosen = options.device != Device::kCPU ? BackendOfDevice(options.device) : nullptr;
    if (chosen == nullptr) {
      PIJIT_ASSIGN_OR_RETURN(chosen, DefaultBackend());
    }
    CompileOptions resolved = options;
    resolved.backend = chosen;
    if (chosen->device() == Device::kCPU) return Compile(std::move(g), resolved);
    // A graph the device cannot run whole runs on the CPU: a default is a preference, and
    // inputs on a device are copied for the call.
    const Graph original = g;
    absl::StatusOr<CompiledGraph> on_device = Compile(std::move(g), resolved);
    if (on_device.ok() || !absl::IsUnimplemented(on_device.status())) return on_device;
    resolved.backend = &CpuBackend();
    absl::StatusOr<CompiledGraph> on_cpu = Compile(original, resolved);
    if (on_cpu.ok()) on_cpu->backend_note_ = std::string(on_device.status().message());
    return on_cpu;
  }
  PIJIT_RETURN_IF_ERROR(g.Verify());
  CompiledGraph c;
  c.backend_ = options.backend;
  const bool on_host = c.backend_->device() == Device::kCPU;
  {
    // Constants made from device values (the tape's) are kept as host copies when the passes
    // run (they fold constants with the CPU's kernels) or the graph runs elsewhere; a device
    // backend uploads its constants again.
    for (size_t id = 0; id < g.nodes().size(); ++id) {
      const Node& n = g.node(static_cast<NodeId>(id));
      if (n.op != Op::kConstant || n.value.device() == Device::kCPU) continue;
      if (!options.optimize && n.value.device() == c.backend_->device()) continue;
      PIJIT_ASSIGN_OR_RETURN(Tensor host, MoveToDevice(n.value, Device::kCPU));
      g.ReplaceWithConstant(static_cast<NodeId>(id), std::move(host));
    }
  }
  PipelineOptions pipeline = options.pipeline;
  pipeline.host_kernels = pipeline.host_kernels && on_host;
  const std::vector<bool> shared_before = SharedOutputs(g);
  if (options.optimize) PIJIT_RETURN_IF_ERROR(RunPipeline(g, pipeline));
  // Params the graph writes in place: a caller's tensor on another device gets the copy back.
  for (const Node& n : g.nodes()) {
    // assign writes its variable; training batch norm its running mean and variance.
    absl::InlinedVector<NodeId, 2> written;
    if (n.op == Op::kAssign) written = {n.inputs[0]};
    if (n.op == Op::kBatchNormTrain) written = {n.inputs[1], n.inputs[2]};
    for (NodeId w : written) {
      const Node& base = g.node(BaseOf(g, w));
      if (base.op == Op::kParam) c.written_params_.push_back(base.param_index);
    }
  }
  if (!on_host) PIJIT_RETURN_IF_ERROR(c.PrepareForDevice(g));
  PIJIT_RETURN_IF_ERROR(c.CompileRegions(g, options));
  PIJIT_RETURN_IF_ERROR(c.LowerNodes(g));
  // Symbolic sizes: a recording holds one call's sizes.
  // A random node draws new numbers on each call from the generator's counter at launch: a
  // recording would replay one call's draw.
  bool draws_random = false;
  for (const Node& n : g.nodes()) draws_random |= n.op == Op::kUniform || n.op == Op::kNormal;
  if (!on_host && c.backend_->CanRecord() && !options.pipeline.symbolic_sizes && !draws_random &&
      flags::CudaGraphs()) {
    c.replay_ = std::make_shared<DeviceReplay>();
  }
  const std::vector<bool> shared_after = SharedOutputs(g);
  // A constant (or a view of one) is copied too: eager gives a fresh tensor on every call,
  // and the caller may write into the one it gets.
  for (size_t i = 0; i < shared_after.size(); ++i) {
    const bool constant = g.node(BaseOf(g, g.outputs()[i])).op == Op::kConstant;
    c.copy_output_.push_back((shared_after[i] && !shared_before[i]) || constant);
  }
  const auto& nodes = g.nodes();
  c.last_use_.assign(nodes.size(), -1);
  for (size_t id = 0; id < nodes.size(); ++id)
    for (NodeId i : nodes[id].inputs) c.last_use_[i] = static_cast<int32_t>(id);
  for (NodeId o : g.outputs()) c.last_use_[o] = static_cast<int32_t>(nodes.size());
  // Symbolic sizes: the metas hold one call's sizes, so slots would be the wrong size.
  // The arenas are the backend's memory, where its kernels' planned results land.
  if (c.backend_->AllocatesArenas() && options.plan_memory && !options.pipeline.symbolic_sizes &&
      MemoryPlanningEnabled()) {
    MemoryPlan plan = PlanMemory(g);
    if (!plan.empty()) {
      c.plan_ = std::move(plan);
      c.arenas_ = std::make_shared<ArenaPool>(*c.backend_);
    }
  }
  c.graph_ = std::move(g);
  return c;
}

absl::Status CompiledGraph::CompileRegions(const Graph& g, const CompileOptions& options) {
  for (size_t id = 0; id < g.nodes().size(); ++id) {
    const Node& n = g.node(static_cast<NodeId>(id));
    if (!n.region) continue;
    CompileOptions inner = options;
    inner.backend = backend_;
    auto programs = std::make_shared<RegionPrograms>();
    for (const Graph& sub : n.region->graphs) {
      PIJIT_ASSIGN_OR_RETURN(CompiledGraph compiled, Compile(sub, inner));
      programs->graphs.push_back(std::make_shared<const CompiledGraph>(std::move(compiled)));
    }
    regions_.resize(g.nodes().size());
    regions_[id] = std::move(programs);
    // A while_grad reading its loop node: that loop keeps its trips for it.
    if (n.op == Op::kWhileGrad && g.node(n.inputs[0]).op == Op::kWhileLoop) {
      keeps_trips_.resize(g.nodes().size(), false);
      keeps_trips_[n.inputs[0]] = true;
    }
  }
  return absl::OkStatus();
}

absl::Status CompiledGraph::LowerNodes(const Graph& g) {
  absl::InlinedVector<const TensorMeta*, 4> metas;
  for (size_t id = 0; id < g.nodes().size(); ++id) {
    const Node& n = g.node(static_cast<NodeId>(id));
    if (n.op == Op::kParam || n.op == Op::kConstant || n.region) continue;
    metas.clear();
    for (NodeId i : n.inputs) metas.push_back(&g.node(i).meta);
    PIJIT_ASSIGN_OR_RETURN(std::shared_ptr<const LoweredNode> lowered, backend_->Lower(n, metas));
    if (!lowered) continue;
    lowered_.resize(g.nodes().size());
    lowered_[id] = std::move(lowered);
  }
  return absl::OkStatus();
}

absl::Status CompiledGraph::PrepareForDevice(const Graph& g) {
  PIJIT_RETURN_IF_ERROR(CheckSupported(g, *backend_));
  // The graph keeps its host constants (its text, explain and the tape read them); the nodes
  // read these device copies.
  device_constants_.resize(g.nodes().size());
  for (size_t id = 0; id < g.nodes().size(); ++id) {
    const Node& n = g.node(static_cast<NodeId>(id));
    if (n.op != Op::kConstant) continue;
    PIJIT_ASSIGN_OR_RETURN(device_constants_[id], backend_->Upload(n.value));
  }
  return absl::OkStatus();
}

absl::Status CompiledGraph::Run(absl::Span<const Tensor* const> inputs,
                                std::vector<Tensor>* outputs) const {
  const Device device = backend_->device();
  if (device == Device::kCPU) {
    const Device elsewhere = DeviceOfInputs(inputs);
    if (elsewhere == Device::kCPU) return RunOnBackend(inputs, outputs);
    return RunWithInputsMoved(inputs, outputs, *backend_, elsewhere);
  }
  if (replay_) {
    PIJIT_ASSIGN_OR_RETURN(const bool replayed, replay_->TryRun(*this, inputs, outputs));
    if (replayed) return absl::OkStatus();
  }
  return RunWithInputsMoved(inputs, outputs, *backend_, device);
}

absl::Status CompiledGraph::RunWithInputsMoved(absl::Span<const Tensor* const> inputs,
                                               std::vector<Tensor>* outputs, const Backend& here,
                                               Device outputs_to) const {
  // Inputs elsewhere come here for the call (and written ones go back); the outputs go to
  // `outputs_to` from the CPU, and from a device to the host when every input came from there
  // (a Python caller's host tensors on a device graph).
  std::vector<Tensor> moved(inputs.size());
  absl::InlinedVector<const Tensor*, 8> local(inputs.begin(), inputs.end());
  bool any_on_device = false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    any_on_device |= inputs[i]->device() != Device::kCPU;
    if (inputs[i]->device() == here.device()) continue;
    PIJIT_ASSIGN_OR_RETURN(moved[i], MoveToDevice(*inputs[i], here.device()));
    local[i] = &moved[i];
  }
  PIJIT_RETURN_IF_ERROR(RunOnBackend(local, outputs));
  for (int i : written_params_) {
    if (moved[i].defined()) PIJIT_RETURN_IF_ERROR(CopyAcross(moved[i], *inputs[i]));  // else written in place
  }
  const bool to_host = here.device() != Device::kCPU && !any_on_device;
  if (here.device() == Device::kCPU || to_host) {
    for (Tensor& t : *outputs) {
      PIJIT_ASSIGN_OR_RETURN(t, MoveToDevice(t, to_host ? Device::kCPU : outputs_to));
    }
  }
  return absl::OkStatus();
}

absl::Status CompiledGraph::RunOnBackend(absl::Span<const Tensor* const> inputs,
                                         std::vector<Tensor>* outputs) const {
  const auto& nodes = graph_.nodes();
  // A slot that an enclosing call on this thread has open is not this call's to take.
  PlannedSlot hide_enclosing_slot;
  // Declared before the values, so that they are gone when the arena goes back to the pool.
  ArenaLease lease(arenas_.get(), plan_);
  const Arena* arena = lease.get();
  InFlight in_flight;  // after the lease: what it still runs finishes before the arena goes back
  // Each node's value: inputs and constants are read in place; computed values live in `values`.
  absl::InlinedVector<Tensor, 16> values(nodes.size());
  absl::InlinedVector<const Tensor*, 16> value_of(nodes.size(), nullptr);
  absl::InlinedVector<const Tensor*, 2> args;
  // The results of the control-flow nodes run so far (graph/control_flow.h), until their last reader.
  absl::flat_hash_map<NodeId, std::vector<Tensor>> region_results;
  absl::flat_hash_map<NodeId, LoopTrips> loop_trips;  // the trips of loops a while_grad reads
  for (size_t id = 0; id < nodes.size(); ++id) {
    const Node& n = nodes[id];
    if (n.op == Op::kParam) {
      value_of[id] = inputs[n.param_index];
      continue;
    }
    if (n.op == Op::kConstant) {
      value_of[id] = device_constants_.empty() ? &n.value : &device_constants_[id];
      continue;
    }
    value_of[id] = &values[id];
    args.clear();
    for (NodeId i : n.inputs) args.push_back(value_of[i]);
    if (!in_flight.empty())
      for (NodeId i : n.inputs) PIJIT_RETURN_IF_ERROR(in_flight.WaitFor(i));
    if (!regions_.empty() && regions_[id]) {
      LoopTrips* keep = id < keeps_trips_.size() && keeps_trips_[id] ? &loop_trips[static_cast<NodeId>(id)] : nullptr;
      const LoopTrips* kept = nullptr;
      if (n.op == Op::kWhileGrad) {
        auto it = loop_trips.find(n.inputs[0]);
        if (it != loop_trips.end()) kept = &it->second;
      }
      PIJIT_ASSIGN_OR_RETURN(region_results[static_cast<NodeId>(id)], RunRegionNode(n, *regions_[id], args, keep, kept));
      values[id] = *args[0];  // its predicate (a loop's final one is false, but nothing reads it)
    } else if (n.op == Op::kResult) {
      values[id] = region_results[n.inputs[0]][static_cast<size_t>(n.attr)];
    } else {
      // The node's result goes to its slot when the plan gave it one.
      std::optional<PlannedSlot> planned;
      if (arena && plan_.slot[id] != MemoryPlan::kNoSlot) planned.emplace(arena->slots[plan_.slot[id]]);
      const LoweredNode* lowered = id < lowered_.size() ? lowered_[id].get() : nullptr;
      if (OpProfilingOn()) {
        const auto start = std::chrono::steady_clock::now();
        PIJIT_ASSIGN_OR_RETURN(values[id], StartNode(*backend_, n, args, lowered, static_cast<NodeId>(id), in_flight));
        AddOpTime(OpName(n.op), n.meta, /*eager=*/false,
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      } else {
        PIJIT_ASSIGN_OR_RETURN(values[id], StartNode(*backend_, n, args, lowered, static_cast<NodeId>(id), in_flight));
      }
    }
    if (arena) KeepInPlan(plan_, *arena, static_cast<NodeId>(id), values[id]);
    // Release inputs whose last reader this was, so their buffers can be reused.
    for (NodeId i : n.inputs) {
      if (last_use_[i] != static_cast<int32_t>(id)) continue;
      values[i] = Tensor();
      if (!region_results.empty()) region_results.erase(i);
      if (!loop_trips.empty()) loop_trips.erase(i);
    }
  }
  PIJIT_RETURN_IF_ERROR(in_flight.WaitAll());
  outputs->clear();
  const auto& outs = graph_.outputs();
  for (size_t i = 0; i < outs.size(); ++i) {
    const Tensor& v = *value_of[outs[i]];
    if (!copy_output_[i]) {
      outputs->push_back(v);
      continue;
    }
    if (v.device() == Device::kCPU) {
      Tensor fresh = Tensor::Empty(v.shape(), v.dtype());
      CopyInto(v, fresh);
      outputs->push_back(std::move(fresh));
    } else {
      PIJIT_ASSIGN_OR_RETURN(Tensor fresh, backend_->Copy(v));
      outputs->push_back(std::move(fresh));
    }
  }
  return absl::OkStatus();
}

}  // namespace pijit::graph
