// Inlining: a call of a user function becomes a simulated frame in the caller's graph, with
// the arguments bound to parameters as CPython binds them (positional, keywords, defaults,
// keyword-only defaults, *args, **kwargs) and free variables read through guarded sources.
#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bytecode/interp.h"
#include "bytecode/resume.h"

namespace pijit::bytecode {

using guards::Source;

void Interp::NoteInlined(PyCodeObject* code) {
  std::string name = absl::StrCat(PyUnicode_AsUTF8(code->co_qualname), " (",
                                  PyUnicode_AsUTF8(code->co_filename), ":", code->co_firstlineno, ")");
  PyErr_Clear();
  std::vector<std::string>& seen = out_->inlined;
  if (seen.size() < 256 && std::find(seen.begin(), seen.end(), name) == seen.end())
    seen.push_back(std::move(name));
}

bool Interp::Inline(Frame& caller, PyCodeObject* code, PyObject* func, int32_t func_source,
                    const Value* fn_value, ValueList args, const std::vector<std::string>& kwnames,
                    Value* out) {
  Frame f;
  f.yields = pending_yields_;
  pending_yields_ = nullptr;
  if (!BindFrame(caller, code, func, func_source, fn_value, args, kwnames, &f)) return false;
  return RunFrame(f, out);
}

bool Interp::BindFrame(const Frame& caller, PyCodeObject* code, PyObject* func, int32_t func_source,
                       const Value* fn_value, const ValueList& args,
                       const std::vector<std::string>& kwnames, Frame* frame) {
  if (caller.depth + 1 > kMaxInlineDepth) {
    Fail(BreakCategory::kInlineDepth, absl::StrFormat("calls nested deeper than %d are not inlined",
                                         kMaxInlineDepth),
         "recursion runs eagerly");
    return false;
  }
  Frame& f = *frame;  // its `yields` says whether it is a generator's frame
  if (!PrepareFrame(*this, code, f, f.yields != nullptr)) return false;
  NoteInlined(code);
  f.func = func;
  f.func_source = fn_value ? fn_value->globals_source : func_source;
  if (fn_value) f.globals_func = fn_value->globals_func;
  f.depth = caller.depth + 1;
  // Bind arguments to parameters as CPython does (positional, keywords, defaults, *args).
  const int npos_params = code->co_argcount;
  const int nkwonly = code->co_kwonlyargcount;
  const bool has_varargs = code->co_flags & CO_VARARGS;

  const size_t nkw = kwnames.size();
  const size_t npos = args.size() - nkw;
  std::vector<bool> bound(npos_params + nkwonly, false);
  ValueList extra;
  for (size_t i = 0; i < npos; ++i) {
    if (static_cast<int>(i) < npos_params) {
      f.locals[i] = args[i];
      bound[i] = true;
    } else if (has_varargs) {
      extra.push_back(args[i]);
    } else {
      Fail(BreakCategory::kPythonError, absl::StrFormat("%s() takes %d positional arguments but %d were given",
                                           PyUnicode_AsUTF8(code->co_name), npos_params, npos));
      return false;
    }
  }
  Value extra_kw = Value::Dict();  // keywords for **kwargs
  for (size_t k = 0; k < nkw; ++k) {
    int slot = -1;
    for (int p = 0; p < npos_params + nkwonly; ++p) {
      PyObject* pname = PyTuple_GET_ITEM(code->co_localsplusnames, p);
      if (kwnames[k] == PyUnicode_AsUTF8(pname)) slot = p;
    }
    if (slot < 0 && (code->co_flags & CO_VARKEYWORDS)) {
      if (!DictSet(extra_kw, Value::Const(values_.Keep(PyUnicode_FromString(kwnames[k].c_str()))),
                   args[npos + k])) {
        return false;
      }
      continue;
    }
    if (slot < 0 || bound[slot]) {
      Fail(BreakCategory::kPythonError, absl::StrFormat("%s() got an unexpected or repeated keyword argument '%s'",
                                           PyUnicode_AsUTF8(code->co_name), kwnames[k]));
      return false;
    }
    f.locals[slot] = args[npos + k];
    bound[slot] = true;
  }
  // Positional defaults: from the function object (guarded) or the MAKE_FUNCTION value.
  ValueList defaults;
  if (fn_value) {
    if (fn_value->defaults) defaults = *fn_value->defaults;
  } else if (PyObject* d = PyFunction_GET_DEFAULTS(func)) {
    Value dv;
    int32_t src = func_source >= 0 ? gp().AddSource(Source::kFuncDefaults, func_source, -1) : -1;
    if (src >= 0) gp().GuardValue(src, d);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(d); ++i)
      defaults.push_back(Value::Const(PyTuple_GET_ITEM(d, i)));
    if (src < 0 && PyTuple_GET_SIZE(d) > 0) {
      Fail(BreakCategory::kUnsupportedCall, "inlining a function with defaults that cannot be guarded");
      return false;
    }
  }
  const int first_default = npos_params - static_cast<int>(defaults.size());
  for (int p = 0; p < npos_params; ++p) {
    if (bound[p]) continue;
    if (p >= first_default) {
      f.locals[p] = defaults[p - first_default];
      bound[p] = true;
    } else {
      Fail(BreakCategory::kPythonError, absl::StrFormat("%s() missing required argument '%s'",
                                           PyUnicode_AsUTF8(code->co_name),
                                           PyUnicode_AsUTF8(PyTuple_GET_ITEM(code->co_localsplusnames, p))));
      return false;
    }
  }
  // Keyword-only defaults: from the function's __kwdefaults__, each guarded at its source.
  PyObject* kwdefaults = func ? PyFunction_GET_KW_DEFAULTS(func) : nullptr;
  for (int p = npos_params; p < npos_params + nkwonly; ++p) {
    if (bound[p]) continue;
    PyObject* pname = PyTuple_GET_ITEM(code->co_localsplusnames, p);
    PyObject* dv = kwdefaults ? PyDict_GetItemWithError(kwdefaults, pname) : nullptr;
    if (!dv || func_source < 0) {
      PyErr_Clear();
      Fail(dv ? BreakCategory::kUnsupportedCall : BreakCategory::kPythonError,
           absl::StrFormat("%s() missing keyword-only argument '%s'",
                           PyUnicode_AsUTF8(code->co_name), PyUnicode_AsUTF8(pname)));
      return false;
    }
    const int32_t kwd = gp().AddSource(Source::kFuncKwDefaults, func_source, -1);
    gp().GuardType(kwd, kwdefaults);
    Py_INCREF(dv);
    values_.Keep(dv);
    if (!values_.FromSource(gp().AddSource(Source::kDictItem, kwd, -1, pname), dv, &f.locals[p])) return false;
    bound[p] = true;
  }
  int next_slot = npos_params + nkwonly;
  if (has_varargs) f.locals[next_slot++] = Value::Seq(std::move(extra), false);
  if (code->co_flags & CO_VARKEYWORDS) f.locals[next_slot++] = extra_kw;
  // Free variables: cells of a MAKE_FUNCTION value, or the function's closure (guarded).
  const int nfree = code->co_nfreevars;
  const int first_free = code->co_nlocalsplus - nfree;
  for (int i = 0; i < nfree; ++i) {
    if (fn_value) {
      if (!fn_value->items || i >= static_cast<int>(fn_value->items->size())) {
        Fail(BreakCategory::kInternal, "closure of a function made during capture is incomplete");
        return false;
      }
      f.locals[first_free + i] = (*fn_value->items)[i];
    } else {
      f.locals[first_free + i] = Value::Null();  // read through LoadDeref's closure source
      f.locals[first_free + i].kind = Value::kUndef;
    }
  }
  return true;
}

