#include "bytecode/capture.h"

#include <memory>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bytecode/cfg.h"
#include "bytecode/instructions.h"
#include "pijit/csrc/convert.h"
#include "pijit/csrc/module.h"
#include "pijit/csrc/pyops.h"

namespace pijit::bytecode {

std::string BreakReason::ToText() const {
  std::string s = absl::StrCat(category, " at ", file, ":", line, ": ", explanation);
  if (!hint.empty()) absl::StrAppend(&s, " (hint: ", hint, ")");
  return s;
}

OutputSpec& OutputSpec::operator=(OutputSpec&& o) noexcept {
  if (this != &o) {
    Py_XDECREF(constant);
    kind = o.kind;
    index = o.index;
    constant = o.constant;
    o.constant = nullptr;
    items = std::move(o.items);
  }
  return *this;
}

namespace {

using guards::Source;

// BINARY_OP arguments of the running interpreter.
enum NbOp : int {
#define PIJIT_NB_OP(name, num, symbol) name = num,
#include "bytecode/binops_py311.def"
#undef PIJIT_NB_OP
};

// An abstract value on the simulated stack or in a local slot.
struct Value {
  enum Kind : uint8_t { kUndef, kNull, kTensor, kConst, kSeq, kTensorMethod };
  Kind kind = kUndef;
  graph::NodeId node = -1;  // kTensor
  PyObject* obj = nullptr;  // kConst (kept alive by Interp::keep_)
  int32_t source = -1;      // where a kConst or kTensor came from, -1 if computed
  PyTypeObject* type = nullptr;  // kTensor: the exact Python type (guarded for inputs)
  std::shared_ptr<std::vector<Value>> items;  // kSeq
  bool is_list = false;
  PyOp method = PyOp::kAdd;  // kTensorMethod

  static Value Const(PyObject* o, int32_t source = -1) {
    Value v;
    v.kind = kConst;
    v.obj = o;
    v.source = source;
    return v;
  }
};

// Stops interpretation with a reason; carried by the Status message of the step functions.
struct Stop {
  std::string category, explanation, hint;
};

class Interp {
 public:
  Interp(PyCodeObject* code, PyObject* func, PyObject* const* args, int nargs, CaptureResult* out)
      : co_(code), func_(func), args_(args), nargs_(nargs), out_(out) {}

  void Run();

 private:
  guards::GuardProgram& gp() { return *out_->guards; }
  PyObject* Keep(PyObject* o) {  // steals
    keep_.push_back(o);
    return o;
  }
  void Fail(int pc, std::string category, std::string explanation, std::string hint = "");

  bool Step(const Instr& in, int pc);
  bool Pop(Value* v);
  bool PopN(size_t n, std::vector<Value>* out);
  // A value loaded from `source` whose object is `obj`: tensors become graph parameters.
  bool FromSource(int32_t source, PyObject* obj, Value* out);
  bool TensorMeta(const Value& v, pijit::TensorMeta* meta) const;
  bool CallOp(PyOp op, const std::vector<Value>& args, const std::vector<std::string>& kwnames,
              Value* out);
  bool Call(const Value& callable, std::vector<Value> args, Value* out);
  bool LoadAttr(const Value& owner, PyObject* name, bool method);
  bool BinaryOp(int nb, const Value& a, const Value& b, Value* out);
  bool MakeOutput(const Value& v, OutputSpec* spec);
  bool UseConst(const Value& v);

  PyCodeObject* co_;
  PyObject* func_;
  PyObject* const* args_;
  int nargs_;
  CaptureResult* out_;
  int pc_ = 0;
  std::vector<Value> locals_, stack_;
  std::vector<PyObject*> keep_;
  PyObject* kwnames_ = nullptr;
  absl::flat_hash_map<int32_t, graph::NodeId> param_of_source_;
  absl::flat_hash_map<graph::NodeId, int32_t> output_of_node_;
  std::vector<graph::NodeId> outputs_;
  bool failed_ = false;

