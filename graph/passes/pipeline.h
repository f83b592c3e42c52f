// The optimisation pipeline of captured graphs (the passes, top to bottom, are in
// pipeline.cc) and lookup of single passes by name (golden tests, debugging).
//
// In debug builds (NDEBUG not defined) Graph::Verify runs after every pass; a failure prints
// the IR before and after the pass to stderr and returns an Internal error naming the pass.
#pragma once
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "graph/passes/pass.h"

namespace pijit::graph {

struct PipelineOptions {
  // false (jit_level "O0"): no pass but dead-code removal, for debugging a graph as captured.
  bool optimize = true;
  bool fuse = true;  // matmul epilogues and elementwise fusion (generates code)
  // The fused nodes only the CPU backend runs (layer, convolution and matmul epilogues, fused
  // reductions); false (other backends): elementwise fusion alone.
  bool host_kernels = true;
  // The graph runs at other sizes than its metas say (dynamic-shape cache entries): only the
  // passes whose rewrites hold at any sizes run, elementwise fusion and dead code removal.
  bool symbolic_sizes = false;
};

absl::Status RunPipeline(Graph& g, const PipelineOptions& options = {});

// A pass by name ("simplify", "constant_folding", "cse", "dce", "epilogue", "conv_epilogue",
// "matmul_epilogue", "fusion"), or nullptr.
PassFn FindPass(absl::string_view name);
std::vector<std::string> PassNames();

// Runs `pass` and, in debug builds, verifies the result.
absl::StatusOr<bool> RunPass(absl::string_view name, PassFn pass, Graph& g);

}  // namespace pijit::graph
