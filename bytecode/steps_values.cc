// Step handlers of the opcode families that compute values: calls, function objects,
// operators and the building of tuples, lists, dicts, sets and strings.
#include "absl/strings/str_format.h"
#include "bytecode/interp.h"
#include "interop/convert.h"

namespace pijit::bytecode {

using guards::Source;

// The callable of a call from the two stack slots below its arguments: [NULL, callable] (3.11,
// 3.12), [callable, NULL] (3.13) or [method, self], where self becomes the first argument.
bool Interp::SplitCallee(Value lower, Value upper, Value* callable, ValueList* args) {
  if (lower.kind == Value::kNull) {
    *callable = std::move(upper);
  } else if (upper.kind == Value::kNull) {
    *callable = std::move(lower);
  } else {
    *callable = std::move(lower);
    args->insert(args->begin(), std::move(upper));
  }
  if (callable->kind == Value::kNull) {
    Fail(BreakCategory::kInternal, "a call without a callable");
    return false;
  }
  return true;
}

// Calls and their keyword names.
bool Interp::StepCall(StepState& s) {
  Frame& f = s.f;
  const Instr& in = s.in;
  Value kw;
  switch (in.op) {
    case Opc::KW_NAMES:
      f.kwnames = PyTuple_GET_ITEM(f.code->co_consts, in.arg);
      break;
    case Opc::CALL_KW:  // 3.13: the keyword names are on the stack, above the arguments
      if (!Pop(f, &kw) || kw.kind != Value::kConst || !PyTuple_Check(kw.obj)) {
        if (!failed()) Fail(BreakCategory::kInternal, "CALL_KW without a tuple of names");
        return false;
      }
      f.kwnames = kw.obj;
      [[fallthrough]];
    case Opc::CALL: {
      ValueList args;
      if (!PopN(f, in.arg, &args)) return false;
      Value second, first;
      if (!Pop(f, &second) || !Pop(f, &first)) return false;
      Value callable;
      if (!SplitCallee(std::move(first), std::move(second), &callable, &args)) return false;
      Value r;
      if (!Call(f, callable, std::move(args), &r)) return false;
      f.stack.push_back(std::move(r));
      break;
    }
    case Opc::CALL_FUNCTION_EX: {
      Value kwargs, callargs, fn;
      if ((in.arg & 1) && !Pop(f, &kwargs)) return false;
      Value below_args, lowest;
      if (!Pop(f, &callargs) || !Pop(f, &below_args) || !Pop(f, &lowest)) return false;
      ValueList no_self;  // (the compilers put a NULL there: no bound method's self)
      if (!SplitCallee(std::move(lowest), std::move(below_args), &fn, &no_self)) return false;
      Value it;
      if (!GetIter(callargs, &it)) return false;
      ValueList args = *it.items;
      args.insert(args.begin(), no_self.begin(), no_self.end());
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
        f.kwnames = values_.Keep(names);
      }
      Value r;
      if (!Call(f, fn, std::move(args), &r)) return false;
      f.stack.push_back(std::move(r));
      break;
    }
    default:
      break;
  }
  return true;
}


// Sets one attribute of a function made by the captured code: MAKE_FUNCTION's flags on 3.11
// and 3.12, SET_FUNCTION_ATTRIBUTE on 3.13 (closure 0x08, annotations 0x04, keyword defaults
// 0x02, defaults 0x01).
bool Interp::SetFunctionAttribute(Value& fn, int flag, const Value& a) {
  if (flag == 0x08) {
    if (a.kind != Value::kSeq) {
      if (!failed()) Fail(BreakCategory::kInternal, "a function's closure that is not a tuple");
      return false;
    }
    fn.items = a.items;
    return true;
  }
  if (flag == 0x01) {
    if (a.kind == Value::kSeq) {
      fn.defaults = a.items;
    } else if (a.kind == Value::kConst && PyTuple_Check(a.obj)) {
      fn.defaults = std::make_shared<ValueList>();
      for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(a.obj); ++i)
        fn.defaults->push_back(Value::Const(PyTuple_GET_ITEM(a.obj, i)));
    }
    return true;
  }
  Fail(BreakCategory::kUnsupportedBytecode,
       "functions with annotations or keyword defaults defined in captured code");
  return false;
}

