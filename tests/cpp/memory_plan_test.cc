// Memory planning (graph/memory_plan.h) and the executor's arenas (graph/executor.h): the
// plan's invariants, planned results bit-identical to unplanned ones, steady-state calls that
// allocate only their outputs, and one graph run from several threads at once.
#include "graph/memory_plan.h"

#include <cstring>
#include <random>
#include <thread>

#include "graph/executor.h"
#include "gtest/gtest.h"
#include "tests/cpp/run_graph.h"
#include "tests/cpp/passes/pass_test_util.h"

namespace pijit::graph {
namespace {

// No two slots whose spans overlap share a byte; every slot is aligned and inside the arena.
void ExpectValid(const Graph& g, const MemoryPlan& plan) {
  ASSERT_EQ(plan.slot.size(), g.nodes().size());
  size_t top = 0;
  for (size_t i = 0; i < plan.slots.size(); ++i) {
    const MemoryPlan::Slot& a = plan.slots[i];
    EXPECT_EQ(plan.slot[a.node], static_cast<int32_t>(i));
    EXPECT_EQ(a.offset % MemoryPlan::kAlignment, 0u);
    top = std::max(top, a.offset + a.nbytes);
    for (size_t j = i + 1; j < plan.slots.size(); ++j) {
      const MemoryPlan::Slot& b = plan.slots[j];
      const bool in_time = a.first <= b.last && b.first <= a.last;
      const bool in_space = a.offset < b.offset + b.nbytes && b.offset < a.offset + a.nbytes;
      EXPECT_FALSE(in_time && in_space) << "%" << a.node << " and %" << b.node << " collide";
    }
  }
  EXPECT_LE(top, plan.arena_bytes);
}

TEST(MemoryPlanTest, ChainReusesTheBytesOfDeadValues) {
  Graph g = ParseOrDie(
      "graph(%0: f32[1024]) {\n  %1: f32[1024] = exp(%0)\n  %2: f32[1024] = neg(%1)\n"
      "  %3: f32[1024] = exp(%2)\n  %4: f32[1024] = neg(%3)\n  %5: f32[1024] = exp(%4)\n"
      "  return (%5)\n}\n");
  MemoryPlan plan = PlanMemory(g);
  ExpectValid(g, plan);
  EXPECT_EQ(plan.slots.size(), 4u);  // %1..%4; %5 is the output
  EXPECT_EQ(plan.slot[0], MemoryPlan::kNoSlot);
  EXPECT_EQ(plan.slot[5], MemoryPlan::kNoSlot);
  // Each value dies at the next node: two 4 KB slots alternate.
  EXPECT_EQ(plan.arena_bytes, 2 * 4096u);
}

TEST(MemoryPlanTest, ViewsKeepTheirBaseAliveAndOutputsOutOfTheArena) {
  Graph g = ParseOrDie(
      "graph(%0: f32[2,3]) {\n  %1: f32[2,3] = exp(%0)\n  %2: f32[3,2] = transpose(%1, perm=[1,0])\n"
      "  %3: f32[2,3] = neg(%0)\n  %4: f32[3,2] = exp(%2)\n  %5: f32[6] = reshape(%3, shape=[6])\n"
      "  %6: f32[3,2] = reshape(%0, shape=[3,2])\n  return (%4, %5, %6)\n}\n");
  MemoryPlan plan = PlanMemory(g);
  ExpectValid(g, plan);
  EXPECT_EQ(plan.root[2], 1);
  EXPECT_EQ(plan.root[5], 3);
  EXPECT_EQ(plan.root[6], 0);
  ASSERT_NE(plan.slot[1], MemoryPlan::kNoSlot);
  // %1's storage is in use until %4 reads its view %2.
  EXPECT_EQ(plan.slots[plan.slot[1]].last, 4);
  EXPECT_EQ(plan.slot[2], MemoryPlan::kNoSlot);  // a view has no storage of its own
  EXPECT_EQ(plan.slot[3], MemoryPlan::kNoSlot);  // its view %5 is an output
  EXPECT_EQ(plan.slot[4], MemoryPlan::kNoSlot);
}

TEST(MemoryPlanTest, CastToTheSameDTypeSharesItsInput) {
  Graph g;
  NodeId x = g.AddParam({DType::kFloat32, {8}});
  NodeId e = *g.AddOp(Op::kExp, {x});
  Attrs same;
  same.dtype = DType::kFloat32;
  NodeId c = *g.AddOp(Op::kCast, {e}, same);
  Attrs wide;
  wide.dtype = DType::kFloat64;
  NodeId w = *g.AddOp(Op::kCast, {e}, wide);
  g.SetOutputs({c, w});
  MemoryPlan plan = PlanMemory(g);
  EXPECT_EQ(plan.root[c], e);
  EXPECT_EQ(plan.root[w], w);
  EXPECT_EQ(plan.slot[e], MemoryPlan::kNoSlot);  // shared by the output %c
}

TEST(MemoryPlanTest, GreedyBySizeFillsAGapBetweenLiveSlots) {
  // %1 (4 KB) and %3 (4 KB) are live around %2 (1 KB, dead at %3), then %4 (1 KB) is made
  // while %1 and %3 live: it fits where %2 was, so the arena stays at 4+1+4 KB... or less.
  Graph g = ParseOrDie(
      "graph(%0: f32[1024], %1: f32[256]) {\n  %2: f32[1024] = exp(%0)\n"
      "  %3: f32[256] = exp(%1)\n  %4: f32[256] = neg(%3)\n  %5: f32[1024] = neg(%2)\n"
      "  %6: f32[256] = exp(%4)\n  %7: f32[1024] = add(%5, %2)\n  %8: f32[256] = add(%6, %4)\n"
      "  return (%7, %8)\n}\n");
  MemoryPlan plan = PlanMemory(g);
  ExpectValid(g, plan);
  size_t sum = 0;
  for (const auto& s : plan.slots) sum += s.nbytes;
  EXPECT_LT(plan.arena_bytes, sum);
}

// Random graphs of unary, binary and view ops over a few sizes: the plan is always valid.
TEST(MemoryPlanTest, RandomGraphsGetValidPlans) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    Graph g;
    std::vector<NodeId> vals;
    const int64_t sizes[] = {16, 64, 1000};
    for (int64_t s : sizes) vals.push_back(g.AddParam({DType::kFloat32, {s}}));
    const int n = 5 + static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      NodeId a = vals[rng() % vals.size()];
      const auto& shape = g.node(a).meta.shape;
      switch (rng() % 4) {
        case 0: vals.push_back(*g.AddOp(Op::kExp, {a})); break;
        case 1: vals.push_back(*g.AddOp(Op::kReshape, {a}, Shape{1, NumElements(shape)})); break;
        default: {
          std::vector<NodeId> same;
          for (NodeId v : vals)
            if (NumElements(g.node(v).meta.shape) == shape.back()) same.push_back(v);
          NodeId b = same[rng() % same.size()];
          auto r = g.AddOp(Op::kAdd, {a, b});
          if (r.ok()) vals.push_back(*r);
        }
      }
    }
    std::vector<NodeId> outs;
    for (int k = 0; k < 3; ++k) outs.push_back(vals[3 + rng() % (vals.size() - 3)]);
    g.SetOutputs(outs);
    MemoryPlan plan = PlanMemory(g);
    ExpectValid(g, plan);
    for (NodeId o : outs) EXPECT_EQ(plan.slot[plan.root[o]], MemoryPlan::kNoSlot);
  }
}