 public:
  ~Interp() {
    for (PyObject* o : keep_) Py_DECREF(o);
  }
};

void Interp::Fail(int pc, std::string category, std::string explanation, std::string hint) {
  if (failed_) return;
  failed_ = true;
  BreakReason& r = out_->reason;
  r.category = std::move(category);
  r.file = PyUnicode_AsUTF8(co_->co_filename);
  r.line = pc >= 0 ? PyCode_Addr2Line(co_, pc * 2) : co_->co_firstlineno;
  r.explanation = std::move(explanation);
  r.hint = std::move(hint);
}

bool Interp::Pop(Value* v) {
  if (stack_.empty()) {
    Fail(pc_, "internal", "value stack underflow while simulating bytecode");
    return false;
  }
  *v = std::move(stack_.back());
  stack_.pop_back();
  return true;
}

bool Interp::PopN(size_t n, std::vector<Value>* out) {
  if (stack_.size() < n) {
    Fail(pc_, "internal", "value stack underflow while simulating bytecode");
    return false;
  }
  out->assign(std::make_move_iterator(stack_.end() - n), std::make_move_iterator(stack_.end()));
  stack_.resize(stack_.size() - n);
  return true;
}

bool Interp::FromSource(int32_t source, PyObject* obj, Value* out) {
  if (Tensor* t = AsTensor(obj)) {
    auto it = param_of_source_.find(source);
    graph::NodeId node;
    if (it != param_of_source_.end()) {
      node = it->second;
    } else {
      gp().GuardTensor(source, obj, *t);
      node = out_->graph.AddParam(MetaOf(*t));
      out_->param_sources.push_back(source);
      param_of_source_[source] = node;
    }
    out->kind = Value::kTensor;
    out->node = node;
    out->source = source;
    out->type = Py_TYPE(obj);
    return true;
  }
  if ((PyTuple_Check(obj) || PyList_Check(obj))) {
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(obj); ++i) {
      if (AsTensor(PySequence_Fast_ITEMS(obj)[i])) {
        Fail(pc_, "unsupported_input",
             absl::StrFormat("%s holds tensors inside a %s", gp().SourceText(source),
                             Py_TYPE(obj)->tp_name),
             "pass the tensors as separate arguments");
        return false;
      }
    }
  }
  *out = Value::Const(obj, source);
  return true;
}

// A constant's value steers the trace: guard it at its source (once).
bool Interp::UseConst(const Value& v) {
  if (v.kind == Value::kConst && v.source >= 0) gp().GuardValue(v.source, v.obj);
  return true;
}

bool Interp::TensorMeta(const Value& v, pijit::TensorMeta* meta) const {
  if (v.kind != Value::kTensor) return false;
  *meta = out_->graph.node(v.node).meta;
  return true;
}

bool Interp::CallOp(PyOp op, const std::vector<Value>& args,
                    const std::vector<std::string>& kwnames, Value* out) {
  std::vector<ArgView> views;
  for (const Value& a : args) {
    if (a.kind != Value::kTensor && a.kind != Value::kConst) {
      Fail(pc_, "unsupported_call",
           absl::StrFormat("argument of %s is not a tensor or a known Python value", PyOpName(op)));
      return false;
    }
    if (a.kind == Value::kConst) UseConst(a);
    views.push_back({a.kind == Value::kTensor, a.obj});
  }
  auto call = ParseCall(op, views, kwnames);
  if (!call.ok()) {
    Fail(pc_, "invalid_input", std::string(call.status().message()),
         "the call runs eagerly and raises this error there");
    return false;
  }
  // Sequence arguments (concat, stack) are not passed as sequence views yet, so operands
  // here are whole arguments or Python scalars.
  absl::InlinedVector<graph::NodeId, 3> inputs;
  for (size_t i = 0; i < call->operands.size(); ++i) {
    const Operand& o = call->operands[i];
    if (o.scalar == nullptr) {
      inputs.push_back(args[o.arg].node);
      continue;
    }
    const graph::NodeId like = args[call->operands[o.like].arg].node;
    auto s = ScalarOperand(PyOpName(op), o.scalar, out_->graph.node(like).meta.dtype);
    if (!s.ok()) {
      Fail(pc_, "invalid_input", std::string(s.status().message()));
      return false;
    }
    inputs.push_back(out_->graph.AddConstant(std::move(*s)));
  }
  auto node = out_->graph.AddOp(PyOpGraphOp(op), inputs, call->attrs);
  if (!node.ok()) {
    Fail(pc_, "invalid_input", std::string(node.status().message()),
         "the call runs eagerly and raises this error there");
    return false;
  }
  out->kind = Value::kTensor;
  out->node = *node;
  out->source = -1;
  out->type = g_tensor_type;
  return true;
}

bool Interp::Call(const Value& callable, std::vector<Value> args, Value* out) {
  std::vector<std::string> names;
  if (kwnames_) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames_); ++i)
      names.emplace_back(PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames_, i)));
    kwnames_ = nullptr;
  }
  if (callable.kind == Value::kTensorMethod) return CallOp(callable.method, args, names, out);
  if (callable.kind != Value::kConst) {
    Fail(pc_, "unsupported_call", "calling a value that is not known at capture time");
    return false;
  }
  UseConst(callable);
  PyObject* fn = callable.obj;
  PyOp op;
  if (PyOpOfBuiltin(fn, &op)) return CallOp(op, args, names, out);
  // A primitive instance (ops.Add()): its class names the op it performs.
  PyObject* prim = PyObject_GetAttrString(reinterpret_cast<PyObject*>(Py_TYPE(fn)), "_pijit_op");
  if (prim) {
    PyOp pop;
    bool known = PyOpOfBuiltin(prim, &pop);
    Py_DECREF(prim);
    PyObject* attrs = known ? PyObject_CallMethod(fn, "_pijit_kwargs", nullptr) : nullptr;
    if (attrs && PyDict_Check(attrs)) {
      // Primitive attributes (keep_dims, ...) are keyword arguments of the op.
      Keep(attrs);
      PyObject *k, *v;
      Py_ssize_t pos = 0;
      while (PyDict_Next(attrs, &pos, &k, &v)) {
        names.emplace_back(PyUnicode_AsUTF8(k));
        args.push_back(Value::Const(v));
      }
      return CallOp(pop, args, names, out);
    }
    Py_XDECREF(attrs);
    if (PyErr_Occurred()) PyErr_Clear();
  } else {
    PyErr_Clear();
  }
  PyObject* r = PyObject_Repr(fn);
  std::string what = r ? PyUnicode_AsUTF8(r) : Py_TYPE(fn)->tp_name;
  Py_XDECREF(r);
  if (!r) PyErr_Clear();
  const char* hint = PyFunction_Check(fn) || PyMethod_Check(fn)
                         ? "calls of Python functions are inlined by a later capture stage"
                         : "only pijit ops and primitives are captured";
  Fail(pc_, "unsupported_call", absl::StrCat("call to ", what, " cannot be captured"), hint);
  return false;
}

