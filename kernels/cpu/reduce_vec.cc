// AVX-512, AVX2 and scalar versions of the reduction building blocks (see reduce_vec.h). The
// vector functions are compiled with target("avx512f") or target("avx2"), never "fma", and
// this file with -ffp-contract=off (CMakeLists.txt): AVX512F has multiply-adds of its own, and
// a contracted (x - mean)^2 + acc would round differently from the scalar fallback.
#include "kernels/cpu/reduce_vec.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "absl/container/inlined_vector.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/thread_pool.h"
#include "kernels/cpu/fused_x86.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define PIJIT_AVX2 __attribute__((target("avx2")))
#define PIJIT_AVX512 __attribute__((target("avx512f")))
#endif

namespace pijit::rvec {

namespace {
cpu::IsaChoice& Choice() {
  static cpu::IsaChoice choice(cpu::IsaNeeds{});
  return choice;
}
}  // namespace

void ForceIsaForTesting(int isa) { Choice().Force(isa); }
void ForceScalarForTesting(bool on) { ForceIsaForTesting(on ? 1 : 0); }

int ActiveIsa() { return Choice().Active(); }

bool HostHasAvx2() { return ActiveIsa() >= 2; }

namespace {

// Sums are cut into runs of kPairBlock elements (16 per lane) combined pairwise, as NumPy's
// pairwise sum does below its 8-accumulator blocks: the error grows with log(n), not n.
constexpr int64_t kPairBlock = 256;

// The fixed combination tree of the 16 lanes (lane k holds elements i with i % 16 == k).
double Combine16(const double* a) {
  double s[4];
  for (int k = 0; k < 4; ++k) s[k] = (a[k] + a[4 + k]) + (a[8 + k] + a[12 + k]);
  return (s[0] + s[1]) + (s[2] + s[3]);
}

double Pairwise(const double* p, int64_t n) {
  if (n == 1) return p[0];
  const int64_t m = n / 2;
  return Pairwise(p, m) + Pairwise(p + m, n - m);
}

// What element x adds to its lane: x for sums, (x - mean)^2 for sums of squared deviations.
template <bool kSsd, typename T>
inline double Term(T x, double mean) {
  if constexpr (kSsd) {
    const double d = static_cast<double>(x) - mean;
    return d * d;
  } else {
    return static_cast<double>(x);
  }
}

// ---- scalar ----

template <bool kSsd, typename T>
double LanesScalar(const T* x, int64_t n, double mean) {
  double acc[16] = {};
  for (int64_t i = 0; i < n; ++i) acc[i & 15] += Term<kSsd>(x[i], mean);
  return Combine16(acc);
}
template <typename T, bool kMax>
T ExtremumScalar(const T* x, int64_t n) {
  T m = x[0];
  bool nan = false;
  for (int64_t i = 0; i < n; ++i) {
    m = (kMax ? x[i] > m : x[i] < m) ? x[i] : m;
    nan |= x[i] != x[i];
  }
  return nan ? std::numeric_limits<T>::quiet_NaN() : m;
}
template <typename T>
int64_t FindFirstScalar(const T* x, int64_t n, T v) {
  for (int64_t i = 0; i < n; ++i)
    if (v != v ? x[i] != x[i] : x[i] == v) return i;
  return n;
}

// The extremum of a vector's `lanes` (none NaN) followed by the n elements of `tail`.
template <typename T, bool kMax>
T LanesThenTail(const T* lanes, int64_t count, const T* tail, int64_t n) {
  const T m = ExtremumScalar<T, kMax>(lanes, count);
  if (n == 0) return m;
  const T t = ExtremumScalar<T, kMax>(tail, n);
  return (t != t || (kMax ? t > m : t < m)) ? t : m;
}

// The vector extrema combine lanes out of element order, so between equal values they may
// keep a later one. Only zeros compare equal with different bits: for a zero extremum, the
// first zero of the input is the value the scalar loop keeps.
template <typename T>
T FirstEqual(const T* x, int64_t n, T m) {
  return m == T(0) ? x[FindFirst(x, n, m)] : m;
}

#if defined(__x86_64__)
// ---- AVX2 ----

PIJIT_AVX2 inline __m256d Load4(const float* p) { return _mm256_cvtps_pd(_mm_loadu_ps(p)); }
PIJIT_AVX2 inline __m256d Load4(const double* p) { return _mm256_loadu_pd(p); }

// (v - mean)^2 for sums of squared deviations, else v (the difference is then unused).
template <bool kSsd>
PIJIT_AVX2 inline __m256d Term4(__m256d v, __m256d mean) {
  const __m256d d = _mm256_sub_pd(v, mean);
  return kSsd ? _mm256_mul_pd(d, d) : v;
}

// acc[16] = the four vector accumulators, lanes in element order.
PIJIT_AVX2 inline void Store16(double* acc, __m256d a0, __m256d a1, __m256d a2, __m256d a3) {
  _mm256_storeu_pd(acc, a0);
  _mm256_storeu_pd(acc + 4, a1);
  _mm256_storeu_pd(acc + 8, a2);
  _mm256_storeu_pd(acc + 12, a3);
}

template <bool kSsd, typename T>
PIJIT_AVX2 double LanesAvx2(const T* x, int64_t n, double mean) {
  const __m256d m = _mm256_set1_pd(mean);
  __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    a0 = _mm256_add_pd(a0, Term4<kSsd>(Load4(x + i), m));
    a1 = _mm256_add_pd(a1, Term4<kSsd>(Load4(x + i + 4), m));
    a2 = _mm256_add_pd(a2, Term4<kSsd>(Load4(x + i + 8), m));
    a3 = _mm256_add_pd(a3, Term4<kSsd>(Load4(x + i + 12), m));
  }
  double acc[16];
  Store16(acc, a0, a1, a2, a3);
  for (; i < n; ++i) acc[i & 15] += Term<kSsd>(x[i], mean);
  return Combine16(acc);
}

template <bool kMax>
PIJIT_AVX2 float ExtremumAvx2(const float* x, int64_t n) {
  __m256 a0 = _mm256_set1_ps(x[0]), a1 = a0, a2 = a0, a3 = a0;
  __m256 nan = _mm256_setzero_ps();
  auto ext = [](__m256 a, __m256 v) PIJIT_AVX2 { return kMax ? _mm256_max_ps(a, v) : _mm256_min_ps(a, v); };
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256 v0 = _mm256_loadu_ps(x + i), v1 = _mm256_loadu_ps(x + i + 8);
    const __m256 v2 = _mm256_loadu_ps(x + i + 16), v3 = _mm256_loadu_ps(x + i + 24);
    // unordered(v0, v1) is set where either is NaN: one compare per two vectors.
    nan = _mm256_or_ps(nan, _mm256_or_ps(_mm256_cmp_ps(v0, v1, _CMP_UNORD_Q),
                                         _mm256_cmp_ps(v2, v3, _CMP_UNORD_Q)));
    a0 = ext(a0, v0);
    a1 = ext(a1, v1);
    a2 = ext(a2, v2);
    a3 = ext(a3, v3);
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    a0 = ext(a0, v);
  }
  if (_mm256_movemask_ps(nan)) return std::numeric_limits<float>::quiet_NaN();
  a0 = ext(ext(a0, a1), ext(a2, a3));
  float lanes[8];
  _mm256_storeu_ps(lanes, a0);
  return LanesThenTail<float, kMax>(lanes, 8, x + i, n - i);
}

