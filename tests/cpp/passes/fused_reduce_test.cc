#include "graph/passes/fused_reduce.h"

#include <cstring>
#include <random>

#include "graph/backend.h"
#include "graph/executor.h"
#include "graph/passes/fusion.h"
#include "tests/cpp/passes/pass_test_util.h"

namespace pijit::graph {
namespace {

const char* kMse =
    "graph(%0: f32[1000], %1: f32[1000]) {\n"
    "  %2: f32[1000] = sub(%0, %1)\n  %3: f32[1000] = mul(%2, %2)\n"
    "  %4: f32[] = mean(%3, axes=[], keepdims=false)\n  return (%4)\n}\n";

Tensor Random(absl::Span<const int64_t> shape, std::mt19937& rng) {
  Tensor t = Tensor::Empty(shape, DType::kFloat32);
  std::uniform_real_distribution<float> u(-2, 2);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

// The unfused graph's value, op by op with the eager kernels.
Tensor EagerMse(const Tensor& x, const Tensor& y) {
  Tensor d = *Binary(BinaryOp::kSub, x, y);
  return *Reduce(ReduceOp::kMean, *Binary(BinaryOp::kMul, d, d), {}, false, 0);
}

TEST(FusedReducePassTest, ReductionAbsorbsItsProducer) {
  Graph g = ParseOrDie(kMse);
  ASSERT_TRUE(*fusion::Run(g));
  auto changed = fused_reduce::Run(g);
  ASSERT_TRUE(changed.ok() && *changed);
  const Node& r = g.node(g.outputs()[0]);
  EXPECT_EQ(r.op, Op::kFusedReduce);
  EXPECT_EQ(r.program->ToText(), "sub($0, $1); mul(#0, #0)");
  EXPECT_TRUE(g.Verify().ok()) << g.Verify();
  EXPECT_FALSE(*fused_reduce::Run(g));  // nothing left to take
  // Both of the CPU's ways of compiling the program give the unfused value.
  std::mt19937 rng(5);
  Tensor x = Random({1000}, rng), y = Random({1000}, rng);
  const Tensor* operands[] = {&x, &y};
  std::vector<const TensorMeta*> metas;
  for (NodeId i : r.inputs) metas.push_back(&g.node(i).meta);
  for (FusedBackend codegen : {FusedBackend::kInterpreter, FusedBackend::kAuto}) {
    auto lowered = LowerFusedForCpu(r, metas, codegen);
    ASSERT_TRUE(lowered.ok()) << lowered.status();
    auto got = RunNode(r, operands, KernelOf(lowered->get()));
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->data<float>()[0], EagerMse(x, y).data<float>()[0]);
  }
}

// Compiled with symbolic sizes, the graph runs at other sizes and with a broadcast input
// (then the kernel materialises the producer): always the unfused graph's values.
TEST(FusedReducePassTest, SymbolicSizesGiveUnfusedValuesAtOtherSizes) {
  CompileOptions options;
  options.pipeline.symbolic_sizes = true;
  auto c = CompiledGraph::Compile(ParseOrDie(kMse), options);
  ASSERT_TRUE(c.ok()) << c.status();
  bool fused = false;
  for (const Node& n : c->graph().nodes()) fused |= n.op == Op::kFusedReduce;
  EXPECT_TRUE(fused) << c->graph().ToText();
  std::mt19937 rng(2);
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{5000}, {5000}}, {{200000}, {200000}}, {{7}, {1}}, {{0}, {0}}, {{3, 40}, {40}},
      {{3, 40}, {3, 1}}};
  for (const auto& [sx, sy] : cases) {
    Tensor x = Random(sx, rng), y = Random(sy, rng);
    std::vector<Tensor> out;
    const Tensor* in[] = {&x, &y};
    ASSERT_TRUE(c->Run(in, &out).ok());
    Tensor want = EagerMse(x, y);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(std::memcmp(out[0].raw_data(), want.raw_data(), sizeof(float)), 0)
        << ShapeToString(sx) << " " << ShapeToString(sy) << ": " << out[0].data<float>()[0]
        << " vs " << want.data<float>()[0];
  }
}

}  // namespace
}  // namespace pijit::graph
