#include "graph/passes/conv_epilogue.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/cpu/cpu_features.h"
#include "tests/cpp/passes/pass_test_util.h"

namespace pijit::graph {
namespace {

bool SameBits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(ConvEpilogueTest, TextRoundTripsTheWindowAndThePostOps) {
  const std::string text =
      "graph(%0: f32[1,1,4,4], %1: f32[2,1,3,3], %2: f32[2,1,1], %3: f32[1,2,2,2]) {\n"
      "  %4: f32[1,2,2,2] = fused_conv2d(%0, %1, %2, %3, "
      "window=[0,1,1,1,1,0,0,0,0,1,1,0,1,1], post=[bias,tanh,add,relu])\n"
      "  return (%4)\n}\n";
  EXPECT_EQ(ParseOrDie(text).ToText(), text);
  // The post-ops may come first; the window still leads the ints.
  Graph g = ParseOrDie(
      "graph(%0: f32[1,1,4,4], %1: f32[2,1,3,3]) {\n"
      "  %2: f32[1,2,2,2] = fused_conv2d(%0, %1, post=[gelu], "
      "window=[0,1,1,1,1,0,0,0,0,1,1,0,1,1])\n  return (%2)\n}\n");
  EXPECT_EQ(g.node(2).ints.size(), kWindowInts + 1);
  EXPECT_EQ(g.node(2).ints.back(), kGelu);
  EXPECT_FALSE(Parse("graph(%0: f32[1,1,4,4], %1: f32[2,1,3,3]) {\n"
                     "  %2: f32[1,2,2,2] = fused_conv2d(%0, %1, "
                     "window=[0,1,1,1,1,0,0,0,0,1,1,0,1,1], post=[softmax])\n  return (%2)\n}\n")
                   .ok());
  EXPECT_FALSE(Parse("graph(%0: f32[1,1,4,4], %1: f32[2,1,3,3]) {\n"
                     "  %2: f32[1,2,2,2] = fused_conv2d(%0, %1, window=[0,1,1], post=[relu])\n"
                     "  return (%2)\n}\n")
                   .ok());
  // No window, or inputs that are neither an own bias nor the post-ops' operands: rejected.
  EXPECT_FALSE(Parse("graph(%0: f32[1,1,4,4], %1: f32[2,1,3,3]) {\n"
                     "  %2: f32[1,2,2,2] = fused_conv2d(%0, %1, post=[relu])\n"
                     "  return (%2)\n}\n")
                   .ok());
  EXPECT_FALSE(Parse("graph(%0: f32[1,1,4,4], %1: f32[2,1,3,3], %2: f32[2], %3: f32[2]) {\n"
                     "  %4: f32[1,2,2,2] = fused_conv2d(%0, %1, %2, %3, "
                     "window=[0,1,1,1,1,0,0,0,0,1,1,0,1,1], post=[relu])\n  return (%4)\n}\n")
                   .ok());
  // A bias operand and an own bias together, or an operand too many: rejected.
  EXPECT_FALSE(Parse("graph(%0: f32[1,1,4,4], %1: f32[2,1,3,3], %2: f32[2], %3: f32[2,1,1]) {\n"
                     "  %4: f32[1,2,2,2] = fused_conv2d(%0, %1, %2, %3, "
                     "window=[0,1,1,1,1,0,0,0,0,1,1,0,1,1], post=[bias])\n  return (%4)\n}\n")
                   .ok());
}

struct Case {
  Shape x, w;
  Window2D win;
  bool own_bias;
};

Window2D Win(int64_t stride, int64_t pad, int64_t dilation, int64_t groups) {
  Window2D w;
  w.stride[0] = w.stride[1] = stride;
  for (int64_t& p : w.pad) p = pad;
  w.dilation[0] = w.dilation[1] = dilation;
  w.groups = groups;
  return w;
}

// Every problem kind: the direct kernels (stride 1, few channels), oneDNN on plain layouts
// (strided, dilated, grouped) and on blocked ones (many channels); each with finite data and
// with a NaN, an infinity and -0.0 in the input (which sends the direct kernels' problems to
// oneDNN). Bias, add and relu: bit for bit; gelu, tanh and sigmoid within the tolerance.
TEST(ConvEpilogueTest, KernelEqualsTheOpsOneByOne) {
  const Case cases[] = {
      {{2, 1, 12, 12}, {6, 1, 5, 5}, Win(1, 0, 1, 1), false},
      {{2, 3, 9, 9}, {5, 3, 3, 3}, Win(1, 1, 1, 1), true},
      {{2, 3, 9, 9}, {4, 3, 3, 3}, Win(2, 1, 1, 1), false},
      {{1, 4, 11, 11}, {4, 4, 3, 3}, Win(1, 0, 2, 1), false},
      {{2, 8, 7, 7}, {8, 2, 3, 3}, Win(1, 1, 1, 4), true},
      {{2, 32, 9, 9}, {32, 32, 3, 3}, Win(1, 1, 1, 1), false},
      {{1, 32, 9, 9}, {48, 32, 3, 3}, Win(2, 1, 1, 1), true},
  };
  const std::vector<std::vector<int64_t>> posts = {
      {kBias}, {kBias, kRelu}, {kAdd}, {kBias, kAdd, kRelu}, {kAdd, kRelu},
      {kBias, kGelu}, {kTanh, kAdd}, {kBias, kSigmoid, kAdd, kRelu}};
  unsigned seed = 1;
  for (const Case& c : cases) {
    for (bool special : {false, true}) {
      Tensor x = RandomNormal(c.x, seed++), w = RandomNormal(c.w, seed++, 0.3f);
      if (special) {
        x.data<float>()[3] = std::numeric_limits<float>::quiet_NaN();
        x.data<float>()[x.numel() / 2] = std::numeric_limits<float>::infinity();
        x.data<float>()[x.numel() - 1] = -0.0f;
      }
      Tensor own = RandomNormal({c.w[0]}, seed++);
      const Tensor* bias = c.own_bias ? &own : nullptr;
      const Shape out = MetaOf(*Conv2D(x, w, bias, c.win)).shape;
      Tensor chan = RandomNormal({out[1], 1, 1}, seed++), res = RandomNormal(out, seed++);
      for (const auto& post : posts) {
        if (c.own_bias && post[0] == kBias) continue;
        std::vector<const Tensor*> ops;
        // Bit for bit where oneDNN runs the convolution with and without post-ops through one
        // implementation (its AVX-512 kernels); on AVX2-only hosts it picks different
        // implementations for the two, which sum in another order.
        bool exact = cpu::Host().avx512f;
        for (int64_t p : post) {
          if (p == kBias) ops.push_back(&chan);
          if (p == kAdd) ops.push_back(&res);
          exact &= p < kGelu;
        }
        std::vector<const TensorMeta*> metas;
        std::vector<TensorMeta> m;
        for (const Tensor* o : ops) m.push_back(MetaOf(*o));
        for (const TensorMeta& t : m) metas.push_back(&t);
        const TensorMeta mb = MetaOf(own);
        EXPECT_TRUE(Conv2DEpilogueIsOnePrimitive(MetaOf(x), MetaOf(w), bias ? &mb : nullptr,
                                                 c.win, post, metas));
        auto got = Conv2DEpilogue(x, w, bias, c.win, post, ops);
        ASSERT_TRUE(got.ok()) << got.status();
        Tensor want = *Conv2D(x, w, bias, c.win);
        size_t next = 0;
        for (int64_t p : post) {
          if (p == kBias || p == kAdd) {
            want = *Binary(BinaryOp::kAdd, want, *ops[next++]);
          } else {
            const UnaryOp u = p == kRelu ? UnaryOp::kRelu : p == kGelu ? UnaryOp::kGelu
                              : p == kTanh ? UnaryOp::kTanh : UnaryOp::kSigmoid;
            want = *Unary(u, want);
          }
        }
        ASSERT_EQ(got->shape(), want.shape());
        int bad = 0;
        for (int64_t i = 0; i < want.numel() && bad < 5; ++i) {
          const float a = got->data<float>()[i], b = want.data<float>()[i];
          const bool ok = exact ? SameBits(a, b)
                                : (std::isnan(a) && std::isnan(b)) || a == b ||
                                      std::abs(a - b) <= kMatMulEpilogueRelTol *
                                                             std::max(1.f, std::abs(b));
          if (!ok) {
            ++bad;
            ADD_FAILURE() << "x" << ShapeToString(c.x) << " w" << ShapeToString(c.w)
                          << " stride " << c.win.stride[0] << " special " << special
                          << " post[0] " << post[0] << " size " << post.size() << " at " << i
                          << ": " << a << " vs " << b;
          }
        }
      }
    }
  }
}

TEST(ConvEpilogueTest, RejectsMalformedPostOps) {
  const TensorMeta x{DType::kFloat32, {1, 2, 5, 5}}, w{DType::kFloat32, {3, 2, 3, 3}};
  const TensorMeta chan{DType::kFloat32, {3, 1, 1}}, chan4{DType::kFloat32, {1, 3, 1, 1}};
  const TensorMeta vec{DType::kFloat32, {3}}, full{DType::kFloat32, {1, 3, 3, 3}};
  const TensorMeta full64{DType::kFloat64, {1, 3, 3, 3}}, row{DType::kFloat32, {3}};
  const Window2D win;
  const TensorMeta* one[] = {&chan};
  EXPECT_FALSE(InferConv2DEpilogue(x, w, nullptr, win, {kRelu, kBias}, one).ok());  // not first
  EXPECT_FALSE(InferConv2DEpilogue(x, w, &vec, win, {kBias}, one).ok());   // has its own bias
  EXPECT_FALSE(InferConv2DEpilogue(x, w, nullptr, win, {kBias, kAdd}, one).ok());  // too few
  EXPECT_FALSE(InferConv2DEpilogue(x, w, nullptr, win, {kRelu}, one).ok());  // too many
  const TensorMeta* wide[] = {&full64};
  EXPECT_FALSE(InferConv2DEpilogue(x, w, nullptr, win, {kAdd}, wide).ok());  // would promote
  const TensorMeta* along_w[] = {&row};
  EXPECT_FALSE(InferConv2DEpilogue(x, w, nullptr, win, {kBias}, along_w).ok());  // along W
  EXPECT_TRUE(InferConv2DEpilogue(x, w, nullptr, win, {kAdd}, along_w).ok());  // may broadcast
  EXPECT_FALSE(Conv2DEpilogueIsOnePrimitive(x, w, nullptr, win, {kAdd}, along_w));  // one by one
  const TensorMeta* four[] = {&chan4};
  EXPECT_TRUE(Conv2DEpilogueIsOnePrimitive(x, w, nullptr, win, {kBias, kRelu}, four));
  EXPECT_FALSE(Conv2DEpilogueIsOnePrimitive(x, w, nullptr, win, {kRelu, kBias}, four));
  const TensorMeta* res[] = {&full};
  EXPECT_FALSE(Conv2DEpilogueIsOnePrimitive(x, w, nullptr, win, {kRelu, kAdd}, res));
  EXPECT_TRUE(Conv2DEpilogueIsOnePrimitive(x, w, &vec, win, {kAdd, kRelu}, res));
  const TensorMeta x64{DType::kFloat64, {1, 2, 5, 5}}, w64{DType::kFloat64, {3, 2, 3, 3}};
  EXPECT_TRUE(InferConv2DEpilogue(x64, w64, nullptr, win, {kRelu}, {}).ok());
  EXPECT_FALSE(Conv2DEpilogueIsOnePrimitive(x64, w64, nullptr, win, {kRelu}, {}));
}

TEST(ConvEpilogueTest, Float64RunsOpByOne) {
  Tensor x = *Cast(RandomNormal({1, 2, 6, 6}, 7), DType::kFloat64);
  Tensor w = *Cast(RandomNormal({3, 2, 3, 3}, 8), DType::kFloat64);
  Tensor r = *Cast(RandomNormal({1, 3, 4, 4}, 9), DType::kFloat64);
  const Tensor* ops[] = {&r};
  auto got = Conv2DEpilogue(x, w, nullptr, Window2D{}, {kAdd, kTanh}, ops);
  ASSERT_TRUE(got.ok()) << got.status();
  Tensor want = *Unary(UnaryOp::kTanh, *Binary(BinaryOp::kAdd, *Conv2D(x, w, nullptr, {}), r));
  for (int64_t i = 0; i < want.numel(); ++i)
    EXPECT_EQ(got->data<double>()[i], want.data<double>()[i]);
}

}  // namespace
}  // namespace pijit::graph
