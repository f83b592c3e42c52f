// Layout assignment (graph/passes/layout_assignment.h): which nodes go blocked, where the
// reorders are left, and that the rewritten graph computes the same outputs bit for bit.
#include "graph/passes/layout_assignment.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "graph/executor.h"
#include "tests/cpp/passes/pass_test_util.h"
#include "tests/cpp/run_graph.h"

namespace pijit::graph {
namespace {

int Count(const Graph& g, Op op) {
  int n = 0;
  for (const Node& node : g.nodes()) n += node.op == op;
  return n;
}
int Blocked(const Graph& g) {
  int n = 0;
  for (const Node& node : g.nodes()) n += node.meta.shape.size() == 5;
  return n;
}

// `g` compiled as it is (no pass runs).
absl::StatusOr<CompiledGraph> CompileAsItIs(const Graph& g) {
  CompileOptions raw;
  raw.optimize = false;
  return CompiledGraph::Compile(g, raw);
}

// Runs `g` before and after the pass on the same inputs (no other pass runs) and expects the
// same outputs, bit for bit.
void ExpectSameOutputs(const Graph& before, const Graph& after, unsigned seed) {
  auto a = CompileAsItIs(before);
  auto b = CompileAsItIs(after);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  std::vector<Tensor> in;
  for (NodeId p : before.params()) in.push_back(RandomNormal(before.node(p).meta.shape, seed++));
  in[0].data<float>()[5] = NAN;
  const std::vector<Tensor> want = RunCompiled(*a, in), got = RunCompiled(*b, in);
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i].shape(), want[i].shape());
    const Tensor g = got[i].Contiguous(), w = want[i].Contiguous();
    for (int64_t k = 0; k < w.numel(); ++k) {
      const float x = g.data<float>()[k], y = w.data<float>()[k];
      ASSERT_TRUE(x == y || (std::isnan(x) && std::isnan(y))) << "output " << i << " at " << k;
    }
  }
}

// A block of a convolutional network after the other passes: a convolution with its bias and
// relu, max pooling, an affine map and relu fused into one loop, a convolution adding that
// loop's result as its residual.
constexpr const char* kBlock = R"IR(
graph(%0: f32[2,16,10,10], %1: f32[32,16,3,3], %2: f32[1,32,1,1], %3: f32[32,32,3,3], %4: f32[1,32,1,1], %5: f32[32,1,1]) {
  %6: f32[2,32,10,10] = fused_conv2d(%0, %1, %2, window=[0,1,1,1,1,1,1,1,1,1,1,0,1,1], post=[bias,relu])
  %7: f32[2,32,5,5] = max_pool2d(%6, window=[0,2,2,2,2,0,0,0,0,1,1,0,1,1])
  %8: f32[2,32,5,5] = fused(%7, %4, %5, program="mul($0, $1); add(#0, $2); relu(#1)")
  %9: f32[2,32,5,5] = fused_conv2d(%8, %3, %8, window=[0,1,1,1,1,1,1,1,1,1,1,0,1,1], post=[add,relu])
  return (%9)
}
)IR";

TEST(LayoutAssignmentTest, ABlockRunsBlockedBetweenOneReorderInAndOneOut) {
  const Graph before = ParseOrDie(kBlock);
  Graph g = before;
  ASSERT_TRUE(Changed(layout_assignment::Run(g)));
  ASSERT_TRUE(g.Verify().ok()) << g.Verify() << g.ToText();
  EXPECT_EQ(Count(g, Op::kToBlocked), 1) << g.ToText();
  EXPECT_EQ(Count(g, Op::kFromBlocked), 1) << g.ToText();
  // Both convolutions, the pooling and the loop, and the two channel vectors' views.
  EXPECT_EQ(Blocked(g), 1 + 2 + 1 + 1 + 2) << g.ToText();
  for (const Node& n : g.nodes())
    if (n.op == Op::kFusedConv2D) EXPECT_NE(n.attr, 0) << g.ToText();
  EXPECT_EQ(g.node(g.outputs()[0]).op, Op::kFromBlocked);
  EXPECT_EQ(g.node(g.outputs()[0]).meta, before.node(before.outputs()[0]).meta);
  ExpectSameOutputs(before, g, 1);
}

