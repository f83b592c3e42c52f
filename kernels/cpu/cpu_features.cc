#include "kernels/cpu/cpu_features.h"

namespace pijit::cpu {

const HostFeatures& Host() {
  static const HostFeatures features = [] {
    HostFeatures f;
#if defined(__x86_64__)
    f.avx2 = __builtin_cpu_supports("avx2");
    f.fma = __builtin_cpu_supports("fma");
    f.avx512f = __builtin_cpu_supports("avx512f");
    f.avx512bw = __builtin_cpu_supports("avx512bw");
    f.avx512dq = __builtin_cpu_supports("avx512dq");
    f.avx512vl = __builtin_cpu_supports("avx512vl");
#endif
    return f;
  }();
  return features;
}

int HostIsa(IsaNeeds needs) {
  const HostFeatures& h = Host();
  if (h.avx512f && (!needs.avx512_bw_dq_vl || (h.avx512bw && h.avx512dq && h.avx512vl))) return 3;
  if (h.avx2 && (!needs.fma_with_avx2 || h.fma)) return 2;
  return 1;
}

}  // namespace pijit::cpu