// ---- execution --------------------------------------------------------------------------

Tensor Filled(const TensorMeta& m, uint32_t seed) {
  Tensor t = Tensor::Empty(m.shape, m.dtype);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-2, 2);
  Tensor d = Tensor::Empty(m.shape, DType::kFloat64);
  for (int64_t i = 0; i < d.numel(); ++i) d.data<double>()[i] = u(rng);
  CopyInto(d, t);
  return t;
}

void ExpectSameBits(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(a.shape(), b.shape());
  Tensor ca = a.Contiguous(), cb = b.Contiguous();
  EXPECT_EQ(std::memcmp(ca.raw_data(), cb.raw_data(), ca.numel() * ca.itemsize()), 0);
}

// Compiles `g` with and without a plan, runs both three times on the same inputs (later
// calls reuse the arena, holding the previous call's values) and compares every output.
void ExpectPlannedMatchesUnplanned(const Graph& g, bool optimize = true, bool expect_slots = true) {
  CompileOptions off, on;
  off.optimize = on.optimize = optimize;
  off.plan_memory = false;
  auto plain = CompiledGraph::Compile(g, off);
  auto planned = CompiledGraph::Compile(g, on);
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE(planned.ok()) << planned.status();
  EXPECT_TRUE(plain->memory_plan().empty());
  if (expect_slots) {
    EXPECT_FALSE(planned->memory_plan().empty());
  }
  for (int call = 0; call < 3; ++call) {
    std::vector<Tensor> in;
    for (NodeId p : g.params()) in.push_back(Filled(g.node(p).meta, 11 * call + p));
    std::vector<Tensor> want = RunCompiled(*plain, in);
    std::vector<Tensor> got = RunCompiled(*planned, in);
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < want.size(); ++i) {
      SCOPED_TRACE(testing::Message() << "call " << call << ", output " << i);
      ExpectSameBits(want[i], got[i]);
      // Outputs are the caller's: never arena memory, never an input's storage unless eager
      // would share it (the unplanned graph shows when).
      for (const Tensor& t : in) {
        EXPECT_EQ(got[i].storage() == t.storage(), want[i].storage() == t.storage());
      }
    }
  }
}