// A training step's pieces: the forward's convolutions, batch norm and relu, and the backward's
// convolution gradients, relu mask and batch norm gradients.
constexpr const char* kTraining = R"IR(
graph(%0: f32[2,16,6,6], %1: f32[16,16,3,3], %2: f32[16], %3: f32[16], %4: f32[16], %5: f32[16], %6: f32[16,16,3,3], %7: f32[2,16,6,6]) {
  %8: f32[2,16,6,6] = conv2d(%0, %1, window=[0,1,1,1,1,1,1,1,1,1,1,0,1,1])
  %9: f32[2,16,6,6] = batch_norm_train(%8, %2, %3, %4, %5, value=[1e-05,0.1])
  %10: f32[2,16,6,6] = relu(%9)
  %11: f32[2,16,6,6] = conv2d(%10, %6, window=[0,1,1,1,1,1,1,1,1,1,1,0,1,1])
  %12: f32[2,16,6,6] = conv2d_grad_input(%7, %6, window_shape=[0,1,1,1,1,1,1,1,1,1,1,0,1,1,2,16,6,6])
  %13: f32[16,16,3,3] = conv2d_grad_weight(%10, %7, window_shape=[0,1,1,1,1,1,1,1,1,1,1,0,1,1,16,16,3,3])
  %14: f32[2,16,6,6] = fused(%10, %12, program="greater($0, 0); where(#0, $1, 0)")
  %15: f32[4,16] = batch_norm_grad_sums(%8, %14, value=[1e-05,0.1])
  %16: f32[2,16,6,6] = batch_norm_grad_input(%8, %14, %15, %4)
  %17: f32[16,16,3,3] = conv2d_grad_weight(%0, %16, window_shape=[0,1,1,1,1,1,1,1,1,1,1,0,1,1,16,16,3,3])
  return (%11, %13, %15, %16, %17)
}
)IR";

TEST(LayoutAssignmentTest, TrainingGraphsRunBlockedThroughTheBackward) {
  const Graph before = ParseOrDie(kTraining);
  Graph after = before;
  ASSERT_TRUE(*layout_assignment::Run(after));
  // The forward's activations stay blocked from the first convolution on, and the backward
  // reads them so: batch norm, its gradients and the input gradient carry a block, the relu
  // mask runs on blocked tensors, and the weight gradients read blocked operands.
  for (const Node& n : after.nodes()) {
    if (n.op == Op::kBatchNormTrain || n.op == Op::kBatchNormGradSums ||
        n.op == Op::kBatchNormGradInput || n.op == Op::kConv2DGradInput) {
      EXPECT_NE(n.attr, 0) << after.ToText();
    }
    if (n.op == Op::kFused || n.op == Op::kRelu) EXPECT_EQ(n.meta.shape.size(), 5u) << after.ToText();
    if (n.op == Op::kConv2DGradWeight) {
      EXPECT_EQ(after.node(n.inputs[0]).meta.shape.size(), 5u) << after.ToText();
    }
  }
  // Reorders: the first input into the block (the convolution's and its weight gradient's),
  // and each blocked output out; the gradients read dout %7 as it is (NCHW: oneDNN reorders
  // it inside, no more than before).
  EXPECT_EQ(Count(after, Op::kToBlocked), 1) << after.ToText();
  EXPECT_EQ(Count(after, Op::kFromBlocked), 2) << after.ToText();
  EXPECT_EQ(ParseOrDie(after.ToText()).ToText(), after.ToText());

  // The same outputs within float32 rounding: the blocked gradient kernels sum in another
  // order, and oneDNN's NHWC kernels are others than its nChw8c ones.
  auto a = CompileAsItIs(before);
  auto b = CompileAsItIs(after);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  std::vector<Tensor> in;
  unsigned seed = 3;
  for (NodeId p : before.params()) in.push_back(RandomNormal(before.node(p).meta.shape, seed++));
  for (int k : {3, 5}) {  // running variance, gamma: positive
    for (int64_t i = 0; i < 16; ++i) in[k].data<float>()[i] = 1.0f + std::fabs(in[k].data<float>()[i]);
  }
  std::vector<Tensor> in2;
  for (const Tensor& t : in) {
    Tensor c = Tensor::Empty(t.shape(), t.dtype());
    CopyInto(t, c);
    in2.push_back(c);  // batch norm updates its running statistics in place
  }
  const std::vector<Tensor> want = RunCompiled(*a, in), got = RunCompiled(*b, in2);
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(absl::StrCat("output ", i));
    ExpectCloseToScale(got[i], want[i], 2e-5);
  }
  for (int k : {2, 3}) {  // the running statistics, updated alike
    for (int64_t i = 0; i < 16; ++i) {
      EXPECT_NEAR(in2[k].data<float>()[i], in[k].data<float>()[i], 1e-5);
    }
  }
}

