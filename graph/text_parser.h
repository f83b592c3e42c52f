// Parses the text form of the IR that Graph::ToText prints (see graph/graph.h), so that
// Parse(g.ToText())->ToText() == g.ToText() for every graph whose constants print in full.
//
//   graph(%0: f32[4], %2: f32[4]) {
//     %1: f32[] = constant(0.5)
//     %3: f32[4] = mul(%0, %1)
//     %4: f32[4] = sum(%3, axes=[0], keepdims=false)
//     return (%3, %4)
//   }
//
// Rules: the ids of the header's params and the body's nodes are together exactly 0..N-1,
// each listed in increasing order; a node uses only smaller ids; each declared meta must equal
// what the op infers from its inputs. Attributes: axes=[..] and keepdims=true|false
// (sum/mean, default [] and false), shape=[..] (reshape), perm=[..] (transpose, default
// reversed), program="..." (fused, see kernels/fused.h). A constant takes one literal (a
// scalar, or a splat over its declared shape) or a list of every element in row-major order;
// "<N elements>" (what the printer writes for large constants) cannot be parsed. A control-flow
// node (while_loop, while_grad, cond, cond_grad: graph/control_flow.h) writes its graphs in
// braces after its attributes, each in this same form.
// Text after '#' up to the end of a line is a comment.
//
// Errors are InvalidArgument with the line and column: "line 3, column 14: ...".
#pragma once
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/graph.h"

namespace pijit::graph {

absl::StatusOr<Graph> Parse(absl::string_view text);

}  // namespace pijit::graph
