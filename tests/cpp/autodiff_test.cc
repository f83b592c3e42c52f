// graph/autodiff: every VJP rule against central finite differences in float64, on random
// inputs including broadcasting; dtype handling, zero and missing gradients, errors.
#include "graph/autodiff.h"

#include <cmath>
#include <functional>
#include <random>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "graph/executor.h"
#include "gtest/gtest.h"
#include "tests/cpp/run_graph.h"

namespace pijit::graph {
namespace {

constexpr DType kF64 = DType::kFloat64;

// Builds the forward computation over the params; returns the node to differentiate.
using Build = std::function<NodeId(Graph&, const std::vector<NodeId>&)>;

NodeId Emit(Graph& g, Op op, std::initializer_list<NodeId> in, Attrs a = {}) {
  auto r = g.AddOp(op, absl::Span<const NodeId>(in.begin(), in.size()), std::move(a));
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : 0;
}
Attrs Ints(Shape v, bool keepdims = false) {
  Attrs a;
  a.ints = std::move(v);
  a.keepdims = keepdims;
  return a;
}
Attrs Axis(int64_t axis) {
  Attrs a;
  a.attr = axis;
  return a;
}
NodeId Const(Graph& g, double v) { return g.AddConstant(Tensor::Scalar<double>(v)); }

Tensor Random(const Shape& shape, std::mt19937& rng, double lo, double hi) {
  Tensor t = Tensor::Empty(shape, kF64);
  std::uniform_real_distribution<double> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = d(rng);
  return t;
}

// sum(seed * f(inputs)), the scalar whose gradient the VJP gives.
double Objective(const CompiledGraph& f, const std::vector<Tensor>& in, const Tensor& seed) {
  Tensor y = RunCompiled(f, in)[0].Contiguous();
  double s = 0;
  for (int64_t i = 0; i < y.numel(); ++i) s += y.data<double>()[i] * seed.data<double>()[i];
  return s;
}

struct Case {
  std::vector<Shape> shapes;
  Build build;
  double lo = -1.5, hi = 1.5;  // input range (keep away from kinks and poles)
};

// Checks AppendBackward against central differences, with and without the optimising
// pipeline (fusion included) on the backward graph.
void CheckGradients(const Case& c, uint32_t seed_value = 7) {
  std::mt19937 rng(seed_value);
  Graph g;
  std::vector<NodeId> params;
  for (const Shape& s : c.shapes) params.push_back(g.AddParam({kF64, s}));
  const NodeId out = c.build(g, params);
  ASSERT_EQ(g.node(out).meta.dtype, kF64);
  Graph forward = g;
  forward.SetOutputs({out});
  const NodeId seed = g.AddParam(g.node(out).meta);
  auto grads = AppendBackward(g, {out}, {seed}, params);
  ASSERT_TRUE(grads.ok()) << grads.status().message();
  std::vector<NodeId> outs(grads->begin(), grads->end());
  g.SetOutputs(outs);
  ASSERT_TRUE(g.Verify().ok()) << g.Verify().message() << "\n" << g.ToText();

  std::vector<Tensor> in;
  for (const Shape& s : c.shapes) in.push_back(Random(s, rng, c.lo, c.hi));
  const Tensor seed_t = Random(g.node(out).meta.shape, rng, -1, 1);
  CompileOptions plain;
  plain.optimize = false;
  auto f = CompiledGraph::Compile(forward, plain);
  ASSERT_TRUE(f.ok()) << f.status().message();
  for (bool optimize : {false, true}) {
    CompileOptions options;
    options.optimize = optimize;
    auto back = CompiledGraph::Compile(g, options);
    ASSERT_TRUE(back.ok()) << back.status().message() << "\n" << g.ToText();
    std::vector<Tensor> args = in;
    args.push_back(seed_t);
    std::vector<Tensor> analytic = RunCompiled(*back, args);
    ASSERT_EQ(analytic.size(), params.size());
    for (size_t p = 0; p < params.size(); ++p) {
      Tensor a = analytic[p].Contiguous();
      ASSERT_EQ(a.shape(), c.shapes[p]) << "param " << p;
      for (int64_t i = 0; i < a.numel(); ++i) {
        const double h = 1e-6;
        std::vector<Tensor> plus = in, minus = in;
        plus[p] = Tensor::Empty(c.shapes[p], kF64);
        minus[p] = Tensor::Empty(c.shapes[p], kF64);
        CopyInto(in[p], plus[p]);
        CopyInto(in[p], minus[p]);
        plus[p].data<double>()[i] += h;
        minus[p].data<double>()[i] -= h;
        const double numeric = (Objective(*f, plus, seed_t) - Objective(*f, minus, seed_t)) / (2 * h);
        EXPECT_NEAR(a.data<double>()[i], numeric, 1e-6 * std::max(1.0, std::abs(numeric)))
            << "param " << p << " element " << i << (optimize ? " (optimised)" : "") << "\n"
            << g.ToText();
      }
    }
  }
}

Case Unary(Op op, double lo = -1.5, double hi = 1.5) {
  return {{{2, 3}}, [op](Graph& g, const std::vector<NodeId>& p) { return Emit(g, op, {p[0]}); }, lo, hi};
}
Case Binary(Op op, Shape a, Shape b, double lo = -1.5, double hi = 1.5) {
  return {{a, b}, [op](Graph& g, const std::vector<NodeId>& p) { return Emit(g, op, {p[0], p[1]}); }, lo, hi};
}

TEST(AutodiffTest, UnaryRulesMatchFiniteDifferences) {
  for (Op op : {Op::kNeg, Op::kExp, Op::kRelu, Op::kAbs, Op::kSquare, Op::kSin, Op::kCos,
                Op::kTanh, Op::kSigmoid, Op::kGelu, Op::kSoftplus, Op::kErf}) {
    SCOPED_TRACE(OpName(op));
    CheckGradients(Unary(op));
  }
  for (Op op : {Op::kLog, Op::kSqrt, Op::kRsqrt}) {
    SCOPED_TRACE(OpName(op));
    CheckGradients(Unary(op, 0.5, 2.0));
  }
}

TEST(AutodiffTest, BinaryRulesSumOverBroadcastAxes) {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{2, 3}, {2, 3}}, {{2, 3}, {3}}, {{2, 1}, {1, 3}}, {{}, {2, 3}}, {{4, 1, 3}, {2, 1}}};
  for (Op op : {Op::kAdd, Op::kSub, Op::kMul, Op::kMaximum, Op::kMinimum}) {
    for (const auto& [a, b] : shapes) {
      SCOPED_TRACE(std::string(OpName(op)) + " " + ShapeToString(a) + " " + ShapeToString(b));
      CheckGradients(Binary(op, a, b));
    }
  }
  for (const auto& [a, b] : shapes) {
    CheckGradients(Binary(Op::kDiv, a, b, 0.5, 2.0));
    CheckGradients(Binary(Op::kPow, a, b, 0.5, 2.0));
  }
}

