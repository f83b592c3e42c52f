// The vectorised reduction blocks against plain loops, on the AVX2 path and on the scalar
// fallback (forced), which must give bit-identical sums.
#include "kernels/cpu/reduce_vec.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace pijit::rvec {
namespace {

template <typename T>
std::vector<T> Random(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> dist(0.0, 1.0);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(dist(gen));
  return v;
}

struct ScalarScope {
  explicit ScalarScope(bool on) { ForceScalarForTesting(on); }
  ~ScalarScope() { ForceScalarForTesting(false); }
};

template <typename T>
void CheckSizes() {
  for (int64_t n : std::vector<int64_t>{1, 3, 15, 16, 17, 255, 257, 1000, 1 << 15, (1 << 17) + 7}) {
    const std::vector<T> x = Random<T>(n, static_cast<uint32_t>(n));
    double want = 0, ssd = 0;
    for (T v : x) want += v;
    const double mean = want / n;
    for (T v : x) ssd += (v - mean) * (v - mean);
    T mx = x[0], mn = x[0];
    for (T v : x) mx = std::max(mx, v), mn = std::min(mn, v);
    double sums[2], ssds[2];
    for (int scalar = 0; scalar < 2; ++scalar) {
      ScalarScope scope(scalar);
      sums[scalar] = Sum(x.data(), n, true);
      ssds[scalar] = Ssd(x.data(), n, mean, true);
      EXPECT_NEAR(sums[scalar], want, 1e-9 * n) << n;
      EXPECT_NEAR(ssds[scalar], ssd, 1e-9 * n) << n;
      EXPECT_EQ(Max(x.data(), n, true), mx) << n;
      EXPECT_EQ(Min(x.data(), n, true), mn) << n;
      EXPECT_EQ(FindFirst(x.data(), n, mx), std::max_element(x.begin(), x.end()) - x.begin());
      EXPECT_EQ(ArgMax(x.data(), n, true), std::max_element(x.begin(), x.end()) - x.begin());
      EXPECT_EQ(ArgMin(x.data(), n, true), std::min_element(x.begin(), x.end()) - x.begin());
    }
    EXPECT_EQ(sums[0], sums[1]) << "AVX2 and scalar sums differ, n=" << n;
    EXPECT_EQ(ssds[0], ssds[1]) << n;
    EXPECT_EQ(Sum(x.data(), n, false), sums[0]) << "serial and parallel sums differ, n=" << n;
  }
}

TEST(ReduceVec, Float32MatchesLoopsOnBothPaths) { CheckSizes<float>(); }
TEST(ReduceVec, Float64MatchesLoopsOnBothPaths) { CheckSizes<double>(); }

template <typename T>
void CheckNan() {
  for (int64_t n : std::vector<int64_t>{1, 9, 40, 100}) {
    for (int64_t at : std::vector<int64_t>{0, n / 2, n - 1}) {
      std::vector<T> x = Random<T>(n, 7);
      x[at] = std::numeric_limits<T>::quiet_NaN();
      for (int scalar = 0; scalar < 2; ++scalar) {
        ScalarScope scope(scalar);
        EXPECT_TRUE(std::isnan(Max(x.data(), n, false))) << n << " " << at;
        EXPECT_TRUE(std::isnan(Min(x.data(), n, false))) << n << " " << at;
        EXPECT_EQ(FindFirst(x.data(), n, std::numeric_limits<T>::quiet_NaN()), at);
        EXPECT_EQ(ArgMax(x.data(), n, false), at);
        EXPECT_EQ(ArgMin(x.data(), n, false), at);
      }
    }
  }
}

TEST(ReduceVec, ArgMaxTakesTheFirstNanAcrossChunks) {
  std::vector<float> x = Random<float>(5 * kChunk + 3, 11);
  x[4 * kChunk + 1] = std::numeric_limits<float>::quiet_NaN();
  x[4 * kChunk + 2] = std::numeric_limits<float>::quiet_NaN();
  x[kChunk + 5] = 100.0f;  // the maximum before the NaN, then a tie later
  x[3 * kChunk] = 100.0f;
  EXPECT_EQ(ArgMax(x.data(), static_cast<int64_t>(x.size()), true), 4 * kChunk + 1);
  x[4 * kChunk + 1] = x[4 * kChunk + 2] = 0.0f;
  EXPECT_EQ(ArgMax(x.data(), static_cast<int64_t>(x.size()), true), kChunk + 5);
}

TEST(ReduceVec, MaxMinPropagateNanAndFindFirstFindsIt) {
  CheckNan<float>();
  CheckNan<double>();
}

TEST(ReduceVec, ColumnKernelsMatchLoops) {
  const int64_t rows = 37, cols = 45, ld = 50;
  const std::vector<float> x = Random<float>(rows * ld, 3);
  for (int scalar = 0; scalar < 2; ++scalar) {
    ScalarScope scope(scalar);
    std::vector<double> sum(cols, 0.0);
    std::vector<float> mx(x.begin(), x.begin() + cols);
    SumCols(x.data(), rows, cols, ld, sum.data());
    MaxCols(x.data() + ld, rows - 1, cols, ld, mx.data());
    for (int64_t c = 0; c < cols; ++c) {
      double s = 0;
      float m = x[c];
      for (int64_t r = 0; r < rows; ++r) s += x[r * ld + c], m = std::max(m, x[r * ld + c]);
      EXPECT_DOUBLE_EQ(sum[c], s);
      EXPECT_EQ(mx[c], m);
    }
  }
}

}  // namespace
}  // namespace pijit::rvec
