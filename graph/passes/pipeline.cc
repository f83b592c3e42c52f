#include "graph/passes/pipeline.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "graph/passes/batch_norm_affine.h"
#include "graph/passes/batch_norm_grad_expand.h"
#include "graph/passes/collective_schedule.h"
#include "graph/passes/constant_folding.h"
#include "graph/passes/conv_epilogue.h"
#include "graph/passes/cse.h"
#include "graph/passes/dce.h"
#include "graph/passes/epilogue.h"
#include "graph/passes/fused_reduce.h"
#include "graph/passes/fusion.h"
#include "graph/passes/layout_assignment.h"
#include "graph/passes/matmul_epilogue.h"
#include "graph/passes/simplify.h"
#include "kernels/errors.h"

namespace pijit::graph {
namespace {

struct NamedPass {
  const char* name;
  PassFn run;
};
constexpr NamedPass kPasses[] = {
    {"simplify", simplify::Run},
    {"constant_folding", constant_folding::Run},
    {"cse", cse::Run},
    {"dce", dce::Run},
    {"epilogue", epilogue::Run},
    {"batch_norm_affine", batch_norm_affine::Run},
    {"batch_norm_grad_expand", batch_norm_grad_expand::Run},
    {"conv_epilogue", conv_epilogue::Run},
    {"matmul_epilogue", matmul_epilogue::Run},
    {"fusion", fusion::Run},
    {"fused_reduce", fused_reduce::Run},
    {"layout_assignment", layout_assignment::Run},
    {"collective_schedule", collective_schedule::Run},
};

}  // namespace

PassFn FindPass(absl::string_view name) {
  for (const NamedPass& p : kPasses)
    if (name == p.name) return p.run;
  return nullptr;
}

std::vector<std::string> PassNames() {
  std::vector<std::string> out;
  for (const NamedPass& p : kPasses) out.push_back(p.name);
  return out;
}

absl::StatusOr<bool> RunPass(absl::string_view name, PassFn pass, Graph& g) {
#ifndef NDEBUG
  const Graph before = g;  // a copy is cheaper than printing; printed only on failure
#endif
  PIJIT_ASSIGN_OR_RETURN(bool changed, pass(g));
#ifndef NDEBUG
  if (absl::Status st = g.Verify(); !st.ok()) {
    std::string report = absl::StrCat("pass ", name, " left an invalid graph: ", st.message(),
                                      "\n--- before ", name, " ---\n", before.ToText(), "--- after ",
                                      name, " ---\n", g.ToText());
    std::fprintf(stderr, "%s", report.c_str());
    return absl::InternalError(report);
  }
#endif
  return changed;
}

namespace {

absl::Status Optimize(Graph& g, const PipelineOptions& options) {
  if (options.symbolic_sizes) {
    // Elementwise ops commute with broadcasting, so a fused loop computes its root at
    // whatever sizes its inputs have at run time (the fused node takes its shape from them);
    // the other rewrites compare sizes (reshape and broadcast elimination, folding, layer
    // epilogues choosing kernels) and would hold only at the captured ones. A fused
    // reduction decides at run time whether it can reduce without materialising, so it holds
    // at any sizes too.
    if (!options.fuse) return absl::OkStatus();
    PIJIT_RETURN_IF_ERROR(RunPass("fusion", fusion::Run, g).status());
    if (options.host_kernels) PIJIT_RETURN_IF_ERROR(RunPass("fused_reduce", fused_reduce::Run, g).status());
    return RunPass("dce", dce::Run, g).status();
  }
  // Cleanup to a fixed point: each pass exposes work for the others (folding creates
  // constants that simplify, simplify makes duplicates that cse merges).
  constexpr int kMaxRounds = 4;
  for (int round = 0; round < kMaxRounds; ++round) {
    bool changed = false;
    for (const char* name : {"simplify", "constant_folding", "cse", "dce"}) {
      PIJIT_ASSIGN_OR_RETURN(bool c, RunPass(name, FindPass(name), g));
      changed |= c;
    }
    if (!changed) break;
  }
  // Fusion last: it hides ops from the cleanup rules. dce drops the fused members. Layer,
  // convolution and matmul epilogues first (inference batch norms written as the per-channel
  // affine maps the convolution epilogue and fusion take in between), so that fusion does not take their elementwise
  // ops into loops (the layer epilogue before the convolution one: a relu it folds into
  // conv2d keeps relu's gradient masks reading the convolution); reductions then absorb the
  // fused loops (and single elementwise ops) they read.
  if (options.fuse && !options.host_kernels) {
    PIJIT_RETURN_IF_ERROR(RunPass("fusion", fusion::Run, g).status());
    return RunPass("dce", dce::Run, g).status();
  }
  if (options.fuse) {
    PIJIT_RETURN_IF_ERROR(RunPass("epilogue", epilogue::Run, g).status());
    PIJIT_RETURN_IF_ERROR(RunPass("batch_norm_affine", batch_norm_affine::Run, g).status());
    PIJIT_RETURN_IF_ERROR(RunPass("conv_epilogue", conv_epilogue::Run, g).status());
    PIJIT_RETURN_IF_ERROR(RunPass("matmul_epilogue", matmul_epilogue::Run, g).status());
    PIJIT_RETURN_IF_ERROR(RunPass("fusion", fusion::Run, g).status());
    PIJIT_RETURN_IF_ERROR(RunPass("fused_reduce", fused_reduce::Run, g).status());
    PIJIT_RETURN_IF_ERROR(RunPass("dce", dce::Run, g).status());
    // On the nodes left: dead ones would keep values in NCHW for nothing.
    PIJIT_RETURN_IF_ERROR(RunPass("layout_assignment", layout_assignment::Run, g).status());
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunPipeline(Graph& g, const PipelineOptions& options) {
  // Backends other than the host's have no kernels for batch norm's fused gradients.
  if (!options.host_kernels) {
    PIJIT_RETURN_IF_ERROR(RunPass("batch_norm_grad_expand", batch_norm_grad_expand::Run, g).status());
  }
  if (!options.optimize) return RunPass("dce", dce::Run, g).status();
  PIJIT_RETURN_IF_ERROR(Optimize(g, options));
  // Last: the executor runs the nodes in the order this leaves.
  return RunPass("collective_schedule", collective_schedule::Run, g).status();
}

}  // namespace pijit::graph
