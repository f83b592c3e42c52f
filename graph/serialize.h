// A binary form of a graph that holds every attribute and every constant in full, so that a
// graph written by one process is rebuilt by another (pijit.export / pijit.load):
// Deserialize(Serialize(g)) has g's params, nodes (op, inputs, attributes, constants) and
// outputs, each node's meta inferred again and checked against the one written.
//
// Layout (little-endian): the magic "PIJITG\x01\x00", then the node count, then per node its op
// name, its inputs, its meta (dtype short name and shape), and for ops the attributes (ints,
// keepdims, attr, the optional dtype, the optional value tensor); a constant is its value
// tensor; then the outputs. A tensor is its dtype short name, shape and contiguous bytes. Ops
// and dtypes are written by name, so that adding ops or dtypes keeps old files readable.
//
// Graphs with fused programs or control-flow regions are refused (a graph is serialized
// before optimisation: the loader compiles it). Deserialize reports any malformed input as
// InvalidArgument naming the byte offset; it never reads past the end.
#pragma once
#include <string>
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/graph.h"

namespace pijit::graph {

absl::StatusOr<std::string> Serialize(const Graph& g);
absl::StatusOr<Graph> Deserialize(absl::string_view bytes);

}  // namespace pijit::graph
