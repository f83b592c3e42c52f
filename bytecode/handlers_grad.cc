// Gradient transforms inside captured code. Every transform (pijit.grad, value_and_grad,
// GradOperation, TrainOneStepCell, ForwardValueAndGrad) calls pijit._autodiff.vjp; capture
// does not run it on the eager tape but inlines the differentiated function into the graph
// being built and appends its backward with graph/autodiff. Forward, backward and whatever
// uses the gradients (an optimizer's assigns) become one graph.
#include "absl/strings/str_format.h"
#include "bytecode/interp.h"
#include "graph/autodiff.h"
#include "guards/guards.h"
#include "interop/convert.h"
#include "interop/python_objects.h"

namespace pijit::bytecode {

namespace {

// The items of a tuple-like value (a tuple built during capture or one from a source).
bool ItemsOf(Interp& in, const Value& v, ValueList* items) {
  Value it;
  if (!in.GetIter(v, &it)) return false;
  *items = *it.items;
  return true;
}

// The values a differentiated function (or a bprop) returns: one tensor, or a tuple's items
// (false: neither).
bool ItemsOfResult(const Value& result, ValueList* items) {
  if (result.kind == Value::kTensor) {
    items->push_back(result);
  } else if (result.kind == Value::kSeq) {
    *items = *result.items;
  } else {
    return false;
  }
  return true;
}

bool KnownBool(const Value& v, bool* out) {
  if (v.kind != Value::kConst || !PyBool_Check(v.obj)) return false;
  *out = v.obj == Py_True;
  return true;
}


// A node of `like`'s shape and dtype filled with v.
absl::StatusOr<graph::NodeId> FillLike(graph::Graph& gr, graph::NodeId like, double v) {
  graph::Attrs a;
  a.value = Tensor::Scalar<double>(v);
  return gr.AddOp(graph::Op::kFullLike, {like}, std::move(a));
}
}  // namespace

// The seeds of a vjp's backward (its sensitivities, `sens`): ones, a number everywhere, or
// given tensors, one per output. `scalar`: a number needs one-element outputs.
bool Interp::VjpSeeds(const Value& sens, bool scalar, const std::vector<graph::NodeId>& out_nodes,
                      std::vector<graph::NodeId>* seeds) {
  if (sens.kind == Value::kConst && (sens.obj == Py_None || guards::IsPythonNumber(sens.obj)) &&
      !PyBool_Check(sens.obj)) {
    UseConst(sens);
    const double v = sens.obj == Py_None ? 1.0 : PyFloat_AsDouble(sens.obj);
    for (graph::NodeId o : out_nodes) {
      if (scalar && NumElements(g().node(o).meta.shape) != 1) {
        Fail(BreakCategory::kInvalidInput, "grad: only a one-element output can be differentiated without a "
                              "sensitivity", "the call runs eagerly and raises the error there");
        return false;
      }
      auto s = FillLike(g(), o, v);
      if (!s.ok()) {
        Fail(BreakCategory::kInternal, std::string(s.status().message()));
        return false;
      }
      seeds->push_back(*s);
    }
  } else {
    ValueList given;
    if (sens.kind == Value::kTensor) {
      given.push_back(sens);
    } else if (!ItemsOf(*this, sens, &given)) {
      return false;
    }
    if (given.size() != out_nodes.size()) {
      Fail(BreakCategory::kInvalidInput, "grad: the number of sensitivities differs from the outputs'");
      return false;
    }
    for (const Value& s : given) {
      if (s.kind != Value::kTensor) {
        Fail(BreakCategory::kUnsupportedCall, "grad: a sensitivity that is not a Tensor");
        return false;
      }
      seeds->push_back(s.node);
    }
  }
  return true;
}

bool Interp::CallVjp(Frame& f, ValueList args, Value* out) {
  // vjp(fn, args, positions=(), weights=None, sens=None, has_aux=False, scalar=False),
  // given positionally.
  PyObject* defaults = PyFunction_GET_DEFAULTS(g_vjp_fn);
  const size_t num_defaults = defaults ? static_cast<size_t>(PyTuple_GET_SIZE(defaults)) : 0;
  if (args.size() > 7 || args.size() + num_defaults < 7) {
    Fail(BreakCategory::kUnsupportedCall, "pijit._autodiff.vjp called with other than its 7 arguments");
    return false;
  }
  while (args.size() < 7) args.push_back(Value::Const(PyTuple_GET_ITEM(defaults, args.size() - (7 - num_defaults))));
  for (size_t i : {2, 5, 6}) UseConst(args[i]);
  bool has_aux = false, scalar = false;
  PyObject* positions = AsPyObject(args[2]);
  if (!KnownBool(args[5], &has_aux) || !KnownBool(args[6], &scalar) || !positions ||
      !PyTuple_Check(positions)) {
    Fail(BreakCategory::kUnsupportedCall, "gradient options unknown at capture time");
    return false;
  }
  ValueList inputs, weights;
  if (!ItemsOf(*this, args[1], &inputs)) return false;
  const bool no_weights = args[3].kind == Value::kConst && args[3].obj == Py_None;
  if (no_weights) UseConst(args[3]);
  if (!no_weights && !ItemsOf(*this, args[3], &weights)) return false;

  // The variables: inputs at `positions`, then the weights; each must be a distinct tensor
  // (the tape would treat one tensor at two positions as two variables).
  std::vector<graph::NodeId> wrt;
  auto add_wrt = [&](const Value& v, const char* what) {
    if (v.kind != Value::kTensor) {
      Fail(BreakCategory::kInvalidInput, absl::StrFormat("grad: %s is not a Tensor", what),
           "the call runs eagerly and raises the error there");
      return false;
    }
    for (graph::NodeId w : wrt) {
      if (w == v.node) {
        Fail(BreakCategory::kUnsupportedCall, "grad: one tensor is differentiated at two positions");
        return false;
      }
    }
    wrt.push_back(v.node);
    return true;
  };
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(positions); ++i) {
    PyObject* p = PyTuple_GET_ITEM(positions, i);
    long pos = PyLong_Check(p) ? PyLong_AsLong(p) : -1 - static_cast<long>(inputs.size());
    if (pos < 0) pos += static_cast<long>(inputs.size());
    if (pos < 0 || pos >= static_cast<long>(inputs.size())) {
      if (PyErr_Occurred()) PyErr_Clear();
      Fail(BreakCategory::kInvalidInput, "grad: grad_position out of range",
           "the call runs eagerly and raises the error there");
      return false;
    }
    if (!add_wrt(inputs[pos], "an input at grad_position")) return false;
  }
  for (const Value& w : weights)
    if (!add_wrt(w, "a weight")) return false;