// Function objects made by the captured code.
bool Interp::StepMakeFunction(StepState& s) {
  Frame& f = s.f;
  const Instr& in = s.in;
  Value a;
  switch (in.op) {
    case Opc::MAKE_FUNCTION: {
      Value code;
      if (!Pop(f, &code)) return false;
      if (!code.obj || !PyCode_Check(code.obj)) {
        Fail(BreakCategory::kInternal, "MAKE_FUNCTION of a value that is not a code object");
        return false;
      }
      Value fn;
      fn.kind = Value::kFunction;
      fn.obj = code.obj;
      fn.globals_source = f.func_source;
      fn.globals_func = f.func ? f.func : f.globals_func;
      // 3.11 and 3.12: the attributes the flags name are below the code, closure first.
      for (int flag : {0x08, 0x04, 0x02, 0x01}) {
        if (!(in.arg & flag)) continue;
        if (!Pop(f, &a) || !SetFunctionAttribute(fn, flag, a)) return false;
      }
      f.stack.push_back(std::move(fn));
      break;
    }
    case Opc::SET_FUNCTION_ATTRIBUTE: {  // 3.13: (attribute, function) -> function
      Value fn;
      if (!Pop(f, &fn) || !Pop(f, &a)) return false;
      if (fn.kind != Value::kFunction) {
        Fail(BreakCategory::kInternal, "SET_FUNCTION_ATTRIBUTE of a value that is not a function");
        return false;
      }
      if (!SetFunctionAttribute(fn, in.arg, a)) return false;
      f.stack.push_back(std::move(fn));
      break;
    }
    default:
      break;
  }
  return true;
}


// Binary operators, comparisons, identity, membership and subscripts.
bool Interp::StepBinaryOperator(StepState& s) {
  Frame& f = s.f;
  const Instr& in = s.in;
  Value a, b;
  switch (in.op) {
    case Opc::BINARY_OP: {
      Value r;
      if (!Pop(f, &b) || !Pop(f, &a) || !BinaryOp(in.arg, a, b, &r)) return false;
      f.stack.push_back(std::move(r));
      break;
    }
    case Opc::COMPARE_OP: {
      Value r;
      // 3.13's bool flag (kCompareToBool) is left to the jump that reads the result, which
      // tests its truth as on 3.11 (a comparison with the flag always feeds a jump).
      if (!Pop(f, &b) || !Pop(f, &a) || !CompareOp(in.arg & ~kCompareToBool, a, b, &r)) return false;
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
    case Opc::CONTAINS_OP: {
      if (!Pop(f, &b) || !Pop(f, &a)) return false;
      bool r;
      if (!Contains(b, a, &r)) return false;
      f.stack.push_back(Value::Const((r != (in.arg == 1)) ? Py_True : Py_False));
      break;
    }
    case Opc::BINARY_SUBSCR: {
      Value r;
      if (!Pop(f, &b) || !Pop(f, &a) || !SubscriptStep(f, a, b, &r)) return false;
      f.stack.push_back(std::move(r));
      break;
    }
    case Opc::BINARY_SLICE: {  // 3.12: container[start:stop]
      ValueList bounds;
      Value r;
      if (!PopN(f, 2, &bounds) || !Pop(f, &a) || !MakeSlice(bounds, &b) ||
          !SubscriptStep(f, a, b, &r)) {
        return false;
      }
      f.stack.push_back(std::move(r));
      break;
    }
    default:
      break;
  }
  return true;
}


// Unary operators.
bool Interp::StepUnaryOperator(StepState& s) {
  Frame& f = s.f;
  const Instr& in = s.in;
  Value a;
  switch (in.op) {
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
        if (!ops_.Call(PyOp::kNeg, {a}, {}, &r)) return false;
      } else if (a.kind == Value::kTensor && in.op == Opc::UNARY_INVERT) {
        if (!ops_.Call(PyOp::kBitwiseNot, {a}, {}, &r)) return false;
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
        r = Value::Const(values_.Keep(v));
      } else {
        Fail(BreakCategory::kUnsupportedOperator, "unary operator on a value that is not a tensor or a number");
        return false;
      }
      f.stack.push_back(std::move(r));
      break;
    }
    default:
      break;
  }
  return true;
}


