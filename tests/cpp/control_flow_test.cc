// while_loop, while_grad, cond and cond_grad (graph/control_flow.h): text form, verification,
// passes, execution against C++ control flow, and gradients against central differences.
#include "graph/control_flow.h"

#include <cmath>
#include <string>
#include <vector>

#include "graph/autodiff.h"
#include "graph/executor.h"
#include "graph/passes/pipeline.h"
#include "graph/text_parser.h"
#include "gtest/gtest.h"
#include "tests/cpp/run_graph.h"

namespace pijit::graph {
namespace {

// while sum(x) < n: x = step(x, a); then x * x   (x: f64[3] carried; n: f64[] and a: f64[3]
// invariants). `step` is the body's %3..%5 from x (%0) and a (%2), %5 the next x.
std::string CarriedLoop(const char* step) {
  return std::string(
             "graph(%0: f64[3], %1: f64[], %2: f64[3]) {\n"
             "  %3: f64[] = sum(%0, axes=[], keepdims=false)\n"
             "  %4: bool[] = less(%3, %1)\n"
             "  %5: bool[] = while_loop(%4, %0, %1, %2, carried=1) {\n"
             "    graph(%0: f64[3], %1: f64[], %2: f64[3]) {\n") +
         step +
         "      %6: f64[] = sum(%5, axes=[], keepdims=false)\n"
         "      %7: bool[] = less(%6, %1)\n"
         "      return (%5, %7)\n"
         "    }\n"
         "  }\n"
         "  %6: f64[3] = result(%5, index=0)\n"
         "  %7: f64[3] = mul(%6, %6)\n"
         "  return (%7)\n"
         "}\n";
}

// while sum(x) < n: x = x * a + 0.25
const std::string kLoop = CarriedLoop(
    "      %3: f64[3] = mul(%0, %2)\n"
    "      %4: f64[] = constant(0.25)\n"
    "      %5: f64[3] = add(%3, %4)\n");

Tensor Vec(std::vector<double> v) {
  Tensor t = Tensor::Empty({static_cast<int64_t>(v.size())}, DType::kFloat64);
  for (size_t i = 0; i < v.size(); ++i) t.data<double>()[i] = v[i];
  return t;
}

Tensor Num(double v) {
  Tensor t = Tensor::Empty({}, DType::kFloat64);
  *t.data<double>() = v;
  return t;
}

std::vector<double> Values(const Tensor& t) {
  Tensor c = t.Contiguous();
  return std::vector<double>(c.data<double>(), c.data<double>() + c.numel());
}

// Each `analytic[w]`, the gradient of sum(s * forward(inputs)[0]) with respect to input
// `wrt[w]` (a vector), against central differences.
void ExpectCentralDifferences(const CompiledGraph& forward, const std::vector<Tensor>& inputs,
                              const std::vector<double>& s, const std::vector<int>& wrt,
                              const std::vector<Tensor>& analytic, const std::string& where) {
  auto objective = [&](const std::vector<Tensor>& in) {
    const std::vector<double> y = Values(RunCompiled(forward, in)[0]);
    double total = 0;
    for (size_t i = 0; i < s.size(); ++i) total += s[i] * y[i];
    return total;
  };
  ASSERT_EQ(analytic.size(), wrt.size());
  for (size_t w = 0; w < wrt.size(); ++w) {
    const std::vector<double> got = Values(analytic[w]), base = Values(inputs[wrt[w]]);
    for (size_t i = 0; i < base.size(); ++i) {
      const double h = 1e-6;
      std::vector<double> up = base, down = base;
      up[i] += h;
      down[i] -= h;
      std::vector<Tensor> plus = inputs, minus = inputs;
      plus[wrt[w]] = Vec(up);
      minus[wrt[w]] = Vec(down);
      const double numeric = (objective(plus) - objective(minus)) / (2 * h);
      EXPECT_FALSE(std::isnan(got[i])) << where;
      EXPECT_NEAR(got[i], numeric, 1e-5 * std::max(1.0, std::abs(numeric)))
          << "input " << wrt[w] << "[" << i << "] " << where;
    }
  }
}

// Makes g's outputs the gradients of sum(seed * its output) with respect to its params
// `wrt`, the seed a new last param, and checks that the result verifies and holds `grad_op`.
void SetGradientOutputs(Graph& g, const std::vector<int>& wrt, const std::string& grad_op) {
  const NodeId out = g.outputs()[0];
  std::vector<NodeId> params;
  for (int p : wrt) params.push_back(g.params()[p]);
  const NodeId seed = g.AddParam(g.node(out).meta);
  auto grads = AppendBackward(g, {out}, {seed}, params);
  ASSERT_TRUE(grads.ok()) << grads.status();
  g.SetOutputs(*grads);
  ASSERT_TRUE(g.Verify().ok()) << g.Verify() << "\n" << g.ToText();
  EXPECT_NE(g.ToText().find(grad_op + "("), std::string::npos);
}

void ExpectRoundTrip(const std::string& text) {
  auto g = Parse(text);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(g->Verify().ok()) << g->Verify();
  EXPECT_EQ(g->ToText(), text);
}

// The same loop in C++: (x*x after the loop, the number of trips).
std::vector<double> Reference(std::vector<double> x, double n, const std::vector<double>& a, int* trips) {
  *trips = 0;
  auto sum = [&] { return x[0] + x[1] + x[2]; };
  while (sum() < n) {
    for (size_t i = 0; i < 3; ++i) x[i] = x[i] * a[i] + 0.25;
    ++*trips;
  }
  for (double& v : x) v *= v;
  return x;
}

TEST(ControlFlowTest, RunsZeroOneAndManyTripsAsACLoop) {
  auto g = Parse(kLoop);
  ASSERT_TRUE(g.ok()) << g.status();
  for (bool optimize : {false, true}) {
    CompileOptions options;
    options.optimize = optimize;
    auto c = CompiledGraph::Compile(*g, options);
    ASSERT_TRUE(c.ok()) << c.status();
    const std::vector<double> a = {1.5, 1.25, 2.0};
    for (double n : {-1.0, 1.2, 40.0}) {
      const std::vector<double> x = {0.1, 0.2, 0.3};
      int trips = 0;
      const std::vector<double> want = Reference(x, n, a, &trips);
      Tensor got = RunCompiled(*c, {Vec(x), Num(n), Vec(a)})[0].Contiguous();
      for (int i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(got.data<double>()[i], want[i]) << "n=" << n << " trips=" << trips;
      if (n == -1.0) {
        EXPECT_EQ(trips, 0);
      } else if (n == 40.0) {
        EXPECT_GT(trips, 3);
      }
    }
  }
}

TEST(ControlFlowTest, GradientsMatchCentralDifferences) {
  auto parsed = Parse(kLoop);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  Graph g = *parsed;
  ASSERT_NO_FATAL_FAILURE(SetGradientOutputs(g, {0, 2}, "while_grad"));
  auto forward = CompiledGraph::Compile(*parsed);
  ASSERT_TRUE(forward.ok()) << forward.status();
  for (bool optimize : {false, true}) {
    CompileOptions options;
    options.optimize = optimize;
    auto back = CompiledGraph::Compile(g, options);
    ASSERT_TRUE(back.ok()) << back.status() << "\n" << g.ToText();
    for (double n : {-1.0, 1.3, 25.0}) {
      const std::vector<Tensor> in = {Vec({0.1, 0.2, 0.3}), Num(n), Vec({1.5, 1.25, 2.0})};
      const std::vector<double> s = {0.5, -1.0, 2.0};
      std::vector<Tensor> args = in;
      args.push_back(Vec(s));
      ExpectCentralDifferences(*forward, in, s, {0, 2}, RunCompiled(*back, args),
                               "n=" + std::to_string(n) + (optimize ? " optimised" : ""));
    }
  }
}

// while sum(x) < n: x = tanh(x) * a + x   (tanh's gradient reads a residual of the trip)
const std::string kTanhLoop = CarriedLoop(
    "      %3: f64[3] = tanh(%0)\n"
    "      %4: f64[3] = mul(%3, %2)\n"
    "      %5: f64[3] = add(%4, %0)\n");

TEST(ControlFlowTest, TheLoopKeepsItsTripsForOneGradientAndASecondRunsThemAgain) {
  auto parsed = Parse(kTanhLoop);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  Graph g = *parsed;
  const NodeId out = g.outputs()[0];
  NodeId loop = -1;
  for (size_t id = 0; id < g.nodes().size(); ++id)
    if (g.node(static_cast<NodeId>(id)).op == Op::kWhileLoop) loop = static_cast<NodeId>(id);
  const NodeId seed = g.AddParam(g.node(out).meta);
  auto first = AppendBackward(g, {out}, {seed}, {g.params()[0]});
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = AppendBackward(g, {out}, {seed}, {g.params()[0]});
  ASSERT_TRUE(second.ok()) << second.status();
  std::vector<NodeId> grads_of;
  for (size_t id = 0; id < g.nodes().size(); ++id)
    if (g.node(static_cast<NodeId>(id)).op == Op::kWhileGrad) grads_of.push_back(g.node(static_cast<NodeId>(id)).inputs[0]);
  ASSERT_EQ(grads_of.size(), 2u);
  EXPECT_EQ(grads_of[0], loop);  // reads the loop's kept trips
  EXPECT_NE(grads_of[1], loop);  // runs the trips again from the stay condition
  g.SetOutputs({(*first)[0], (*second)[0]});
  ASSERT_TRUE(g.Verify().ok()) << g.Verify() << "\n" << g.ToText();
  auto c = CompiledGraph::Compile(g);
  ASSERT_TRUE(c.ok()) << c.status();
  for (double n : {-1.0, 1.3, 25.0}) {
    const std::vector<Tensor> in = {Vec({0.1, 0.2, 0.3}), Num(n), Vec({1.5, 1.25, 2.0})};
    const std::vector<double> s = {0.5, -1.0, 2.0};
    std::vector<Tensor> args = in;
    args.push_back(Vec(s));
    std::vector<Tensor> got = RunCompiled(*c, args);
    EXPECT_EQ(Values(got[0]), Values(got[1])) << "n=" << n;
    auto forward = CompiledGraph::Compile(*parsed);
    ASSERT_TRUE(forward.ok()) << forward.status();
    ExpectCentralDifferences(*forward, in, s, {0}, {got[0]}, "n=" + std::to_string(n));
  }
}

TEST(ControlFlowTest, PassesKeepLoopsApartAndUnfolded) {
  // Two loops over the same inputs with different bodies must not merge; a loop over
  // constants is not folded; a loop whose results nobody reads goes.
  const std::string body_mul =
      "    graph(%0: f64[3]) {\n"
      "      %1: f64[] = constant(2)\n"
      "      %2: f64[3] = mul(%0, %1)\n"
      "      %3: f64[] = sum(%2, axes=[], keepdims=false)\n"
      "      %4: f64[] = constant(10)\n"
      "      %5: bool[] = less(%3, %4)\n"
      "      return (%2, %5)\n"
      "    }\n";
  std::string body_add = body_mul;
  body_add.replace(body_add.find("mul("), 4, "add(");
  const std::string text =
      "graph(%0: f64[3]) {\n"
      "  %1: bool[] = constant(true)\n"
      "  %2: bool[] = while_loop(%1, %0, carried=1) {\n" + body_mul + "  }\n"
      "  %3: f64[3] = result(%2, index=0)\n"
      "  %4: bool[] = while_loop(%1, %0, carried=1) {\n" + body_add + "  }\n"
      "  %5: f64[3] = result(%4, index=0)\n"
      "  %6: bool[] = while_loop(%1, %0, carried=1) {\n" + body_add + "  }\n"
      "  return (%3, %5)\n"
      "}\n";
  auto g = Parse(text);
  ASSERT_TRUE(g.ok()) << g.status();
  Graph optimised = *g;
  ASSERT_TRUE(RunPipeline(optimised, {}).ok());
  const std::string after = optimised.ToText();
  size_t loops = 0;
  for (size_t at = after.find("while_loop("); at != std::string::npos; at = after.find("while_loop(", at + 1)) ++loops;
  EXPECT_EQ(loops, 2u) << after;
  auto c = CompiledGraph::Compile(*g);
  ASSERT_TRUE(c.ok()) << c.status();
  std::vector<Tensor> out = RunCompiled(*c, {Vec({1, 1, 1})});
  // x*2 until the sum reaches 10: 3 -> 6 -> 12; x+2: 3 -> 9 -> 15.
  EXPECT_DOUBLE_EQ(out[0].Contiguous().data<double>()[0], 4.0);
  EXPECT_DOUBLE_EQ(out[1].Contiguous().data<double>()[0], 5.0);
}

TEST(ControlFlowTest, BodyOfAnotherMetaIsRejected) {
  const std::string text =
      "graph(%0: f64[3]) {\n"
      "  %1: bool[] = constant(true)\n"
      "  %2: bool[] = while_loop(%1, %0, carried=1) {\n"
      "    graph(%0: f64[3]) {\n"
      "      %1: f64[] = sum(%0, axes=[], keepdims=false)\n"
      "      %2: bool[] = constant(false)\n"
      "      return (%1, %2)\n"
      "    }\n"
      "  }\n"
      "  return (%2)\n"
      "}\n";
  auto g = Parse(text);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(std::string(g.status().message()).find("the body's result list"), std::string::npos) << g.status();
}

// if sum(x) > 0: (sqrt(x) * a, its sum) else: (x * 0, mean(a)): the branches read both operands and
// give results of their own shapes; the untaken branch's NaNs (sqrt of negatives) must reach
// neither the results nor the gradients.
const char kCond[] =
    "graph(%0: f64[3], %1: f64[3]) {\n"
    "  %2: f64[] = sum(%0, axes=[], keepdims=false)\n"
    "  %3: f64[] = constant(0)\n"
    "  %4: bool[] = greater(%2, %3)\n"
    "  %5: bool[] = cond(%4, %0, %1) {\n"
    "    graph(%0: f64[3], %1: f64[3]) {\n"
    "      %2: f64[3] = sqrt(%0)\n"
    "      %3: f64[3] = mul(%2, %1)\n"
    "      %4: f64[] = sum(%3, axes=[], keepdims=false)\n"
    "      return (%3, %4)\n"
    "    }\n"
    "    graph(%0: f64[3], %1: f64[3]) {\n"
    "      %2: f64[] = constant(0)\n"
    "      %3: f64[3] = mul(%0, %2)\n"
    "      %4: f64[] = mean(%1, axes=[], keepdims=false)\n"
    "      return (%3, %4)\n"
    "    }\n"
    "  }\n"
    "  %6: f64[3] = result(%5, index=0)\n"
    "  %7: f64[] = result(%5, index=1)\n"
    "  %8: f64[3] = mul(%6, %7)\n"
    "  return (%8)\n"
    "}\n";

TEST(ControlFlowTest, CondRunsOnlyTheTakenBranchAndItsGradient) {
  auto parsed = Parse(kCond);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  auto forward = CompiledGraph::Compile(*parsed);
  ASSERT_TRUE(forward.ok()) << forward.status();
  Graph g = *parsed;
  ASSERT_NO_FATAL_FAILURE(SetGradientOutputs(g, {0, 1}, "cond_grad"));
  auto back = CompiledGraph::Compile(g);
  ASSERT_TRUE(back.ok()) << back.status();
  const std::vector<double> a = {0.5, -1.5, 2.0}, s = {1.0, -0.5, 0.25};
  for (const std::vector<double>& x : {std::vector<double>{1.0, 4.0, 0.25}, std::vector<double>{-1.0, -4.0, 2.0}}) {
    const bool taken = x[0] + x[1] + x[2] > 0;
    // The C++ reference of the forward.
    std::vector<double> r(3);
    double k = 0;
    for (int i = 0; i < 3; ++i) r[i] = taken ? std::sqrt(x[i]) * a[i] : 0.0;
    for (int i = 0; i < 3; ++i) k += taken ? r[i] : 0.0;
    if (!taken) k = (a[0] + a[1] + a[2]) / 3;
    Tensor y = RunCompiled(*forward, {Vec(x), Vec(a)})[0].Contiguous();
    for (int i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(y.data<double>()[i], r[i] * k) << "taken=" << taken;
    ExpectCentralDifferences(*forward, {Vec(x), Vec(a)}, s, {0, 1}, RunCompiled(*back, {Vec(x), Vec(a), Vec(s)}),
                             taken ? "taken" : "not taken");
  }
}

TEST(ControlFlowTest, BranchesOfOtherResultMetasAreRejected) {
  std::string text = kCond;
  const std::string mean = "      %4: f64[] = mean(%1, axes=[], keepdims=false)\n";
  text.replace(text.find(mean), mean.size(), "      %4: f64[1] = mean(%1, axes=[], keepdims=true)\n");
  auto g = Parse(text);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(std::string(g.status().message()).find("the false branch's result list 1"), std::string::npos) << g.status();
}

TEST(ControlFlowTest, TextRoundTripsAndVerifies) {
  ExpectRoundTrip(kLoop);
  ExpectRoundTrip(kTanhLoop);
  ExpectRoundTrip(kCond);
}

}  // namespace
}  // namespace pijit::graph