bool Interp::LoadAttr(const Value& owner, PyObject* name, bool method) {
  const char* n = PyUnicode_AsUTF8(name);
  if (owner.kind == Value::kTensor) {
    const auto& meta = out_->graph.node(owner.node).meta;
    PyOp op;
    // A subclass could override the method: only take it when it is Tensor's own.
    if (method && PyOpByName(n, &op) &&
        _PyType_Lookup(owner.type, name) == _PyType_Lookup(g_tensor_type, name)) {
      Value m;
      m.kind = Value::kTensorMethod;
      m.method = op;
      stack_.push_back(m);
      stack_.push_back(owner);
      return true;
    }
    PyObject* v = nullptr;
    if (std::string_view(n) == "shape") {
      v = PyTuple_New(static_cast<Py_ssize_t>(meta.shape.size()));
      for (size_t i = 0; i < meta.shape.size(); ++i)
        PyTuple_SET_ITEM(v, i, PyLong_FromLongLong(meta.shape[i]));
    } else if (std::string_view(n) == "ndim") {
      v = PyLong_FromSize_t(meta.shape.size());
    } else if (std::string_view(n) == "size") {
      v = PyLong_FromLongLong(NumElements(meta.shape));
    } else if (std::string_view(n) == "dtype") {
      PyObject* probe = WrapTensor(Tensor::Empty({}, meta.dtype));
      v = PyObject_GetAttrString(probe, "dtype");
      Py_DECREF(probe);
    }
    if (!v) {
      if (PyErr_Occurred()) PyErr_Clear();
      Fail(pc_, "unsupported_attribute",
           absl::StrFormat("Tensor.%s is not captured yet", n),
           "use pijit.ops functions or the supported Tensor methods");
      return false;
    }
    if (method) stack_.push_back(Value());  // NULL: the attribute is the callable itself
    if (method) stack_.back().kind = Value::kNull;
    stack_.push_back(Value::Const(Keep(v)));
    return true;
  }
  if (owner.kind != Value::kConst) {
    Fail(pc_, "unsupported_attribute", absl::StrFormat("attribute %s of an unknown value", n));
    return false;
  }
  UseConst(owner);
  PyObject* v = guards::SafeGetAttr(owner.obj, name);
  if (!v) {
    if (PyErr_Occurred()) PyErr_Clear();
    Fail(pc_, "unsupported_attribute",
         absl::StrFormat("attribute '%s' of %s is computed by code (a property, __getattr__ or a "
                         "method) or is missing", n, Py_TYPE(owner.obj)->tp_name),
         "read plain attributes, or move the computation outside the jitted function");
    return false;
  }
  Py_INCREF(v);
  Keep(v);
  Value result;
  if (owner.source >= 0) {
    int32_t src = gp().AddSource(Source::kAttr, owner.source, name);
    if (!FromSource(src, v, &result)) return false;
  } else {
    result = Value::Const(v);
  }
  if (method) {
    Value null;
    null.kind = Value::kNull;
    stack_.push_back(null);
  }
  stack_.push_back(result);
  return true;
}

