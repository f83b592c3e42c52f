// Kernels compiled from source at run time: NVRTC turns a rendered source
// (kernels/cuda/kernel_source.h) into machine code for the device's architecture, which the
// driver loads. Each source is compiled once per process (kept in memory, keyed by its text)
// and once per machine: the machine code is also written to
// $XDG_CACHE_HOME/pijit/cuda (else ~/.cache/pijit/cuda), keyed by a hash of the source, the
// architecture and NVRTC's version, so a new process loads it without compiling.
#pragma once
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "kernels/cuda/cuda_api.h"

namespace pijit::cuda {

// The function `entry` of the source `render` makes, compiled for the current device and
// looked up by `key` (which must determine the source): the source is rendered only the
// first time, so a call pays for a short key, not for rendering kilobytes of text. A render
// error, or NVRTC's log when compilation fails, is the error.
absl::StatusOr<CUfunction> CompiledFunction(const std::string& key,
                                            const std::function<absl::StatusOr<std::string>()>& render,
                                            const char* entry);

// NVRTC's options for this device ("--gpu-architecture=sm_90", "--fmad=false", ...).
std::string CompileOptionsText();

struct ModuleCacheStats {
  int compiled = 0;        // sources compiled by NVRTC in this process
  int loaded_from_disk = 0;
  int memory_hits = 0;
};
ModuleCacheStats GetModuleCacheStats();

}  // namespace pijit::cuda
