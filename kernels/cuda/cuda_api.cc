// Run-time loading of the CUDA driver, NVRTC and cuBLAS (kernels/cuda/cuda_api.h).
#include "kernels/cuda/cuda_api.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "kernels/errors.h"
#include "kernels/flags.h"

namespace pijit::cuda {
namespace {

std::vector<std::string> SearchFolders() {
  std::vector<std::string> dirs;
  const std::string listed(flags::CudaLibDirs());
  for (absl::string_view d : absl::StrSplit(listed, ':', absl::SkipEmpty())) {
    dirs.emplace_back(d);
  }
  dirs.emplace_back("/usr/local/cuda/lib64");
  return dirs;
}

template <typename Fn>
absl::Status Bind(void* lib, const char* symbol, Fn* slot) {
  *slot = reinterpret_cast<Fn>(dlsym(lib, symbol));
  if (*slot == nullptr) {
    return absl::FailedPreconditionError(absl::StrFormat("CUDA: symbol %s not found", symbol));
  }
  return absl::OkStatus();
}

#define PIJIT_BIND(lib, field, symbol) \
  if (absl::Status s = Bind(lib, symbol, &api->field); !s.ok()) return s

absl::Status BindDriver(void* lib, CudaApi* api) {
  PIJIT_BIND(lib, cuInit, "cuInit");
  PIJIT_BIND(lib, cuDriverGetVersion, "cuDriverGetVersion");
  PIJIT_BIND(lib, cuDeviceGetCount, "cuDeviceGetCount");
  PIJIT_BIND(lib, cuDeviceGet, "cuDeviceGet");
  PIJIT_BIND(lib, cuDeviceGetName, "cuDeviceGetName");
  PIJIT_BIND(lib, cuDeviceGetAttribute, "cuDeviceGetAttribute");
  PIJIT_BIND(lib, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  PIJIT_BIND(lib, cuCtxSetCurrent, "cuCtxSetCurrent");
  PIJIT_BIND(lib, cuCtxSynchronize, "cuCtxSynchronize");
  // The unsuffixed names of these are the 32-bit-size entry points kept for old binaries.
  PIJIT_BIND(lib, cuMemAlloc, "cuMemAlloc_v2");
  PIJIT_BIND(lib, cuMemFree, "cuMemFree_v2");
  PIJIT_BIND(lib, cuMemGetInfo, "cuMemGetInfo_v2");
  PIJIT_BIND(lib, cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  PIJIT_BIND(lib, cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  PIJIT_BIND(lib, cuMemcpyDtoD, "cuMemcpyDtoD_v2");
  PIJIT_BIND(lib, cuMemsetD8, "cuMemsetD8_v2");
  PIJIT_BIND(lib, cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  PIJIT_BIND(lib, cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  PIJIT_BIND(lib, cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
  PIJIT_BIND(lib, cuMemsetD8Async, "cuMemsetD8Async");
  PIJIT_BIND(lib, cuStreamCreate, "cuStreamCreate");
  PIJIT_BIND(lib, cuStreamSynchronize, "cuStreamSynchronize");
  PIJIT_BIND(lib, cuStreamBeginCapture, "cuStreamBeginCapture_v2");
  PIJIT_BIND(lib, cuStreamEndCapture, "cuStreamEndCapture");
  PIJIT_BIND(lib, cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
  PIJIT_BIND(lib, cuGraphLaunch, "cuGraphLaunch");
  PIJIT_BIND(lib, cuGraphGetNodes, "cuGraphGetNodes");
  PIJIT_BIND(lib, cuGraphExecDestroy, "cuGraphExecDestroy");
  PIJIT_BIND(lib, cuGraphDestroy, "cuGraphDestroy");
  PIJIT_BIND(lib, cuModuleLoadData, "cuModuleLoadData");
  PIJIT_BIND(lib, cuModuleGetFunction, "cuModuleGetFunction");
  PIJIT_BIND(lib, cuLaunchKernel, "cuLaunchKernel");
  PIJIT_BIND(lib, cuEventCreate, "cuEventCreate");
  PIJIT_BIND(lib, cuEventRecord, "cuEventRecord");
  PIJIT_BIND(lib, cuEventSynchronize, "cuEventSynchronize");
  // CUDA 12.8 added a _v2 of this one; older drivers have the first only.
  if (!Bind(lib, "cuEventElapsedTime_v2", &api->cuEventElapsedTime).ok()) {
    PIJIT_BIND(lib, cuEventElapsedTime, "cuEventElapsedTime");
  }
  PIJIT_BIND(lib, cuEventDestroy, "cuEventDestroy_v2");
  PIJIT_BIND(lib, cuGetErrorString, "cuGetErrorString");
  return absl::OkStatus();
}

absl::Status BindNvrtc(void* lib, CudaApi* api) {
  PIJIT_BIND(lib, nvrtcVersion, "nvrtcVersion");
  PIJIT_BIND(lib, nvrtcCreateProgram, "nvrtcCreateProgram");
  PIJIT_BIND(lib, nvrtcCompileProgram, "nvrtcCompileProgram");
  PIJIT_BIND(lib, nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize");
  PIJIT_BIND(lib, nvrtcGetProgramLog, "nvrtcGetProgramLog");
  PIJIT_BIND(lib, nvrtcGetCUBINSize, "nvrtcGetCUBINSize");
  PIJIT_BIND(lib, nvrtcGetCUBIN, "nvrtcGetCUBIN");
  PIJIT_BIND(lib, nvrtcDestroyProgram, "nvrtcDestroyProgram");
  PIJIT_BIND(lib, nvrtcGetErrorString, "nvrtcGetErrorString");
  return absl::OkStatus();
}

absl::Status BindBlas(void* lib, CudaApi* api) {
  PIJIT_BIND(lib, cublasCreate, "cublasCreate_v2");
  PIJIT_BIND(lib, cublasSgemmStridedBatched, "cublasSgemmStridedBatched");
  PIJIT_BIND(lib, cublasDgemmStridedBatched, "cublasDgemmStridedBatched");
  PIJIT_BIND(lib, cublasSetStream, "cublasSetStream_v2");
  Bind(lib, "cublasSetWorkspace_v2", &api->cublasSetWorkspace).IgnoreError();  // optional
  return absl::OkStatus();
}
#undef PIJIT_BIND

absl::Status Unavailable(const std::string& why) {
  return absl::FailedPreconditionError("CUDA is not available: " + why);
}

// Opens the three libraries, binds them and opens device 0.
absl::Status Load(CudaApi* api) {
  std::string tried;
  void* driver = OpenCudaLibrary({"libcuda.so.1", "libcuda.so"}, &tried);
  if (!driver) return Unavailable("no CUDA driver (" + tried + ")");
  if (absl::Status s = BindDriver(driver, api); !s.ok()) return Unavailable(std::string(s.message()));
  if (CUresult r = api->cuInit(0); r != CUDA_SUCCESS) {
    return Unavailable(std::string(DriverStatus(*api, r, "cuInit").message()));
  }
  api->cuDriverGetVersion(&api->driver_version);
  int count = 0;
  if (api->cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
    return Unavailable("the driver found no GPU");
  }
  if (CUresult r = api->cuDeviceGet(&api->device, 0); r != CUDA_SUCCESS) {
    return Unavailable(std::string(DriverStatus(*api, r, "cuDeviceGet").message()));
  }
  char name[256] = {0};
  api->cuDeviceGetName(name, sizeof(name) - 1, api->device);
  api->device_name = name;
  api->cuDeviceGetAttribute(&api->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, api->device);
  api->cuDeviceGetAttribute(&api->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, api->device);
  if (CUresult r = api->cuDevicePrimaryCtxRetain(&api->context, api->device); r != CUDA_SUCCESS) {
    return Unavailable(std::string(DriverStatus(*api, r, "cuDevicePrimaryCtxRetain").message()));
  }
  api->cuCtxSetCurrent(api->context);
  if (CUresult r = api->cuStreamCreate(&api->stream, CU_STREAM_DEFAULT); r != CUDA_SUCCESS) {
    return Unavailable(std::string(DriverStatus(*api, r, "cuStreamCreate").message()));
  }

  void* nvrtc = OpenCudaLibrary({"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}, &tried);
  if (!nvrtc) return Unavailable("no NVRTC (" + tried + ")");
  if (absl::Status s = BindNvrtc(nvrtc, api); !s.ok()) return Unavailable(std::string(s.message()));
  api->nvrtcVersion(&api->nvrtc_major, &api->nvrtc_minor);

  void* blas = OpenCudaLibrary({"libcublas.so.13", "libcublas.so.12", "libcublas.so"}, &tried);
  if (!blas) return Unavailable("no cuBLAS (" + tried + ")");
  if (absl::Status s = BindBlas(blas, api); !s.ok()) return Unavailable(std::string(s.message()));
  if (api->cublasCreate(&api->blas) != 0) return Unavailable("cublasCreate failed");
  if (api->cublasSetStream(api->blas, api->stream) != 0) return Unavailable("cublasSetStream failed");
  // The libraries stay loaded for the process: their handles are never closed.
  return absl::OkStatus();
}

}  // namespace

// The first of `sonames` that opens, by the loader's own search first, then in the folders.
void* OpenCudaLibrary(const std::vector<const char*>& sonames, std::string* tried) {
  for (const char* name : sonames) {
    if (void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return h;
  }
  for (const std::string& dir : SearchFolders()) {
    for (const char* name : sonames) {
      const std::string path = dir + "/" + name;
      if (void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
    }
  }
  *tried = absl::StrFormat("%s (searched the loader's path, PIJIT_CUDA_LIB_DIRS and "
                           "/usr/local/cuda/lib64)", sonames.front());
  return nullptr;
}

absl::Status DriverStatus(const CudaApi& api, CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return absl::OkStatus();
  const char* text = nullptr;
  if (api.cuGetErrorString) api.cuGetErrorString(r, &text);
  const std::string message =
      absl::StrFormat("%s: %s (CUDA error %d)", what, text ? text : "unknown error", static_cast<int>(r));
  if (r == CUDA_ERROR_OUT_OF_MEMORY) return absl::ResourceExhaustedError(message);
  return absl::InternalError(message);
}

absl::StatusOr<const CudaApi*> CudaApi::Get() {
  static CudaApi* api = nullptr;
  static absl::Status status;
  static std::once_flag once;
  std::call_once(once, [] {
    auto* loaded = new CudaApi();  // lives for the process, as the libraries do
    status = Load(loaded);
    if (status.ok()) {
      api = loaded;
    } else {
      delete loaded;
    }
  });
  if (!status.ok()) return status;
  // The primary context is per device, current per thread: make it current here.
  thread_local bool current = false;
  if (!current) {
    api->cuCtxSetCurrent(api->context);
    current = true;
  }
  return api;
}

absl::Status Synchronize() {
  PIJIT_ASSIGN_OR_RETURN(const CudaApi* api, CudaApi::Get());
  return DriverStatus(*api, api->cuStreamSynchronize(api->stream), "cuStreamSynchronize");
}

bool Available() { return CudaApi::Get().ok(); }

std::string UnavailableReason() {
  auto api = CudaApi::Get();
  return api.ok() ? std::string() : std::string(api.status().message());
}

}  // namespace pijit::cuda
