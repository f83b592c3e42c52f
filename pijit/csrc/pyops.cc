#include "pijit/csrc/pyops.h"

#include <cstring>

#include "absl/strings/str_format.h"
#include "kernels/errors.h"
#include "pijit/csrc/convert.h"

namespace pijit {
namespace {
enum Signature : uint8_t { kBinary, kUnary, kReduce, kShapeArgs };
struct PyOpInfo {
  const char* name;
  graph::Op gop;
  Signature sig;
};
constexpr PyOpInfo kPyOps[] = {
#define PIJIT_PYOP(e, name, gop, sig) {name, graph::Op::gop, sig},
#include "pijit/csrc/pyops.def"
#undef PIJIT_PYOP
};
const PyOpInfo& Info(PyOp op) { return kPyOps[static_cast<int>(op)]; }

absl::Status TypeError(const std::string& msg) { return absl::UnimplementedError(msg); }

// Reads an int (not bool) or a sequence of ints into `out`.
absl::Status ReadInts(const char* op, const char* what, PyObject* o, Shape* out) {
  auto one = [&](PyObject* v) -> absl::Status {
    if (!PyLong_Check(v) || PyBool_Check(v)) {
      return TypeError(absl::StrFormat("%s: %s must be an int or a tuple of ints, got %s", op, what,
                                       Py_TYPE(v)->tp_name));
    }
    out->push_back(PyLong_AsLongLong(v));
    return absl::OkStatus();
  };
  if (PyTuple_Check(o) || PyList_Check(o)) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
    PyObject** items = PySequence_Fast_ITEMS(o);
    for (Py_ssize_t i = 0; i < n; ++i) PIJIT_RETURN_IF_ERROR(one(items[i]));
    return absl::OkStatus();
  }
  return one(o);
}

// Binds positional and keyword arguments to parameter slots by name.
absl::Status Bind(const char* op, absl::Span<const ArgView> args,
                  absl::Span<const std::string> kwnames,
                  std::initializer_list<std::initializer_list<const char*>> params,
                  absl::InlinedVector<int, 4>* slots, size_t required) {
  const size_t npos = args.size() - kwnames.size();
  slots->assign(params.size(), -1);
  if (npos > params.size()) {
    return TypeError(absl::StrFormat("%s() takes at most %d arguments (%d given)", op,
                                     params.size(), npos));
  }
  for (size_t i = 0; i < npos; ++i) (*slots)[i] = static_cast<int>(i);
  for (size_t k = 0; k < kwnames.size(); ++k) {
    size_t p = 0;
    bool found = false;
    for (auto names : params) {
      for (const char* n : names) found = found || kwnames[k] == n;
      if (found) break;
      ++p;
    }
    if (!found) {
      return TypeError(absl::StrFormat("%s() got an unexpected keyword argument '%s'", op, kwnames[k]));
    }
    if ((*slots)[p] >= 0) {
      return TypeError(absl::StrFormat("%s() got multiple values for argument '%s'", op,
                                       *params.begin()[p].begin()));
    }
    (*slots)[p] = static_cast<int>(npos + k);
  }
  for (size_t p = 0; p < required; ++p) {
    if ((*slots)[p] < 0) {
      return TypeError(absl::StrFormat("%s() missing required argument '%s'", op,
                                       *params.begin()[p].begin()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Operand> TensorOperand(const char* op, absl::Span<const ArgView> args, int slot,
                                      bool allow_scalar) {
  const ArgView& a = args[slot];
  if (a.is_tensor) return Operand{slot, nullptr};
  if (allow_scalar && IsPyScalar(a.object)) return Operand{-1, a.object};
  return TypeError(absl::StrFormat("%s: expected a Tensor%s, got %s", op,
                                   allow_scalar ? " or a Python scalar" : "",
                                   Py_TYPE(a.object)->tp_name));
}
}  // namespace

const char* PyOpName(PyOp op) { return Info(op).name; }
graph::Op PyOpGraphOp(PyOp op) { return Info(op).gop; }

bool PyOpByName(const char* name, PyOp* out) {
  for (size_t i = 0; i < sizeof(kPyOps) / sizeof(kPyOps[0]); ++i) {
    if (std::strcmp(kPyOps[i].name, name) == 0) {
      *out = static_cast<PyOp>(i);
      return true;
    }
  }
  return false;
}

absl::StatusOr<ParsedCall> ParseCall(PyOp op, absl::Span<const ArgView> args,
                                     absl::Span<const std::string> kwnames) {
  const char* name = PyOpName(op);
  ParsedCall call;
  call.op = op;
  absl::InlinedVector<int, 4> slot;
  switch (Info(op).sig) {
    case kBinary: {
      PIJIT_RETURN_IF_ERROR(Bind(name, args, kwnames, {{"input", "x"}, {"other", "y"}}, &slot, 2));
      PIJIT_ASSIGN_OR_RETURN(Operand a, TensorOperand(name, args, slot[0], op != PyOp::kMatMul));
      PIJIT_ASSIGN_OR_RETURN(Operand b, TensorOperand(name, args, slot[1], op != PyOp::kMatMul));
      if (a.arg < 0 && b.arg < 0) {
        return TypeError(absl::StrFormat("%s: expected at least one Tensor operand", name));
      }
      call.operands = {a, b};
      return call;
    }
    case kUnary: {
      PIJIT_RETURN_IF_ERROR(Bind(name, args, kwnames, {{"input", "x"}}, &slot, 1));
      PIJIT_ASSIGN_OR_RETURN(Operand a, TensorOperand(name, args, slot[0], false));
      call.operands = {a};
      return call;
    }
    case kReduce: {
      PIJIT_RETURN_IF_ERROR(Bind(name, args, kwnames,
                                 {{"input", "x"}, {"axis", "dim"}, {"keepdims", "keep_dims", "keepdim"}},
                                 &slot, 1));
      PIJIT_ASSIGN_OR_RETURN(Operand a, TensorOperand(name, args, slot[0], false));
      call.operands = {a};
      if (slot[1] >= 0 && args[slot[1]].object != Py_None) {
        if (args[slot[1]].is_tensor) return TypeError(absl::StrFormat("%s: axis must be an int or a tuple of ints, got Tensor", name));
        PIJIT_RETURN_IF_ERROR(ReadInts(name, "axis", args[slot[1]].object, &call.ints));
        // An explicit empty tuple means every axis, as None does (MindSpore's convention).
      }
      if (slot[2] >= 0) {
        PyObject* k = args[slot[2]].is_tensor ? nullptr : args[slot[2]].object;
        if (k == nullptr || !PyBool_Check(k)) {
          return TypeError(absl::StrFormat("%s: keepdims must be a bool", name));
        }
        call.keepdims = k == Py_True;
      }
      return call;
    }
    case kShapeArgs: {
      const size_t npos = args.size() - kwnames.size();
      if (!kwnames.empty() || npos < 1) {
        return TypeError(absl::StrFormat("%s() takes a tensor and then %s as positional arguments",
                                         name, op == PyOp::kReshape ? "the shape" : "the axes"));
      }
      PIJIT_ASSIGN_OR_RETURN(Operand a, TensorOperand(name, args, 0, false));
      call.operands = {a};
      if (op == PyOp::kReshape && npos == 1) {
        return TypeError("reshape() missing required argument 'shape'");
      }
      for (size_t i = 1; i < npos; ++i) {
        if (args[i].is_tensor) return TypeError(absl::StrFormat("%s: sizes must be ints, got Tensor", name));
        if (npos > 2 && !PyLong_Check(args[i].object)) {
          return TypeError(absl::StrFormat("%s: sizes must be ints, got %s", name,
                                           Py_TYPE(args[i].object)->tp_name));
        }
        PIJIT_RETURN_IF_ERROR(ReadInts(name, op == PyOp::kReshape ? "shape" : "axes",
                                       args[i].object, &call.ints));
      }
      return call;
    }
  }
  return absl::InternalError("unknown signature");
}

absl::StatusOr<Tensor> ApplyEager(const ParsedCall& call, absl::Span<Tensor* const> tensors) {
  const char* name = PyOpName(call.op);
  absl::InlinedVector<Tensor, 2> ops;
  for (size_t i = 0; i < call.operands.size(); ++i) {
    const Operand& o = call.operands[i];
    if (o.arg >= 0) {
      ops.push_back(*tensors[o.arg]);
    } else {
      const Operand& other = call.operands[1 - i];
      PIJIT_ASSIGN_OR_RETURN(Tensor s, ScalarOperand(name, o.scalar, tensors[other.arg]->dtype()));
      ops.push_back(std::move(s));
    }
  }
  graph::Node n;
  n.op = PyOpGraphOp(call.op);
  n.ints = call.ints;
  n.keepdims = call.keepdims;
  absl::InlinedVector<const Tensor*, 2> ptrs;
  for (const Tensor& t : ops) ptrs.push_back(&t);
  return graph::RunNode(n, ptrs);
}

}  // namespace pijit
