#include "graph/executor.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "kernels/errors.h"

namespace pijit::graph {
namespace {

// PIJIT_PROFILE=1: time spent in each kind of node (op, result dtype and shape) over every
// graph run, printed to stderr when the process exits, largest first.
class NodeProfile {
 public:
  static NodeProfile* Get() {
    static NodeProfile* p = std::getenv("PIJIT_PROFILE") ? new NodeProfile : nullptr;
    return p;
  }
  void Add(const Node& n, double seconds) {
    std::lock_guard<std::mutex> lock(mu_);
    Entry& e = entries_[absl::StrCat(OpName(n.op), " ", DTypeShortName(n.meta.dtype),
                                     ShapeToString(n.meta.shape))];
    e.seconds += seconds;
    ++e.count;
  }
  ~NodeProfile() = default;

 private:
  struct Entry {
    double seconds = 0;
    int64_t count = 0;
  };
  NodeProfile() { std::atexit([] { Get()->Print(); }); }
  void Print() {
    std::vector<std::pair<std::string, Entry>> rows(entries_.begin(), entries_.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
    double total = 0;
    for (const auto& r : rows) total += r.second.seconds;
    std::fprintf(stderr, "[pijit] node profile: %.3f ms in all\n", total * 1e3);
    for (const auto& [name, e] : rows) {
      std::fprintf(stderr, "  %6.2f%% %10.3f ms %8lld x  %s\n", 100 * e.seconds / total,
                   e.seconds * 1e3, static_cast<long long>(e.count), name.c_str());
    }
  }
  std::mutex mu_;
  absl::flat_hash_map<std::string, Entry> entries_;
};

// Per output: whether its storage may be shared with a param, a constant or an earlier
// output. Views (reshape, transpose) share their input's storage, so they are looked through.
std::vector<bool> SharedOutputs(const Graph& g) {
  auto base = [&g](NodeId id) {
    while (HasTrait(g.node(id).op, kShape)) id = g.node(id).inputs[0];
    return id;
  };
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

}  // namespace

absl::StatusOr<CompiledGraph> CompiledGraph::Compile(Graph g, const CompileOptions& options) {
  PIJIT_RETURN_IF_ERROR(g.Verify());
  CompiledGraph c;
  const std::vector<bool> shared_before = SharedOutputs(g);
  if (options.optimize) PIJIT_RETURN_IF_ERROR(RunPipeline(g, options.pipeline));
  const std::vector<bool> shared_after = SharedOutputs(g);
  for (size_t i = 0; i < shared_after.size(); ++i)
    c.copy_output_.push_back(shared_after[i] && !shared_before[i]);
  const auto& nodes = g.nodes();
  c.last_use_.assign(nodes.size(), -1);
  for (size_t id = 0; id < nodes.size(); ++id)
    for (NodeId i : nodes[id].inputs) c.last_use_[i] = static_cast<int32_t>(id);
  for (NodeId o : g.outputs()) c.last_use_[o] = static_cast<int32_t>(nodes.size());
  c.graph_ = std::move(g);
  return c;
}

absl::Status CompiledGraph::Run(absl::Span<const Tensor* const> inputs,
                                std::vector<Tensor>* outputs) const {
  const auto& nodes = graph_.nodes();
  // Each node's value: inputs and constants are read in place; computed values live in `values`.
  absl::InlinedVector<Tensor, 16> values(nodes.size());
  absl::InlinedVector<const Tensor*, 16> value_of(nodes.size(), nullptr);
  absl::InlinedVector<const Tensor*, 2> args;
  for (size_t id = 0; id < nodes.size(); ++id) {
    const Node& n = nodes[id];
    if (n.op == Op::kParam) {
      value_of[id] = inputs[n.param_index];
      continue;
    }
    if (n.op == Op::kConstant) {
      value_of[id] = &n.value;
      continue;
    }
    value_of[id] = &values[id];
    args.clear();
    for (NodeId i : n.inputs) args.push_back(value_of[i]);
    if (NodeProfile* prof = NodeProfile::Get()) {
      const auto start = std::chrono::steady_clock::now();
      PIJIT_ASSIGN_OR_RETURN(values[id], RunNode(n, args));
      prof->Add(n, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    } else {
      PIJIT_ASSIGN_OR_RETURN(values[id], RunNode(n, args));
    }
    // Release inputs whose last reader this was, so their buffers can be reused.
    for (NodeId i : n.inputs)
      if (last_use_[i] == static_cast<int32_t>(id)) values[i] = Tensor();
  }
  outputs->clear();
  const auto& outs = graph_.outputs();
  for (size_t i = 0; i < outs.size(); ++i) {
    const Tensor& v = *value_of[outs[i]];
    if (!copy_output_[i]) {
      outputs->push_back(v);
      continue;
    }
    Tensor fresh = Tensor::Empty(v.shape(), v.dtype());
    CopyInto(v, fresh);
    outputs->push_back(std::move(fresh));
  }
  return absl::OkStatus();
}

}  // namespace pijit::graph
