// AVX-512 softmax and layer norm rows (see rows_avx512.h). Functions carry target attributes
// so that the rest of the project keeps its baseline ISA; Available() gates every call.
#include "kernels/cpu/rows_avx512.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/reduce_vec.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define PIJIT_AVX512 __attribute__((target("avx512f,fma")))
#endif

namespace pijit::avx512 {

bool Available() {
#if defined(__x86_64__)
  // The reductions' choice, which tests can force down to AVX2 or the scalar paths.
  return rvec::ActiveIsa() >= 3;
#else
  return false;
#endif
}

#if defined(__x86_64__)
namespace {

// exp(x): n = round(x log2 e), r = x - n ln2 (ln2 in two parts), exp(r) by its Taylor
// polynomial of degree 7 on |r| <= ln2/2, times 2^n by scalef (exact scaling, so subnormal
// and overflowing results are right). x is clamped to [-104, 88.8] first; NaN stays NaN
// (min/max return their second operand when either is NaN).
PIJIT_AVX512 inline __m512 Exp(__m512 x) {
  x = _mm512_min_ps(_mm512_set1_ps(88.8f), x);
  x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.f / 5040);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 720));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 120));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f));
  return _mm512_scalef_ps(p, n);
}

inline __mmask16 TailMask(int64_t left) {
  return left >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << left) - 1);
}

// max over the row, NaN if any element is NaN.
PIJIT_AVX512 float RowMax(const float* x, int64_t n) {
  const __m512 ninf = _mm512_set1_ps(-INFINITY);
  __m512 m0 = ninf, m1 = ninf;
  __mmask16 nan = 0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + i + 16);
    nan |= _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q);
    m0 = _mm512_max_ps(m0, a);
    m1 = _mm512_max_ps(m1, b);
  }
  for (; i < n; i += 16) {
    const __mmask16 k = TailMask(n - i);
    const __m512 a = _mm512_mask_loadu_ps(ninf, k, x + i);
    nan |= _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q);
    m0 = _mm512_max_ps(m0, a);
  }
  if (nan) return NAN;
  return _mm512_reduce_max_ps(_mm512_max_ps(m0, m1));
}

// e[i] = exp(x[i] - mx) (when e is not null); returns the sum of the exponentials, while
// prefetching `next` (the next row, or null) so that its reads overlap this row's arithmetic.
// Lanes sum
// in float32 over blocks of 256 elements (16 per lane, each term at most 1), the blocks'
// sums are added in double.
PIJIT_AVX512 inline void AddWide(__m512 z, __m512d* s) {
  *s = _mm512_add_pd(*s, _mm512_cvtps_pd(_mm512_castps512_ps256(z)));
  *s = _mm512_add_pd(
      *s, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(z), 1))));
}
PIJIT_AVX512 double ExpSum(const float* x, float mx, float* e, int64_t n, const float* next) {
  const __m512 shift = _mm512_set1_ps(mx);
  __m512d total = _mm512_setzero_pd();
  int64_t i = 0;
  while (i + 32 <= n) {
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    const int64_t end = std::min(n, i + 256) - 31;
    for (; i < end; i += 32) {
      if (next) {
        _mm_prefetch(reinterpret_cast<const char*>(next + i), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(next + i + 16), _MM_HINT_T0);
      }
      const __m512 z0 = Exp(_mm512_sub_ps(_mm512_loadu_ps(x + i), shift));
      const __m512 z1 = Exp(_mm512_sub_ps(_mm512_loadu_ps(x + i + 16), shift));
      if (e) {
        _mm512_storeu_ps(e + i, z0);
        _mm512_storeu_ps(e + i + 16, z1);
      }
      a0 = _mm512_add_ps(a0, z0);
      a1 = _mm512_add_ps(a1, z1);
    }
    AddWide(_mm512_add_ps(a0, a1), &total);
  }
  for (; i < n; i += 16) {
    const __mmask16 k = TailMask(n - i);
    const __m512 v = _mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), shift);
    const __m512 z = _mm512_maskz_mov_ps(k, Exp(v));
    if (e) _mm512_mask_storeu_ps(e + i, k, z);
    AddWide(z, &total);
  }
  return _mm512_reduce_add_pd(total);
}

// y[i] = e[i] * s (softmax) or y[i] = (x[i] - mx) - s (log_softmax: e is x, s its log-sum).
template <bool kLog, bool kStream>
PIJIT_AVX512 void FinishRow(const float* e, float mx, float s, float* y, int64_t n) {
  const __m512 sv = _mm512_set1_ps(s), shift = _mm512_set1_ps(mx);
  auto value = [&](__m512 v) PIJIT_AVX512 {
    return kLog ? _mm512_sub_ps(_mm512_sub_ps(v, shift), sv) : _mm512_mul_ps(v, sv);
  };
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    if (kStream) _mm512_stream_ps(y + i, value(_mm512_loadu_ps(e + i)));
    else _mm512_storeu_ps(y + i, value(_mm512_loadu_ps(e + i)));
  }
  if (i < n) {
    const __mmask16 k = TailMask(n - i);
    _mm512_mask_storeu_ps(y + i, k, value(_mm512_maskz_loadu_ps(k, e + i)));
  }
}
PIJIT_AVX512 void Finish(bool log, const float* e, float mx, float s, float* y, int64_t n,
                         bool stream) {
  stream = stream && reinterpret_cast<uintptr_t>(y) % 64 == 0;  // _mm512_stream_ps aligns
  if (log) stream ? FinishRow<true, true>(e, mx, s, y, n) : FinishRow<true, false>(e, mx, s, y, n);
  else stream ? FinishRow<false, true>(e, mx, s, y, n) : FinishRow<false, false>(e, mx, s, y, n);
}

