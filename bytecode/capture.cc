// Capture entry point and the interpreter core: frames, the value stack, locals, constants,
// building sequences, returns. Opcode families with real meaning live in handlers_*.cc.
#include "bytecode/capture.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bytecode/interp.h"
#include "interop/convert.h"
#include "kernels/flags.h"

namespace pijit::bytecode {

const char* BreakCategoryName(BreakCategory c) {
  switch (c) {
#define PIJIT_BREAK_NAME(e, name, fatal) \
  case BreakCategory::e:                \
    return name;
    PIJIT_BREAK_CATEGORIES(PIJIT_BREAK_NAME)
#undef PIJIT_BREAK_NAME
  }
  return "internal";
}

bool BreakCategoryIsCallError(BreakCategory c) {
  switch (c) {
#define PIJIT_BREAK_FATAL(e, name, fatal) \
  case BreakCategory::e:                 \
    return fatal;
    PIJIT_BREAK_CATEGORIES(PIJIT_BREAK_FATAL)
#undef PIJIT_BREAK_FATAL
  }
  return false;
}

std::string BreakReason::ToText() const {
  std::string s = absl::StrCat(BreakCategoryName(category), " at ", file, ":", line, ": ", explanation);
  if (!hint.empty()) absl::StrAppend(&s, " (hint: ", hint, ")");
  return s;
}

OutputSpec& OutputSpec::operator=(OutputSpec&& o) noexcept {
  if (this != &o) {
    Py_XDECREF(constant);
    kind = o.kind;
    index = o.index;
    memo = o.memo;
    constant = o.constant;
    o.constant = nullptr;
    items = std::move(o.items);
  }
  return *this;
}

using guards::Source;

Interp::~Interp() {
  for (PyObject* o : keep_) Py_DECREF(o);
}

PyObject* Interp::Keep(PyObject* o) {
  if (o) keep_.push_back(o);
  return o;
}

void Interp::Fail(BreakCategory category, std::string explanation, std::string hint) {
  if (failed_) return;
  failed_ = true;
  BreakReason& r = out_->reason;
  PyCodeObject* co = cur_code_ ? cur_code_ : root_code_;
  r.category = category;
  r.file = PyUnicode_AsUTF8(co->co_filename);
  r.line = cur_offset_ >= 0 ? PyCode_Addr2Line(co, cur_offset_ * 2) : co->co_firstlineno;
  r.explanation = std::move(explanation);
  r.hint = std::move(hint);
}

bool Interp::Pop(Frame& f, Value* v) {
  if (f.stack.empty()) {
    Fail(BreakCategory::kInternal, "value stack underflow while simulating bytecode");
    return false;
  }
  *v = std::move(f.stack.back());
  f.stack.pop_back();
  return true;
}

Value* Interp::StackAt(Frame& f, int depth) {
  // `depth` counts from the top (1 is the top); resume code analysed without its live stack
  // (explain, tests) can ask for values below the bottom.
  if (depth < 1 || static_cast<size_t>(depth) > f.stack.size()) {
    Fail(BreakCategory::kInternal, "value stack underflow while simulating bytecode");
    return nullptr;
  }
  return &f.stack[f.stack.size() - static_cast<size_t>(depth)];
}

bool Interp::PopN(Frame& f, size_t n, ValueList* out) {
  if (f.stack.size() < n) {
    Fail(BreakCategory::kInternal, "value stack underflow while simulating bytecode");
    return false;
  }
  out->assign(std::make_move_iterator(f.stack.end() - n), std::make_move_iterator(f.stack.end()));
  f.stack.resize(f.stack.size() - n);
  return true;
}

// Decodes a code object for simulation; fails on what the interpreter cannot follow.
bool PrepareFrame(Interp& in, PyCodeObject* co, Frame& f, bool generator) {
  const int flags = co->co_flags;
  if (flags & (CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE) ||
      ((flags & CO_GENERATOR) && !generator)) {
    in.Fail(BreakCategory::kUnsupportedFunction, "generators and coroutines are not captured");
    return false;
  }
  // try/except and `with` bodies are followed like any code: capture never takes an
  // exception path (a Python error ends the capture), and BEFORE_WITH and the handlers are
  // not captured, so the function breaks there (an exception an instruction raises at a
  // break reaches its handler, see runtime/continuation.cc).
  PyObject* bytes = PyCode_GetCode(co);
  if (!bytes) {
    PyErr_Clear();
    in.Fail(BreakCategory::kInternal, "cannot read the function's bytecode");
    return false;
  }
  auto decoded = Decode(reinterpret_cast<const uint8_t*>(PyBytes_AS_STRING(bytes)),
                        static_cast<size_t>(PyBytes_GET_SIZE(bytes)));
  Py_DECREF(bytes);
  if (!decoded.ok()) {
    in.Fail(BreakCategory::kInternal, std::string(decoded.status().message()));
    return false;
  }
  f.code = co;
  f.instrs = std::move(*decoded);
  f.locals.assign(co->co_nlocalsplus, Value());
  return true;
}

bool Interp::RunFrame(Frame& f, Value* result) {
  PyCodeObject* saved_code = cur_code_;
  int saved_offset = cur_offset_;
  cur_code_ = f.code;
  bool returned = false;
  for (size_t pc = 0; pc < f.instrs.size() && !returned;) {
    if (++steps_ > kMaxSteps) {
      Fail(BreakCategory::kTooLong, absl::StrFormat("capture stopped after %d bytecode steps", kMaxSteps),
           "a loop with many iterations is unrolled at capture; keep loops short");
      return false;
    }
    cur_offset_ = f.instrs[pc].offset;
    if (f.depth == 0 && allow_break_) {
      // The state to resume from if this instruction breaks. Lists and dicts built during
      // capture are copied (keeping their aliasing): an inlined call may still mutate them
      // before it stops, and the bridge will run that call again.
      root_pc_ = pc;
      absl::flat_hash_map<const ValueList*, Value> copies;
      root_stack_.clear();
      root_locals_.clear();
      for (const Value& v : f.stack) root_stack_.push_back(SnapshotValue(v, copies));
      for (const Value& v : f.locals) root_locals_.push_back(SnapshotValue(v, copies));
      root_kwnames_ = f.kwnames;
      root_nodes_ = g().nodes().size();
      root_effects_ = effects_.size();
      root_params_ = out_->param_sources.size();
    }
    if (!Step(f, pc, &returned, result)) return false;
  }
  if (!returned) {
    Fail(BreakCategory::kInternal, "the function ends without RETURN_VALUE");
    return false;
  }
  cur_code_ = saved_code;
  cur_offset_ = saved_offset;
  return true;
}

bool Interp::Step(Frame& f, size_t& pc, bool* returned, Value* result) {
  const Instr& in = f.instrs[pc];
  size_t next = pc + 1;
  Value a, b;
  switch (in.op) {
    case Opc::RESUME:
    case Opc::NOP:
    case Opc::PRECALL:
      break;
    case Opc::COPY_FREE_VARS:
      break;  // free-variable slots are filled when the frame is set up
    case Opc::MAKE_CELL: {
      Value cell;
      cell.kind = Value::kCell;
      cell.cell = std::make_shared<Value>(f.locals[in.arg]);
      f.locals[in.arg] = std::move(cell);
      break;
    }
    case Opc::LOAD_FAST: {
      const Value& v = f.locals[in.arg];
      if (v.kind == Value::kUndef) {
        Fail(BreakCategory::kPythonError, "local variable referenced before assignment");
        return false;
      }
      f.stack.push_back(v);
      break;
    }
    case Opc::STORE_FAST:
      if (!Pop(f, &a)) return false;
      f.locals[in.arg] = std::move(a);
      break;
    case Opc::DELETE_FAST:
      if (f.locals[in.arg].kind == Value::kUndef) {
        Fail(BreakCategory::kPythonError, "local variable referenced before assignment (del)");
        return false;
      }
      f.locals[in.arg] = Value();
      break;
    case Opc::LOAD_CONST:
      f.stack.push_back(Value::Const(PyTuple_GET_ITEM(f.code->co_consts, in.arg)));
      break;
    case Opc::LOAD_GLOBAL: {
      PyObject* name = PyTuple_GET_ITEM(f.code->co_names, in.arg >> 1);
      if (in.arg & 1) f.stack.push_back(Value::Null());
      Value v;
      if (!LoadGlobal(f, name, &v)) return false;
      f.stack.push_back(std::move(v));
      break;
    }
    case Opc::LOAD_DEREF:
    case Opc::LOAD_CLASSDEREF: {
      Value v;
      if (!LoadDeref(f, in.arg, &v)) return false;
      f.stack.push_back(std::move(v));
      break;
    }
    case Opc::STORE_DEREF: {
      if (!Pop(f, &a)) return false;
      Value& slot = f.locals[in.arg];
      if (slot.kind != Value::kCell) {
        // A free variable of a function object: replayed into its cell (handlers_effects.cc).
        if (!StoreCellEffect(f, in.arg, a)) return false;
        break;
      }
      *slot.cell = std::move(a);
      break;
    }
    case Opc::LOAD_CLOSURE: {
      const Value& slot = f.locals[in.arg];
      if (slot.kind != Value::kCell) {
        Fail(BreakCategory::kUnsupportedBytecode, "closure over a variable pijit does not track");
        return false;
      }
      f.stack.push_back(slot);
      break;
    }
    case Opc::LOAD_ATTR:
    case Opc::LOAD_METHOD:
      if (!Pop(f, &a)) return false;
      if (!LoadAttr(f, a, PyTuple_GET_ITEM(f.code->co_names, in.arg), in.op == Opc::LOAD_METHOD))
        return false;
      break;
    case Opc::PUSH_NULL:
      f.stack.push_back(Value::Null());
      break;
    case Opc::KW_NAMES:
      f.kwnames = PyTuple_GET_ITEM(f.code->co_consts, in.arg);
      break;
    case Opc::CALL: {
      ValueList args;
      if (!PopN(f, in.arg, &args)) return false;
      Value second, first;
      if (!Pop(f, &second) || !Pop(f, &first)) return false;
      Value callable = second;
      if (first.kind != Value::kNull) {  // method call: `second` is self
        callable = first;
        args.insert(args.begin(), second);
      }
      Value r;
      if (!Call(f, callable, std::move(args), &r)) return false;
      f.stack.push_back(std::move(r));
      break;
    }
    case Opc::MAKE_FUNCTION: {
      Value code;
      if (!Pop(f, &code)) return false;
      Value fn;
      fn.kind = Value::kFunction;
      fn.obj = code.obj;
      fn.globals_source = f.func_source;
      fn.globals_func = f.func ? f.func : f.globals_func;
      if (in.arg & 0x08) {
        if (!Pop(f, &a) || a.kind != Value::kSeq) {
          if (!failed()) Fail(BreakCategory::kInternal, "MAKE_FUNCTION without a closure tuple");
          return false;
        }
        fn.items = a.items;
      }
      if (in.arg & 0x04 || in.arg & 0x02) {
        Fail(BreakCategory::kUnsupportedBytecode, "functions with annotations or keyword defaults defined in "
             "captured code");
        return false;
      }
      if (in.arg & 0x01) {
        if (!Pop(f, &a)) return false;
        if (a.kind == Value::kSeq) {
          fn.defaults = a.items;
        } else if (a.kind == Value::kConst && PyTuple_Check(a.obj)) {
          fn.defaults = std::make_shared<ValueList>();
          for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(a.obj); ++i)
            fn.defaults->push_back(Value::Const(PyTuple_GET_ITEM(a.obj, i)));
        }
      }
      if (!code.obj || !PyCode_Check(code.obj)) {
        Fail(BreakCategory::kInternal, "MAKE_FUNCTION of a value that is not a code object");
        return false;
      }
      f.stack.push_back(std::move(fn));
      break;
    }
    case Opc::BINARY_OP: {
      Value r;
      if (!Pop(f, &b) || !Pop(f, &a) || !BinaryOp(in.arg, a, b, &r)) return false;
      f.stack.push_back(std::move(r));
      break;
    }
    case Opc::COMPARE_OP: {
      Value r;
      if (!Pop(f, &b) || !Pop(f, &a) || !CompareOp(in.arg, a, b, &r)) return false;
      f.stack.push_back(std::move(r));
      break;
    }
    case Opc::IS_OP: {
      if (!Pop(f, &b) || !Pop(f, &a)) return false;
      bool known = false, same = false;
      if (a.kind == Value::kConst && b.kind == Value::kConst) {
        UseConst(a);
        UseConst(b);
        known = true;
        same = a.obj == b.obj;
      } else if ((a.kind == Value::kConst && a.obj == Py_None && b.kind != Value::kUndef) ||
                 (b.kind == Value::kConst && b.obj == Py_None && a.kind != Value::kUndef)) {
        // Tensors, sequences and functions built during capture are never None.
        const Value& other = a.kind == Value::kConst && a.obj == Py_None ? b : a;
        known = other.kind != Value::kNull && other.kind != Value::kConst;
        same = false;
      }
      if (!known) {
        Fail(BreakCategory::kUnsupportedOperator, "`is` on values that are not known at capture time");
        return false;
      }
      f.stack.push_back(Value::Const((same != (in.arg == 1)) ? Py_True : Py_False));
      break;
    }
    case Opc::UNARY_NEGATIVE:
    case Opc::UNARY_NOT:
    case Opc::UNARY_POSITIVE:
    case Opc::UNARY_INVERT: {
      if (!Pop(f, &a)) return false;
      Value r;
      if (in.op == Opc::UNARY_NOT) {
        bool t;
        if (!Truth(a, &t)) return false;
        r = Value::Const(t ? Py_False : Py_True);
      } else if (a.kind == Value::kTensor && a.type != g_tensor_type &&
                 in.op != Opc::UNARY_NOT) {
        Fail(BreakCategory::kUnsupportedOperator, absl::StrFormat("unary operator of %s", a.type->tp_name),
             "operators of Tensor subclasses run eagerly");
        return false;
      } else if (a.kind == Value::kTensor && in.op == Opc::UNARY_NEGATIVE) {
        if (!CallOp(PyOp::kNeg, {a}, {}, &r)) return false;
      } else if (a.kind == Value::kTensor && in.op == Opc::UNARY_INVERT) {
        if (!CallOp(PyOp::kBitwiseNot, {a}, {}, &r)) return false;
      } else if (a.kind == Value::kTensor && in.op == Opc::UNARY_POSITIVE) {
        r = a;
      } else if (a.kind == Value::kConst &&
                 (PyLong_CheckExact(a.obj) || PyFloat_CheckExact(a.obj) || PyBool_Check(a.obj))) {
        UseConst(a);
        PyObject* v = in.op == Opc::UNARY_NEGATIVE   ? PyNumber_Negative(a.obj)
                      : in.op == Opc::UNARY_POSITIVE ? PyNumber_Positive(a.obj)
                                                     : PyNumber_Invert(a.obj);
        if (!v) {
          PyErr_Clear();
          Fail(BreakCategory::kPythonError, "unary operator raises on this value");
          return false;
        }
        r = Value::Const(Keep(v));
      } else {
        Fail(BreakCategory::kUnsupportedOperator, "unary operator on a value that is not a tensor or a number");
        return false;
      }
      f.stack.push_back(std::move(r));
      break;
    }
    case Opc::BUILD_TUPLE:
    case Opc::BUILD_LIST: {
      ValueList items;
      if (!PopN(f, in.arg, &items)) return false;
      f.stack.push_back(Value::Seq(std::move(items), in.op == Opc::BUILD_LIST));
      break;
    }
    case Opc::BUILD_MAP: {
      ValueList kv;
      if (!PopN(f, 2 * static_cast<size_t>(in.arg), &kv)) return false;
      Value d = Value::Dict();
      for (size_t i = 0; i < kv.size(); i += 2)
        if (!DictSet(d, kv[i], kv[i + 1])) return false;
      f.stack.push_back(std::move(d));
      break;
    }
    case Opc::BUILD_CONST_KEY_MAP: {
      Value keys;
      ValueList vals;
      if (!Pop(f, &keys) || !PopN(f, in.arg, &vals)) return false;
      if (keys.kind != Value::kConst || !PyTuple_CheckExact(keys.obj) ||
          PyTuple_GET_SIZE(keys.obj) != in.arg) {
        Fail(BreakCategory::kInternal, "BUILD_CONST_KEY_MAP without a key tuple");
        return false;
      }
      Value d = Value::Dict();
      for (int i = 0; i < in.arg; ++i)
        if (!DictSet(d, Value::Const(PyTuple_GET_ITEM(keys.obj, i)), vals[i])) return false;
      f.stack.push_back(std::move(d));
      break;
    }
    case Opc::MAP_ADD: {
      Value key, val;
      if (!Pop(f, &val) || !Pop(f, &key)) return false;
      Value* d_at = StackAt(f, in.arg);
      if (!d_at) return false;
      Value& d = *d_at;
      if (d.kind != Value::kDict) {
        Fail(BreakCategory::kInternal, "MAP_ADD to a value that is not a dict built during capture");
        return false;
      }
      if (!DictSet(d, key, val)) return false;
      break;
    }
    case Opc::DICT_UPDATE:
    case Opc::DICT_MERGE: {
      if (!Pop(f, &a)) return false;
      Value* d_at = StackAt(f, in.arg);
      if (!d_at) return false;
      Value& d = *d_at;
      if (d.kind != Value::kDict || a.kind != Value::kDict) {
        Fail(BreakCategory::kUnsupportedBytecode, "merging a mapping unknown at capture time");
        return false;
      }
      for (size_t i = 0; i < a.keys->size(); ++i) {
        bool found = false;
        Value old;
        if (in.op == Opc::DICT_MERGE && (!DictGet(d, Value::Const((*a.keys)[i]), &old, &found) || found)) {
          if (!failed()) Fail(BreakCategory::kPythonError, "got multiple values for a keyword argument");
          return false;
        }
        if (!DictSet(d, Value::Const((*a.keys)[i]), (*a.items)[i])) return false;
      }
      break;
    }
    case Opc::BUILD_SET: {
      // Sets of plain values are computed now: a known Python object (see MakeSet).
      ValueList items;
      Value r;
      if (!PopN(f, in.arg, &items) || !MakeSet(nullptr, items, &r)) return false;
      f.stack.push_back(std::move(r));
      break;
    }
    case Opc::SET_ADD:
    case Opc::SET_UPDATE: {
      if (!Pop(f, &a)) return false;
      if (in.arg < 1 || static_cast<size_t>(in.arg) > f.stack.size()) {
        Fail(BreakCategory::kInternal, "SET_ADD beyond the stack");
        return false;
      }
      Value* set_at = StackAt(f, in.arg);
      if (!set_at) return false;
      Value& set = *set_at;
      if (set.kind != Value::kConst || !PySet_CheckExact(set.obj) || set.source >= 0) {
        Fail(BreakCategory::kInternal, "adding to a value that is not a set built during capture");
        return false;
      }
      ValueList items;
      if (in.op == Opc::SET_ADD) {
        items.push_back(std::move(a));
      } else if (!SetItems(a, &items)) {
        return false;
      }
      // A new set each time: the breaking state may still hold the previous one.
      Value r;
      if (!MakeSet(set.obj, items, &r)) return false;
      set = std::move(r);
      break;
    }
    case Opc::CONTAINS_OP: {
      if (!Pop(f, &b) || !Pop(f, &a)) return false;
      bool r;
      if (!Contains(b, a, &r)) return false;
      f.stack.push_back(Value::Const((r != (in.arg == 1)) ? Py_True : Py_False));
      break;
    }
    case Opc::FORMAT_VALUE: {
      Value spec, r;
      const bool has_spec = in.arg & 0x04;
      if (has_spec && !Pop(f, &spec)) return false;
      if (!Pop(f, &a) || !FormatValue(a, in.arg, has_spec ? &spec : nullptr, &r)) return false;
      f.stack.push_back(std::move(r));
      break;
    }
    case Opc::BUILD_STRING: {
      ValueList parts;
      if (!PopN(f, in.arg, &parts)) return false;
      PyObject* joined = PyUnicode_New(0, 0);
      for (const Value& p : parts) {
        if (p.kind != Value::kConst || !PyUnicode_CheckExact(p.obj)) {
          Py_DECREF(joined);
          Fail(BreakCategory::kUnsupportedOperator, "an f-string part unknown at capture time");
          return false;
        }
        UseConst(p);
        PyUnicode_Append(&joined, p.obj);
      }
      f.stack.push_back(Value::Const(Keep(joined)));
      break;
    }
    case Opc::CALL_FUNCTION_EX: {
      Value kwargs, callargs, fn, null;
      if ((in.arg & 1) && !Pop(f, &kwargs)) return false;
      if (!Pop(f, &callargs) || !Pop(f, &fn) || !Pop(f, &null)) return false;
      Value it;
      if (!GetIter(callargs, &it)) return false;
      ValueList args = *it.items;
      if (in.arg & 1) {
        if (kwargs.kind != Value::kDict) {
          Fail(BreakCategory::kUnsupportedCall, "**kwargs unknown at capture time");
          return false;
        }
        PyObject* names = PyTuple_New(static_cast<Py_ssize_t>(kwargs.keys->size()));
        for (size_t i = 0; i < kwargs.keys->size(); ++i) {
          if (!PyUnicode_Check((*kwargs.keys)[i])) {
            Py_DECREF(names);
            Fail(BreakCategory::kPythonError, "keywords must be strings");
            return false;
          }
          Py_INCREF((*kwargs.keys)[i]);
          PyTuple_SET_ITEM(names, i, (*kwargs.keys)[i]);
          args.push_back((*kwargs.items)[i]);
        }
        f.kwnames = Keep(names);
      }
      Value r;
      if (!Call(f, fn, std::move(args), &r)) return false;
      f.stack.push_back(std::move(r));
      break;
    }
    case Opc::LIST_APPEND: {
      if (!Pop(f, &a)) return false;
      Value* list_at = StackAt(f, in.arg);
      if (!list_at) return false;
      Value& list = *list_at;
      if (list.kind == Value::kSeq && viewed_items_.contains(list.items.get())) {
        Fail(BreakCategory::kUnsupportedBytecode, "appending to a list a loop is iterating",
             "the loop runs in Python");
        return false;
      }
      if (list.kind != Value::kSeq || !list.is_list) {
        Fail(BreakCategory::kInternal, "LIST_APPEND to a value that is not a list built during capture");
        return false;
      }
      list.items->push_back(std::move(a));
      break;
    }
    case Opc::LIST_EXTEND: {
      if (!Pop(f, &a)) return false;
      Value* list_at = StackAt(f, in.arg);
      if (!list_at) return false;
      Value& list = *list_at;
      Value it;
      if (list.kind != Value::kSeq || !list.is_list || !GetIter(a, &it)) {
        if (!failed()) Fail(BreakCategory::kUnsupportedBytecode, "extending a list with an unknown iterable");
        return false;
      }
      list.items->insert(list.items->end(), it.items->begin(), it.items->end());
      break;
    }
    case Opc::LIST_TO_TUPLE: {
      if (!Pop(f, &a) || a.kind != Value::kSeq) {
        if (!failed()) Fail(BreakCategory::kInternal, "LIST_TO_TUPLE of an unknown list");
        return false;
      }
      f.stack.push_back(Value::Seq(*a.items, false));
      break;
    }
    case Opc::UNPACK_SEQUENCE: {
      if (!Pop(f, &a)) return false;
      Value it;
      if (!GetIter(a, &it)) return false;
      if (static_cast<int>(it.items->size()) != in.arg) {
        Fail(BreakCategory::kPythonError, absl::StrFormat("unpacking %d values into %d names",
                                             it.items->size(), in.arg));
        return false;
      }
      for (auto i = it.items->rbegin(); i != it.items->rend(); ++i) f.stack.push_back(*i);
      break;
    }
    case Opc::BUILD_SLICE: {
      ValueList parts;
      if (!PopN(f, in.arg, &parts)) return false;
      PyObject* p[3] = {Py_None, Py_None, Py_None};
      for (size_t i = 0; i < parts.size(); ++i) {
        p[i] = AsPyObject(parts[i]);
        if (!p[i]) {
          Fail(BreakCategory::kUnsupportedOperator, "a slice with bounds unknown at capture time");
          return false;
        }
        UseConst(parts[i]);
      }
      f.stack.push_back(Value::Const(Keep(PySlice_New(p[0], p[1], p[2]))));
      break;
    }
    case Opc::BINARY_SUBSCR: {
      Value r;
      if (!Pop(f, &b) || !Pop(f, &a) || !Subscript(a, b, &r)) return false;
      f.stack.push_back(std::move(r));
      break;
    }
    case Opc::GET_ITER:
      if (!StepGetIter(f)) return false;
      break;
    case Opc::FOR_ITER:
      if (!StepForIter(f, in.target, &next)) return false;
      break;
    case Opc::JUMP_FORWARD:
    case Opc::JUMP_BACKWARD:
    case Opc::JUMP_BACKWARD_NO_INTERRUPT:
      next = in.target;
      break;
    case Opc::POP_JUMP_FORWARD_IF_TRUE:
    case Opc::POP_JUMP_BACKWARD_IF_TRUE:
    case Opc::POP_JUMP_FORWARD_IF_FALSE:
    case Opc::POP_JUMP_BACKWARD_IF_FALSE: {
      if (!Pop(f, &a)) return false;
      bool t;
      if (!Truth(a, &t)) return false;
      const bool on_true = in.op == Opc::POP_JUMP_FORWARD_IF_TRUE ||
                           in.op == Opc::POP_JUMP_BACKWARD_IF_TRUE;
      if (t == on_true) next = in.target;
      break;
    }
    case Opc::POP_JUMP_FORWARD_IF_NONE:
    case Opc::POP_JUMP_BACKWARD_IF_NONE:
    case Opc::POP_JUMP_FORWARD_IF_NOT_NONE:
    case Opc::POP_JUMP_BACKWARD_IF_NOT_NONE: {
      if (!Pop(f, &a)) return false;
      bool is_none;
      if (a.kind == Value::kConst) {
        UseConst(a);
        is_none = a.obj == Py_None;
      } else if (a.kind == Value::kTensor || a.kind == Value::kSeq || a.kind == Value::kFunction) {
        is_none = false;
      } else {
        Fail(BreakCategory::kUnsupportedBytecode, "`is None` test of an unknown value");
        return false;
      }
      const bool on_none = in.op == Opc::POP_JUMP_FORWARD_IF_NONE ||
                           in.op == Opc::POP_JUMP_BACKWARD_IF_NONE;
      if (is_none == on_none) next = in.target;
      break;
    }
    case Opc::JUMP_IF_TRUE_OR_POP:
    case Opc::JUMP_IF_FALSE_OR_POP: {
      if (f.stack.empty()) return Pop(f, &a);
      bool t;
      if (!Truth(f.stack.back(), &t)) return false;
      if (t == (in.op == Opc::JUMP_IF_TRUE_OR_POP)) {
        next = in.target;
      } else {
        f.stack.pop_back();
      }
      break;
    }
    case Opc::POP_TOP:
      if (!Pop(f, &a)) return false;
      break;
    case Opc::COPY: {
      if (in.arg < 1 || static_cast<size_t>(in.arg) > f.stack.size()) {
        Fail(BreakCategory::kInternal, "COPY beyond the stack");
        return false;
      }
      f.stack.push_back(f.stack[f.stack.size() - in.arg]);
      break;
    }
    case Opc::SWAP: {
      if (in.arg < 2 || static_cast<size_t>(in.arg) > f.stack.size()) {
        Fail(BreakCategory::kInternal, "SWAP beyond the stack");
        return false;
      }
      std::swap(f.stack.back(), f.stack[f.stack.size() - in.arg]);
      break;
    }
    case Opc::BEFORE_WITH:
      Fail(BreakCategory::kUnsupportedBytecode, "entering a `with` block calls __enter__ in Python",
           "the block's body is still captured between graph breaks");
      return false;
    case Opc::STORE_ATTR:
      // owner.name = value, with value at TOS1 and owner at TOS.
      if (!Pop(f, &a) || !Pop(f, &b) || !StoreAttr(a, PyTuple_GET_ITEM(f.code->co_names, in.arg), b))
        return false;
      break;
    case Opc::STORE_GLOBAL:
      if (!Pop(f, &a) || !StoreGlobal(f, PyTuple_GET_ITEM(f.code->co_names, in.arg), a)) return false;
      break;
    case Opc::DELETE_ATTR:
      if (!Pop(f, &a) || !DeleteAttr(a, PyTuple_GET_ITEM(f.code->co_names, in.arg))) return false;
      break;
    case Opc::DELETE_GLOBAL:
      if (!DeleteGlobal(f, PyTuple_GET_ITEM(f.code->co_names, in.arg))) return false;
      break;
    case Opc::DELETE_SUBSCR:
      if (!DeleteSubscr(f)) return false;  // handlers_effects.cc
      break;
    case Opc::STORE_SUBSCR:
      if (!StoreSubscr(f)) return false;  // handlers_effects.cc
      break;
    case Opc::RETURN_GENERATOR:
      if (!f.yields) {
        Fail(BreakCategory::kInternal, "RETURN_GENERATOR outside a generator run");
        return false;
      }
      f.stack.push_back(Value::Const(Py_None));  // the value sent by the first next()
      break;
    case Opc::YIELD_VALUE:
      if (!f.yields) {
        Fail(BreakCategory::kUnsupportedBytecode, "yield outside a generator consumed whole");
        return false;
      }
      if (!Pop(f, &a)) return false;
      f.yields->push_back(std::move(a));
      f.stack.push_back(Value::Const(Py_None));  // next() sends None
      break;
    case Opc::RETURN_VALUE:
      if (!Pop(f, result)) return false;
      *returned = true;
      break;
    default:
      Fail(BreakCategory::kUnsupportedBytecode, absl::StrFormat("%s is not captured yet", OpcName(in.op)),
           "this function runs eagerly; graph breaks will split it around such code");
      return false;
  }
  pc = next;
  return true;
}