template <bool kMax>
PIJIT_AVX2 double ExtremumAvx2(const double* x, int64_t n) {
  __m256d a0 = _mm256_set1_pd(x[0]), a1 = a0, a2 = a0, a3 = a0;
  __m256d nan = _mm256_setzero_pd();
  auto step = [&](__m256d a, const double* p) PIJIT_AVX2 {
    const __m256d v = _mm256_loadu_pd(p);
    nan = _mm256_or_pd(nan, _mm256_cmp_pd(v, v, _CMP_UNORD_Q));
    return kMax ? _mm256_max_pd(a, v) : _mm256_min_pd(a, v);
  };
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    a0 = step(a0, x + i);
    a1 = step(a1, x + i + 4);
    a2 = step(a2, x + i + 8);
    a3 = step(a3, x + i + 12);
  }
  for (; i + 4 <= n; i += 4) a0 = step(a0, x + i);
  if (_mm256_movemask_pd(nan)) return std::numeric_limits<double>::quiet_NaN();
  a0 = kMax ? _mm256_max_pd(_mm256_max_pd(a0, a1), _mm256_max_pd(a2, a3))
            : _mm256_min_pd(_mm256_min_pd(a0, a1), _mm256_min_pd(a2, a3));
  double lanes[4];
  _mm256_storeu_pd(lanes, a0);
  return LanesThenTail<double, kMax>(lanes, 4, x + i, n - i);
}