bool Interp::GeneratorTakesSharedIterator(const Value& gen) {
  // A generator runs to its end at capture. Over an iterator that is also reachable from
  // elsewhere (a local, another zip), a consumer that stops early would leave that iterator
  // further advanced than Python does. The generator's own reference is the only one to a
  // fresh iterator (GET_ITER of a list or range), so a second one means an alias.
  for (const Value& a : gen.gen->args) {
    if (a.kind == Value::kIter && !a.view && a.items.use_count() > 1) {
      Fail(BreakCategory::kUnsupportedCall, "a generator over an iterator used elsewhere, which may stop early",
           "the consumer runs in Python");
      return true;
    }
  }
  return false;
}

bool Interp::NextFromGenerator(const Frame& consumer, const Value& gen, Value* item, bool* exhausted) {
  // Python runs a generator's frame up to its next yield each time its consumer asks for an
  // item, so whatever the consumer did in between (a loop body appending to a list the
  // generator reads) is seen; the suspended frame here does the same.
  GenState& st = *gen.gen;
  *exhausted = st.exhausted;
  if (st.exhausted) return true;
  if (!st.frame) {
    if (st.started || st.lazy != GenState::kNotLazy) {
      Fail(BreakCategory::kUnsupportedCall, "a generator, map or filter stepped after being run whole",
           "the loop runs in Python");
      return false;
    }
    st.started = true;
    auto frame = std::make_shared<Frame>();
    frame->yields = &st.yielded;
    frame->suspend_at_yield = true;
    const bool bound =
        st.func ? BindFrame(consumer, reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(st.func)),
                            st.func, st.func_source, nullptr, st.args, st.kwnames, frame.get())
                : BindFrame(consumer, reinterpret_cast<PyCodeObject*>(st.fn.obj), nullptr, -1, &st.fn,
                            st.args, st.kwnames, frame.get());
    if (!bound) return false;
    st.frame = std::move(frame);
    stepped_generators_.push_back(gen.gen);
  }
  Frame& gf = *st.frame;
  gf.suspended = false;
  st.yielded.clear();
  // Effects inside the generator stay refused, as for generators run whole (gen_depth_).
  ++gen_depth_;
  Value returned;
  const bool ok = RunFrame(gf, &returned);
  --gen_depth_;
  if (!ok) return false;
  if (gf.suspended) {
    if (st.yielded.size() != 1) {
      Fail(BreakCategory::kInternal, "a generator suspended without one yielded item");
      return false;
    }
    *item = std::move(st.yielded.front());
    st.yielded.clear();
    return true;
  }
  st.exhausted = true;
  st.frame.reset();
  *exhausted = true;
  return true;
}

