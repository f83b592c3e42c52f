// The CUDA backend's device-independent parts, on any machine: kernel source rendering, the
// caching allocator's bookkeeping, and how a machine without a GPU is reported.
#ifdef PIJIT_WITH_CUDA
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_format.h"

#include "graph/backend.h"
#include "graph/executor.h"
#include "graph/text_parser.h"
#include "gtest/gtest.h"
#include "kernels/cuda/allocator.h"
#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/device_ops.h"
#include "kernels/cuda/kernel_source.h"

namespace pijit::cuda {
namespace {

TEST(CudaKernelSource, FusedProgramBecomesOneKernelBody) {
  auto program = FusedProgram::Parse("mul($0, $1); add(#0, 0.5); exp(#1); greater(#2, $0); where(#3, #2, $1)",
                                     DType::kFloat32, 2);
  ASSERT_TRUE(program.ok()) << program.status();
  auto body = FusedProgramBody(*program);
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_NE(body->find("const float t0 = (x0 * x1);"), std::string::npos) << *body;
  EXPECT_NE(body->find("const float t1 = (t0 + float(0.5));"), std::string::npos) << *body;
  EXPECT_NE(body->find("pj::exp(t1)"), std::string::npos) << *body;
  EXPECT_NE(body->find("const bool t3 = (t2 > x0);"), std::string::npos) << *body;
  EXPECT_NE(body->find("r = t4;"), std::string::npos) << *body;

  ElementwiseSpec spec{{DType::kFloat32, DType::kFloat32},
                       {Access::kContiguous, Access::kStrided}, DType::kFloat32, "float", *body};
  const std::string src = RenderElementwise(spec);
  EXPECT_NE(src.find("extern \"C\" __global__ void pijit_elementwise(ElementwiseArgs a)"), std::string::npos);
  EXPECT_NE(src.find("static_cast<const float*>(a.in[0])[i]"), std::string::npos);
  EXPECT_NE(src.find("pj_dot1(co, a.strides[1])"), std::string::npos);
  EXPECT_NE(src.find("co[d] = rem % (IDX)a.shape[d];"), std::string::npos);
}

TEST(CudaKernelSource, InfiniteAndNanConstantsAreWrittenAsBits) {
  FusedProgram p;
  p.dtype = DType::kFloat32;
  p.num_inputs = 1;
  FusedOperand x, neg_inf, nan;
  neg_inf.kind = nan.kind = FusedOperand::kConst;
  neg_inf.value = -INFINITY;
  nan.value = NAN;
  p.insts.push_back({FusedOpcode::kMaximum, x, neg_inf, {}});
  FusedOperand t0;
  t0.kind = FusedOperand::kTemp;
  p.insts.push_back({FusedOpcode::kAdd, t0, nan, {}});
  auto body = FusedProgramBody(p);
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_NE(body->find("Maximum(x0, (-__int_as_float(0x7f800000)))"), std::string::npos) << *body;
  EXPECT_NE(body->find("(t0 + __int_as_float(0x7fc00000))"), std::string::npos) << *body;
  EXPECT_EQ(body->find("inf"), std::string::npos) << *body;
}

TEST(CudaKernelSource, EveryFloatFunctionRowRendersForTheDevice) {
  int rows = 0;
#define PIJIT_CHECK_ROW(e, name, ...)                                       \
  {                                                                         \
    ++rows;                                                                 \
    auto body = UnaryBody(UnaryOp::e, /*floating=*/true);                   \
    ASSERT_TRUE(body.ok()) << name << ": " << body.status();                \
    EXPECT_EQ(body->find("std::"), std::string::npos) << name << *body;     \
    EXPECT_FALSE(UnaryBody(UnaryOp::e, /*floating=*/false).ok()) << name;   \
  }
  PIJIT_FLOAT_FUNCTIONS(PIJIT_CHECK_ROW)
#undef PIJIT_CHECK_ROW
  EXPECT_GE(rows, 20);
  EXPECT_NE(std::string(*UnaryBody(UnaryOp::kExp, true)).find("pj::exp(x)"), std::string::npos);
}

TEST(CudaKernelSource, UnsupportedOpsAndDtypesAreNamed) {
  auto half = DeviceType(DType::kFloat16);
  ASSERT_FALSE(half.ok());
  EXPECT_NE(std::string(half.status().message()).find("Float16"), std::string::npos);
  auto var = RenderReduce(ReduceOp::kVar, DType::kFloat32, DType::kFloat32);
  ASSERT_FALSE(var.ok());
  EXPECT_EQ(var.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_FALSE(BinaryBody(BinaryOp::kPow, false).ok());  // integer pow: the CPU's
  EXPECT_TRUE(BinaryBody(BinaryOp::kPow, true).ok());
  EXPECT_FALSE(BinaryBody(BinaryOp::kBitwiseAnd, true).ok());
  EXPECT_FALSE(RenderSoftmax(DType::kInt32, false).ok());
  auto sum = RenderReduce(ReduceOp::kSum, DType::kFloat32, DType::kFloat32);
  ASSERT_TRUE(sum.ok());
  EXPECT_NE(sum->find("pijit_reduce"), std::string::npos);
  auto mean = RenderReduce(ReduceOp::kMean, DType::kFloat64, DType::kFloat64);
  ASSERT_TRUE(mean.ok());
  EXPECT_NE(mean->find("total = total / A(a.divisor);"), std::string::npos);
}

// Host memory stands in for the device: the bookkeeping is the same.
struct FakeDevice {
  int allocations = 0, frees = 0;
  int fail_next = 0;  // this many requests report out of memory
  RawAllocator raw() {
    return RawAllocator{[this](size_t n) -> absl::StatusOr<uint64_t> {
                          if (fail_next > 0) {
                            --fail_next;
                            return absl::ResourceExhaustedError("out of memory");
                          }
                          ++allocations;
                          return reinterpret_cast<uint64_t>(std::malloc(n));
                        },
                        [this](uint64_t p) {
                          ++frees;
                          std::free(reinterpret_cast<void*>(p));
                        }};
  }
};

TEST(CudaAllocator, ReusesReleasedBlocksOfTheSameRoundedSize) {
  FakeDevice dev;
  {
    CachingAllocator alloc(dev.raw());
    EXPECT_EQ(CachingAllocator::RoundSize(1), 512u);
    EXPECT_EQ(CachingAllocator::RoundSize(1000), 1024u);
    EXPECT_EQ(CachingAllocator::RoundSize((1 << 20) + 1), size_t{2} << 20);
    auto a = alloc.Allocate(1000);
    ASSERT_TRUE(a.ok());
    alloc.Release(*a, 1000);
    EXPECT_EQ(alloc.stats().bytes_cached, 1024u);
    auto b = alloc.Allocate(1020);  // the same rounded size: the same block
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(*a, *b);
    EXPECT_EQ(alloc.stats().cache_hits, 1u);
    EXPECT_EQ(alloc.stats().raw_allocations, 1u);
    auto c = alloc.Allocate(5000);  // another size: fresh memory
    ASSERT_TRUE(c.ok());
    EXPECT_NE(*c, *b);
    EXPECT_EQ(alloc.stats().bytes_in_use, 1024u + 5120u);
    alloc.Release(*b, 1020);
    alloc.Release(*c, 5000);
    EXPECT_EQ(alloc.stats().bytes_in_use, 0u);
  }
  EXPECT_EQ(dev.allocations, 2);
  EXPECT_EQ(dev.frees, 2);  // the destructor returns what it cached
}

TEST(CudaAllocator, OutOfMemoryEmptiesTheCacheAndRetriesOnce) {
  FakeDevice dev;
  CachingAllocator alloc(dev.raw());
  auto a = alloc.Allocate(4096);
  ASSERT_TRUE(a.ok());
  alloc.Release(*a, 4096);
  dev.fail_next = 1;
  auto b = alloc.Allocate(100000);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(dev.frees, 1);  // the cached 4 KiB block went back first
  EXPECT_EQ(alloc.stats().bytes_cached, 0u);
  dev.fail_next = 2;
  auto c = alloc.Allocate(100000);
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(c.status()));
  alloc.Release(*b, 100000);
}

// A recorded CUDA graph's blocks are its own while it lives: reused within the recording,
// never handed to other work, and back in the shared cache once it is retired.
TEST(CudaAllocator, PoolsKeepTheirBlocksUntilRetired) {
  FakeDevice dev;
  CachingAllocator alloc(dev.raw());
  auto cached = alloc.Allocate(4096);  // a block of the shared cache, free before the recording
  ASSERT_TRUE(cached.ok());
  alloc.Release(*cached, 4096);
  const CachingAllocator::PoolId pool = alloc.OpenPool();
  auto a = alloc.Allocate(4096);  // the recording takes the cached block...
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, *cached);
  alloc.Release(*a, 4096);        // ...frees it (an intermediate)...
  auto b = alloc.Allocate(4000);  // ...and reuses it for a later node, in stream order
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, *a);
  auto out = alloc.Allocate(8192);  // a result the recording keeps
  ASSERT_TRUE(out.ok());
  alloc.Release(*b, 4000);
  alloc.ClosePool();
  EXPECT_EQ(alloc.PoolBlocks(pool), 2u);
  // Other work never gets the pool's free block: it gets fresh memory.
  auto other = alloc.Allocate(4096);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(*other, *a);
  alloc.Release(*other, 4096);
  alloc.RetirePool(pool);  // the graph is gone: its free block returns now...
  auto again = alloc.Allocate(4096);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(*again == *a || *again == *other);
  EXPECT_EQ(alloc.PoolBlocks(pool), 1u);
  alloc.Release(*out, 8192);  // ...and the kept result when released
  EXPECT_EQ(alloc.PoolBlocks(pool), 0u);
  auto reused = alloc.Allocate(8192);
  ASSERT_TRUE(reused.ok());
  EXPECT_EQ(*reused, *out);
  alloc.Release(*reused, 8192);
  alloc.Release(*again, 4096);
  EXPECT_EQ(alloc.stats().bytes_in_use, 0u);
}

