// The elementwise loops of isa_loops.h for AVX-512 and AVX2, and the choice between them.
// Compiled with -ffp-contract=off (no multiply-add contraction: an AVX-512 or AVX2+FMA loop
// must round as the baseline one does) and -fno-math-errno (sqrt sets no errno, so GCC can
// vectorise it; its values are unchanged).
#include "kernels/cpu/isa_loops.h"

#include <cmath>

#include "kernels/cpu/cpu_features.h"

namespace pijit::isa_loops {

#if defined(__x86_64__)
#pragma GCC push_options
// 512-bit vectors are what the AVX-512 loops are for: GCC's tuning for some AVX-512 CPUs
// prefers 256-bit ones.
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,prefer-vector-width=512")
#define PIJIT_IL_NS avx512
#include "kernels/cpu/isa_loops_impl.inc"
#undef PIJIT_IL_NS
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2")
#define PIJIT_IL_NS avx2
#include "kernels/cpu/isa_loops_impl.inc"
#undef PIJIT_IL_NS
#pragma GCC pop_options
#endif  // __x86_64__

namespace {
cpu::IsaChoice& Choice() {
  static cpu::IsaChoice choice(cpu::IsaNeeds{/*fma_with_avx2=*/false, /*avx512_bw_dq_vl=*/true});
  return choice;
}
}  // namespace

void ForceIsaForTesting(int isa) { Choice().Force(isa); }

int ActiveIsa() { return Choice().Active(); }

#if defined(__x86_64__)
#define PIJIT_IL_DISPATCH(fn)                   \
  switch (ActiveIsa()) {                        \
    case 3: return avx512::fn<T>(op);           \
    case 2: return avx2::fn<T>(op);             \
    default: return nullptr;                    \
  }
#else
#define PIJIT_IL_DISPATCH(fn) return nullptr;
#endif

template <typename T>
loops::BinaryRunFn<T, T> ArithmeticRun(BinaryOp op) {
  PIJIT_IL_DISPATCH(ArithmeticRun)
}
template <typename T>
loops::BinaryRunFn<T, bool> CompareRun(BinaryOp op) {
  PIJIT_IL_DISPATCH(CompareRun)
}
template <typename T>
loops::UnaryRunFn<T> UnaryRun(UnaryOp op) {
  PIJIT_IL_DISPATCH(UnaryRun)
}
#undef PIJIT_IL_DISPATCH

#define PIJIT_INSTANTIATE(T)                                        \
  template loops::BinaryRunFn<T, T> ArithmeticRun<T>(BinaryOp op);  \
  template loops::BinaryRunFn<T, bool> CompareRun<T>(BinaryOp op);  \
  template loops::UnaryRunFn<T> UnaryRun<T>(UnaryOp op);
PIJIT_INSTANTIATE(float)
PIJIT_INSTANTIATE(double)
#undef PIJIT_INSTANTIATE

}  // namespace pijit::isa_loops
