#include "graph/passes/collective_schedule.h"

#include "tests/cpp/passes/pass_test_util.h"

namespace pijit::graph {
namespace {

TEST(CollectiveScheduleTest, StartsAnAllReduceOfAParamFirstAndLeavesTheOtherNodesInOrder) {
  Graph g = ParseOrDie(
      "graph(%0: f32[4], %1: f32[4]) {\n"
      "  %2: f32[4] = exp(%1)\n"
      "  %3: f32[4] = assign(%0, %2)\n"
      "  %4: f32[4] = all_reduce(%1, op=max, group=0)\n"
      "  %5: f32[4] = add(%3, %4)\n"
      "  return (%5)\n}\n");
  ASSERT_TRUE(Changed(collective_schedule::Run(g)));
  ASSERT_TRUE(g.Verify().ok());
  EXPECT_EQ(g.node(2).op, Op::kAllReduce);
  EXPECT_EQ(g.node(3).op, Op::kExp);
  EXPECT_EQ(g.node(4).op, Op::kAssign);
  EXPECT_EQ(g.node(5).op, Op::kAdd);
  EXPECT_EQ(g.node(5).inputs[0], 4);
  EXPECT_EQ(g.node(5).inputs[1], 2);
  EXPECT_EQ(g.outputs(), std::vector<NodeId>{5});
}

TEST(GraphReorderTest, RejectsAnOrderThatPutsANodeBeforeItsInput) {
  Graph g = ParseOrDie("graph(%0: f32[2]) {\n  %1: f32[2] = relu(%0)\n  %2: f32[2] = exp(%1)\n"
                       "  return (%2)\n}\n");
  EXPECT_FALSE(g.Reorder({0, 2, 1}).ok());
  EXPECT_FALSE(g.Reorder({0, 1}).ok());
  EXPECT_FALSE(g.Reorder({0, 1, 1}).ok());
  ASSERT_TRUE(g.Reorder({0, 1, 2}).ok());
  EXPECT_TRUE(g.Verify().ok());
}

}  // namespace
}  // namespace pijit::graph
