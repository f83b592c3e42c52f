#include "graph/passes/cse.h"

#include "tests/cpp/passes/pass_test_util.h"

namespace pijit::graph {
namespace {

TEST(CseTest, SecondRunChangesNothing) {
  Graph g = ParseOrDie(
      "graph(%0: f32[2]) {\n  %1: f32[2] = exp(%0)\n  %2: f32[2] = exp(%0)\n"
      "  %3: f32[2] = add(%1, %2)\n  return (%3, %2)\n}\n");
  ASSERT_TRUE(Changed(cse::Run(g)));
  EXPECT_EQ(g.outputs(), (std::vector<NodeId>{3, 1}));
  EXPECT_EQ(g.node(3).inputs[1], 1);
  EXPECT_FALSE(Changed(cse::Run(g)));
}

TEST(CseTest, NeverMergesParams) {
  Graph g = ParseOrDie("graph(%0: f32[2], %1: f32[2]) {\n  return (%0, %1)\n}\n");
  EXPECT_FALSE(Changed(cse::Run(g)));
  EXPECT_EQ(g.outputs(), (std::vector<NodeId>{0, 1}));
}

}  // namespace
}  // namespace pijit::graph
