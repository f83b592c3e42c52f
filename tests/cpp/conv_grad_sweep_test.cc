// Gradients of conv2d and of the poolings swept over window geometry (stride, padding: none,
// symmetric, asymmetric and 'same'; dilation; groups and depthwise; kernels larger than the
// input), float32 and float64, against references that share no code with the kernels:
// - conv2d: direct float64 loops over every (output pixel, tap) pair, written here;
// - pooling: the vector-Jacobian product probed through the forward op itself. Average
//   pooling is linear, so (dx)_i = <dy, pool(e_i)> exactly; max pooling is probed with
//   distinct integer inputs raised by 1/4, which moves no window's maximum.
// Every configuration where a kernel column or row lies wholly inside the padding is
// included: stride >= 2 there once made the weight gradient read the next row (or past the
// buffer), which AddressSanitizer and these references both catch.
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "kernels/ops.h"

namespace pijit {
namespace {

struct ConvCase {
  int64_t n, c, h, w, o, kh, kw, stride[2], dilation[2], groups, pad[4];
  bool same;
};

Tensor RandomOf(const Shape& shape, DType dtype, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  Tensor t = Tensor::Empty(shape, dtype);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dtype == DType::kFloat32) t.data<float>()[i] = static_cast<float>(dist(gen));
    else t.data<double>()[i] = dist(gen);
  }
  return t;
}

double At(const Tensor& t, int64_t i) {
  return t.dtype() == DType::kFloat32 ? t.data<float>()[i] : t.data<double>()[i];
}

// The stride and padding of a convolution or pooling case ('same' resolves its own padding).
template <typename Case>
Window2D StridedWindow(const Case& c) {
  Window2D win;
  win.same = c.same;
  for (int i = 0; i < 2; ++i) win.stride[i] = c.stride[i];
  for (int i = 0; i < 4; ++i) win.pad[i] = c.same ? 0 : c.pad[i];
  return win;
}

Window2D WindowOf(const ConvCase& k) {
  Window2D win = StridedWindow(k);
  win.groups = k.groups;
  for (int i = 0; i < 2; ++i) win.dilation[i] = k.dilation[i];
  return win;
}

// The padding before (top, left) that 'same' resolves to: TensorFlow's rule, the extra pixel
// at the end.
int64_t SamePadBefore(int64_t in, int64_t k, int64_t s, int64_t d) {
  const int64_t out = (in + s - 1) / s, eff = d * (k - 1) + 1;
  return std::max<int64_t>(0, (out - 1) * s + eff - in) / 2;
}

// Reference gradients of y = conv2d(x, w): dx and dw for output gradient dy, in float64.
void ReferenceConvGrads(const ConvCase& k, const Tensor& x, const Tensor& w, const Tensor& dy,
                        std::vector<double>* dx, std::vector<double>* dw) {
  const int64_t oh = dy.shape()[2], ow = dy.shape()[3];
  const int64_t top = k.same ? SamePadBefore(k.h, k.kh, k.stride[0], k.dilation[0]) : k.pad[0];
  const int64_t left = k.same ? SamePadBefore(k.w, k.kw, k.stride[1], k.dilation[1]) : k.pad[2];
  const int64_t cg = k.c / k.groups, og = k.o / k.groups;
  dx->assign(x.numel(), 0.0);
  dw->assign(w.numel(), 0.0);
  for (int64_t b = 0; b < k.n; ++b)
    for (int64_t oc = 0; oc < k.o; ++oc)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xo = 0; xo < ow; ++xo) {
          const double g = At(dy, ((b * k.o + oc) * oh + y) * ow + xo);
          for (int64_t ic = 0; ic < cg; ++ic)
            for (int64_t i = 0; i < k.kh; ++i)
              for (int64_t j = 0; j < k.kw; ++j) {
                const int64_t iy = y * k.stride[0] - top + i * k.dilation[0];
                const int64_t ix = xo * k.stride[1] - left + j * k.dilation[1];
                if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
                const int64_t xi = ((b * k.c + (oc / og) * cg + ic) * k.h + iy) * k.w + ix;
                const int64_t wi = ((oc * cg + ic) * k.kh + i) * k.kw + j;
                (*dx)[xi] += g * At(w, wi);
                (*dw)[wi] += g * At(x, xi);
              }
        }
}

