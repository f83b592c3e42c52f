#include "gtest/gtest.h"
#include "graph/executor.h"
#include "graph/graph.h"

namespace pijit::graph {
namespace {

// matmul of two float32 params of shapes a and b.
absl::StatusOr<NodeId> MatMulOfParams(Graph& g, const Shape& a, const Shape& b) {
  const NodeId x = g.AddParam({DType::kFloat32, a});
  const NodeId y = g.AddParam({DType::kFloat32, b});
  return g.AddOp(Op::kMatMul, {x, y});
}

TEST(GraphTest, PrintsTextIR) {
  Graph g;
  auto mm = MatMulOfParams(g, {2, 3}, {3, 4});
  ASSERT_TRUE(mm.ok());
  auto r = g.AddOp(Op::kRelu, {*mm});
  ASSERT_TRUE(r.ok());
  g.SetOutputs({*r});
  EXPECT_EQ(g.ToText(),
            "graph(%0: f32[2,3], %1: f32[3,4]) {\n"
            "  %2: f32[2,4] = matmul(%0, %1)\n"
            "  %3: f32[2,4] = relu(%2)\n"
            "  return (%3)\n"
            "}\n");
  EXPECT_TRUE(g.Verify().ok());
}

TEST(GraphTest, AddOpRejectsBadShapesWithKernelMessage) {
  Graph g;
  auto mm = MatMulOfParams(g, {2, 3}, {2, 4});
  ASSERT_FALSE(mm.ok());
  EXPECT_EQ(mm.status().message(),
            "matmul: shapes (2, 3) and (2, 4) are not aligned: 3 (dim 1) != 2 (dim 0)");
}

TEST(ExecutorTest, RunsGraphAndMatchesEagerOps) {
  Graph g;
  NodeId x = g.AddParam({DType::kFloat32, {4}});
  NodeId c = g.AddConstant(Tensor::Scalar<float>(2.0f));
  auto m = g.AddOp(Op::kMul, {x, c});
  auto s = g.AddOp(Op::kSum, {*m}, {}, false);
  g.SetOutputs({*m, *s});
  auto compiled = CompiledGraph::Compile(g);
  ASSERT_TRUE(compiled.ok());
  Tensor in = Tensor::Empty({4}, DType::kFloat32);
  for (int i = 0; i < 4; ++i) in.data<float>()[i] = float(i);
  const Tensor* args[] = {&in};
  std::vector<Tensor> out;
  ASSERT_TRUE(compiled->Run(args, &out).ok());
  ASSERT_EQ(out.size(), 2u);
  auto eager = Binary(BinaryOp::kMul, in, Tensor::Scalar<float>(2.0f));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[0].data<float>()[i], eager->data<float>()[i]);
  EXPECT_EQ(out[1].data<float>()[0], 12.0f);
}

}  // namespace
}  // namespace pijit::graph
