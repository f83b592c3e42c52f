// Decoded bytecode instructions. The decoder folds EXTENDED_ARG and skips CACHE entries, so
// handlers see one instruction with its full argument. The opcodes are CPython 3.11's
// (opcodes_py311.def); other versions are to be normalised into them (decoder.cc).
#pragma once
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace pijit::bytecode {

enum class Opc : uint16_t {
#define PIJIT_OPCODE(name, num, caches, flags, ...) name,
#include "bytecode/opcodes_py311.def"
#undef PIJIT_OPCODE
  kInvalid,
};

enum OpFlag : uint8_t {
  kHasArg = 1, kJumpRel = 2, kJumpAbs = 4, kUsesConst = 8, kUsesName = 16, kUsesLocal = 32,
  kUsesFree = 64, kBackward = 128,
};

const char* OpcName(Opc op);
uint8_t OpcFlags(Opc op);
// The net stack effect of `op` (jump: when it jumps), as the running interpreter's
// dis.stack_effect gives it; false where it depends on the argument.
bool OpcStackEffect(Opc op, bool jump, int* effect);

struct Instr {
  Opc op;
  int32_t arg;
  int32_t offset;       // code-unit offset of the instruction (of its first EXTENDED_ARG)
  int32_t next_offset;  // code-unit offset of the next instruction, after CACHE entries
  int32_t target = -1;  // jump target as an instruction index, -1 when not a jump
};

// Decodes the running interpreter's bytecode (co_code bytes).
absl::StatusOr<std::vector<Instr>> Decode(const uint8_t* code, size_t nbytes);

}  // namespace pijit::bytecode