TEST(CudaAvailability, AMachineWithoutAGpuIsReportedNotCrashed) {
  ASSERT_NE(graph::CudaBackend(), nullptr);
  EXPECT_EQ(graph::BackendByName("cuda"), graph::CudaBackend());
  if (Available()) GTEST_SKIP() << "this machine has a GPU: " << (*CudaApi::Get())->device_name;
  const std::string why = UnavailableReason();
  EXPECT_EQ(why.rfind("CUDA is not available: ", 0), 0u) << why;
  // Compiling for the GPU uploads constants: that needs the device, and says so.
  auto g = graph::Parse("graph(%0: f32[4]) {\n  %1: f32[] = constant(2)\n  %2: f32[4] = mul(%0, %1)\n  return (%2)\n}\n");
  ASSERT_TRUE(g.ok()) << g.status();
  graph::CompileOptions options;
  options.backend = graph::CudaBackend();
  auto c = graph::CompiledGraph::Compile(*g, options);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition) << c.status();
  EXPECT_FALSE(ToDevice(Tensor::Scalar<float>(1)).ok());
}

// Every kind of rendered source, as NVRTC would get it, through nvcc (found on machines that
// build CUDA code, GPU or not): a source that does not compile fails here, not on a GPU.
std::vector<std::string> SampleSources() {
  std::vector<std::string> out;
  ElementwiseSpec spec{{DType::kFloat32, DType::kFloat64, DType::kInt32},
                       {Access::kContiguous, Access::kStrided, Access::kScalar},
                       DType::kFloat32, "float", "    r = T(x0) + T(x1) * T(x2);"};
  out.push_back(RenderElementwise(spec));
  spec.strided_out = true;
  out.push_back(RenderElementwise(spec));
  auto program = FusedProgram::Parse(
      "mul($0, $1); add(#0, 0.5); exp(#1); greater(#2, $0); where(#3, #2, $1); rsqrt(#4); "
      "log(#5); tanh(#6); erf(#7); relu(#8); maximum(#9, $1); minimum(#10, $0); sqrt(#11); neg(#12)",
      DType::kFloat64, 2);
  EXPECT_TRUE(program.ok()) << program.status();
  if (program.ok()) {
    spec = {{DType::kFloat64, DType::kFloat64}, {Access::kContiguous, Access::kScalar},
            DType::kFloat64, "double", *FusedProgramBody(*program)};
    out.push_back(RenderElementwise(spec));
  }
  for (DType d : {DType::kFloat32, DType::kFloat64}) {
    const std::string t = *DeviceType(d);
    // Every float-function row, and every binary and unary op with a body, in one kernel each.
#define PIJIT_ROW(e, name, ...) \
    out.push_back(RenderElementwise({{d}, {Access::kContiguous}, d, t, *UnaryBody(UnaryOp::e, true)}));
    PIJIT_FLOAT_FUNCTIONS(PIJIT_ROW)
#undef PIJIT_ROW
    for (UnaryOp u : {UnaryOp::kNeg, UnaryOp::kRelu, UnaryOp::kAbs, UnaryOp::kSign, UnaryOp::kSquare,
                      UnaryOp::kSqrt, UnaryOp::kLogicalNot}) {
      out.push_back(RenderElementwise({{d}, {Access::kStrided}, DType::kBool, t, *UnaryBody(u, true)}));
    }
    for (int b = 0; b < 21; ++b) {
      auto body = BinaryBody(static_cast<BinaryOp>(b), true);
      if (body.ok()) out.push_back(RenderElementwise({{d, DType::kInt64}, {Access::kStrided, Access::kContiguous}, d, t, *body}));
    }
    for (ReduceOp r : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kProd, ReduceOp::kMax, ReduceOp::kMin}) {
      out.push_back(*RenderReduce(r, d, d));
    }
    out.push_back(*RenderSoftmax(d, false));
    out.push_back(*RenderSoftmax(d, true));
    for (const std::string& w : WindowKernelSources(d)) out.push_back(w);
  }
  out.push_back(*RenderReduce(ReduceOp::kSum, DType::kInt32, DType::kInt64));
  out.push_back(*RenderReduce(ReduceOp::kMax, DType::kInt64, DType::kInt64));
  // Integer and bool bodies: Python's division and modulo, the bitwise ops; all and any.
  for (BinaryOp b : {BinaryOp::kFloorDiv, BinaryOp::kMod, BinaryOp::kBitwiseAnd, BinaryOp::kBitwiseXor}) {
    out.push_back(RenderElementwise({{DType::kInt32, DType::kInt32}, {Access::kContiguous, Access::kStrided},
                                     DType::kInt32, "int", *BinaryBody(b, false)}));
  }
  out.push_back(RenderElementwise({{DType::kInt64}, {Access::kContiguous}, DType::kInt64, "long long",
                                   *UnaryBody(UnaryOp::kBitwiseNot, false)}));
  out.push_back(RenderElementwise({{DType::kBool}, {Access::kContiguous}, DType::kBool, "bool",
                                   *UnaryBody(UnaryOp::kBitwiseNot, false)}));
  for (ReduceOp r : {ReduceOp::kAll, ReduceOp::kAny}) {
    out.push_back(*RenderReduce(r, DType::kFloat32, DType::kBool));
    out.push_back(*RenderReduce(r, DType::kBool, DType::kBool));
  }
  for (DType d : {DType::kFloat32, DType::kFloat64}) {
    out.push_back(RandomKernelSource(d, false));
    out.push_back(RandomKernelSource(d, true));
  }
  return out;
}