// Bit k set where element k of the 8 floats (4 doubles) at p is NaN (when `nan`) or equals v.
PIJIT_AVX2 inline int Matches(const float* p, __m256 v, bool nan) {
  const __m256 a = _mm256_loadu_ps(p);
  return _mm256_movemask_ps(nan ? _mm256_cmp_ps(a, a, _CMP_UNORD_Q)
                                : _mm256_cmp_ps(a, v, _CMP_EQ_OQ));
}
PIJIT_AVX2 inline int Matches(const double* p, __m256d v, bool nan) {
  const __m256d a = _mm256_loadu_pd(p);
  return _mm256_movemask_pd(nan ? _mm256_cmp_pd(a, a, _CMP_UNORD_Q)
                                : _mm256_cmp_pd(a, v, _CMP_EQ_OQ));
}

template <typename T>
PIJIT_AVX2 int64_t FindFirstAvx2(const T* x, int64_t n, T v) {
  constexpr int64_t L = 32 / sizeof(T);
  const auto vv = [v]() PIJIT_AVX2 {
    if constexpr (std::is_same_v<T, float>) return _mm256_set1_ps(v);
    else return _mm256_set1_pd(v);
  }();
  const bool nan = v != v;
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    const int m = Matches(x + i, vv, nan);
    if (m) return i + __builtin_ctz(m);
  }
  return i + FindFirstScalar(x + i, n - i, v);
}

// ---- AVX-512 ----

// (v - mean)^2 for sums of squared deviations, else v (the difference is then unused).
template <bool kSsd>
PIJIT_AVX512 inline __m512d Term8(__m512d v, __m512d mean) {
  const __m512d d = _mm512_sub_pd(v, mean);
  return kSsd ? _mm512_mul_pd(d, d) : v;
}

PIJIT_AVX512 inline __m512d Load8(const float* p) { return _mm512_cvtps_pd(_mm256_loadu_ps(p)); }
PIJIT_AVX512 inline __m512d Load8(const double* p) { return _mm512_loadu_pd(p); }

// The 16 lanes are two vectors: `lo` holds lanes 0..7, `hi` lanes 8..15.
template <bool kSsd, typename T>
PIJIT_AVX512 double LanesAvx512(const T* x, int64_t n, double mean) {
  const __m512d m = _mm512_set1_pd(mean);
  __m512d lo = _mm512_setzero_pd(), hi = lo;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    lo = _mm512_add_pd(lo, Term8<kSsd>(Load8(x + i), m));
    hi = _mm512_add_pd(hi, Term8<kSsd>(Load8(x + i + 8), m));
  }
  double acc[16];
  _mm512_storeu_pd(acc, lo);
  _mm512_storeu_pd(acc + 8, hi);
  for (; i < n; ++i) acc[i & 15] += Term<kSsd>(x[i], mean);
  return Combine16(acc);
}