bool Interp::RunGenerator(const Value& gen, bool pure, Value* out) {
  GenState& st = *gen.gen;
  if (st.frame || (st.exhausted && st.lazy == GenState::kNotLazy)) {
    // Stepped before (a loop left early, next()): the consumer takes the rest, item by item.
    const size_t nodes = g().nodes().size();
    Frame caller;
    caller.depth = 1;
    ValueList items;
    for (bool done = false;;) {
      Value item;
      if (!NextFromGenerator(caller, gen, &item, &done)) return false;
      if (done) break;
      items.push_back(std::move(item));
    }
    return GeneratorItems(std::move(items), nodes, pure, out);
  }
  if (st.started) {
    Fail(BreakCategory::kUnsupportedCall, "a generator iterated a second time",
         "generators are captured when one consumer takes all their items at once");
    return false;
  }
  if (pure && GeneratorTakesSharedIterator(gen)) return false;
  st.started = true;
  if (st.lazy != GenState::kNotLazy) return RunLazyMap(st, pure, out);
  const size_t nodes = g().nodes().size();
  ValueList items;
  Frame caller;  // the generator runs under its consumer, one level deeper than its maker
  caller.depth = 1;
  pending_yields_ = &items;
  ++gen_depth_;
  Value ret;
  const bool ok = st.func ? Inline(caller, reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(st.func)),
                                   st.func, st.func_source, nullptr, st.args, st.kwnames, &ret)
                          : Inline(caller, reinterpret_cast<PyCodeObject*>(st.fn.obj), nullptr, -1,
                                   &st.fn, st.args, st.kwnames, &ret);
  --gen_depth_;
  pending_yields_ = nullptr;
  if (!ok) return false;
  st.exhausted = true;  // a later consumer gets no items, as from an exhausted generator
  return GeneratorItems(std::move(items), nodes, pure, out);
}

bool Interp::SuspendedGeneratorNeedsCleanup() {
  for (const auto& st : stepped_generators_) {
    if (!st->frame || st->exhausted) continue;
    const Frame& gf = *st->frame;
    const int32_t at = gf.pc > 0 && gf.pc <= gf.instrs.size() ? gf.instrs[gf.pc - 1].offset : 0;
    const std::optional<ExceptionEntry> h = HandlerAt(gf.code, at);
    if (!h) continue;
    // 3.12 and 3.13 wrap every generator's body in a handler that turns a StopIteration
    // into a RuntimeError (CALL_INTRINSIC_1 at its target): no cleanup of the user's.
    bool implicit = false;
    for (const Instr& in : gf.instrs)
      if (in.offset == h->target) implicit = in.op == Opc::CALL_INTRINSIC_1;
    if (implicit) continue;
    Fail(BreakCategory::kUnsupportedFunction,
         "a generator left suspended inside its own try or with block",
         "Python runs that block's cleanup when the generator is dropped; the call runs eagerly");
    return true;
  }
  return false;
}

