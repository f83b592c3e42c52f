#include "graph/serialize.h"

#include <random>

#include "graph/text_parser.h"
#include "gtest/gtest.h"
#include "tests/cpp/lenet_step.h"
#include "tests/cpp/random_tensor.h"
#include "tests/cpp/run_graph.h"

namespace pijit::graph {
namespace {

Graph MixedGraph() {
  // Constants of several dtypes (one of them larger than the text form prints), a reduction
  // with axes and keepdims, a reshape, a transpose, a comparison.
  auto g = Parse(
      "graph(%0: f32[2,3], %1: i64[3]) {\n"
      "  %2: f32[3] = constant([1, 2, 3])\n"
      "  %3: f32[2,3] = mul(%0, %2)\n"
      "  %4: f32[2,1] = sum(%3, axes=[1], keepdims=true)\n"
      "  %5: f32[1,2] = reshape(%4, shape=[1,2])\n"
      "  %6: f32[2,1] = transpose(%5, perm=[1,0])\n"
      "  %7: f32[3] = neg(%2)\n"
      "  %8: bool[3] = greater(%7, %2)\n"
      "  return (%6, %8, %3)\n"
      "}\n");
  EXPECT_TRUE(g.ok()) << g.status();
  return *std::move(g);
}

TEST(SerializeTest, RoundTripKeepsEveryNode) {
  Graph g = MixedGraph();
  auto bytes = Serialize(g);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  auto back = Deserialize(*bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->ToText(), g.ToText());
  EXPECT_EQ(*Serialize(*back), *bytes);
}

TEST(SerializeTest, LeNetStepRunsTheSameAfterARoundTrip) {
  auto g = LeNetTrainingStep(4);
  ASSERT_TRUE(g.ok()) << g.status();
  // A large constant the text form would print as "<N elements>" must survive in full.
  std::mt19937 rng(7);
  auto bytes = Serialize(*g);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  auto back = Deserialize(*bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  std::vector<Tensor> inputs;
  for (NodeId p : g->params()) inputs.push_back(RandomTensor(g->node(p).meta, rng, 1.0, 1000));
  auto first = CompiledGraph::Compile(*g);
  auto second = CompiledGraph::Compile(*std::move(back));
  ASSERT_TRUE(first.ok() && second.ok());
  // The step writes its weights: each run gets its own copies.
  std::vector<Tensor> a, b;
  for (const Tensor& t : inputs) {
    a.push_back(t.Contiguous());
    Tensor c = Tensor::Empty(t.shape(), t.dtype());
    std::memcpy(c.raw_data(), t.raw_data(), t.numel() * t.itemsize());
    b.push_back(c);
  }
  std::vector<Tensor> out1 = RunCompiled(*first, a), out2 = RunCompiled(*second, b);
  ASSERT_EQ(out1.size(), out2.size());
  for (size_t i = 0; i < out1.size(); ++i) {
    ASSERT_EQ(out1[i].numel(), out2[i].numel());
    EXPECT_EQ(std::memcmp(out1[i].raw_data(), out2[i].raw_data(),
                          out1[i].numel() * out1[i].itemsize()), 0);
  }
}

TEST(SerializeTest, EveryTruncationAndCorruptionIsAnErrorNotACrash) {
  auto bytes = Serialize(MixedGraph());
  ASSERT_TRUE(bytes.ok());
  for (size_t n = 0; n < bytes->size(); ++n) {
    auto g = Deserialize(bytes->substr(0, n));
    EXPECT_FALSE(g.ok()) << "a prefix of " << n << " bytes was read";
  }
  std::mt19937 rng(3);
  int failed = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string corrupt = *bytes;
    corrupt[rng() % corrupt.size()] ^= static_cast<char>(1 + rng() % 255);
    auto g = Deserialize(corrupt);  // either rejected or a graph that verifies
    if (!g.ok()) {
      ++failed;
      EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument) << g.status();
    } else {
      EXPECT_TRUE(g->Verify().ok());
    }
  }
  EXPECT_GT(failed, 1000);
  EXPECT_FALSE(Deserialize("not a graph").ok());
  EXPECT_FALSE(Deserialize(*bytes + "x").ok());
}

}  // namespace
}  // namespace pijit::graph
