// The CUDA libraries pijit uses, loaded at run time: the driver (libcuda), NVRTC (kernels
// compiled from source at run time) and cuBLAS (matrix products).
//
// Nothing here links against CUDA: the extension imports on a machine with no GPU, no driver
// and no toolkit, and CudaApi::Get() then says why CUDA is unavailable. The driver's types
// come from the toolkit's cuda.h (a compile-time dependency only); NVRTC and cuBLAS are
// declared below from their documented C interfaces, whose headers are not installed with
// the driver toolkit's minimal packages.
//
// Libraries are looked up by soname in the loader's search path, then in PIJIT_CUDA_LIB_DIRS
// (colon-separated folders), then in /usr/local/cuda/lib64. All work runs on one stream of the
// device's primary context (CudaApi::stream), so kernels, copies and frees are ordered without
// events (kernels/cuda/allocator.h relies on it). It is a created stream, not the legacy
// default one, because only a created stream can be recorded into a CUDA graph
// (kernels/cuda/graph_capture.h); it is a blocking one, so work that other code queues on the
// legacy stream (a library sharing the primary context) stays ordered with it.
#pragma once
#include <cuda.h>

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace pijit::cuda {

// NVRTC's C interface (nvrtc.h): a program handle and a result code (0 is success).
using nvrtcProgram = struct _nvrtcProgram*;
using nvrtcResult = int;
// cuBLAS's C interface (cublas_api.h): a handle, a status (0 is success), an operation.
using cublasHandle_t = struct cublasContext*;
using cublasStatus_t = int;
enum cublasOperation_t : int { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };

struct CudaApi {
  // --- driver ---
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDriverGetVersion)(int*);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetName)(char*, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int*, CUdevice_attribute, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemGetInfo)(size_t*, size_t*);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t);
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t);
  CUresult (*cuMemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream);
  CUresult (*cuMemcpyDtoHAsync)(void*, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
  CUresult (*cuStreamCreate)(CUstream*, unsigned);
  CUresult (*cuStreamSynchronize)(CUstream);
  // CUDA graphs (kernels/cuda/graph_capture.h).
  CUresult (*cuStreamBeginCapture)(CUstream, CUstreamCaptureMode);
  CUresult (*cuStreamEndCapture)(CUstream, CUgraph*);
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec*, CUgraph, unsigned long long);
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
  CUresult (*cuGraphGetNodes)(CUgraph, CUgraphNode*, size_t*);
  CUresult (*cuGraphExecDestroy)(CUgraphExec);
  CUresult (*cuGraphDestroy)(CUgraph);
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void**, void**);
  CUresult (*cuEventCreate)(CUevent*, unsigned);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuGetErrorString)(CUresult, const char**);
  // --- NVRTC ---
  nvrtcResult (*nvrtcVersion)(int*, int*);
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram*, const char*, const char*, int,
                                    const char* const*, const char* const*);
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram, int, const char* const*);
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram, size_t*);
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram, char*);
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram, size_t*);
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram, char*);
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram*);
  const char* (*nvrtcGetErrorString)(nvrtcResult);
  // --- cuBLAS ---
  cublasStatus_t (*cublasCreate)(cublasHandle_t*);
  cublasStatus_t (*cublasSgemmStridedBatched)(cublasHandle_t, cublasOperation_t,
                                              cublasOperation_t, int, int, int, const float*,
                                              const float*, int, long long, const float*, int,
                                              long long, const float*, float*, int, long long,
                                              int);
  cublasStatus_t (*cublasDgemmStridedBatched)(cublasHandle_t, cublasOperation_t,
                                              cublasOperation_t, int, int, int, const double*,
                                              const double*, int, long long, const double*, int,
                                              long long, const double*, double*, int, long long,
                                              int);
  cublasStatus_t (*cublasSetStream)(cublasHandle_t, CUstream);
  // Optional (nullptr when absent): a workspace of pijit's, so that cuBLAS allocates nothing
  // of its own while a call is being recorded.
  cublasStatus_t (*cublasSetWorkspace)(cublasHandle_t, void*, size_t) = nullptr;

  // What Get() found: the device, its compute capability and the library versions.
  CUdevice device = 0;
  CUcontext context = nullptr;
  int cc_major = 0, cc_minor = 0;
  int driver_version = 0, nvrtc_major = 0, nvrtc_minor = 0;
  std::string device_name;
  cublasHandle_t blas = nullptr;
  CUstream stream = nullptr;  // every kernel, copy and library call of pijit's

  // Loads the libraries and opens device 0's primary context on first use (thread-safe),
  // making it current on the calling thread. Fails with FailedPrecondition naming what is
  // missing (no libcuda, no device, no NVRTC, ...); the result is kept for the process.
  static absl::StatusOr<const CudaApi*> Get();
};

// The first of `sonames` that dlopen opens, by the loader's search and then in
// PIJIT_CUDA_LIB_DIRS and /usr/local/cuda/lib64; nullptr, with what was tried in `tried`.
void* OpenCudaLibrary(const std::vector<const char*>& sonames, std::string* tried);

// Whether CUDA can be used here; the reason when it cannot (Get()'s error).
bool Available();
std::string UnavailableReason();

// Waits for everything queued on pijit's stream.
absl::Status Synchronize();

// A driver result as a status: "cuMemAlloc: out of memory (CUDA_ERROR_OUT_OF_MEMORY)".
absl::Status DriverStatus(const CudaApi& api, CUresult r, const char* what);

}  // namespace pijit::cuda
