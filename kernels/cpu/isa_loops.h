// The hot float32/float64 elementwise loops compiled for AVX-512 and AVX2 and chosen at run
// time. The eager kernels (elementwise.cc, unary.cc) pass them to the loop skeletons of
// loops.h, which run them over every stretch where each operand is contiguous or a single
// value; everything else, and every loop on a CPU without AVX2, runs the skeletons' own loops,
// compiled for the baseline instruction set (SSE2).
//
// A vector loop performs the same IEEE operation per element as the baseline loop (no
// reassociation; isa_loops.cc is compiled with -ffp-contract=off, so no multiply-add
// contraction either), so results are bit-identical whichever instruction set runs.
#pragma once
#include <cstdint>

#include "kernels/cpu/loops.h"
#include "kernels/ops.h"

namespace pijit::isa_loops {

// Results with fewer elements than this take the baseline loops: for them choosing a loop
// costs more than the vector loop saves (the results are the same either way).
inline constexpr int64_t kMinElements = 32;

// The loop of `op` on T (float or double) for the active instruction set, or null when there
// is none (another op, the baseline instruction set).
// add, sub, mul, div, maximum, minimum:
template <typename T> loops::BinaryRunFn<T, T> ArithmeticRun(BinaryOp op);
// equal, not_equal, less, less_equal, greater, greater_equal:
template <typename T> loops::BinaryRunFn<T, bool> CompareRun(BinaryOp op);
// neg, abs, relu, sqrt, square, sign:
template <typename T> loops::UnaryRunFn<T> UnaryRun(UnaryOp op);

// The instruction set the loops run with now: 1 the baseline (no vector loops here), 2 AVX2,
// 3 AVX-512 (AVX512F with the BW, DQ and VL extensions).
int ActiveIsa();
// Tests: 0 chooses for the host; 1 forces the baseline loops, 2 AVX2, 3 AVX-512 (a set the
// host lacks leaves the host's choice).
void ForceIsaForTesting(int isa);

}  // namespace pijit::isa_loops
