#include "runtime/eager_ops.h"

#include <chrono>
#include <string>
#include <vector>

#include "graph/backend.h"
#include "graph/executor.h"
#include "graph/op_profile.h"
#include "interop/convert.h"
#include "runtime/tape.h"

namespace pijit {

namespace {

// What the direct path needs of each op, looked up once: whether it is an elementwise op it
// takes, and its kernel.
struct DirectOp {
  PyOpArity arity = PyOpArity::kOther;
  graph::Op gop;
  bool binary_kernel = false, unary_kernel = false;
  BinaryOp binary;
  UnaryOp unary;
};

const DirectOp& DirectOpOf(PyOp op) {
  static const auto* table = [] {
    auto* t = new DirectOp[kNumPyOps];
    for (size_t i = 0; i < kNumPyOps; ++i) {
      const PyOp p = static_cast<PyOp>(i);
      t[i].arity = PyOpElementwiseArity(p);
      t[i].gop = PyOpGraphOp(p);
      t[i].binary_kernel = graph::AsBinary(t[i].gop, &t[i].binary);
      t[i].unary_kernel = graph::AsUnary(t[i].gop, &t[i].unary);
    }
    return t;
  }();
  return table[static_cast<size_t>(op)];
}

// Runs `kernel` (a call giving absl::StatusOr<Tensor>) for op `op` and returns its result as
// a new tensor object, or nullptr with the Python error the eager call raises (MemoryError
// when the result cannot be allocated).
template <typename Kernel>
PyObject* WrapKernelResult(PyOp op, Kernel&& kernel) {
  absl::StatusOr<Tensor> out;
  try {
    if (graph::OpProfilingOn()) {
      const auto start = std::chrono::steady_clock::now();
      out = kernel();
      if (out.ok()) {
        graph::AddOpTime(PyOpName(op), MetaOf(*out), /*eager=*/true,
                         std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      }
    } else {
      out = kernel();
    }
  } catch (const std::bad_alloc&) {
    PyErr_Format(PyExc_MemoryError, "%s: out of memory allocating the result", PyOpName(op));
    return nullptr;
  }
  if (!out.ok()) {
    SetPyError(out.status());
    return nullptr;
  }
  return WrapTensor(std::move(*out));
}

// A binary op on tensors of which one is on a device: there (a 0-d host operand goes along).
absl::StatusOr<Tensor> BinaryOnDevice(PyOp op, const Tensor& a, const Tensor& b) {
  graph::Node n;
  n.op = PyOpGraphOp(op);
  const Tensor* operands[] = {&a, &b};
  return graph::RunNodeWhereInputsAre(n, operands);
}

// Runs op `d` with no attributes on `operands` and wraps the result, as the parsed call's
// ApplyEager does: straight to the kernel where there is one (what RunNode would call).
PyObject* RunDirect(PyOp op, const DirectOp& d, absl::Span<const Tensor* const> operands) {
  if (graph::DeviceOfInputs(operands) != Device::kCPU) {
    return WrapKernelResult(op, [&]() -> absl::StatusOr<Tensor> {
      graph::Node n;
      n.op = d.gop;
      return graph::RunNodeWhereInputsAre(n, operands);  // where the tensors are
    });
  }
  return WrapKernelResult(op, [&]() -> absl::StatusOr<Tensor> {
    if (operands.size() == 2 && d.binary_kernel)
      return Binary(d.binary, *operands[0], *operands[1]);
    if (operands.size() == 1 && d.unary_kernel) return Unary(d.unary, *operands[0]);
    graph::Node n;
    n.op = d.gop;
    return graph::RunNode(n, operands);
  });
}

}  // namespace

PyObject* DirectBinary(PyOp op, BinaryOp kernel, PyObject* a, PyObject* b) {
  if (ActiveTape() != nullptr) return nullptr;
  const Tensor* ta = AsTensor(a);
  const Tensor* tb = AsTensor(b);
  if (ta && tb) {
    if (ta->device() == Device::kCPU && tb->device() == Device::kCPU) {
      return WrapKernelResult(op, [&] { return Binary(kernel, *ta, *tb); });
    }
    return WrapKernelResult(op, [&] { return BinaryOnDevice(op, *ta, *tb); });
  }
  // A Python scalar takes the dtype NumPy's weak-scalar rule gives next to the tensor.
  const Tensor* t = ta ? ta : tb;
  PyObject* s = ta ? b : a;
  if (!t || !IsPyScalar(s)) return nullptr;
  absl::StatusOr<Tensor> c = ScalarOperand(PyOpName(op), s, t->dtype());
  if (!c.ok()) {
    SetPyError(c.status());
    return nullptr;
  }
  if (t->device() != Device::kCPU) {
    return WrapKernelResult(op, [&] { return ta ? BinaryOnDevice(op, *ta, *c) : BinaryOnDevice(op, *c, *tb); });
  }
  return WrapKernelResult(op, [&] {
    return ta ? Binary(kernel, *ta, *c) : Binary(kernel, *c, *tb);
  });
}

PyObject* DirectEager(PyOp op, PyObject* const* args, Py_ssize_t nargs) {
  const DirectOp& d = DirectOpOf(op);
  if (d.arity == PyOpArity::kOther) return nullptr;
  if (nargs == 2 && d.binary_kernel && d.arity == PyOpArity::kBinary)
    return DirectBinary(op, d.binary, args[0], args[1]);
  if (ActiveTape() != nullptr) return nullptr;
  if (d.arity == PyOpArity::kUnary) {
    if (nargs != 1) return nullptr;
    const Tensor* t = AsTensor(args[0]);
    return t ? RunDirect(op, d, {t}) : nullptr;
  }
  if (nargs != 2) return nullptr;
  // matmul: tensors only, and no elementwise kernel.
  const Tensor* a = AsTensor(args[0]);
  const Tensor* b = AsTensor(args[1]);
  return a && b ? RunDirect(op, d, {a, b}) : nullptr;
}

PyObject* CallEager(PyOp op, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  if (kwnames == nullptr) {
    if (PyObject* r = DirectEager(op, args, nargs)) return r;
    if (PyErr_Occurred()) return nullptr;
  }
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  const Py_ssize_t n = nargs + nkw;
  absl::InlinedVector<ArgView, 4> views(n);
  // Item views of list/tuple arguments that hold tensors (concat, stack).
  absl::InlinedVector<std::vector<ArgView>, 1> seqs;
  absl::InlinedVector<std::string, 2> names;
  // NumPy scalars are 0-d tensors of their dtype (not weak like Python scalars): pass them
  // on as pijit Tensors.
  absl::InlinedVector<PyObject*, 4> own;
  struct Release {
    absl::InlinedVector<PyObject*, 4>& v;
    ~Release() {
      for (PyObject* o : v) Py_DECREF(o);
    }
  } release{own};
  absl::InlinedVector<PyObject*, 4> argv(args, args + n);
  for (Py_ssize_t i = 0; i < n; ++i) {
    // A NumPy integer index is a basic index (a view), as in NumPy.
    if (op == PyOp::kGetItem) break;
    if (AsTensor(argv[i]) || IsPyScalar(argv[i])) continue;
    // Where the op takes a Python number (an axis, a size, a fill value), a NumPy scalar or
    // 0-d array is that number; as an operand, a 0-d tensor of its dtype.
    PyObject* item = NumpyNumberItem(argv[i]);
    if (!item && !IsNumpyScalar(argv[i])) continue;
    if (item) {
      views[i].number = item;
      own.push_back(item);
    }
    auto t = NumpyScalarTensor(argv[i]);
    if (!t.ok()) {
      SetPyError(t.status());
      return nullptr;
    }
    argv[i] = WrapTensor(std::move(*t));
    own.push_back(argv[i]);
  }
  args = argv.data();
  for (Py_ssize_t i = 0; i < n; ++i) {
    views[i].object = args[i];
    views[i].is_tensor = AsTensor(args[i]) != nullptr;
    if (!PyList_Check(args[i]) && !PyTuple_Check(args[i])) continue;
    const Py_ssize_t len = PySequence_Fast_GET_SIZE(args[i]);
    PyObject** items = PySequence_Fast_ITEMS(args[i]);
    bool has_tensor = false;
    for (Py_ssize_t j = 0; j < len && !has_tensor; ++j) has_tensor = AsTensor(items[j]) != nullptr;
    if (!has_tensor) continue;
    std::vector<ArgView> item_views(len);
    for (Py_ssize_t j = 0; j < len; ++j) {
      item_views[j].object = items[j];
      item_views[j].is_tensor = AsTensor(items[j]) != nullptr;
    }
    seqs.push_back(std::move(item_views));
    views[i].is_seq = true;
    views[i].is_list = PyList_Check(args[i]);
    views[i].items = seqs.back();
  }
  for (Py_ssize_t k = 0; k < nkw; ++k) names.emplace_back(PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k)));
  auto call = ParseCall(op, views, names);
  if (!call.ok()) {
    SetPyError(call.status());
    return nullptr;
  }
  absl::InlinedVector<PyObject*, 3> objects;
  absl::InlinedVector<const Tensor*, 3> operands;
  for (const Operand& o : call->operands) {
    if (o.scalar || o.array) objects.push_back(nullptr);
    else if (o.item >= 0) objects.push_back(PySequence_Fast_ITEMS(args[o.arg])[o.item]);
    else objects.push_back(args[o.arg]);
    operands.push_back(objects.back() ? AsTensor(objects.back()) : nullptr);
  }
  PyObject* result = WrapKernelResult(call->op, [&] { return ApplyEager(*call, operands); });
  if (ActiveTape() != nullptr && result != nullptr) RecordCall(*call, objects, operands, result);
  return result;
}

