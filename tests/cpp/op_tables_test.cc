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

// Kernel enumerator `kernel` is graph op `op`: the same name, and `as` maps one to the other.
template <typename Kernel>
void ExpectKernelOpIsGraphOp(Op op, Kernel kernel, const char* name, const char* kernel_name,
                             bool (*as)(Op, Kernel*)) {
  EXPECT_EQ(std::string(OpName(op)), name);
  EXPECT_EQ(std::string(kernel_name), name);
  Kernel got;
  ASSERT_TRUE(as(op, &got)) << name;
  EXPECT_EQ(got, kernel) << name;
}

TEST(OpTablesTest, KernelEnumsAreTheGraphOpsOfTheirName) {
#define PIJIT_CHECK_REDUCE(e, name) \
  ExpectKernelOpIsGraphOp(Op::e, ReduceOp::e, name, ReduceOpName(ReduceOp::e), AsReduce);
  PIJIT_REDUCE_OPS(PIJIT_CHECK_REDUCE)
#undef PIJIT_CHECK_REDUCE
#define PIJIT_CHECK_BINARY(e, name, ...) \
  ExpectKernelOpIsGraphOp(Op::e, BinaryOp::e, name, BinaryOpName(BinaryOp::e), AsBinary);
  PIJIT_BINARY_OPS(PIJIT_CHECK_BINARY)
#undef PIJIT_CHECK_BINARY
#define PIJIT_CHECK_UNARY(e, name, ...) \
  ExpectKernelOpIsGraphOp(Op::e, UnaryOp::e, name, UnaryOpName(UnaryOp::e), AsUnary);
  PIJIT_UNARY_OPS(PIJIT_CHECK_UNARY)
#undef PIJIT_CHECK_UNARY
  ReduceOp r;
  EXPECT_FALSE(AsReduce(Op::kAdd, &r));
}

}  // namespace
}  // namespace pijit::graph
