// Every PIJIT_* environment variable the runtime reads, in one place. Each reader says when
// it reads: once per process (cached on first use), or on every call where tests switch the
// variable between compiles.
//
//   PIJIT_LOG=a,b          debug output: graph_breaks, recompiles, guards, graph, bytecode, grad, all
//   PIJIT_PROFILE=1        time per kind of graph node, printed at exit
//   PIJIT_MEMORY_PLAN=0    compile graphs without a memory plan (per compile)
//   PIJIT_FUSED_BACKEND=x  interpreter | avx2 | (auto) for fused elementwise code (per compile)
//   PIJIT_BUFFER_CACHE_MB  bytes of released large buffers kept for reuse
//   PIJIT_NUM_THREADS      worker threads of the kernel thread pool (with the caller's)
//   PIJIT_BACKEND=x        cpu | reference | cuda: what compiled graphs run on (graph/backend.h; per compile)
//   PIJIT_CUDNN=0          the CUDA backend's convolutions use its own kernels, not cuDNN (per call)
//   PIJIT_CUDA_LIB_DIRS    folders to look for libcuda, NVRTC, cuBLAS and cuDNN in (read once)
//   PIJIT_COMM_OVERLAP=0   compiled graphs start all-reduces where they were captured, not where
//                          their inputs are ready (graph/passes/collective_schedule.h; per compile)
//   PIJIT_COMM_TIMEOUT     seconds a collective waits for the other ranks (kernels/comm; read at init)
#pragma once
#include <cstddef>
#include <optional>
#include <string_view>

namespace pijit::flags {

// PIJIT_LOG lists `what` (or "all"). Read once.
bool LogEnabled(std::string_view what);
// PIJIT_PROFILE is set. Read once.
bool ProfileNodes();
// PIJIT_MEMORY_PLAN is not "0". Read per call.
bool MemoryPlanning();
// PIJIT_CUDNN_FIND is not "0": cuDNN's algorithms are chosen by timing them (kernels/cuda/cudnn.cc).
bool CudnnFind();
// PIJIT_COMM_TIMEOUT when it is a number > 0. Read per call (init reads it once).
std::optional<double> CommTimeout();
// PIJIT_COMM_OVERLAP is not "0". Read per compile.
bool CommOverlap();
// PIJIT_CUDA_GRAPHS is not "0" (graph/device_replay.h). Read per compile.
bool CudaGraphs();
// PIJIT_FUSED_BACKEND, or "" when unset. Read per call.
std::string_view FusedBackend();
// PIJIT_BACKEND, or "" when unset. Read per call.
std::string_view Backend();
// PIJIT_CUDNN is not "0". Read per call.
bool UseCudnn();
// PIJIT_BUFFER_CACHE_MB in bytes, when set. Read per call (the cache reads it once).
std::optional<size_t> BufferCacheBytes();
// PIJIT_CUDA_LIB_DIRS, or "" when unset. Read per call (the loader reads it once).
std::string_view CudaLibDirs();
// PIJIT_NUM_THREADS when it is a number >= 1. Read per call (the pool reads it once).
std::optional<int> NumThreads();

}  // namespace pijit::flags
