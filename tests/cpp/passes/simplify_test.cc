#include "graph/passes/simplify.h"

#include "tests/cpp/passes/pass_test_util.h"

namespace pijit::graph {
namespace {

TEST(SimplifyTest, ReportsChangeOnlyWhenARuleFires) {
  Graph g = ParseOrDie("graph(%0: f32[2]) {\n  %1: f32[] = constant(1)\n"
                       "  %2: f32[2] = mul(%0, %1)\n  return (%2)\n}\n");
  ASSERT_TRUE(Changed(simplify::Run(g)));
  EXPECT_EQ(g.outputs(), std::vector<NodeId>{0});
  EXPECT_FALSE(Changed(simplify::Run(g)));
}

TEST(SimplifyTest, TransposeWithNegativeAxesComposes) {
  Graph g = ParseOrDie("graph(%0: f32[2,3]) {\n  %1: f32[3,2] = transpose(%0, perm=[-1,0])\n"
                       "  %2: f32[2,3] = transpose(%1, perm=[])\n  return (%2)\n}\n");
  ASSERT_TRUE(simplify::Run(g).ok());
  EXPECT_EQ(g.outputs(), std::vector<NodeId>{0});
}

}  // namespace
}  // namespace pijit::graph
