#include "graph/passes/pipeline.h"

#include "graph/executor.h"
#include "tests/cpp/passes/pass_test_util.h"

namespace pijit::graph {
namespace {

TEST(PipelineTest, KeepsParamsAndOutputs) {
  Graph g = ParseOrDie(
      "graph(%0: f32[4], %1: f32[4], %2: f32[4]) {\n  %3: f32[] = constant(1)\n"
      "  %4: f32[4] = mul(%1, %3)\n  %5: f32[4] = add(%0, %4)\n  %6: f32[4] = add(%0, %4)\n"
      "  return (%5, %6, %4)\n}\n");
  ASSERT_TRUE(RunPipeline(g).ok());
  ASSERT_EQ(g.params().size(), 3u);
  ASSERT_EQ(g.outputs().size(), 3u);
  EXPECT_EQ(g.outputs()[0], g.outputs()[1]);
  EXPECT_EQ(g.outputs()[2], g.params()[1]);
}

#ifndef NDEBUG
absl::StatusOr<bool> BreakTheGraph(Graph& g) {
  g.mutable_node(1).meta.shape = {7};
  return true;
}

TEST(PipelineTest, VerifierNamesThePassAndPrintsTheIrAroundAFailure) {
  Graph g = ParseOrDie("graph(%0: f32[2]) {\n  %1: f32[2] = relu(%0)\n  return (%1)\n}\n");
  auto r = RunPass("breaker", BreakTheGraph, g);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "pass breaker left an invalid graph: verify: %1 (relu) is declared f32[7] but "
            "inference gives f32[2]\n"
            "--- before breaker ---\n"
            "graph(%0: f32[2]) {\n  %1: f32[2] = relu(%0)\n  return (%1)\n}\n"
            "--- after breaker ---\n"
            "graph(%0: f32[2]) {\n  %1: f32[7] = relu(%0)\n  return (%1)\n}\n");
}
#endif

// Passes may turn an output into a param (x*1 -> x), a constant or a copy of another output;
// the executor then copies, so callers never share storage eager would not share.
TEST(PipelineTest, ExecutorCopiesOutputsThatPassesMadeShared) {
  Graph g = ParseOrDie(
      "graph(%0: f32[2]) {\n  %1: f32[] = constant(1)\n  %2: f32[2] = mul(%0, %1)\n"
      "  %3: f32[2] = relu(%0)\n  %4: f32[2] = relu(%0)\n  %5: f32[] = constant(3)\n"
      "  %6: f32[] = neg(%5)\n  return (%2, %3, %4, %6)\n}\n");
  auto c = CompiledGraph::Compile(g);
  ASSERT_TRUE(c.ok()) << c.status();
  Tensor in = Tensor::Empty({2}, DType::kFloat32);
  in.data<float>()[0] = -1;
  in.data<float>()[1] = 2;
  const Tensor* args[] = {&in};
  std::vector<Tensor> out;
  ASSERT_TRUE(c->Run(args, &out).ok());
  ASSERT_EQ(out.size(), 4u);
  EXPECT_NE(out[0].storage(), in.storage());
  EXPECT_NE(out[1].storage(), out[2].storage());
  EXPECT_NE(out[3].storage(), c->graph().node(c->graph().outputs()[3]).value.storage());
  EXPECT_EQ(out[0].data<float>()[1], 2.0f);
  EXPECT_EQ(out[2].data<float>()[0], 0.0f);
  EXPECT_EQ(out[3].data<float>()[0], -3.0f);
}

}  // namespace
}  // namespace pijit::graph
