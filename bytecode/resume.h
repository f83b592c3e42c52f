// Resume functions: the original code object with a prologue that restores the value stack
// and jumps to where a graph break left off. Generated from the original code (never from
// another resume function), so n breaks give n + 1 functions.
//
//   resume(<every local of the original, in slot order>, <each non-NULL stack value>)
//     [COPY_FREE_VARS n]  RESUME 0
//     DELETE_FAST <locals unbound at the break>
//     LOAD_FAST <stack value> | PUSH_NULL      (bottom of the stack first)
//     JUMP_FORWARD -> original instruction at `offset`
//     <original bytecode, unchanged but for closure slot numbers>
#pragma once
#include <Python.h>

#include <optional>

#include <vector>

#include "absl/status/statusor.h"

namespace pijit::bytecode {

struct ResumeSpec {
  int32_t offset = 0;             // code-unit offset in the original code to continue at
  std::vector<bool> stack_null;   // per stack slot, bottom first: true = a NULL
  std::vector<int> unbound;       // local slots that must be unbound at the resume point
  bool operator==(const ResumeSpec& o) const {
    return offset == o.offset && stack_null == o.stack_null && unbound == o.unbound;
  }
};

// A new code object (new reference) for resuming `code` as `spec` says.
absl::StatusOr<PyObject*> MakeResumeCode(PyCodeObject* code, const ResumeSpec& spec);

// Exception-table entries (code units), parsed from and encoded to CPython 3.11's format
// (Objects/exception_handling_notes.txt): varints of 6-bit chunks, most significant first.
struct ExceptionEntry {
  int32_t start, end, target, depth;
  bool lasti;
};
std::vector<ExceptionEntry> ParseExceptionTable(const uint8_t* data, size_t size);
std::string EncodeExceptionTable(const std::vector<ExceptionEntry>& entries);

// Where an exception raised by the instruction at `offset` (code units) of `code` goes: the
// innermost exception-table range around it (3.11 ranges do not overlap), as CPython's
// exception_unwind (Python/ceval.c) finds it; nullopt when no range covers it.
std::optional<ExceptionEntry> HandlerAt(PyCodeObject* code, int32_t offset);
// The resume function at handler `h` for an instruction whose value stack has the NULL slots
// `stack_null`: the stack down to the range's depth, the raising instruction's offset when the
// range asks for it, then the exception (as exception_unwind leaves them).
ResumeSpec HandlerResumeSpec(const ExceptionEntry& h, const std::vector<bool>& stack_null,
                             std::vector<int> unbound);

}  // namespace pijit::bytecode
