// Decoding of CPython 3.11 bytecode into Instr. Per-version facts (numbers, inline caches,
// stack effects) come from the generated opcode table. The instructions keep 3.11's opcodes,
// so the step handlers (steps_*.cc, handlers_*.cc) and the bridge name 3.11 opcodes too;
// normalising 3.12 and 3.13 into the same set is the next step (tables for both are
// generated: opcodes_py312.def, opcodes_py313.def).
#include <Python.h>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "bytecode/instructions.h"

#if PY_VERSION_HEX < 0x030B0000 || PY_VERSION_HEX >= 0x030C0000
#error "pijit's bytecode decoder supports CPython 3.11 only so far"
#endif

namespace pijit::bytecode {
namespace {
constexpr int PIJIT_EFFECT_VARIES = -1000;  // the tables' marker: depends on the argument
struct OpcInfo {
  const char* name;
  int number;
  int caches;
  uint8_t flags;
  int effect, effect_jump;
};
constexpr OpcInfo kInfo[] = {
#define PIJIT_OPCODE(name, num, caches, flags, effect, effect_jump) \
  {#name, num, caches, flags, effect, effect_jump},
#include "bytecode/opcodes_py311.def"
#undef PIJIT_OPCODE
};
constexpr int kNumOpc = sizeof(kInfo) / sizeof(kInfo[0]);

struct NumberTable {
  Opc by_number[256];
  NumberTable() {
    for (auto& o : by_number) o = Opc::kInvalid;
    for (int i = 0; i < kNumOpc; ++i) by_number[kInfo[i].number] = static_cast<Opc>(i);
  }
};
const NumberTable& Numbers() {
  static const NumberTable t;
  return t;
}
}  // namespace

const char* OpcName(Opc op) {
  return op == Opc::kInvalid ? "<invalid>" : kInfo[static_cast<int>(op)].name;
}
uint8_t OpcFlags(Opc op) { return op == Opc::kInvalid ? 0 : kInfo[static_cast<int>(op)].flags; }

bool OpcStackEffect(Opc op, bool jump, int* effect) {
  if (op == Opc::kInvalid) return false;
  const OpcInfo& info = kInfo[static_cast<int>(op)];
  *effect = jump ? info.effect_jump : info.effect;
  return *effect != PIJIT_EFFECT_VARIES;
}

absl::StatusOr<std::vector<Instr>> Decode(const uint8_t* code, size_t nbytes) {
  std::vector<Instr> out;
  absl::flat_hash_map<int32_t, int32_t> index_of_offset;
  const int32_t nunits = static_cast<int32_t>(nbytes / 2);
  int32_t ext = 0, start = -1;
  for (int32_t u = 0; u < nunits;) {
    const int number = code[2 * u];
    const int32_t arg = code[2 * u + 1] | ext;
    const Opc op = Numbers().by_number[number];
    if (op == Opc::kInvalid) {
      return absl::InvalidArgumentError(absl::StrFormat("unknown opcode %d at offset %d", number, 2 * u));
    }
    if (start < 0) start = u;
    const int32_t next = u + 1 + kInfo[static_cast<int>(op)].caches;
    if (op == Opc::EXTENDED_ARG) {
      ext = arg << 8;
      u = next;
      continue;
    }
    ext = 0;
    if (op != Opc::CACHE) {
      index_of_offset[start] = static_cast<int32_t>(out.size());
      out.push_back({op, (OpcFlags(op) & kHasArg) ? arg : 0, start, next});
    }
    start = -1;
    u = next;
  }
  for (Instr& in : out) {
    const uint8_t f = OpcFlags(in.op);
    if (!(f & (kJumpRel | kJumpAbs))) continue;
    int32_t to = (f & kJumpAbs) ? in.arg : (f & kBackward) ? in.next_offset - in.arg
                                                           : in.next_offset + in.arg;
    auto it = index_of_offset.find(to);
    if (it == index_of_offset.end()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s at offset %d jumps to %d, which is not an instruction",
                          OpcName(in.op), 2 * in.offset, 2 * to));
    }
    in.target = it->second;
  }
  return out;
}

}  // namespace pijit::bytecode
