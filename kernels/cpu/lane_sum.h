// Sums of a row computed on the fly, vectorisable without -ffast-math, for the row kernels of
// the normalisation layers (norm_grad.cc, group_norm.cc), which inline them into copies
// compiled for AVX2 and for the baseline instruction set.
#pragma once
#include <algorithm>
#include <cstdint>

namespace pijit::lanes {

// Partial sums per lane, so that the compiler vectorises the loops without reordering any
// single lane's additions (no -ffast-math needed); each block's lanes are added up in double,
// so long rows lose no more precision than a block of kBlock elements does.
constexpr int kLanes = 16;
constexpr int64_t kBlock = 512;

// Σ over [0, n) of f(i) in T lanes per block, blocks combined in double.
template <typename T, typename F>
__attribute__((always_inline)) inline double LaneSum(int64_t n, F f) {
  double total = 0;
  for (int64_t b0 = 0; b0 < n; b0 += kBlock) {
    const int64_t len = std::min(kBlock, n - b0), body = len - len % kLanes;
    T acc[kLanes] = {};
    for (int64_t i = 0; i < body; i += kLanes)
      for (int l = 0; l < kLanes; ++l) acc[l] += f(b0 + i + l);
    double part = 0;
    for (int64_t i = body; i < len; ++i) part += f(b0 + i);
    for (int l = 0; l < kLanes; ++l) part += acc[l];
    total += part;
  }
  return total;
}

}  // namespace pijit::lanes