  // The forward, inlined; nodes from here on are what the gradient flows through.
  const graph::NodeId first = static_cast<graph::NodeId>(g().nodes().size());
  Value result;
  f.kwnames = nullptr;
  const int64_t vjp_calls_before = ++vjp_calls_;
  // Numbers read inside a gradient transform stay constants (ValueModel::IsDynamicNumber).
  values_.SetNumbersFixed(++grad_depth_ > 0);
  const bool ok = Call(f, args[0], inputs, &result);
  values_.SetNumbersFixed(--grad_depth_ > 0);
  if (!ok) return false;

  ValueList outs;
  if (!ItemsOfResult(result, &outs)) {
    Fail(BreakCategory::kInvalidInput, "grad: the function must return Tensors to be differentiated",
         "the call runs eagerly and raises the error there");
    return false;
  }
  if (has_aux) {
    if (result.kind != Value::kSeq || outs.size() < 2) {
      Fail(BreakCategory::kInvalidInput, "grad: with has_aux=True the function must return a tuple");
      return false;
    }
    outs.resize(1);
  }
  std::vector<graph::NodeId> out_nodes, seeds;
  for (const Value& o : outs) {
    if (o.kind != Value::kTensor) {
      Fail(BreakCategory::kInvalidInput, "grad: the function must return Tensors to be differentiated",
           "the call runs eagerly and raises the error there");
      return false;
    }
    out_nodes.push_back(o.node);
  }

  if (!VjpSeeds(args[4], scalar, out_nodes, &seeds)) return false;

  std::vector<graph::CustomVjp> customs;
  for (const graph::CustomVjp& c : customs_)
    if (c.node >= first) customs.push_back(c);
  // Gradients of gradients differentiate the inner gradients' backward too; the eager tape
  // refuses that when a custom bprop takes part (NotImplementedError), so such a call runs
  // there.
  if (!customs.empty() && (grad_depth_ > 0 || vjp_calls_ != vjp_calls_before)) {
    Fail(BreakCategory::kUnsupportedCall, "a gradient of a gradient through a Cell with a custom bprop",
         "the call runs on the eager tape, which raises the error");
    return false;
  }
  auto grads = graph::AppendBackward(g(), out_nodes, seeds, wrt, first, customs);
  if (!grads.ok()) {
    Fail(grads.status().code() == absl::StatusCode::kUnimplemented ? BreakCategory::kUnsupportedOp : BreakCategory::kInvalidInput,
         std::string(grads.status().message()), "the gradient is taken on the eager tape");
    return false;
  }
  ValueList gi, gw;
  for (size_t i = 0; i < wrt.size(); ++i) {
    graph::NodeId gnode = (*grads)[i];
    if (gnode == graph::kNoGradient) {  // not floating point: zeros, as eagerly
      auto z = FillLike(g(), wrt[i], 0.0);
      if (!z.ok()) {
        Fail(BreakCategory::kInternal, std::string(z.status().message()));
        return false;
      }
      gnode = *z;
    }
    Value v;
    v.kind = Value::kTensor;
    v.node = gnode;
    v.type = g_tensor_type;
    (i < static_cast<size_t>(PyTuple_GET_SIZE(positions)) ? gi : gw).push_back(v);
  }
  *out = Value::Seq({result, Value::Seq(std::move(gi), false), Value::Seq(std::move(gw), false)},
                    false);
  return true;
}

