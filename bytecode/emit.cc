#include "bytecode/emit.h"

#include "absl/strings/str_format.h"

namespace pijit::bytecode {
namespace {

struct OpcodeFacts {
  int number[static_cast<int>(Opc::kInvalid) + 1];
  int caches[static_cast<int>(Opc::kInvalid) + 1];
  OpcodeFacts() {
    int i = 0;
#define PIJIT_OPCODE(name, num, ncache, flags, ...) number[i] = num, caches[i] = ncache, ++i;
#include "bytecode/opcodes_py311.def"
#undef PIJIT_OPCODE
  }
};
const OpcodeFacts& Facts() {
  static const OpcodeFacts f;
  return f;
}

// Signed varint of the location table: zig-zag sign bit, 6-bit chunks, least significant
// first, 0x40 = more follows.
void WriteSignedVarint(std::string* out, int v) {
  unsigned u = v < 0 ? ((static_cast<unsigned>(-v) << 1) | 1) : (static_cast<unsigned>(v) << 1);
  while (u >= 64) {
    out->push_back(static_cast<char>((u & 63) | 64));
    u >>= 6;
  }
  out->push_back(static_cast<char>(u));
}

}  // namespace

void Emitter::Emit(Opc op, int arg) {
  const int number = Facts().number[static_cast<int>(op)];
  const int ext = Facts().number[static_cast<int>(Opc::EXTENDED_ARG)];
  for (int shift = 24; shift >= 8; shift -= 8) {
    if (arg >> shift) {
      code_.push_back(static_cast<char>(ext));
      code_.push_back(static_cast<char>((arg >> shift) & 0xFF));
    }
  }
  code_.push_back(static_cast<char>(number));
  code_.push_back(static_cast<char>(arg & 0xFF));
  for (int i = 0; i < Facts().caches[static_cast<int>(op)]; ++i) code_.append(2, '\0');
}

std::string LineTableForOneLine(int units, int line, int firstlineno) {
  std::string out;
  int delta = line - firstlineno;
  for (int left = units; left > 0; left -= 8) {
    const int n = left < 8 ? left : 8;
    out.push_back(static_cast<char>(0x80 | (13 << 3) | (n - 1)));
    WriteSignedVarint(&out, delta);
    delta = 0;
  }
  return out;
}

std::string NoLocation(int units) {
  std::string out;
  for (int left = units; left > 0; left -= 8) {
    const int n = left < 8 ? left : 8;
    out.push_back(static_cast<char>(0x80 | (15 << 3) | (n - 1)));
  }
  return out;
}

absl::StatusOr<PyObject*> ReplaceCode(PyCodeObject* code, PyObject* fields) {
  PyObject* replace = PyObject_GetAttrString(reinterpret_cast<PyObject*>(code), "replace");
  PyObject* args = PyTuple_New(0);
  PyObject* result = replace && args ? PyObject_Call(replace, args, fields) : nullptr;
  Py_XDECREF(args);
  Py_XDECREF(replace);
  Py_DECREF(fields);
  if (result) return result;
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyObject* s = value ? PyObject_Str(value) : nullptr;
  std::string msg = s ? PyUnicode_AsUTF8(s) : "unknown error";
  Py_XDECREF(s);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  PyErr_Clear();
  return absl::InternalError(absl::StrFormat("code.replace failed: %s", msg));
}

}  // namespace pijit::bytecode