// Vectors of 16 floats or 8 doubles with their masks, so that the extremum and FindFirst
// loops are written once (each operation picks its intrinsic at compile time).
// The vector type of 64 bytes of T (std::conditional_t would drop the vector types'
// attributes).
template <typename T>
struct Zmm {
  using V = __m512d;
};
template <>
struct Zmm<float> {
  using V = __m512;
};
template <typename T>
struct Vec512 {
  static constexpr bool kF32 = std::is_same_v<T, float>;
  using V = typename Zmm<T>::V;
  using Mask = std::conditional_t<kF32, __mmask16, __mmask8>;
  static constexpr int kLanes = 64 / sizeof(T);
  PIJIT_AVX512 static V Set1(T v) {
    if constexpr (kF32) return _mm512_set1_ps(v);
    else return _mm512_set1_pd(v);
  }
  PIJIT_AVX512 static V Load(const T* p) {
    if constexpr (kF32) return _mm512_loadu_ps(p);
    else return _mm512_loadu_pd(p);
  }
  // The lanes of `mask` from p, the others from `src` (masked-off lanes are not read).
  PIJIT_AVX512 static V LoadTail(V src, Mask mask, const T* p) {
    if constexpr (kF32) return _mm512_mask_loadu_ps(src, mask, p);
    else return _mm512_mask_loadu_pd(src, mask, p);
  }
  PIJIT_AVX512 static V Max(V a, V b) {
    if constexpr (kF32) return _mm512_max_ps(a, b);
    else return _mm512_max_pd(a, b);
  }
  PIJIT_AVX512 static V Min(V a, V b) {
    if constexpr (kF32) return _mm512_min_ps(a, b);
    else return _mm512_min_pd(a, b);
  }
  // Lanes of k where a and b compare unordered (either is NaN), or equal.
  PIJIT_AVX512 static Mask Unord(Mask k, V a, V b) { return Cmp<_CMP_UNORD_Q>(k, a, b); }
  PIJIT_AVX512 static Mask Eq(Mask k, V a, V b) { return Cmp<_CMP_EQ_OQ>(k, a, b); }
  PIJIT_AVX512 static void Store(T* p, V v) {
    if constexpr (kF32) _mm512_storeu_ps(p, v);
    else _mm512_storeu_pd(p, v);
  }

 private:
  template <int kPredicate>
  PIJIT_AVX512 static Mask Cmp(Mask k, V a, V b) {
    if constexpr (kF32) return _mm512_mask_cmp_ps_mask(k, a, b, kPredicate);
    else return _mm512_mask_cmp_pd_mask(k, a, b, kPredicate);
  }
};

template <typename W>
inline typename W::Mask FirstLanes(int64_t k) {
  return static_cast<typename W::Mask>((1u << k) - 1);
}

// Four accumulators of kLanes each; the last partial vector is loaded under a mask over the
// first accumulator, so its masked-off lanes leave it unchanged.
template <typename T, bool kMax>
PIJIT_AVX512 T ExtremumAvx512(const T* x, int64_t n) {
  using W = Vec512<T>;
  constexpr int64_t L = W::kLanes;
  const typename W::Mask all = FirstLanes<W>(L);
  auto ext = [](typename W::V a, typename W::V v) PIJIT_AVX512 {
    return kMax ? W::Max(a, v) : W::Min(a, v);
  };
  typename W::V a0 = W::Set1(x[0]), a1 = a0, a2 = a0, a3 = a0;
  typename W::Mask nan = 0;
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    const typename W::V v0 = W::Load(x + i), v1 = W::Load(x + i + L);
    const typename W::V v2 = W::Load(x + i + 2 * L), v3 = W::Load(x + i + 3 * L);
    // unordered(v0, v1) is set where either is NaN: one compare per two vectors.
    nan |= W::Unord(all, v0, v1) | W::Unord(all, v2, v3);
    a0 = ext(a0, v0);
    a1 = ext(a1, v1);
    a2 = ext(a2, v2);
    a3 = ext(a3, v3);
  }
  for (; i + L <= n; i += L) {
    const typename W::V v = W::Load(x + i);
    nan |= W::Unord(all, v, v);
    a0 = ext(a0, v);
  }
  if (i < n) {
    const typename W::Mask k = FirstLanes<W>(n - i);
    const typename W::V v = W::LoadTail(a0, k, x + i);
    nan |= W::Unord(k, v, v);
    a0 = ext(a0, v);
  }
  if (nan) return std::numeric_limits<T>::quiet_NaN();
  a0 = ext(ext(a0, a1), ext(a2, a3));
  T lanes[L];
  W::Store(lanes, a0);
  return ExtremumScalar<T, kMax>(lanes, L);
}

