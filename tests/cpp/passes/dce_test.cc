#include "graph/passes/dce.h"

#include "tests/cpp/passes/pass_test_util.h"

namespace pijit::graph {
namespace {

TEST(DceTest, KeepsParamOrderAndIndicesWhenRenumbering) {
  Graph g = ParseOrDie(
      "graph(%1: f32[2], %3: i32[2]) {\n  %0: f32[] = constant(1)\n  %2: f32[2] = neg(%1)\n"
      "  return (%1)\n}\n");
  ASSERT_TRUE(Changed(dce::Run(g)));
  ASSERT_EQ(g.params().size(), 2u);
  EXPECT_EQ(g.node(g.params()[0]).param_index, 0);
  EXPECT_EQ(g.node(g.params()[1]).param_index, 1);
  EXPECT_EQ(g.node(g.params()[1]).meta.dtype, DType::kInt32);
  EXPECT_EQ(g.outputs(), std::vector<NodeId>{0});
  EXPECT_TRUE(g.Verify().ok());
}

}  // namespace
}  // namespace pijit::graph