// Tuples, lists, unpacking and slices.
bool Interp::StepSequence(StepState& s) {
  Frame& f = s.f;
  const Instr& in = s.in;
  Value a;
  switch (in.op) {
    case Opc::BUILD_TUPLE:
    case Opc::BUILD_LIST: {
      ValueList items;
      if (!PopN(f, in.arg, &items)) return false;
      f.stack.push_back(Value::Seq(std::move(items), in.op == Opc::BUILD_LIST));
      break;
    }
    case Opc::LIST_APPEND: {
      if (!Pop(f, &a)) return false;
      Value* list_at = StackAt(f, in.arg);
      if (!list_at) return false;
      Value& list = *list_at;
      if (list.kind == Value::kSeq && effects_.ItemsViewed(list.items.get())) {
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
      Value slice;
      if (!PopN(f, in.arg, &parts) || !MakeSlice(parts, &slice)) return false;
      f.stack.push_back(std::move(slice));
      break;
    }
    default:
      break;
  }
  return true;
}


// Dicts.
bool Interp::StepMapping(StepState& s) {
  Frame& f = s.f;
  const Instr& in = s.in;
  Value a;
  switch (in.op) {
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
      // `**kwargs` or `{**a}` of an input dict: its guarded snapshot (a read, no mutation).
      if (a.kind == Value::kConst && a.source >= 0 && PyDict_CheckExact(a.obj) &&
          !ShadowDict(a) && !InputDictSnapshot(a, &a)) {
        return false;
      }
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
    default:
      break;
  }
  return true;
}


// Sets.
bool Interp::StepSet(StepState& s) {
  Frame& f = s.f;
  const Instr& in = s.in;
  Value a;
  switch (in.op) {
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
    default:
      break;
  }
  return true;
}


// F-strings.
bool Interp::StepString(StepState& s) {
  Frame& f = s.f;
  const Instr& in = s.in;
  Value a;
  switch (in.op) {
    case Opc::FORMAT_VALUE: {
      Value spec, r;
      const bool has_spec = in.arg & kFormatHasSpec;
      if (has_spec && !Pop(f, &spec)) return false;
      if (!Pop(f, &a) || !FormatValue(a, in.arg, has_spec ? &spec : nullptr, &r)) return false;
      f.stack.push_back(std::move(r));
      break;
    }
    case Opc::CONVERT_VALUE: {  // 3.13: str(), repr() or ascii() (1, 2, 3), formatted later
      Value r;
      if (!Pop(f, &a) || !FormatValue(a, in.arg & 3, nullptr, &r)) return false;
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
      f.stack.push_back(Value::Const(values_.Keep(joined)));
      break;
    }
    default:
      break;
  }
  return true;
}


bool Interp::MakeSlice(const ValueList& parts, Value* out) {
  PyObject* p[3] = {Py_None, Py_None, Py_None};
  for (size_t i = 0; i < parts.size() && i < 3; ++i) {
    p[i] = AsPyObject(parts[i]);
    if (!p[i]) {
      Fail(BreakCategory::kUnsupportedOperator, "a slice with bounds unknown at capture time");
      return false;
    }
    UseConst(parts[i]);
  }
  *out = Value::Const(values_.Keep(PySlice_New(p[0], p[1], p[2])));
  return true;
}

bool Interp::SubscriptStep(Frame& f, const Value& container, const Value& index, Value* out) {
  bool inlined = false;
  if (!GetItemInPython(f, container, index, out, &inlined) && inlined) return false;
  return inlined || Subscript(container, index, out);
}

}  // namespace pijit::bytecode
