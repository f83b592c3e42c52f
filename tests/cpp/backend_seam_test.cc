// The seam between compiled graphs and backends (graph/backend.h): a backend compiles each node
// it needs to (Lower) once, when the graph is compiled, and the graph's calls hand that back to
// RunNode; the arenas of the memory plan are the backend's memory (AllocateArena). The IR keeps
// only device-neutral fused programs.
#include <atomic>
#include <cmath>
#include <random>

#include "graph/backend.h"
#include "graph/executor.h"
#include "graph/text_parser.h"
#include "gtest/gtest.h"
#include "tests/cpp/run_graph.h"

namespace pijit::graph {
namespace {

// The CPU's kernels, counting what the seam asks of it.
class CountingBackend final : public HostKernelsBackend {
 public:
  const char* name() const override { return "counting"; }
  absl::StatusOr<std::shared_ptr<const LoweredNode>> Lower(
      const Node& n, absl::Span<const TensorMeta* const> inputs) const override {
    ++lowers;
    return HostKernelsBackend::Lower(n, inputs);
  }
  absl::StatusOr<Tensor> RunNode(const Node& n, absl::Span<const Tensor* const> inputs,
                                 const LoweredNode* lowered) const override {
    if (n.op == Op::kFused) lowered_runs += lowered != nullptr;
    return RunWithHostKernels(n, inputs, lowered);
  }
  std::shared_ptr<Storage> AllocateArena(size_t nbytes) const override {
    ++arenas;
    return Backend::AllocateArena(nbytes);
  }
  mutable std::atomic<int> lowers{0}, lowered_runs{0}, arenas{0};

 protected:
  FusedBackend FusedCodegen() const override { return FusedBackend::kInterpreter; }
};

const char* kGraph =
    "graph(%0: f32[64, 32], %1: f32[32, 16], %2: f32[64, 16]) {\n"
    "  %3: f32[64, 16] = matmul(%0, %1)\n  %4: f32[64, 16] = mul(%3, %2)\n"
    "  %5: f32[64, 16] = add(%4, %3)\n  %6: f32[64, 16] = exp(%5)\n"
    "  %7: f32[64, 16] = sub(%6, %2)\n  %8: f32[16, 64] = transpose(%7, perm=[1, 0])\n"
    "  %9: f32[16, 16] = matmul(%8, %2)\n  return (%9)\n}\n";

std::vector<Tensor> Inputs() {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<Tensor> in;
  for (const Shape& s : {Shape{64, 32}, Shape{32, 16}, Shape{64, 16}}) {
    in.push_back(Tensor::Empty(s, DType::kFloat32));
    for (int64_t i = 0; i < in.back().numel(); ++i) in.back().data<float>()[i] = u(rng);
  }
  return in;
}

TEST(BackendSeamTest, FusedProgramsAreLoweredOnceAndArenasComeFromTheBackend) {
  auto g = Parse(kGraph);
  ASSERT_TRUE(g.ok()) << g.status();
  CountingBackend backend;
  CompileOptions options;
  options.backend = &backend;
  auto c = CompiledGraph::Compile(*g, options);
  ASSERT_TRUE(c.ok()) << c.status();
  int fused = 0, nodes = 0;
  for (const Node& n : c->graph().nodes()) {
    if (n.op == Op::kParam || n.op == Op::kConstant) continue;
    ++nodes;
    if (n.op != Op::kFused) continue;
    ++fused;
    ASSERT_TRUE(n.program);  // the IR holds the program, not code
  }
  ASSERT_GE(fused, 1) << c->graph().ToText();
  EXPECT_EQ(backend.lowers.load(), nodes);  // every node asked once, at compile time
  EXPECT_EQ(backend.arenas.load(), 0);      // none before the first call

  CompileOptions reference_options;
  reference_options.backend = &ReferenceBackend();
  reference_options.optimize = false;
  auto unfused = CompiledGraph::Compile(*g, reference_options);
  ASSERT_TRUE(unfused.ok()) << unfused.status();
  const std::vector<Tensor> in = Inputs();
  const Tensor want = RunCompiled(*unfused, in)[0];
  for (int call = 0; call < 3; ++call) {
    const Tensor got = RunCompiled(*c, in)[0];
    ASSERT_EQ(got.numel(), want.numel());
    for (int64_t i = 0; i < got.numel(); ++i) {
      EXPECT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-4f * (1 + std::abs(want.data<float>()[i])));
    }
  }
  EXPECT_EQ(backend.lowers.load(), nodes);            // calls compile nothing
  EXPECT_EQ(backend.lowered_runs.load(), 3 * fused);  // each fused run got its kernel
  if (!c->memory_plan().empty()) EXPECT_EQ(backend.arenas.load(), 1);  // one arena, reused
}

// A fused node run outside a compiled graph (nothing lowered) compiles its program for the call.
TEST(BackendSeamTest, FusedNodeRunsWithoutALoweredKernel) {
  auto g = Parse(
      "graph(%0: f32[5], %1: f32[5]) {\n"
      "  %2: f32[5] = fused(%0, %1, program=\"mul($0, $1); add(#0, $0)\")\n  return (%2)\n}\n");
  ASSERT_TRUE(g.ok()) << g.status();
  const Node& n = g->node(g->outputs()[0]);
  Tensor a = Tensor::Empty({5}, DType::kFloat32), b = Tensor::Empty({5}, DType::kFloat32);
  for (int i = 0; i < 5; ++i) a.data<float>()[i] = i - 2.0f, b.data<float>()[i] = 0.5f * i;
  const Tensor* in[] = {&a, &b};
  for (const Backend* backend : {&CpuBackend(), &ReferenceBackend()}) {
    auto out = backend->RunNode(n, in, nullptr);
    ASSERT_TRUE(out.ok()) << out.status();
    for (int i = 0; i < 5; ++i) EXPECT_EQ(out->data<float>()[i], a.data<float>()[i] * b.data<float>()[i] + a.data<float>()[i]);
  }
}

}  // namespace
}  // namespace pijit::graph
