// The vectorised reduction blocks against plain loops and against the documented summation
// order written out here, on every path the host can run (AVX-512, AVX2 and the scalar
// fallback, forced), which must give bit-identical results.
#include "kernels/cpu/reduce_vec.h"
#include "kernels/cpu/fused_x86.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
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

// The chunk drivers call the chunk function on the documented chunks and combine the values
// as Sum, Max and Min do.
TEST(ReduceVec, ChunkDriversSplitAndCombineAsTheReductions) {
  const int64_t n = 3 * kChunk + 5;
  const std::vector<double> x = Random<double>(n, 21);
  for (bool parallel : {false, true}) {
    std::vector<int64_t> starts(4, -1), lens(4, -1);
    const double sum = SumChunks(n, parallel, [&](int64_t b, int64_t len) {
      starts[b / kChunk] = b;
      lens[b / kChunk] = len;
      return SumChunk(x.data() + b, len);
    });
    EXPECT_EQ(sum, Sum(x.data(), n, parallel));
    EXPECT_EQ(starts, (std::vector<int64_t>{0, kChunk, 2 * kChunk, 3 * kChunk}));
    EXPECT_EQ(lens, (std::vector<int64_t>{kChunk, kChunk, kChunk, 5}));
    EXPECT_EQ(MaxChunks<double>(n, parallel,
                                [&](int64_t b, int64_t len) { return MaxLeaf(x.data() + b, len); }),
              Max(x.data(), n, parallel));
    EXPECT_EQ(MinChunks<double>(n, parallel,
                                [&](int64_t b, int64_t len) { return MinLeaf(x.data() + b, len); }),
              Min(x.data(), n, parallel));
  }
  int calls = 0;
  EXPECT_EQ(SumChunks(0, true, [&](int64_t b, int64_t len) {
              ++calls;
              EXPECT_EQ(b, 0);
              EXPECT_EQ(len, 0);
              return 0.0;
            }),
            0.0);
  EXPECT_EQ(calls, 1);
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

// ---- every instruction set against the scalar fallback and the documented order ----

struct IsaScope {
  explicit IsaScope(int isa) { ForceIsaForTesting(isa); }
  ~IsaScope() { ForceIsaForTesting(0); }
};

// The instruction sets this host runs, the scalar fallback first.
std::vector<int> HostIsas() {
  std::vector<int> isas;
  for (int isa = 1; isa <= 3; ++isa) {
    IsaScope scope(isa);
    if (ActiveIsa() == isa) isas.push_back(isa);
  }
  return isas;
}

TEST(ReduceVec, ForcingChoosesThePathAndZeroRestoresTheHosts) {
  const int host = ActiveIsa();
#if defined(__x86_64__)
  EXPECT_EQ(host, __builtin_cpu_supports("avx512f") ? 3 : __builtin_cpu_supports("avx2") ? 2 : 1);
#endif
  EXPECT_EQ(HostIsas().back(), host);
  {
    ScalarScope scope(true);
    EXPECT_EQ(ActiveIsa(), 1);
    EXPECT_FALSE(HostHasAvx2());
  }
  EXPECT_EQ(ActiveIsa(), host);
  {
    IsaScope scope(host + 1);  // a set the host lacks: the host's choice
    EXPECT_EQ(ActiveIsa(), host);
  }
}

uint64_t Bits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// The documented order, written out independently of reduce_vec.cc: element i of a run adds
// to lane i % 16, the lanes combine by the fixed tree; runs of 256 combine pairwise (halves a
// whole number of runs, the first rounded up); chunks of kChunk combine pairwise.
template <bool kSsd, typename T>
double RefLanes(const T* x, int64_t n, double mean) {
  double acc[16] = {};
  for (int64_t i = 0; i < n; ++i) {
    double t = static_cast<double>(x[i]);
    if (kSsd) {
      const double d = t - mean;
      t = d * d;
    }
    acc[i % 16] += t;
  }
  double s[4];
  for (int k = 0; k < 4; ++k) s[k] = (acc[k] + acc[4 + k]) + (acc[8 + k] + acc[12 + k]);
  return (s[0] + s[1]) + (s[2] + s[3]);
}
template <bool kSsd, typename T>
double RefRuns(const T* x, int64_t n, double mean) {
  if (n <= 256) return RefLanes<kSsd>(x, n, mean);
  const int64_t half = (n / 2 + 255) / 256 * 256;
  return RefRuns<kSsd>(x, half, mean) + RefRuns<kSsd>(x + half, n - half, mean);
}
double RefPairwise(const double* p, int64_t n) {
  if (n == 1) return p[0];
  return RefPairwise(p, n / 2) + RefPairwise(p + n / 2, n - n / 2);
}
template <bool kSsd, typename T>
double RefSum(const T* x, int64_t n, double mean) {
  if (n <= kChunk) return RefRuns<kSsd>(x, n, mean);
  std::vector<double> part;
  for (int64_t b = 0; b < n; b += kChunk)
    part.push_back(RefRuns<kSsd>(x + b, std::min(kChunk, n - b), mean));
  return RefPairwise(part.data(), static_cast<int64_t>(part.size()));
}
// NaN if any element is NaN, else the first of the extreme elements.
template <typename T, bool kMax>
T RefExtremum(const T* x, int64_t n) {
  T m = x[0];
  for (int64_t i = 0; i < n; ++i) {
    if (x[i] != x[i]) return std::numeric_limits<T>::quiet_NaN();
    if (kMax ? x[i] > m : x[i] < m) m = x[i];
  }
  return m;
}
template <typename T>
int64_t RefFindFirst(const T* x, int64_t n, T v) {
  for (int64_t i = 0; i < n; ++i)
    if (v != v ? x[i] != x[i] : x[i] == v) return i;
  return n;
}

// Inputs of length n in several patterns: normal values, magnitudes from 1e-20 to 1e20 (sums
// that depend on the order of every addition), NaNs at the ends, the middle and chunk
// boundaries, zeros of both signs among negative values (extrema that are a zero), infinities
// of both signs, subnormals.
template <typename T>
std::vector<T> Pattern(int kind, int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(-20.0, 20.0);
  std::vector<T> x(n);
  for (auto& v : x) v = static_cast<T>(normal(gen));
  const T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
  switch (kind) {
    case 1:
      for (auto& v : x) v = static_cast<T>((gen() & 1 ? 1 : -1) * std::pow(10.0, uniform(gen)));
      break;
    case 2:
      for (int64_t at : {int64_t{0}, n / 2, n - 1, kChunk - 1, kChunk, 2 * kChunk + 3})
        if (at >= 0 && at < n && gen() % 2) x[at] = nan;
      if (n > 0) x[n - 1 - static_cast<int64_t>(gen() % n)] = nan;
      break;
    case 3:
      for (auto& v : x) {
        const uint32_t r = gen() % 4;
        v = r == 0 ? T(0) : r == 1 ? -T(0) : -std::abs(v);
      }
      break;
    case 4:
      for (auto& v : x)
        if (gen() % 64 == 0) v = gen() % 2 ? inf : -inf;
      break;
    case 5:
      for (auto& v : x) v *= std::numeric_limits<T>::denorm_min() * T(1000);
      break;
  }
  return x;
}

// Every result of the blocks on x, named, in a fixed order.
template <typename T>
std::vector<std::pair<std::string, double>> AllResults(const std::vector<T>& x) {
  const int64_t n = static_cast<int64_t>(x.size());
  const T* p = x.data();
  std::vector<std::pair<std::string, double>> r;
  const double mean = n ? RefSum<false>(p, n, 0.0) / n : 0.0;
  r.emplace_back("SumLeaf", SumLeaf(p, n));
  r.emplace_back("SsdLeaf", SsdLeaf(p, n, mean));
  r.emplace_back("Sum serial", Sum(p, n, false));
  r.emplace_back("Sum parallel", Sum(p, n, true));
  r.emplace_back("Ssd serial", Ssd(p, n, mean, false));
  r.emplace_back("Ssd parallel", Ssd(p, n, mean, true));
  if (n == 0) return r;
  r.emplace_back("MaxLeaf", MaxLeaf(p, n));
  r.emplace_back("MinLeaf", MinLeaf(p, n));
  r.emplace_back("Max parallel", Max(p, n, true));
  r.emplace_back("Min parallel", Min(p, n, true));
  r.emplace_back("ArgMax", static_cast<double>(ArgMax(p, n, true)));
  r.emplace_back("ArgMin", static_cast<double>(ArgMin(p, n, true)));
  for (T v : {x[n / 2], x[n - 1], T(0), std::numeric_limits<T>::quiet_NaN(), T(1e30)})
    r.emplace_back("FindFirst", static_cast<double>(FindFirst(p, n, v)));
  return r;
}

// What the scalar fallback must give, from the reference loops.
template <typename T>
std::vector<std::pair<std::string, double>> RefResults(const std::vector<T>& x) {
  const int64_t n = static_cast<int64_t>(x.size());
  const T* p = x.data();
  std::vector<std::pair<std::string, double>> r;
  const double mean = n ? RefSum<false>(p, n, 0.0) / n : 0.0;
  r.emplace_back("SumLeaf", RefLanes<false>(p, n, 0.0));
  r.emplace_back("SsdLeaf", RefLanes<true>(p, n, mean));
  r.emplace_back("Sum serial", RefSum<false>(p, n, 0.0));
  r.emplace_back("Sum parallel", RefSum<false>(p, n, 0.0));
  r.emplace_back("Ssd serial", RefSum<true>(p, n, mean));
  r.emplace_back("Ssd parallel", RefSum<true>(p, n, mean));
  if (n == 0) return r;
  const T mx = RefExtremum<T, true>(p, n), mn = RefExtremum<T, false>(p, n);
  r.emplace_back("MaxLeaf", mx);
  r.emplace_back("MinLeaf", mn);
  r.emplace_back("Max parallel", mx);
  r.emplace_back("Min parallel", mn);
  r.emplace_back("ArgMax", static_cast<double>(RefFindFirst(p, n, mx)));
  r.emplace_back("ArgMin", static_cast<double>(RefFindFirst(p, n, mn)));
  for (T v : {x[n / 2], x[n - 1], T(0), std::numeric_limits<T>::quiet_NaN(), T(1e30)})
    r.emplace_back("FindFirst", static_cast<double>(RefFindFirst(p, n, v)));
  return r;
}

// Equal bits; a NaN sum (from opposite infinities or a NaN element) may carry either NaN's
// payload, as additions are commutative, so NaN matches NaN.
bool Same(double a, double b) { return Bits(a) == Bits(b) || (a != a && b != b); }

template <typename T>
void CheckEveryIsa() {
  const std::vector<int> isas = HostIsas();
  const std::vector<int64_t> lengths = {0,   1,   2,   3,   7,   8,    15,   16,   17,
                                        31,  32,  33,  63,  64,  65,   127,  128,  129,
                                        255, 256, 257, 511, 512, 513,  767,  1000, 4097,
                                        kChunk - 1, kChunk, kChunk + 1, 2 * kChunk + 255,
                                        kParallelMin + 17};
  for (int kind = 0; kind < 6; ++kind) {
    for (int64_t n : lengths) {
      const std::vector<T> x = Pattern<T>(kind, n, static_cast<uint32_t>(n * 7 + kind));
      const auto want = RefResults(x);
      for (int isa : isas) {
        IsaScope scope(isa);
        const auto got = AllResults(x);
        ASSERT_EQ(got.size(), want.size());
        for (size_t k = 0; k < got.size(); ++k) {
          // Max and min results are exact bits: NaN is the quiet NaN, a zero has its sign.
          const bool exact = got[k].first.rfind("Max", 0) == 0 || got[k].first.rfind("Min", 0) == 0;
          EXPECT_TRUE(exact ? Bits(got[k].second) == Bits(want[k].second)
                            : Same(got[k].second, want[k].second))
              << got[k].first << " isa " << isa << " pattern " << kind << " n " << n << ": "
              << got[k].second << " against " << want[k].second;
        }
      }
    }
  }
}

TEST(ReduceVec, Float32EveryIsaGivesTheDocumentedOrderBitForBit) { CheckEveryIsa<float>(); }
TEST(ReduceVec, Float64EveryIsaGivesTheDocumentedOrderBitForBit) { CheckEveryIsa<double>(); }

// Between equal values the first is kept: only zeros show it, by their sign.
template <typename T>
void CheckSignedZeros() {
  for (int64_t n : {2, 17, 40, 100, 1000, 70000}) {
    for (int64_t first : {int64_t{0}, int64_t{1}, n / 2, n - 1}) {
      std::vector<T> x(n, -T(1));
      for (int64_t i = first; i < n; i += 3) x[i] = T(0);
      x[first] = -T(0);  // the first zero is negative, later ones positive
      for (int isa : HostIsas()) {
        IsaScope scope(isa);
        for (bool par : {false, true}) {
          const T m = Max(x.data(), n, par);
          EXPECT_TRUE(m == 0 && std::signbit(m)) << "isa " << isa << " n " << n << " at " << first;
        }
        std::vector<T> y(n, T(0));
        y[first] = -T(0);
        const T lo = Min(y.data(), n, false);
        EXPECT_TRUE(first == 0 ? std::signbit(lo) : !std::signbit(lo))
            << "isa " << isa << " n " << n << " at " << first;
      }
    }
  }
}

TEST(ReduceVec, ZeroExtremaTakeTheSignOfTheFirstZeroOnEveryIsa) {
  CheckSignedZeros<float>();
  CheckSignedZeros<double>();
}

// The column kernels: each column on its own in row order, with NaNs, signed zeros and
// infinities, against plain loops and across instruction sets.
template <typename T>
void CheckColumnsEveryIsa() {
  struct Block { int64_t rows, cols, ld; };
  for (const Block b : {Block{1, 1, 1}, Block{3, 17, 20}, Block{37, 45, 50}, Block{5, 64, 64},
                        Block{2, 100, 129}, Block{9, 7, 7}}) {
    std::vector<T> x = Pattern<T>(0, b.rows * b.ld, static_cast<uint32_t>(b.cols));
    std::mt19937 gen(static_cast<uint32_t>(b.rows));
    for (auto& v : x) {
      const uint32_t r = gen() % 16;
      if (r == 0) v = std::numeric_limits<T>::quiet_NaN();
      else if (r == 1) v = T(0);
      else if (r == 2) v = -T(0);
      else if (r == 3) v = std::numeric_limits<T>::infinity();
    }
    std::vector<double> mean(b.cols);
    for (int64_t c = 0; c < b.cols; ++c) mean[c] = 0.25 * static_cast<double>(c);
    std::vector<double> sum_ref(b.cols, 0.0), ssd_ref(b.cols, 0.0), prod_ref(b.cols, 1.0);
    std::vector<T> max_ref(x.begin(), x.begin() + b.cols), min_ref = max_ref;
    for (int64_t r = 0; r < b.rows; ++r) {
      for (int64_t c = 0; c < b.cols; ++c) {
        const T v = x[r * b.ld + c];
        sum_ref[c] += v;
        const double d = static_cast<double>(v) - mean[c];
        ssd_ref[c] += d * d;
        prod_ref[c] *= v;
        if (r == 0) continue;
        if (max_ref[c] == max_ref[c] && (v != v || v > max_ref[c])) max_ref[c] = v;
        if (min_ref[c] == min_ref[c] && (v != v || v < min_ref[c])) min_ref[c] = v;
      }
    }
    for (int isa : HostIsas()) {
      IsaScope scope(isa);
      std::vector<double> sum(b.cols, 0.0), ssd(b.cols, 0.0), prod(b.cols, 1.0);
      std::vector<T> mx(x.begin(), x.begin() + b.cols), mn = mx;
      SumCols(x.data(), b.rows, b.cols, b.ld, sum.data());
      SsdCols(x.data(), b.rows, b.cols, b.ld, mean.data(), ssd.data());
      ProdCols(x.data(), b.rows, b.cols, b.ld, prod.data());
      MaxCols(x.data() + b.ld, b.rows - 1, b.cols, b.ld, mx.data());
      MinCols(x.data() + b.ld, b.rows - 1, b.cols, b.ld, mn.data());
      for (int64_t c = 0; c < b.cols; ++c) {
        const std::string at = "isa " + std::to_string(isa) + " rows " +
                               std::to_string(b.rows) + " column " + std::to_string(c);
        EXPECT_TRUE(Same(sum[c], sum_ref[c])) << at << ": " << sum[c] << " " << sum_ref[c];
        EXPECT_TRUE(Same(ssd[c], ssd_ref[c])) << at << ": " << ssd[c] << " " << ssd_ref[c];
        EXPECT_TRUE(Same(prod[c], prod_ref[c])) << at << ": " << prod[c] << " " << prod_ref[c];
        EXPECT_EQ(Bits(mx[c]), Bits(max_ref[c])) << at << ": " << mx[c] << " " << max_ref[c];
        EXPECT_EQ(Bits(mn[c]), Bits(min_ref[c])) << at << ": " << mn[c] << " " << min_ref[c];
      }
    }
  }
}

TEST(ReduceVec, ColumnKernelsGiveThePlainLoopsOnEveryIsa) {
  CheckColumnsEveryIsa<float>();
  CheckColumnsEveryIsa<double>();
}

}  // namespace
}  // namespace pijit::rvec
