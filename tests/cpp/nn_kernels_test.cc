// Layer kernels: the oneDNN float32 path agrees with the float64 loops, shapes and errors,
// and the graph ops run through nodes.
#include <cmath>

#include "graph/executor.h"
#include "graph/graph.h"
#include "gtest/gtest.h"
#include "kernels/ops.h"

namespace pijit {
namespace {

Tensor Iota(Shape shape, DType dt, double scale = 0.1) {
  Tensor t = Tensor::Empty(shape, dt);
  DispatchDType(dt, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t i = 0; i < t.numel(); ++i)
      t.data<T>()[i] = static_cast<T>(std::sin(static_cast<double>(i) * 1.7) * scale * 10);
  });
  return t;
}

void ExpectNear(const Tensor& f32, const Tensor& f64, double tol) {
  ASSERT_EQ(f32.shape(), f64.shape());
  for (int64_t i = 0; i < f32.numel(); ++i)
    EXPECT_NEAR(f32.data<float>()[i], f64.data<double>()[i], tol) << "at " << i;
}

TEST(Conv2DTest, OneDnnFloat32AgreesWithFloat64Loop) {
  Window2D w;
  w.stride[0] = 2;
  w.pad[0] = w.pad[1] = w.pad[2] = 1;
  w.groups = 2;
  auto x32 = Iota({2, 4, 7, 6}, DType::kFloat32), w32 = Iota({6, 2, 3, 3}, DType::kFloat32);
  auto b32 = Iota({6}, DType::kFloat32);
  auto a = Conv2D(x32, w32, &b32, w);
  ASSERT_TRUE(a.ok()) << a.status();
  Tensor b64 = *Cast(b32, DType::kFloat64);
  auto c = Conv2D(*Cast(x32, DType::kFloat64), *Cast(w32, DType::kFloat64), &b64, w);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(a->shape(), (Shape{2, 6, 4, 5}));  // W: 6 + 1 (left) + 0 (right) - 3 + 1
  ExpectNear(*a, *c, 1e-4);
}

TEST(Conv2DTest, SamePaddingKeepsSizeOverStride) {
  Window2D w;
  w.same = true;
  w.stride[0] = w.stride[1] = 2;
  auto m = InferConv2D({DType::kFloat32, {1, 3, 9, 8}}, {DType::kFloat32, {5, 3, 4, 4}}, nullptr, w);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->shape, (Shape{1, 5, 5, 4}));
}

TEST(Conv2DTest, ChannelMismatchNamesBothShapes) {
  auto m = InferConv2D({DType::kFloat32, {1, 3, 9, 8}}, {DType::kFloat32, {5, 2, 3, 3}}, nullptr, {});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("(1, 3, 9, 8)"), std::string::npos);
  EXPECT_NE(m.status().message().find("(5, 2, 3, 3)"), std::string::npos);
}

TEST(Pool2DTest, OneDnnFloat32AgreesWithFloat64Loop) {
  for (PoolKind kind : {PoolKind::kMax, PoolKind::kAvg}) {
    for (bool ceil : {false, true}) {
      Window2D w;
      w.kernel[0] = w.kernel[1] = 3;
      w.stride[0] = w.stride[1] = 2;
      w.pad[0] = w.pad[1] = w.pad[2] = w.pad[3] = 1;
      w.ceil_mode = ceil;
      Tensor x = Iota({2, 3, 8, 7}, DType::kFloat32);
      auto a = Pool2D(kind, x, w);
      auto b = Pool2D(kind, *Cast(x, DType::kFloat64), w);
      ASSERT_TRUE(a.ok() && b.ok());
      ExpectNear(*a, *b, 1e-5);
    }
  }
}

TEST(NormTest, BatchAndLayerNormFloat32AgreeWithFloat64) {
  Tensor x = Iota({3, 4, 5}, DType::kFloat32);
  Tensor c = Iota({4}, DType::kFloat32), var = Iota({4}, DType::kFloat32);
  for (int64_t i = 0; i < 4; ++i) var.data<float>()[i] = std::fabs(var.data<float>()[i]) + 0.5f;
  auto a = BatchNorm(x, c, var, c, c, 1e-5);
  auto f64 = [](const Tensor& t) { return *Cast(t, DType::kFloat64); };
  auto b = BatchNorm(f64(x), f64(c), f64(var), f64(c), f64(c), 1e-5);
  ASSERT_TRUE(a.ok() && b.ok());
  ExpectNear(*a, *b, 1e-4);
  Tensor g = Iota({4, 5}, DType::kFloat32);
  auto l32 = LayerNorm(x, {4, 5}, &g, nullptr, 1e-5);
  Tensor g64 = f64(g);
  auto l64 = LayerNorm(f64(x), {4, 5}, &g64, nullptr, 1e-5);
  ASSERT_TRUE(l32.ok() && l64.ok());
  ExpectNear(*l32, *l64, 1e-4);
}

TEST(AssignTest, GraphNodeWritesIntoItsParam) {
  graph::Graph g;
  const graph::NodeId v = g.AddParam({DType::kFloat32, {3}});
  const graph::NodeId two = g.AddConstant(Tensor::Scalar<float>(2.0f));
  auto a = g.AddOp(graph::Op::kAssign, {v, two});
  ASSERT_TRUE(a.ok());
  g.SetOutputs({v});
  auto c = graph::CompiledGraph::Compile(std::move(g));
  ASSERT_TRUE(c.ok()) << c.status();
  Tensor var = Iota({3}, DType::kFloat32);
  std::vector<Tensor> out;
  const Tensor* in[] = {&var};
  ASSERT_TRUE(c->Run(in, &out).ok());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(var.data<float>()[i], 2.0f);
}

// assign copies straight into the variable unless the value reads the variable's memory;
// then through a temporary, also when the overlap is through another storage over the same
// buffer (two NumPy views of one array).
TEST(AssignTest, OverlappingValuesAreReadBeforeTheyAreOverwritten) {
  Tensor var = Iota({4, 4}, DType::kFloat32);
  Tensor before = Tensor::Empty({4, 4}, DType::kFloat32);
  CopyInto(var, before);
  auto t = Transpose(var, {1, 0});
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(Assign(var, *t).ok());
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      EXPECT_EQ(var.data<float>()[i * 4 + j], before.data<float>()[j * 4 + i]);

  // A second storage over the same bytes, read backwards.
  Tensor flat = Iota({8}, DType::kFloat32);
  auto alias = Storage::Wrap(flat.raw_data(), 8 * sizeof(float), [] {});
  Tensor reversed = Tensor::View(alias, DType::kFloat32, {8}, {-1}, 7);
  Tensor want = Tensor::Empty({8}, DType::kFloat32);
  CopyInto(reversed, want);
  ASSERT_TRUE(Assign(flat, reversed).ok());
  for (int i = 0; i < 8; ++i) EXPECT_EQ(flat.data<float>()[i], want.data<float>()[i]);

  // Disjoint memory: written directly, without allocating.
  Tensor dst = Tensor::Empty({4, 4}, DType::kFloat32);
  const uint64_t allocations = StorageAllocations();
  ASSERT_TRUE(Assign(dst, before).ok());
  EXPECT_EQ(StorageAllocations(), allocations);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(dst.data<float>()[i], before.data<float>()[i]);
}

}  // namespace
}  // namespace pijit