std::string Describe(const ConvCase& k, DType dtype) {
  return absl::StrFormat(
      "%s x[%d,%d,%d,%d] w[%d,%d,%d,%d] stride (%d,%d) dilation (%d,%d) groups %d pad "
      "(%d,%d,%d,%d)%s",
      DTypeName(dtype), k.n, k.c, k.h, k.w, k.o, k.c / k.groups, k.kh, k.kw, k.stride[0],
      k.stride[1], k.dilation[0], k.dilation[1], k.groups, k.pad[0], k.pad[1], k.pad[2],
      k.pad[3], k.same ? " same" : "");
}

// The sweep: every combination below whose padded input holds the dilated kernel.
std::vector<ConvCase> ConvCases() {
  struct Channels { int64_t c, o, groups; };
  const Channels channels[] = {{1, 2, 1}, {3, 4, 1}, {4, 3, 1}, {6, 6, 6}, {4, 6, 2}};
  const int64_t pads[][4] = {{0, 0, 0, 0}, {1, 1, 1, 1}, {0, 2, 1, 0}, {2, 0, 0, 3}};
  const int64_t kernels[][2] = {{1, 1}, {3, 3}, {2, 5}, {7, 7}};
  std::vector<ConvCase> cases;
  for (const Channels& ch : channels)
    for (int64_t s : {1, 2, 3})
      for (int64_t d : {1, 2})
        for (const auto& kk : kernels)
          for (int p = 0; p <= 4; ++p) {  // p == 4: 'same'
            ConvCase k{2, ch.c, 5, 6, ch.o, kk[0], kk[1], {s, s == 3 ? 2 : s}, {d, d},
                       ch.groups, {0, 0, 0, 0}, p == 4};
            if (p < 4) std::copy(pads[p], pads[p] + 4, k.pad);
            const int64_t effh = d * (kk[0] - 1) + 1, effw = d * (kk[1] - 1) + 1;
            if (!k.same && (k.h + k.pad[0] + k.pad[1] < effh || k.w + k.pad[2] + k.pad[3] < effw))
              continue;
            cases.push_back(k);
          }
  // Kernels larger than the input, held by the padding.
  cases.push_back({1, 2, 3, 2, 2, 5, 4, {2, 2}, {1, 1}, 1, {2, 1, 3, 2}, false});
  cases.push_back({2, 1, 2, 3, 1, 4, 6, {3, 2}, {1, 1}, 1, {1, 2, 2, 4}, false});
  return cases;
}

TEST(ConvGradSweep, BothGradientsMatchDirectLoopsForEveryGeometry) {
  uint32_t seed = 1;
  int checked = 0;
  for (const ConvCase& k : ConvCases()) {
    for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
      const std::string what = Describe(k, dtype);
      const Window2D win = WindowOf(k);
      const Shape xs{k.n, k.c, k.h, k.w}, ws{k.o, k.c / k.groups, k.kh, k.kw};
      Tensor x = RandomOf(xs, dtype, seed++), w = RandomOf(ws, dtype, seed++);
      auto y = Conv2D(x, w, nullptr, win);
      ASSERT_TRUE(y.ok()) << what << ": " << y.status();
      Tensor dy = RandomOf(y->shape(), dtype, seed++);
      auto dx = Conv2DGradInput(dy, w, xs, win);
      auto dw = Conv2DGradWeight(x, dy, ws, win);
      ASSERT_TRUE(dx.ok() && dw.ok()) << what << ": " << dx.status() << " " << dw.status();
      std::vector<double> rdx, rdw;
      ReferenceConvGrads(k, x, w, dy, &rdx, &rdw);
      // Sums of at most a few hundred products of values in [-1, 1].
      const double tol = dtype == DType::kFloat32 ? 2e-4 : 1e-12;
      for (int64_t i = 0; i < dx->numel(); ++i) {
        ASSERT_NEAR(At(*dx, i), rdx[i], tol) << "dx[" << i << "] of " << what;
      }
      for (int64_t i = 0; i < dw->numel(); ++i) {
        ASSERT_NEAR(At(*dw, i), rdw[i], tol) << "dw[" << i << "] of " << what;
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 500);
}

// The regression itself, small enough to read: stride 2 across a 2-wide image with 2 columns
// of right padding, so the 3-wide kernel's last column lies wholly in the padding. It gets no
// gradient (the old bound read the next row's first pixel, and past the buffer on the last).
TEST(ConvGradSweep, WeightTapInsideTheRightPaddingGetsNoGradient) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    Window2D win;
    win.stride[0] = 1;
    win.stride[1] = 2;
    win.pad[3] = 2;  // right
    Tensor x = RandomOf({1, 1, 2, 2}, dtype, 3), dy = RandomOf({1, 1, 2, 1}, dtype, 4);
    auto dw = Conv2DGradWeight(x, dy, {1, 1, 1, 3}, win);
    ASSERT_TRUE(dw.ok()) << dw.status();
    // The one output column reads input columns 0, 1 and 2 (padding) of each row.
    const double expect[3] = {At(dy, 0) * At(x, 0) + At(dy, 1) * At(x, 2),
                              At(dy, 0) * At(x, 1) + At(dy, 1) * At(x, 3), 0.0};
    for (int j = 0; j < 3; ++j) EXPECT_NEAR(At(*dw, j), expect[j], 1e-6) << DTypeName(dtype);
  }
}