template <typename T>
PIJIT_AVX512 int64_t FindFirstAvx512(const T* x, int64_t n, T v) {
  using W = Vec512<T>;
  constexpr int64_t L = W::kLanes;
  const typename W::V vv = W::Set1(v);
  const bool nan = v != v;
  for (int64_t i = 0; i < n; i += L) {
    const typename W::Mask k = FirstLanes<W>(std::min(L, n - i));
    const typename W::V a = W::LoadTail(vv, k, x + i);
    const unsigned m = nan ? W::Unord(k, a, a) : W::Eq(k, a, vv);
    if (m) return i + __builtin_ctz(m);
  }
  return n;
}
#endif  // __x86_64__

// ---- columns: plain loops over a row, vectorised by the compiler (each column is its own
// accumulator, so no reassociation is needed); compiled for AVX-512, AVX2 and the baseline
// through the always-inline bodies.
#define PIJIT_INLINE inline __attribute__((always_inline))

template <typename T>
PIJIT_INLINE void SumColsBody(const T* x, int64_t rows, int64_t cols, int64_t ld, double* acc) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = x + r * ld;
    for (int64_t c = 0; c < cols; ++c) acc[c] += static_cast<double>(row[c]);
  }
}
template <typename T>
PIJIT_INLINE void SsdColsBody(const T* x, int64_t rows, int64_t cols, int64_t ld,
                              const double* mean, double* acc) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = x + r * ld;
    for (int64_t c = 0; c < cols; ++c) {
      const double d = static_cast<double>(row[c]) - mean[c];
      acc[c] += d * d;
    }
  }
}
template <typename T>
PIJIT_INLINE void ProdColsBody(const T* x, int64_t rows, int64_t cols, int64_t ld, double* acc) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = x + r * ld;
    for (int64_t c = 0; c < cols; ++c) acc[c] *= static_cast<double>(row[c]);
  }
}
// NaN sticks: once acc[c] is NaN neither comparison replaces it.
template <typename T, bool kMax>
PIJIT_INLINE void ExtremumColsBody(const T* x, int64_t rows, int64_t cols, int64_t ld, T* acc) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = x + r * ld;
    for (int64_t c = 0; c < cols; ++c) {
      const T v = row[c], a = acc[c];
      acc[c] = ((kMax ? v > a : v < a) || v != v) ? v : a;
    }
  }
}

#if defined(__x86_64__)
#define PIJIT_COLS_FOR(ISA, ATTR)                                                            \
  template <typename T>                                                                      \
  ATTR void SumCols##ISA(const T* x, int64_t rows, int64_t cols, int64_t ld, double* acc) {  \
    SumColsBody(x, rows, cols, ld, acc);                                                     \
  }                                                                                          \
  template <typename T>                                                                      \
  ATTR void SsdCols##ISA(const T* x, int64_t rows, int64_t cols, int64_t ld,                 \
                         const double* mean, double* acc) {                                  \
    SsdColsBody(x, rows, cols, ld, mean, acc);                                               \
  }                                                                                          \
  template <typename T>                                                                      \
  ATTR void ProdCols##ISA(const T* x, int64_t rows, int64_t cols, int64_t ld, double* acc) { \
    ProdColsBody(x, rows, cols, ld, acc);                                                    \
  }                                                                                          \
  template <typename T, bool kMax>                                                           \
  ATTR void ExtremumCols##ISA(const T* x, int64_t rows, int64_t cols, int64_t ld, T* acc) {  \
    ExtremumColsBody<T, kMax>(x, rows, cols, ld, acc);                                       \
  }
