// float32 row kernels with AVX-512 (kernels/cpu/rows_avx512.cc), chosen at run time by
// softmax.cc and norm.cc. Each row is read from memory once (the next row is prefetched
// while the current one is computed, from cache) and, when asked, results are written with
// streamed stores.
//
// Softmax: the maximum (NaN if any element is NaN; -inf becomes 0, as the other paths do),
// exp(x - max) by a degree-7 polynomial with fused multiply-adds and _mm512_scalef (within
// kFusedExpRelTol<float> of std::exp, subnormal results included), their sum (float32 within
// blocks of 256 elements, double across blocks), then the scaled exponentials (softmax) or
// x - max - log(sum) (log_softmax).
//
// Layer norm: mean, then the mean of squared deviations from it (sums as softmax's), then
// y = (x - mean) * (1 / sqrt(var + eps)) [* gamma] [+ beta].
#pragma once
#include <cstdint>

namespace pijit::avx512 {

// The CPU has AVX-512F (and the tests have not turned the vector paths off).
bool Available();

// `rows` rows of `n` contiguous floats from x to y (y may not alias x). `stream`: write y with
// non-temporal stores (results that will not stay in cache anyway).
void SoftmaxRows(bool log, const float* x, float* y, int64_t rows, int64_t n, bool stream);

// `rows` rows of `n` floats from x to y; gamma and beta (n floats) may be null.
void LayerNormRows(const float* x, float* y, const float* gamma, const float* beta, int64_t rows,
                   int64_t n, double eps, bool stream);

}  // namespace pijit::avx512
