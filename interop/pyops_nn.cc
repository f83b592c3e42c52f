// Argument parsing of the layer ops: conv2d, conv_transpose2d, max_pool2d, avg_pool2d, batch_norm, layer_norm,
// one_hot and assign (MindSpore's functional signatures; see pyops.cc for the others).
#include <cctype>
#include <string>

#include "absl/strings/str_format.h"
#include "kernels/errors.h"
#include "interop/pyargs.h"

namespace pijit {
namespace {
using namespace pyargs;  // NOLINT

constexpr std::initializer_list<const char*> kInput = {"input", "x", "input_x"};

// An int, or a tuple/list of 2 ints (h, w), or of 4 ints (MindSpore's (1, 1, h, w) form).
absl::Status ReadHW(const char* op, const char* what, PyObject* o, int64_t out[2]) {
  Shape v;
  PIJIT_RETURN_IF_ERROR(ReadInts(op, what, o, &v));
  if (v.size() == 1) v.push_back(v[0]);
  if (v.size() == 4) v.erase(v.begin(), v.begin() + 2);
  if (v.size() != 2) {
    return ValueError(absl::StrFormat("%s: %s must be an int or a tuple of 2 ints, got %d ints",
                                      op, what, v.size()));
  }
  out[0] = v[0];
  out[1] = v[1];
  return absl::OkStatus();
}

// An int (every side), (h, w) or (top, bottom, left, right).
absl::Status ReadPadding(const char* op, PyObject* o, int64_t out[4]) {
  Shape v;
  PIJIT_RETURN_IF_ERROR(ReadInts(op, "padding", o, &v));
  if (v.size() == 1) v = {v[0], v[0], v[0], v[0]};
  else if (v.size() == 2) v = {v[0], v[0], v[1], v[1]};
  if (v.size() != 4) {
    return ValueError(absl::StrFormat(
        "%s: padding must be an int or a tuple of 2 or 4 ints, got %d ints", op, v.size()));
  }
  for (int i = 0; i < 4; ++i) {
    if (v[i] < 0) {
      return ValueError(absl::StrFormat("%s: padding must be non-negative, got (%d, %d, %d, %d)",
                                        op, v[0], v[1], v[2], v[3]));
    }
    out[i] = v[i];
  }
  return absl::OkStatus();
}

// pad_mode 'same', 'valid' or 'pad' (any case); nonzero padding needs 'pad'.
absl::Status ReadPadMode(const char* op, PyObject* mode, Window2D* w, bool* valid = nullptr) {
  if (mode == nullptr) return absl::OkStatus();
  if (!PyUnicode_Check(mode)) {
    return TypeError(absl::StrFormat("%s: pad_mode must be a str, got %s", op, Py_TYPE(mode)->tp_name));
  }
  std::string m = PyUnicode_AsUTF8(mode);
  for (char& c : m) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (m != "same" && m != "valid" && m != "pad") {
    return ValueError(absl::StrFormat("%s: pad_mode must be 'same', 'valid' or 'pad', got '%s'",
                                      op, PyUnicode_AsUTF8(mode)));
  }
  if (m != "pad" && (w->pad[0] || w->pad[1] || w->pad[2] || w->pad[3])) {
    return ValueError(absl::StrFormat(
        "%s: padding must be 0 when pad_mode is '%s', got (%d, %d, %d, %d); use pad_mode='pad'",
        op, m, w->pad[0], w->pad[1], w->pad[2], w->pad[3]));
  }
  w->same = m == "same";
  if (valid != nullptr) *valid = m == "valid";
  return absl::OkStatus();
}

absl::Status ReadBool(const char* op, const char* what, PyObject* v, bool* out) {
  if (v == nullptr) return absl::OkStatus();
  if (!PyBool_Check(v)) {
    return TypeError(absl::StrFormat("%s: %s must be a bool, got %s", op, what, Py_TYPE(v)->tp_name));
  }
  *out = v == Py_True;
  return absl::OkStatus();
}

// The Python value at `slot` read by `read` when given (not absent, not None).
template <typename Fn>
absl::Status IfGiven(const char* op, const char* what, absl::Span<const ArgView> args, int slot,
                     Fn read) {
  PIJIT_ASSIGN_OR_RETURN(PyObject * v, Plain(op, what, args, slot));
  if (v == nullptr) return absl::OkStatus();
  return read(v);
}

// A convolution's operands: input (slot 0), weight (slot 1) and a bias (slot 2) unless it is
// absent or None.
absl::Status ConvOperands(const char* op, absl::Span<const ArgView> args,
                          absl::Span<const int> slot, ParsedCall* call) {
  PIJIT_ASSIGN_OR_RETURN(Operand x, TensorOperand(op, args, slot[0], false));
  PIJIT_ASSIGN_OR_RETURN(Operand w, TensorOperand(op, args, slot[1], false));
  call->operands = {x, w};
  if (slot[2] >= 0 && (args[slot[2]].is_tensor || args[slot[2]].object != Py_None)) {
    PIJIT_ASSIGN_OR_RETURN(Operand b, TensorOperand(op, args, slot[2], false));
    call->operands.push_back(b);
  }
  return absl::OkStatus();
}

absl::Status ParseConv(const char* op, absl::Span<const ArgView> args,
                       absl::Span<const std::string> kwnames, ParsedCall* call) {
  absl::InlinedVector<int, 4> slot;
  PIJIT_RETURN_IF_ERROR(Bind(op, args, kwnames,
                             {kInput, {"weight"}, {"bias"}, {"stride"}, {"pad_mode"}, {"padding", "pad"},
                              {"dilation"}, {"groups", "group"}},
                             &slot, 2));
  PIJIT_RETURN_IF_ERROR(ConvOperands(op, args, slot, call));
  Window2D win;
  PIJIT_RETURN_IF_ERROR(IfGiven(op, "stride", args, slot[3], [&](PyObject* v) { return ReadHW(op, "stride", v, win.stride); }));
  PIJIT_RETURN_IF_ERROR(IfGiven(op, "padding", args, slot[5], [&](PyObject* v) { return ReadPadding(op, v, win.pad); }));
  PIJIT_RETURN_IF_ERROR(IfGiven(op, "dilation", args, slot[6], [&](PyObject* v) { return ReadHW(op, "dilation", v, win.dilation); }));
  PIJIT_RETURN_IF_ERROR(IfGiven(op, "groups", args, slot[7], [&](PyObject* v) { return ReadInt(op, "groups", v, &win.groups); }));
  PIJIT_ASSIGN_OR_RETURN(PyObject * mode, Plain(op, "pad_mode", args, slot[4]));
  if (mode == nullptr) {
    // MindSpore's default, 'valid', takes no padding; explicit padding implies 'pad'.
    if (!(win.pad[0] || win.pad[1] || win.pad[2] || win.pad[3])) win.same = false;
  } else {
    PIJIT_RETURN_IF_ERROR(ReadPadMode(op, mode, &win));
  }
  if (win.groups < 1) return ValueError(absl::StrFormat("conv2d: groups must be positive, got %d", win.groups));
  call->attrs.ints = EncodeWindow(win);
  return absl::OkStatus();
}

// mint's conv_transpose2d signature; pad_mode ('same', 'valid', 'pad') as nn.Conv2dTranspose
// passes it. Without pad_mode, padding applies ('pad').
absl::Status ParseConvTranspose(const char* op, absl::Span<const ArgView> args,
                                absl::Span<const std::string> kwnames, ParsedCall* call) {
  absl::InlinedVector<int, 4> slot;
  PIJIT_RETURN_IF_ERROR(Bind(op, args, kwnames,
                             {kInput, {"weight"}, {"bias"}, {"stride"}, {"padding", "pad"},
                              {"output_padding"}, {"groups", "group"}, {"dilation"}, {"pad_mode"}},
                             &slot, 2));
  PIJIT_RETURN_IF_ERROR(ConvOperands(op, args, slot, call));
  Window2D win;
  win.same = false;
  int64_t out_pad[2] = {0, 0};
  PIJIT_RETURN_IF_ERROR(IfGiven(op, "stride", args, slot[3], [&](PyObject* v) { return ReadHW(op, "stride", v, win.stride); }));
  PIJIT_RETURN_IF_ERROR(IfGiven(op, "padding", args, slot[4], [&](PyObject* v) { return ReadPadding(op, v, win.pad); }));
  PIJIT_RETURN_IF_ERROR(IfGiven(op, "output_padding", args, slot[5], [&](PyObject* v) { return ReadHW(op, "output_padding", v, out_pad); }));
  PIJIT_RETURN_IF_ERROR(IfGiven(op, "groups", args, slot[6], [&](PyObject* v) { return ReadInt(op, "groups", v, &win.groups); }));
  PIJIT_RETURN_IF_ERROR(IfGiven(op, "dilation", args, slot[7], [&](PyObject* v) { return ReadHW(op, "dilation", v, win.dilation); }));
  PIJIT_ASSIGN_OR_RETURN(PyObject * mode, Plain(op, "pad_mode", args, slot[8]));
  bool valid = false;
  PIJIT_RETURN_IF_ERROR(ReadPadMode(op, mode, &win, &valid));
  if (win.groups < 1) return ValueError(absl::StrFormat("%s: groups must be positive, got %d", op, win.groups));
  for (int i = 0; i < 2; ++i) {
    if (win.stride[i] < 1 || win.dilation[i] < 1) {
      return ValueError(absl::StrFormat("%s: stride and dilation must be positive, got (%d, %d) and (%d, %d)",
                                        op, win.stride[0], win.stride[1], win.dilation[0], win.dilation[1]));
    }
  }
  call->attrs.ints = EncodeWindow(win);
  call->attrs.ints.insert(call->attrs.ints.end(), {out_pad[0], out_pad[1], valid ? 1 : 0});
  return absl::OkStatus();
}

absl::Status ParsePool(PyOp pop, const char* op, absl::Span<const ArgView> args,
                       absl::Span<const std::string> kwnames, ParsedCall* call) {
  const bool is_max = pop == PyOp::kMaxPool2D;
  absl::InlinedVector<int, 4> slot;
  // Slots: 0 input, 1 kernel_size, 2 stride, 3 padding, 4 dilation / ceil_mode,
  // 5 return_indices / count_include_pad, 6 ceil_mode / divisor_override, 7 pad_mode.
  if (is_max) {
    PIJIT_RETURN_IF_ERROR(Bind(op, args, kwnames,
                               {kInput, {"kernel_size"}, {"stride", "strides"}, {"padding", "pad"},
                                {"dilation"}, {"return_indices"}, {"ceil_mode"}, {"pad_mode"}},
                               &slot, 2));
  } else {
    PIJIT_RETURN_IF_ERROR(Bind(op, args, kwnames,
                               {kInput, {"kernel_size"}, {"stride", "strides"}, {"padding", "pad"},
                                {"ceil_mode"}, {"count_include_pad"}, {"divisor_override"},
                                {"pad_mode"}},
                               &slot, 1));
  }
  PIJIT_ASSIGN_OR_RETURN(Operand x, TensorOperand(op, args, slot[0], false));
  call->operands = {x};
  Window2D win;
  PIJIT_RETURN_IF_ERROR(IfGiven(op, "kernel_size", args, slot[1], [&](PyObject* v) { return ReadHW(op, "kernel_size", v, win.kernel); }));
  // max_pool2d's stride defaults to the kernel size; avg_pool2d's to 1 (MindSpore).
  if (is_max) {
    win.stride[0] = win.kernel[0];
    win.stride[1] = win.kernel[1];
  }
  PIJIT_RETURN_IF_ERROR(IfGiven(op, "stride", args, slot[2], [&](PyObject* v) { return ReadHW(op, "stride", v, win.stride); }));
  PIJIT_RETURN_IF_ERROR(IfGiven(op, "padding", args, slot[3], [&](PyObject* v) { return ReadPadding(op, v, win.pad); }));
  PIJIT_ASSIGN_OR_RETURN(PyObject * ceil, Plain(op, "ceil_mode", args, slot[is_max ? 6 : 4]));
  PIJIT_RETURN_IF_ERROR(ReadBool(op, "ceil_mode", ceil, &win.ceil_mode));
  if (is_max) {
    PIJIT_RETURN_IF_ERROR(IfGiven(op, "dilation", args, slot[4], [&](PyObject* v) { return ReadHW(op, "dilation", v, win.dilation); }));
    PIJIT_ASSIGN_OR_RETURN(PyObject * ri, Plain(op, "return_indices", args, slot[5]));
    bool return_indices = false;
    PIJIT_RETURN_IF_ERROR(ReadBool(op, "return_indices", ri, &return_indices));
    if (return_indices) return TypeError("max_pool2d: return_indices=True is not supported");
  } else {
    PIJIT_ASSIGN_OR_RETURN(PyObject * cip, Plain(op, "count_include_pad", args, slot[5]));
    PIJIT_RETURN_IF_ERROR(ReadBool(op, "count_include_pad", cip, &win.count_include_pad));
    PIJIT_ASSIGN_OR_RETURN(PyObject * div, Plain(op, "divisor_override", args, slot[6]));
    if (div != nullptr) return TypeError("avg_pool2d: divisor_override is not supported");
  }
  PIJIT_ASSIGN_OR_RETURN(PyObject * mode, Plain(op, "pad_mode", args, slot[7]));
  PIJIT_RETURN_IF_ERROR(ReadPadMode(op, mode, &win));
  call->attrs.ints = EncodeWindow(win);
  return absl::OkStatus();
}

absl::Status ParseBatchNorm(absl::Span<const ArgView> args, absl::Span<const std::string> kwnames,
                            ParsedCall* call) {
  constexpr const char* op = "batch_norm";
  absl::InlinedVector<int, 4> slot;
  PIJIT_RETURN_IF_ERROR(Bind(op, args, kwnames,
                             {kInput, {"running_mean", "mean"}, {"running_var", "variance", "var"},
                              {"weight", "gamma"}, {"bias", "beta"}, {"training"}, {"momentum"},
                              {"eps", "epsilon"}},
                             &slot, 5));
  for (int k = 0; k < 5; ++k) {
    PIJIT_ASSIGN_OR_RETURN(Operand o, TensorOperand(op, args, slot[k], false));
    call->operands.push_back(o);
  }
  bool training = false;
  double momentum = 0.1, eps = 1e-5;
  PIJIT_ASSIGN_OR_RETURN(PyObject * t, Plain(op, "training", args, slot[5]));
  PIJIT_RETURN_IF_ERROR(ReadBool(op, "training", t, &training));
  PIJIT_RETURN_IF_ERROR(IfGiven(op, "momentum", args, slot[6], [&](PyObject* v) { return ReadNumber(op, "momentum", v, &momentum); }));
  PIJIT_RETURN_IF_ERROR(IfGiven(op, "eps", args, slot[7], [&](PyObject* v) { return ReadNumber(op, "eps", v, &eps); }));
  if (!(eps > 0)) return ValueError(absl::StrFormat("batch_norm: eps must be positive, got %g", eps));
  if (!(momentum >= 0 && momentum <= 1)) {
    return ValueError(absl::StrFormat("batch_norm: momentum must be in [0, 1], got %g", momentum));
  }
  call->gop = training ? graph::Op::kBatchNormTrain : graph::Op::kBatchNorm;
  call->attrs.value = training ? Pair(eps, momentum) : Tensor::Scalar<double>(eps);
  return absl::OkStatus();
}

absl::Status ParseLayerNorm(absl::Span<const ArgView> args, absl::Span<const std::string> kwnames,
                            ParsedCall* call) {
  constexpr const char* op = "layer_norm";
  absl::InlinedVector<int, 4> slot;
  PIJIT_RETURN_IF_ERROR(Bind(op, args, kwnames,
                             {kInput, {"normalized_shape"}, {"weight", "gamma"}, {"bias", "beta"},
                              {"eps", "epsilon"}},
                             &slot, 2));
  PIJIT_ASSIGN_OR_RETURN(Operand x, TensorOperand(op, args, slot[0], false));
  call->operands = {x};
  Shape& ints = call->attrs.ints;
  ints = {0, 0};
  for (int k = 2; k <= 3; ++k) {
    if (slot[k] < 0 || (!args[slot[k]].is_tensor && args[slot[k]].object == Py_None)) continue;
    PIJIT_ASSIGN_OR_RETURN(Operand o, TensorOperand(op, args, slot[k], false));
    call->operands.push_back(o);
    ints[k - 2] = 1;
  }
  PIJIT_ASSIGN_OR_RETURN(PyObject * ns, Plain(op, "normalized_shape", args, slot[1]));
  if (ns == nullptr) return TypeError("layer_norm: normalized_shape must be an int or a tuple of ints, got None");
  PIJIT_RETURN_IF_ERROR(ReadInts(op, "normalized_shape", ns, &ints));
  double eps = 1e-5;
  PIJIT_RETURN_IF_ERROR(IfGiven(op, "eps", args, slot[4], [&](PyObject* v) { return ReadNumber(op, "eps", v, &eps); }));
  if (!(eps > 0)) return ValueError(absl::StrFormat("layer_norm: eps must be positive, got %g", eps));
  call->attrs.value = Tensor::Scalar<double>(eps);
  return absl::OkStatus();
}

// group_norm(input, num_groups, weight, bias, eps=1e-5): weight and bias are required (the
// Cells always have them; mint.nn.functional.group_norm supplies ones and zeros).
absl::Status ParseGroupNorm(absl::Span<const ArgView> args, absl::Span<const std::string> kwnames,
                            ParsedCall* call) {
  constexpr const char* op = "group_norm";
  absl::InlinedVector<int, 4> slot;
  PIJIT_RETURN_IF_ERROR(Bind(op, args, kwnames,
                             {kInput, {"num_groups"}, {"weight", "gamma"}, {"bias", "beta"},
                              {"eps", "epsilon"}},
                             &slot, 4));
  call->operands.clear();
  for (int k : {0, 2, 3}) {
    PIJIT_ASSIGN_OR_RETURN(Operand o, TensorOperand(op, args, slot[k], false));
    call->operands.push_back(o);
  }
  PIJIT_ASSIGN_OR_RETURN(PyObject * g, Plain(op, "num_groups", args, slot[1]));
  if (g == nullptr) return TypeError("group_norm: num_groups must be an int, got None");
  int64_t groups = 0;
  PIJIT_RETURN_IF_ERROR(ReadInt(op, "num_groups", g, &groups));
  if (groups < 1) return ValueError(absl::StrFormat("group_norm: num_groups must be positive, got %d", groups));
  double eps = 1e-5;
  PIJIT_RETURN_IF_ERROR(IfGiven(op, "eps", args, slot[4], [&](PyObject* v) { return ReadNumber(op, "eps", v, &eps); }));
  if (!(eps > 0)) return ValueError(absl::StrFormat("group_norm: eps must be positive, got %g", eps));
  call->attrs.attr = groups;
  call->attrs.value = Tensor::Scalar<double>(eps);
  return absl::OkStatus();
}

absl::Status ParseOneHot(absl::Span<const ArgView> args, absl::Span<const std::string> kwnames,
                         ParsedCall* call) {
  constexpr const char* op = "one_hot";
  absl::InlinedVector<int, 4> slot;
  PIJIT_RETURN_IF_ERROR(Bind(op, args, kwnames,
                             {{"indices", "input"}, {"depth", "num_classes"}, {"on_value"},
                              {"off_value"}, {"axis"}, {"dtype"}},
                             &slot, 2));
  PIJIT_ASSIGN_OR_RETURN(Operand x, TensorOperand(op, args, slot[0], false));
  call->operands = {x};
  int64_t depth = 0, axis = -1;
  double v[2] = {1, 0};
  PIJIT_ASSIGN_OR_RETURN(PyObject * d, Plain(op, "depth", args, slot[1]));
  if (d == nullptr) return TypeError("one_hot: depth must be an int, got None");
  PIJIT_RETURN_IF_ERROR(ReadInt(op, "depth", d, &depth));
  if (depth < 0) return ValueError(absl::StrFormat("one_hot: depth must be non-negative, got %d", depth));
  for (int k = 0; k < 2; ++k) {
    const char* what = k ? "off_value" : "on_value";
    if (slot[2 + k] >= 0 && args[slot[2 + k]].is_tensor) {
      return TypeError(absl::StrFormat("one_hot: %s must be a Python number (a tensor is not "
                                       "supported)", what));
    }
    PIJIT_ASSIGN_OR_RETURN(PyObject * o, Plain(op, what, args, slot[2 + k]));
    if (o == nullptr) continue;
    PIJIT_RETURN_IF_ERROR(ReadNumber(op, what, o, &v[k]));
  }
  PIJIT_RETURN_IF_ERROR(IfGiven(op, "axis", args, slot[4], [&](PyObject* o) { return ReadInt(op, "axis", o, &axis); }));
  PIJIT_RETURN_IF_ERROR(ReadDType(op, args, slot[5], &call->attrs.dtype));
  // Float32 by default (MindSpore's usual on/off values 1.0 and 0.0).
  if (!call->attrs.dtype) call->attrs.dtype = DType::kFloat32;
  call->attrs.ints = {depth, axis};
  call->attrs.value = Pair(v[0], v[1]);
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseLayerCall(PyOp op, absl::Span<const ArgView> args,
                            absl::Span<const std::string> kwnames, ParsedCall* call) {
  const char* name = PyOpName(op);
  switch (op) {
    case PyOp::kConv2D: return ParseConv(name, args, kwnames, call);
    case PyOp::kConvTranspose2D: return ParseConvTranspose(name, args, kwnames, call);
    case PyOp::kMaxPool2D:
    case PyOp::kAvgPool2D: return ParsePool(op, name, args, kwnames, call);
    case PyOp::kBatchNorm: return ParseBatchNorm(args, kwnames, call);
    case PyOp::kLayerNorm: return ParseLayerNorm(args, kwnames, call);
    case PyOp::kGroupNorm: return ParseGroupNorm(args, kwnames, call);
    case PyOp::kOneHot: return ParseOneHot(args, kwnames, call);
    case PyOp::kAssign: {
      absl::InlinedVector<int, 4> slot;
      PIJIT_RETURN_IF_ERROR(Bind(name, args, kwnames, {{"variable", "input"}, {"value"}}, &slot, 2));
      PIJIT_ASSIGN_OR_RETURN(Operand var, TensorOperand(name, args, slot[0], false));
      PIJIT_ASSIGN_OR_RETURN(Operand val, TensorOperand(name, args, slot[1], true));
      val.like = 0;
      call->operands = {var, val};
      return absl::OkStatus();
    }
    default: break;
  }
  return absl::InternalError(absl::StrFormat("%s is not a layer op", name));
}

}  // namespace pijit