void Interp::Run() {
  const int flags = root_code_->co_flags;
  // *args is one more parameter slot, a tuple (its items are sources of their own).
  if (flags & CO_VARKEYWORDS) {
    Fail(BreakCategory::kUnsupportedFunction, "functions with **kwargs are not captured yet");
    return;
  }
  Frame f;
  if (!PrepareFrame(*this, root_code_, f)) return;
  root_frame_ = &f;
  f.func = root_func_;
  f.func_source = -1;
  out_->num_instructions = f.instrs.size();
  if (flags::LogEnabled("bytecode")) {
    std::string text;
    for (const Instr& i : f.instrs) {
      absl::StrAppend(&text, absl::StrFormat("  %4d %-28s %d", i.offset * 2, OpcName(i.op), i.arg));
      if (i.target >= 0) absl::StrAppend(&text, " -> ", f.instrs[i.target].offset * 2);
      absl::StrAppend(&text, "\n");
    }
    PySys_WriteStderr("[pijit] bytecode of %s:\n%s", PyUnicode_AsUTF8(root_code_->co_qualname),
                      text.c_str());
  }
  for (int i = 0; i < nargs_; ++i) {
    Value v;
    if (!FromSource(gp().AddSource(Source::kArg, -1, i), args_[i], &v)) return;
    f.locals[i] = v;
  }
  // Free variables of the root function are read through its closure cells when loaded.
  Value result;
  if (!RunFrame(f, &result)) {
    if (allow_break_) BuildBreak();
    return;
  }
  if (!MakeEffects(effects_.size()) || !MakeOutput(result, &out_->output)) return;
  g().SetOutputs(outputs_);
  out_->num_memo = static_cast<int32_t>(memo_of_items_.size());
  out_->ok = true;
}

CaptureResult Capture(PyCodeObject* code, PyObject* func, PyObject* const* args, int nargs,
                      const std::vector<guards::DynamicDim>& dynamic_dims, bool allow_break,
                      const std::vector<std::string>& dynamic_numbers) {
  CaptureResult result;
  {
    Interp interp(code, func, args, nargs, &result, dynamic_dims, allow_break, dynamic_numbers);
    interp.Run();
  }
  if (PyErr_Occurred()) PyErr_Clear();
  return result;
}

}  // namespace pijit::bytecode