TEST(AutodiffTest, PowWithConstantExponentAndModAwayFromJumps) {
  CheckGradients({{{2, 3}}, [](Graph& g, const std::vector<NodeId>& p) {
    return Emit(g, Op::kPow, {p[0], Const(g, 3.0)});
  }});
  CheckGradients({{{5}}, [](Graph& g, const std::vector<NodeId>& p) {
    return Emit(g, Op::kMod, {p[0], Const(g, 10.0)});  // x in (0.5, 2): no jump
  }, 0.5, 2.0});
}

TEST(AutodiffTest, WhereRoutesByCondition) {
  CheckGradients({{{2, 3}, {3}}, [](Graph& g, const std::vector<NodeId>& p) {
    Tensor cond = Tensor::Empty({2, 3}, DType::kBool);
    for (int i = 0; i < 6; ++i) cond.data<bool>()[i] = i % 3 != 1;
    return Emit(g, Op::kWhere, {g.AddConstant(cond), p[0], p[1]});
  }});
}

TEST(AutodiffTest, ClipPassesGradientInsideBoundsAndToBoundsOutside) {
  Attrs both = Ints({1, 1});
  CheckGradients({{{3, 4}, {4}, {3, 1}}, [both](Graph& g, const std::vector<NodeId>& p) {
    NodeId hi = Emit(g, Op::kAdd, {p[2], Const(g, 1.0)});
    return Emit(g, Op::kClip, {p[0], p[1], hi}, both);
  }});
  CheckGradients({{{3, 4}}, [](Graph& g, const std::vector<NodeId>& p) {
    return Emit(g, Op::kClip, {p[0], Const(g, 0.25)}, Ints({1, 0}));
  }});
  CheckGradients({{{3, 4}}, [](Graph& g, const std::vector<NodeId>& p) {
    return Emit(g, Op::kClip, {p[0], Const(g, -0.25)}, Ints({0, 1}));
  }});
}

