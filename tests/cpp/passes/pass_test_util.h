// Helpers of the pass unit tests: parse a graph or fail the test.
#pragma once
#include "graph/text_parser.h"
#include "gtest/gtest.h"

namespace pijit::graph {
inline Graph ParseOrDie(const std::string& text) {
  auto g = Parse(text);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? *std::move(g) : Graph();
}
}  // namespace pijit::graph