TEST(CudaKernelSource, EveryRenderedSourceCompilesWithNvcc) {
  if (std::system("nvcc --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no nvcc on this machine";
  const std::vector<std::string> sources = SampleSources();
  ASSERT_GE(sources.size(), 60u);
  const std::string dir = ::testing::TempDir() + "pijit_cuda_sources";
  std::filesystem::create_directories(dir);
  for (size_t i = 0; i < sources.size(); ++i) {
    std::ofstream(absl::StrFormat("%s/k%03d.cu", dir, i)) << sources[i];
  }
  // The options NVRTC gets (kernels/cuda/module_cache.cc), for the GPUs pijit targets.
  const std::string cmd = absl::StrFormat(
      "cd %s && ls k*.cu | xargs -P 2 -I{} sh -c 'nvcc -arch=sm_90 -cubin -std=c++17 --fmad=false "
      "--prec-div=true --prec-sqrt=true -o /dev/null {} > {}.log 2>&1 || (echo FAILED {}; cat {}.log)' "
      "> result.txt; cat result.txt", dir);
  std::FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof(buf), pipe)) output.append(buf, n);
  pclose(pipe);
  EXPECT_EQ(output.find("FAILED"), std::string::npos) << output;
}

TEST(DefaultBackend, IsSetByNameAndRejectsUnknownNames) {
  auto bad = graph::SetDefaultBackend("tpu");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.message()).find("unknown backend tpu"), std::string::npos);
  ASSERT_TRUE(graph::SetDefaultBackend("reference").ok());
  auto chosen = graph::DefaultBackend();
  ASSERT_TRUE(graph::SetDefaultBackend("").ok());
  ASSERT_TRUE(chosen.ok());
  EXPECT_EQ(*chosen, &graph::ReferenceBackend());
  EXPECT_EQ(*graph::DefaultBackend(), &graph::CpuBackend());
}

}  // namespace
}  // namespace pijit::cuda
#endif  // PIJIT_WITH_CUDA