PIJIT_COLS_FOR(Avx2, PIJIT_AVX2)
PIJIT_COLS_FOR(Avx512, PIJIT_AVX512)
#undef PIJIT_COLS_FOR

// Returns the call made for the active instruction set.
#define PIJIT_DISPATCH(avx512_call, avx2_call, scalar_call) \
  switch (ActiveIsa()) {                                    \
    case 3: return avx512_call;                             \
    case 2: return avx2_call;                               \
    default: return scalar_call;                            \
  }
#else
#define PIJIT_DISPATCH(avx512_call, avx2_call, scalar_call) return scalar_call;
#endif

template <bool kSsd, typename T>
double Lanes(const T* x, int64_t n, double mean) {
  PIJIT_DISPATCH((LanesAvx512<kSsd>(x, n, mean)), (LanesAvx2<kSsd>(x, n, mean)),
                 (LanesScalar<kSsd>(x, n, mean)))
}

// The pairwise sum (of squared deviations) of one chunk: runs of kPairBlock elements, each in
// the 16-lane order, combined by a tree whose halves are whole numbers of runs (the first
// rounded up).
template <bool kSsd, typename T>
double ChunkSum(const T* x, int64_t n, double mean) {
  if (n <= kPairBlock) return Lanes<kSsd>(x, n, mean);
  const int64_t half = (n / 2 + kPairBlock - 1) / kPairBlock * kPairBlock;
  return ChunkSum<kSsd>(x, half, mean) + ChunkSum<kSsd>(x + half, n - half, mean);
}

// Runs fn(c, start, len) for every chunk c of [0, n), on the pool when asked and n is large.
template <typename Fn>
void ForEachChunk(int64_t n, bool parallel, const Fn& fn) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  auto run = [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) fn(c, c * kChunk, std::min(kChunk, n - c * kChunk));
  };
  if (parallel && n >= kParallelMin) ParallelFor(chunks, 1, run);
  else run(0, chunks);
}

template <typename T, bool kMax>
T ExtremumChunks(int64_t n, bool parallel, absl::FunctionRef<T(int64_t, int64_t)> chunk) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  if (chunks <= 1) return chunk(0, n);
  absl::InlinedVector<T, 64> part(chunks);
  ForEachChunk(n, parallel, [&](int64_t c, int64_t b, int64_t len) { part[c] = chunk(b, len); });
  return kMax ? MaxLeaf(part.data(), chunks) : MinLeaf(part.data(), chunks);
}

// Per chunk the extremum and its first index (the second pass reads the chunk from cache),
// then the first chunk holding a NaN, or the first holding the best value.
template <typename T, bool kMax>
int64_t ArgExtremum(const T* x, int64_t n, bool parallel) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  absl::InlinedVector<std::pair<T, int64_t>, 64> part(chunks);
  auto run = [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      const T* p = x + c * kChunk;
      const int64_t len = std::min(kChunk, n - c * kChunk);
      const T m = kMax ? MaxLeaf(p, len) : MinLeaf(p, len);
      part[c] = {m, c * kChunk + FindFirst(p, len, m)};
    }
  };
  if (parallel && n >= kParallelMin) ParallelFor(chunks, 1, run);
  else run(0, chunks);
  std::pair<T, int64_t> best = part[0];
  for (int64_t c = 1; c < chunks && best.first == best.first; ++c) {
    const T v = part[c].first;
    if (v != v || (kMax ? v > best.first : v < best.first)) best = part[c];
  }
  return best.second;
}

}  // namespace