TEST(AutodiffTest, ReductionsSpreadTheGradient) {
  for (Op op : {Op::kSum, Op::kMean, Op::kMax, Op::kMin}) {
    for (auto [axes, keep] : std::vector<std::pair<Shape, bool>>{
             {{}, false}, {{1}, false}, {{0, 2}, true}, {{-1}, true}}) {
      SCOPED_TRACE(std::string(OpName(op)) + " axes " + ShapeToString(axes));
      CheckGradients({{{2, 3, 4}}, [op, axes = axes, keep = keep](Graph& g, const std::vector<NodeId>& p) {
        return Emit(g, op, {p[0]}, Ints(axes, keep));
      }});
    }
  }
  for (Op op : {Op::kVar, Op::kStd}) {
    CheckGradients({{{3, 4}}, [op](Graph& g, const std::vector<NodeId>& p) {
      Attrs a = Ints({1});
      a.attr = 1;  // ddof
      return Emit(g, op, {p[0]}, a);
    }});
  }
}

TEST(AutodiffTest, ProdIncludingZeros) {
  for (auto [axes, keep] : std::vector<std::pair<Shape, bool>>{{{}, false}, {{1}, false}, {{0}, true}}) {
    SCOPED_TRACE("axes " + ShapeToString(axes));
    CheckGradients({{{3, 4}}, [axes = axes, keep = keep](Graph& g, const std::vector<NodeId>& p) {
      return Emit(g, Op::kProd, {p[0]}, Ints(axes, keep));
    }});
    // Zeros in x: one in row 0, two in row 2 (the FD harness perturbs around the zeros).
    CheckGradients({{{3, 4}}, [axes = axes, keep = keep](Graph& g, const std::vector<NodeId>& p) {
      Tensor m = Tensor::Empty({3, 4}, kF64);
      for (int64_t i = 0; i < 12; ++i) m.data<double>()[i] = (i == 1 || i == 8 || i == 10) ? 0 : 1;
      return Emit(g, Op::kProd, {Emit(g, Op::kMul, {p[0], g.AddConstant(m)})}, Ints(axes, keep));
    }});
  }
}

// conv2d's and avg_pool2d's adjoints, differentiated again (second order).
TEST(AutodiffTest, ConvAndAvgPoolAdjointsAreDifferentiable) {
  for (int pad : {0, 1}) {
    Window2D win;
    win.stride[0] = 2;
    win.pad[0] = win.pad[1] = win.pad[2] = win.pad[3] = pad;
    win.groups = 2;
    Attrs x_attrs, w_attrs;
    x_attrs.ints = w_attrs.ints = EncodeWindow(win);
    const Shape xs{2, 4, 5, 4}, ws{4, 2, 3, 2};
    x_attrs.ints.insert(x_attrs.ints.end(), xs.begin(), xs.end());
    w_attrs.ints.insert(w_attrs.ints.end(), ws.begin(), ws.end());
    // dout's shape: the forward conv2d's output.
    Graph probe;
    const NodeId fwd = Emit(probe, Op::kConv2D, {probe.AddParam({kF64, xs}), probe.AddParam({kF64, ws})},
                            Ints(EncodeWindow(win)));
    const Shape ds = probe.node(fwd).meta.shape;
    CheckGradients({{ds, ws}, [&](Graph& g, const std::vector<NodeId>& p) {
      return Emit(g, Op::kConv2DGradInput, {p[0], p[1]}, x_attrs);
    }});
    CheckGradients({{xs, ds}, [&](Graph& g, const std::vector<NodeId>& p) {
      return Emit(g, Op::kConv2DGradWeight, {p[0], p[1]}, w_attrs);
    }});
  }
  Window2D pool;
  pool.kernel[0] = pool.kernel[1] = 3;
  pool.stride[0] = pool.stride[1] = 2;
  pool.pad[0] = pool.pad[1] = pool.pad[2] = pool.pad[3] = 1;
  pool.count_include_pad = false;
  CheckGradients({{{2, 2, 5, 5}, {2, 2, 3, 3}}, [&](Graph& g, const std::vector<NodeId>& p) {
    return Emit(g, Op::kAvgPool2DGrad, {p[0], p[1]}, Ints(EncodeWindow(pool)));
  }});
}

Attrs Value(std::initializer_list<double> v, Shape ints = {}) {
  Attrs a;
  a.ints = std::move(ints);
  a.value = Tensor::Empty({static_cast<int64_t>(v.size())}, kF64);
  int64_t i = 0;
  for (double d : v) a.value.data<double>()[i++] = d;
  return a;
}

