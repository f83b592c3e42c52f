// Argument parsing for the Python-facing ops, shared by eager calls and capture.
//
// A call is parsed from ArgViews, which say for each argument whether it is a tensor (an
// eager value or a captured graph node: the parser never looks inside) or a known Python
// object. The result names the tensor operands by argument position, so the eager binding
// and capture each resolve them to their own values (Tensors, graph nodes).
#pragma once
#include <Python.h>

#include <string>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "graph/graph.h"

namespace pijit {

enum class PyOp : uint8_t {
#define PIJIT_PYOP(e, name, gop, sig, surface) e,
#include "interop/pyops.def"
#undef PIJIT_PYOP
};
inline constexpr size_t kNumPyOps = 0
#define PIJIT_PYOP(e, name, gop, sig, surface) +1
#include "interop/pyops.def"
#undef PIJIT_PYOP
    ;
const char* PyOpName(PyOp op);
graph::Op PyOpGraphOp(PyOp op);
bool PyOpIsMethod(PyOp op);    // a Tensor method
bool PyOpIsFunction(PyOp op);  // a pijit.ops function
// Elementwise ops whose positional call with tensor operands (and, for binary ones, Python
// scalars) parses to the graph op alone, with no attributes: the direct eager path's ops.
enum class PyOpArity : uint8_t { kOther, kUnary, kBinary, kBinaryTensorsOnly };
PyOpArity PyOpElementwiseArity(PyOp op);
// The op the Tensor method of this name performs.
bool PyOpByName(const char* name, PyOp* out);
// Tensor methods that are other names of an op's method (MindSpore's and torch's spellings):
// {alias, method}.
inline constexpr std::pair<const char*, const char*> kMethodAliases[] = {
    {"view", "reshape"}, {"amin", "min"}, {"amax", "max"}};

// One call argument as the parser sees it.
//  - a tensor: is_tensor (object unused);
//  - a sequence holding tensors (a list or tuple argument of concat/stack): is_seq, with one
//    view per item in `items` (items are tensors or Python objects, not nested sequences);
//  - any other Python value: object (borrowed).
// The eager binding makes a sequence view of every list/tuple argument that holds a tensor.
// Capture passes tensors inside sequences the same way (a sequence view whose items are
// graph nodes); a sequence argument given as a plain Python object is read by the parser.
//  - a NumPy scalar is a tensor operand (is_tensor) whose `number` is the Python number it
//    holds, for parameters that take a number (an axis, a size, a fill value).
struct ArgView {
  bool is_tensor = false;
  PyObject* object = nullptr;
  PyObject* number = nullptr;  // borrowed
  bool is_seq = false;
  bool is_list = false;  // a sequence view of a list (not a tuple)
  absl::Span<const ArgView> items;
};

// A tensor operand of a parsed call, in the graph op's input order:
//  - argument `arg` (a tensor), or item `item` of the sequence argument `arg`;
//  - or a Python scalar (`scalar` set, arg = -1) that becomes a 0-d constant of the dtype
//    NumPy's weak-scalar rule gives next to operand `like` (ScalarOperand in convert.h);
//  - or an index array given as a Python object (`array` set, arg = -1: a list, a bool or a
//    NumPy array) that becomes an Int64 or Bool constant (IndexArrayTensor in convert.h).
struct Operand {
  int arg = -1;
  int item = -1;
  PyObject* scalar = nullptr;
  int scalar_arg = -1;  // the argument `scalar` came from
  int like = -1;
  PyObject* array = nullptr;
};

struct ParsedCall {
  PyOp op;
  graph::Op gop;  // the graph op: PyOpGraphOp(op) unless an argument selects a variant
                  // (batch_norm(training=True) is batch_norm_train)
  absl::InlinedVector<Operand, 3> operands;
  graph::Attrs attrs;  // the graph node's attributes (graph/ops.def)
};

// Parses `args` (positional first, then the values of `kwnames`) for `op`. Errors are the
// TypeError/ValueError the eager call raises.
absl::StatusOr<ParsedCall> ParseCall(PyOp op, absl::Span<const ArgView> args,
                                     absl::Span<const std::string> kwnames);

// The eager application of a parsed call: `operands[i]` is the tensor of call.operands[i]
// (null for a scalar or array operand).
absl::StatusOr<Tensor> ApplyEager(const ParsedCall& call, absl::Span<const Tensor* const> operands);
// The tensors of a parsed call's scalar and array operands (the constants ApplyEager uses),
// in `constants`; `out[i]` points at operand i's tensor.
absl::Status ResolveOperands(const ParsedCall& call, absl::Span<const Tensor* const> operands,
                             absl::InlinedVector<Tensor, 3>* constants,
                             absl::InlinedVector<const Tensor*, 3>* out);

// The pijit.ops builtins, by PyOp (runtime/eager_ops.h defines them): registered when the
// module initialises, so that capture can tell which op a builtin performs.
void RegisterOpFunctions(absl::Span<const PyMethodDef> defs);
// The op a pijit.ops builtin performs; false for any other object.
bool PyOpOfBuiltin(PyObject* fn, PyOp* out);

}  // namespace pijit
