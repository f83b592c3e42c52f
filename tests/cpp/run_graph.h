// Runs a compiled graph on tensors held by value, failing the test on an error.
#pragma once
#include <vector>

#include "graph/executor.h"
#include "gtest/gtest.h"

namespace pijit::graph {

inline std::vector<Tensor> RunCompiled(const CompiledGraph& c, const std::vector<Tensor>& in) {
  std::vector<const Tensor*> args;
  for (const Tensor& t : in) args.push_back(&t);
  std::vector<Tensor> out;
  const absl::Status st = c.Run(args, &out);
  EXPECT_TRUE(st.ok()) << st;
  return out;
}

}  // namespace pijit::graph
