// Kernel-level checks of the eager op library (no Python): dtype rules, edge cases, views.
#include <cmath>

#include "graph/executor.h"
#include "graph/graph.h"
#include "gtest/gtest.h"
#include "kernels/ops.h"

namespace pijit {
namespace {

template <typename T>
Tensor Vec(std::initializer_list<T> v, Shape shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  Tensor t = Tensor::Empty(shape, DTypeOf<T>::value);
  int64_t i = 0;
  for (T x : v) t.data<T>()[i++] = x;
  return t;
}

TEST(CompareTest, ComputesInPromotedDTypeAndGivesBool) {
  auto r = Binary(BinaryOp::kLess, Vec<int32_t>({1, 2, 3}), Tensor::Scalar<double>(2.5));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->dtype(), DType::kBool);
  EXPECT_TRUE(r->data<bool>()[1]);
  EXPECT_FALSE(r->data<bool>()[2]);
}

TEST(FloorDivTest, IntegersFloorTowardNegativeInfinityAndDivideByZeroGivesZero) {
  auto q = Binary(BinaryOp::kFloorDiv, Vec<int64_t>({7, -7, 7, 5}), Vec<int64_t>({2, 2, -2, 0}));
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->data<int64_t>()[0], 3);
  EXPECT_EQ(q->data<int64_t>()[1], -4);
  EXPECT_EQ(q->data<int64_t>()[2], -4);
  EXPECT_EQ(q->data<int64_t>()[3], 0);
  auto m = Binary(BinaryOp::kMod, Vec<int64_t>({-7}), Vec<int64_t>({3}));
  EXPECT_EQ(m->data<int64_t>()[0], 2);
}

TEST(PowTest, NegativeIntegerExponentIsAnError) {
  auto r = Binary(BinaryOp::kPow, Vec<int32_t>({2}), Vec<int32_t>({-1}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(BoolTest, SubOfBooleansIsUnsupportedAndPowComputesInInt8) {
  EXPECT_EQ(InferBinary(BinaryOp::kSub, {DType::kBool, {2}}, {DType::kBool, {2}}).status().code(),
            absl::StatusCode::kUnimplemented);
  // NumPy has no bool power loop: bool ** bool runs int8's.
  auto p = InferBinary(BinaryOp::kPow, {DType::kBool, {2}}, {DType::kBool, {2}});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->dtype, DType::kInt8);
  auto m = InferBinary(BinaryOp::kMaximum, {DType::kBool, {2}}, {DType::kBool, {2}});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->dtype, DType::kBool);
}

TEST(ReduceTest, MaxOfEmptyReductionFailsButEmptyOutputIsFine) {
  EXPECT_FALSE(InferReduce(ReduceOp::kMax, {DType::kFloat32, {0, 3}}, {0}, false).ok());
  auto ok = InferReduce(ReduceOp::kMax, {DType::kFloat32, {0, 3}}, {1}, false);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->shape, Shape({0}));
}

TEST(ReduceTest, VarWithDdofAndColumnReductions) {
  Tensor t = Vec<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  auto v = Reduce(ReduceOp::kVar, t, {1}, false, 1);
  ASSERT_TRUE(v.ok());
  EXPECT_FLOAT_EQ(v->data<float>()[0], 1.0f);
  auto mx = Reduce(ReduceOp::kMax, t, {0}, false);  // reduced axis leads: column path
  ASSERT_TRUE(mx.ok());
  EXPECT_FLOAT_EQ(mx->data<float>()[2], 6.0f);
  auto am = ArgReduce(true, t, {}, false);
  ASSERT_TRUE(am.ok());
  EXPECT_EQ(am->data<int64_t>()[0], 5);
}

TEST(SoftmaxTest, InnerAxisRowsSumToOne) {
  Tensor t = Vec<double>({1, 2, 3, 4, 5, 6}, {3, 2});
  auto s = Softmax(false, t, 0);
  ASSERT_TRUE(s.ok());
  for (int j = 0; j < 2; ++j) {
    double sum = 0;
    for (int i = 0; i < 3; ++i) sum += s->data<double>()[i * 2 + j];
    EXPECT_NEAR(sum, 1.0, 1e-12);
  }
}

TEST(IndexTest, SlicesAreViewsWithOffsetAndNegativeStride) {
  Tensor t = Vec<int32_t>({0, 1, 2, 3, 4, 5}, {2, 3});
  std::vector<IndexItem> items = {{IndexItem::kInt, 1}, {IndexItem::kSlice, IndexItem::kNone,
                                                         IndexItem::kNone, -1}};
  auto v = Index(t, EncodeIndex(items));
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->shape(), Shape({3}));
  EXPECT_EQ(v->strides(), Shape({-1}));
  EXPECT_EQ(v->storage(), t.storage());
  EXPECT_EQ(v->data<int32_t>()[0], 5);
  auto bad = Index(t, EncodeIndex({{IndexItem::kInt, 2}}));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kNotFound);
}

