// GPU kernel timings of the CUDA backend, printed one per line as `name value unit` for
// benchmarks/gpu.py, which times the same work in torch on the same GPU and prints ratios.
//   fused_chain_ms     relu(x * y + x) - y over 100M float32 elements: one fused NVRTC kernel
//   copy_bound_ms      the time the device's own copy engine needs to move the same bytes
//                      (cuMemcpyDtoD of the inputs and output: 3 x 400 MB read or written)
//   matmul_ms          4096 x 4096 x 4096 float32 product (cuBLAS, full float32)
//   call_us            one call of a compiled two-node graph on 4-element tensors, host to
//                      host-visible completion, replayed as a CUDA graph (graph/device_replay.h)
//   call_launches_us   the same with PIJIT_CUDA_GRAPHS=0: one kernel launch per node
//   lenet_step_ms      one LeNet-5 training step at batch 128 (tests/cpp/lenet_step.h: forward,
//                      backward, SGD), weights resident on the GPU, replayed as a CUDA graph
//                      (lenet_step_launches_ms: kernel by kernel)
//   resnet18_step_ms   one CIFAR ResNet-18 training step at batch 128 (tests/cpp/resnet_step.h),
//                      convolutions through cuDNN when it loads (the line says which); also
//                      resnet18_step_launches_ms
// Each is the median of several runs after two warm-up calls (the second records the graph).
#include <cstdlib>
#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <vector>

#include "graph/backend.h"
#include "graph/device_replay.h"
#include "graph/executor.h"
#include "graph/text_parser.h"
#include "kernels/cuda/allocator.h"
#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/device_ops.h"
#include "kernels/cuda/cudnn.h"
#include "tests/cpp/lenet_step.h"
#include "tests/cpp/resnet_step.h"

namespace pijit::cuda {
int ResNet(const CudaApi& api);

template <typename Fn>
double MedianMs(const CudaApi& api, int runs, Fn&& fn) {
  CUevent start, stop;
  api.cuEventCreate(&start, 0);
  api.cuEventCreate(&stop, 0);
  fn();  // warm-up: compiles and allocates
  fn();  // and records the CUDA graph of a compiled graph
  api.cuCtxSynchronize();
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    api.cuEventRecord(start, api.stream);
    fn();
    api.cuEventRecord(stop, api.stream);
    api.cuEventSynchronize(stop);
    float t = 0;
    api.cuEventElapsedTime(&t, start, stop);
    ms.push_back(t);
  }
  api.cuEventDestroy(start);
  api.cuEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

Tensor Filled(const Shape& shape, float v) {
  Tensor t = Tensor::Empty(shape, DType::kFloat32);
  std::fill(t.data<float>(), t.data<float>() + t.numel(), v);
  return t;
}

// Compiles `g` for the GPU, replaying whole calls as CUDA graphs or launching kernel by kernel.
absl::StatusOr<graph::CompiledGraph> CompileForGpu(const graph::Graph& g, bool cuda_graphs) {
  graph::CompileOptions options;
  options.backend = graph::CudaBackend();
  if (!cuda_graphs) setenv("PIJIT_CUDA_GRAPHS", "0", 1);  // read per compile
  auto c = graph::CompiledGraph::Compile(g, options);
  unsetenv("PIJIT_CUDA_GRAPHS");
  return c;
}

// The median ms of `runs` calls of `g` compiled for the GPU on device `inputs`; -1 (with the
// error printed) when it does not compile.
double StepMs(const CudaApi& api, const graph::Graph& g, const std::vector<Tensor>& inputs, int runs,
              bool cuda_graphs = true) {
  auto c = CompileForGpu(g, cuda_graphs);
  if (!c.ok()) {
    std::printf("error %s\n", std::string(c.status().message()).c_str());
    return -1;
  }
  std::vector<const Tensor*> args;
  for (const Tensor& t : inputs) args.push_back(&t);
  std::vector<Tensor> outs;
  const double ms = MedianMs(api, runs, [&] { (void)c->Run(args, &outs); });
  if (const graph::DeviceReplay* r = c->replay()) {
    std::printf("step_replay replays %lld, %lld launches per replay%s%s\n", static_cast<long long>(r->replays()),
                static_cast<long long>(r->launches()), r->failure().empty() ? "" : "; not recorded: ",
                r->failure().c_str());
  }
  return ms;
}

int LeNet(const CudaApi& api) {
  constexpr int64_t kBatch = 128;
  auto g = graph::LeNetTrainingStep(kBatch);
  if (!g.ok()) return 1;
  std::vector<Tensor> inputs;
  for (graph::NodeId p : g->params()) {
    const TensorMeta& m = g->node(p).meta;
    Tensor t = Tensor::Empty(m.shape, m.dtype);
    for (int64_t i = 0; i < t.numel(); ++i) {
      // Deterministic small weights, inputs in [0, 1), one-hot labels.
      t.data<float>()[i] = p == 9 ? ((i % 10) == (i / 10) % 10 ? 1.f : 0.f)
                         : p == 0 ? static_cast<float>((i * 7919) % 1000) / 1000.f
                                  : 0.05f * (static_cast<float>((i * 104729) % 2001) / 1000.f - 1.f);
    }
    auto d = ToDevice(t);
    if (!d.ok()) return 1;
    inputs.push_back(*d);
  }
  const double ms = StepMs(api, *g, inputs, 30);
  if (ms < 0) return 1;
  std::printf("lenet_step_ms %.4f\n", ms);
  std::printf("lenet_step_launches_ms %.4f\n", StepMs(api, *g, inputs, 30, false));
  return ResNet(api);
}

int ResNet(const CudaApi& api) {
  auto step = graph::ResNetBuilder().Build(128);
  if (!step.ok()) return 1;
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < step->graph.params().size(); ++i) {
    const TensorMeta& m = step->graph.node(step->graph.params()[i]).meta;
    Tensor t = Tensor::Empty(m.shape, m.dtype);
    const float he = std::sqrt(2.0f / static_cast<float>(step->fan_in[i]));
    for (int64_t k = 0; k < t.numel(); ++k) {
      const float u = static_cast<float>((k * 7919 + i * 104729) % 2001) / 1000.f - 1.f;  // [-1, 1]
      switch (step->init[i]) {
        case graph::ParamInit::kInput: t.data<float>()[k] = 0.5f * (u + 1); break;
        case graph::ParamInit::kLabels: t.data<float>()[k] = (k % 10) == (k / 10) % 10 ? 1.f : 0.f; break;
        case graph::ParamInit::kHe: t.data<float>()[k] = he * u; break;
        case graph::ParamInit::kOnes: t.data<float>()[k] = 1; break;
        case graph::ParamInit::kZeros: t.data<float>()[k] = 0; break;
      }
    }
    auto d = ToDevice(t);
    if (!d.ok()) return 1;
    inputs.push_back(*d);
  }
  const double ms = StepMs(api, step->graph, inputs, 10);
  if (ms < 0) return 1;
  const std::string why = CudnnUnavailableReason();
  std::printf("resnet18_step_ms %.4f\n", ms);
  std::printf("resnet18_step_launches_ms %.4f\n", StepMs(api, step->graph, inputs, 10, false));
  std::printf("resnet18_convolutions %s\n", why.empty() ? "cudnn" : ("direct (" + why + ")").c_str());
  return 0;
}


