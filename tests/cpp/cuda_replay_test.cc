// Whole calls of compiled graphs replayed as CUDA graphs (graph/device_replay.h): each call
// against the CPU backend and against the same graph launched kernel by kernel, whatever the
// caller passes (the same device tensors again, new ones, host tensors, a tensor it still
// holds). Skipped, with the reason, on machines without a GPU.
#ifdef PIJIT_WITH_CUDA
#include <cmath>
#include <cstdlib>
#include <random>

#include "graph/backend.h"
#include "graph/device_replay.h"
#include "graph/executor.h"
#include "graph/text_parser.h"
#include "gtest/gtest.h"
#include "kernels/cuda/allocator.h"
#include "kernels/cuda/cuda_api.h"

namespace pijit::cuda {
namespace {

using graph::CompiledGraph;

// y = sum(relu(x @ w), axis 1) and w -= 0.25 * w (an assign, as an optimizer's update).
constexpr char kStep[] =
    "graph(%0: f32[16,64], %1: f32[64,32]) {\n"
    "  %2: f32[16,32] = matmul(%0, %1)\n"
    "  %3: f32[16,32] = relu(%2)\n"
    "  %4: f32[16] = sum(%3, axes=[1], keepdims=false)\n"
    "  %5: f32[] = constant(0.25)\n"
    "  %6: f32[64,32] = mul(%1, %5)\n"
    "  %7: f32[64,32] = sub(%1, %6)\n"
    "  %8: f32[64,32] = assign(%1, %7)\n"
    "  return (%4)\n"
    "}\n";

Tensor Random(const Shape& shape, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1, 1);
  Tensor t = Tensor::Empty(shape, DType::kFloat32);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

Tensor HostCopy(const Tensor& t) {
  if (t.device() == Device::kCUDA) return *ToHost(t);
  Tensor c = Tensor::Empty(t.shape(), t.dtype());
  CopyInto(t, c);
  return c;
}

void ExpectNear(const Tensor& want, const Tensor& got_any, const char* what, int call) {
  const Tensor got = HostCopy(got_any);
  ASSERT_EQ(want.shape(), got.shape()) << what;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const float a = want.data<float>()[i], b = got.data<float>()[i];
    ASSERT_NEAR(a, b, 1e-4 * std::max(1.f, std::abs(a))) << what << ", call " << call << ", element " << i;
  }
}

absl::StatusOr<CompiledGraph> Compile(const char* text, const graph::Backend* backend) {
  auto g = graph::Parse(text);
  if (!g.ok()) return g.status();
  graph::CompileOptions options;
  options.backend = backend;
  return CompiledGraph::Compile(*g, options);
}

TEST(CudaGraphs, ReplaysMatchTheCpuWhateverTheCallerPasses) {
  if (!Available()) GTEST_SKIP() << UnavailableReason();
  auto gpu = Compile(kStep, graph::CudaBackend());
  auto cpu = Compile(kStep, &graph::CpuBackend());
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  ASSERT_NE(gpu->replay(), nullptr);
  std::mt19937 rng(3);
  Tensor w_cpu = Random({64, 32}, rng);
  Tensor w_gpu = *ToDevice(w_cpu);  // the weights stay on the device, updated in place
  Tensor kept_x;                    // the device input the recording reads, while the caller holds it
  for (int call = 0; call < 8; ++call) {
    const Tensor x = Random({16, 64}, rng);
    // 0: kernel by kernel (the first call); 1: recorded, reading the caller's tensor where it
    // is, which the caller keeps; 2: another tensor while the caller holds that one (kernel by
    // kernel: the recorded one may not be overwritten); 3: the kept tensor again (replayed, no
    // copy); 4-5: new device tensors once the caller let go (copied in); 6-7: host tensors.
    if (call == 4) kept_x = Tensor();
    Tensor x_gpu = call == 3 ? kept_x : call <= 5 ? *ToDevice(x) : x;
    if (call == 1) kept_x = x_gpu;
    const Tensor x_cpu = call == 3 ? HostCopy(kept_x) : x;
    std::vector<Tensor> want, got;
    const Tensor* cpu_in[] = {&x_cpu, &w_cpu};
    const Tensor* gpu_in[] = {&x_gpu, &w_gpu};
    ASSERT_TRUE(cpu->Run(cpu_in, &want).ok());
    auto s = gpu->Run(gpu_in, &got);
    ASSERT_TRUE(s.ok()) << s;
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].device(), Device::kCUDA) << "call " << call;
    ExpectNear(want[0], got[0], "output", call);
    ExpectNear(w_cpu, w_gpu, "weights after the call", call);
  }
  EXPECT_TRUE(gpu->replay()->failure().empty()) << gpu->replay()->failure();
  // Calls 0 and 2 ran kernel by kernel; 1 recorded and replayed; the others replayed.
  EXPECT_EQ(gpu->replay()->replays(), 6);
  EXPECT_GE(gpu->replay()->launches(), 3);  // the product, the reduction, the update at least
}

TEST(CudaGraphs, HostCallersGetHostResultsAndTheirWrittenTensorsBack) {
  if (!Available()) GTEST_SKIP() << UnavailableReason();
  auto gpu = Compile(kStep, graph::CudaBackend());
  auto cpu = Compile(kStep, &graph::CpuBackend());
  ASSERT_TRUE(gpu.ok() && cpu.ok());
  std::mt19937 rng(4);
  Tensor w_cpu = Random({64, 32}, rng);
  Tensor w_host = HostCopy(w_cpu);
  auto allocator = DeviceAllocator();
  ASSERT_TRUE(allocator.ok());
  uint64_t raw_after_recording = 0;
  for (int call = 0; call < 6; ++call) {
    const Tensor x = Random({16, 64}, rng);
    std::vector<Tensor> want, got;
    const Tensor* cpu_in[] = {&x, &w_cpu};
    const Tensor* gpu_in[] = {&x, &w_host};
    ASSERT_TRUE(cpu->Run(cpu_in, &want).ok());
    ASSERT_TRUE(gpu->Run(gpu_in, &got).ok());
    EXPECT_EQ(got[0].device(), Device::kCPU);
    ExpectNear(want[0], got[0], "output", call);
    ExpectNear(w_cpu, w_host, "host weights written back", call);
    if (call == 2) raw_after_recording = (*allocator)->stats().raw_allocations;
  }
  EXPECT_EQ(gpu->replay()->replays(), 5);
  // Replays allocate nothing from the driver: the recording's memory is its own.
  EXPECT_EQ((*allocator)->stats().raw_allocations, raw_after_recording);
}

TEST(CudaGraphs, TurnedOffByTheEnvironment) {
  if (!Available()) GTEST_SKIP() << UnavailableReason();
  setenv("PIJIT_CUDA_GRAPHS", "0", 1);
  auto gpu = Compile(kStep, graph::CudaBackend());
  unsetenv("PIJIT_CUDA_GRAPHS");
  ASSERT_TRUE(gpu.ok());
  EXPECT_EQ(gpu->replay(), nullptr);
}

}  // namespace
}  // namespace pijit::cuda
#endif  // PIJIT_WITH_CUDA