// Sum of x[i] (mean == nullptr) or of (x[i] - *mean)^2, float32 within blocks of 256
// elements, double across blocks; prefetches `next` as ExpSum does.
template <bool kSquares>
PIJIT_AVX512 double RowSum(const float* x, int64_t n, float mean, const float* next) {
  const __m512 mv = _mm512_set1_ps(mean);
  auto term = [&](__m512 v) PIJIT_AVX512 {
    if (!kSquares) return v;
    const __m512 d = _mm512_sub_ps(v, mv);
    return _mm512_mul_ps(d, d);
  };
  __m512d total = _mm512_setzero_pd();
  int64_t i = 0;
  while (i + 32 <= n) {
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    const int64_t end = std::min(n, i + 256) - 31;
    for (; i < end; i += 32) {
      if (next) {
        _mm_prefetch(reinterpret_cast<const char*>(next + i), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(next + i + 16), _MM_HINT_T0);
      }
      a0 = _mm512_add_ps(a0, term(_mm512_loadu_ps(x + i)));
      a1 = _mm512_add_ps(a1, term(_mm512_loadu_ps(x + i + 16)));
    }
    AddWide(_mm512_add_ps(a0, a1), &total);
  }
  for (; i < n; i += 16) {
    const __mmask16 k = TailMask(n - i);
    AddWide(_mm512_maskz_mov_ps(k, term(_mm512_maskz_loadu_ps(k, x + i))), &total);
  }
  return _mm512_reduce_add_pd(total);
}

template <bool kGamma, bool kBeta, bool kStream>
PIJIT_AVX512 void NormalizeRow(const float* x, float* y, const float* gamma, const float* beta,
                               int64_t n, float mean, float inv) {
  const __m512 mv = _mm512_set1_ps(mean), iv = _mm512_set1_ps(inv);
  auto value = [&](__m512 v, int64_t i, __mmask16 k) PIJIT_AVX512 {
    __m512 t = _mm512_mul_ps(_mm512_sub_ps(v, mv), iv);
    if (kGamma) t = _mm512_mul_ps(t, _mm512_maskz_loadu_ps(k, gamma + i));
    if (kBeta) t = _mm512_add_ps(t, _mm512_maskz_loadu_ps(k, beta + i));
    return t;
  };
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 t = value(_mm512_loadu_ps(x + i), i, 0xFFFF);
    if (kStream) _mm512_stream_ps(y + i, t);
    else _mm512_storeu_ps(y + i, t);
  }
  if (i < n) {
    const __mmask16 k = TailMask(n - i);
    _mm512_mask_storeu_ps(y + i, k, value(_mm512_maskz_loadu_ps(k, x + i), i, k));
  }
}

template <bool kGamma, bool kBeta>
PIJIT_AVX512 void NormalizeRowAs(bool stream, const float* x, float* y, const float* gamma,
                                 const float* beta, int64_t n, float mean, float inv) {
  if (stream && reinterpret_cast<uintptr_t>(y) % 64 == 0) {
    NormalizeRow<kGamma, kBeta, true>(x, y, gamma, beta, n, mean, inv);
  } else {
    NormalizeRow<kGamma, kBeta, false>(x, y, gamma, beta, n, mean, inv);
  }
}

}  // namespace

void LayerNormRows(const float* x, float* y, const float* gamma, const float* beta, int64_t rows,
                   int64_t n, double eps, bool stream) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x + r * n;
    float* out = y + r * n;
    const double mean = RowSum<false>(in, n, 0.f, r + 1 < rows ? in + n : nullptr) / n;
    const float mu = static_cast<float>(mean);
    const double var = RowSum<true>(in, n, mu, nullptr) / n;
    const float inv = static_cast<float>(1.0 / std::sqrt(var + eps));
    if (gamma && beta) NormalizeRowAs<true, true>(stream, in, out, gamma, beta, n, mu, inv);
    else if (gamma) NormalizeRowAs<true, false>(stream, in, out, gamma, beta, n, mu, inv);
    else if (beta) NormalizeRowAs<false, true>(stream, in, out, gamma, beta, n, mu, inv);
    else NormalizeRowAs<false, false>(stream, in, out, gamma, beta, n, mu, inv);
  }
  if (stream) _mm_sfence();
}

void SoftmaxRows(bool log, const float* x, float* y, int64_t rows, int64_t n, bool stream) {
  // The exponentials of one row stay in cache in a per-thread buffer until they are scaled
  // into y; rows longer than the buffer keep them in y itself (scaled in place).
  constexpr int64_t kBufferFloats = int64_t{1} << 16;
  static thread_local std::vector<float> buffer;
  const bool buffered = !log && n <= kBufferFloats;
  if (buffered && static_cast<int64_t>(buffer.size()) < n) buffer.resize(n);
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x + r * n;
    float mx = RowMax(in, n);
    // All -inf (or a +inf maximum): shift by 0 so that exp gives 0 (-inf) or NaN (+inf).
    if (std::isinf(mx) && mx < 0) mx = 0.f;
    float* e = log ? nullptr : buffered ? buffer.data() : y + r * n;
    const double sum = ExpSum(in, mx, e, n, r + 1 < rows ? in + n : nullptr);
    if (log) Finish(true, in, mx, static_cast<float>(std::log(sum)), y + r * n, n, stream);
    else Finish(false, e, mx, static_cast<float>(1.0 / sum), y + r * n, n, stream);
  }
  if (stream) _mm_sfence();  // streamed stores are visible before the caller reads y
}

#else
void SoftmaxRows(bool, const float*, float*, int64_t, int64_t, bool) {}
void LayerNormRows(const float*, float*, const float*, const float*, int64_t, int64_t, double,
                   bool) {}
#endif

}  // namespace pijit::avx512