TEST(MemoryPlanRunTest, Chain) {
  ExpectPlannedMatchesUnplanned(ParseOrDie(
      "graph(%0: f32[64,32]) {\n  %1: f32[64,32] = exp(%0)\n  %2: f32[64,32] = neg(%1)\n"
      "  %3: f32[64,32] = exp(%2)\n  %4: f32[64,32] = mul(%3, %0)\n  %5: f32[64] = sum(%4, axes=[1])\n"
      "  return (%5)\n}\n"), /*optimize=*/false);
}

TEST(MemoryPlanRunTest, Diamond) {
  ExpectPlannedMatchesUnplanned(ParseOrDie(
      "graph(%0: f32[33,17], %1: f32[17,9]) {\n  %2: f32[33,9] = matmul(%0, %1)\n"
      "  %3: f32[33,9] = exp(%2)\n  %4: f32[33,9] = neg(%2)\n  %5: f32[33,9] = mul(%3, %4)\n"
      "  %6: f32[33,9] = add(%5, %2)\n  return (%6)\n}\n"), false);
}

TEST(MemoryPlanRunTest, OptimizedGraphWithMatmulsAndSoftmax) {
  Graph g;
  NodeId x = g.AddParam({DType::kFloat32, {64, 128}});
  NodeId w = g.AddParam({DType::kFloat32, {128, 128}});
  NodeId h = *g.AddOp(Op::kMatMul, {x, w});
  NodeId r = *g.AddOp(Op::kRelu, {h});
  NodeId h2 = *g.AddOp(Op::kMatMul, {r, w});
  Attrs axis;
  axis.attr = -1;
  NodeId s = *g.AddOp(Op::kSoftmax, {h2}, axis);
  NodeId e = *g.AddOp(Op::kExp, {s});
  NodeId t = *g.AddOp(Op::kTranspose, {e}, Shape{1, 0});
  NodeId m = *g.AddOp(Op::kMatMul, {t, r});
  g.SetOutputs({m, s});
  ExpectPlannedMatchesUnplanned(g);
}

