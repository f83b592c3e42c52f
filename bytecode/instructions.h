// Decoded bytecode instructions. The decoder folds EXTENDED_ARG and skips CACHE entries, so
// handlers see one instruction with its full argument.
//
// The opcodes are version-neutral: CPython 3.11's instructions with their 3.11 meaning
// (opcodes_py311.def), plus the instructions of later versions that have no 3.11 equivalent
// (PIJIT_LATER_OPCODES below). The decoder normalises each version's bytecode into this set
// (3.12's LOAD_ATTR with the method bit becomes LOAD_METHOD, its COMPARE_OP argument loses
// the branch mask, ...) and the emitter (emit.cc) encodes it back for the running version.
#pragma once
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace pijit::bytecode {

// Instructions of 3.12 and 3.13 that no 3.11 instruction (or sequence the decoder could give
// one offset) expresses: PIJIT_LATER_OPCODE(name, flags, stack effect), the effect as the
// version's dis.stack_effect gives it, PIJIT_EFFECT_VARIES where it depends on the argument
// or differs between versions (END_FOR: kEndForPops).
#define PIJIT_EFFECT_VARIES (-1000)
#define PIJIT_LATER_OPCODES(X)                                                       \
  X(RETURN_CONST, 9, 0)              /* LOAD_CONST + RETURN_VALUE */               \
  X(BINARY_SLICE, 0, -2)             /* container[start:stop] */                   \
  X(STORE_SLICE, 0, -4)              /* container[start:stop] = value */           \
  X(LOAD_FAST_AND_CLEAR, 33, 1)      /* push a local (NULL if unbound), unbind it */ \
  X(END_FOR, 0, PIJIT_EFFECT_VARIES) /* the end of a for loop; pops kEndForPops */ \
  X(END_SEND, 0, -1)                                                               \
  X(LOAD_SUPER_ATTR, 17, PIJIT_EFFECT_VARIES) /* argument as 3.12 encodes it */   \
  X(CALL_INTRINSIC_1, 1, 0)          /* the intrinsics 3.11 has no opcode for */   \
  X(CALL_INTRINSIC_2, 1, -1)                                                       \
  X(CLEANUP_THROW, 0, -1)                                                          \
  X(LOAD_FROM_DICT_OR_DEREF, 65, 0)                                                \
  X(LOAD_FROM_DICT_OR_GLOBALS, 17, 0)                                              \
  X(LOAD_LOCALS, 0, 1)                                                             \
  X(INTERPRETER_EXIT, 0, -1)                                                       \
  X(TO_BOOL, 0, 0)                   /* 3.13: bool(TOS) before a jump or `not` */  \
  X(CALL_KW, 1, PIJIT_EFFECT_VARIES) /* 3.13: CALL with the keyword names on TOS */ \
  X(LOAD_FAST_LOAD_FAST, 33, 2)      /* 3.13: two loads, slots arg >> 4, arg & 15 */ \
  X(STORE_FAST_LOAD_FAST, 33, 0)     /* 3.13: store arg >> 4, load arg & 15 */     \
  X(STORE_FAST_STORE_FAST, 33, -2)   /* 3.13: store arg >> 4, then arg & 15 */     \
  X(CONVERT_VALUE, 1, 0)             /* 3.13: str/repr/ascii of an f-string part */ \
  X(SET_FUNCTION_ATTRIBUTE, 1, -1)   /* 3.13: defaults, closure, ... after MAKE_FUNCTION */ \
  X(EXIT_INIT_CHECK, 0, -1)                                                        \
  X(ENTER_EXECUTOR, 1, 0)                                                          \
  X(RESERVED, 0, 0)

// 3.12's CALL_INTRINSIC_1 arguments for what 3.11 has opcodes for.
constexpr int kIntrinsicUnaryPositive = 5, kIntrinsicListToTuple = 6;
// Flags of neutral arguments: COMPARE_OP's operator (0-5) with kCompareToBool when the result
// is converted to bool (3.13 folds TO_BOOL into the comparison); FORMAT_VALUE's conversion
// (0-3) with kFormatHasSpec when a format spec is on the stack.
constexpr int kCompareToBool = 16, kFormatHasSpec = 4;

enum class Opc : uint16_t {
#define PIJIT_OPCODE(name, num, caches, flags, ...) name,
#include "bytecode/opcodes_py311.def"
#undef PIJIT_OPCODE
#define PIJIT_LATER_OPCODE(name, flags, effect) name,
  PIJIT_LATER_OPCODES(PIJIT_LATER_OPCODE)
#undef PIJIT_LATER_OPCODE
  kInvalid,
};

enum OpFlag : uint8_t {
  kHasArg = 1, kJumpRel = 2, kJumpAbs = 4, kUsesConst = 8, kUsesName = 16, kUsesLocal = 32,
  kUsesFree = 64, kBackward = 128,
};

const char* OpcName(Opc op);
// The neutral opcode named `name`, kInvalid for none.
Opc OpcByName(const char* name);
uint8_t OpcFlags(Opc op);
// The net stack effect of the version-neutral `op` (jump: when it jumps), as 3.11's
// dis.stack_effect gives it (3.12's for the later instructions); false where it depends on
// the argument.
bool OpcStackEffect(Opc op, bool jump, int* effect);

struct Instr {
  Opc op;
  int32_t arg;
  int32_t offset;       // code-unit offset of the instruction (of its first EXTENDED_ARG)
  int32_t next_offset;  // code-unit offset of the next instruction, after CACHE entries
  int32_t target = -1;  // jump target as an instruction index, -1 when not a jump
};

// Decodes the running interpreter's bytecode (co_code bytes) into version-neutral
// instructions. Offsets stay the interpreter's own, so resume offsets and exception-table
// ranges need no translation.
absl::StatusOr<std::vector<Instr>> Decode(const uint8_t* code, size_t nbytes);

}  // namespace pijit::bytecode
