#include "interop/pyops.h"

#include <cstring>

#include "absl/strings/str_format.h"
#include "graph/backend.h"
#include "kernels/errors.h"
#include "interop/convert.h"
#include "interop/pyargs.h"

namespace pijit {
namespace {
// How an op's Python arguments map to its operands and attributes.
enum Signature : uint8_t {
  kBinary,      // (input, other): tensors or Python scalars (matmul: tensors)
  kUnary,       // (input)
  kWhere,       // (condition, x, y): x or y may be a Python scalar
  kClip,        // (input, min=None, max=None): bounds tensors or Python scalars
  kReduce,      // (input, axis=None, keepdims=False)
  kArgReduce,   // (input, axis=None, keepdims=False), axis one int
  kVarStd,      // (input, axis=None, ddof=0, keepdims=False)
  kSoftmax,     // (input, axis=-1)
  kShapeArgs,   // (input, *ints) or (input, tuple of ints)
  kSqueeze,     // (input, axis=None)
  kUnsqueeze,   // (input, axis)
  kFlatten,     // (input, start_dim=0, end_dim=-1)
  kIndex,       // (input, index): ints, slices, None, Ellipsis or a tuple of them
  kGather,      // (input, indices, axis=0): indices a tensor, a list or a NumPy array
  kTensorSeq,   // (tensors, axis=0): a list or tuple of tensors
  kSizeFill,    // zeros/ones(size, dtype=None), full(size, fill_value, dtype=None)
  kLike,        // zeros_like/ones_like(input, dtype=None), full_like(input, fill_value, dtype=None)
  kArange,      // (start=0, end=None, step=1, dtype=None)
  kLinspace,    // (start, end, steps, dtype=None)
  kEye,         // (n, m=None, dtype=None, k=0)
  kRandom,      // rand/randn(*size, dtype=None, seed=None),
                // uniform(shape, minval=0, maxval=1, seed=None, dtype=None),
                // normal(shape, mean=0, stddev=1, seed=None, dtype=None)
  kConv2D,      // (input, weight, bias=None, stride=1, pad_mode='valid', padding=0, dilation=1,
                //  groups=1)
                // conv_transpose2d(input, weight, bias=None, stride=1, padding=0,
                //   output_padding=0, groups=1, dilation=1, pad_mode='pad')
  kPool2D,      // max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1,
                //   return_indices=False, ceil_mode=False, pad_mode='pad'),
                // avg_pool2d(input, kernel_size=1, stride=1, padding=0, ceil_mode=False,
                //   count_include_pad=True, divisor_override=None, pad_mode='pad')
  kBatchNorm,   // (input, running_mean, running_var, weight, bias, training=False,
                //  momentum=0.1, eps=1e-5)
  kLayerNorm,   // (input, normalized_shape, weight=None, bias=None, eps=1e-5); group_norm:
                // (input, num_groups, weight, bias, eps=1e-5)
  kOneHot,      // (indices, depth, on_value=1, off_value=0, axis=-1, dtype=None)
  kAssign,      // (variable, value): value a tensor or a Python scalar
};
enum Surface : uint8_t { kBoth, kFunction, kMethod };
struct PyOpInfo {
  const char* name;
  graph::Op gop;
  Signature sig;
  Surface surface;
};
constexpr PyOpInfo kPyOps[] = {
#define PIJIT_PYOP(e, name, gop, sig, surface) {name, graph::Op::gop, sig, surface},
#include "interop/pyops.def"
#undef PIJIT_PYOP
};
const PyOpInfo& Info(PyOp op) { return kPyOps[static_cast<int>(op)]; }

}  // namespace

namespace pyargs {
constexpr std::initializer_list<const char*> kInput = {"input", "x"};
constexpr std::initializer_list<const char*> kAxis = {"axis", "dim"};
constexpr std::initializer_list<const char*> kKeepdims = {"keepdims", "keep_dims", "keepdim"};
}  // namespace pyargs
using namespace pyargs;  // NOLINT: this file's own helpers

const char* PyOpName(PyOp op) { return Info(op).name; }
graph::Op PyOpGraphOp(PyOp op) { return Info(op).gop; }
bool PyOpIsMethod(PyOp op) { return Info(op).surface != kFunction; }
bool PyOpIsFunction(PyOp op) { return Info(op).surface != kMethod; }
PyOpArity PyOpElementwiseArity(PyOp op) {
  switch (Info(op).sig) {
    case kUnary: return PyOpArity::kUnary;
    case kBinary: return op == PyOp::kMatMul ? PyOpArity::kBinaryTensorsOnly : PyOpArity::kBinary;
    default: return PyOpArity::kOther;
  }
}

bool PyOpByName(const char* name, PyOp* out) {
  for (const auto& [alias, target] : kMethodAliases)
    if (std::strcmp(name, alias) == 0) name = target;
  for (size_t i = 0; i < sizeof(kPyOps) / sizeof(kPyOps[0]); ++i) {
    if (kPyOps[i].surface != kFunction && std::strcmp(kPyOps[i].name, name) == 0) {
      *out = static_cast<PyOp>(i);
      return true;
    }
  }
  return false;
}

namespace {

// The tensor argument at `slot` as the call's first operand (a single-input op's only one).
absl::Status SetInputOperand(const char* name, absl::Span<const ArgView> args, int slot,
                             ParsedCall* call) {
  PIJIT_ASSIGN_OR_RETURN(Operand a, TensorOperand(name, args, slot, false));
  call->operands = {a};
  return absl::OkStatus();
}

// An int argument that may be left out or None (then *out keeps its default).
absl::Status ReadOptionalInt(const char* name, const char* what, absl::Span<const ArgView> args,
                             int slot, int64_t* out) {
  PIJIT_ASSIGN_OR_RETURN(PyObject * v, Plain(name, what, args, slot));
  if (v != nullptr) PIJIT_RETURN_IF_ERROR(ReadInt(name, what, v, out));
  return absl::OkStatus();
}

// Calls of signature kBinary (Signature above).
absl::StatusOr<ParsedCall> ParseBinary(PyOp op, absl::Span<const ArgView> args,
                                       absl::Span<const std::string> kwnames, ParsedCall call) {
  const char* name = PyOpName(op);
  graph::Attrs& at = call.attrs;
  absl::InlinedVector<int, 4> slot;
  PIJIT_RETURN_IF_ERROR(
      Bind(name, args, kwnames, {kInput, {"other", "y", "exponent"}}, &slot, 2));
  PIJIT_ASSIGN_OR_RETURN(Operand a, TensorOperand(name, args, slot[0], op != PyOp::kMatMul));
  PIJIT_ASSIGN_OR_RETURN(Operand b, TensorOperand(name, args, slot[1], op != PyOp::kMatMul));
  if (a.arg < 0 && b.arg < 0) {
    return TypeError(absl::StrFormat("%s: expected at least one Tensor operand", name));
  }
  a.like = 1;
  b.like = 0;
  call.operands = {a, b};
  return call;
}

// Calls of signature kUnary (Signature above).
absl::StatusOr<ParsedCall> ParseUnary(PyOp op, absl::Span<const ArgView> args,
                                      absl::Span<const std::string> kwnames, ParsedCall call) {
  const char* name = PyOpName(op);
  absl::InlinedVector<int, 4> slot;
  PIJIT_RETURN_IF_ERROR(Bind(name, args, kwnames, {kInput}, &slot, 1));
  PIJIT_RETURN_IF_ERROR(SetInputOperand(name, args, slot[0], &call));
  return call;
}

// Calls of signature kWhere (Signature above).
absl::StatusOr<ParsedCall> ParseWhere(PyOp op, absl::Span<const ArgView> args,
                                      absl::Span<const std::string> kwnames, ParsedCall call) {
  const char* name = PyOpName(op);
  graph::Attrs& at = call.attrs;
  absl::InlinedVector<int, 4> slot;
  PIJIT_RETURN_IF_ERROR(Bind(name, args, kwnames,
                             {{"condition", "cond"}, {"x", "input"}, {"y", "other"}}, &slot, 3));
  PIJIT_ASSIGN_OR_RETURN(Operand c, TensorOperand(name, args, slot[0], false));
  PIJIT_ASSIGN_OR_RETURN(Operand x, TensorOperand(name, args, slot[1], true));
  PIJIT_ASSIGN_OR_RETURN(Operand y, TensorOperand(name, args, slot[2], true));
  if (x.arg < 0 && y.arg < 0) {
    return TypeError("where: expected at least one of x and y to be a Tensor");
  }
  x.like = 2;
  y.like = 1;
  call.operands = {c, x, y};
  return call;
}

// Calls of signature kClip (Signature above).
absl::StatusOr<ParsedCall> ParseClip(PyOp op, absl::Span<const ArgView> args,
                                     absl::Span<const std::string> kwnames, ParsedCall call) {
  const char* name = PyOpName(op);
  graph::Attrs& at = call.attrs;
  absl::InlinedVector<int, 4> slot;
  PIJIT_RETURN_IF_ERROR(Bind(name, args, kwnames,
                             {kInput, {"min", "a_min", "clip_value_min"},
                              {"max", "a_max", "clip_value_max"}},
                             &slot, 1));
  PIJIT_RETURN_IF_ERROR(SetInputOperand(name, args, slot[0], &call));
  for (int k = 1; k <= 2; ++k) {
    const bool given = slot[k] >= 0 && (args[slot[k]].is_tensor || args[slot[k]].object != Py_None);
    at.ints.push_back(given);
    if (!given) continue;
    PIJIT_ASSIGN_OR_RETURN(Operand b, TensorOperand(name, args, slot[k], true));
    b.like = 0;
    call.operands.push_back(b);
  }
  return call;
}

// Calls of signature kReduce / kArgReduce / kVarStd (Signature above).
absl::StatusOr<ParsedCall> ParseReduce(PyOp op, absl::Span<const ArgView> args,
                                       absl::Span<const std::string> kwnames, ParsedCall call) {
  const char* name = PyOpName(op);
  graph::Attrs& at = call.attrs;
  absl::InlinedVector<int, 4> slot;
  const bool var = Info(op).sig == kVarStd;
  if (var) {
    PIJIT_RETURN_IF_ERROR(Bind(name, args, kwnames,
                               {kInput, kAxis, {"ddof", "correction"}, kKeepdims}, &slot, 1));
  } else {
    PIJIT_RETURN_IF_ERROR(Bind(name, args, kwnames, {kInput, kAxis, kKeepdims}, &slot, 1));
  }
  PIJIT_RETURN_IF_ERROR(SetInputOperand(name, args, slot[0], &call));
  PIJIT_ASSIGN_OR_RETURN(PyObject * axis, Plain(name, "axis", args, slot[1]));
  if (axis != nullptr) {
    if (Info(op).sig == kArgReduce) {
      at.ints.emplace_back();
      PIJIT_RETURN_IF_ERROR(ReadInt(name, "axis", axis, &at.ints.back()));
    } else {
      // An explicit empty tuple means every axis, as None does (MindSpore's convention).
      PIJIT_RETURN_IF_ERROR(ReadInts(name, "axis", axis, &at.ints));
    }
  }
  if (var) {
    PIJIT_ASSIGN_OR_RETURN(PyObject * ddof, Plain(name, "ddof", args, slot[2]));
    if (ddof != nullptr && PyBool_Check(ddof)) {
      at.attr = ddof == Py_True;  // MindSpore: True means the unbiased estimate
    } else if (ddof != nullptr) {
      PIJIT_RETURN_IF_ERROR(ReadInt(name, "ddof", ddof, &at.attr));
    }
  }
  PIJIT_RETURN_IF_ERROR(ReadKeepdims(name, args, slot[var ? 3 : 2], &at.keepdims));
  return call;
}

// Calls of signature kSoftmax / kUnsqueeze (Signature above).
absl::StatusOr<ParsedCall> ParseAxisArg(PyOp op, absl::Span<const ArgView> args,
                                        absl::Span<const std::string> kwnames, ParsedCall call) {
  const char* name = PyOpName(op);
  graph::Attrs& at = call.attrs;
  absl::InlinedVector<int, 4> slot;
  const bool unsq = Info(op).sig == kUnsqueeze;
  PIJIT_RETURN_IF_ERROR(Bind(name, args, kwnames, {kInput, kAxis}, &slot, unsq ? 2 : 1));
  PIJIT_RETURN_IF_ERROR(SetInputOperand(name, args, slot[0], &call));
  at.attr = -1;
  PIJIT_ASSIGN_OR_RETURN(PyObject * axis, Plain(name, "axis", args, slot[1]));
  if (unsq && axis == nullptr) return TypeError(absl::StrFormat("%s: axis must be an int, got None", name));
  if (axis != nullptr) {
    // MindSpore's softmax also takes its axis as a 1-tuple.
    if (!unsq && PyTuple_Check(axis) && PyTuple_GET_SIZE(axis) == 1) axis = PyTuple_GET_ITEM(axis, 0);
    PIJIT_RETURN_IF_ERROR(ReadInt(name, "axis", axis, &at.attr));
  }
  return call;
}

// Calls of signature kShapeArgs (Signature above).
absl::StatusOr<ParsedCall> ParseShapeArgs(PyOp op, absl::Span<const ArgView> args,
                                          absl::Span<const std::string> kwnames, ParsedCall call) {
  const char* name = PyOpName(op);
  graph::Attrs& at = call.attrs;
  const size_t npos = args.size() - kwnames.size();
  if (!kwnames.empty() || npos < 1) {
    return TypeError(absl::StrFormat("%s() takes a tensor and then %s as positional arguments",
                                     name, op == PyOp::kTranspose ? "the axes" : "the shape"));
  }
  PIJIT_RETURN_IF_ERROR(SetInputOperand(name, args, 0, &call));
  if (op != PyOp::kTranspose && npos == 1) {
    return TypeError(absl::StrFormat("%s() missing required argument 'shape'", name));
  }
  for (size_t i = 1; i < npos; ++i) {
    PIJIT_ASSIGN_OR_RETURN(PyObject * v, Plain(name, "sizes", args, static_cast<int>(i)));
    if (v == nullptr || (npos > 2 && !IsInt(v))) {
      return TypeError(absl::StrFormat("%s: sizes must be ints, got %s", name,
                                       v ? Py_TYPE(v)->tp_name : "None"));
    }
    PIJIT_RETURN_IF_ERROR(ReadInts(name, op == PyOp::kTranspose ? "axes" : "shape", v, &at.ints));
  }
  return call;
}

// Calls of signature kSqueeze (Signature above).
absl::StatusOr<ParsedCall> ParseSqueeze(PyOp op, absl::Span<const ArgView> args,
                                        absl::Span<const std::string> kwnames, ParsedCall call) {
  const char* name = PyOpName(op);
  graph::Attrs& at = call.attrs;
  absl::InlinedVector<int, 4> slot;
  PIJIT_RETURN_IF_ERROR(Bind(name, args, kwnames, {kInput, kAxis}, &slot, 1));
  PIJIT_RETURN_IF_ERROR(SetInputOperand(name, args, slot[0], &call));
  PIJIT_ASSIGN_OR_RETURN(PyObject * axis, Plain(name, "axis", args, slot[1]));
  if (axis != nullptr) PIJIT_RETURN_IF_ERROR(ReadInts(name, "axis", axis, &at.ints));
  return call;
}

// Calls of signature kFlatten (Signature above).
absl::StatusOr<ParsedCall> ParseFlatten(PyOp op, absl::Span<const ArgView> args,
                                        absl::Span<const std::string> kwnames, ParsedCall call) {
  const char* name = PyOpName(op);
  graph::Attrs& at = call.attrs;
  absl::InlinedVector<int, 4> slot;
  PIJIT_RETURN_IF_ERROR(Bind(name, args, kwnames, {kInput, {"start_dim"}, {"end_dim"}}, &slot, 1));
  PIJIT_RETURN_IF_ERROR(SetInputOperand(name, args, slot[0], &call));
  at.ints = {0, -1};
  for (int k = 1; k <= 2; ++k) {
    PIJIT_RETURN_IF_ERROR(
        ReadOptionalInt(name, k == 1 ? "start_dim" : "end_dim", args, slot[k], &at.ints[k - 1]));
  }
  return call;
}

// Calls of signature kIndex (Signature above).
absl::StatusOr<ParsedCall> ParseGetItem(PyOp op, absl::Span<const ArgView> args,
                                        absl::Span<const std::string> kwnames, ParsedCall call) {
  const char* name = PyOpName(op);
  absl::InlinedVector<int, 4> slot;
  PIJIT_RETURN_IF_ERROR(Bind(name, args, kwnames, {kInput, {"index"}}, &slot, 2));
  PIJIT_RETURN_IF_ERROR(SetInputOperand(name, args, slot[0], &call));
  PIJIT_RETURN_IF_ERROR(ParseIndex(args[slot[1]], slot[1], &call));
  return call;
}

// Calls of signature kGather (Signature above).
absl::StatusOr<ParsedCall> ParseGather(PyOp op, absl::Span<const ArgView> args,
                                       absl::Span<const std::string> kwnames, ParsedCall call) {
  const char* name = PyOpName(op);
  graph::Attrs& at = call.attrs;
  absl::InlinedVector<int, 4> slot;
  // input[:, ..., indices] with `axis` slices before the indices (input[..., indices, :, ...]
  // for a negative axis): one index array, whose axes replace the indexed one.
  PIJIT_RETURN_IF_ERROR(Bind(name, args, kwnames,
                             {{"input", "input_params", "x"}, {"indices", "input_indices"}, kAxis},
                             &slot, 2));
  PIJIT_RETURN_IF_ERROR(SetInputOperand(name, args, slot[0], &call));
  int64_t axis = 0;
  PIJIT_RETURN_IF_ERROR(ReadOptionalInt(name, "axis", args, slot[2], &axis));
  const ArgView& ix = args[slot[1]];
  Operand o;
  if (ix.is_tensor) {
    o.arg = slot[1];
  } else if (!ix.is_seq && (PyList_Check(ix.object) || PyObject_HasAttrString(ix.object, "__array_interface__"))) {
    o.array = ix.object;
  } else {
    return TypeError(absl::StrFormat("gather: indices must be a Tensor, a list or a NumPy array, got %s",
                                     ix.is_seq ? "a sequence holding Tensors" : Py_TYPE(ix.object)->tp_name));
  }
  call.operands.push_back(o);
  const IndexItem all{IndexItem::kSlice};
  std::vector<IndexItem> items;
  if (axis < 0) items.push_back(IndexItem{IndexItem::kEllipsis});
  for (int64_t k = 0; k < (axis < 0 ? 0 : axis); ++k) items.push_back(all);
  items.push_back(IndexItem{IndexItem::kArray, 0});
  for (int64_t k = 0; k < (axis < 0 ? -axis - 1 : 0); ++k) items.push_back(all);
  at.ints = EncodeIndex(items);
  return call;
}

// Calls of signature kTensorSeq (Signature above).
absl::StatusOr<ParsedCall> ParseTensorSeq(PyOp op, absl::Span<const ArgView> args,
                                          absl::Span<const std::string> kwnames, ParsedCall call) {
  const char* name = PyOpName(op);
  graph::Attrs& at = call.attrs;
  absl::InlinedVector<int, 4> slot;
  PIJIT_RETURN_IF_ERROR(
      Bind(name, args, kwnames, {{"tensors", "input_x", "x", "input"}, kAxis}, &slot, 1));
  PIJIT_RETURN_IF_ERROR(ReadTensorSeq(name, args, slot[0], &call.operands));
  PIJIT_RETURN_IF_ERROR(ReadOptionalInt(name, "axis", args, slot[1], &at.attr));
  return call;
}

// Calls of signature kSizeFill (Signature above).
absl::StatusOr<ParsedCall> ParseSizeFill(PyOp op, absl::Span<const ArgView> args,
                                         absl::Span<const std::string> kwnames, ParsedCall call) {
  const char* name = PyOpName(op);
  graph::Attrs& at = call.attrs;
  absl::InlinedVector<int, 4> slot;
  const bool full = op == PyOp::kFull;
  if (full) {
    PIJIT_RETURN_IF_ERROR(Bind(name, args, kwnames, {{"size", "shape"}, {"fill_value"}, {"dtype"}}, &slot, 2));
  } else {
    PIJIT_RETURN_IF_ERROR(Bind(name, args, kwnames, {{"size", "shape"}, {"dtype"}}, &slot, 1));
  }
  PIJIT_RETURN_IF_ERROR(ReadSizeArgs(name, args, slot[0], slot[0] + 1, &at.ints));
  PIJIT_RETURN_IF_ERROR(ReadDType(name, args, slot[full ? 2 : 1], &at.dtype));
  if (!full) {
    at.value = Tensor::Scalar<int64_t>(op == PyOp::kOnes ? 1 : 0);
    if (!at.dtype) at.dtype = DType::kFloat32;
    return call;
  }
  PIJIT_ASSIGN_OR_RETURN(PyObject * fill, Plain(name, "fill_value", args, slot[1]));
  if (fill == nullptr) return TypeError("full: fill_value must be a Python bool, int or float, got None");
  PIJIT_ASSIGN_OR_RETURN(at.value, PyScalarTensor(name, fill));
  // MindSpore's default: the fill value's kind, with floats as Float32.
  if (!at.dtype) at.dtype = at.value.dtype() == DType::kFloat64 ? DType::kFloat32 : at.value.dtype();
  return call;
}

// Calls of signature kLike (Signature above).
absl::StatusOr<ParsedCall> ParseLike(PyOp op, absl::Span<const ArgView> args,
                                     absl::Span<const std::string> kwnames, ParsedCall call) {
  const char* name = PyOpName(op);
  graph::Attrs& at = call.attrs;
  absl::InlinedVector<int, 4> slot;
  const bool full = op == PyOp::kFullLike;
  if (full) {
    PIJIT_RETURN_IF_ERROR(Bind(name, args, kwnames, {kInput, {"fill_value"}, {"dtype"}}, &slot, 2));
  } else {
    PIJIT_RETURN_IF_ERROR(Bind(name, args, kwnames, {kInput, {"dtype"}}, &slot, 1));
  }
  PIJIT_RETURN_IF_ERROR(SetInputOperand(name, args, slot[0], &call));
  PIJIT_RETURN_IF_ERROR(ReadDType(name, args, slot[full ? 2 : 1], &at.dtype));
  if (!full) {
    at.value = Tensor::Scalar<int64_t>(op == PyOp::kOnesLike ? 1 : 0);
    return call;
  }
  PIJIT_ASSIGN_OR_RETURN(PyObject * fill, Plain(name, "fill_value", args, slot[1]));
  if (fill == nullptr) return TypeError("full_like: fill_value must be a Python bool, int or float, got None");
  PIJIT_ASSIGN_OR_RETURN(at.value, PyScalarTensor(name, fill));
  return call;
}

// Calls of signature kArange (Signature above).
absl::StatusOr<ParsedCall> ParseArange(PyOp op, absl::Span<const ArgView> args,
                                       absl::Span<const std::string> kwnames, ParsedCall call) {
  const char* name = PyOpName(op);
  graph::Attrs& at = call.attrs;
  absl::InlinedVector<int, 4> slot;
  PIJIT_RETURN_IF_ERROR(Bind(name, args, kwnames,
                             {{"start"}, {"end", "stop"}, {"step"}, {"dtype"}}, &slot, 0));
  PyObject* v[3] = {nullptr, nullptr, nullptr};
  const char* what[3] = {"start", "end", "step"};
  bool all_int = true;
  for (int k = 0; k < 3; ++k) {
    PIJIT_ASSIGN_OR_RETURN(v[k], Plain(name, what[k], args, slot[k]));
    if (v[k] && !IsInt(v[k]) && !PyFloat_Check(v[k])) {
      return TypeError(absl::StrFormat("arange: %s must be an int or a float, got %s", what[k],
                                       Py_TYPE(v[k])->tp_name));
    }
    all_int = all_int && (!v[k] || IsInt(v[k]));
  }
  if (!v[0]) return TypeError("arange() missing required argument 'start'");
  if (!v[1]) std::swap(v[0], v[1]);  // arange(end)
  PIJIT_RETURN_IF_ERROR(ReadDType(name, args, slot[3], &at.dtype));
  if (!at.dtype) at.dtype = all_int ? DType::kInt64 : DType::kFloat32;
  if (all_int) {
    int64_t p[3] = {0, 0, 1};
    for (int k = 0; k < 3; ++k)
      if (v[k]) PIJIT_RETURN_IF_ERROR(ReadInt(name, what[k], v[k], &p[k]));
    if (p[2] == 0) return ValueError("arange: step must not be zero");
    // Exact integer length: ceil((end - start) / step), in 128 bits against overflow.
    const __int128 span = static_cast<__int128>(p[1]) - p[0];
    __int128 n = p[2] > 0 ? (span + p[2] - 1) / p[2] : (span + p[2] + 1) / p[2];
    if (n < 0) n = 0;
    if (n > (static_cast<__int128>(1) << 53)) return ValueError("arange: the range has too many elements");
    at.ints = {static_cast<int64_t>(n)};
    at.value = Tensor::Empty({2}, DType::kInt64);
    at.value.data<int64_t>()[0] = p[0];
    at.value.data<int64_t>()[1] = p[2];
    return call;
  }
  double p[3] = {0, 0, 1};
  for (int k = 0; k < 3; ++k)
    if (v[k]) PIJIT_RETURN_IF_ERROR(ReadNumber(name, what[k], v[k], &p[k]));
  PIJIT_ASSIGN_OR_RETURN(int64_t n, ArangeLength(name, p[0], p[1], p[2]));
  at.ints = {n};
  at.value = Pair(p[0], p[2]);
  return call;
}

// Calls of signature kLinspace (Signature above).
absl::StatusOr<ParsedCall> ParseLinspace(PyOp op, absl::Span<const ArgView> args,
                                         absl::Span<const std::string> kwnames, ParsedCall call) {
  const char* name = PyOpName(op);
  graph::Attrs& at = call.attrs;
  absl::InlinedVector<int, 4> slot;
  PIJIT_RETURN_IF_ERROR(Bind(name, args, kwnames,
                             {{"start"}, {"end", "stop"}, {"steps", "num"}, {"dtype"}}, &slot, 3));
  double p[2];
  for (int k = 0; k < 2; ++k) {
    PIJIT_ASSIGN_OR_RETURN(PyObject * v, Plain(name, k ? "end" : "start", args, slot[k]));
    if (!v) return TypeError(absl::StrFormat("linspace: %s must be an int or a float, got None", k ? "end" : "start"));
    PIJIT_RETURN_IF_ERROR(ReadNumber(name, k ? "end" : "start", v, &p[k]));
  }
  PIJIT_ASSIGN_OR_RETURN(PyObject * steps, Plain(name, "steps", args, slot[2]));
  at.ints.emplace_back();
  if (!steps) return TypeError("linspace: steps must be an int, got None");
  PIJIT_RETURN_IF_ERROR(ReadInt(name, "steps", steps, &at.ints[0]));
  if (at.ints[0] < 0) {
    return ValueError(absl::StrFormat("linspace: steps must be non-negative, got %d", at.ints[0]));
  }
  PIJIT_RETURN_IF_ERROR(ReadDType(name, args, slot[3], &at.dtype));
  if (!at.dtype) at.dtype = DType::kFloat32;
  at.value = Pair(p[0], p[1]);
  return call;
}

// Calls of signature kEye (Signature above).
absl::StatusOr<ParsedCall> ParseEye(PyOp op, absl::Span<const ArgView> args,
                                    absl::Span<const std::string> kwnames, ParsedCall call) {
  const char* name = PyOpName(op);
  graph::Attrs& at = call.attrs;
  absl::InlinedVector<int, 4> slot;
  PIJIT_RETURN_IF_ERROR(Bind(name, args, kwnames, {{"n"}, {"m", "M"}, {"dtype"}, {"k"}}, &slot, 1));
  at.ints = {0, -1, 0};
  const char* what[3] = {"n", "m", "k"};
  const int slots[3] = {slot[0], slot[1], slot[3]};
  for (int k = 0; k < 3; ++k) {
    PIJIT_ASSIGN_OR_RETURN(PyObject * v, Plain(name, what[k], args, slots[k]));
    if (v) PIJIT_RETURN_IF_ERROR(ReadInt(name, what[k], v, &at.ints[k]));
    else if (k == 0) return TypeError("eye: n must be an int, got None");
  }
  if (at.ints[1] == -1 && slots[1] < 0) at.ints[1] = at.ints[0];
  else if (at.ints[1] == -1 && args[slots[1]].object == Py_None) at.ints[1] = at.ints[0];
  if (at.ints[0] < 0 || at.ints[1] < 0) {
    return ValueError(absl::StrFormat("eye: negative dimensions are not allowed, got n=%d, m=%d",
                                      at.ints[0], at.ints[1]));
  }
  PIJIT_RETURN_IF_ERROR(ReadDType(name, args, slot[2], &at.dtype));
  if (!at.dtype) at.dtype = DType::kFloat32;
  return call;
}

// Calls of signature kConv2D / kPool2D / kBatchNorm / kLayerNorm / kOneHot / kAssign (Signature above).
absl::StatusOr<ParsedCall> ParseLayer(PyOp op, absl::Span<const ArgView> args,
                                      absl::Span<const std::string> kwnames, ParsedCall call) {
  const char* name = PyOpName(op);
  PIJIT_RETURN_IF_ERROR(ParseLayerCall(op, args, kwnames, &call));
  return call;
}

// Calls of signature kRandom (Signature above).
absl::StatusOr<ParsedCall> ParseRandom(PyOp op, absl::Span<const ArgView> args,
                                       absl::Span<const std::string> kwnames, ParsedCall call) {
  const char* name = PyOpName(op);
  graph::Attrs& at = call.attrs;
  absl::InlinedVector<int, 4> slot;
  const size_t npos = args.size() - kwnames.size();
  double a = 0, b = 1;
  int dtype_slot = -1, seed_slot = -1;
  if (op == PyOp::kRand || op == PyOp::kRandn) {
    // (*size, dtype=None, seed=None)
    for (size_t k = 0; k < kwnames.size(); ++k) {
      if (kwnames[k] == "dtype") dtype_slot = static_cast<int>(npos + k);
      else if (kwnames[k] == "seed") seed_slot = static_cast<int>(npos + k);
      else return TypeError(absl::StrFormat("%s() got an unexpected keyword argument '%s'", name, kwnames[k]));
    }
    PIJIT_RETURN_IF_ERROR(ReadSizeArgs(name, args, 0, npos, &at.ints));
  } else {
    const bool uni = op == PyOp::kUniform;
    PIJIT_RETURN_IF_ERROR(Bind(name, args, kwnames,
                               {{"shape", "size"}, {uni ? "minval" : "mean", uni ? "low" : "loc"},
                                {uni ? "maxval" : "stddev", uni ? "high" : "scale"}, {"seed"}, {"dtype"}},
                               &slot, 1));
    PIJIT_RETURN_IF_ERROR(ReadSizeArgs(name, args, slot[0], slot[0] + 1, &at.ints));
    for (int k = 1; k <= 2; ++k) {
      PIJIT_ASSIGN_OR_RETURN(PyObject * v, Plain(name, k == 1 ? "the first parameter" : "the second parameter", args, slot[k]));
      if (v) PIJIT_RETURN_IF_ERROR(ReadNumber(name, k == 1 ? (uni ? "minval" : "mean") : (uni ? "maxval" : "stddev"), v, k == 1 ? &a : &b));
    }
    if (!uni && b < 0) return ValueError(absl::StrFormat("normal: stddev must be non-negative, got %g", b));
    seed_slot = slot[3];
    dtype_slot = slot[4];
  }
  PIJIT_RETURN_IF_ERROR(ReadSeed(name, args, seed_slot, &at.attr));
  PIJIT_RETURN_IF_ERROR(ReadDType(name, args, dtype_slot, &at.dtype));
  if (!at.dtype) at.dtype = DType::kFloat32;
  if (!IsFloating(*at.dtype)) {
    return TypeError(absl::StrFormat("%s: unsupported dtype %s, expected a floating dtype (Float16, BFloat16, Float32 or Float64)",
                                     name, DTypeName(*at.dtype)));
  }
  at.value = Pair(a, b);
  return call;
}

using ParseFn = absl::StatusOr<ParsedCall> (*)(PyOp, absl::Span<const ArgView>,
                                                absl::Span<const std::string>, ParsedCall);

// The parser of each signature's family.
ParseFn ParserOf(Signature sig) {
  switch (sig) {
    case kBinary:
      return ParseBinary;
    case kUnary:
      return ParseUnary;
    case kWhere:
      return ParseWhere;
    case kClip:
      return ParseClip;
    case kReduce:
    case kArgReduce:
    case kVarStd:
      return ParseReduce;
    case kSoftmax:
    case kUnsqueeze:
      return ParseAxisArg;
    case kShapeArgs:
      return ParseShapeArgs;
    case kSqueeze:
      return ParseSqueeze;
    case kFlatten:
      return ParseFlatten;
    case kIndex:
      return ParseGetItem;
    case kGather:
      return ParseGather;
    case kTensorSeq:
      return ParseTensorSeq;
    case kSizeFill:
      return ParseSizeFill;
    case kLike:
      return ParseLike;
    case kArange:
      return ParseArange;
    case kLinspace:
      return ParseLinspace;
    case kEye:
      return ParseEye;
    case kConv2D:
    case kPool2D:
    case kBatchNorm:
    case kLayerNorm:
    case kOneHot:
    case kAssign:
      return ParseLayer;
    case kRandom:
      return ParseRandom;
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<ParsedCall> ParseCall(PyOp op, absl::Span<const ArgView> args,
                                     absl::Span<const std::string> kwnames) {
  ParsedCall call;
  call.op = op;
  call.gop = PyOpGraphOp(op);
  ParseFn parse = ParserOf(Info(op).sig);
  if (parse == nullptr) return absl::InternalError("unknown signature");
  return parse(op, args, kwnames, std::move(call));
}

absl::Status ResolveOperands(const ParsedCall& call, absl::Span<const Tensor* const> operands,
                             absl::InlinedVector<Tensor, 3>* constants,
                             absl::InlinedVector<const Tensor*, 3>* out) {
  const char* name = PyOpName(call.op);
  constants->assign(call.operands.size(), Tensor());
  out->assign(call.operands.size(), nullptr);
  for (size_t i = 0; i < call.operands.size(); ++i) {
    const Operand& o = call.operands[i];
    if (o.array != nullptr) {
      PIJIT_ASSIGN_OR_RETURN((*constants)[i], IndexArrayTensor(o.array));
      (*out)[i] = &(*constants)[i];
      continue;
    }
    if (o.scalar == nullptr) {
      (*out)[i] = operands[i];
      continue;
    }
    const Tensor* like = operands[o.like];
    PIJIT_ASSIGN_OR_RETURN((*constants)[i], ScalarOperand(name, o.scalar, like->dtype()));
    (*out)[i] = &(*constants)[i];
  }
  if (call.op == PyOp::kGather && out->size() == 2 && !IsInteger((*out)[1]->dtype())) {
    return TypeError(absl::StrFormat("gather: indices must be integers, got %s",
                                     DTypeName((*out)[1]->dtype())));
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> ApplyEager(const ParsedCall& call, absl::Span<const Tensor* const> operands) {
  absl::InlinedVector<Tensor, 3> scalars;
  absl::InlinedVector<const Tensor*, 3> ptrs;
  PIJIT_RETURN_IF_ERROR(ResolveOperands(call, operands, &scalars, &ptrs));
  graph::Node n;
  static_cast<graph::Attrs&>(n) = call.attrs;
  n.op = call.gop;
  return graph::RunNodeWhereInputsAre(n, ptrs);  // tensors on a device run there
}

}  // namespace pijit
