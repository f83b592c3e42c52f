#include "bytecode/bridge.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bytecode/emit.h"
#include "bytecode/version.h"

namespace pijit::bytecode {

std::string BridgeSpec::Key() const {
  // The line is part of the key: it is the bridge's whole line table (tracebacks, warnings).
  std::string k = absl::StrCat(static_cast<int>(op), ":", arg, ":", kwnames_index, ":", line, ":");
  for (bool n : stack_null) k.push_back(n ? 'N' : 'v');
  return k;
}

namespace {
// A jump on the value at the top of the stack, which it pops (or keeps, the OR_POP forms,
// when it jumps): falling through, it pushes nothing.
bool IsValueJump(Opc op) {
  switch (op) {
    case Opc::POP_JUMP_FORWARD_IF_TRUE:
    case Opc::POP_JUMP_BACKWARD_IF_TRUE:
    case Opc::POP_JUMP_FORWARD_IF_FALSE:
    case Opc::POP_JUMP_BACKWARD_IF_FALSE:
    case Opc::POP_JUMP_FORWARD_IF_NONE:
    case Opc::POP_JUMP_BACKWARD_IF_NONE:
    case Opc::POP_JUMP_FORWARD_IF_NOT_NONE:
    case Opc::POP_JUMP_BACKWARD_IF_NOT_NONE:
    case Opc::JUMP_IF_TRUE_OR_POP:
    case Opc::JUMP_IF_FALSE_OR_POP:
      return true;
    default:
      return false;
  }
}

bool IsConditionalJump(Opc op) { return IsValueJump(op) || op == Opc::FOR_ITER; }

bool TestsTruth(Opc op) {
  switch (op) {
    case Opc::POP_JUMP_FORWARD_IF_TRUE:
    case Opc::POP_JUMP_BACKWARD_IF_TRUE:
    case Opc::POP_JUMP_FORWARD_IF_FALSE:
    case Opc::POP_JUMP_BACKWARD_IF_FALSE:
      return true;
    default:
      return false;
  }
}

// The NULL-ness of an attribute loaded for a call with the NULL that says it is no bound
// method, in the version's order (kNullAfterCallable).
std::vector<bool> AttributeThenNull() {
  return kNullAfterCallable ? std::vector<bool>{false, true} : std::vector<bool>{true, false};
}

// An attribute on the stack becomes (NULL, attribute) before 3.13, (attribute, NULL) on it.
void EmitNullBesideAttribute(Emitter& e) {
  e.Emit(Opc::PUSH_NULL);
  if (!kNullAfterCallable) e.Emit(Opc::SWAP, 2);
}

// The bridge always jumps forward, to the second epilogue.
Opc ForwardJump(Opc op) {
  switch (op) {
    case Opc::POP_JUMP_BACKWARD_IF_TRUE: return Opc::POP_JUMP_FORWARD_IF_TRUE;
    case Opc::POP_JUMP_BACKWARD_IF_FALSE: return Opc::POP_JUMP_FORWARD_IF_FALSE;
    case Opc::POP_JUMP_BACKWARD_IF_NONE: return Opc::POP_JUMP_FORWARD_IF_NONE;
    case Opc::POP_JUMP_BACKWARD_IF_NOT_NONE: return Opc::POP_JUMP_FORWARD_IF_NOT_NONE;
    default: return op;
  }
}
}  // namespace

std::vector<std::vector<bool>> BridgeOutcomes(const BridgeSpec& s) {
  // The NULL-ness of the values the instruction pushes when it falls through; how many it pops
  // follows from its stack effect in the opcode table (bytecode/opcodes_pyXY.def).
  std::vector<bool> pushes;
  switch (s.op) {
    case Opc::STORE_GLOBAL:
    case Opc::DELETE_ATTR:
    case Opc::DELETE_GLOBAL:
    case Opc::STORE_ATTR:
    case Opc::DELETE_SUBSCR:
    case Opc::STORE_SLICE:
    case Opc::STORE_SUBSCR: break;
    case Opc::CALL:
    case Opc::LOAD_ATTR:
    case Opc::UNARY_NEGATIVE:
    case Opc::UNARY_POSITIVE:
    case Opc::UNARY_NOT:
    case Opc::UNARY_INVERT:
    case Opc::GET_ITER:
    case Opc::FOR_ITER:  // (iterator, next item)
    case Opc::BINARY_SUBSCR:
    case Opc::BINARY_SLICE:
    case Opc::BINARY_OP:
    case Opc::COMPARE_OP:
    case Opc::IS_OP:
    case Opc::CONTAINS_OP: pushes = {false}; break;
    case Opc::CALL_KW: pushes = {false}; break;
    // Run as LOAD_ATTR with a NULL beside the attribute, where the version puts it.
    case Opc::LOAD_METHOD: pushes = AttributeThenNull(); break;
    // 3.12's super().name: argument bit 0 asks for a method, run as an attribute load too.
    case Opc::LOAD_SUPER_ATTR: pushes = (s.arg & 1) ? AttributeThenNull()
                                                    : std::vector<bool>{false}; break;
    case Opc::BEFORE_WITH: pushes = {false, false}; break;  // (__exit__, __enter__())
    // `raise exc`: it never falls through; the one outcome (the stack without the exception)
    // only keeps the bridge's shape, its resume function is never reached.
    case Opc::RAISE_VARARGS:
      if (s.arg != 1) return {};
      break;
    default:
      if (IsValueJump(s.op)) break;
      return {};
  }
  int pops;
  int effect;
  if (s.op == Opc::RAISE_VARARGS) {
    pops = 1;
  } else if (s.op == Opc::LOAD_SUPER_ATTR) {
    pops = 3;  // the global `super`, the class and the instance
  } else if (s.op == Opc::CALL || s.op == Opc::CALL_KW) {
    // 3.11 splits a call's stack effect between PRECALL (-argc) and CALL (-1); the bridge
    // runs both (3.12's CALL alone): the callable or NULL, self or the callable (NULL on
    // 3.13), the arguments and, for 3.13's CALL_KW, the keyword names.
    pops = s.arg + 2 + (s.op == Opc::CALL_KW);
  } else if (OpcStackEffect(s.op, /*jump=*/false, &effect)) {
    pops = static_cast<int>(pushes.size()) - effect;
  } else {
    return {};
  }
  if (pops > static_cast<int>(s.stack_null.size())) return {};
  std::vector<bool> base(s.stack_null.begin(), s.stack_null.end() - pops);
  std::vector<std::vector<bool>> out;
  out.push_back(base);
  out[0].insert(out[0].end(), pushes.begin(), pushes.end());
  if (IsConditionalJump(s.op)) {
    std::vector<bool> taken = base;
    // JUMP_IF_*_OR_POP keeps the tested value when it jumps; an exhausted FOR_ITER pops the
    // iterator.
    if (s.op == Opc::JUMP_IF_TRUE_OR_POP || s.op == Opc::JUMP_IF_FALSE_OR_POP) taken.push_back(false);
    if (s.op == Opc::FOR_ITER) {
      if (taken.empty() || taken.back()) return {};
      taken.pop_back();
    }
    out.push_back(std::move(taken));
  }
  return out;
}

absl::StatusOr<PyObject*> MakeBridgeCode(PyCodeObject* code, const BridgeSpec& spec) {
  if (code->co_ncellvars > 0) return absl::UnimplementedError("bridging a function with cells");
  const auto outcomes = BridgeOutcomes(spec);
  if (outcomes.empty()) {
    return absl::UnimplementedError(absl::StrFormat("no bridge for %s", OpcName(spec.op)));
  }
  const int nlocals = code->co_nlocals;
  int nin = 0;
  for (bool n : spec.stack_null) nin += !n;
  const int resume_slot = nlocals + nin;
  const int tmp_slot = resume_slot + static_cast<int>(outcomes.size());
  size_t ntmp = 0;
  for (const auto& o : outcomes) ntmp = std::max(ntmp, o.size());

  Emitter e;
  if (code->co_nfreevars > 0) e.Emit(Opc::COPY_FREE_VARS, code->co_nfreevars);
  e.Emit(Opc::RESUME, 0);
  const int entry_units = e.units();
  int slot = nlocals;
  for (bool n : spec.stack_null) {
    if (n) e.Emit(Opc::PUSH_NULL);
    else e.Emit(Opc::LOAD_FAST, slot++);
  }
  int jump_unit = -1;
  switch (spec.op) {
    case Opc::CALL:
      if (spec.kwnames_index >= 0) e.Emit(Opc::KW_NAMES, spec.kwnames_index);
      e.Emit(Opc::PRECALL, spec.arg);
      e.Emit(Opc::CALL, spec.arg);
      break;
    case Opc::LOAD_METHOD:
      e.Emit(Opc::LOAD_ATTR, spec.arg);
      EmitNullBesideAttribute(e);
      break;
    case Opc::LOAD_SUPER_ATTR:  // attribute and NULL whether or not the attribute is a method
      e.Emit(Opc::LOAD_SUPER_ATTR, spec.arg & ~1);
      if (spec.arg & 1) EmitNullBesideAttribute(e);
      break;
    case Opc::UNARY_NOT:
      if (kJumpsTakeBool) e.Emit(Opc::TO_BOOL);
      e.Emit(spec.op, spec.arg);
      break;
    case Opc::RAISE_VARARGS:
      // The stack's values are on the value stack now: the slots that held them go, so that
      // the bridge's frame, which the exception's traceback keeps, does not keep the
      // exception in turn (a cycle, freed only by the garbage collector, that would keep the
      // callers' locals alive; `raise X(...)` in Python makes none).
      for (int i = nlocals; i < nlocals + nin; ++i) e.Emit(Opc::DELETE_FAST, i);
      e.Emit(spec.op, spec.arg);
      break;
    default:
      if (IsConditionalJump(spec.op)) {
        jump_unit = e.units();  // emitted once the first epilogue's length is known
      } else {
        e.Emit(spec.op, spec.arg);
      }
  }
  const int nlocals_total = tmp_slot + static_cast<int>(ntmp);
  // Epilogues are emitted separately so that the jump over the first one can be emitted with
  // its final argument (and EXTENDED_ARG prefixes when the function has many locals).
  std::vector<Emitter> epilogues(outcomes.size());
  for (size_t k = 0; k < outcomes.size(); ++k) {
    Emitter& ep = epilogues[k];
    const auto& stack = outcomes[k];
    // NULLs are stored into (and never loaded from) temporaries: the tuple holds values only.
    for (size_t i = stack.size(); i-- > 0;) ep.Emit(Opc::STORE_FAST, tmp_slot + static_cast<int>(i));
    ep.Emit(Opc::LOAD_FAST, resume_slot + static_cast<int>(k));
    int nitems = 1;
    for (size_t i = 0; i < stack.size(); ++i) {
      if (stack[i]) continue;
      ep.Emit(Opc::LOAD_FAST, tmp_slot + static_cast<int>(i));
      ++nitems;
    }
    ep.Emit(Opc::BUILD_TUPLE, nitems);
    ep.Emit(Opc::RETURN_VALUE);
  }
  // An exhausted FOR_ITER lands on the second epilogue, which then starts as the version
  // requires of a FOR_ITER target.
  if (spec.op == Opc::FOR_ITER && epilogues.size() == 2) {
    Emitter exit;
    exit.EmitForIterExit();
    exit.Append(epilogues[1]);
    epilogues[1] = std::move(exit);
  }
  if (jump_unit >= 0) {
    // 3.13's jumps on truth take a bool: the TO_BOOL the abstract interpreter left out.
    if (kJumpsTakeBool && TestsTruth(spec.op)) e.Emit(Opc::TO_BOOL);
    e.Emit(ForwardJump(spec.op), epilogues[0].units());
  }
  for (const Emitter& ep : epilogues) e.Append(ep);
  if (!e.ok()) {
    return absl::UnimplementedError(
        absl::StrFormat("no bridge for %s on this Python version", OpcName(spec.op)));
  }

  PyObject* varnames = PyTuple_New(nlocals_total);
  for (int i = 0; i < nlocals; ++i) {
    PyObject* n = PyTuple_GET_ITEM(code->co_localsplusnames, i);
    Py_INCREF(n);
    PyTuple_SET_ITEM(varnames, i, n);
  }
  for (int i = 0; i < nin; ++i) PyTuple_SET_ITEM(varnames, nlocals + i, PyUnicode_FromFormat("___stack%d", i));
  for (size_t k = 0; k < outcomes.size(); ++k)
    PyTuple_SET_ITEM(varnames, resume_slot + k, PyUnicode_FromFormat("___outcome%d", static_cast<int>(k)));
  for (size_t i = 0; i < ntmp; ++i)
    PyTuple_SET_ITEM(varnames, tmp_slot + i, PyUnicode_FromFormat("___tmp%d", static_cast<int>(i)));

  // The entry has no line, so that the first instruction after RESUME starts the break's line:
  // 3.13 reports a LINE event (sys.monitoring, coverage) only where the line changes.
  const std::string lines = NoLocation(entry_units) +
                            LineTableForOneLine(e.units() - entry_units, spec.line, code->co_firstlineno);
  PyObject* fields = PyDict_New();
  auto set = [&](const char* key, PyObject* value) {
    if (value) PyDict_SetItemString(fields, key, value);
    Py_XDECREF(value);
  };
  set("co_argcount", PyLong_FromLong(tmp_slot));
  set("co_posonlyargcount", PyLong_FromLong(0));
  set("co_kwonlyargcount", PyLong_FromLong(0));
  set("co_nlocals", PyLong_FromLong(nlocals_total));
  set("co_stacksize", PyLong_FromLong(static_cast<long>(spec.stack_null.size() + ntmp + nlocals + 4)));
  set("co_flags", PyLong_FromLong(code->co_flags & ~(CO_VARARGS | CO_VARKEYWORDS)));
  set("co_code", PyBytes_FromStringAndSize(e.code().data(), static_cast<Py_ssize_t>(e.code().size())));
  set("co_varnames", varnames);
  set("co_linetable", PyBytes_FromStringAndSize(lines.data(), static_cast<Py_ssize_t>(lines.size())));
  set("co_exceptiontable", PyBytes_FromStringAndSize("", 0));
  return ReplaceCode(code, fields);
}

}  // namespace pijit::bytecode