TEST(AutodiffTest, NormalisationLayers) {
  // layer_norm over the last two axes with gamma and beta, and over the last without them.
  CheckGradients({{{2, 3, 4}, {3, 4}, {3, 4}}, [](Graph& g, const std::vector<NodeId>& p) {
    return Emit(g, Op::kLayerNorm, {p[0], p[1], p[2]}, Value({1e-5}, {1, 1, 3, 4}));
  }});
  CheckGradients({{{3, 5}}, [](Graph& g, const std::vector<NodeId>& p) {
    return Emit(g, Op::kLayerNorm, {p[0]}, Value({1e-5}, {0, 0, 5}));
  }});
  // batch_norm with given statistics (variance kept positive by squaring).
  CheckGradients({{{3, 2, 2, 2}, {2}, {2}, {2}, {2}}, [](Graph& g, const std::vector<NodeId>& p) {
    const NodeId var = Emit(g, Op::kAdd, {Emit(g, Op::kSquare, {p[2]}), Const(g, 0.5)});
    return Emit(g, Op::kBatchNorm, {p[0], p[1], var, p[3], p[4]}, Value({1e-3}));
  }});
  // batch_norm_train: the running statistics (params 1, 2) get zero gradients.
  CheckGradients({{{4, 3, 2}, {3}, {3}, {3}, {3}}, [](Graph& g, const std::vector<NodeId>& p) {
    return Emit(g, Op::kBatchNormTrain, {p[0], p[1], p[2], p[3], p[4]}, Value({1e-3, 0.1}));
  }});
}

// batch_norm_train's gradient kernels differentiated again (second-order gradients of
// training batch norm), with (N, C) and (N, C, L) data; gamma kept away from 0.
TEST(AutodiffTest, BatchNormGradKernelsAreDifferentiable) {
  CheckGradients({{{3, 2, 4}, {3, 2, 4}}, [](Graph& g, const std::vector<NodeId>& p) {
    return Emit(g, Op::kBatchNormGradSums, {p[0], p[1]}, Value({1e-3}));
  }});
  CheckGradients({{{4, 3}, {4, 3}, {3}}, [](Graph& g, const std::vector<NodeId>& p) {
    const NodeId sums = Emit(g, Op::kBatchNormGradSums, {p[0], p[1]}, Value({1e-3}));
    const NodeId gamma = Emit(g, Op::kAdd, {Emit(g, Op::kSquare, {p[2]}), Const(g, 0.5)});
    return Emit(g, Op::kBatchNormGradInput, {p[0], p[1], sums, gamma});
  }});
}

// layer_norm_grad (layer_norm's dx) differentiated again: with gamma, without it, and with x
// as its own output gradient (one operand in two positions).
TEST(AutodiffTest, LayerNormGradIsDifferentiable) {
  CheckGradients({{{2, 3, 4}, {2, 3, 4}, {3, 4}}, [](Graph& g, const std::vector<NodeId>& p) {
    return Emit(g, Op::kLayerNormGrad, {p[0], p[1], p[2]}, Value({1e-5}, {1, 0, 3, 4}));
  }});
  CheckGradients({{{3, 5}, {3, 5}}, [](Graph& g, const std::vector<NodeId>& p) {
    return Emit(g, Op::kLayerNormGrad, {p[0], p[1]}, Value({1e-5}, {0, 0, 5}));
  }});
  CheckGradients({{{3, 5}}, [](Graph& g, const std::vector<NodeId>& p) {
    return Emit(g, Op::kLayerNormGrad, {p[0], p[0]}, Value({1e-5}, {0, 0, 5}));
  }});
}

TEST(AutodiffTest, SoftmaxAndLogSoftmax) {
  for (Op op : {Op::kSoftmax, Op::kLogSoftmax}) {
    for (int64_t axis : {0, -1}) {
      CheckGradients({{{3, 4}}, [op, axis](Graph& g, const std::vector<NodeId>& p) {
        return Emit(g, op, {p[0]}, Axis(axis));
      }});
    }
  }
}

TEST(AutodiffTest, MatMulPlainBatchedAndOneDimensional) {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{2, 3}, {3, 4}}, {{2, 2, 3}, {3, 4}}, {{3, 4}, {2, 4, 5}}, {{2, 1, 2, 3}, {3, 3, 2}},
      {{3}, {3, 4}}, {{2, 3}, {3}}, {{3}, {3}}, {{3}, {2, 3, 4}}};
  for (const auto& [a, b] : shapes) {
    SCOPED_TRACE(ShapeToString(a) + " @ " + ShapeToString(b));
    CheckGradients(Binary(Op::kMatMul, a, b));
  }
}

