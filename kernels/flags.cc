#include "kernels/flags.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

namespace pijit::flags {
namespace {
const char* Get(const char* name) { return std::getenv(name); }
// A switch that is on unless the variable is "0".
bool OnUnlessZero(const char* name) {
  const char* v = Get(name);
  return v == nullptr || std::strcmp(v, "0") != 0;
}
// The variable's text, empty when it is not set.
std::string_view TextOf(const char* name) {
  const char* v = Get(name);
  return v != nullptr ? v : "";
}
}  // namespace

bool LogEnabled(std::string_view what) {
  static const std::string spec = [] {
    const char* v = Get("PIJIT_LOG");
    return v ? std::string(v) : std::string();
  }();
  std::string_view rest = spec;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view part = rest.substr(0, comma);
    if (part == what || part == "all") return true;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return false;
}

bool ProfileNodes() {
  static const bool on = Get("PIJIT_PROFILE") != nullptr;
  return on;
}

std::optional<double> CommTimeout() {
  const char* v = Get("PIJIT_COMM_TIMEOUT");
  if (v == nullptr) return std::nullopt;
  const double seconds = std::atof(v);
  if (seconds > 0) return seconds;
  return std::nullopt;
}

bool CommOverlap() { return OnUnlessZero("PIJIT_COMM_OVERLAP"); }

bool MemoryPlanning() { return OnUnlessZero("PIJIT_MEMORY_PLAN"); }

bool CudnnFind() { return OnUnlessZero("PIJIT_CUDNN_FIND"); }

bool CudaGraphs() { return OnUnlessZero("PIJIT_CUDA_GRAPHS"); }

std::string_view FusedBackend() { return TextOf("PIJIT_FUSED_BACKEND"); }

std::string_view Backend() { return TextOf("PIJIT_BACKEND"); }

std::string_view CudaLibDirs() { return TextOf("PIJIT_CUDA_LIB_DIRS"); }

bool UseCudnn() { return OnUnlessZero("PIJIT_CUDNN"); }

std::optional<size_t> BufferCacheBytes() {
  const char* v = Get("PIJIT_BUFFER_CACHE_MB");
  if (v == nullptr) return std::nullopt;
  return static_cast<size_t>(std::max(0L, std::atol(v))) << 20;
}

std::optional<int> NumThreads() {
  const char* v = Get("PIJIT_NUM_THREADS");
  if (v == nullptr) return std::nullopt;
  const int n = std::atoi(v);
  if (n < 1) return std::nullopt;
  return n;
}

}  // namespace pijit::flags
