#include "graph/passes/fusion.h"

#include <random>

#include "graph/backend.h"
#include "graph/executor.h"
#include "tests/cpp/passes/pass_test_util.h"
#include "kernels/cpu/fused_x86.h"

namespace pijit::graph {
namespace {

const char* kChain =
    "graph(%0: f32[37], %1: f32[37], %2: f32[37], %3: f32[37]) {\n"
    "  %4: f32[37] = mul(%0, %1)\n  %5: f32[37] = mul(%2, %3)\n  %6: f32[37] = add(%4, %5)\n"
    "  %7: f32[] = constant(0.5)\n  %8: f32[37] = mul(%0, %7)\n  %9: f32[37] = sub(%6, %8)\n"
    "  return (%9)\n}\n";

std::vector<Tensor> Run(const Graph& g, const std::vector<Tensor>& in) {
  CompileOptions raw;
  raw.optimize = false;
  auto c = CompiledGraph::Compile(g, raw);
  EXPECT_TRUE(c.ok()) << c.status();
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : in) ptrs.push_back(&t);
  std::vector<Tensor> out;
  EXPECT_TRUE(c->Run(ptrs, &out).ok());
  return out;
}

// The pass leaves a device-neutral program in the node; the CPU backend compiles it (Lower)
// with `codegen`, and the node then runs that kernel.
void ExpectFusedEqualsUnfused(FusedBackend codegen, bool want_native) {
  Graph g = ParseOrDie(kChain);
  Graph fused = g;
  auto changed = fusion::Run(fused);
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(*changed);
  const Node& root = fused.node(fused.outputs()[0]);
  ASSERT_EQ(root.op, Op::kFused);
  ASSERT_TRUE(root.program);
  std::vector<const TensorMeta*> metas;
  for (NodeId i : root.inputs) metas.push_back(&fused.node(i).meta);
  auto lowered = LowerFusedForCpu(root, metas, codegen);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  const FusedKernel* kernel = KernelOf(lowered->get());
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->native(), want_native);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-2, 2);
  std::vector<Tensor> in;
  for (int k = 0; k < 4; ++k) {
    in.push_back(Tensor::Empty({37}, DType::kFloat32));
    for (int i = 0; i < 37; ++i) in.back().data<float>()[i] = u(rng);
  }
  std::vector<const Tensor*> operands;
  for (NodeId i : root.inputs) operands.push_back(&in[fused.node(i).param_index]);
  auto got = RunNode(root, operands, kernel);
  ASSERT_TRUE(got.ok()) << got.status();
  Tensor want = Run(g, in)[0], compiled = Run(fused, in)[0];
  for (int i = 0; i < 37; ++i) {
    EXPECT_EQ(got->data<float>()[i], want.data<float>()[i]) << i;
    EXPECT_EQ(compiled.data<float>()[i], want.data<float>()[i]) << i;
  }
}

TEST(FusionTest, GeneratedCodeEqualsUnfused) {
  ExpectFusedEqualsUnfused(FusedBackend::kAuto, HostHasAvx2());
}

TEST(FusionTest, InterpreterFallbackEqualsUnfused) {
  ExpectFusedEqualsUnfused(FusedBackend::kInterpreter, false);
}

}  // namespace
}  // namespace pijit::graph
