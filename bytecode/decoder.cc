// Decoding of the running interpreter's bytecode into version-neutral instructions
// (instructions.h). Per-version facts (numbers, inline caches, jump kinds) come from the
// generated opcode table of the version (opcodes_pyXY.def); what an instruction means in the
// neutral set comes from 3.11's table plus the later instructions' list. The per-version
// rewriting of an instruction lives in one function (Normalise312, which 3.13 shares with
// 3.12 and extends).
#include <Python.h>

#include <cstring>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "bytecode/instructions.h"
#include "bytecode/version.h"

#if PY_VERSION_HEX < 0x030B0000 || PY_VERSION_HEX >= 0x030E0000
#error "pijit's bytecode decoder supports CPython 3.11, 3.12 and 3.13"
#endif

namespace pijit::bytecode {
namespace {
static_assert(PIJIT_EFFECT_VARIES == -1000, "the tables' marker for argument-dependent effects");

// One row of an opcode table.
struct OpcInfo {
  const char* name;
  int number;
  int caches;
  uint8_t flags;
  int effect, effect_jump;
};

// The neutral instructions' facts, indexed by Opc.
constexpr OpcInfo kNeutral[] = {
#define PIJIT_OPCODE(name, num, caches, flags, effect, effect_jump) \
  {#name, num, caches, flags, effect, effect_jump},
#include "bytecode/opcodes_py311.def"
#undef PIJIT_OPCODE
#define PIJIT_LATER_OPCODE(name, flags, effect) {#name, -1, 0, flags, effect, effect},
    PIJIT_LATER_OPCODES(PIJIT_LATER_OPCODE)
#undef PIJIT_LATER_OPCODE
};
constexpr int kNumNeutral = sizeof(kNeutral) / sizeof(kNeutral[0]);
static_assert(kNumNeutral == static_cast<int>(Opc::kInvalid), "one row per neutral opcode");

// The running interpreter's table.
constexpr OpcInfo kVersion[] = {
#define PIJIT_OPCODE(name, num, caches, flags, effect, effect_jump) \
  {#name, num, caches, flags, effect, effect_jump},
#if PY_VERSION_HEX >= 0x030D0000
#include "bytecode/opcodes_py313.def"
#elif PY_VERSION_HEX >= 0x030C0000
#include "bytecode/opcodes_py312.def"
#else
#include "bytecode/opcodes_py311.def"
#endif
#undef PIJIT_OPCODE
};
constexpr int kNumVersion = sizeof(kVersion) / sizeof(kVersion[0]);

// The running version's opcode numbers: their table row and the neutral opcode of the same
// name (kInvalid where the neutral set names it differently: the normaliser maps those).
struct NumberTable {
  const OpcInfo* info[256] = {};
  Opc same_name[256];
  NumberTable() {
    for (auto& o : same_name) o = Opc::kInvalid;
    for (int i = 0; i < kNumVersion; ++i) {
      info[kVersion[i].number] = &kVersion[i];
      same_name[kVersion[i].number] = OpcByName(kVersion[i].name);
    }
  }
};
const NumberTable& Numbers() {
  static const NumberTable t;
  return t;
}

// An instruction as the interpreter encodes it, before normalising.
struct RawInstr {
  const OpcInfo* info;
  int32_t arg, offset, next_offset;
};

#if PY_VERSION_HEX >= 0x030C0000
// 3.12 and 3.13: the neutral (3.11) instruction and argument of `raw`; kInvalid when the
// opcode has no neutral counterpart at all.
Opc Normalise312(const RawInstr& raw, int32_t* arg) {
  const std::string_view name = raw.info->name;
  *arg = raw.arg;
  if (name == "LOAD_ATTR") {  // the low bit asks for a method load (3.11's LOAD_METHOD)
    *arg = raw.arg >> 1;
    return (raw.arg & 1) ? Opc::LOAD_METHOD : Opc::LOAD_ATTR;
  }
  if (name == "COMPARE_OP") {  // the low four bits are a mask for the specialised forms
    // 3.13 moves the operator up one more bit, for the flag that asks for a bool result.
    *arg = raw.arg >> kCompareOpShift;
#if PY_VERSION_HEX >= 0x030D0000
    if (raw.arg & kCompareToBool) *arg |= kCompareToBool;
#endif
    return Opc::COMPARE_OP;
  }
  if (name == "LOAD_FAST_CHECK") return Opc::LOAD_FAST;  // the handler checks boundness anyway
  if (name == "POP_JUMP_IF_TRUE") return Opc::POP_JUMP_FORWARD_IF_TRUE;
  if (name == "POP_JUMP_IF_FALSE") return Opc::POP_JUMP_FORWARD_IF_FALSE;
  if (name == "POP_JUMP_IF_NONE") return Opc::POP_JUMP_FORWARD_IF_NONE;
  if (name == "POP_JUMP_IF_NOT_NONE") return Opc::POP_JUMP_FORWARD_IF_NOT_NONE;
  if (name == "CALL_INTRINSIC_1") {  // the two intrinsics that were opcodes in 3.11
    if (raw.arg == kIntrinsicUnaryPositive || raw.arg == kIntrinsicListToTuple) *arg = 0;
    if (raw.arg == kIntrinsicUnaryPositive) return Opc::UNARY_POSITIVE;
    if (raw.arg == kIntrinsicListToTuple) return Opc::LIST_TO_TUPLE;
    return Opc::CALL_INTRINSIC_1;
  }
  // 3.13's f-strings: CONVERT_VALUE (a neutral instruction of its own), then the formatting
  // without (3.11's FORMAT_VALUE 0) or with (FORMAT_VALUE 4) a format spec.
  if (name == "FORMAT_SIMPLE" || name == "FORMAT_WITH_SPEC") {
    *arg = name == "FORMAT_SIMPLE" ? 0 : kFormatHasSpec;
    return Opc::FORMAT_VALUE;
  }
  return Numbers().same_name[raw.info->number];
}
#endif

Opc Normalise(const RawInstr& raw, int32_t* arg) {
#if PY_VERSION_HEX >= 0x030C0000
  return Normalise312(raw, arg);
#else
  *arg = raw.arg;
  return Numbers().same_name[raw.info->number];
#endif
}

// Where a jump of the interpreter goes, in the neutral meaning. From 3.12 on an exhausted
// FOR_ITER jumps over the END_FOR at its target (and 3.13 over the POP_TOP after it as well);
// 3.11's FOR_ITER jumps past the loop.
int32_t NeutralJumpTarget(const std::vector<Instr>& out, Opc op, int32_t index) {
  if (op == Opc::FOR_ITER && out[index].op == Opc::END_FOR &&
      static_cast<size_t>(index + kForIterExitLength) < out.size()) {
    return index + kForIterExitLength;
  }
  return index;
}

// The interpreter's instructions, EXTENDED_ARG folded in and CACHE entries skipped.
absl::StatusOr<std::vector<RawInstr>> ReadRaw(const uint8_t* code, size_t nbytes) {
  std::vector<RawInstr> out;
  const int32_t nunits = static_cast<int32_t>(nbytes / 2);
  int32_t ext = 0, start = -1;
  for (int32_t u = 0; u < nunits;) {
    const int number = code[2 * u];
    const int32_t arg = code[2 * u + 1] | ext;
    const OpcInfo* info = Numbers().info[number];
    if (info == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrFormat("unknown opcode %d at offset %d", number, 2 * u));
    }
    if (start < 0) start = u;
    const int32_t next = u + 1 + info->caches;
    u = next;
    if (std::strcmp(info->name, "EXTENDED_ARG") == 0) {
      ext = arg << 8;
      continue;
    }
    ext = 0;
    constexpr int kCache = 0;  // an inline cache entry outside an instruction's count
    if (number != kCache) out.push_back({info, (info->flags & kHasArg) ? arg : 0, start, next});
    start = -1;
  }
  return out;
}

}  // namespace

Opc OpcByName(const char* name) {
  for (int i = 0; i < kNumNeutral; ++i)
    if (std::strcmp(kNeutral[i].name, name) == 0) return static_cast<Opc>(i);
  return Opc::kInvalid;
}

const char* OpcName(Opc op) {
  return op == Opc::kInvalid ? "<invalid>" : kNeutral[static_cast<int>(op)].name;
}
uint8_t OpcFlags(Opc op) { return op == Opc::kInvalid ? 0 : kNeutral[static_cast<int>(op)].flags; }

bool OpcStackEffect(Opc op, bool jump, int* effect) {
  if (op == Opc::kInvalid) return false;
  const OpcInfo& info = kNeutral[static_cast<int>(op)];
  *effect = jump ? info.effect_jump : info.effect;
  return *effect != PIJIT_EFFECT_VARIES;
}

absl::StatusOr<std::vector<Instr>> Decode(const uint8_t* code, size_t nbytes) {
  auto raw = ReadRaw(code, nbytes);
  if (!raw.ok()) return raw.status();
  std::vector<Instr> out;
  out.reserve(raw->size());
  absl::flat_hash_map<int32_t, int32_t> index_of_offset;
  for (const RawInstr& r : *raw) {
    int32_t arg = 0;
    const Opc op = Normalise(r, &arg);
    if (op == Opc::kInvalid) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s at offset %d has no version-neutral form", r.info->name,
                          2 * r.offset));
    }
    index_of_offset[r.offset] = static_cast<int32_t>(out.size());
    out.push_back({op, arg, r.offset, r.next_offset});
  }
  // Jump targets, from the interpreter's own jump kinds and raw arguments.
  for (size_t i = 0; i < out.size(); ++i) {
    const RawInstr& r = (*raw)[i];
    const uint8_t f = r.info->flags;
    if (!(f & (kJumpRel | kJumpAbs))) continue;
    const int32_t to = (f & kJumpAbs) ? r.arg : (f & kBackward) ? r.next_offset - r.arg
                                                                 : r.next_offset + r.arg;
    auto it = index_of_offset.find(to);
    if (it == index_of_offset.end()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s at offset %d jumps to %d, which is not an instruction",
                          r.info->name, 2 * r.offset, 2 * to));
    }
    out[i].target = NeutralJumpTarget(out, out[i].op, it->second);
  }
  return out;
}

}  // namespace pijit::bytecode
