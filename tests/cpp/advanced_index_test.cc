// Advanced indexing kernels and the adv_index graph op (no Python).
#include "graph/graph.h"
#include "gtest/gtest.h"
#include "kernels/ops.h"

namespace pijit {
namespace {

Tensor Iota(Shape shape) {
  Tensor t = Tensor::Empty(shape, DType::kFloat32);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}

Tensor Ints(std::initializer_list<int64_t> v) {
  Tensor t = Tensor::Empty({static_cast<int64_t>(v.size())}, DType::kInt64);
  int64_t i = 0;
  for (int64_t x : v) t.data<int64_t>()[i++] = x;
  return t;
}

const IndexItem kAll{IndexItem::kSlice};

TEST(AdvancedIndexTest, SeparatedArraysPutTheirAxesFirst) {
  // x[[0, 1], :, [3, 0]] on (2, 3, 4): the block (2,) comes first, then the slice's 3.
  const Tensor x = Iota({2, 3, 4});
  const Tensor i = Ints({0, 1}), j = Ints({3, 0});
  const Tensor* arrays[] = {&i, &j};
  const Shape enc = EncodeIndex({{IndexItem::kArray, 0}, kAll, {IndexItem::kArray, 1}});
  auto r = AdvancedIndex(x, arrays, enc);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->shape(), (Shape{2, 3}));
  EXPECT_EQ(r->data<float>()[0], 3.0f);        // x[0, 0, 3]
  EXPECT_EQ(r->data<float>()[5], 12.0f + 8);   // x[1, 2, 0]
}

TEST(AdvancedIndexTest, OutOfRangeNamesAxisIndexAndSize) {
  const Tensor x = Iota({2, 3});
  const Tensor i = Ints({1, -4});
  const Tensor* arrays[] = {&i};
  auto r = AdvancedIndex(x, arrays, EncodeIndex({kAll, {IndexItem::kArray, 0}}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("index -4 is out of bounds for axis 1 with size 3"),
            std::string::npos);
}

TEST(IndexPutTest, AccumulateAddsRepeatedIndices) {
  Tensor out = Tensor::Empty({3}, DType::kFloat32);
  for (int k = 0; k < 3; ++k) out.data<float>()[k] = 0;
  const Tensor i = Ints({2, 2, 0});
  const Tensor* arrays[] = {&i};
  ASSERT_TRUE(IndexPut(out, arrays, EncodeIndex({{IndexItem::kArray, 0}}),
                       Tensor::Scalar<double>(1.5), true).ok());
  EXPECT_EQ(out.data<float>()[0], 1.5f);
  EXPECT_EQ(out.data<float>()[1], 0.0f);
  EXPECT_EQ(out.data<float>()[2], 3.0f);
}

TEST(AdvIndexGraphTest, InfersShapeAndRefusesMasks) {
  graph::Graph g;
  const auto x = g.AddParam({DType::kFloat32, {4, 5}});
  const auto i = g.AddParam({DType::kInt64, {2, 3}});
  const auto m = g.AddParam({DType::kBool, {4}});
  graph::Attrs at;
  at.ints = EncodeIndex({kAll, {IndexItem::kArray, 0}});
  auto n = g.AddOp(graph::Op::kAdvIndex, {x, i}, at);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(g.node(*n).meta.shape, (Shape{4, 2, 3}));
  at.ints = EncodeIndex({{IndexItem::kArray, 0}});
  EXPECT_FALSE(g.AddOp(graph::Op::kAdvIndex, {x, m}, at).ok());
}

}  // namespace
}  // namespace pijit
