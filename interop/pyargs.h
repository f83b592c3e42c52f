// Readers of Python call arguments for the op parsers (pyops.cc, pyops_nn.cc). Errors are
// statuses that become the TypeError/ValueError the eager call raises.
#pragma once
#include <Python.h>

#include <initializer_list>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "interop/pyops.h"

namespace pijit {
namespace pyargs {

absl::Status TypeError(const std::string& msg);
absl::Status ValueError(const std::string& msg);
bool IsInt(PyObject* o);  // an int, not a bool
absl::Status ReadInt(const char* op, const char* what, PyObject* v, int64_t* out);
// An int or a sequence of ints, appended to `out`.
absl::Status ReadInts(const char* op, const char* what, PyObject* o, Shape* out);
absl::Status ReadNumber(const char* op, const char* what, PyObject* v, double* out);
// Binds positional and keyword arguments to parameter slots (each a list of accepted names);
// the first `required` parameters must be given. slots[p] is the argument index or -1.
absl::Status Bind(const char* op, absl::Span<const ArgView> args,
                  absl::Span<const std::string> kwnames,
                  std::initializer_list<std::initializer_list<const char*>> params,
                  absl::InlinedVector<int, 4>* slots, size_t required);
// The tensor operand at `slot` (a Python scalar too when allowed).
absl::StatusOr<Operand> TensorOperand(const char* op, absl::Span<const ArgView> args, int slot,
                                      bool allow_scalar);
// The Python object at `slot`, or nullptr when absent or None; tensors are rejected.
absl::StatusOr<PyObject*> Plain(const char* op, const char* what, absl::Span<const ArgView> args,
                                int slot);
absl::Status ReadDType(const char* op, absl::Span<const ArgView> args, int slot,
                       std::optional<DType>* out);
// A 2-element Float64 tensor {a, b}.
Tensor Pair(double a, double b);
// keepdims at `slot` (absent: unchanged), which must be a bool.
absl::Status ReadKeepdims(const char* op, absl::Span<const ArgView> args, int slot, bool* out);
// A size given as positional ints, or as one int/tuple/list: args[first..npos), into `out`.
absl::Status ReadSizeArgs(const char* op, absl::Span<const ArgView> args, size_t first,
                          size_t npos, Shape* out);
// A random draw's seed at `slot` (absent or None: -1), a non-negative int.
absl::Status ReadSeed(const char* op, absl::Span<const ArgView> args, int slot, int64_t* out);
// The argument at `slot` as a sequence of tensor operands.
absl::Status ReadTensorSeq(const char* op, absl::Span<const ArgView> args, int slot,
                           absl::InlinedVector<Operand, 3>* out);

}  // namespace pyargs

// Parses a __getitem__/__setitem__ index (the argument at `slot`) into call->attrs.ints
// (EncodeIndex) and, for its index arrays, call->operands after the input; sets call->gop to
// adv_index when there are index arrays: index_py.cc.
absl::Status ParseIndex(const ArgView& index, int slot, ParsedCall* call);

// Parses the layer ops (conv2d, poolings, normalisations, one_hot, assign): pyops_nn.cc.
absl::Status ParseLayerCall(PyOp op, absl::Span<const ArgView> args,
                            absl::Span<const std::string> kwnames, ParsedCall* call);

}  // namespace pijit
