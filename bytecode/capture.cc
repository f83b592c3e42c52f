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

PyObject* BreakReason::ToDict(bool with_text) const {
  PyObject* d = PyDict_New();
  if (!d) return nullptr;
  // Text from the program (file names, reprs in explanations) may not be valid UTF-8: keep
  // what decodes.
  auto put = [d](const char* key, PyObject* v) {
    if (v) PyDict_SetItemString(d, key, v);
    Py_XDECREF(v);
  };
  auto text = [](const std::string& t) {
    return PyUnicode_DecodeUTF8(t.data(), static_cast<Py_ssize_t>(t.size()), "replace");
  };
  put("category", PyUnicode_FromString(BreakCategoryName(category)));
  put("file", text(file));
  put("line", PyLong_FromLong(line));
  put("explanation", text(explanation));
  put("hint", text(hint));
  if (with_text) put("text", text(ToText()));
  PyErr_Clear();
  return d;
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
  // exception path (a Python error ends the capture). A `with` block's __enter__ and
  // __exit__ are inlined when they are Python functions (StepWith); otherwise the function
  // breaks at BEFORE_WITH (an exception an instruction raises at a break reaches its handler,
  // see runtime/continuation.cc).
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
  size_t pc = f.pc;
  while (pc < f.instrs.size() && !returned) {
    if (++steps_ > kMaxSteps) {
      Fail(BreakCategory::kTooLong, absl::StrFormat("capture stopped after %d bytecode steps", kMaxSteps),
           "a loop with many iterations is unrolled at capture; keep loops short");
      return false;
    }
    cur_offset_ = f.instrs[pc].offset;
    if (f.depth == 0) {
      while (!open_withs_.empty() && f.stack.size() <= open_withs_.back()) open_withs_.pop_back();
    }
    if (f.depth == 0 && allow_break_ && open_withs_.empty() && open_handlers_ == 0) {
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
      effects_.MarkRootInstruction();
      root_params_ = out_->param_sources.size();
    }
    if (!Step(f, pc, &returned, result)) return false;
    if (f.suspended) {  // a generator stepped item by item gave its next item
      f.pc = pc;
      cur_code_ = saved_code;
      cur_offset_ = saved_offset;
      return true;
    }
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
  StepState s{f, f.instrs[pc], pc + 1, false, result};
  if (!(this->*HandlerOf(s.in.op))(s)) return false;
  if (s.returned) *returned = true;
  pc = s.next;
  return true;
}

void Interp::Run() {
  // *args and **kwargs are one more parameter slot each, a tuple and a dict (their items are
  // sources of their own, the dict's keys guarded in order).
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
    if (!values_.FromSource(gp().AddSource(Source::kArg, -1, i), args_[i], &v)) return;
    f.locals[i] = v;
  }
  // Free variables of the root function are read through its closure cells when loaded.
  Value result;
  if (!RunFrame(f, &result)) {
    if (allow_break_ && !SuspendedGeneratorNeedsCleanup()) BuildBreak();
    return;
  }
  if (SuspendedGeneratorNeedsCleanup()) return;
  if (!MakeEffects(effects_.size()) || !MakeOutput(result, &out_->output)) return;
  g().SetOutputs(values_.outputs());
  out_->num_memo = values_.num_memo();
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