// A view of an intermediate is an output: the intermediate gets no slot; another view of a
// planned intermediate reads it in place.
TEST(MemoryPlanRunTest, ViewsOfIntermediates) {
  ExpectPlannedMatchesUnplanned(ParseOrDie(
      "graph(%0: f32[6,4]) {\n  %1: f32[6,4] = exp(%0)\n  %2: f32[4,6] = transpose(%1, perm=[1,0])\n"
      "  %3: f32[6,4] = neg(%0)\n  %4: f32[24] = reshape(%3, shape=[24])\n"
      "  %5: f32[4,6] = exp(%2)\n  %6: f32[24] = reshape(%5, shape=[24])\n"
      "  %7: f32[24] = add(%6, %4)\n  return (%2, %7)\n}\n"), false);
}

// Outputs that are inputs, views of inputs, or the same value twice.
TEST(MemoryPlanRunTest, OutputsThatAliasInputs) {
  ExpectPlannedMatchesUnplanned(ParseOrDie(
      "graph(%0: f32[3,4], %1: f32[3,4]) {\n  %2: f32[12] = reshape(%0, shape=[12])\n"
      "  %3: f32[3,4] = exp(%1)\n  %4: f32[3,4] = add(%3, %0)\n  %5: f32[4,3] = transpose(%4, perm=[1,0])\n"
      "  %6: f32[4,3] = neg(%5)\n  return (%0, %2, %6, %6, %1)\n}\n"), false);
}

// Results written over inputs: assign writes an intermediate into a variable (a param) in
// place; a cast to the same dtype returns its input.
TEST(MemoryPlanRunTest, InPlaceLookingPatterns) {
  auto build = [] {
    Graph g;
    NodeId v = g.AddParam({DType::kFloat32, {5, 7}});
    NodeId x = g.AddParam({DType::kFloat32, {5, 7}});
    NodeId e = *g.AddOp(Op::kExp, {x});
    NodeId n = *g.AddOp(Op::kNeg, {e});
    Attrs same;
    same.dtype = DType::kFloat32;
    NodeId c = *g.AddOp(Op::kCast, {n}, same);
    NodeId a = *g.AddOp(Op::kAssign, {v, c});
    NodeId s = *g.AddOp(Op::kMul, {c, e});
    NodeId c2 = *g.AddOp(Op::kCast, {s}, same);
    g.SetOutputs({a, c2});
    return g;
  };
  // assign changes its param: compare two runs on separate copies of the same inputs.
  Graph g = build();
  CompileOptions off, on;
  off.optimize = on.optimize = false;
  off.plan_memory = false;
  auto plain = CompiledGraph::Compile(g, off);
  auto planned = CompiledGraph::Compile(g, on);
  ASSERT_TRUE(plain.ok() && planned.ok());
  EXPECT_FALSE(planned->memory_plan().empty());
  for (int call = 0; call < 3; ++call) {
    std::vector<Tensor> a, b;
    for (NodeId p : g.params()) {
      a.push_back(Filled(g.node(p).meta, call * 5 + p));
      b.push_back(Filled(g.node(p).meta, call * 5 + p));
    }
    std::vector<Tensor> want = RunCompiled(*plain, a), got = RunCompiled(*planned, b);
    ASSERT_EQ(got.size(), 2u);
    ExpectSameBits(want[0], got[0]);
    ExpectSameBits(want[1], got[1]);
    ExpectSameBits(a[0], b[0]);  // the variable after the assign
    EXPECT_EQ(got[0].storage(), b[0].storage());
  }
}

