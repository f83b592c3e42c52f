#include "bytecode/resume.h"

#include <string>

#include "absl/strings/str_format.h"
#include "bytecode/emit.h"
#include "bytecode/instructions.h"

namespace pijit::bytecode {
namespace {

void WriteVarint(std::string* out, uint32_t v, bool start) {
  // Six bits per byte, most significant chunk first; 0x40 marks "more follows".
  int shift = 0;
  while ((v >> shift) >= 64) shift += 6;
  bool first = true;
  for (; shift >= 0; shift -= 6) {
    uint8_t b = (v >> shift) & 63;
    if (shift > 0) b |= 64;
    if (first && start) b |= 128;
    first = false;
    out->push_back(static_cast<char>(b));
  }
}

uint32_t ReadVarint(const uint8_t* data, size_t size, size_t* pos) {
  uint8_t b = data[(*pos)++];
  uint32_t v = b & 63;
  while ((b & 64) && *pos < size) {
    b = data[(*pos)++];
    v = (v << 6) | (b & 63);
  }
  return v;
}

}  // namespace

std::vector<ExceptionEntry> ParseExceptionTable(const uint8_t* data, size_t size) {
  std::vector<ExceptionEntry> out;
  size_t pos = 0;
  while (pos < size) {
    ExceptionEntry e;
    e.start = static_cast<int32_t>(ReadVarint(data, size, &pos));
    e.end = e.start + static_cast<int32_t>(ReadVarint(data, size, &pos));
    e.target = static_cast<int32_t>(ReadVarint(data, size, &pos));
    uint32_t dl = ReadVarint(data, size, &pos);
    e.depth = static_cast<int32_t>(dl >> 1);
    e.lasti = dl & 1;
    out.push_back(e);
  }
  return out;
}

std::string EncodeExceptionTable(const std::vector<ExceptionEntry>& entries) {
  std::string out;
  for (const ExceptionEntry& e : entries) {
    WriteVarint(&out, e.start, true);
    WriteVarint(&out, e.end - e.start, false);
    WriteVarint(&out, e.target, false);
    WriteVarint(&out, (e.depth << 1) | (e.lasti ? 1 : 0), false);
  }
  return out;
}

absl::StatusOr<PyObject*> MakeResumeCode(PyCodeObject* code, const ResumeSpec& spec) {
  if (code->co_ncellvars > 0) {
    return absl::UnimplementedError("resuming a function that defines closures");
  }
  {
    // The offset must start an instruction of `code` (in code units).
    PyObject* bytes = PyCode_GetCode(code);
    if (!bytes) return absl::InternalError("cannot read bytecode");
    auto decoded = Decode(reinterpret_cast<const uint8_t*>(PyBytes_AS_STRING(bytes)),
                          static_cast<size_t>(PyBytes_GET_SIZE(bytes)));
    Py_DECREF(bytes);
    if (!decoded.ok()) return decoded.status();
    bool boundary = false;
    for (const Instr& in : *decoded) boundary |= in.offset == spec.offset;
    if (!boundary) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "resume offset %d (code units) is not the start of an instruction", spec.offset));
    }
  }
  const int nlocals = code->co_nlocals;
  int nvalues = 0;
  for (bool null : spec.stack_null) nvalues += !null;
  const int nfree = code->co_nfreevars;

  // Prologue. JUMP_FORWARD is relative to the instruction after it, which is the end of the
  // prologue, i.e. offset 0 of the original code: its argument is simply `spec.offset`.
  Emitter e;
  if (nfree > 0) e.Emit(Opc::COPY_FREE_VARS, nfree);
  e.Emit(Opc::RESUME, 0);
  for (int slot : spec.unbound) e.Emit(Opc::DELETE_FAST, slot);
  int value_slot = nlocals;
  for (bool null : spec.stack_null) {
    if (null) e.Emit(Opc::PUSH_NULL);
    else e.Emit(Opc::LOAD_FAST, value_slot++);
  }
  e.Emit(Opc::JUMP_FORWARD, spec.offset);
  if (!e.ok()) return absl::InternalError("resume prologue: an instruction this Python lacks");
  const std::string& prologue = e.code();
  const int prologue_units = static_cast<int>(prologue.size() / 2);

  // The original bytecode; closure slots move up by the number of stack values added to
  // the locals.
  PyObject* orig = PyCode_GetCode(code);
  if (!orig) return absl::InternalError("cannot read bytecode");
  std::string body(PyBytes_AS_STRING(orig), PyBytes_GET_SIZE(orig));
  Py_DECREF(orig);
  if (absl::Status st = CheckLoadsOf(&body, spec.unbound); !st.ok()) return st;
  if (nvalues > 0 && nfree > 0) {
    auto decoded = Decode(reinterpret_cast<const uint8_t*>(body.data()), body.size());
    if (!decoded.ok()) return decoded.status();
    for (const Instr& in : *decoded) {
      if (!(OpcFlags(in.op) & kUsesFree) || in.arg < nlocals) continue;
      if (in.arg + nvalues > 0xFF || in.next_offset - in.offset != 1) {
        return absl::UnimplementedError("closure slot numbers do not fit one byte");
      }
      body[2 * in.offset + 1] = static_cast<char>(in.arg + nvalues);
    }
  }

  // Names: every original local is a parameter; stack values follow.
  PyObject* varnames = PyTuple_New(nlocals + nvalues);
  for (int i = 0; i < nlocals; ++i) {
    PyObject* n = PyTuple_GET_ITEM(code->co_localsplusnames, i);
    Py_INCREF(n);
    PyTuple_SET_ITEM(varnames, i, n);
  }
  for (int i = 0; i < nvalues; ++i)
    PyTuple_SET_ITEM(varnames, nlocals + i, PyUnicode_FromFormat("___stack%d", i));

  // Line table: "no location" entries (code 15) over the prologue leave the line state for
  // the original entries that follow (Objects/locations.md).
  std::string linetable = NoLocation(prologue_units);
  linetable.append(PyBytes_AS_STRING(code->co_linetable), PyBytes_GET_SIZE(code->co_linetable));

  // Exception table: every range and target moves by the prologue's length.
  auto entries = ParseExceptionTable(
      reinterpret_cast<const uint8_t*>(PyBytes_AS_STRING(code->co_exceptiontable)),
      PyBytes_GET_SIZE(code->co_exceptiontable));
  for (ExceptionEntry& e : entries) {
    e.start += prologue_units;
    e.end += prologue_units;
    e.target += prologue_units;
  }
  const std::string table = EncodeExceptionTable(entries);

  int stack_depth = static_cast<int>(spec.stack_null.size());
  int flags = code->co_flags & ~(CO_VARARGS | CO_VARKEYWORDS);
  PyObject* qualname = PyUnicode_FromFormat("%U.<resume@%d>", code->co_qualname, spec.offset * 2);
  PyObject* kwargs = PyDict_New();
  auto set = [&](const char* key, PyObject* value) {  // steals `value`
    if (value) PyDict_SetItemString(kwargs, key, value);
    Py_XDECREF(value);
  };
  auto bytes = [](const std::string& b) {
    return PyBytes_FromStringAndSize(b.data(), static_cast<Py_ssize_t>(b.size()));
  };
  set("co_argcount", PyLong_FromLong(nlocals + nvalues));
  set("co_posonlyargcount", PyLong_FromLong(0));
  set("co_kwonlyargcount", PyLong_FromLong(0));
  set("co_nlocals", PyLong_FromLong(nlocals + nvalues));
  set("co_stacksize", PyLong_FromLong(code->co_stacksize > stack_depth ? code->co_stacksize : stack_depth));
  set("co_flags", PyLong_FromLong(flags));
  set("co_code", bytes(prologue + body));
  set("co_varnames", varnames);
  set("co_linetable", bytes(linetable));
  set("co_exceptiontable", bytes(table));
  set("co_qualname", qualname);
  return ReplaceCode(code, kwargs);
}

std::optional<ExceptionEntry> HandlerAt(PyCodeObject* code, int32_t offset) {
  const auto table = ParseExceptionTable(
      reinterpret_cast<const uint8_t*>(PyBytes_AS_STRING(code->co_exceptiontable)),
      PyBytes_GET_SIZE(code->co_exceptiontable));
  for (const ExceptionEntry& x : table)
    if (offset >= x.start && offset < x.end) return x;
  return std::nullopt;
}

ResumeSpec HandlerResumeSpec(const ExceptionEntry& h, const std::vector<bool>& stack_null,
                             std::vector<int> unbound) {
  ResumeSpec rs;
  rs.offset = h.target;
  rs.stack_null.assign(stack_null.begin(), stack_null.begin() + h.depth);
  if (h.lasti) rs.stack_null.push_back(false);
  rs.stack_null.push_back(false);  // the exception
  rs.unbound = std::move(unbound);
  return rs;
}

}  // namespace pijit::bytecode
