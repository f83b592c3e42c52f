// Argument parsing for the Python-facing ops, shared by eager calls and capture.
#pragma once
#include <Python.h>

#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "graph/graph.h"

namespace pijit {

enum class PyOp : uint8_t {
#define PIJIT_PYOP(e, name, gop, sig) e,
#include "pijit/csrc/pyops.def"
#undef PIJIT_PYOP
};
const char* PyOpName(PyOp op);
graph::Op PyOpGraphOp(PyOp op);
// The op a Tensor method or pijit.ops function of this name performs.
bool PyOpByName(const char* name, PyOp* out);

// One call argument as the parser sees it: either a tensor (eager value or captured node)
// or a known Python object.
struct ArgView {
  bool is_tensor;
  PyObject* object;  // the Python value when !is_tensor (borrowed)
};

// A tensor operand of a parsed call: an index into the call's arguments, or a Python scalar
// that becomes a constant of the other operand's dtype.
struct Operand {
  int arg = -1;
  PyObject* scalar = nullptr;
};

struct ParsedCall {
  PyOp op;
  absl::InlinedVector<Operand, 2> operands;
  Shape ints;
  bool keepdims = false;
};

// Parses `args` (positional first, then the values of `kwnames`) for `op`. Errors are the
// TypeError/ValueError the eager call raises.
absl::StatusOr<ParsedCall> ParseCall(PyOp op, absl::Span<const ArgView> args,
                                     absl::Span<const std::string> kwnames);

// The eager application of a parsed call: `tensors[i]` is the tensor of argument i (or null).
absl::StatusOr<Tensor> ApplyEager(const ParsedCall& call, absl::Span<Tensor* const> tensors);

}  // namespace pijit
