// Blocked activation layouts (kernels/blocked_layout.h): the reorders against an index
// computation, convolutions reading and writing blocked tensors against the NCHW kernels bit
// for bit, blocked pooling against NCHW pooling, and the elementwise loops' periodic rows
// (channel vectors against blocked tensors) against the interpreter's broadcasting.
#include "kernels/blocked_layout.h"

#include <cmath>

#include "gtest/gtest.h"
#include "kernels/fused.h"
#include "kernels/ops.h"
#include "tests/cpp/passes/pass_test_util.h"

namespace pijit {
namespace {

using graph::RandomNormal;
constexpr int64_t kBias = static_cast<int64_t>(MatMulPost::kBias);
constexpr int64_t kAdd = static_cast<int64_t>(MatMulPost::kAdd);
constexpr int64_t kMul = static_cast<int64_t>(MatMulPost::kMul);
constexpr int64_t kRelu = static_cast<int64_t>(MatMulPost::kRelu);

void ExpectBitEqual(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.shape(), want.shape());
  const Tensor g = got.Contiguous(), w = want.Contiguous();
  int bad = 0;
  for (int64_t i = 0; i < w.numel() && bad < 5; ++i) {
    const float a = g.data<float>()[i], b = w.data<float>()[i];
    if (!(a == b || (std::isnan(a) && std::isnan(b)))) {
      ++bad;
      ADD_FAILURE() << "at " << i << ": " << a << " vs " << b;
    }
  }
}

TEST(BlockedLayoutTest, ReordersPlaceEachElementAndRoundTrip) {
  for (int64_t block : {8, 16}) {
    const Tensor x = RandomNormal({2, 32, 5, 3}, 7);
    const Tensor b = *ToBlocked(x, block);
    ASSERT_EQ(b.shape(), (Shape{2, 32 / block, 5, 3, block}));
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t c = 0; c < 32; ++c)
        for (int64_t h = 0; h < 5; ++h)
          for (int64_t w = 0; w < 3; ++w) {
            const float want = x.data<float>()[((n * 32 + c) * 5 + h) * 3 + w];
            const int64_t at = (((n * (32 / block) + c / block) * 5 + h) * 3 + w) * block + c % block;
            ASSERT_EQ(b.data<float>()[at], want);
          }
    ExpectBitEqual(*FromBlocked(b), x);
  }
}