// An input gradient gives its result in the block of the forward's values it meets (the relu
// mask's), not in the one its own primitive prefers (a 1x1 convolution's nChw8c against the
// 3x3 one's NHWC), so that the mask reads both without a reorder.
TEST(LayoutAssignmentTest, InputGradientsTakeTheBlockOfTheValuesTheyMeet) {
  Graph g = ParseOrDie(R"IR(
graph(%0: f32[2,32,6,6], %1: f32[32,32,3,3], %2: f32[32,32,1,1], %3: f32[2,32,6,6]) {
  %4: f32[2,32,6,6] = conv2d(%0, %1, window=[0,1,1,1,1,1,1,1,1,1,1,0,1,1])
  %5: f32[2,32,6,6] = relu(%4)
  %6: f32[2,32,6,6] = conv2d(%5, %2, window=[0,1,1,1,1,0,0,0,0,1,1,0,1,1])
  %7: f32[2,32,6,6] = conv2d_grad_input(%3, %2, window_shape=[0,1,1,1,1,0,0,0,0,1,1,0,1,1,2,32,6,6])
  %8: f32[2,32,6,6] = fused(%5, %7, program="greater($0, 0); where(#0, $1, 0)")
  %9: f32[32,32,3,3] = conv2d_grad_weight(%0, %8, window_shape=[0,1,1,1,1,1,1,1,1,1,1,0,1,1,32,32,3,3])
  return (%6, %9)
}
)IR");
  const Graph before = g;
  ASSERT_TRUE(*layout_assignment::Run(g));
  int64_t mask_block = 0, grad_block = 0;
  for (const Node& n : g.nodes()) {
    if (n.op == Op::kRelu) mask_block = n.meta.shape.back();
    if (n.op == Op::kConv2DGradInput) grad_block = n.attr;
    if (n.op == Op::kFused) EXPECT_EQ(n.meta.shape.size(), 5u) << g.ToText();
  }
  EXPECT_EQ(grad_block, mask_block) << g.ToText();
  // Reorders: x into the first convolution's block, and its result out; the 1x1 convolution
  // reads the relu's blocked result as it is.
  EXPECT_EQ(Count(g, Op::kToBlocked), 1) << g.ToText();
  EXPECT_EQ(Count(g, Op::kFromBlocked), 1) << g.ToText();
}

// A depthwise convolution runs on oneDNN's blocked kernels only after a blocked input (a 1x1
// convolution's, as in MobileNet's blocks); between NCHW values it keeps its NCHW kernels.
TEST(LayoutAssignmentTest, DepthwiseConvolutionsFollowABlockedInput) {
  Graph alone = ParseOrDie(R"IR(
graph(%0: f32[2,16,8,8], %1: f32[16,1,3,3]) {
  %2: f32[2,16,8,8] = conv2d(%0, %1, window=[0,1,1,1,1,1,1,1,1,1,1,0,1,16])
  return (%2)
}
)IR");
  EXPECT_FALSE(*layout_assignment::Run(alone)) << alone.ToText();
  Graph after_1x1 = ParseOrDie(R"IR(
graph(%0: f32[2,16,8,8], %1: f32[16,16,1,1], %2: f32[16,1,3,3]) {
  %3: f32[2,16,8,8] = conv2d(%0, %1, window=[0,1,1,1,1,0,0,0,0,1,1,0,1,1])
  %4: f32[2,16,8,8] = conv2d(%3, %2, window=[0,1,1,1,1,1,1,1,1,1,1,0,1,16])
  return (%4)
}
)IR");
  ASSERT_TRUE(*layout_assignment::Run(after_1x1));
  EXPECT_EQ(Count(after_1x1, Op::kFusedConv2D), 2) << after_1x1.ToText();
  EXPECT_EQ(Count(after_1x1, Op::kToBlocked), 1) << after_1x1.ToText();
  EXPECT_EQ(Count(after_1x1, Op::kFromBlocked), 1) << after_1x1.ToText();
}

TEST(LayoutAssignmentTest, TheTextFormRoundTrips) {
  Graph g = ParseOrDie(kBlock);
  ASSERT_TRUE(Changed(layout_assignment::Run(g)));
  const std::string text = g.ToText();
  EXPECT_NE(text.find("block="), std::string::npos) << text;
  EXPECT_EQ(ParseOrDie(text).ToText(), text);
}

