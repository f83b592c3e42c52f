// Calls of pijit ops on values of the trace, as graph nodes (internal to bytecode/).
//
// The op bridge turns an op call (a pijit.ops function, a Tensor method or operator, a
// primitive) into one node: it parses the arguments as the eager op does (interop/pyops.h),
// makes NumPy scalars, index lists and Python scalars constants of the graph (a Python scalar
// in the dtype of the tensor it meets), and makes a dynamic number next to a floating tensor a
// graph input instead of a guarded constant. Arithmetic on such numbers themselves becomes
// graph nodes too (NumberArith).
//
// It keeps no state. What it needs of the interpreter is its public surface: Fail to stop the
// capture with a reason, UseConst to guard a value the graph depends on, AsPyObject for known
// values, the graph and the value model.
#pragma once
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "bytecode/capture.h"
#include "bytecode/value.h"
#include "interop/pyops.h"

namespace pijit::bytecode {

class Interp;
class ValueModel;

class OpBridge {
 public:
  explicit OpBridge(Interp& trace) : trace_(trace) {}

  // op(*args) with the last kwnames.size() arguments by keyword: *out is the op's node.
  bool Call(PyOp op, const ValueList& args, const std::vector<std::string>& kwnames, Value* out);
  // a <op> b for a binary operator where a or b is a tensor: the other must be a tensor or a
  // Python or NumPy scalar, and a Tensor subclass must not override the operator.
  bool Operator(PyOp op, const Value& a, const Value& b, Value* out);
  // Tensor.astype(dtype) on a captured tensor (args: the tensor, then the dtype).
  bool Cast(const ValueList& args, const std::vector<std::string>& names, Value* out);
  // a (+, -, *, /) b on Python numbers (`base`: the BINARY_OP operator, not in place),
  // computed by the graph when one side is a number the graph computes and Python would give
  // the same result; false (nothing done) otherwise.
  bool NumberArith(int base, const Value& a, const Value& b, Value* out);

 private:
  bool NumpyScalarsAsConstants(ValueList* args, absl::InlinedVector<PyObject*, 4>* numbers);
  // The interpreter's surface the bridge uses.
  void Fail(BreakCategory category, std::string explanation, std::string hint = "");
  void FailNode(absl::Span<const graph::NodeId> inputs, const graph::Attrs& attrs,
                const absl::Status& status);
  void UseConst(const Value& v);
  PyObject* AsPyObject(const Value& v);
  graph::Graph& g();
  ValueModel& values();

  Interp& trace_;
};

}  // namespace pijit::bytecode