TEST(AutodiffTest, ShapeOps) {
  auto one = [](Op op, Attrs a) {
    return [op, a](Graph& g, const std::vector<NodeId>& p) { return Emit(g, op, {p[0]}, a); };
  };
  CheckGradients({{{2, 6}}, one(Op::kReshape, Ints({3, -1, 2}))});
  CheckGradients({{{2, 3, 4}}, one(Op::kTranspose, Ints({2, 0, 1}))});
  CheckGradients({{{2, 3, 4}}, one(Op::kTranspose, Ints({}))});
  CheckGradients({{{3, 1}}, one(Op::kBroadcastTo, Ints({2, 3, 4}))});
  CheckGradients({{{1, 3, 1}}, one(Op::kSqueeze, Ints({}))});
  CheckGradients({{{2, 3}}, one(Op::kUnsqueeze, Axis(1))});
  CheckGradients({{{2, 3, 4}}, one(Op::kFlatten, Ints({1, 2}))});
  // A 0-d result: the gradient of a sum of squares through a reshape to ().
  CheckGradients({{{1, 1}}, one(Op::kReshape, Ints({}))});
}

TEST(AutodiffTest, ConcatAndStack) {
  for (int64_t axis : {0, 1, -1}) {
    CheckGradients({{{2, 3}, {2, 3}, {2, 3}}, [axis](Graph& g, const std::vector<NodeId>& p) {
      return Emit(g, Op::kStack, {p[0], p[1], p[2]}, Axis(axis));
    }});
  }
  CheckGradients({{{2, 3}, {2, 1}, {2, 4}}, [](Graph& g, const std::vector<NodeId>& p) {
    return Emit(g, Op::kConcat, {p[0], p[1], p[2]}, Axis(1));
  }});
  CheckGradients({{{1, 3}, {4, 3}}, [](Graph& g, const std::vector<NodeId>& p) {
    return Emit(g, Op::kConcat, {p[0], p[1]}, Axis(0));
  }});
}

TEST(AutodiffTest, IndexScattersTheGradient) {
  using I = IndexItem;
  const std::vector<std::vector<I>> indices = {
      {I{I::kInt, 1}},
      {I{I::kSlice, 1, I::kNone, 2}, I{I::kInt, -1}},
      {I{I::kEllipsis}, I{I::kSlice, I::kNone, I::kNone, -1}},
      {I{I::kNewAxis}, I{I::kSlice, 0, 2, 1}, I{I::kNewAxis}, I{I::kInt, 2}},
  };
  for (const auto& items : indices) {
    Attrs a = Ints(EncodeIndex(items));
    CheckGradients({{{3, 4, 5}}, [a](Graph& g, const std::vector<NodeId>& p) {
      // Square first, so the gradient depends on the values it routes.
      return Emit(g, Op::kIndex, {Emit(g, Op::kSquare, {p[0]})}, a);
    }});
  }
}

TEST(AutodiffTest, ChainsReuseAndAccumulateGradients) {
  // x used three times, through a chain: exercises accumulation of contributions.
  CheckGradients({{{3, 4}, {4}}, [](Graph& g, const std::vector<NodeId>& p) {
    NodeId t = Emit(g, Op::kTanh, {Emit(g, Op::kMul, {p[0], p[1]})});
    NodeId s = Emit(g, Op::kSoftmax, {Emit(g, Op::kAdd, {t, p[0]})}, Axis(-1));
    NodeId m = Emit(g, Op::kMatMul, {s, Emit(g, Op::kTranspose, {p[0]}, Ints({}))});
    return Emit(g, Op::kMean, {Emit(g, Op::kMul, {m, m})}, Ints({}));
  }});
}

// An unrolled recurrence: W read at every step as h @ W, U as h @ Uᵀ (the transpose's
// gradient is the transposed product), the step's gate matrix sliced three ways.
NodeId Recurrence(Graph& g, const std::vector<NodeId>& p, bool slices_tile) {
  using I = IndexItem;
  auto cols = [](int64_t lo, int64_t hi) {
    return Ints(EncodeIndex({I{I::kSlice, I::kNone, I::kNone, 1}, I{I::kSlice, lo, hi, 1}}));
  };
  NodeId h = p[2], total = kNoGradient;
  for (int t = 0; t < 5; ++t) {
    const NodeId gates = Emit(g, Op::kAdd, {Emit(g, Op::kMatMul, {h, p[0]}),
                                            Emit(g, Op::kMatMul, {h, Emit(g, Op::kTranspose, {p[1]}, Ints({1, 0}))})});
    const NodeId i = Emit(g, Op::kSigmoid, {Emit(g, Op::kIndex, {gates}, cols(0, 2))});
    const NodeId f = Emit(g, Op::kIndex, {gates}, cols(2, slices_tile ? 4 : 3));
    const NodeId c = Emit(g, Op::kTanh, {Emit(g, Op::kIndex, {gates}, cols(4, I::kNone))});  // 2 wide
    h = Emit(g, Op::kConcat, {Emit(g, Op::kMul, {i, f}), c, Emit(g, Op::kMul, {i, c})}, Axis(1));
    const NodeId s = Emit(g, Op::kSum, {h}, Ints({}));
    total = total == kNoGradient ? s : Emit(g, Op::kAdd, {total, s});
  }
  return total;
}

