// Op calls on values of the trace become graph nodes (op_bridge.h).
#include "bytecode/op_bridge.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "bytecode/interp.h"
#include "interop/convert.h"

namespace pijit::bytecode {

namespace {

// True when `type` (a Tensor subclass) defines `name` differently from Tensor.
bool OverridesTensorMethod(PyTypeObject* type, const char* name) {
  PyObject* n = PyUnicode_InternFromString(name);
  const bool differs = _PyType_Lookup(type, n) != _PyType_Lookup(g_tensor_type, n);
  Py_DECREF(n);
  return differs;
}

// Whether a node of `inputs` with attributes `attrs` takes or makes a complex tensor: graphs
// refuse those (graph/complex_support.h), and the step runs eagerly instead.
bool TouchesComplex(const graph::Graph& g, absl::Span<const graph::NodeId> inputs,
                    const graph::Attrs& attrs) {
  for (graph::NodeId i : inputs)
    if (IsComplex(g.node(i).meta.dtype)) return true;
  return attrs.dtype && IsComplex(*attrs.dtype);
}

}  // namespace

// A node the graph refused: a complex step is an op graphs do not take (the call runs it
// eagerly); anything else is the call's own error, which the eager run raises.
void OpBridge::FailNode(absl::Span<const graph::NodeId> inputs, const graph::Attrs& attrs,
                        const absl::Status& status) {
  if (TouchesComplex(g(), inputs, attrs)) {
    Fail(BreakCategory::kUnsupportedOp, std::string(status.message()),
         "complex tensors run eagerly: this step runs as Python, with the eager result");
    return;
  }
  Fail(BreakCategory::kInvalidInput, std::string(status.message()),
       "the call runs eagerly and raises this error there");
}

void OpBridge::Fail(BreakCategory category, std::string explanation, std::string hint) {
  trace_.Fail(category, std::move(explanation), std::move(hint));
}
void OpBridge::UseConst(const Value& v) { trace_.UseConst(v); }
PyObject* OpBridge::AsPyObject(const Value& v) { return trace_.AsPyObject(v); }
graph::Graph& OpBridge::g() { return trace_.g(); }
ValueModel& OpBridge::values() { return trace_.values(); }

// NumPy scalar arguments become 0-d constants of their dtype in the graph; where the op takes
// a Python number (an axis, a size), (*numbers)[i] is the number the scalar holds
// (ArgView::number). (A NumPy integer index is a basic index, as in NumPy: __getitem__'s
// arguments are left alone.)
bool OpBridge::NumpyScalarsAsConstants(ValueList* args, absl::InlinedVector<PyObject*, 4>* numbers) {
  for (size_t i = 0; i < args->size(); ++i) {
    Value& a = (*args)[i];
    if (a.kind != Value::kConst || !IsNumpyScalar(a.obj)) continue;
    auto t = NumpyScalarTensor(a.obj);
    if (!t.ok()) {
      Fail(BreakCategory::kInvalidInput, std::string(t.status().message()));
      return false;
    }
    if (PyObject* item = NumpyNumberItem(a.obj)) (*numbers)[i] = values().Keep(item);
    UseConst(a);
    Value c;
    c.kind = Value::kTensor;
    c.node = g().AddConstant(std::move(*t));
    c.type = g_tensor_type;
    a = c;
  }
  return true;
}

bool OpBridge::Call(PyOp op, const ValueList& in_args, const std::vector<std::string>& kwnames,
                    Value* out) {
  ValueList args = in_args;
  absl::InlinedVector<PyObject*, 4> numbers(args.size(), nullptr);
  if (op != PyOp::kGetItem && !NumpyScalarsAsConstants(&args, &numbers)) return false;
  // Views of the arguments for ParseCall; sequences holding tensors (concat, stack) get
  // item views.
  std::vector<ArgView> views(args.size());
  std::vector<std::vector<ArgView>> seqs;
  seqs.reserve(args.size());
  // A dynamic number in arithmetic is not guarded by value: unless it stays a constant
  // below, it becomes a graph parameter.
  const bool arithmetic =
      op == PyOp::kAdd || op == PyOp::kSub || op == PyOp::kMul || op == PyOp::kDiv;
  absl::InlinedVector<bool, 3> dynamic_number(args.size(), false);
  for (size_t i = 0; i < args.size(); ++i) {
    const Value& a = args[i];
    dynamic_number[i] = arithmetic && (values().IsDynamicNumber(a) || (a.kind == Value::kConst && a.number));
    if (!dynamic_number[i]) UseConst(a);
    if (a.kind == Value::kTensor) {
      views[i].is_tensor = true;
      views[i].number = numbers[i];
      continue;
    }
    bool has_tensor = false;
    if (a.kind == Value::kSeq)
      for (const Value& item : *a.items) has_tensor |= item.kind == Value::kTensor;
    if (has_tensor) {
      std::vector<ArgView> items(a.items->size());
      for (size_t j = 0; j < a.items->size(); ++j) {
        const Value& item = (*a.items)[j];
        items[j].is_tensor = item.kind == Value::kTensor;
        items[j].object = items[j].is_tensor ? nullptr : AsPyObject(item);
        if (!items[j].is_tensor && !items[j].object) {
          Fail(BreakCategory::kUnsupportedCall, absl::StrFormat("item %d of an argument of %s is unknown", j,
                                                   PyOpName(op)));
          return false;
        }
      }
      seqs.push_back(std::move(items));
      views[i].is_seq = true;
      views[i].is_list = a.is_list;
      views[i].items = seqs.back();
      continue;
    }
    views[i].object = AsPyObject(a);
    if (!views[i].object) {
      Fail(BreakCategory::kUnsupportedCall,
           absl::StrFormat("argument of %s is not a tensor or a known Python value", PyOpName(op)));
      return false;
    }
  }
  auto call = ParseCall(op, views, kwnames);
  if (!call.ok()) {
    Fail(BreakCategory::kInvalidInput, std::string(call.status().message()),
         "the call runs eagerly and raises this error there");
    return false;
  }
  auto tensor_of = [&](const Operand& o) {
    return o.item >= 0 ? (*args[o.arg].items)[o.item].node : args[o.arg].node;
  };
  absl::InlinedVector<graph::NodeId, 3> inputs;
  for (const Operand& o : call->operands) {
    if (o.array) {
      // An index given as a list or a bool is a constant of the graph; a NumPy array may
      // change between calls without a guard seeing it, so it is indexed in Python.
      if (!PyList_Check(o.array) && !PyBool_Check(o.array)) {
        Fail(BreakCategory::kUnsupportedOperator, absl::StrFormat("indexing with a %s", Py_TYPE(o.array)->tp_name),
             "index with a pijit Tensor or a list to capture the indexing in the graph");
        return false;
      }
      auto t = IndexArrayTensor(o.array);
      if (!t.ok()) {
        Fail(BreakCategory::kInvalidInput, std::string(t.status().message()),
             "the call runs eagerly and raises this error there");
        return false;
      }
      inputs.push_back(g().AddConstant(std::move(*t)));
      continue;
    }
    if (!o.scalar) {
      inputs.push_back(tensor_of(o));
      continue;
    }
    // A Python scalar follows the dtype of the operand it is combined with.
    const graph::NodeId like = tensor_of(call->operands[o.like]);
    const DType like_dtype = g().node(like).meta.dtype;
    if (const int i = o.scalar_arg; i >= 0 && dynamic_number[i]) {
      // Next to a floating tensor an int or float converts the same way whatever its value;
      // elsewhere (integer tensors may overflow) it stays a guarded constant.
      if (like_dtype == DType::kFloat32 || like_dtype == DType::kFloat64) {
        if (!args[i].number) {
          inputs.push_back(values().NumberParam(args[i].source, args[i].obj, like_dtype));
          continue;
        }
        // A computed number converts as eager converts the Python result: one rounding.
        graph::NodeId n = args[i].number->node;
        if (g().node(n).meta.dtype != like_dtype) {
          auto c = g().AddOp(graph::Op::kCast, {n}, CastTo(like_dtype));
          if (!c.ok()) {
            Fail(BreakCategory::kInternal, std::string(c.status().message()));
            return false;
          }
          n = *c;
        }
        inputs.push_back(n);
        continue;
      }
      dynamic_number[i] = false;
      UseConst(args[i]);
    }
    auto sc = ScalarOperand(PyOpName(op), o.scalar, like_dtype);
    if (!sc.ok()) {
      Fail(BreakCategory::kInvalidInput, std::string(sc.status().message()));
      return false;
    }
    inputs.push_back(g().AddConstant(std::move(*sc)));
  }
  for (size_t i = 0; i < args.size(); ++i) {
    bool used = false;
    for (const Operand& o : call->operands) used |= o.scalar_arg == static_cast<int>(i);
    if (!used && dynamic_number[i]) UseConst(args[i]);
  }
  if (call->gop == graph::Op::kAdvIndex) {
    for (size_t i = 1; i < inputs.size(); ++i) {
      if (g().node(inputs[i]).meta.dtype != DType::kBool) continue;
      Fail(BreakCategory::kDataDependent, "indexing with a boolean mask: the result's shape depends on the mask's values",
           "the indexing runs in Python; ops.where keeps a masked computation in the graph");
      return false;
    }
  }
  auto node = g().AddOp(call->gop, inputs, call->attrs);
  if (!node.ok()) {
    FailNode(inputs, call->attrs, node.status());
    return false;
  }
  *out = Value::Tensor(*node, g_tensor_type);
  return true;
}

bool OpBridge::Cast(const ValueList& args, const std::vector<std::string>& names, Value* out) {
  // Tensor.astype(dtype): the dtype must be known at capture time (it is guarded).
  if (args.size() != 2 || (!names.empty() && names[0] != "dtype") || args[1].kind != Value::kConst) {
    Fail(BreakCategory::kUnsupportedCall, "Tensor.astype with a dtype unknown at capture time");
    return false;
  }
  auto dtype = DTypeFromObject("astype", args[1].obj);
  if (!dtype.ok()) {
    Fail(BreakCategory::kInvalidInput, std::string(dtype.status().message()));
    return false;
  }
  UseConst(args[1]);
  const graph::Attrs cast_to = CastTo(*dtype);
  auto node = g().AddOp(graph::Op::kCast, {args[0].node}, cast_to);
  if (!node.ok()) {
    FailNode({args[0].node}, cast_to, node.status());
    return false;
  }
  *out = Value::Tensor(*node, g_tensor_type);
  return true;
}

bool OpBridge::Operator(PyOp op, const Value& a, const Value& b, Value* out) {
  // A Tensor subclass that overrides the operator runs its own code.
  static const char* const kDunders[][2] = {{"__add__", "__radd__"}, {"__sub__", "__rsub__"},
                                             {"__mul__", "__rmul__"}, {"__truediv__", "__rtruediv__"},
                                             {"__matmul__", "__rmatmul__"}};
  const int di = op == PyOp::kAdd ? 0 : op == PyOp::kSub ? 1 : op == PyOp::kMul ? 2
               : op == PyOp::kDiv ? 3 : op == PyOp::kMatMul ? 4 : -1;
  for (int side = 0; side < 2; ++side) {
    const Value& v = side == 0 ? a : b;
    if (v.kind != Value::kTensor || v.type == g_tensor_type) continue;
    if (di < 0 || OverridesTensorMethod(v.type, kDunders[di][side]) ||
        OverridesTensorMethod(v.type, kDunders[di][1 - side])) {
      Fail(BreakCategory::kUnsupportedOperator,
           absl::StrFormat("%s overrides the operator", v.type->tp_name),
           "the operator of a Tensor subclass runs eagerly");
      return false;
    }
  }
  for (const Value* v : {&a, &b}) {
    if (v->kind == Value::kConst && !IsPyScalar(v->obj) && !IsNumpyScalar(v->obj)) {
      // Builtin types know nothing of tensors: eager Python raises TypeError. Other types
      // (NumPy arrays, user classes) may implement the reflected operator.
      const bool builtin = !(Py_TYPE(v->obj)->tp_flags & Py_TPFLAGS_HEAPTYPE) &&
                           std::string_view(Py_TYPE(v->obj)->tp_name).find("numpy") ==
                               std::string_view::npos;
      Fail(builtin ? BreakCategory::kPythonError : BreakCategory::kUnsupportedOperator,
           absl::StrFormat("%s of a Tensor and a %s", PyOpName(op), Py_TYPE(v->obj)->tp_name),
           "use a Tensor or a Python bool, int or float");
      return false;
    }
    if (v->kind != Value::kConst && v->kind != Value::kTensor) {
      Fail(BreakCategory::kUnsupportedOperator, absl::StrFormat("%s of a Tensor and a container", PyOpName(op)));
      return false;
    }
  }
  return Call(op, {a, b}, {}, out);
}

bool OpBridge::NumberArith(int base, const Value& a, const Value& b, Value* out) {
  constexpr int kAdd = 0, kMul = 5, kSub = 10, kDiv = 11;  // NB_ADD, NB_MULTIPLY, ...
  if (base != kAdd && base != kMul && base != kSub && base != kDiv) return false;
  if (a.kind != Value::kConst || b.kind != Value::kConst) return false;
  auto number_or_plain = [](const Value& v) {
    return PyFloat_CheckExact(v.obj) || PyLong_CheckExact(v.obj);  // (bool is not exact int)
  };
  if (!number_or_plain(a) || !number_or_plain(b)) return false;
  auto na = values().NumberOf(a), nb = values().NumberOf(b);
  if (!na && !nb) return false;
  // Python raises on a zero divisor where the graph would give inf: the divisor must be a
  // known constant (not zero).
  if (base == kDiv && (nb || PyObject_IsTrue(b.obj) != 1)) return false;
  const bool ints = PyLong_CheckExact(a.obj) && PyLong_CheckExact(b.obj) && base != kDiv;
  // An operand's graph node in the result's dtype: int64 for int results, else float64.
  int bits_a = 0, bits_b = 0;
  auto operand = [&](const Value& v, const std::shared_ptr<const NumberInfo>& n,
                     int* bits) -> graph::NodeId {
    if (n) {
      *bits = n->bits;
      const DType have = g().node(n->node).meta.dtype;
      if (ints || have == DType::kFloat64) return n->node;
      auto c = g().AddOp(graph::Op::kCast, {n->node}, CastTo(DType::kFloat64));
      return c.ok() ? *c : -1;
    }
    // A number that is not a graph input: its value becomes a constant of the graph, so the
    // entry holds only while it is that value (an argument or a global next to a dynamic
    // number in `n = n + by` is guarded by value).
    UseConst(v);
    if (PyLong_CheckExact(v.obj)) {
      int overflow = 0;
      const long long x = PyLong_AsLongLongAndOverflow(v.obj, &overflow);
      if (overflow || x <= -(1LL << 52) || x >= (1LL << 52)) return -1;
      *bits = 64 - __builtin_clzll(static_cast<unsigned long long>(x < 0 ? -x : x) | 1);
      return ints ? g().AddConstant(Tensor::Scalar<int64_t>(x))
                  : g().AddConstant(Tensor::Scalar<double>(static_cast<double>(x)));
    }
    return g().AddConstant(Tensor::Scalar<double>(PyFloat_AS_DOUBLE(v.obj)));
  };
  const graph::NodeId x = operand(a, na, &bits_a);
  const graph::NodeId y = operand(b, nb, &bits_b);
  if (x < 0 || y < 0) return false;
  int bits = 0;
  if (ints) {
    bits = base == kMul ? bits_a + bits_b : std::max(bits_a, bits_b) + 1;
    if (bits > 52) return false;  // past what stays exact: Python's value instead
  }
  const graph::Op op = base == kAdd ? graph::Op::kAdd : base == kSub ? graph::Op::kSub
                       : base == kMul ? graph::Op::kMul : graph::Op::kDiv;
  auto node = g().AddOp(op, {x, y});
  if (!node.ok()) return false;
  // This call's value, computed by Python as the eager run does.
  static PyObject* (*const kOps[])(PyObject*, PyObject*) = {
      PyNumber_Add, nullptr, nullptr, nullptr, nullptr, PyNumber_Multiply, nullptr, nullptr,
      nullptr, nullptr, PyNumber_Subtract, PyNumber_TrueDivide};
  PyObject* r = kOps[base](a.obj, b.obj);
  if (!r) {
    PyErr_Clear();
    return false;
  }
  auto info = std::make_shared<NumberInfo>();
  info->node = *node;
  info->bits = bits;
  for (const auto* n : {na.get(), nb.get()})
    if (n) info->origins.insert(info->origins.end(), n->origins.begin(), n->origins.end());
  *out = Value::Const(values().Keep(r));
  out->number = std::move(info);
  return true;
}

}  // namespace pijit::bytecode
