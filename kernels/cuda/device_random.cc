// Random numbers on the GPU (kernels/cuda/device_ops.h DeviceRandom): the CPU's counter-based
// generator (kernels/ops.h RandomDraw), so a seed gives the same numbers on both devices.
// Value i of a draw is SplitMix64(key ^ SplitMix64(base + i)); uniform values take its top 53
// bits as a double, normal values two uniforms each through Box-Muller in double precision,
// as the CPU computes them.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kernels/cuda/allocator.h"
#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/device_ops.h"
#include "kernels/cuda/kernel_source.h"
#include "kernels/cuda/module_cache.h"
#include "kernels/errors.h"

namespace pijit::cuda {
namespace {

struct RandomArgs {
  void* out;
  long long n;
  unsigned long long key, base;
  double lo, hi;  // uniform: [lo, hi); normal: mean lo, standard deviation hi
};

constexpr const char* kRandomSource = R"(
struct RandomArgs {
  void* out;
  long long n;
  unsigned long long key, base;
  double lo, hi;
};
__device__ __forceinline__ unsigned long long pj_mix(unsigned long long x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
__device__ __forceinline__ double pj_uniform01(unsigned long long key, unsigned long long i) {
  return (double)(pj_mix(key ^ pj_mix(i)) >> 11) * 0x1.0p-53;
}
extern "C" __global__ void pijit_random(RandomArgs a) {
  T* out = static_cast<T*>(a.out);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < a.n;
       i += (long long)gridDim.x * blockDim.x) {
#if PJ_NORMAL
    const double u1 = 1.0 - pj_uniform01(a.key, a.base + 2 * i);  // (0, 1]: log is finite
    const double u2 = pj_uniform01(a.key, a.base + 2 * i + 1);
    const double z = sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
    out[i] = T(a.lo + a.hi * z);
#else
    const T v = T(a.lo + (a.hi - a.lo) * pj_uniform01(a.key, a.base + i));
    // Rounding to float32 can reach the upper bound: keep the interval half-open.
    out[i] = (v < T(a.hi) || a.lo == a.hi) ? v : T(a.lo);
#endif
  }
}
)";

}  // namespace

std::string RandomKernelSource(DType dtype, bool normal) {
  return absl::StrCat("typedef ", dtype == DType::kFloat64 ? "double" : "float", " T;\n#define PJ_NORMAL ",
                      normal ? 1 : 0, "\n", kRandomSource);
}

absl::StatusOr<Tensor> DeviceRandom(Distribution d, const TensorMeta& out, double a, double b, int64_t seed) {
  if (out.dtype != DType::kFloat32 && out.dtype != DType::kFloat64) {
    return absl::UnimplementedError(absl::StrFormat(
        "the CUDA backend draws float32 and float64 random numbers, not %s", DTypeName(out.dtype)));
  }
  PIJIT_ASSIGN_OR_RETURN(const CudaApi* api, CudaApi::Get());
  const bool normal = d == Distribution::kNormal;
  PIJIT_ASSIGN_OR_RETURN(
      CUfunction fn,
      CompiledFunction(absl::StrFormat("random|%d|%d", static_cast<int>(out.dtype), normal),
                       [&]() -> absl::StatusOr<std::string> { return RandomKernelSource(out.dtype, normal); },
                       "pijit_random"));
  PIJIT_ASSIGN_OR_RETURN(Tensor result, EmptyOnDevice(out.shape, out.dtype));
  RandomArgs args{};
  args.out = result.raw_data();
  args.n = result.numel();
  // The generator advances now, at launch, as the CPU's does per draw.
  const RandomDraw draw = ReserveRandom(static_cast<uint64_t>(args.n) * (normal ? 2 : 1), seed);
  args.key = draw.key;
  args.base = draw.base;
  args.lo = a;
  args.hi = b;
  if (args.n == 0) return result;
  const unsigned blocks = static_cast<unsigned>(std::min((args.n + 255) / 256, 65536LL));
  void* params[] = {&args};
  PIJIT_RETURN_IF_ERROR(DriverStatus(
      *api, api->cuLaunchKernel(fn, blocks, 1, 1, 256, 1, 1, 0, api->stream, params, nullptr), "cuLaunchKernel"));
  return result;
}

}  // namespace pijit::cuda