static bool IsNumber(PyObject* o) {
  return PyBool_Check(o) || PyLong_CheckExact(o) || PyFloat_CheckExact(o);
}

bool Interp::BinaryOp(int nb, const Value& a, const Value& b, Value* out) {
  PyOp op;
  PyObject* (*fold)(PyObject*, PyObject*) = nullptr;
  switch (nb) {
    case NB_ADD: case NB_INPLACE_ADD: op = PyOp::kAdd; fold = PyNumber_Add; break;
    case NB_SUBTRACT: case NB_INPLACE_SUBTRACT: op = PyOp::kSub; fold = PyNumber_Subtract; break;
    case NB_MULTIPLY: case NB_INPLACE_MULTIPLY: op = PyOp::kMul; fold = PyNumber_Multiply; break;
    case NB_TRUE_DIVIDE: case NB_INPLACE_TRUE_DIVIDE: op = PyOp::kDiv; fold = PyNumber_TrueDivide; break;
    case NB_MATRIX_MULTIPLY: case NB_INPLACE_MATRIX_MULTIPLY: op = PyOp::kMatMul; break;
    default:
      if (a.kind == Value::kConst && b.kind == Value::kConst && IsNumber(a.obj) && IsNumber(b.obj)) {
        // Other arithmetic on Python numbers folds through the generic operator below.
        op = PyOp::kAdd;
        break;
      }
      Fail(pc_, "unsupported_operator", absl::StrFormat("binary operator #%d is not captured yet", nb));
      return false;
  }
  if (a.kind == Value::kTensor || b.kind == Value::kTensor) {
    for (const Value* v : {&a, &b}) {
      if (v->kind == Value::kConst && !IsPyScalar(v->obj)) {
        Fail(pc_, "unsupported_operator",
             absl::StrFormat("%s of a Tensor and a %s", PyOpName(op), Py_TYPE(v->obj)->tp_name),
             "use a Tensor or a Python bool, int or float");
        return false;
      }
    }
    return CallOp(op, {a, b}, {}, out);
  }
  if (a.kind == Value::kConst && b.kind == Value::kConst && IsNumber(a.obj) && IsNumber(b.obj)) {
    UseConst(a);
    UseConst(b);
    PyObject* r = nullptr;
    if (fold && nb < NB_INPLACE_ADD && nb != NB_MATRIX_MULTIPLY) {
      r = fold(a.obj, b.obj);
    } else {
      // Numbers are immutable: in-place and other operators give the plain result.
      static PyObject* (*const kOps[])(PyObject*, PyObject*) = {
          PyNumber_Add, PyNumber_And, PyNumber_FloorDivide, PyNumber_Lshift, nullptr,
          PyNumber_Multiply, PyNumber_Remainder, PyNumber_Or, nullptr, PyNumber_Rshift,
          PyNumber_Subtract, PyNumber_TrueDivide, PyNumber_Xor};
      int base = nb >= NB_INPLACE_ADD ? nb - NB_INPLACE_ADD : nb;
      if (base == NB_POWER) r = PyNumber_Power(a.obj, b.obj, Py_None);
      else if (base <= NB_XOR && kOps[base]) r = kOps[base](a.obj, b.obj);
    }
    if (!r) {
      PyErr_Clear();
      Fail(pc_, "python_error", "arithmetic on Python numbers raises",
           "the function runs eagerly and raises the error there");
      return false;
    }
    *out = Value::Const(Keep(r));
    return true;
  }
  Fail(pc_, "unsupported_operator", "operator on values that are not tensors or Python numbers");
  return false;
}

