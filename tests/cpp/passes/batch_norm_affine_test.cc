// Inference batch norm as a per-channel affine map (graph/passes/batch_norm_affine.h) taken
// into a convolution's epilogue, the channel post-ops that epilogue gains for it (mul, add of
// a channel vector), and the expansion of training batch norm's gradient kernels for other
// backends (graph/passes/batch_norm_grad_expand.h).
#include "graph/passes/batch_norm_affine.h"

#include <cmath>
#include <string>

#include "graph/executor.h"
#include "graph/passes/batch_norm_grad_expand.h"
#include "tests/cpp/passes/pass_test_util.h"
#include "tests/cpp/run_graph.h"

namespace pijit::graph {
namespace {

constexpr int64_t kMul = static_cast<int64_t>(MatMulPost::kMul);

Window2D Same3x3() {
  Window2D w;
  for (int64_t& p : w.pad) p = 1;
  return w;
}

// Few channels (run one by one) and oneDNN on blocked layouts (many channels): channel mul
// and add post-ops, alone and after a bias, before a residual add and relu, equal the ops one
// by one within float32 rounding.
TEST(BatchNormAffineTest, ChannelPostOpsEqualTheOpsOneByOne) {
  struct Problem {
    Shape x, w;
    int64_t stride;
  };
  const Problem problems[] = {{{2, 3, 9, 9}, {5, 3, 3, 3}, 1},
                              {{2, 3, 9, 9}, {4, 3, 3, 3}, 2},
                              {{2, 32, 8, 8}, {32, 32, 3, 3}, 1},
                              {{1, 32, 9, 9}, {48, 32, 3, 3}, 2}};
  unsigned seed = 1;
  for (const Problem& p : problems) {
    Window2D win = Same3x3();
    win.stride[0] = win.stride[1] = p.stride;
    const Tensor x = RandomNormal(p.x, seed++), w = RandomNormal(p.w, seed++, 0.3f);
    const Shape out = Conv2D(x, w, nullptr, win)->shape();
    const Tensor shift = RandomNormal({1, out[1], 1, 1}, seed++);
    const Tensor scale = RandomNormal({1, out[1], 1, 1}, seed++);
    const Tensor beta = RandomNormal({1, out[1], 1, 1}, seed++);
    const Tensor res = RandomNormal(out, seed++), full = RandomNormal(out, seed++);
    const std::vector<std::pair<std::vector<int64_t>, std::vector<const Tensor*>>> chains = {
        {{kBias, kMul, kAdd, kAdd, kRelu}, {&shift, &scale, &beta, &res}},
        {{kMul, kAdd, kRelu}, {&scale, &beta}},
        {{kMul}, {&full}},
        {{kAdd, kMul}, {&res, &scale}},
    };
    for (const auto& [post, operands] : chains) {
      std::vector<TensorMeta> m;
      for (const Tensor* o : operands) m.push_back(MetaOf(*o));
      std::vector<const TensorMeta*> metas;
      for (const TensorMeta& t : m) metas.push_back(&t);
      // Channel operands join only oneDNN's blocked-layout kernels (many channels); otherwise
      // the ops run one by one, with the same results.
      if (p.x[1] >= 16) {
        EXPECT_TRUE(Conv2DEpilogueIsOnePrimitive(MetaOf(x), MetaOf(w), nullptr, win, post, metas));
      }
      auto got = Conv2DEpilogue(x, w, nullptr, win, post, operands);
      ASSERT_TRUE(got.ok()) << got.status();
      auto want = ApplyPostOpsOneByOne(*Conv2D(x, w, nullptr, win), post, operands);
      ASSERT_TRUE(want.ok());
      SCOPED_TRACE(ShapeToString(p.x) + " post size " + std::to_string(post.size()));
      ExpectCloseToScale(*got, *want, 1e-5);
    }
  }
}

Attrs Eps(double eps) {
  Attrs a;
  a.value = Tensor::Scalar<double>(eps);
  return a;
}

// relu(batch_norm(conv2d(x, w)) + residual): x, w, mean, var, gamma, beta, residual.
Graph ConvBatchNormBlock(const Shape& xs, const Shape& ws, DType dt) {
  Graph g;
  const NodeId x = g.AddParam({dt, xs}), w = g.AddParam({dt, ws});
  const int64_t c = ws[0];
  NodeId stats[4];
  for (NodeId& s : stats) s = g.AddParam({dt, {c}});
  const NodeId conv = *g.AddOp(Op::kConv2D, {x, w}, EncodeWindow(Same3x3()));
  const NodeId res = g.AddParam({dt, g.node(conv).meta.shape});
  const NodeId bn = *g.AddOp(Op::kBatchNorm, {conv, stats[0], stats[1], stats[2], stats[3]}, Eps(1e-3));
  const NodeId add = *g.AddOp(Op::kAdd, {bn, res});
  g.SetOutputs({*g.AddOp(Op::kRelu, {add})});
  return g;
}

std::vector<Tensor> BlockInputs(const Graph& g, unsigned seed) {
  std::vector<Tensor> in;
  for (NodeId p : g.params()) {
    Tensor t = RandomNormal(g.node(p).meta.shape, seed++);
    if (in.size() == 3) {  // the variance: positive
      for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = 0.5f + std::abs(t.data<float>()[i]);
    }
    in.push_back(*Cast(t, g.node(p).meta.dtype));
  }
  return in;
}

TEST(BatchNormAffineTest, ConvolutionBatchNormResidualAndReluJoinTheConvolution) {
  for (const auto& [xs, ws] : {std::pair<Shape, Shape>{{2, 3, 8, 8}, {4, 3, 3, 3}},
                               std::pair<Shape, Shape>{{2, 32, 7, 7}, {32, 32, 3, 3}}}) {
    const Graph g = ConvBatchNormBlock(xs, ws, DType::kFloat32);
    CompileOptions raw;
    raw.optimize = false;
    auto plain = CompiledGraph::Compile(g, raw);
    auto fused = CompiledGraph::Compile(g);
    ASSERT_TRUE(plain.ok() && fused.ok());
    int convs = 0, norms = 0;
    for (const Node& n : fused->graph().nodes()) {
      norms += n.op == Op::kBatchNorm;
      if (n.op != Op::kFusedConv2D) continue;
      ++convs;
      const Shape post(n.ints.begin() + kWindowInts, n.ints.end());
      // Channel post-ops join oneDNN's blocked-layout kernels (many channels) only; with few
      // channels -mean is the bias and the rest one elementwise loop.
      if (ws[0] >= 16) {
        EXPECT_EQ(post, (Shape{kBias, kMul, kAdd, kAdd, kRelu}));
      } else {
        EXPECT_EQ(post, (Shape{kBias}));
      }
    }
    EXPECT_EQ(convs, 1) << fused->graph().ToText();
    EXPECT_EQ(norms, 0) << fused->graph().ToText();
    const std::vector<Tensor> in = BlockInputs(g, 3);
    ExpectCloseToScale(RunCompiled(*fused, in)[0], RunCompiled(*plain, in)[0], 1e-5);
  }
}

TEST(BatchNormAffineTest, Float64IsRewrittenAndHalfFloatsAreNot) {
  for (DType dt : {DType::kFloat64, DType::kFloat16}) {
    Graph g = ConvBatchNormBlock({1, 2, 5, 5}, {3, 2, 3, 3}, dt);
    const Graph before = g;
    const bool changed = Changed(batch_norm_affine::Run(g));
    EXPECT_EQ(changed, dt == DType::kFloat64);
    ASSERT_TRUE(g.Verify().ok()) << g.Verify();
    if (!changed) continue;
    CompileOptions raw;
    raw.optimize = false;
    auto a = CompiledGraph::Compile(before, raw), b = CompiledGraph::Compile(g, raw);
    ASSERT_TRUE(a.ok() && b.ok());
    const std::vector<Tensor> in = BlockInputs(before, 9);
    ExpectCloseToScale(RunCompiled(*b, in)[0], RunCompiled(*a, in)[0], 1e-12);
  }
}

TEST(BatchNormAffineTest, GradientKernelsExpandIntoTheirFormula) {
  Graph g;
  const NodeId x = g.AddParam({DType::kFloat32, {3, 4, 5, 2}});
  const NodeId dy = g.AddParam({DType::kFloat32, {3, 4, 5, 2}});
  const NodeId gamma = g.AddParam({DType::kFloat32, {4}});
  const NodeId sums = *g.AddOp(Op::kBatchNormGradSums, {x, dy}, Eps(1e-5));
  const NodeId dx = *g.AddOp(Op::kBatchNormGradInput, {x, dy, sums, gamma});
  g.SetOutputs({dx, sums});
  Graph expanded = g;
  EXPECT_TRUE(Changed(batch_norm_grad_expand::Run(expanded)));
  ASSERT_TRUE(expanded.Verify().ok()) << expanded.Verify();
  for (NodeId o : expanded.outputs()) {
    EXPECT_NE(expanded.node(o).op, Op::kBatchNormGradSums);
    EXPECT_NE(expanded.node(o).op, Op::kBatchNormGradInput);
  }
  for (const Node& n : expanded.nodes()) {
    // What is left of the kernels is dead, for dce.
    if (n.op == Op::kBatchNormGradSums || n.op == Op::kBatchNormGradInput) ADD_FAILURE() << expanded.ToText();
  }
  CompileOptions raw;
  raw.optimize = false;
  auto a = CompiledGraph::Compile(g, raw), b = CompiledGraph::Compile(expanded, raw);
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<Tensor> in = {RandomNormal({3, 4, 5, 2}, 1), RandomNormal({3, 4, 5, 2}, 2),
                            RandomNormal({4}, 3)};
  const std::vector<Tensor> want = RunCompiled(*a, in), got = RunCompiled(*b, in);
  ExpectCloseToScale(got[0], want[0], 1e-5);
  ExpectCloseToScale(got[1], want[1], 1e-5);
  EXPECT_FALSE(Changed(batch_norm_grad_expand::Run(expanded)));
}

}  // namespace
}  // namespace pijit::graph
