// Step handlers of the opcode families that move values between the simulated frame's
// slots, globals and stack, and that steer execution (jumps, loops, returns); the table
// from opcode to handler. Interp::Step (capture.cc) dispatches through it.
#include <vector>

#include "absl/strings/str_format.h"
#include "bytecode/interp.h"
#include "interop/convert.h"

namespace pijit::bytecode {

using guards::Source;

// The handler of each opcode's family; the rest are not captured (StepUnsupported).
Interp::StepHandler Interp::HandlerOf(Opc op) {
  static const auto* table = [] {
    auto* t = new StepHandler[static_cast<size_t>(Opc::kInvalid) + 1];
    for (size_t i = 0; i <= static_cast<size_t>(Opc::kInvalid); ++i) t[i] = &Interp::StepUnsupported;
    struct Family {
      StepHandler handler;
      std::vector<Opc> ops;  // (an initializer_list member of std::pair would dangle)
    };
    const Family families[] = {
        {&Interp::StepNop, {Opc::RESUME, Opc::NOP, Opc::PRECALL, Opc::COPY_FREE_VARS, Opc::TO_BOOL}},
        {&Interp::StepLocal, {Opc::MAKE_CELL, Opc::LOAD_FAST, Opc::LOAD_FAST_AND_CLEAR, Opc::STORE_FAST, Opc::DELETE_FAST, Opc::LOAD_FAST_LOAD_FAST, Opc::STORE_FAST_LOAD_FAST, Opc::STORE_FAST_STORE_FAST, Opc::LOAD_CONST, Opc::LOAD_DEREF, Opc::LOAD_CLASSDEREF, Opc::STORE_DEREF, Opc::LOAD_CLOSURE}},
        {&Interp::StepGlobal, {Opc::LOAD_GLOBAL, Opc::STORE_GLOBAL, Opc::DELETE_GLOBAL}},
        {&Interp::StepAttr, {Opc::LOAD_ATTR, Opc::LOAD_METHOD, Opc::LOAD_SUPER_ATTR, Opc::STORE_ATTR, Opc::DELETE_ATTR}},
        {&Interp::StepStack, {Opc::PUSH_NULL, Opc::POP_TOP, Opc::END_FOR, Opc::COPY, Opc::SWAP}},
        {&Interp::StepCall, {Opc::KW_NAMES, Opc::CALL, Opc::CALL_KW, Opc::CALL_FUNCTION_EX}},
        {&Interp::StepMakeFunction, {Opc::MAKE_FUNCTION, Opc::SET_FUNCTION_ATTRIBUTE}},
        {&Interp::StepBinaryOperator, {Opc::BINARY_OP, Opc::COMPARE_OP, Opc::IS_OP, Opc::CONTAINS_OP, Opc::BINARY_SUBSCR, Opc::BINARY_SLICE}},
        {&Interp::StepUnaryOperator, {Opc::UNARY_NEGATIVE, Opc::UNARY_NOT, Opc::UNARY_POSITIVE, Opc::UNARY_INVERT}},
        {&Interp::StepSequence, {Opc::BUILD_TUPLE, Opc::BUILD_LIST, Opc::LIST_APPEND, Opc::LIST_EXTEND, Opc::LIST_TO_TUPLE, Opc::UNPACK_SEQUENCE, Opc::BUILD_SLICE}},
        {&Interp::StepMapping, {Opc::BUILD_MAP, Opc::BUILD_CONST_KEY_MAP, Opc::MAP_ADD, Opc::DICT_UPDATE, Opc::DICT_MERGE}},
        {&Interp::StepSet, {Opc::BUILD_SET, Opc::SET_ADD, Opc::SET_UPDATE}},
        {&Interp::StepString, {Opc::FORMAT_VALUE, Opc::CONVERT_VALUE, Opc::BUILD_STRING}},
        {&Interp::StepIterate, {Opc::GET_ITER, Opc::FOR_ITER}},
        {&Interp::StepJump, {Opc::JUMP_FORWARD, Opc::JUMP_BACKWARD, Opc::JUMP_BACKWARD_NO_INTERRUPT, Opc::POP_JUMP_FORWARD_IF_TRUE, Opc::POP_JUMP_BACKWARD_IF_TRUE, Opc::POP_JUMP_FORWARD_IF_FALSE, Opc::POP_JUMP_BACKWARD_IF_FALSE, Opc::POP_JUMP_FORWARD_IF_NONE, Opc::POP_JUMP_BACKWARD_IF_NONE, Opc::POP_JUMP_FORWARD_IF_NOT_NONE, Opc::POP_JUMP_BACKWARD_IF_NOT_NONE, Opc::JUMP_IF_TRUE_OR_POP, Opc::JUMP_IF_FALSE_OR_POP}},
        {&Interp::StepStoreSubscript, {Opc::DELETE_SUBSCR, Opc::STORE_SUBSCR, Opc::STORE_SLICE}},
        {&Interp::StepGenerator, {Opc::RETURN_GENERATOR, Opc::YIELD_VALUE}},
        {&Interp::StepReturn, {Opc::RETURN_VALUE, Opc::RETURN_CONST}},
        {&Interp::StepWith, {Opc::BEFORE_WITH}},
        {&Interp::StepException, {Opc::RAISE_VARARGS, Opc::PUSH_EXC_INFO, Opc::CHECK_EXC_MATCH, Opc::POP_EXCEPT}},
    };
    for (const auto& [handler, ops] : families)
      for (Opc op : ops) t[static_cast<size_t>(op)] = handler;
    return t;
  }();
  return table[static_cast<size_t>(op)];
}

bool Interp::StepUnsupported(StepState& s) {
  Fail(BreakCategory::kUnsupportedBytecode, absl::StrFormat("%s is not captured yet", OpcName(s.in.op)),
       "this function runs eagerly; graph breaks will split it around such code");
  return false;
}

// Instructions with no effect on the simulated frame.
bool Interp::StepNop(StepState& s) {
  const Instr& in = s.in;
  switch (in.op) {
    case Opc::RESUME:
    case Opc::NOP:
    case Opc::PRECALL:
      break;
    case Opc::COPY_FREE_VARS:
      break;  // free-variable slots are filled when the frame is set up
    case Opc::TO_BOOL:
      // 3.13's bool() before a conditional jump or `not`, the only instructions that read its
      // result: they test the truth of the value themselves, as on 3.11, so it stays as it is
      // (a bridge that runs such a jump puts the TO_BOOL back).
      break;
    default:
      break;
  }
  return true;
}


// Pushes local `slot`. On 3.13 closures are built from LOAD_FAST of a cell's slot (3.11's
// LOAD_CLOSURE), which pushes the cell itself.
bool Interp::LoadLocal(Frame& f, int slot) {
  if (slot < 0 || static_cast<size_t>(slot) >= f.locals.size()) {
    Fail(BreakCategory::kInternal, "a local slot beyond the frame");
    return false;
  }
  const Value& v = f.locals[slot];
  // A free variable's slot of a frame pijit set up without its cells (kUndef at the root,
  // read through LoadDeref's closure source when inlined): LOAD_CLOSURE's failure on 3.11.
  if (v.kind == Value::kNull || (v.kind == Value::kUndef && slot >= f.code->co_nlocals)) {
    Fail(BreakCategory::kUnsupportedBytecode, "closure over a variable pijit does not track");
    return false;
  }
  if (v.kind == Value::kUndef) {
    Fail(BreakCategory::kPythonError, "local variable referenced before assignment");
    return false;
  }
  f.stack.push_back(v);
  return true;
}

// Pops into local `slot`. Storing a NULL (a comprehension restoring a local that was unbound)
// unbinds it.
bool Interp::StoreLocal(Frame& f, int slot) {
  Value a;
  if (!Pop(f, &a)) return false;
  if (slot < 0 || static_cast<size_t>(slot) >= f.locals.size()) {
    Fail(BreakCategory::kInternal, "a local slot beyond the frame");
    return false;
  }
  f.locals[slot] = a.kind == Value::kNull ? Value() : std::move(a);
  return true;
}

// Local, cell and constant slots.
bool Interp::StepLocal(StepState& s) {
  Frame& f = s.f;
  const Instr& in = s.in;
  Value a;
  switch (in.op) {
    case Opc::MAKE_CELL: {
      Value cell;
      cell.kind = Value::kCell;
      cell.cell = std::make_shared<Value>(f.locals[in.arg]);
      f.locals[in.arg] = std::move(cell);
      break;
    }
    case Opc::LOAD_FAST:
      if (!LoadLocal(f, in.arg)) return false;
      break;
    case Opc::LOAD_FAST_AND_CLEAR:  // 3.12's inlined comprehensions save a local this way
      f.stack.push_back(f.locals[in.arg].kind == Value::kUndef ? Value::Null() : f.locals[in.arg]);
      f.locals[in.arg] = Value();
      break;
    case Opc::STORE_FAST:
      if (!StoreLocal(f, in.arg)) return false;
      break;
    // 3.13's pairs: slots `arg >> 4` first, then `arg & 15`.
    case Opc::LOAD_FAST_LOAD_FAST:
      if (!LoadLocal(f, in.arg >> 4) || !LoadLocal(f, in.arg & 15)) return false;
      break;
    case Opc::STORE_FAST_LOAD_FAST:
      if (!StoreLocal(f, in.arg >> 4) || !LoadLocal(f, in.arg & 15)) return false;
      break;
    case Opc::STORE_FAST_STORE_FAST:
      if (!StoreLocal(f, in.arg >> 4) || !StoreLocal(f, in.arg & 15)) return false;
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
    default:
      break;
  }
  return true;
}


// Globals and builtins.
bool Interp::StepGlobal(StepState& s) {
  Frame& f = s.f;
  const Instr& in = s.in;
  Value a;
  switch (in.op) {
    case Opc::LOAD_GLOBAL: {
      PyObject* name = PyTuple_GET_ITEM(f.code->co_names, in.arg >> 1);
      Value v;
      if (!LoadGlobal(f, name, &v)) return false;
      PushLoaded(f, std::move(v), /*method=*/in.arg & 1);
      break;
    }
    case Opc::STORE_GLOBAL:
      if (!Pop(f, &a) || !StoreGlobal(f, PyTuple_GET_ITEM(f.code->co_names, in.arg), a)) return false;
      break;
    case Opc::DELETE_GLOBAL:
      if (!DeleteGlobal(f, PyTuple_GET_ITEM(f.code->co_names, in.arg))) return false;
      break;
    default:
      break;
  }
  return true;
}


// Attribute loads, stores and deletions.
bool Interp::StepAttr(StepState& s) {
  Frame& f = s.f;
  const Instr& in = s.in;
  Value a, b;
  switch (in.op) {
    case Opc::LOAD_ATTR:
    case Opc::LOAD_METHOD:
      if (!Pop(f, &a)) return false;
      if (!LoadAttr(f, a, PyTuple_GET_ITEM(f.code->co_names, in.arg), in.op == Opc::LOAD_METHOD))
        return false;
      break;
    case Opc::STORE_ATTR: {
      // owner.name = value, with value at TOS1 and owner at TOS.
      if (!Pop(f, &a) || !Pop(f, &b)) return false;
      PyObject* name = PyTuple_GET_ITEM(f.code->co_names, in.arg);
      Value ignored;
      bool handled = false;  // a property's setter written in Python runs inlined
      if (CallPropertyAccessor(f, a, name, &b, &ignored, &handled)) break;
      if (handled || !StoreAttr(a, name, b)) return false;
      break;
    }
    case Opc::DELETE_ATTR:
      if (!Pop(f, &a) || !DeleteAttr(a, PyTuple_GET_ITEM(f.code->co_names, in.arg))) return false;
      break;
    case Opc::LOAD_SUPER_ATTR:  // 3.12's super().name (3.11 calls super() first)
      Fail(BreakCategory::kUnsupportedCall, "super() attribute lookups run in Python",
           "the graph breaks there; the code around it is still captured");
      return false;
    default:
      break;
  }
  return true;
}


// Stack shuffles: NULL pushes, pops, copies and swaps.
bool Interp::StepStack(StepState& s) {
  Frame& f = s.f;
  const Instr& in = s.in;
  Value a;
  switch (in.op) {
    case Opc::PUSH_NULL:
      f.stack.push_back(Value::Null());
      break;
    case Opc::POP_TOP:
      if (!Pop(f, &a)) return false;
      break;
    case Opc::END_FOR:  // 3.12: the iterator and a finished generator's value; 3.13: the value
      for (int i = 0; i < kEndForPops; ++i)
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
    default:
      break;
  }
  return true;
}


// Iterators and for loops.
bool Interp::StepIterate(StepState& s) {
  Frame& f = s.f;
  const Instr& in = s.in;
  switch (in.op) {
    case Opc::GET_ITER:
      if (!StepGetIter(f)) return false;
      break;
    case Opc::FOR_ITER:
      if (!f.stack.empty() && f.stack.back().kind == Value::kTensorRange) return ForOverTensorRange(s, s.next - 1);
      if (!StepForIter(f, in.target, &s.next)) return false;
      break;
    default:
      break;
  }
  return true;
}


// Jumps, conditional or not.
bool Interp::StepJump(StepState& s) {
  Frame& f = s.f;
  const Instr& in = s.in;
  Value a;
  switch (in.op) {
    case Opc::JUMP_FORWARD:
    case Opc::JUMP_BACKWARD:
    case Opc::JUMP_BACKWARD_NO_INTERRUPT:
      s.next = in.target;
      break;
    case Opc::POP_JUMP_FORWARD_IF_TRUE:
    case Opc::POP_JUMP_BACKWARD_IF_TRUE:
    case Opc::POP_JUMP_FORWARD_IF_FALSE:
    case Opc::POP_JUMP_BACKWARD_IF_FALSE: {
      if (!Pop(f, &a)) return false;
      const bool on_true = in.op == Opc::POP_JUMP_FORWARD_IF_TRUE ||
                           in.op == Opc::POP_JUMP_BACKWARD_IF_TRUE;
      // Whole-graph mode compiles an `if` on a tensor into the graph (both ways, joined).
      if (a.kind == Value::kTensor && !allow_break_ &&
          (in.op == Opc::POP_JUMP_FORWARD_IF_TRUE || in.op == Opc::POP_JUMP_FORWARD_IF_FALSE)) {
        // ... and a while loop on a tensor into a loop node.
        WhileShape loop;
        if (FindWhileLoop(f, s.next - 1, &loop)) return LoopOnTensor(s, a, loop);
        return BranchOnTensor(s, a, on_true);
      }
      bool t;
      if (!Truth(a, &t)) return false;
      if (t == on_true) s.next = in.target;
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
      if (is_none == on_none) s.next = in.target;
      break;
    }
    case Opc::JUMP_IF_TRUE_OR_POP:
    case Opc::JUMP_IF_FALSE_OR_POP: {
      if (f.stack.empty()) return Pop(f, &a);
      bool t;
      if (!Truth(f.stack.back(), &t)) return false;
      if (t == (in.op == Opc::JUMP_IF_TRUE_OR_POP)) {
        s.next = in.target;
      } else {
        f.stack.pop_back();
      }
      break;
    }
    default:
      break;
  }
  return true;
}


// Item stores and deletions.
bool Interp::StepStoreSubscript(StepState& s) {
  Frame& f = s.f;
  const Instr& in = s.in;
  switch (in.op) {
    case Opc::DELETE_SUBSCR:
      if (!DeleteSubscr(f)) return false;  // handlers_effects.cc
      break;
    case Opc::STORE_SUBSCR:
      if (!StoreSubscr(f)) return false;  // handlers_effects.cc
      break;
    case Opc::STORE_SLICE: {  // 3.12: container[start:stop] = value, as STORE_SUBSCR of a slice
      ValueList bounds;
      Value slice;
      if (!PopN(f, 2, &bounds) || !MakeSlice(bounds, &slice)) return false;
      f.stack.push_back(std::move(slice));
      if (!StoreSubscr(f)) return false;
      break;
    }
    default:
      break;
  }
  return true;
}


// Generator starts and yields (generators consumed whole).
bool Interp::StepGenerator(StepState& s) {
  Frame& f = s.f;
  const Instr& in = s.in;
  Value a;
  switch (in.op) {
    case Opc::RETURN_GENERATOR:
      if (!f.yields) {
        Fail(BreakCategory::kInternal, "RETURN_GENERATOR outside a generator run");
        return false;
      }
      f.stack.push_back(Value::Const(Py_None));  // the value sent by the first s.next()
      break;
    case Opc::YIELD_VALUE:
      if (!f.yields) {
        Fail(BreakCategory::kUnsupportedBytecode, "yield outside a generator consumed whole");
        return false;
      }
      if (!Pop(f, &a)) return false;
      f.yields->push_back(std::move(a));
      f.stack.push_back(Value::Const(Py_None));  // s.next() sends None
      f.suspended = f.suspend_at_yield;
      break;
    default:
      break;
  }
  return true;
}


// The return.
bool Interp::StepReturn(StepState& s) {
  Frame& f = s.f;
  const Instr& in = s.in;
  switch (in.op) {
    case Opc::RETURN_VALUE:
      if (!Pop(f, s.result)) return false;
      s.returned = true;
      break;
    case Opc::RETURN_CONST:  // 3.12
      *s.result = Value::Const(PyTuple_GET_ITEM(f.code->co_consts, in.arg));
      s.returned = true;
      break;
    default:
      break;
  }
  return true;
}


// With blocks: BEFORE_WITH pushes the manager's bound __exit__ and the result of its
// __enter__(). Both are inlined when they are Python functions of its class; the bound
// __exit__ is a partial over the manager, which the block's normal exit calls with three
// Nones (the captured body raises no exception, so the exceptional exit is never taken).
bool Interp::StepWith(StepState& s) {
  Value manager;
  if (s.in.op != Opc::BEFORE_WITH) return true;
  if (!Pop(s.f, &manager)) return false;
  return EnterWith(s.f, manager);
}

bool Interp::EnterWith(Frame& f, const Value& manager) {
  static PyObject* const enter_name = PyUnicode_InternFromString("__enter__");
  static PyObject* const exit_name = PyUnicode_InternFromString("__exit__");
  PyTypeObject* type = nullptr;
  if (manager.kind == Value::kObject) {
    type = reinterpret_cast<PyTypeObject*>(manager.seq_type);
  } else if (manager.kind == Value::kConst) {
    type = Py_TYPE(manager.obj);
  }
  PyObject* enter = type ? _PyType_Lookup(type, enter_name) : nullptr;
  PyObject* exit = type ? _PyType_Lookup(type, exit_name) : nullptr;
  if (!enter || !exit || !PyFunction_Check(enter) || !PyFunction_Check(exit)) {
    Fail(BreakCategory::kUnsupportedBytecode,
         "entering a `with` block whose manager's __enter__/__exit__ are not Python functions",
         "the block's body is still captured between graph breaks");
    return false;
  }
  // type(manager).__enter__ / __exit__, guarded by identity through the manager's class.
  auto method = [&](PyObject* name, PyObject* fn, Value* out) {
    const int32_t source = manager.kind == Value::kObject
                               ? gp().AddSource(Source::kClassAttr, manager.type_source, -1, name)
                               : MethodSource(manager, name);
    if (source < 0) {
      Fail(BreakCategory::kUnsupportedBytecode,
           "entering a `with` block on a manager whose class cannot be guarded");
      return false;
    }
    if (!values_.FromSource(source, fn, out)) return false;
    UseConst(*out);
    return true;
  };
  Value enter_fn, exit_fn;
  if (!method(enter_name, enter, &enter_fn) || !method(exit_name, exit, &exit_fn)) return false;
  Value bound_exit;
  bound_exit.kind = Value::kPartial;
  bound_exit.cell = std::make_shared<Value>(std::move(exit_fn));
  bound_exit.items = std::make_shared<ValueList>(ValueList{manager});
  bound_exit.keys = std::make_shared<std::vector<PyObject*>>();
  f.stack.push_back(std::move(bound_exit));
  if (f.depth == 0) open_withs_.push_back(f.stack.size() - 1);
  Value entered;
  if (!Inline(f, reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(enter)), enter,
              enter_fn.source, nullptr, ValueList{manager}, {}, &entered)) {
    return false;
  }
  f.stack.push_back(std::move(entered));
  return true;
}

}  // namespace pijit::bytecode
