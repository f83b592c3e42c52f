// The x86 code generator of fused elementwise programs (asmjit) and the host's vector ISA
// (fused_x86.cc): CPU-backend details, kept out of the device-neutral kernels/fused.h.
#pragma once
#include "kernels/fused.h"

namespace pijit {

bool HostHasAvx2();
bool HostHasAvx512();  // AVX512F, the only AVX-512 subset the generated code uses
// Generates the kernel for `program` and `stride_mask` (AVX-512 when `avx512`, else AVX2);
// release with ReleaseFusedCode. Both compute the same per-element operations, so results
// are identical.
absl::StatusOr<FusedKernel::Fn> GenerateFusedX86(const FusedProgram& program,
                                                 uint64_t stride_mask, bool avx512);
void ReleaseFusedCode(FusedKernel::Fn fn);

}  // namespace pijit
