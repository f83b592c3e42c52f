// Tensor indices from Python (NumPy's rules): parsing an index for __getitem__ (eager and
// capture) and __setitem__.
#include "absl/strings/str_format.h"
#include "kernels/errors.h"
#include "interop/convert.h"
#include "interop/pyargs.h"
#include "interop/pyops.h"
#include "runtime/eager_ops.h"
#include "runtime/tape.h"

namespace pijit {
namespace {

absl::Status BadIndex(const char* type) {
  return absl::NotFoundError(absl::StrFormat(
      "index: only integers, slices (`:`), ellipsis (`...`), None and integer or boolean "
      "arrays are valid indices, got %s", type));
}

// A NumPy integer scalar (or another non-array object with __index__) as a Python int (new
// reference), or nullptr. NumPy bools and 0-d arrays are arrays, as in NumPy.
PyObject* IntegerLike(PyObject* o) {
  if (PyBool_Check(o) || PyList_Check(o) || !PyIndex_Check(o)) return nullptr;
  if (!IsNumpyScalar(o) && PyObject_HasAttrString(o, "__array_interface__")) return nullptr;
  PyObject* v = PyNumber_Index(o);
  if (v == nullptr) PyErr_Clear();
  return v;
}

// One index item given as a Python object: int, slice (int or None bounds), None, Ellipsis,
// an integer-like object (NumPy integers), or an array-like (a list, a bool, a NumPy array).
absl::Status ReadIndexItem(PyObject* o, std::vector<IndexItem>* items, ParsedCall* call) {
  IndexItem it{IndexItem::kInt};
  if (pyargs::IsInt(o)) {
    PIJIT_RETURN_IF_ERROR(pyargs::ReadInt("index", "an index", o, &it.start));
  } else if (PySlice_Check(o)) {
    auto* s = reinterpret_cast<PySliceObject*>(o);
    it.kind = IndexItem::kSlice;
    int64_t* fields[3] = {&it.start, &it.stop, &it.step};
    PyObject* vals[3] = {s->start, s->stop, s->step};
    for (int k = 0; k < 3; ++k) {
      if (vals[k] == Py_None) continue;
      PyObject* v = PyNumber_Index(vals[k]);
      if (v == nullptr || PyBool_Check(vals[k])) {
        Py_XDECREF(v);
        PyErr_Clear();
        return pyargs::TypeError(absl::StrFormat(
            "index: slice indices must be integers or None, got %s", Py_TYPE(vals[k])->tp_name));
      }
      int overflow = 0;
      long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
      Py_DECREF(v);
      // Out-of-range slice bounds clamp, as in Python.
      if (overflow) x = overflow > 0 ? INT64_MAX : INT64_MIN + 1;
      *fields[k] = x;
    }
  } else if (o == Py_None) {
    it.kind = IndexItem::kNewAxis;
  } else if (o == Py_Ellipsis) {
    it.kind = IndexItem::kEllipsis;
  } else if (PyObject* v = IntegerLike(o)) {
    absl::Status st = pyargs::ReadInt("index", "an index", v, &it.start);
    Py_DECREF(v);
    PIJIT_RETURN_IF_ERROR(st);
  } else if (PyBool_Check(o) || PyList_Check(o) || PyObject_HasAttrString(o, "__array_interface__")) {
    // NumPy treats these as arrays: a list of ints indexes, a bool is a 0-d mask.
    it.kind = IndexItem::kArray;
    it.start = static_cast<int64_t>(call->operands.size()) - 1;
    Operand a;
    a.array = o;
    call->operands.push_back(a);
  } else {
    return BadIndex(Py_TYPE(o)->tp_name);
  }
  items->push_back(it);
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseIndex(const ArgView& ix, int slot, ParsedCall* call) {
  std::vector<IndexItem> items;
  auto tensor_item = [&](int item) {
    IndexItem it{IndexItem::kArray};
    it.start = static_cast<int64_t>(call->operands.size()) - 1;
    items.push_back(it);
    Operand o;
    o.arg = slot;
    o.item = item;
    call->operands.push_back(o);
  };
  if (ix.is_tensor) {
    tensor_item(-1);
  } else if (ix.is_seq) {
    if (ix.is_list) {
      return absl::NotFoundError(
          "index: a list holding Tensors is not a valid index; index with a Tensor, or with a "
          "tuple of Tensors for several axes");
    }
    for (size_t j = 0; j < ix.items.size(); ++j) {
      const ArgView& v = ix.items[j];
      if (v.is_tensor) {
        tensor_item(static_cast<int>(j));
      } else if (v.is_seq) {
        return BadIndex("a nested sequence holding Tensors");
      } else {
        PIJIT_RETURN_IF_ERROR(ReadIndexItem(v.object, &items, call));
      }
    }
  } else if (PyTuple_Check(ix.object)) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(ix.object); ++i)
      PIJIT_RETURN_IF_ERROR(ReadIndexItem(PyTuple_GET_ITEM(ix.object, i), &items, call));
  } else {
    PIJIT_RETURN_IF_ERROR(ReadIndexItem(ix.object, &items, call));
  }
  call->attrs.ints = EncodeIndex(items);
  call->gop = call->operands.size() > 1 ? graph::Op::kAdvIndex : graph::Op::kIndex;
  return absl::OkStatus();
}

absl::Status SetItem(PyObject* self, PyObject* index, PyObject* value) {
  Tensor* dst = AsTensor(self);
  if (dst == nullptr) return absl::InternalError("__setitem__: self is not a Tensor");
  const Tensor* value_tensor = AsTensor(value);
  if (dst->device() != Device::kCPU || (value_tensor != nullptr && value_tensor->device() != Device::kCPU)) {
    return absl::UnimplementedError(absl::StrFormat(
        "__setitem__: item assignment into a tensor on the %s is not supported yet; move it with "
        "move_to(\"CPU\") first", DeviceName(dst->device())));
  }
  // The index parses as __getitem__'s (self, index) arguments do in eager calls.
  ArgView views[2];
  views[0].is_tensor = true;
  views[1].object = index;
  views[1].is_tensor = AsTensor(index) != nullptr;
  std::vector<ArgView> items;
  if (PyTuple_Check(index)) {
    bool has_tensor = false;
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(index); ++j)
      has_tensor |= AsTensor(PyTuple_GET_ITEM(index, j)) != nullptr;
    if (has_tensor) {
      for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(index); ++j) {
        ArgView v;
        v.object = PyTuple_GET_ITEM(index, j);
        v.is_tensor = AsTensor(v.object) != nullptr;
        items.push_back(v);
      }
      views[1].is_seq = true;
      views[1].items = items;
    }
  }
  ParsedCall call;
  call.op = PyOp::kGetItem;
  call.operands = {Operand{0}};
  PIJIT_RETURN_IF_ERROR(ParseIndex(views[1], 1, &call));
  absl::InlinedVector<const Tensor*, 3> given;
  for (const Operand& o : call.operands) {
    if (o.array != nullptr) given.push_back(nullptr);
    else if (o.arg == 0) given.push_back(dst);
    else given.push_back(AsTensor(o.item >= 0 ? PyTuple_GET_ITEM(index, o.item) : index));
  }
  absl::InlinedVector<Tensor, 3> constants;
  absl::InlinedVector<const Tensor*, 3> operands;
  PIJIT_RETURN_IF_ERROR(ResolveOperands(call, given, &constants, &operands));
  PIJIT_ASSIGN_OR_RETURN(Tensor v, SetItemValue(value, dst->dtype()));
  // Integers for every axis select one element: NumPy assigns only a single value there.
  bool one_element = call.operands.size() == 1 &&
                     static_cast<int64_t>(call.attrs.ints.size()) == 4 * dst->ndim();
  for (size_t i = 0; one_element && i < call.attrs.ints.size(); i += 4)
    one_element = call.attrs.ints[i] == IndexItem::kInt;
  if (one_element && v.ndim() > 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "__setitem__: setting an array element with a sequence: the index selects one element of "
        "a tensor of shape %s, the value has shape %s", ShapeToString(dst->shape()),
        ShapeToString(v.shape())));
  }
  if (Tape* tape = ActiveTape(); tape != nullptr && (tape->Tracks(self) || tape->Tracks(value))) {
    return absl::UnimplementedError(
        "grad: __setitem__ writes in place into a tensor the gradient tape records; in-place "
        "assignment is not differentiable (build the result with ops.where or concat instead)");
  }
  return IndexPut(*dst, absl::MakeSpan(operands).subspan(1), call.attrs.ints, v,
                  /*accumulate=*/false);
}

}  // namespace pijit
