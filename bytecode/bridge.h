// Bridges: a small code object that runs one breaking instruction in a Python frame of the
// original function (same name, line, closure and first argument, so tracebacks, warnings
// and zero-argument super() behave), then returns which way it went and the value stack.
// The caller (runtime/continuation.cc) continues in the resume function of that outcome;
// returning instead of calling it keeps a chain of breaks (a loop) at one Python frame.
//
//   bridge(<every local of the original>, <each non-NULL stack value>, <tag per outcome>)
//     [COPY_FREE_VARS n]  RESUME 0
//     LOAD_FAST <stack value> | PUSH_NULL            (bottom first)
//     <the instruction>                               (jumps go to outcome 1's epilogue)
//     outcome 0: STORE_FAST <stack>  LOAD_FAST tag0  LOAD_FAST <non-NULL stack values>
//                BUILD_TUPLE  RETURN_VALUE
//     outcome 1: the same with tag1
#pragma once
#include <Python.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bytecode/instructions.h"

namespace pijit::bytecode {

struct BridgeSpec {
  Opc op = Opc::NOP;
  int32_t arg = 0;
  int32_t line = 0;                // the instruction's source line
  int32_t kwnames_index = -1;      // CALL: co_consts index of the pending KW_NAMES tuple
  std::vector<bool> stack_null;    // the stack before the instruction, bottom first
  std::string Key() const;
};

// The value stack after the instruction for each outcome (fall through; jump taken),
// bottom first, true = NULL. Empty when pijit cannot run `spec.op` at a break.
std::vector<std::vector<bool>> BridgeOutcomes(const BridgeSpec& spec);

// A new code object (new reference).
absl::StatusOr<PyObject*> MakeBridgeCode(PyCodeObject* code, const BridgeSpec& spec);

}  // namespace pijit::bytecode
