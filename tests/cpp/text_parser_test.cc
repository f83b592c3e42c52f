#include "graph/text_parser.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace pijit::graph {
namespace {

// Parses `text`, expects success, and that printing gives `text` back.
void ExpectRoundTrip(const std::string& text) {
  auto g = Parse(text);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(g->Verify().ok());
  EXPECT_EQ(g->ToText(), text);
}

std::string ErrorOf(const std::string& text) {
  auto g = Parse(text);
  EXPECT_FALSE(g.ok()) << "parsed:\n" << text;
  return g.ok() ? "" : std::string(g.status().message());
}

TEST(TextParserTest, RoundTripsEveryOpAndAttribute) {
  ExpectRoundTrip(
      "graph(%0: f32[2,3], %1: f32[3,4]) {\n"
      "  %2: f32[2,4] = matmul(%0, %1)\n"
      "  %3: f32[] = constant(0.5)\n"
      "  %4: f32[2,4] = mul(%2, %3)\n"
      "  %5: f32[2,4] = relu(%4)\n"
      "  %6: f32[2,4] = exp(%5)\n"
      "  %7: f32[2,4] = neg(%6)\n"
      "  %8: f32[2,4] = log(%7)\n"
      "  %9: f32[2,4] = sub(%8, %4)\n"
      "  %10: f32[2,4] = div(%9, %3)\n"
      "  %11: f32[2,4] = add(%10, %3)\n"
      "  %12: f32[2,1] = sum(%11, axes=[1], keepdims=true)\n"
      "  %13: f32[] = mean(%12, axes=[], keepdims=false)\n"
      "  %14: f32[4,2] = transpose(%11, perm=[])\n"
      "  %15: f32[2,4] = transpose(%14, perm=[1,0])\n"
      "  %16: f32[8] = reshape(%15, shape=[-1])\n"
      "  return (%16, %13)\n"
      "}\n");
}

TEST(TextParserTest, RoundTripsShapeAxisAndWindowAttributes) {
  ExpectRoundTrip(
      "graph(%0: f32[2,1,3], %1: f32[2,3]) {\n"
      "  %2: f32[4,2,5,3] = broadcast_to(%0, shape=[4,2,5,3])\n"
      "  %3: f32[2,3] = squeeze(%0, axes=[1])\n"
      "  %4: f32[2,1,3] = unsqueeze(%1, axis=1)\n"
      "  %5: f32[2,3] = softmax(%3, axis=-1)\n"
      "  %6: f32[2,3] = log_softmax(%5, axis=0)\n"
      "  %7: f32[4,3] = concat(%5, %6, axis=0)\n"
      "  %8: f32[2,2,3] = stack(%5, %6, axis=0)\n"
      "  %9: f32[8,5,3] = flatten(%2, dims=[0,1])\n"
      "  return (%9, %4, %7, %8)\n"
      "}\n");
  EXPECT_NE(ErrorOf("graph(%0: f32[2]) {\n  %1: f32[3,2] = broadcast_to(%0)\n  return (%1)\n}\n")
                .find("broadcast_to needs shape="),
            std::string::npos);
}

TEST(TextParserTest, RoundTripsParamsInterleavedWithOps) {
  ExpectRoundTrip(
      "graph(%0: f64[3], %2: i32[3]) {\n"
      "  %1: f64[3] = neg(%0)\n"
      "  %3: f64[3] = add(%1, %2)\n"
      "  return (%3)\n"
      "}\n");
}

TEST(TextParserTest, RoundTripsConstantsOfEveryDType) {
  ExpectRoundTrip(
      "graph() {\n"
      "  %0: bool[] = constant(true)\n"
      "  %1: i32[] = constant(-7)\n"
      "  %2: i64[] = constant(9007199254740993)\n"
      "  %3: f32[] = constant(0.1)\n"
      "  %4: f64[] = constant(0.1)\n"
      "  %5: f32[] = constant(-0)\n"
      "  %6: f64[] = constant(inf)\n"
      "  %7: f32[] = constant(-inf)\n"
      "  %8: f64[] = constant(nan)\n"
      "  %9: f32[2,2] = constant(1)\n"
      "  %10: i64[3] = constant([1, 2, 3])\n"
      "  %11: f64[] = constant(1e+300)\n"
      "  return (%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11)\n"
      "}\n");
}

TEST(TextParserTest, ConstantValuesAreExact) {
  Graph g;
  g.AddConstant(Tensor::Scalar<float>(0.1f));
  g.AddConstant(Tensor::Scalar<double>(1.0 / 3.0));
  g.AddConstant(Tensor::Scalar<float>(std::numeric_limits<float>::denorm_min()));
  g.SetOutputs({0, 1, 2});
  auto back = Parse(g.ToText());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back->node(0).value.data<float>(), 0.1f);
  EXPECT_EQ(*back->node(1).value.data<double>(), 1.0 / 3.0);
  EXPECT_EQ(*back->node(2).value.data<float>(), std::numeric_limits<float>::denorm_min());
}

TEST(TextParserTest, IgnoresCommentsAndSpacing) {
  auto g = Parse("# a comment\ngraph( %0 : f32[ 2 ] ) {  # header\n"
                 "  %1 : f32[2] = relu( %0 )\n return(%1) }");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->ToText(), "graph(%0: f32[2]) {\n  %1: f32[2] = relu(%0)\n  return (%1)\n}\n");
}