bool Interp::GeneratorItems(ValueList items, size_t nodes_before, bool pure, Value* out) {
  if (pure && g().nodes().size() != nodes_before) {
    Fail(BreakCategory::kUnsupportedCall, "a generator, map or filter whose items compute tensors, consumed by all()/any()",
         "all() and any() stop early; it runs in Python");
    return false;
  }
  out->kind = Value::kIter;
  out->items = std::make_shared<ValueList>(std::move(items));
  out->from_generator = true;
  return true;
}

bool Interp::MakeLazyMap(bool filter, const ValueList& args, Value* out) {
  const char* name = filter ? "filter" : "map";
  if (filter ? args.size() != 2 : args.size() < 2) {
    Fail(BreakCategory::kPythonError, absl::StrCat(name, "() called with the wrong number of arguments"),
         "the function runs eagerly and raises the TypeError there");
    return false;
  }
  for (size_t i = 1; i < args.size(); ++i) {
    const Value& a = args[i];
    // What GetIter follows when the consumer runs: sequences, iterators, dicts, tensors and
    // constants (a constant that is not iterable fails there, before anything is called).
    const bool iterable = a.kind == Value::kSeq || a.kind == Value::kIter ||
                          a.kind == Value::kDict || a.kind == Value::kTensor ||
                          a.kind == Value::kConst;
    if (!iterable) {
      Fail(BreakCategory::kUnsupportedCall, absl::StrCat(name, "() over a generator or a value unknown at capture time"),
           "the call runs in Python");
      return false;
    }
    // map stops at its shortest iterable after taking one more item from those before it:
    // over several iterables, an iterator's final position is not followed here.
    if (args.size() > 2 && a.kind == Value::kIter && !a.view) {
      Fail(BreakCategory::kUnsupportedCall, "map() over several iterables, one of them an iterator",
           "the call runs in Python");
      return false;
    }
  }
  out->kind = Value::kGenerator;
  out->gen = std::make_shared<GenState>();
  out->gen->fn = args[0];
  out->gen->args.assign(args.begin() + 1, args.end());
  out->gen->lazy = filter ? GenState::kFilter : GenState::kMap;
  return true;
}

bool Interp::RunLazyMap(GenState& st, bool pure, Value* out) {
  // Python's map and filter take the iterables' items as the consumer asks for them; every
  // consumer that reaches here takes them all, so the calls run now, in order, under it.
  // iter() of a list is live: items appended before the consumer runs are seen, as here.
  std::vector<ValueList> columns;
  size_t n = SIZE_MAX;
  for (const Value& a : st.args) {
    Value it;
    if (!GetIter(a, &it)) return false;
    n = std::min(n, it.items->size());
    columns.push_back(*it.items);
  }
  const bool keep_truthy = st.lazy == GenState::kFilter &&
                           st.fn.kind == Value::kConst && st.fn.obj == Py_None;
  const size_t nodes = g().nodes().size();
  Frame caller;  // the calls run under the consumer, as a generator's body does
  caller.depth = 1;
  ValueList items;
  ++gen_depth_;
  bool ok = true;
  for (size_t i = 0; ok && i < n; ++i) {
    ValueList call_args;
    for (const ValueList& c : columns) call_args.push_back(c[i]);
    Value r;
    if (keep_truthy) {
      r = call_args[0];
    } else {
      ok = Call(caller, st.fn, call_args, &r);
      if (!ok) break;
    }
    if (st.lazy == GenState::kMap) {
      items.push_back(std::move(r));
      continue;
    }
    bool truth = false;
    ok = Truth(r, &truth);
    if (ok && truth) items.push_back(std::move(call_args[0]));
  }
  --gen_depth_;
  if (!ok) return false;
  return GeneratorItems(std::move(items), nodes, pure, out);
}

bool Interp::TakesFromGenerator(const Value& it) {
  if (it.kind == Value::kGenerator || (it.kind == Value::kIter && it.from_generator)) return true;
  if (it.kind == Value::kIter && it.link) {
    for (const Value& src : it.link->sources)
      if (TakesFromGenerator(src)) return true;
  }
  return false;
}

}  // namespace pijit::bytecode