bool Interp::MakeOutput(const Value& v, OutputSpec* spec) {
  switch (v.kind) {
    case Value::kTensor: {
      const graph::Node& n = out_->graph.node(v.node);
      if (n.op == graph::Op::kParam) {  // an input returned as is keeps its identity
        spec->kind = OutputSpec::kSource;
        spec->index = out_->param_sources[n.param_index];
        return true;
      }
      auto it = output_of_node_.find(v.node);
      int32_t idx;
      if (it != output_of_node_.end()) {
        idx = it->second;
      } else {
        idx = static_cast<int32_t>(outputs_.size());
        outputs_.push_back(v.node);
        output_of_node_[v.node] = idx;
      }
      spec->kind = OutputSpec::kGraphOutput;
      spec->index = idx;
      return true;
    }
    case Value::kConst:
      UseConst(v);
      if (v.source >= 0 && !PyLong_CheckExact(v.obj) && !PyFloat_CheckExact(v.obj) &&
          v.obj != Py_None && !PyBool_Check(v.obj) && !PyUnicode_CheckExact(v.obj)) {
        // Mutable objects keep their identity: read them from their source on every call.
        spec->kind = OutputSpec::kSource;
        spec->index = v.source;
        return true;
      }
      spec->kind = OutputSpec::kConstant;
      spec->constant = v.obj;
      Py_INCREF(v.obj);
      return true;
    case Value::kSeq:
      spec->kind = v.is_list ? OutputSpec::kList : OutputSpec::kTuple;
      for (const Value& item : *v.items) {
        spec->items.emplace_back();
        if (!MakeOutput(item, &spec->items.back())) return false;
      }
      return true;
    default:
      Fail(pc_, "unsupported_output", "the return value is not a tensor, a Python value or a tuple");
      return false;
  }
}