// How many nodes that the gradients of the graph `build` makes over parameters of `shapes`
// read have op `op` (and, when given, shape `shape`). Contributions that were combined stay
// behind unread (compilation drops them).
int CountBackwardNodes(const std::vector<Shape>& shapes, const Build& build, Op op,
                       const Shape& shape = {}) {
  Graph g;
  std::vector<NodeId> p;
  for (const Shape& s : shapes) p.push_back(g.AddParam({kF64, s}));
  const NodeId out = build(g, p);
  const NodeId seed = g.AddParam(g.node(out).meta);
  auto grads = AppendBackward(g, {out}, {seed}, p);
  EXPECT_TRUE(grads.ok()) << grads.status().message();
  if (!grads.ok()) return -1;
  std::vector<NodeId> stack(grads->begin(), grads->end());
  absl::flat_hash_map<NodeId, bool> seen;
  int count = 0;
  while (!stack.empty()) {
    const NodeId id = stack.back();
    stack.pop_back();
    if (seen[id]) continue;
    seen[id] = true;
    const Node& n = g.node(id);
    count += id > seed && n.op == op && (shape.empty() || n.meta.shape == shape);
    stack.insert(stack.end(), n.inputs.begin(), n.inputs.end());
  }
  return count;
}

int CountBackwardNodes(bool slices_tile, Op op, const Shape& shape = {}) {
  return CountBackwardNodes(
      {{6, 6}, {6, 6}, {3, 6}},
      [slices_tile](Graph& g, const std::vector<NodeId>& p) { return Recurrence(g, p, slices_tile); },
      op, shape);
}

TEST(AutodiffTest, AWeightReadAtEveryStepGetsOneProductAndSlicesOneConcat) {
  for (bool tile : {true, false}) {
    CheckGradients({{{6, 6}, {6, 6}, {3, 6}}, [tile](Graph& g, const std::vector<NodeId>& p) {
      return Recurrence(g, p, tile);
    }});
  }
  // Five steps' products into W and into U: one product each.
  EXPECT_EQ(CountBackwardNodes(true, Op::kMatMul, {6, 6}), 2);
  EXPECT_EQ(CountBackwardNodes(true, Op::kIndexGrad), 0);  // the slices tile: concatenated
  EXPECT_GT(CountBackwardNodes(false, Op::kIndexGrad), 0);  // a gap (column 3): left as they are
}

// Tall weights (8 x 4) read at every step, W as h @ Wᵀ and V as g @ V: each gets one merged
// product, computed in its wide orientation (4 x 8, then transposed), which oneDNN runs faster.
NodeId TallRecurrence(Graph& g, const std::vector<NodeId>& p) {
  NodeId h = p[2], total = kNoGradient;
  for (int t = 0; t < 5; ++t) {
    const NodeId gates = Emit(g, Op::kMatMul, {h, Emit(g, Op::kTranspose, {p[0]}, Ints({1, 0}))});
    h = Emit(g, Op::kTanh, {Emit(g, Op::kMatMul, {Emit(g, Op::kSigmoid, {gates}), p[1]})});
    const NodeId s = Emit(g, Op::kSum, {h}, Ints({}));
    total = total == kNoGradient ? s : Emit(g, Op::kAdd, {total, s});
  }
  return total;
}

TEST(AutodiffTest, ATallWeightsMergedProductIsComputedWide) {
  const std::vector<Shape> shapes = {{8, 4}, {8, 4}, {3, 4}};
  CheckGradients({shapes, TallRecurrence});
  EXPECT_EQ(CountBackwardNodes(shapes, TallRecurrence, Op::kMatMul, {4, 8}), 2);
  EXPECT_EQ(CountBackwardNodes(shapes, TallRecurrence, Op::kMatMul, {8, 4}), 0);
}

TEST(AutodiffTest, Float32InputOfAFloat64OpGetsAFloat32Gradient) {
  Graph g;
  NodeId x = g.AddParam({DType::kFloat32, {3}});
  NodeId y = g.AddParam({kF64, {3}});
  NodeId out = Emit(g, Op::kSum, {Emit(g, Op::kMul, {x, y})}, Ints({}));
  NodeId seed = g.AddConstant(Tensor::Scalar<double>(2.0));
  auto grads = AppendBackward(g, {out}, {seed}, {x, y});
  ASSERT_TRUE(grads.ok()) << grads.status().message();
  EXPECT_EQ(g.node((*grads)[0]).meta.dtype, DType::kFloat32);
  EXPECT_EQ(g.node((*grads)[1]).meta.dtype, kF64);
  EXPECT_TRUE(g.Verify().ok());
}