// A blocked value read by ops that need NCHW (a reduction, the graph's outputs) is reordered
// once, right before its first such reader; an elementwise op on it then stays NCHW (going
// blocked would reorder its result as well).
TEST(LayoutAssignmentTest, PlainReadersShareOneReorder) {
  const Graph before = ParseOrDie(R"IR(
graph(%0: f32[1,32,6,6], %1: f32[32,32,3,3]) {
  %2: f32[1,32,6,6] = fused_conv2d(%0, %1, window=[0,1,1,1,1,1,1,1,1,1,1,0,1,1], post=[relu])
  %3: f32[1,32] = sum(%2, axes=[2,3])
  %4: f32[1,32,6,6] = mul(%2, %2)
  return (%2, %3, %4)
}
)IR");
  Graph g = before;
  ASSERT_TRUE(Changed(layout_assignment::Run(g)));
  ASSERT_TRUE(g.Verify().ok()) << g.Verify();
  EXPECT_EQ(Count(g, Op::kFromBlocked), 1) << g.ToText();
  EXPECT_EQ(Blocked(g), 2) << g.ToText();  // the input's reorder and the convolution
  ExpectSameOutputs(before, g, 2);
}

TEST(LayoutAssignmentTest, GraphsWithoutBlockedConvolutionsAreLeftAlone) {
  for (const char* text : {
           // few channels: the direct kernels, NCHW
           R"IR(
graph(%0: f32[2,3,8,8], %1: f32[4,3,3,3]) {
  %2: f32[2,4,8,8] = conv2d(%0, %1, window=[0,1,1,1,1,1,1,1,1,1,1,0,1,1])
  %3: f32[2,4,4,4] = max_pool2d(%2, window=[0,2,2,2,2,0,0,0,0,1,1,0,1,1])
  return (%3)
}
)IR",
           // float64
           R"IR(
graph(%0: f64[1,32,6,6], %1: f64[32,32,3,3]) {
  %2: f64[1,32,6,6] = conv2d(%0, %1, window=[0,1,1,1,1,1,1,1,1,1,1,0,1,1])
  return (%2)
}
)IR"}) {
    Graph g = ParseOrDie(text);
    const std::string before = g.ToText();
    EXPECT_FALSE(Changed(layout_assignment::Run(g)));
    EXPECT_EQ(g.ToText(), before);
  }
}

// The whole pipeline on a captured block: the convolutions end up blocked, the graph's
// interface is unchanged.
TEST(LayoutAssignmentTest, ThePipelinePlacesItLast) {
  const Graph g = ParseOrDie(R"IR(
graph(%0: f32[2,32,8,8], %1: f32[32,32,3,3], %2: f32[32,32,3,3]) {
  %3: f32[2,32,8,8] = conv2d(%0, %1, window=[0,1,1,1,1,1,1,1,1,1,1,0,1,1])
  %4: f32[2,32,8,8] = relu(%3)
  %5: f32[2,32,8,8] = conv2d(%4, %2, window=[0,1,1,1,1,1,1,1,1,1,1,0,1,1])
  %6: f32[2,32,8,8] = add(%5, %0)
  %7: f32[2,32,8,8] = relu(%6)
  return (%7)
}
)IR");
  auto c = CompiledGraph::Compile(g);
  ASSERT_TRUE(c.ok()) << c.status();
  const Graph& opt = c->graph();
  int blocked_convs = 0;
  for (const Node& n : opt.nodes()) blocked_convs += n.op == Op::kFusedConv2D && n.attr != 0;
  EXPECT_EQ(blocked_convs, 2) << opt.ToText();
  EXPECT_EQ(Count(opt, Op::kToBlocked), 1) << opt.ToText();    // %0, for both readers
  EXPECT_EQ(Count(opt, Op::kFromBlocked), 1) << opt.ToText();  // the output
  CompileOptions raw;
  raw.optimize = false;
  auto r = CompiledGraph::Compile(g, raw);
  ASSERT_TRUE(r.ok());
  std::vector<Tensor> in{RandomNormal({2, 32, 8, 8}, 1), RandomNormal({32, 32, 3, 3}, 2, 0.2f),
                         RandomNormal({32, 32, 3, 3}, 3, 0.2f)};
  const Tensor got = RunCompiled(*c, in)[0], want = RunCompiled(*r, in)[0];
  for (int64_t k = 0; k < want.numel(); ++k)
    ASSERT_EQ(got.data<float>()[k], want.data<float>()[k]) << k;
}

}  // namespace
}  // namespace pijit::graph
