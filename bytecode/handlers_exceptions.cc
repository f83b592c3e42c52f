// Exceptions raised and caught in one captured frame: `raise E(...)` inside a `try` whose
// handler is in the same function jumps to that handler as CPython's exception_unwind does
// (the stack cut to the range's depth, the raising offset when the range asks for it, then
// the exception), and the handler's PUSH_EXC_INFO, CHECK_EXC_MATCH and POP_EXCEPT are
// followed. The exception is one made in the trace (IsMadeException), so what the handler
// reads of it (its class, `args`) is known.
//
// sys.exc_info() is not modelled: the handler's saved "previous exception" is a placeholder,
// and anything that would read the live exception state (a bare `raise`, RERAISE when no
// clause matches, `finally` on the exceptional path) is not captured. In the root frame the
// resume state stays at the raise until POP_EXCEPT (open_handlers_), so such a handler breaks
// the graph at the raise and Python raises and handles the exception itself.
#include "absl/strings/str_cat.h"
#include "bytecode/interp.h"
#include "bytecode/resume.h"

namespace pijit::bytecode {

bool Interp::StepException(StepState& s) {
  Frame& f = s.f;
  const Instr& in = s.in;
  Value a, b;
  switch (in.op) {
    case Opc::RAISE_VARARGS:
      if (in.arg != 1) {
        Fail(BreakCategory::kUnsupportedBytecode,
             in.arg == 0 ? "a bare `raise` re-raises the exception being handled"
                         : "`raise ... from ...` is not captured",
             "Python raises it at a graph break");
        return false;
      }
      if (!Pop(f, &a)) return false;
      return RaiseToHandler(s, std::move(a));
    case Opc::PUSH_EXC_INFO:  // (exc) -> (previous exception, exc)
      if (!Pop(f, &a)) return false;
      f.stack.push_back(Value::Const(Py_None));
      f.stack.push_back(std::move(a));
      return true;
    case Opc::CHECK_EXC_MATCH: {  // (exc, class) -> (exc, isinstance(exc, class))
      if (!Pop(f, &b)) return false;
      Value* exc = StackAt(f, 1);
      if (!exc) return false;
      PyObject* cls = AsPyObject(b);  // a class, or a tuple of them (maybe built here)
      if (!IsMadeException(*exc) || !cls || !(PyType_Check(cls) || PyTuple_Check(cls))) {
        Fail(BreakCategory::kUnsupportedBytecode, "an `except` clause whose class is unknown at capture time");
        return false;
      }
      UseConst(b);
      const int match = PyObject_IsSubclass(exc->seq_type, cls);
      if (match < 0) {
        PyErr_Clear();
        Fail(BreakCategory::kPythonError, "an `except` clause that is not an exception class",
             "the function runs eagerly and raises the TypeError there");
        return false;
      }
      f.stack.push_back(Value::Const(match ? Py_True : Py_False));
      return true;
    }
    case Opc::POP_EXCEPT:  // the handler is done: drop the saved previous exception
      if (!Pop(f, &a)) return false;
      if (f.depth == 0 && open_handlers_ > 0) --open_handlers_;
      return true;
    default:
      return true;
  }
}

bool Interp::RaiseToHandler(StepState& s, Value exc) {
  Frame& f = s.f;
  if (exc.kind == Value::kConst && exc.source >= 0 && PyExceptionClass_Check(exc.obj)) {
    // `raise E` raises E(): made here like any exception of the trace.
    Value made;
    bool handled = false;
    if (!MakeException(exc, {}, {}, &made, &handled)) {
      if (!handled) Fail(BreakCategory::kUnsupportedBytecode, "raising an exception class with its own constructor");
      return false;
    }
    exc = std::move(made);
  }
  if (!IsMadeException(exc)) {
    Fail(BreakCategory::kUnsupportedBytecode, "raising an exception not made in captured code",
         "Python raises it at a graph break");
    return false;
  }
  const std::optional<ExceptionEntry> h = HandlerAt(f.code, s.in.offset);
  size_t target = f.instrs.size();
  for (size_t i = 0; h && i < f.instrs.size(); ++i) {
    if (f.instrs[i].offset == h->target) target = i;
  }
  if (!h || target == f.instrs.size() || static_cast<size_t>(h->depth) > f.stack.size()) {
    // A break, not a Python error of the call: the graph computes what comes before the
    // raise, and Python raises the rebuilt exception from the user's line.
    Fail(BreakCategory::kUnsupportedBytecode,
         absl::StrCat("raise ", reinterpret_cast<PyTypeObject*>(exc.seq_type)->tp_name,
                      " leaves the function"),
         "the graph ends here and Python raises it");
    return false;
  }
  *exc.cell = Value::Const(Py_True);  // raised: see MakeOutput
  f.stack.resize(static_cast<size_t>(h->depth));
  if (h->lasti) f.stack.push_back(Value::Const(values_.Keep(PyLong_FromLong(s.in.offset))));
  f.stack.push_back(std::move(exc));
  if (f.depth == 0) ++open_handlers_;
  s.next = target;
  return true;
}

}  // namespace pijit::bytecode
