// pijit.cuda's native part: whether the CUDA backend is built and usable, and which backend
// graphs compile for by default (pijit.set_context(device_target=...)).
#include <pybind11/pybind11.h>

#include <string>

#include "graph/backend.h"
#include "pijit/csrc/module.h"
#ifdef PIJIT_WITH_CUDA
#include "kernels/cuda/allocator.h"
#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/module_cache.h"
#endif

namespace py = pybind11;

namespace pijit {

void BindCuda(py::module_& m) {
  m.def("_cuda_info", [] {
    py::dict info;
#ifdef PIJIT_WITH_CUDA
    info["built"] = true;
    auto api = cuda::CudaApi::Get();
    info["available"] = api.ok();
    info["reason"] = api.ok() ? std::string() : std::string(api.status().message());
    if (api.ok()) {
      const cuda::CudaApi& a = **api;
      info["device_name"] = a.device_name;
      info["capability"] = py::make_tuple(a.cc_major, a.cc_minor);
      info["driver_version"] = a.driver_version;
      info["nvrtc_version"] = py::make_tuple(a.nvrtc_major, a.nvrtc_minor);
      const cuda::ModuleCacheStats s = cuda::GetModuleCacheStats();
      info["kernels_compiled"] = s.compiled;
      info["kernels_from_disk"] = s.loaded_from_disk;
      if (auto alloc = cuda::DeviceAllocator(); alloc.ok()) {
        const cuda::AllocatorStats st = (*alloc)->stats();
        info["bytes_in_use"] = st.bytes_in_use;
        info["bytes_cached"] = st.bytes_cached;
      }
    }
#else
    info["built"] = false;
    info["available"] = false;
    info["reason"] = "CUDA is not available: this build of pijit has no CUDA backend "
                     "(CUDA's cuda.h was not found when it was built)";
#endif
    return info;
  });
  m.def("_set_default_backend", [](const std::string& name) {
    absl::Status s = graph::SetDefaultBackend(name);
    if (!s.ok()) throw py::value_error(std::string(s.message()));
  });
}

}  // namespace pijit