template <typename T>
int64_t ArgMax(const T* x, int64_t n, bool parallel) {
  return ArgExtremum<T, true>(x, n, parallel);
}
template <typename T>
int64_t ArgMin(const T* x, int64_t n, bool parallel) {
  return ArgExtremum<T, false>(x, n, parallel);
}

template <typename T>
double SumLeaf(const T* x, int64_t n) {
  return Lanes<false>(x, n, 0.0);
}
template <typename T>
double SsdLeaf(const T* x, int64_t n, double mean) {
  return Lanes<true>(x, n, mean);
}
// Products: sequential in double (rarely large; overflow and rounding follow the scalar order).
template <typename T>
double ProdLeaf(const T* x, int64_t n) {
  double acc = 1;
  for (int64_t i = 0; i < n; ++i) acc *= static_cast<double>(x[i]);
  return acc;
}
template <typename T>
int64_t FindFirst(const T* x, int64_t n, T v) {
  PIJIT_DISPATCH(FindFirstAvx512(x, n, v), FindFirstAvx2(x, n, v), FindFirstScalar(x, n, v))
}
template <typename T>
T MaxLeaf(const T* x, int64_t n) {
  PIJIT_DISPATCH((FirstEqual(x, n, ExtremumAvx512<T, true>(x, n))),
                 (FirstEqual(x, n, ExtremumAvx2<true>(x, n))),
                 (ExtremumScalar<T, true>(x, n)))
}
template <typename T>
T MinLeaf(const T* x, int64_t n) {
  PIJIT_DISPATCH((FirstEqual(x, n, ExtremumAvx512<T, false>(x, n))),
                 (FirstEqual(x, n, ExtremumAvx2<false>(x, n))),
                 (ExtremumScalar<T, false>(x, n)))
}

template <typename T>
double SumChunk(const T* x, int64_t n) {
  return ChunkSum<false>(x, n, 0.0);
}

double SumChunks(int64_t n, bool parallel, ChunkFn chunk) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  if (chunks <= 1) return chunk(0, n);
  absl::InlinedVector<double, 64> part(chunks);
  ForEachChunk(n, parallel, [&](int64_t c, int64_t b, int64_t len) { part[c] = chunk(b, len); });
  return Pairwise(part.data(), chunks);
}
template <typename T>
T MaxChunks(int64_t n, bool parallel, absl::FunctionRef<T(int64_t, int64_t)> chunk) {
  return ExtremumChunks<T, true>(n, parallel, chunk);
}
template <typename T>
T MinChunks(int64_t n, bool parallel, absl::FunctionRef<T(int64_t, int64_t)> chunk) {
  return ExtremumChunks<T, false>(n, parallel, chunk);
}

template <typename T>
double Sum(const T* x, int64_t n, bool parallel) {
  return SumChunks(n, parallel, [x](int64_t b, int64_t len) { return SumChunk(x + b, len); });
}
template <typename T>
double Ssd(const T* x, int64_t n, double mean, bool parallel) {
  return SumChunks(n, parallel,
                   [x, mean](int64_t b, int64_t len) { return ChunkSum<true>(x + b, len, mean); });
}
template <typename T>
double Prod(const T* x, int64_t n, bool) {
  return ProdLeaf(x, n);
}
// Chunked at every length, as the fused reductions are; keeping the first of equal values
// makes the grouping invisible in the result.
template <typename T>
T Max(const T* x, int64_t n, bool parallel) {
  return MaxChunks<T>(n, parallel, [x](int64_t b, int64_t len) { return MaxLeaf(x + b, len); });
}
template <typename T>
T Min(const T* x, int64_t n, bool parallel) {
  return MinChunks<T>(n, parallel, [x](int64_t b, int64_t len) { return MinLeaf(x + b, len); });
}