TEST(TextParserTest, LargeConstantsPrintElidedAndAreRejected) {
  Graph g;
  Tensor t = Tensor::Empty({20}, DType::kInt32);
  for (int i = 0; i < 20; ++i) t.data<int32_t>()[i] = i;
  g.AddConstant(t);
  g.SetOutputs({0});
  EXPECT_EQ(g.ToText(), "graph() {\n  %0: i32[20] = constant(<20 elements>)\n  return (%0)\n}\n");
  EXPECT_EQ(ErrorOf(g.ToText()),
            "line 2, column 26: constant values were elided by the printer (<N elements>); "
            "write them out to parse this graph");
}

TEST(TextParserTest, ReportsUnknownOpWithLine) {
  EXPECT_EQ(ErrorOf("graph(%0: f32[2]) {\n  %1: f32[2] = frob(%0)\n  return (%1)\n}\n"),
            "line 2, column 16: unknown op 'frob'");
}

TEST(TextParserTest, ReportsDeclaredMetaThatInferenceContradicts) {
  EXPECT_EQ(ErrorOf("graph(%0: f32[2]) {\n  %1: f32[3] = relu(%0)\n  return (%1)\n}\n"),
            "line 2, column 3: %1 is declared f32(3,) but relu gives f32(2,)");
}

TEST(TextParserTest, ReportsKernelErrorsOfBadInputs) {
  EXPECT_EQ(ErrorOf("graph(%0: f32[2], %1: f32[3]) {\n  %2: f32[2] = add(%0, %1)\n"
                    "  return (%2)\n}\n"),
            "line 2, column 3: add: operands could not be broadcast together with shapes (2,) "
            "and (3,)");
}

TEST(TextParserTest, ReportsUseBeforeDefinition) {
  EXPECT_EQ(ErrorOf("graph(%0: f32[2]) {\n  %1: f32[2] = add(%0, %2)\n"
                    "  %2: f32[2] = relu(%0)\n  return (%1)\n}\n"),
            "line 2, column 3: %1 uses %2, which does not come before it");
}

TEST(TextParserTest, ReportsGapsInIds) {
  EXPECT_EQ(ErrorOf("graph(%0: f32[2]) {\n  %2: f32[2] = relu(%0)\n  return (%2)\n}\n"),
            "line 2, column 3: %1 is never defined (ids are 0..N-1, each defined once)");
}

TEST(TextParserTest, ReportsSyntaxErrorsWithColumn) {
  EXPECT_EQ(ErrorOf("graph(%0: f32[2]) {\n  %1: f32[2] = relu(%0\n  return (%1)\n}\n"),
            "line 3, column 3: expected ',' but found 'return'");
  EXPECT_EQ(ErrorOf("graph(%0: q8[2]) {\n  return (%0)\n}\n"),
            "line 1, column 11: expected a dtype (bool, u8, i8, i16, i32, i64, f16, bf16, f32, f64) "
            "but found 'q8'");
  EXPECT_EQ(ErrorOf("graph(%0: f32[2]) {\n  %1: f32[2] = relu(%0, axes=[0])\n  return (%1)\n}\n"),
            "line 2, column 25: relu has no attribute axes");
  EXPECT_EQ(ErrorOf("graph(%0: f32[2]) {\n  %1: f32[] = constant(abc)\n  return (%1)\n}\n"),
            "line 2, column 24: 'abc' is not a Float32 value");
}

TEST(TextParserTest, ReportsOutputsThatDoNotExist) {
  EXPECT_EQ(ErrorOf("graph(%0: f32[2]) {\n  return (%4)\n}\n"),
            "line 2, column 11: output %4 does not exist");
}

}  // namespace
}  // namespace pijit::graph

namespace pijit::graph {
namespace {

TEST(TextParserTest, RoundTripsFusedNodes) {
  ExpectRoundTrip(
      "graph(%0: f32[4,8], %1: f32[8]) {\n"
      "  %2: f32[4,8] = fused(%0, %1, program=\"mul($0, $1); add(#0, 0.1); exp(#1)\")\n"
      "  return (%2)\n"
      "}\n");
  EXPECT_EQ(ErrorOf("graph(%0: f32[4]) {\n  %1: f32[4] = fused(%0, program=\"sin($0)\")\n"
                    "  return (%1)\n}\n"),
            "line 2, column 34: fused program, instruction #0 'sin($0)': unknown opcode");
}

TEST(TextParserTest, RoundTripsFusedReductionsAndReductionAttributes) {
  ExpectRoundTrip(
      "graph(%0: f64[4,8], %1: f64[]) {\n"
      "  %2: f64[4,1] = fused_reduce(%0, %1, program=\"sub($0, $1); mul(#0, #0)\", "
      "reduce=mean, axes=[-1], keepdims=true)\n"
      "  %3: f64[] = max(%0, axes=[], keepdims=false)\n"
      "  %4: f64[8] = var(%0, axes=[0], keepdims=false, ddof=1)\n"
      "  return (%2, %3, %4)\n"
      "}\n");
  EXPECT_EQ(ErrorOf("graph(%0: f32[4]) {\n  %1: f32[] = fused_reduce(%0, program=\"neg($0)\", "
                    "reduce=prod)\n  return (%1)\n}\n"),
            "line 2, column 58: reduce is sum, mean, max or min");
  EXPECT_EQ(ErrorOf("graph(%0: f32[4]) {\n  %1: f32[] = fused_reduce(%0, program=\"neg($0)\")\n"
                    "  return (%1)\n}\n"),
            "line 2, column 15: fused_reduce needs program= and reduce=");
  EXPECT_EQ(ErrorOf("graph(%0: f32[4]) {\n  %1: f32[4] = fused_reduce(%0, program=\"neg($0)\", "
                    "reduce=sum)\n  return (%1)\n}\n"),
            "line 2, column 3: %1 is declared f32(4,) but fused_reduce gives f32()");
}

}  // namespace
}  // namespace pijit::graph
