// The AVX-512 softmax and layer norm rows (kernels/cpu/rows_avx512.h) agree with the paths
// other CPUs take (forced here with rvec::ForceScalarForTesting: the AVX2/generated-exp softmax
// and oneDNN's layer norm). Skipped without AVX-512.
#include <cmath>
#include <random>

#include "gtest/gtest.h"
#include "kernels/cpu/reduce_vec.h"
#include "kernels/cpu/rows_avx512.h"
#include "kernels/ops.h"

namespace pijit {
namespace {

Tensor RandomRows(int64_t rows, int64_t n, unsigned seed) {
  Tensor t = Tensor::Empty({rows, n}, DType::kFloat32);
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.5f, 4.f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// Both results, the second with the vector paths turned off.
template <typename F>
std::pair<Tensor, Tensor> BothPaths(F run) {
  Tensor fast = run();
  rvec::ForceScalarForTesting(true);
  Tensor other = run();
  rvec::ForceScalarForTesting(false);
  return {fast, other};
}

void ExpectClose(const Tensor& a, const Tensor& b, double tol) {
  ASSERT_EQ(a.numel(), b.numel());
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.data<float>()[i], y = b.data<float>()[i];
    if (std::isnan(x) && std::isnan(y)) continue;
    ASSERT_LE(std::abs(x - y), tol * std::max(1.0, std::abs(y))) << "element " << i;
  }
}

TEST(RowsAvx512Test, SoftmaxAgreesWithOtherPaths) {
  if (!avx512::Available()) GTEST_SKIP() << "no AVX-512";
  for (int64_t n : {1, 15, 16, 33, 300, 1024, 2049}) {
    Tensor x = RandomRows(37, n, static_cast<unsigned>(n));
    x.data<float>()[n / 2] = NAN;                    // row 0: all NaN
    for (int64_t j = 0; j < n; ++j) x.data<float>()[n + j] = -INFINITY;  // row 1: shift by 0
    for (bool log : {false, true}) {
      auto [fast, other] = BothPaths([&] { return *Softmax(log, x, -1); });
      ExpectClose(fast, other, 2e-6);
    }
  }
}

TEST(RowsAvx512Test, LayerNormAgreesWithOtherPaths) {
  if (!avx512::Available()) GTEST_SKIP() << "no AVX-512";
  for (int64_t n : {256, 300, 1024, 1029}) {
    Tensor x = RandomRows(29, n, static_cast<unsigned>(n));
    Tensor g = RandomRows(1, n, 1), b = RandomRows(1, n, 2);
    Tensor g1 = *Reshape(g, {n}), b1 = *Reshape(b, {n});
    for (int mask = 0; mask < 4; ++mask) {
      const Tensor* gp = mask & 1 ? &g1 : nullptr;
      const Tensor* bp = mask & 2 ? &b1 : nullptr;
      auto [fast, other] = BothPaths([&] { return *LayerNorm(x, {n}, gp, bp, 1e-5); });
      ExpectClose(fast, other, 2e-5);
    }
  }
}

}  // namespace
}  // namespace pijit