template <typename T>
void SumCols(const T* x, int64_t rows, int64_t cols, int64_t ld, double* acc) {
  PIJIT_DISPATCH(SumColsAvx512(x, rows, cols, ld, acc), SumColsAvx2(x, rows, cols, ld, acc),
                 SumColsBody(x, rows, cols, ld, acc))
}
template <typename T>
void SsdCols(const T* x, int64_t rows, int64_t cols, int64_t ld, const double* mean,
             double* acc) {
  PIJIT_DISPATCH(SsdColsAvx512(x, rows, cols, ld, mean, acc),
                 SsdColsAvx2(x, rows, cols, ld, mean, acc),
                 SsdColsBody(x, rows, cols, ld, mean, acc))
}
template <typename T>
void ProdCols(const T* x, int64_t rows, int64_t cols, int64_t ld, double* acc) {
  PIJIT_DISPATCH(ProdColsAvx512(x, rows, cols, ld, acc), ProdColsAvx2(x, rows, cols, ld, acc),
                 ProdColsBody(x, rows, cols, ld, acc))
}
template <typename T>
void MaxCols(const T* x, int64_t rows, int64_t cols, int64_t ld, T* acc) {
  PIJIT_DISPATCH((ExtremumColsAvx512<T, true>(x, rows, cols, ld, acc)),
                 (ExtremumColsAvx2<T, true>(x, rows, cols, ld, acc)),
                 (ExtremumColsBody<T, true>(x, rows, cols, ld, acc)))
}
template <typename T>
void MinCols(const T* x, int64_t rows, int64_t cols, int64_t ld, T* acc) {
  PIJIT_DISPATCH((ExtremumColsAvx512<T, false>(x, rows, cols, ld, acc)),
                 (ExtremumColsAvx2<T, false>(x, rows, cols, ld, acc)),
                 (ExtremumColsBody<T, false>(x, rows, cols, ld, acc)))
}

#define PIJIT_INSTANTIATE(T)                                                              \
  template double SumLeaf<T>(const T*, int64_t);                                          \
  template double SsdLeaf<T>(const T*, int64_t, double);                                  \
  template double ProdLeaf<T>(const T*, int64_t);                                         \
  template T MaxLeaf<T>(const T*, int64_t);                                               \
  template T MinLeaf<T>(const T*, int64_t);                                               \
  template int64_t FindFirst<T>(const T*, int64_t, T);                                    \
  template double SumChunk<T>(const T*, int64_t);                                         \
  template T MaxChunks<T>(int64_t, bool, absl::FunctionRef<T(int64_t, int64_t)>);         \
  template T MinChunks<T>(int64_t, bool, absl::FunctionRef<T(int64_t, int64_t)>);         \
  template int64_t ArgMax<T>(const T*, int64_t, bool);                                    \
  template int64_t ArgMin<T>(const T*, int64_t, bool);                                    \
  template double Sum<T>(const T*, int64_t, bool);                                        \
  template double Ssd<T>(const T*, int64_t, double, bool);                                \
  template double Prod<T>(const T*, int64_t, bool);                                       \
  template T Max<T>(const T*, int64_t, bool);                                             \
  template T Min<T>(const T*, int64_t, bool);                                             \
  template void SumCols<T>(const T*, int64_t, int64_t, int64_t, double*);                 \
  template void SsdCols<T>(const T*, int64_t, int64_t, int64_t, const double*, double*);  \
  template void ProdCols<T>(const T*, int64_t, int64_t, int64_t, double*);                \
  template void MaxCols<T>(const T*, int64_t, int64_t, int64_t, T*);                      \
  template void MinCols<T>(const T*, int64_t, int64_t, int64_t, T*);
PIJIT_INSTANTIATE(float)
PIJIT_INSTANTIATE(double)
#undef PIJIT_INSTANTIATE

}  // namespace pijit::rvec
