// Golden IR tests: every tests/ir/<dir>/*.txt file is one test.
//
//   # what the test shows (comment lines before the first section)
//   --- Pipeline ---      (optional; default: the pass named like the directory)
//   simplify              (pass names, one per line, run in order; "pipeline" runs the
//   dce                    whole RunPipeline)
//   --- Input ---
//   graph(...) { ... }
//   --- Expected ---
//   graph(...) { ... }    (exactly what Graph::ToText prints after the passes)
//
// Besides the text, each test runs the input and the result on the same pseudo-random
// inputs (with -0.0, 0 and 1 among them) and checks that the outputs are bit-identical
// (within kFusedExpRelTol when the result has fused exp, kMatMulEpilogueRelTol when a
// fused_matmul or fused_conv2d applies gelu, tanh or sigmoid), and runs the result on both
// backends (graph/backend.h) expecting the same values. PIJIT_UPDATE_GOLDEN=1 rewrites the
// Expected sections from the current output instead of comparing.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "graph/backend.h"
#include "graph/executor.h"
#include "graph/passes/pipeline.h"
#include "graph/text_parser.h"
#include "gtest/gtest.h"
#include "kernels/comm/comm.h"
#include "tests/cpp/random_tensor.h"

namespace pijit::graph {
namespace {

namespace fs = std::filesystem;

struct GoldenFile {
  fs::path path;
  std::string name;  // test name: <dir>_<stem>
};

void PrintTo(const GoldenFile& f, std::ostream* os) { *os << f.path.string(); }

std::vector<GoldenFile> Discover() {
  std::vector<GoldenFile> out;
  fs::path root(PIJIT_IR_TEST_DIR);
  if (!fs::exists(root)) return out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (!e.is_regular_file() || e.path().extension() != ".txt") continue;
    std::string name = e.path().parent_path().filename().string() + "_" + e.path().stem().string();
    for (char& c : name)
      if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    out.push_back({e.path(), name});
  }
  std::sort(out.begin(), out.end(),
            [](const GoldenFile& a, const GoldenFile& b) { return a.name < b.name; });
  return out;
}

struct Sections {
  std::vector<std::string> pipeline;
  std::string input, expected;
  std::string head;  // everything before "--- Expected ---", kept when updating
};

absl::StatusOr<Sections> Split(const std::string& text, const std::string& default_pass) {
  Sections s;
  std::string* cur = nullptr;
  std::string pipeline;
  bool in_expected = false;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    absl::string_view t = absl::StripAsciiWhitespace(line);
    if (t == "--- Pipeline ---") cur = &pipeline;
    else if (t == "--- Input ---") cur = &s.input;
    else if (t == "--- Expected ---") cur = &s.expected, in_expected = true;
    else if (cur) absl::StrAppend(cur, line, "\n");
    if (!in_expected) absl::StrAppend(&s.head, line, "\n");
  }
  for (absl::string_view p : absl::StrSplit(pipeline, absl::ByAnyChar(" ,\n"), absl::SkipEmpty()))
    s.pipeline.emplace_back(p);
  if (s.pipeline.empty()) s.pipeline.push_back(default_pass);
  while (!s.expected.empty() && std::isspace(static_cast<unsigned char>(s.expected.back())))
    s.expected.pop_back();
  if (!s.expected.empty()) s.expected += "\n";
  if (s.input.empty()) return absl::InvalidArgumentError("no --- Input --- section");
  return s;
}

// Deterministic inputs: mostly values in [-4, 4], with exact -0.0, 0 and 1 mixed in.
Tensor MakeInput(const TensorMeta& m, std::mt19937& rng) { return RandomTensor(m, rng, 4, 10); }

// Whether a fused_matmul or fused_conv2d applies an activation that oneDNN approximates
// (gelu, tanh, sigmoid).
bool HasApproximateEpilogue(const Graph& g) {
  for (const Node& n : g.nodes()) {
    if (n.op != Op::kFusedMatMul && n.op != Op::kFusedConv2D) continue;
    absl::Span<const int64_t> post(n.ints);
    if (n.op == Op::kFusedConv2D) post.remove_prefix(std::min(post.size(), kWindowInts));
    for (int64_t p : post)
      if (MatMulPostIsApproximated(p)) return true;
  }
  return false;
}

bool HasFusedExp(const Graph& g) {
  for (const Node& n : g.nodes())
    if ((n.op == Op::kFused || n.op == Op::kFusedReduce) &&
        n.program->ToText().find("exp") != std::string::npos)
      return true;
  return false;
}

// Outputs `x` and `y` agree element by element: bit for bit, both NaN, within `rel_tol` of
// |x|, or within `tol` of max(1, |x|). `xs`/`ys` name the sides in failures.
void ExpectClose(const std::vector<Tensor>& xs_out, const std::vector<Tensor>& ys_out, double rel_tol,
                 double tol, const char* xs, const char* ys) {
  ASSERT_EQ(xs_out.size(), ys_out.size());
  for (size_t i = 0; i < xs_out.size(); ++i) {
    ASSERT_TRUE(MetaOf(xs_out[i]) == MetaOf(ys_out[i])) << "output " << i;
    Tensor x = xs_out[i].Contiguous(), y = ys_out[i].Contiguous();
    DispatchDType(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      for (int64_t k = 0; k < x.numel(); ++k) {
        T a = x.data<T>()[k], b = y.data<T>()[k];
        if (std::memcmp(&a, &b, sizeof(T)) == 0) continue;
        if constexpr (std::is_floating_point_v<T>) {
          if (std::isnan(a) && std::isnan(b)) continue;
          if (rel_tol > 0 && std::abs(a - b) <= rel_tol * std::abs(a)) continue;
          if (std::abs(a - b) <= tol * std::max<double>(1, std::abs(a))) continue;
        }
        ADD_FAILURE() << "output " << i << " element " << k << ": " << +a << " " << xs << ", " << +b
                      << " " << ys;
        return;
      }
    });
  }
}

