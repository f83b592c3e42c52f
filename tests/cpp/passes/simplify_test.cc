#include "graph/passes/simplify.h"

#include "tests/cpp/passes/pass_test_util.h"

namespace pijit::graph {
namespace {

TEST(SimplifyTest, ReportsChangeOnlyWhenARuleFires) {
  Graph g = ParseOrDie("graph(%0: f32[2]) {\n  %1: f32[] = constant(1)\n"
                       "  %2: f32[2] = mul(%0, %1)\n  return (%2)\n}\n");
  auto changed = simplify::Run(g);
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(*changed);
  EXPECT_EQ(g.outputs(), std::vector<NodeId>{0});
  auto again = simplify::Run(g);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);
}

TEST(SimplifyTest, MulByNonUniformConstantStays) {
  Graph g = ParseOrDie("graph(%0: f32[2]) {\n  %1: f32[2] = constant([1, 2])\n"
                       "  %2: f32[2] = mul(%0, %1)\n  return (%2)\n}\n");
  auto changed = simplify::Run(g);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
}

TEST(SimplifyTest, TransposeWithNegativeAxesComposes) {
  Graph g = ParseOrDie("graph(%0: f32[2,3]) {\n  %1: f32[3,2] = transpose(%0, perm=[-1,0])\n"
                       "  %2: f32[2,3] = transpose(%1, perm=[])\n  return (%2)\n}\n");
  ASSERT_TRUE(simplify::Run(g).ok());
  EXPECT_EQ(g.outputs(), std::vector<NodeId>{0});
}

}  // namespace
}  // namespace pijit::graph
