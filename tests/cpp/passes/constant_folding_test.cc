#include "graph/passes/constant_folding.h"

#include <cmath>

#include "tests/cpp/passes/pass_test_util.h"

namespace pijit::graph {
namespace {

TEST(ConstantFoldingTest, FoldedValueIsTheEagerKernelsValue) {
  Graph g = ParseOrDie("graph() {\n  %0: f32[] = constant(0.7)\n  %1: f32[] = exp(%0)\n"
                       "  return (%1)\n}\n");
  ASSERT_TRUE(Changed(constant_folding::Run(g)));
  ASSERT_EQ(g.node(1).op, Op::kConstant);
  EXPECT_EQ(*g.node(1).value.data<float>(), std::exp(0.7f));
}

TEST(ConstantFoldingTest, BoundsTheSizeOfFoldedResults) {
  Graph g;
  NodeId big = g.AddConstant(Tensor::Empty({constant_folding::kMaxFoldedElements + 1},
                                           DType::kFloat32));
  auto r = g.AddOp(Op::kRelu, {big});
  ASSERT_TRUE(r.ok());
  g.SetOutputs({*r});
  EXPECT_FALSE(Changed(constant_folding::Run(g)));
  EXPECT_EQ(g.node(*r).op, Op::kRelu);
}

}  // namespace
}  // namespace pijit::graph