TEST(BlockedLayoutTest, ReordersBetweenBlocksGoStraight) {
  const Tensor x = RandomNormal({2, 32, 5, 3}, 8);
  for (int64_t from : {8, 16, 32}) {
    for (int64_t to : {8, 16, 32}) {
      absl::StatusOr<Tensor> r = ToBlocked(*ToBlocked(x, from), to);
      ASSERT_TRUE(r.ok()) << r.status();
      ExpectBitEqual(*r, *ToBlocked(x, to));
    }
  }
  EXPECT_EQ(ToBlocked(*ToBlocked(x, 8), 12).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(BlockedLayoutTest, ReordersRejectWhatTheyCannotHold) {
  EXPECT_EQ(ToBlocked(RandomNormal({1, 12, 2, 2}, 1), 8).status().code(),
            absl::StatusCode::kInvalidArgument);  // 12 channels: not whole blocks
  EXPECT_EQ(ToBlocked(RandomNormal({1, 16, 2, 2}, 1), 4).status().code(),
            absl::StatusCode::kInvalidArgument);  // no such block
  EXPECT_EQ(ToBlocked(*Cast(RandomNormal({1, 16, 2, 2}, 1), DType::kFloat64), 8).status().code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_EQ(FromBlocked(RandomNormal({1, 2, 2, 2, 4}, 1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FromBlocked(RandomNormal({1, 16, 2, 2}, 1)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

Window2D Padded(int64_t pad, int64_t stride) {
  Window2D w;
  for (int64_t& p : w.pad) p = pad;
  w.stride[0] = w.stride[1] = stride;
  return w;
}

// Every problem Conv2DBlockedLayouts accepts, with the epilogues the graphs give it, read
// plain and blocked: the blocked result equals Conv2DEpilogue's bit for bit.
TEST(BlockedLayoutTest, ConvolutionsEqualTheNchwKernelsBitForBit) {
  struct Problem {
    Shape x, w;
    int64_t pad, stride;
  };
  const Problem problems[] = {{{2, 32, 9, 9}, {32, 32, 3, 3}, 1, 1},
                              {{2, 64, 8, 8}, {32, 64, 1, 1}, 0, 1},
                              {{2, 32, 9, 9}, {64, 32, 1, 1}, 0, 2},
                              {{1, 3, 20, 20}, {16, 3, 7, 7}, 3, 2}};  // a stem: NCHW input
  // The epilogues, each operand named: channel vector 0-2, or 3: the residual.
  const std::pair<Shape, Shape> epilogues[] = {{{}, {}},
                                               {{kRelu}, {}},
                                               {{kBias, kMul, kAdd, kAdd, kRelu}, {0, 1, 2, 3}},
                                               {{kBias}, {0}},
                                               {{kAdd, kRelu}, {3}}};
  unsigned seed = 11;
  int ran = 0;
  for (const Problem& p : problems) {
    const Window2D win = Padded(p.pad, p.stride);
    const Tensor x = RandomNormal(p.x, seed++), w = RandomNormal(p.w, seed++, 0.3f);
    const Shape out = Conv2D(x, w, nullptr, win)->shape();
    const Tensor channel[3] = {RandomNormal({1, out[1], 1, 1}, seed++),
                               RandomNormal({1, out[1], 1, 1}, seed++),
                               RandomNormal({1, out[1], 1, 1}, seed++)};
    Tensor residual = RandomNormal(out, seed++);
    residual.data<float>()[3] = NAN;
    for (const auto& [post, which] : epilogues) {
      std::vector<const Tensor*> operands;
      for (int64_t k : which) operands.push_back(k < 3 ? &channel[k] : &residual);
      std::vector<TensorMeta> metas;
      for (const Tensor* o : operands) metas.push_back(MetaOf(*o));
      std::vector<const TensorMeta*> ptrs;
      for (const TensorMeta& m : metas) ptrs.push_back(&m);
      const auto blocks = Conv2DBlockedLayouts(MetaOf(x), MetaOf(w), nullptr, win, post, ptrs);
      if (!blocks) continue;
      ++ran;
      const Tensor want = *Conv2DEpilogue(x, w, nullptr, win, post, operands);
      std::vector<Tensor> blocked_operands;
      std::vector<const Tensor*> bptrs;
      for (const Tensor* o : operands)
        blocked_operands.push_back(o->shape() == out ? *ToBlocked(*o, blocks->result) : *o);
      for (const Tensor& o : blocked_operands) bptrs.push_back(&o);
      const Tensor in = blocks->input ? *ToBlocked(x, blocks->input) : x;
      const Tensor got = *Conv2DBlocked(in, w, nullptr, win, post, bptrs, blocks->result);
      ExpectBitEqual(*FromBlocked(got), want);
      // A plain input gives the same (the convolution reorders it itself).
      ExpectBitEqual(*FromBlocked(*Conv2DBlocked(x, w, nullptr, win, post, bptrs,
                                                 blocks->result)), want);
    }
  }
  EXPECT_GE(ran, 8);  // the many-channel problems take every epilogue above
}

TEST(BlockedLayoutTest, FewChannelAndDepthwiseConvolutionsStayNchw) {
  const Window2D win = Padded(1, 1);
  // The direct kernels' problem (few channels, stride 1); depthwise ones over channels that
  // are no multiple of 8, or with two outputs per channel.
  EXPECT_FALSE(Conv2DBlockedLayouts({DType::kFloat32, {2, 4, 8, 8}}, {DType::kFloat32, {4, 4, 3, 3}},
                                    nullptr, win, {}, {}));
  Window2D dw = win;
  dw.groups = 12;
  EXPECT_FALSE(Conv2DBlockedLayouts({DType::kFloat32, {2, 12, 8, 8}}, {DType::kFloat32, {12, 1, 3, 3}},
                                    nullptr, dw, {}, {}));
  dw.groups = 16;
  EXPECT_FALSE(Conv2DBlockedLayouts({DType::kFloat32, {2, 16, 8, 8}}, {DType::kFloat32, {32, 1, 3, 3}},
                                    nullptr, dw, {}, {}));
  // Depthwise over a multiple of 8: oneDNN's nChw8c kernels.
  dw.groups = 32;
  const auto blocks = Conv2DBlockedLayouts({DType::kFloat32, {2, 32, 8, 8}},
                                           {DType::kFloat32, {32, 1, 3, 3}}, nullptr, dw, {}, {});
  ASSERT_TRUE(blocks.has_value());
  EXPECT_EQ(blocks->input, 8);
  EXPECT_EQ(blocks->result, 8);
  EXPECT_FALSE(Conv2DBlockedLayouts({DType::kFloat64, {2, 32, 8, 8}}, {DType::kFloat64, {32, 32, 3, 3}},
                                    nullptr, win, {}, {}));
}

// Against the float64 loops (max exactly, average within float32 rounding). NaN is left out:
// oneDNN's max pooling, NCHW or blocked, lets a window's numbers win over a NaN.
TEST(BlockedLayoutTest, PoolingOnBlockedTensorsEqualsNchwPooling) {
  Window2D max3 = Padded(1, 2);
  max3.kernel[0] = max3.kernel[1] = 3;
  Window2D avg2;
  avg2.kernel[0] = avg2.kernel[1] = 2;
  avg2.stride[0] = avg2.stride[1] = 2;
  Window2D ceil3 = max3;
  ceil3.ceil_mode = true;
  for (const auto& [kind, win] : {std::pair{PoolKind::kMax, max3}, std::pair{PoolKind::kAvg, avg2},
                                  std::pair{PoolKind::kMax, ceil3}}) {
    Tensor x = RandomNormal({2, 32, 11, 11}, 5);
    x.data<float>()[40] = -INFINITY;
    x.data<float>()[41] = -INFINITY;
    const int64_t block = Pool2DBlock(kind, MetaOf(x), win);
    ASSERT_NE(block, 0);
    const Tensor want = *Cast(*Pool2D(kind, *Cast(x, DType::kFloat64), win), DType::kFloat32);
    // The host's block, the other block (a graph made on another machine), and NCHW (which
    // runs blocked inside).
    for (const Tensor& got : {*FromBlocked(*Pool2D(kind, *ToBlocked(x, block), win)),
                              *FromBlocked(*Pool2D(kind, *ToBlocked(x, 24 - block), win)),
                              *Pool2D(kind, x, win)}) {
      if (kind == PoolKind::kMax) {
        ExpectBitEqual(got, want);
        continue;
      }
      ASSERT_EQ(got.shape(), want.shape());
      for (int64_t i = 0; i < want.numel(); ++i) {
        const float a = got.data<float>()[i], b = want.data<float>()[i];
        ASSERT_TRUE(a == b || std::abs(a - b) <= 1e-6f) << i << ": " << a << " vs " << b;
      }
    }
  }
  EXPECT_EQ(Pool2DBlock(PoolKind::kMax, {DType::kFloat32, {1, 12, 4, 4}}, max3), 0);
  // A 5-D input in a block pooling does not run in is refused, not misread.
  EXPECT_EQ(Pool2D(PoolKind::kMax, RandomNormal({1, 3, 4, 4, 4}, 1), max3).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// A channel vector against a blocked tensor repeats a run of b values along H and W: the
// loops' periodic rows give what the same program gives on the operands expanded to the full
// shape (all contiguous), bit for bit, generated code and interpreter alike.
TEST(BlockedLayoutTest, PeriodicRowsEqualExpandedOperands) {
  auto program = FusedProgram::Parse("mul($0, $1); add(#0, $2); relu(#1)", DType::kFloat32, 3);
  ASSERT_TRUE(program.ok()) << program.status();
  for (const Shape& s : {Shape{2, 4, 7, 7, 8}, Shape{1, 2, 3, 5, 16}, Shape{3, 2, 30, 30, 8}}) {
    const Shape vs{1, s[1], 1, 1, s[4]};
    const Tensor x = RandomNormal(s, 3), scale = RandomNormal(vs, 4), shift = RandomNormal(vs, 5);
    const Tensor full_scale = BroadcastTo(scale, s)->Contiguous();
    const Tensor full_shift = BroadcastTo(shift, s)->Contiguous();
    const Tensor* periodic[] = {&x, &scale, &shift};
    const Tensor* expanded[] = {&x, &full_scale, &full_shift};
    for (FusedBackend backend : {FusedBackend::kAuto, FusedBackend::kInterpreter}) {
      auto k = FusedKernel::Create(*program, {s, vs, vs}, s, backend);
      ASSERT_TRUE(k.ok()) << k.status();
      ExpectBitEqual(*(*k)->Run(periodic, s), *(*k)->Run(expanded, s));
    }
  }
}

}  // namespace
}  // namespace pijit