TEST(MemoryPlanRunTest, MultipleOutputsAndDTypes) {
  for (const char* dt : {"f32", "f64", "f16", "i32"}) {
    SCOPED_TRACE(dt);
    const std::string t = dt;
    ExpectPlannedMatchesUnplanned(ParseOrDie(
        "graph(%0: " + t + "[8,16], %1: " + t + "[8,16]) {\n  %2: " + t + "[8,16] = mul(%0, %1)\n"
        "  %3: " + t + "[8,16] = add(%2, %0)\n  %4: " + t + "[8,16] = sub(%3, %1)\n"
        "  %5: " + t + "[8,16] = maximum(%4, %2)\n  %6: bool[8,16] = greater(%5, %3)\n"
        "  %7: bool[8,16] = logical_not(%6)\n  %8: bool[8,16] = logical_and(%7, %6)\n"
        "  %9: " + t + "[16,8] = transpose(%4, perm=[1,0])\n  %10: " + t + "[16,8] = neg(%9)\n"
        "  return (%8, %10, %5)\n}\n"), false);
  }
}

// With the default pipeline (fusion, epilogues), including where nothing is left to plan.
TEST(MemoryPlanRunTest, FusedGraphs) {
  ExpectPlannedMatchesUnplanned(ParseOrDie(
      "graph(%0: f32[256], %1: f32[256]) {\n  %2: f32[256] = mul(%0, %1)\n"
      "  %3: f32[256] = exp(%2)\n  %4: f32[] = sum(%3)\n  %5: f32[256] = div(%3, %4)\n"
      "  %6: f32[256] = add(%5, %0)\n  return (%6)\n}\n"));
  ExpectPlannedMatchesUnplanned(ParseOrDie(
      "graph(%0: f32[256]) {\n  %1: f32[256] = exp(%0)\n  return (%1)\n}\n"), true,
      /*expect_slots=*/false);
}

// A steady-state call allocates its outputs and nothing else: every intermediate is written
// into the arena. The first call makes the arena.
TEST(MemoryPlanRunTest, SteadyStateCallAllocatesOnlyItsOutputs) {
  Graph g = ParseOrDie(
      "graph(%0: f32[128,64], %1: f32[64,64]) {\n  %2: f32[128,64] = matmul(%0, %1)\n"
      "  %3: f32[128,64] = exp(%2)\n  %4: f32[128,64] = neg(%3)\n  %5: f32[128,64] = add(%4, %2)\n"
      "  %6: f32[64,128] = transpose(%5, perm=[1,0])\n  %7: f32[64,64] = matmul(%6, %0)\n"
      "  %8: f32[64,64] = relu(%7)\n  %9: f32[64] = sum(%8, axes=[0])\n"
      "  %10: f32[64,64] = mul(%8, %1)\n  return (%9, %10)\n}\n");
  for (bool optimize : {false, true}) {
    SCOPED_TRACE(optimize ? "optimized" : "as written");
    CompileOptions opts;
    opts.optimize = optimize;
    auto c = CompiledGraph::Compile(g, opts);
    ASSERT_TRUE(c.ok()) << c.status();
    ASSERT_FALSE(c->memory_plan().empty());
    std::vector<Tensor> in = {Filled({DType::kFloat32, {128, 64}}, 1),
                              Filled({DType::kFloat32, {64, 64}}, 2)};
    RunCompiled(*c, in);
    const uint64_t before = StorageAllocations();
    std::vector<Tensor> out = RunCompiled(*c, in);
    EXPECT_EQ(StorageAllocations() - before, out.size());
    // Without a plan the same call allocates every intermediate too.
    opts.plan_memory = false;
    auto plain = CompiledGraph::Compile(g, opts);
    ASSERT_TRUE(plain.ok());
    RunCompiled(*plain, in);
    const uint64_t before_plain = StorageAllocations();
    RunCompiled(*plain, in);
    EXPECT_GT(StorageAllocations() - before_plain, out.size());
  }
}

