// Code generation of fused elementwise kernels with asmjit (x86::Compiler), AVX2.
#include "kernels/fused.h"

namespace pijit {
bool HostHasAvx2() { return false; }
absl::StatusOr<FusedKernel::Fn> GenerateFusedX86(const FusedProgram&, uint64_t) {
  return absl::UnimplementedError("fused: no code generator");
}
void ReleaseFusedCode(FusedKernel::Fn) {}
}  // namespace pijit