TEST(ConcatTest, PromotesAndJoinsAlongAxis) {
  Tensor a = Vec<int32_t>({1, 2}, {2, 1});
  Tensor b = Vec<float>({3, 4, 5, 6}, {2, 2});
  const Tensor* in[] = {&a, &b};
  auto c = Concat(false, in, 1);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->dtype(), DType::kFloat32);  // MindSpore: the float wins over int32
  EXPECT_EQ(c->shape(), Shape({2, 3}));
  EXPECT_EQ(c->data<float>()[3], 2.0f);
  EXPECT_EQ(c->data<float>()[5], 6.0f);
}

TEST(RandomTest, SameSeedSameValues) {
  SetSeed(5);
  auto a = Random(Distribution::kNormal, {8}, DType::kFloat32, 0, 1, -1);
  SetSeed(5);
  auto b = Random(Distribution::kNormal, {8}, DType::kFloat32, 0, 1, -1);
  auto c = Random(Distribution::kNormal, {8}, DType::kFloat32, 0, 1, -1);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(a->data<float>()[i], b->data<float>()[i]);
  EXPECT_NE(b->data<float>()[0], c->data<float>()[0]);
}

TEST(GraphAttrTest, PrintsAttributesAndRunsCreationOps) {
  graph::Graph g;
  graph::NodeId x = g.AddParam({DType::kFloat32, {2, 3}});
  graph::Attrs sm;
  sm.attr = 0;
  auto s = g.AddOp(graph::Op::kSoftmax, {x}, sm);
  graph::Attrs full;
  full.ints = {2, 3};
  full.dtype = DType::kFloat32;
  full.value = Tensor::Scalar<int64_t>(1);
  auto f = g.AddOp(graph::Op::kFull, {}, full);
  ASSERT_TRUE(s.ok() && f.ok());
  auto w = g.AddOp(graph::Op::kMaximum, {*s, *f});
  ASSERT_TRUE(w.ok());
  g.SetOutputs({*w});
  EXPECT_EQ(g.ToText(),
            "graph(%0: f32[2,3]) {\n"
            "  %1: f32[2,3] = softmax(%0, axis=0)\n"
            "  %2: f32[2,3] = full(shape=[2,3], value=1, dtype=f32)\n"
            "  %3: f32[2,3] = maximum(%1, %2)\n"
            "  return (%3)\n"
            "}\n");
  auto compiled = graph::CompiledGraph::Compile(g);
  ASSERT_TRUE(compiled.ok());
  Tensor in = Vec<float>({0, 0, 0, 0, 0, 0}, {2, 3});
  const Tensor* args[] = {&in};
  std::vector<Tensor> out;
  ASSERT_TRUE(compiled->Run(args, &out).ok());
  EXPECT_EQ(out[0].data<float>()[0], 1.0f);
  EXPECT_FALSE(g.AddOp(graph::Op::kWhere, {x, x}).ok());  // arity is checked
}

}  // namespace
}  // namespace pijit

namespace pijit {
namespace {

TEST(BufferCacheTest, ReusesLargeBuffersOfTheSameSizeWithinItsBound) {
  SetBufferCacheLimit(0);  // drop what earlier tests released: none of it is this test's
  SetBufferCacheLimit(size_t{64} << 20);
  const size_t before = BufferCacheBytes();
  void* first;
  {
    Tensor a = Tensor::Empty({1 << 20}, DType::kFloat32);  // 4 MiB
    first = a.raw_data();
  }
  EXPECT_EQ(BufferCacheBytes(), before + (size_t{4} << 20));
  {
    Tensor other = Tensor::Empty({(1 << 20) + 4096}, DType::kFloat32);  // another size
    EXPECT_NE(other.raw_data(), first);
    Tensor b = Tensor::Empty({1 << 20}, DType::kFloat32);
    EXPECT_EQ(b.raw_data(), first);  // the released buffer, no new allocation
    b.data<float>()[(1 << 20) - 1] = 1.0f;  // the whole buffer is usable
  }
  // Small buffers are not kept; nothing is kept beyond the bound.
  { Tensor small = Tensor::Empty({1000}, DType::kFloat32); }
  SetBufferCacheLimit(size_t{5} << 20);
  EXPECT_LE(BufferCacheBytes(), size_t{5} << 20);
  { Tensor big = Tensor::Empty({4 << 20}, DType::kFloat32); }  // 16 MiB: over the bound
  EXPECT_LE(BufferCacheBytes(), size_t{5} << 20);
  SetBufferCacheLimit(0);
  EXPECT_EQ(BufferCacheBytes(), 0u);
  SetBufferCacheLimit(size_t{256} << 20);
}

}  // namespace
}  // namespace pijit
