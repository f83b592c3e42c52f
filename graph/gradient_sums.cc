#include "graph/gradient_sums.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_set.h"

namespace pijit::graph::vjp {
namespace {

// The items of an index_grad node: its ints are the target's shape (attr of them), then 4
// per item (kernels/ops.h, EncodeIndex).
struct Items {
  const int64_t* ints;
  size_t count;
  IndexItem::Kind kind(size_t i) const { return static_cast<IndexItem::Kind>(ints[4 * i]); }
  int64_t start(size_t i) const { return ints[4 * i + 1]; }
  int64_t stop(size_t i) const { return ints[4 * i + 2]; }
  int64_t step(size_t i) const { return ints[4 * i + 3]; }
};

bool ItemsOf(const Node& n, const TensorMeta& target, Items* out) {
  const size_t rank = static_cast<size_t>(n.attr);
  if (n.op != Op::kIndexGrad || rank != target.shape.size() || n.ints.size() < rank ||
      (n.ints.size() - rank) % 4 != 0) {
    return false;
  }
  *out = Items{n.ints.data() + rank, (n.ints.size() - rank) / 4};
  return true;
}

// A slice bound as an index in [0, dim] (Python's rules for step 1).
int64_t Bound(int64_t v, int64_t dim, int64_t if_none) {
  if (v == IndexItem::kNone) return if_none;
  if (v < 0) v += dim;
  return std::clamp<int64_t>(v, 0, dim);
}

bool IsSwap2D(const Node& n) {
  return n.op == Op::kTranspose && n.meta.shape.size() == 2 && n.ints.size() == 2 &&
         n.ints[0] == 1 && n.ints[1] == 0;
}

// One factor of a product: `node`, or its transpose when `transposed`. A transpose node is
// looked through, so that the factors' own inputs get concatenated (contiguous blocks).
struct Factor {
  NodeId node;
  bool transposed;
};
Factor FactorOf(const Graph& g, NodeId id, bool transposed) {
  const Node& n = g.node(id);
  return IsSwap2D(n) ? Factor{n.inputs[0], !transposed} : Factor{id, transposed};
}

// [f_1 .. f_k] joined along `axis` of the factors' values (1: columns, 0: rows). When every
// factor is a transpose, the untransposed nodes are joined along the other axis and the
// result transposed: a copy of contiguous blocks and a view, not a gather of strided ones.
NodeId Join(Builder& b, const std::vector<Factor>& factors, int64_t axis) {
  const bool all_transposed = std::all_of(factors.begin(), factors.end(),
                                          [](const Factor& f) { return f.transposed; });
  std::vector<NodeId> in;
  for (const Factor& f : factors) {
    in.push_back(all_transposed || !f.transposed ? f.node : b.SwapLast(f.node));
  }
  Attrs a;
  a.attr = all_transposed ? 1 - axis : axis;
  const NodeId joined = b.EmitN(Op::kConcat, in, std::move(a));
  return all_transposed ? b.SwapLast(joined) : joined;
}

}  // namespace

std::vector<NodeId> StackRowGradients(const Graph& g, Builder& b, const TensorMeta& target,
                                      std::vector<NodeId> parts) {
  if (parts.size() < 2 || target.shape.empty()) return parts;
  const int64_t rows = target.shape[0];
  if (rows > static_cast<int64_t>(parts.size()) || rows > 4096) return parts;  // cannot cover
  std::vector<NodeId> row_of(static_cast<size_t>(rows), kNil), rest;
  int64_t found = 0;
  for (NodeId p : parts) {
    Items items;
    const bool one_int = ItemsOf(g.node(p), target, &items) && items.count == 1 &&
                         items.kind(0) == IndexItem::kInt;
    int64_t r = one_int ? items.start(0) : -1;
    if (one_int && r < 0) r += rows;
    if (!one_int || r < 0 || r >= rows || row_of[r] != kNil) {
      rest.push_back(p);
      continue;
    }
    row_of[r] = g.node(p).inputs[0];
    ++found;
  }
  if (found != rows) return parts;
  Attrs axis;
  axis.attr = 0;
  std::vector<NodeId> out{b.EmitN(Op::kStack, row_of, std::move(axis))};
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

std::vector<NodeId> ConcatSliceGradients(const Graph& g, Builder& b, const TensorMeta& target,
                                         std::vector<NodeId> parts) {
  if (parts.size() < 2) return parts;
  // Per axis: (start, stop, the slice's gradient, the part) of the slices along it.
  std::map<size_t, std::vector<std::tuple<int64_t, int64_t, NodeId, NodeId>>> by_axis;
  for (NodeId p : parts) {
    Items items;
    if (!ItemsOf(g.node(p), target, &items)) continue;
    size_t axis = target.shape.size();
    int64_t lo = 0, hi = 0;
    bool ok = true;
    for (size_t i = 0; i < items.count && ok; ++i) {
      const int64_t dim = target.shape[i];
      ok = items.kind(i) == IndexItem::kSlice && items.step(i) == 1;
      const int64_t s = Bound(items.start(i), dim, 0), e = Bound(items.stop(i), dim, dim);
      if (!ok || (s == 0 && e == dim)) continue;
      ok = axis == target.shape.size() && s < e;  // one sliced axis, a non-empty slice
      axis = i, lo = s, hi = e;
    }
    if (ok && axis < target.shape.size()) {
      by_axis[axis].emplace_back(lo, hi, g.node(p).inputs[0], p);
    }
  }
  for (auto& [axis, slices] : by_axis) {
    std::sort(slices.begin(), slices.end());
    int64_t next = 0;
    for (const auto& s : slices) next = std::get<0>(s) == next ? std::get<1>(s) : -1;
    if (slices.size() < 2 || next != target.shape[axis]) continue;
    std::vector<NodeId> pieces, rest;
    absl::flat_hash_set<NodeId> used;
    for (const auto& s : slices) pieces.push_back(std::get<2>(s)), used.insert(std::get<3>(s));
    for (NodeId p : parts)
      if (!used.contains(p)) rest.push_back(p);
    Attrs a;
    a.attr = static_cast<int64_t>(axis);
    rest.insert(rest.begin(), b.EmitN(Op::kConcat, pieces, std::move(a)));
    return rest;  // one axis tiled: the others' slices (if any) are added as they are
  }
  return parts;
}

std::vector<NodeId> MergeMatMulGradients(const Graph& g, Builder& b, const TensorMeta& target,
                                         std::vector<NodeId> parts) {
  constexpr size_t kMinProducts = 4;  // fewer: the copies into the joined factors do not pay
  if (parts.size() < kMinProducts || target.shape.size() != 2 || !IsFloating(target.dtype)) {
    return parts;
  }
  std::vector<Factor> left, right;
  std::vector<NodeId> rest;
  auto is_2d_matmul = [&](const Node& n) {
    return n.op == Op::kMatMul && g.node(n.inputs[0]).meta.shape.size() == 2 &&
           g.node(n.inputs[1]).meta.shape.size() == 2;
  };
  for (NodeId p : parts) {
    const Node& n = g.node(p);
    if (!(n.meta == target)) {
      rest.push_back(p);
    } else if (is_2d_matmul(n)) {  // A B
      left.push_back(FactorOf(g, n.inputs[0], false));
      right.push_back(FactorOf(g, n.inputs[1], false));
    } else if (IsSwap2D(n) && is_2d_matmul(g.node(n.inputs[0]))) {  // (A B)^T = B^T A^T
      const Node& m = g.node(n.inputs[0]);
      left.push_back(FactorOf(g, m.inputs[1], true));
      right.push_back(FactorOf(g, m.inputs[0], true));
    } else {
      rest.push_back(p);
    }
  }
  if (left.size() < kMinProducts) return parts;
  if (target.shape[0] <= target.shape[1]) {
    rest.insert(rest.begin(), b.MatMul(Join(b, left, 1), Join(b, right, 0)));
    return rest;
  }
  // A target with more rows than columns is computed as the transpose of (B^T A^T), a product
  // with the fewer rows: oneDNN's float32 GEMM runs a tall product whose left factor is a
  // transposed view (a weight's gradient, dG^T H) at about half the speed of the wide one.
  std::vector<Factor> left_t, right_t;
  for (const Factor& f : right) left_t.push_back({f.node, !f.transposed});
  for (const Factor& f : left) right_t.push_back({f.node, !f.transposed});
  rest.insert(rest.begin(), b.SwapLast(b.MatMul(Join(b, left_t, 1), Join(b, right_t, 0))));
  return rest;
}

}  // namespace pijit::graph::vjp