bool Interp::Step(const Instr& in, int pc) {
  pc_ = in.offset;
  Value a, b;
  switch (in.op) {
    case Opc::RESUME:
    case Opc::NOP:
    case Opc::PRECALL:
    case Opc::COPY_FREE_VARS:
      return true;
    case Opc::LOAD_FAST: {
      const Value& v = locals_[in.arg];
      if (v.kind == Value::kUndef) {
        Fail(pc_, "python_error", "local variable referenced before assignment");
        return false;
      }
      stack_.push_back(v);
      return true;
    }
    case Opc::STORE_FAST:
      if (!Pop(&a)) return false;
      locals_[in.arg] = std::move(a);
      return true;
    case Opc::LOAD_CONST:
      stack_.push_back(Value::Const(PyTuple_GET_ITEM(co_->co_consts, in.arg)));
      return true;
    case Opc::LOAD_GLOBAL: {
      PyObject* name = PyTuple_GET_ITEM(co_->co_names, in.arg >> 1);
      if (in.arg & 1) {
        Value null;
        null.kind = Value::kNull;
        stack_.push_back(null);
      }
      PyObject* globals = PyFunction_GET_GLOBALS(func_);
      PyObject* builtins = reinterpret_cast<PyFunctionObject*>(func_)->func_builtins;
      Source::Kind kind = Source::kGlobal;
      PyObject* v = PyDict_GetItemWithError(globals, name);
      if (!v && !PyErr_Occurred()) {
        kind = Source::kBuiltin;
        v = PyDict_GetItemWithError(builtins, name);
      }
      if (!v) {
        PyErr_Clear();
        Fail(pc_, "python_error", absl::StrFormat("name '%s' is not defined", PyUnicode_AsUTF8(name)));
        return false;
      }
      Py_INCREF(v);
      Keep(v);
      Value val;
      if (!FromSource(gp().AddSource(kind, -1, name), v, &val)) return false;
      stack_.push_back(val);
      return true;
    }
    case Opc::LOAD_DEREF: {
      const int nfree = co_->co_nfreevars;
      const int first_free = co_->co_nlocalsplus - nfree;
      PyObject* closure = PyFunction_GET_CLOSURE(func_);
      if (in.arg < first_free || !closure) {
        Fail(pc_, "unsupported_bytecode", "reading a cell variable of this function");
        return false;
      }
      const int idx = in.arg - first_free;
      PyObject* v = PyCell_GET(PyTuple_GET_ITEM(closure, idx));
      if (!v) {
        Fail(pc_, "python_error", "free variable referenced before assignment");
        return false;
      }
      Py_INCREF(v);
      Keep(v);
      Value val;
      if (!FromSource(gp().AddSource(Source::kClosure, idx), v, &val)) return false;
      stack_.push_back(val);
      return true;
    }
    case Opc::LOAD_ATTR:
    case Opc::LOAD_METHOD:
      if (!Pop(&a)) return false;
      return LoadAttr(a, PyTuple_GET_ITEM(co_->co_names, in.arg), in.op == Opc::LOAD_METHOD);
    case Opc::PUSH_NULL: {
      Value null;
      null.kind = Value::kNull;
      stack_.push_back(null);
      return true;
    }
    case Opc::KW_NAMES:
      kwnames_ = PyTuple_GET_ITEM(co_->co_consts, in.arg);
      return true;
    case Opc::CALL: {
      std::vector<Value> args;
      if (!PopN(in.arg, &args)) return false;
      Value second, first;
      if (!Pop(&second) || !Pop(&first)) return false;
      Value callable = second;
      if (first.kind != Value::kNull) {  // method call: `second` is self
        callable = first;
        args.insert(args.begin(), second);
      }
      Value result;
      if (!Call(callable, std::move(args), &result)) return false;
      stack_.push_back(result);
      return true;
    }
    case Opc::BINARY_OP: {
      Value result;
      if (!Pop(&b) || !Pop(&a) || !BinaryOp(in.arg, a, b, &result)) return false;
      stack_.push_back(result);
      return true;
    }
    case Opc::UNARY_NEGATIVE: {
      if (!Pop(&a)) return false;
      Value result;
      if (a.kind == Value::kTensor) {
        if (!CallOp(PyOp::kNeg, {a}, {}, &result)) return false;
      } else if (a.kind == Value::kConst && IsNumber(a.obj)) {
        UseConst(a);
        result = Value::Const(Keep(PyNumber_Negative(a.obj)));
      } else {
        Fail(pc_, "unsupported_operator", "negation of a value that is not a tensor or a number");
        return false;
      }
      stack_.push_back(result);
      return true;
    }
    case Opc::BUILD_TUPLE:
    case Opc::BUILD_LIST: {
      Value seq;
      seq.kind = Value::kSeq;
      seq.is_list = in.op == Opc::BUILD_LIST;
      seq.items = std::make_shared<std::vector<Value>>();
      if (!PopN(in.arg, seq.items.get())) return false;
      stack_.push_back(seq);
      return true;
    }
    case Opc::UNPACK_SEQUENCE: {
      if (!Pop(&a)) return false;
      std::vector<Value> items;
      if (a.kind == Value::kSeq) {
        items = *a.items;
      } else if (a.kind == Value::kConst && PyTuple_CheckExact(a.obj)) {
        UseConst(a);
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(a.obj); ++i)
          items.push_back(Value::Const(PyTuple_GET_ITEM(a.obj, i)));
      } else {
        Fail(pc_, "unsupported_bytecode", "unpacking a value that is not a tuple or list");
        return false;
      }
      if (static_cast<int>(items.size()) != in.arg) {
        Fail(pc_, "python_error", "unpacking a sequence of the wrong length");
        return false;
      }
      for (auto it = items.rbegin(); it != items.rend(); ++it) stack_.push_back(*it);
      return true;
    }
    case Opc::BINARY_SUBSCR: {
      if (!Pop(&b) || !Pop(&a)) return false;
      if (b.kind == Value::kConst && PyLong_CheckExact(b.obj) &&
          (a.kind == Value::kSeq || (a.kind == Value::kConst && PyTuple_CheckExact(a.obj)))) {
        UseConst(b);
        UseConst(a);
        Py_ssize_t n = a.kind == Value::kSeq ? a.items->size() : PyTuple_GET_SIZE(a.obj);
        Py_ssize_t i = PyLong_AsSsize_t(b.obj);
        if (i < 0) i += n;
        if (i < 0 || i >= n) {
          Fail(pc_, "python_error", "index out of range");
          return false;
        }
        stack_.push_back(a.kind == Value::kSeq ? (*a.items)[i]
                                               : Value::Const(PyTuple_GET_ITEM(a.obj, i)));
        return true;
      }
      Fail(pc_, "unsupported_bytecode", "subscript other than a constant index into a tuple",
           "tensor indexing is not captured yet");
      return false;
    }
    case Opc::POP_TOP:
      return Pop(&a);
    case Opc::RETURN_VALUE:
      if (!Pop(&a) || !MakeOutput(a, &out_->output)) return false;
      return true;
    default:
      Fail(pc_, "unsupported_bytecode", absl::StrFormat("%s is not captured yet", OpcName(in.op)),
           IsJump(in.op) ? "control flow runs eagerly until graph breaks are supported"
                         : "this function runs eagerly");
      return false;
  }
}

