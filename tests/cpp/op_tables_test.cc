// The kernel tables that name graph ops (fused opcodes, reductions, binary and unary kernels)
// agree with graph/ops.def: the same enumerator is the same op by name, so the maps generated
// from the tables (graph/node_ops.cc AsReduce, graph/passes/fusion.cc FusedOpcodeOf) are right.
#include <string>

#include "graph/graph.h"
#include "graph/passes/fusion.h"
#include "gtest/gtest.h"
#include "kernels/fused.h"
#include "kernels/ops.h"

namespace pijit::graph {
namespace {

TEST(OpTablesTest, FusedOpcodesAreTheGraphOpsOfTheirName) {
  int rows = 0;
#define PIJIT_CHECK_FUSED(e, name, arity)                                  \
  {                                                                        \
    ++rows;                                                                \
    EXPECT_EQ(std::string(OpName(Op::e)), name);                           \
    EXPECT_EQ(std::string(FusedOpcodeName(FusedOpcode::e)), name);         \
    EXPECT_EQ(FusedOpcodeArity(FusedOpcode::e), arity);                    \
    FusedOpcode got;                                                       \
    ASSERT_TRUE(fusion::FusedOpcodeOf(Op::e, &got)) << name;               \
    EXPECT_EQ(got, FusedOpcode::e);                                        \
  }
  PIJIT_FUSED_OPCODES(PIJIT_CHECK_FUSED)
#undef PIJIT_CHECK_FUSED
  EXPECT_EQ(rows, static_cast<int>(FusedOpcode::kSigmoid) + 1);
  // Comparisons are the contiguous range FusedOpcodeIsCompare reads.
  for (FusedOpcode op : {FusedOpcode::kGreater, FusedOpcode::kGreaterEqual, FusedOpcode::kLess,
                         FusedOpcode::kLessEqual, FusedOpcode::kEqual, FusedOpcode::kNotEqual}) {
    EXPECT_TRUE(FusedOpcodeIsCompare(op)) << FusedOpcodeName(op);
  }
  EXPECT_FALSE(FusedOpcodeIsCompare(FusedOpcode::kWhere));
  FusedOpcode unused;
  EXPECT_FALSE(fusion::FusedOpcodeOf(Op::kSin, &unused));   // no vectorised version
  EXPECT_FALSE(fusion::FusedOpcodeOf(Op::kSum, &unused));   // not elementwise
}

TEST(OpTablesTest, KernelEnumsAreTheGraphOpsOfTheirName) {
#define PIJIT_CHECK_REDUCE(e, name)                 \
  {                                                 \
    EXPECT_EQ(std::string(OpName(Op::e)), name);    \
    EXPECT_EQ(std::string(ReduceOpName(ReduceOp::e)), name); \
    ReduceOp got;                                   \
    ASSERT_TRUE(AsReduce(Op::e, &got));             \
    EXPECT_EQ(got, ReduceOp::e);                    \
  }
  PIJIT_REDUCE_OPS(PIJIT_CHECK_REDUCE)
#undef PIJIT_CHECK_REDUCE
#define PIJIT_CHECK_BINARY(e, name, ...)                     \
  {                                                          \
    EXPECT_EQ(std::string(OpName(Op::e)), name);             \
    EXPECT_EQ(std::string(BinaryOpName(BinaryOp::e)), name); \
    BinaryOp got;                                            \
    ASSERT_TRUE(AsBinary(Op::e, &got));                      \
    EXPECT_EQ(got, BinaryOp::e);                             \
  }
  PIJIT_BINARY_OPS(PIJIT_CHECK_BINARY)
#undef PIJIT_CHECK_BINARY
#define PIJIT_CHECK_UNARY(e, name, ...)                    \
  {                                                        \
    EXPECT_EQ(std::string(OpName(Op::e)), name);           \
    EXPECT_EQ(std::string(UnaryOpName(UnaryOp::e)), name); \
    UnaryOp got;                                           \
    ASSERT_TRUE(AsUnary(Op::e, &got));                     \
    EXPECT_EQ(got, UnaryOp::e);                            \
  }
  PIJIT_UNARY_OPS(PIJIT_CHECK_UNARY)
#undef PIJIT_CHECK_UNARY
  ReduceOp r;
  EXPECT_FALSE(AsReduce(Op::kAdd, &r));
}

}  // namespace
}  // namespace pijit::graph