// As MindSpore: an integer input's gradient is the float gradient cast to its dtype
// (truncated); a Bool input gets none; an input nothing uses gets zeros.
TEST(AutodiffTest, IntegerInputsGetTruncatedGradientsBoolNoneAndUnusedZeros) {
  Graph g;
  NodeId x = g.AddParam({kF64, {3}});
  NodeId n = g.AddParam({DType::kInt64, {3}});
  NodeId unused = g.AddParam({kF64, {2, 2}});
  NodeId flag = g.AddParam({DType::kBool, {3}});
  NodeId out = Emit(g, Op::kSum, {Emit(g, Op::kMul, {x, n})}, Ints({}));
  NodeId seed = g.AddConstant(Tensor::Scalar<double>(1.0));
  auto grads = AppendBackward(g, {out}, {seed}, {x, n, unused, flag});
  ASSERT_TRUE(grads.ok()) << grads.status().message();
  EXPECT_EQ((*grads)[3], kNoGradient);
  g.SetOutputs({(*grads)[0], (*grads)[1], (*grads)[2]});
  auto c = CompiledGraph::Compile(g);
  ASSERT_TRUE(c.ok());
  std::mt19937 rng(1);
  Tensor xv = Random({3}, rng, -3, 3), nv = Tensor::Empty({3}, DType::kInt64),
         uv = Tensor::Empty({2, 2}, kF64), fv = Tensor::Empty({3}, DType::kBool);
  for (int i = 0; i < 3; ++i) nv.data<int64_t>()[i] = i + 1;
  auto out_t = RunCompiled(*c, {xv, nv, uv, fv});
  for (int i = 0; i < 3; ++i) EXPECT_EQ(out_t[0].Contiguous().data<double>()[i], i + 1);
  ASSERT_EQ(out_t[1].dtype(), DType::kInt64);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(out_t[1].Contiguous().data<int64_t>()[i], static_cast<int64_t>(xv.data<double>()[i]));
  }
  EXPECT_EQ(out_t[2].shape(), Shape({2, 2}));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out_t[2].Contiguous().data<double>()[i], 0.0);
}