namespace {

// pijit.ops functions: one fast-call builtin per op, so each has its own name; capture
// recognises them by their C function.
template <PyOp op>
PyObject* OpFastcall(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return CallEager(op, args, nargs, kwnames);
}
PyMethodDef g_op_defs[] = {
#define PIJIT_PYOP(e, name, gop, sig, surface)                                             \
  {name, reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(OpFastcall<PyOp::e>)), \
   METH_FASTCALL | METH_KEYWORDS, "pijit." name "(...): see pijit.ops"},
#include "interop/pyops.def"
#undef PIJIT_PYOP
};

// Tensor methods: one fast-call function per op (methods have no closure to carry it).
template <PyOp op>
PyObject* MethodFastcall(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  const Py_ssize_t n = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
  absl::InlinedVector<PyObject*, 4> all(n + 1);
  all[0] = self;
  for (Py_ssize_t i = 0; i < n; ++i) all[i + 1] = args[i];
  return CallEager(op, all.data(), nargs + 1, kwnames);
}

PyMethodDef g_method_defs[] = {
#define PIJIT_PYOP(e, name, gop, sig, surface)                                               \
  {name, reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(MethodFastcall<PyOp::e>)), \
   METH_FASTCALL | METH_KEYWORDS, nullptr},
#include "interop/pyops.def"
#undef PIJIT_PYOP
};

}  // namespace

absl::Span<PyMethodDef> OpFunctionDefs() { return absl::MakeSpan(g_op_defs); }
absl::Span<PyMethodDef> OpMethodDefs() { return absl::MakeSpan(g_method_defs); }

PyObject* BinaryOperator(PyOp op, PyObject* a, PyObject* b) {
  auto operand = [](PyObject* o) { return AsTensor(o) || IsPyScalar(o) || IsNumpyScalar(o); };
  if (!operand(a) || !operand(b)) Py_RETURN_NOTIMPLEMENTED;
  PyObject* args[2] = {a, b};
  return CallEager(op, args, 2, nullptr);
}

}  // namespace pijit
