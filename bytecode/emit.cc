#include "bytecode/emit.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_format.h"
#include "bytecode/version.h"

namespace pijit::bytecode {
namespace {

// The running interpreter's opcode table: number and inline cache entries by name.
struct VersionRow {
  const char* name;
  int number, caches;
};
constexpr VersionRow kVersionRows[] = {
#define PIJIT_OPCODE(name, num, ncache, flags, ...) {#name, num, ncache},
#if PY_VERSION_HEX >= 0x030D0000
#include "bytecode/opcodes_py313.def"
#elif PY_VERSION_HEX >= 0x030C0000
#include "bytecode/opcodes_py312.def"
#else
#include "bytecode/opcodes_py311.def"
#endif
#undef PIJIT_OPCODE
};

const VersionRow* RowNamed(const char* name) {
  for (const VersionRow& r : kVersionRows)
    if (std::strcmp(r.name, name) == 0) return &r;
  return nullptr;
}

// One instruction as the running interpreter spells it.
struct Encoded {
  const char* name;
  int arg;
};

#if PY_VERSION_HEX >= 0x030C0000
// COMPARE_OP's low four bits from 3.12 on: which orderings make the comparison true
// (CPython's specialised comparisons read them), for <, <=, ==, !=, >, >=.
constexpr int kCompareMask[] = {2, 2 | 8, 8, 1 | 2 | 4, 4, 4 | 8};
#endif

// The neutral `op arg` as zero, one or more instructions of the running interpreter.
// `kw_names` carries a KW_NAMES over to the CALL after it (3.13 has CALL_KW instead).
std::vector<Encoded> EncodeForVersion(Opc op, int arg, int* kw_names) {
#if PY_VERSION_HEX >= 0x030D0000
  switch (op) {
    case Opc::KW_NAMES:  // the names go on the stack, CALL becomes CALL_KW
      *kw_names = arg;
      return {{"LOAD_CONST", arg}};
    case Opc::CALL:
      if (*kw_names >= 0) {
        *kw_names = -1;
        return {{"CALL_KW", arg}};
      }
      break;
    case Opc::FORMAT_VALUE:  // a conversion (arg & 3) is a CONVERT_VALUE of its own
      if (arg & 3) return {{"CONVERT_VALUE", arg & 3}, {(arg & kFormatHasSpec) ? "FORMAT_WITH_SPEC" : "FORMAT_SIMPLE", 0}};
      return {{(arg & kFormatHasSpec) ? "FORMAT_WITH_SPEC" : "FORMAT_SIMPLE", 0}};
    default: break;
  }
#else
  (void)kw_names;
#endif
#if PY_VERSION_HEX >= 0x030C0000
  switch (op) {
    case Opc::PRECALL: return {};  // 3.12's CALL does both
    case Opc::LOAD_ATTR: return {{"LOAD_ATTR", arg << 1}};
    case Opc::LOAD_METHOD: return {{"LOAD_ATTR", (arg << 1) | 1}};
    case Opc::COMPARE_OP: {
      const int op_index = arg & ~kCompareToBool;
      return {{"COMPARE_OP", (op_index << kCompareOpShift) | (arg & kCompareToBool) |
                                 (op_index >= 0 && op_index < 6 ? kCompareMask[op_index] : 0)}};
    }
    case Opc::UNARY_POSITIVE: return {{"CALL_INTRINSIC_1", kIntrinsicUnaryPositive}};
    case Opc::LIST_TO_TUPLE: return {{"CALL_INTRINSIC_1", kIntrinsicListToTuple}};
    // 3.12's conditional jumps are forward only and named without the direction.
    case Opc::POP_JUMP_FORWARD_IF_TRUE: return {{"POP_JUMP_IF_TRUE", arg}};
    case Opc::POP_JUMP_FORWARD_IF_FALSE: return {{"POP_JUMP_IF_FALSE", arg}};
    case Opc::POP_JUMP_FORWARD_IF_NONE: return {{"POP_JUMP_IF_NONE", arg}};
    case Opc::POP_JUMP_FORWARD_IF_NOT_NONE: return {{"POP_JUMP_IF_NOT_NONE", arg}};
    default: break;
  }
#endif
  return {{OpcName(op), arg}};
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

bool Emitter::Emit(Opc op, int arg) {
  const int ext = RowNamed("EXTENDED_ARG")->number;
  for (const Encoded& in : EncodeForVersion(op, arg, &pending_kw_names_)) {
    const VersionRow* row = RowNamed(in.name);
    if (row == nullptr) {
      ok_ = false;  // not an instruction of this interpreter: the code object is refused
      continue;
    }
    const int number = row->number;
    for (int shift = 24; shift >= 8; shift -= 8) {
      if (in.arg >> shift) {
        code_.push_back(static_cast<char>(ext));
        code_.push_back(static_cast<char>((in.arg >> shift) & 0xFF));
      }
    }
    code_.push_back(static_cast<char>(number));
    code_.push_back(static_cast<char>(in.arg & 0xFF));
    for (int i = 0; i < row->caches; ++i) code_.append(2, '\0');
  }
  return ok_;
}

void Emitter::EmitForIterExit() {
#if PY_VERSION_HEX >= 0x030C0000
  Emit(Opc::END_FOR);
  if (kForIterExitLength > 1) Emit(Opc::POP_TOP);
#endif
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

absl::Status CheckLoadsOf(std::string* code, const std::vector<int>& slots) {
#if PY_VERSION_HEX >= 0x030C0000
  if (slots.empty()) return absl::OkStatus();
  auto decoded = Decode(reinterpret_cast<const uint8_t*>(code->data()), code->size());
  if (!decoded.ok()) return decoded.status();
  const int load = RowNamed("LOAD_FAST")->number, checked = RowNamed("LOAD_FAST_CHECK")->number;
  for (const Instr& in : *decoded) {
    if (in.op != Opc::LOAD_FAST) continue;
    if (std::find(slots.begin(), slots.end(), in.arg) == slots.end()) continue;
    // Neither form has inline caches: the opcode is the instruction's last code unit.
    char& opcode = (*code)[2 * (in.next_offset - 1)];
    if (static_cast<uint8_t>(opcode) == load) opcode = static_cast<char>(checked);
  }
#else
  (void)code;
  (void)slots;
#endif
  return absl::OkStatus();
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
