#include "graph/passes/cse.h"

#include <cstring>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace pijit::graph::cse {
namespace {

// Everything that decides a node's value, as bytes. Nodes with equal keys compute equal values.
std::string Key(const Node& n) {
  std::string k;
  auto put = [&k](const void* p, size_t size) { k.append(static_cast<const char*>(p), size); };
  put(&n.op, sizeof(n.op));
  put(&n.meta.dtype, sizeof(n.meta.dtype));
  for (int64_t d : n.meta.shape) put(&d, sizeof(d));
  k.push_back('|');
  for (NodeId i : n.inputs) put(&i, sizeof(i));
  k.push_back('|');
  for (int64_t v : n.ints) put(&v, sizeof(v));
  k.push_back(n.keepdims ? 'k' : '-');
  put(&n.attr, sizeof(n.attr));
  k.push_back(n.dtype ? static_cast<char>('0' + static_cast<int>(*n.dtype)) : '-');
  if (n.value.defined()) {  // constants, fill values, creation parameters
    Tensor v = n.value.Contiguous();
    const DType vdt = v.dtype();
    put(&vdt, sizeof(vdt));
    for (int64_t d : v.shape()) put(&d, sizeof(d));
    put(v.raw_data(), static_cast<size_t>(v.numel()) * v.itemsize());
  }
  if (n.op == Op::kFused || n.op == Op::kFusedReduce) absl::StrAppend(&k, n.program->ToText());
  return k;
}

}  // namespace

absl::StatusOr<bool> Run(Graph& g) {
  const size_t count = g.nodes().size();
  std::vector<NodeId> canon(count);
  absl::flat_hash_map<std::string, NodeId> seen;
  bool changed = false;
  for (size_t id = 0; id < count; ++id) {
    Node& n = g.mutable_node(static_cast<NodeId>(id));
    canon[id] = static_cast<NodeId>(id);
    for (NodeId& i : n.inputs) {
      if (canon[i] != i) changed = true;
      i = canon[i];
    }
    // Each stateful node (a random draw) is its own value.
    // A control-flow node's graphs are not part of the key: each such node is its own value.
    if (n.op == Op::kParam || HasTrait(n.op, kStateful) || HasTrait(n.op, kRegion)) continue;
    auto [it, inserted] = seen.try_emplace(Key(n), static_cast<NodeId>(id));
    if (!inserted) canon[id] = it->second;
  }
  std::vector<NodeId> outputs = g.outputs();
  for (NodeId& o : outputs) {
    if (canon[o] != o) changed = true;
    o = canon[o];
  }
  g.SetOutputs(std::move(outputs));
  return changed;
}

}  // namespace pijit::graph::cse