int Run() {
  auto api_or = CudaApi::Get();
  if (!api_or.ok()) {
    std::printf("error %s\n", std::string(api_or.status().message()).c_str());
    return 1;
  }
  const CudaApi& api = **api_or;
  std::printf("device %s\n", api.device_name.c_str());
  constexpr int64_t kN = 100'000'000;
  auto x = ToDevice(Filled({kN}, 1.5f)), y = ToDevice(Filled({kN}, -0.25f));
  if (!x.ok() || !y.ok()) return 1;
  auto program = FusedProgram::Parse("mul($0, $1); add(#0, $0); relu(#1); sub(#2, $1)", DType::kFloat32, 2);
  const Tensor* in[] = {&*x, &*y};
  const double fused = MedianMs(api, 9, [&] { (void)DeviceFused(*program, in, {DType::kFloat32, {kN}}); });
  std::printf("fused_chain_ms %.4f\n", fused);
  auto out = EmptyOnDevice({kN}, DType::kFloat32);
  const size_t bytes = kN * sizeof(float);
  const double copy = MedianMs(api, 9, [&] {
    // Read 2 x 400 MB and write 400 MB, as the fused kernel does: 1.5 copies of 400 MB.
    api.cuMemcpyDtoD(reinterpret_cast<CUdeviceptr>(out->raw_data()),
                     reinterpret_cast<CUdeviceptr>(x->raw_data()), bytes);
    api.cuMemcpyDtoD(reinterpret_cast<CUdeviceptr>(out->raw_data()),
                     reinterpret_cast<CUdeviceptr>(y->raw_data()), bytes / 2);
  });
  std::printf("copy_bound_ms %.4f\n", copy);

  constexpr int64_t kM = 4096;
  auto a = ToDevice(Filled({kM, kM}, 0.5f)), b = ToDevice(Filled({kM, kM}, 0.25f));
  const double mm = MedianMs(api, 7, [&] { (void)DeviceMatMul(*a, *b, {DType::kFloat32, {kM, kM}}); });
  std::printf("matmul_ms %.4f\n", mm);

  auto g = graph::Parse("graph(%0: f32[4], %1: f32[4]) {\n  %2: f32[4] = add(%0, %1)\n"
                        "  %3: f32[4] = mul(%2, %0)\n  return (%3)\n}\n");
  auto s = ToDevice(Filled({4}, 1.0f)), t = ToDevice(Filled({4}, 2.0f));
  if (!s.ok() || !t.ok()) return 1;
  for (const bool cuda_graphs : {true, false}) {
    auto c = CompileForGpu(*g, cuda_graphs);
    if (!c.ok()) return 1;
    const Tensor* args[] = {&*s, &*t};
    std::vector<Tensor> outs;
    std::vector<double> us;
    for (int i = 0; i < 2000; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      (void)c->Run(args, &outs);
      api.cuStreamSynchronize(api.stream);
      us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(us.begin(), us.end());
    std::printf("%s %.3f\n", cuda_graphs ? "call_us" : "call_launches_us", us[us.size() / 2]);
    if (cuda_graphs && c->replay()) {
      std::printf("call_graph_replays %lld launches %lld%s%s\n", static_cast<long long>(c->replay()->replays()),
                  static_cast<long long>(c->replay()->launches()), c->replay()->failure().empty() ? "" : " failed: ",
                  c->replay()->failure().c_str());
    }
  }
  return LeNet(api);
}

}  // namespace pijit::cuda

// `pijit_cuda_bench resnet` runs only the ResNet-18 step (with PIJIT_PROFILE=1: its time per
// kind of node, printed at exit).
int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "resnet") {
    auto api = pijit::cuda::CudaApi::Get();
    return api.ok() ? pijit::cuda::ResNet(**api) : 1;
  }
  return pijit::cuda::Run();
}
