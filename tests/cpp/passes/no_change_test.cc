// Each pass on a graph that holds nothing for it reports no change.
#include "graph/passes/collective_schedule.h"
#include "graph/passes/constant_folding.h"
#include "graph/passes/conv_epilogue.h"
#include "graph/passes/dce.h"
#include "graph/passes/fusion.h"
#include "graph/passes/matmul_epilogue.h"
#include "graph/passes/simplify.h"
#include "tests/cpp/passes/pass_test_util.h"

namespace pijit::graph {
namespace {

struct NoChangeCase {
  const char* name;
  absl::StatusOr<bool> (*run)(Graph& g);
  const char* text;
};

class NoChangeTest : public ::testing::TestWithParam<NoChangeCase> {};

TEST_P(NoChangeTest, ReportsNoChange) {
  Graph g = ParseOrDie(GetParam().text);
  EXPECT_FALSE(Changed(GetParam().run(g)));
}

// Graphs of one relu; of a param times a constant; of a convolution; of a product.
constexpr char kRelu[] = "graph(%0: f32[2]) {\n  %1: f32[2] = relu(%0)\n  return (%1)\n}\n";
constexpr char kRelu4[] = "graph(%0: f32[4]) {\n  %1: f32[4] = relu(%0)\n  return (%1)\n}\n";
constexpr char kTimesTwo[] =
    "graph(%0: f32[2]) {\n  %1: f32[] = constant(2)\n  %2: f32[2] = mul(%0, %1)\n"
    "  return (%2)\n}\n";
constexpr char kTimesOneTwo[] =
    "graph(%0: f32[2]) {\n  %1: f32[2] = constant([1, 2])\n  %2: f32[2] = mul(%0, %1)\n"
    "  return (%2)\n}\n";
constexpr char kConv[] =
    "graph(%0: f32[1,1,4,4], %1: f32[2,1,3,3]) {\n"
    "  %2: f32[1,2,2,2] = conv2d(%0, %1, window=[0,1,1,1,1,0,0,0,0,1,1,0,1,1])\n"
    "  return (%2)\n}\n";
constexpr char kMatMul[] =
    "graph(%0: f32[2,3], %1: f32[3,4]) {\n  %2: f32[2,4] = matmul(%0, %1)\n  return (%2)\n}\n";

INSTANTIATE_TEST_SUITE_P(
    Passes, NoChangeTest,
    ::testing::Values(
        NoChangeCase{"dce_when_everything_is_live", dce::Run, kRelu},
        NoChangeCase{"collective_schedule_without_collectives", collective_schedule::Run, kRelu},
        NoChangeCase{"constant_folding_of_non_constant_inputs", constant_folding::Run, kTimesTwo},
        NoChangeCase{"conv_epilogue_without_a_chain", conv_epilogue::Run, kConv},
        NoChangeCase{"fusion_with_nothing_to_fuse", fusion::Run, kRelu4},
        NoChangeCase{"matmul_epilogue_without_a_matmul_chain", matmul_epilogue::Run, kMatMul},
        NoChangeCase{"simplify_mul_by_a_non_uniform_constant", simplify::Run, kTimesOneTwo}),
    [](const ::testing::TestParamInfo<NoChangeCase>& info) {
      return std::string(info.param.name);
    });

}  // namespace
}  // namespace pijit::graph