// Inputs for `g` drawn from `seed`: each run gets its own, equal ones (a graph may write its
// inputs in place: assign, training batch norm).
std::vector<Tensor> FreshInputs(const Graph& g, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<Tensor> inputs;
  for (NodeId p : g.params()) inputs.push_back(MakeInput(g.node(p).meta, rng));
  return inputs;
}

std::vector<const Tensor*> Pointers(const std::vector<Tensor>& inputs) {
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : inputs) ptrs.push_back(&t);
  return ptrs;
}

// Outputs of `before` and `after` on the same inputs agree.
void ExpectSameValues(const Graph& before, const Graph& after) {
  ASSERT_EQ(before.params().size(), after.params().size());
  ASSERT_TRUE(comm::Init().ok());  // collectives run in a world of this one process
  const std::vector<Tensor> in_before = FreshInputs(before, 1234), in_after = FreshInputs(before, 1234);
  CompileOptions raw;
  raw.optimize = false;
  auto cb = CompiledGraph::Compile(before, raw);
  auto ca = CompiledGraph::Compile(after, raw);
  ASSERT_TRUE(cb.ok() && ca.ok());
  std::vector<Tensor> ob, oa;
  ASSERT_TRUE(cb->Run(Pointers(in_before), &ob).ok());
  ASSERT_TRUE(ca->Run(Pointers(in_after), &oa).ok());
  ASSERT_EQ(ob.size(), oa.size());
  // Relative tolerances; the epilogue's is absolute below 1 (gelu's tiny negative tail).
  ExpectClose(ob, oa, HasFusedExp(after) ? 4e-7 : 0,
              HasApproximateEpilogue(after) ? kMatMulEpilogueRelTol : 0, "before", "after");
}

// The backends (graph/backend.h) agree on `g`: the reference backend runs fused programs
// through the interpreter and float32 products through plain loops, which round differently
// from generated code and oneDNN by a few ulps (relative to the larger of 1 and the value:
// sums that cancel).
constexpr double kBackendTol = 1e-5;
void ExpectBackendsAgree(const Graph& g) {
  std::vector<Tensor> outs[2];
  const Backend* backends[2] = {&CpuBackend(), &ReferenceBackend()};
  for (int k = 0; k < 2; ++k) {
    CompileOptions raw;
    raw.optimize = false;
    raw.backend = backends[k];
    auto c = CompiledGraph::Compile(g, raw);
    ASSERT_TRUE(c.ok()) << c.status();
    ASSERT_EQ(&c->backend(), backends[k]);
    const std::vector<Tensor> inputs = FreshInputs(g, 4321);
    ASSERT_TRUE(c->Run(Pointers(inputs), &outs[k]).ok());
  }
  ExpectClose(outs[0], outs[1], 0, kBackendTol, "on cpu", "on reference");
}

TEST(BackendTest, NamesAndDefault) {
  EXPECT_EQ(BackendByName("cpu"), &CpuBackend());
  EXPECT_EQ(BackendByName("reference"), &ReferenceBackend());
  // "cuda" names the GPU backend in builds that have it (graph/backend_cuda.cc).
  EXPECT_EQ(BackendByName("cuda"), CudaBackend());
  EXPECT_EQ(BackendByName("tpu"), nullptr);
  EXPECT_STREQ(ReferenceBackend().name(), "reference");
}

class IrGoldenTest : public ::testing::TestWithParam<GoldenFile> {};

TEST_P(IrGoldenTest, MatchesExpected) {
  const GoldenFile& f = GetParam();
  std::ifstream in(f.path);
  std::stringstream buf;
  buf << in.rdbuf();
  auto sections = Split(buf.str(), f.path.parent_path().filename().string());
  ASSERT_TRUE(sections.ok()) << f.path << ": " << sections.status();
  auto parsed = Parse(sections->input);
  ASSERT_TRUE(parsed.ok()) << f.path << ": input: " << parsed.status();
  Graph g = *parsed;
  for (const std::string& name : sections->pipeline) {
    if (name == "pipeline") {
      absl::Status st = RunPipeline(g);
      ASSERT_TRUE(st.ok()) << st;
      continue;
    }
    PassFn pass = FindPass(name);
    ASSERT_NE(pass, nullptr) << f.path << ": unknown pass " << name;
    auto changed = RunPass(name, pass, g);
    ASSERT_TRUE(changed.ok()) << changed.status();
  }
  ASSERT_TRUE(g.Verify().ok()) << g.Verify();
  const std::string got = g.ToText();
  if (std::getenv("PIJIT_UPDATE_GOLDEN")) {
    std::ofstream(f.path) << sections->head << "--- Expected ---\n" << got;
  } else {
    EXPECT_EQ(got, sections->expected) << f.path;
  }
  ExpectSameValues(*parsed, g);
  ExpectBackendsAgree(g);
}

TEST(IrGoldenTest, FindsTestFiles) { EXPECT_FALSE(Discover().empty()) << PIJIT_IR_TEST_DIR; }

INSTANTIATE_TEST_SUITE_P(Files, IrGoldenTest, ::testing::ValuesIn(Discover()),
                         [](const ::testing::TestParamInfo<GoldenFile>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace pijit::graph