struct PoolCase {
  int64_t h, w, k[2], stride[2], pad[4];
  bool same, ceil, include_pad;
};

Window2D WindowOf(const PoolCase& p) {
  Window2D win = StridedWindow(p);
  win.ceil_mode = p.ceil;
  win.count_include_pad = p.include_pad;
  for (int i = 0; i < 2; ++i) win.kernel[i] = p.k[i];
  return win;
}

void SetAt(Tensor& t, int64_t i, double v) {
  if (t.dtype() == DType::kFloat32) t.data<float>()[i] = static_cast<float>(v);
  else t.data<double>()[i] = v;
}

Tensor CopyOf(const Tensor& t) {
  Tensor c = Tensor::Empty(t.shape(), t.dtype());
  for (int64_t i = 0; i < t.numel(); ++i) SetAt(c, i, At(t, i));
  return c;
}

double Dot(const Tensor& a, const Tensor& b) {
  double s = 0;
  for (int64_t i = 0; i < a.numel(); ++i) s += At(a, i) * At(b, i);
  return s;
}


TEST(PoolGradSweep, GradientsMatchTheForwardProbedElementByElement) {
  std::vector<PoolCase> cases;
  const int64_t pads[][4] = {{0, 0, 0, 0}, {1, 1, 1, 1}, {0, 1, 1, 0}};
  for (int64_t kk : {1, 2, 3})
    for (int64_t s : {1, 2, 3})
      for (int p = 0; p <= 3; ++p)
        for (bool ceil : {false, true})
          for (bool include_pad : {false, true}) {
            PoolCase c{5, 7, {kk, kk == 3 ? 2 : kk}, {s, s}, {0, 0, 0, 0}, p == 3, ceil,
                       include_pad};
            if (p < 3) std::copy(pads[p], pads[p] + 4, c.pad);
            if (c.same && ceil) continue;
            cases.push_back(c);
          }
  std::mt19937 gen(5);
  int checked = 0;
  for (const PoolCase& c : cases) {
    for (PoolKind kind : {PoolKind::kMax, PoolKind::kAvg}) {
      for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
        const Window2D win = WindowOf(c);
        const std::string what = absl::StrFormat(
            "%s %s x[2,2,%d,%d] kernel (%d,%d) stride (%d,%d) pad (%d,%d,%d,%d)%s%s%s",
            kind == PoolKind::kMax ? "max" : "avg", DTypeName(dtype), c.h, c.w, c.k[0], c.k[1],
            c.stride[0], c.stride[1], c.pad[0], c.pad[1], c.pad[2], c.pad[3],
            c.same ? " same" : "", c.ceil ? " ceil" : "", c.include_pad ? " include_pad" : "");
        // Distinct integers: the maxima are unique and a raise of 1/4 moves none of them.
        Tensor x = Tensor::Empty({2, 2, c.h, c.w}, dtype);
        std::vector<int> values(x.numel());
        for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<int>(i) - 30;
        std::shuffle(values.begin(), values.end(), gen);
        for (int64_t i = 0; i < x.numel(); ++i) SetAt(x, i, values[i]);
        auto y = Pool2D(kind, x, win);
        if (!y.ok()) continue;  // padding over half the window: refused, as MindSpore does
        Tensor dy = RandomOf(y->shape(), dtype, static_cast<uint32_t>(checked + 11));
        auto dx = Pool2DGrad(kind, x, dy, win);
        ASSERT_TRUE(dx.ok()) << what << ": " << dx.status();
        const double base = Dot(*y, dy);
        for (int64_t i = 0; i < x.numel(); ++i) {
          Tensor probe = CopyOf(x);
          SetAt(probe, i, At(x, i) + 0.25);
          auto py = Pool2D(kind, probe, win);
          ASSERT_TRUE(py.ok()) << what;
          const double expect = (Dot(*py, dy) - base) / 0.25;
          ASSERT_NEAR(At(*dx, i), expect, dtype == DType::kFloat32 ? 1e-3 : 1e-9)
              << "dx[" << i << "] of " << what;
        }
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 200);
}

}  // namespace
}  // namespace pijit