bool Interp::CallCellWithBprop(Frame& f, const Value& cell, const ValueList& args, Value* out) {
  PyTypeObject* type = Py_TYPE(cell.obj);
  auto refuse = [&](const std::string& why) {
    Fail(BreakCategory::kUnsupportedCall, absl::StrCat(type->tp_name, " defines bprop: ", why),
         "the gradient is taken on the eager tape");
    return false;
  };
  auto method = [&](const char* name, Value* v) {
    PyObject* n = values_.Keep(PyUnicode_InternFromString(name));
    PyObject* fn = _PyType_Lookup(type, n);
    if (!fn || !PyFunction_Check(fn)) return false;
    if (!values_.FromSource(gp().AddSource(guards::Source::kTypeAttr, cell.source, -1, n), fn, v)) return false;
    UseConst(*v);
    return true;
  };
  Value construct, bprop;
  if (!method("construct", &construct) || !method("bprop", &bprop)) {
    if (failed()) return false;
    return refuse("construct or bprop is not a Python function");
  }
  auto code_of = [](const Value& v) {
    return reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(v.obj));
  };
  // The forward, as eager runs it: unrecorded (the custom node stops gradients into it).
  const graph::NodeId forward_begin = static_cast<graph::NodeId>(g().nodes().size());
  ValueList cargs = args;
  cargs.insert(cargs.begin(), cell);
  Value raw;
  if (!Inline(f, code_of(construct), construct.obj, construct.source, nullptr, std::move(cargs), {},
              &raw)) {
    return false;
  }
  if (raw.kind != Value::kTensor) return refuse("its construct returns other than one Tensor");
  // bprop(self, *args, out, dout), traced with zeros as dout; the backward substitutes the
  // output's gradient (graph/autodiff.h, CustomVjp).
  graph::Attrs zeros;
  zeros.value = Tensor::Scalar<double>(0.0);
  auto dout = g().AddOp(graph::Op::kFullLike, {raw.node}, std::move(zeros));
  if (!dout.ok()) return refuse(std::string(dout.status().message()));
  Value dv;
  dv.kind = Value::kTensor;
  dv.node = *dout;
  dv.type = g_tensor_type;
  const graph::NodeId bprop_begin = static_cast<graph::NodeId>(g().nodes().size());
  const size_t effects_before = effects_.size();
  ValueList bargs = args;
  bargs.insert(bargs.begin(), cell);
  bargs.push_back(raw);
  bargs.push_back(dv);
  Value gv;
  if (!Inline(f, code_of(bprop), bprop.obj, bprop.source, nullptr, std::move(bargs), {}, &gv))
    return false;
  const graph::NodeId bprop_end = static_cast<graph::NodeId>(g().nodes().size());
  // Eager runs bprop during the backward pass: its effects would come in another order.
  if (effects_.size() != effects_before) return refuse("its bprop has side effects");
  for (graph::NodeId k = bprop_begin; k < bprop_end; ++k)
    if (graph::HasTrait(g().node(k).op, graph::kStateful)) return refuse("its bprop draws random numbers");
  ValueList items;
  if (!ItemsOfResult(gv, &items)) return refuse("its bprop returns other than Tensors");
  if (items.size() != args.size()) {
    Fail(BreakCategory::kInvalidInput,
         absl::StrFormat("%s.bprop returned %d gradients for %d inputs", type->tp_name,
                         items.size(), args.size()),
         "the call runs eagerly and raises the error there");
    return false;
  }
  graph::CustomVjp c;
  c.dout = *dout;
  c.forward_begin = forward_begin;
  c.bprop_begin = bprop_begin;
  c.bprop_end = bprop_end;
  std::vector<graph::NodeId> inputs = {raw.node};
  for (size_t k = 0; k < args.size(); ++k) {
    if (args[k].kind != Value::kTensor) continue;  // eager seeds tensors only
    const Value& gk = items[k];
    if (gk.kind == Value::kConst && gk.obj == Py_None) {
      c.grads.push_back(graph::kNoGradient);
    } else if (gk.kind == Value::kTensor &&
               g().node(gk.node).meta == g().node(args[k].node).meta) {
      c.grads.push_back(gk.node);
    } else {
      return refuse(absl::StrFormat("the gradient bprop returns for input %d is not a Tensor "
                                    "of that input's shape and dtype", k));
    }
    inputs.push_back(args[k].node);
  }
  auto node = g().AddOp(graph::Op::kCustomGrad, inputs);
  if (!node.ok()) return refuse(std::string(node.status().message()));
  c.node = *node;
  customs_.push_back(std::move(c));
  *out = raw;
  out->node = *node;
  out->source = -1;
  return true;
}

}  // namespace pijit::bytecode