TEST(AutodiffTest, OpWithoutRuleIsAnErrorNamingIt) {
  Graph g;
  NodeId v = g.AddParam({kF64, {3}});
  NodeId x = g.AddParam({kF64, {3}});
  NodeId out = Emit(g, Op::kAssign, {v, x});  // a state write: no rule on purpose
  auto grads = AppendBackward(g, {out}, {g.AddParam({kF64, {3}})}, {x});
  ASSERT_FALSE(grads.ok());
  EXPECT_EQ(grads.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(grads.status().message().find("gradient of assign is not implemented"), std::string::npos)
      << grads.status().message();
  EXPECT_FALSE(HasVjpRule(Op::kAssign));
  EXPECT_TRUE(HasVjpRule(Op::kMatMul));
  for (Op op : {Op::kProd, Op::kLayerNorm, Op::kLayerNormGrad, Op::kBatchNorm, Op::kBatchNormTrain,
                Op::kBatchNormGradSums, Op::kBatchNormGradInput}) {
    EXPECT_TRUE(HasVjpRule(op));
  }
}

TEST(AutodiffTest, SeedOfTheWrongShapeIsAnError) {
  Graph g;
  NodeId x = g.AddParam({kF64, {2, 3}});
  NodeId out = Emit(g, Op::kExp, {x});
  auto grads = AppendBackward(g, {out}, {g.AddParam({kF64, {3}})}, {x});
  ASSERT_FALSE(grads.ok());
  EXPECT_EQ(grads.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(grads.status().message().find("(3,)"), std::string::npos) << grads.status().message();
}

TEST(AutodiffTest, IndexGradKernelWritesTheSelectionIntoZeros) {
  using I = IndexItem;
  Shape enc = EncodeIndex({I{I::kSlice, I::kNone, I::kNone, -2}, I{I::kInt, 0}});
  Tensor grad = Tensor::Empty({2}, kF64);
  grad.data<double>()[0] = 5;
  grad.data<double>()[1] = 7;
  auto r = IndexGrad(grad, {3, 2}, enc);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const double expect[] = {7, 0, 0, 0, 5, 0};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(r->data<double>()[i], expect[i]) << i;
  EXPECT_FALSE(IndexGrad(grad, {3, 3}, EncodeIndex({I{I::kInt, 0}})).ok());
}

TEST(AutodiffTest, SumToReducesLeadingAndSizeOneAxes) {
  Graph g;
  NodeId x = g.AddParam({kF64, {4, 2, 3}});
  auto r = AppendSumTo(g, x, {3, 2});
  EXPECT_FALSE(r.ok());
  r = AppendSumTo(g, x, {1, 3});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(g.node(*r).meta.shape, Shape({1, 3}));
  r = AppendSumTo(g, x, {4, 2, 3});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, x);
}

// batch_norm_train advances its running statistics: its backward recomputes the batch
// statistics with reductions instead of running the op a second time.
TEST(AutodiffTest, BatchNormTrainBackwardDoesNotRunTheStatefulOpAgain) {
  Graph g;
  NodeId x = g.AddParam({kF64, {4, 2, 3}});
  NodeId stats[4];
  for (NodeId& s : stats) s = g.AddParam({kF64, {2}});
  Attrs a;
  a.value = Tensor::Empty({2}, kF64);
  a.value.data<double>()[0] = 1e-5;
  a.value.data<double>()[1] = 0.1;
  NodeId y = Emit(g, Op::kBatchNormTrain, {x, stats[0], stats[1], stats[2], stats[3]}, a);
  auto grads = AppendBackward(g, {y}, {g.AddParam({kF64, {4, 2, 3}})}, {x, stats[0], stats[2]});
  ASSERT_TRUE(grads.ok()) << grads.status();
  int count = 0;
  for (const Node& n : g.nodes()) count += n.op == Op::kBatchNormTrain;
  EXPECT_EQ(count, 1);
  EXPECT_EQ(g.node((*grads)[1]).op, Op::kFull);  // the running mean: zeros
}

// Every op through which a floating-point gradient can flow has a rule, except those listed
// here with the reason. A new op must either get a rule or be added to this list.
TEST(AutodiffTest, EveryDifferentiableOpHasARule) {
  const absl::flat_hash_map<Op, const char*> without_rule = {
      // No floating-point input, or a floating result of nothing differentiable.
      {Op::kParam, "source"}, {Op::kConstant, "source"}, {Op::kFull, "source"},
      {Op::kArange, "source"}, {Op::kLinspace, "source"}, {Op::kEye, "source"},
      {Op::kUniform, "source"}, {Op::kNormal, "source"},
      {Op::kOneHot, "integer indices in"},
      // Integer or Bool results cut the gradient path before any rule is asked for.
      {Op::kEqual, "bool"}, {Op::kNotEqual, "bool"}, {Op::kLess, "bool"},
      {Op::kLessEqual, "bool"}, {Op::kGreater, "bool"}, {Op::kGreaterEqual, "bool"},
      {Op::kLogicalAnd, "bool"}, {Op::kLogicalOr, "bool"}, {Op::kLogicalXor, "bool"},
      {Op::kLogicalNot, "bool"}, {Op::kAll, "bool"}, {Op::kAny, "bool"},
      {Op::kBitwiseAnd, "integer"}, {Op::kBitwiseOr, "integer"}, {Op::kBitwiseXor, "integer"},
      {Op::kBitwiseNot, "integer"}, {Op::kArgMax, "integer"}, {Op::kArgMin, "integer"},
      // A state write, not a function of its inputs to differentiate through.
      {Op::kAssign, "stateful write"},
      // Differentiate graphs before fusion (AppendBackward's error says so).
      {Op::kFused, "after fusion"}, {Op::kFusedReduce, "after fusion"},
      {Op::kFusedMatMul, "after fusion"}, {Op::kFusedConv2D, "after fusion"},
      {Op::kToBlocked, "after fusion"}, {Op::kFromBlocked, "after fusion"},
      // Max pooling's adjoint: its gradient wrt dout gathers at the argmax positions, for which
      // there is no op; only gradients of gradients reach it (not supported in Python).
      {Op::kMaxPool2DGrad, "second order"},
      // Its gradient is a Cell's bprop, given to AppendBackward as a CustomVjp.
      {Op::kCustomGrad, "custom"},
      // A loop's gradient; its own gradient (second order) is not implemented.
      {Op::kWhileGrad, "second order"}, {Op::kCondGrad, "second order"},
  };
#define PIJIT_GRAPH_OP(e, name, arity, traits) \
  EXPECT_NE(HasVjpRule(Op::e), without_rule.contains(Op::e)) << name;
#include "graph/ops.def"
#undef PIJIT_GRAPH_OP
}

}  // namespace
}  // namespace pijit::graph
