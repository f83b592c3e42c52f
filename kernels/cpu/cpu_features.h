// The host CPU's vector instruction sets, probed once, and the choice of instruction-set
// level that each family of vector kernels makes from them.
//
// Levels: 1 the baseline (SSE2), 2 AVX2, 3 AVX-512. A family takes the highest level whose
// instructions its code uses (IsaNeeds): the elementwise loops' AVX-512 code uses the BW, DQ
// and VL extensions, the direct convolutions' AVX2 code uses FMA, the others need AVX512F or
// AVX2 alone. Tests force a family down to a lower level to compare its paths bit for bit.
#pragma once
#include <atomic>

namespace pijit::cpu {

struct HostFeatures {
  bool avx2 = false, fma = false;
  bool avx512f = false, avx512bw = false, avx512dq = false, avx512vl = false;
};
// Probed on first use.
const HostFeatures& Host();

// What a family's code needs beyond AVX2 and AVX512F.
struct IsaNeeds {
  bool fma_with_avx2 = false;  // its AVX2 code also uses FMA
  bool avx512_bw_dq_vl = false;  // its AVX-512 code also uses the BW, DQ and VL extensions
};
// The highest level the host meets the needs of.
int HostIsa(IsaNeeds needs);

// One family's level: the host's, unless a test forces a lower one.
class IsaChoice {
 public:
  explicit IsaChoice(IsaNeeds needs) : host_(HostIsa(needs)) {}
  // 0 chooses for the host; 1, 2 or 3 forces that level (a level the host lacks leaves the
  // host's choice).
  void Force(int isa) { forced_.store(isa, std::memory_order_relaxed); }
  int Active() const {
    const int f = forced_.load(std::memory_order_relaxed);
    return f >= 1 && f <= host_ ? f : host_;
  }
  int host() const { return host_; }

 private:
  const int host_;
  std::atomic<int> forced_{0};
};

}  // namespace pijit::cpu
