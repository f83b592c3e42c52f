// NVRTC compilation and the kernel caches (kernels/cuda/module_cache.h).
#include "kernels/cuda/module_cache.h"

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kernels/errors.h"

namespace pijit::cuda {
namespace {

std::mutex g_mu;
ModuleCacheStats g_stats;

std::vector<std::string> Options(const CudaApi& api) {
  return {absl::StrFormat("--gpu-architecture=sm_%d%d", api.cc_major, api.cc_minor),
          // No multiply-add contraction and IEEE division and square root: the CPU's bits.
          "--fmad=false", "--prec-div=true", "--prec-sqrt=true", "--std=c++17"};
}

std::filesystem::path DiskCacheFolder() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    return std::filesystem::path(xdg) / "pijit" / "cuda";
  }
  if (const char* home = std::getenv("HOME"); home && *home) {
    return std::filesystem::path(home) / ".cache" / "pijit" / "cuda";
  }
  return {};
}

// FNV-1a: stable across processes (absl::Hash is seeded per process, so it cannot name files).
uint64_t StableHash(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string DiskKey(const CudaApi& api, const std::string& source) {
  const std::string keyed = absl::StrFormat("%s\nsm_%d%d nvrtc %d.%d", source, api.cc_major,
                                            api.cc_minor, api.nvrtc_major, api.nvrtc_minor);
  return absl::StrFormat("%016x-sm%d%d.cubin", StableHash(keyed), api.cc_major, api.cc_minor);
}

bool ReadFile(const std::filesystem::path& path, std::string* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream s;
  s << f.rdbuf();
  *out = s.str();
  return !out->empty();
}

// Written to a temporary name, then renamed: a reader never sees half a file.
void WriteFile(const std::filesystem::path& path, const std::string& bytes) {
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) return;  // the disk cache is an optimisation: no cache is not an error
  const std::filesystem::path tmp = path.string() + absl::StrFormat(".%d.tmp", ::getpid());
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) return;
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f) return;
  }
  std::filesystem::rename(tmp, path, ec);
}

absl::StatusOr<std::string> Compile(const CudaApi& api, const std::string& source) {
  nvrtcProgram prog = nullptr;
  if (api.nvrtcCreateProgram(&prog, source.c_str(), "pijit_kernel.cu", 0, nullptr, nullptr) != 0) {
    return absl::InternalError("nvrtcCreateProgram failed");
  }
  const std::vector<std::string> options = Options(api);
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());
  const nvrtcResult r = api.nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  std::string result;
  absl::Status status;
  if (r != 0) {
    size_t n = 0;
    api.nvrtcGetProgramLogSize(prog, &n);
    std::string log(n, '\0');
    if (n) api.nvrtcGetProgramLog(prog, log.data());
    status = absl::InternalError(absl::StrFormat("NVRTC could not compile a kernel (%s):\n%s",
                                                 api.nvrtcGetErrorString(r), log));
  } else {
    size_t n = 0;
    api.nvrtcGetCUBINSize(prog, &n);
    result.resize(n);
    api.nvrtcGetCUBIN(prog, result.data());
  }
  api.nvrtcDestroyProgram(&prog);
  if (!status.ok()) return status;
  return result;
}

}  // namespace

std::string CompileOptionsText() {
  auto api = CudaApi::Get();
  if (!api.ok()) return "";
  std::string text;
  for (const std::string& o : Options(**api)) text += (text.empty() ? "" : " ") + o;
  return text;
}

absl::StatusOr<CUfunction> CompiledFunction(const std::string& key_text,
                                            const std::function<absl::StatusOr<std::string>()>& render,
                                            const char* entry) {
  PIJIT_ASSIGN_OR_RETURN(const CudaApi* api, CudaApi::Get());
  static auto* functions = new absl::flat_hash_map<std::string, CUfunction>();
  std::lock_guard<std::mutex> lock(g_mu);
  const std::string key = absl::StrCat(entry, "\n", key_text);
  if (auto it = functions->find(key); it != functions->end()) {
    ++g_stats.memory_hits;
    return it->second;
  }
  PIJIT_ASSIGN_OR_RETURN(const std::string source, render());
  std::string cubin;
  const std::filesystem::path folder = DiskCacheFolder();
  const std::filesystem::path file = folder.empty() ? folder : folder / DiskKey(*api, source);
  if (!file.empty() && ReadFile(file, &cubin)) {
    ++g_stats.loaded_from_disk;
  } else {
    PIJIT_ASSIGN_OR_RETURN(cubin, Compile(*api, source));
    ++g_stats.compiled;
    if (!file.empty()) WriteFile(file, cubin);
  }
  CUmodule module = nullptr;  // kept for the process, as the functions in it are
  PIJIT_RETURN_IF_ERROR(DriverStatus(*api, api->cuModuleLoadData(&module, cubin.data()),
                                     "cuModuleLoadData"));
  CUfunction fn = nullptr;
  PIJIT_RETURN_IF_ERROR(DriverStatus(*api, api->cuModuleGetFunction(&fn, module, entry),
                                     "cuModuleGetFunction"));
  functions->emplace(key, fn);
  return fn;
}

ModuleCacheStats GetModuleCacheStats() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_stats;
}

}  // namespace pijit::cuda