TEST(MemoryPlanRunTest, EnvironmentSwitchTurnsPlanningOff) {
  Graph g = ParseOrDie(
      "graph(%0: f32[4]) {\n  %1: f32[4] = exp(%0)\n  %2: f32[4] = neg(%1)\n  return (%2)\n}\n");
  CompileOptions opts;
  opts.optimize = false;
  setenv("PIJIT_MEMORY_PLAN", "0", 1);
  auto off = CompiledGraph::Compile(g, opts);
  unsetenv("PIJIT_MEMORY_PLAN");
  auto on = CompiledGraph::Compile(g, opts);
  ASSERT_TRUE(off.ok() && on.ok());
  EXPECT_TRUE(off->memory_plan().empty());
  EXPECT_FALSE(on->memory_plan().empty());
}

TEST(MemoryPlanRunTest, GraphsWithSymbolicSizesAreNotPlanned) {
  Graph g = ParseOrDie(
      "graph(%0: f32[4]) {\n  %1: f32[4] = exp(%0)\n  %2: f32[4] = neg(%1)\n  return (%2)\n}\n");
  CompileOptions opts;
  opts.pipeline.symbolic_sizes = true;
  auto c = CompiledGraph::Compile(g, opts);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->memory_plan().empty());
}

// A call made while another call's slot is open on the same thread (as a finalizer run by a
// release could make) leaves that slot alone: its output does not land in the outer arena.
TEST(MemoryPlanRunTest, NestedCallDoesNotTakeAnEnclosingSlot) {
  Graph g = ParseOrDie(
      "graph(%0: f32[16]) {\n  %1: f32[16] = exp(%0)\n  %2: f32[16] = neg(%1)\n  return (%2)\n}\n");
  CompileOptions opts;
  opts.optimize = false;
  auto c = CompiledGraph::Compile(g, opts);
  ASSERT_TRUE(c.ok());
  const std::vector<Tensor> in = {Filled({DType::kFloat32, {16}}, 3)};
  auto outer = Storage::Allocate(16 * sizeof(float));
  PlannedSlot planned(outer);
  std::vector<Tensor> out = RunCompiled(*c, in);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(planned.taken());
  EXPECT_NE(out[0].storage(), outer);
}

// One compiled graph called from several threads at once: each call gets its own arena.
TEST(MemoryPlanRunTest, ConcurrentCallsOfOneGraph) {
  Graph g = ParseOrDie(
      "graph(%0: f32[96,80], %1: f32[80,96]) {\n  %2: f32[96,96] = matmul(%0, %1)\n"
      "  %3: f32[96,96] = exp(%2)\n  %4: f32[96,96] = neg(%3)\n  %5: f32[96,96] = mul(%4, %2)\n"
      "  %6: f32[96,80] = matmul(%5, %0)\n  %7: f32[96,80] = add(%6, %0)\n"
      "  %8: f32[96] = sum(%7, axes=[1])\n  return (%8, %5)\n}\n");
  CompileOptions opts;
  opts.optimize = false;
  auto c = CompiledGraph::Compile(g, opts);
  opts.plan_memory = false;
  auto plain = CompiledGraph::Compile(g, opts);
  ASSERT_TRUE(c.ok() && plain.ok());
  ASSERT_FALSE(c->memory_plan().empty());
  constexpr int kThreads = 4, kCalls = 40;
  std::vector<std::vector<Tensor>> inputs, wants;
  for (int t = 0; t < kThreads; ++t) {
    inputs.push_back({Filled({DType::kFloat32, {96, 80}}, 100 + t),
                      Filled({DType::kFloat32, {80, 96}}, 200 + t)});
    wants.push_back(RunCompiled(*plain, inputs.back()));
  }
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < kCalls; ++k) {
        std::vector<const Tensor*> args = {&inputs[t][0], &inputs[t][1]};
        std::vector<Tensor> out;
        if (!c->Run(args, &out).ok() || out.size() != 2) {
          ++mismatches[t];
          continue;
        }
        for (int i = 0; i < 2; ++i) {
          const Tensor& w = wants[t][i];
          if (std::memcmp(out[i].raw_data(), w.raw_data(), w.numel() * w.itemsize()) != 0)
            ++mismatches[t];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

}  // namespace
}  // namespace pijit::graph