void Interp::Run() {
  const int flags = co_->co_flags;
  if (flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE)) {
    Fail(-1, "unsupported_function", "generators and coroutines are not captured");
    return;
  }
  if (flags & (CO_VARARGS | CO_VARKEYWORDS)) {
    Fail(-1, "unsupported_function", "functions with *args or **kwargs are not captured yet");
    return;
  }
  if (co_->co_ncellvars > 0) {
    Fail(-1, "unsupported_function", "functions that define closures are not captured yet");
    return;
  }
  if (PyBytes_GET_SIZE(co_->co_exceptiontable) > 0) {
    Fail(-1, "unsupported_function", "try/except and with blocks are not captured yet");
    return;
  }
  PyObject* bytes = PyCode_GetCode(co_);
  if (!bytes) {
    PyErr_Clear();
    Fail(-1, "internal", "cannot read the function's bytecode");
    return;
  }
  auto decoded = Decode(reinterpret_cast<const uint8_t*>(PyBytes_AS_STRING(bytes)),
                        static_cast<size_t>(PyBytes_GET_SIZE(bytes)));
  Py_DECREF(bytes);
  if (!decoded.ok()) {
    Fail(-1, "internal", std::string(decoded.status().message()));
    return;
  }
  const std::vector<Instr>& code = *decoded;
  out_->num_instructions = code.size();
  out_->num_blocks = BuildCfg(code).blocks.size();
  locals_.assign(co_->co_nlocalsplus, Value());
  for (int i = 0; i < nargs_; ++i) {
    Value v;
    if (!FromSource(gp().AddSource(Source::kArg, i), args_[i], &v)) return;
    locals_[i] = v;
  }
  for (size_t pc = 0; pc < code.size(); ++pc) {
    if (!Step(code[pc], static_cast<int>(pc))) return;
    if (code[pc].op == Opc::RETURN_VALUE) {
      out_->graph.SetOutputs(outputs_);
      out_->ok = true;
      return;
    }
  }
  Fail(-1, "internal", "the function ends without RETURN_VALUE");
}

}  // namespace

CaptureResult Capture(PyCodeObject* code, PyObject* func, PyObject* const* args, int nargs) {
  CaptureResult result;
  Interp interp(code, func, args, nargs, &result);
  interp.Run();
  if (PyErr_Occurred()) PyErr_Clear();
  return result;
}

}  // namespace pijit::bytecode
