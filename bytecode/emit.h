// Small bytecode emitter shared by resume functions and graph-break bridges: two-byte code
// units, EXTENDED_ARG prefixes, zeroed inline CACHE entries. It takes version-neutral
// instructions (instructions.h) and writes the running interpreter's encoding of them.
#pragma once
#include <Python.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bytecode/instructions.h"

namespace pijit::bytecode {

class Emitter {
 public:
  // Appends `op arg` (with EXTENDED_ARG prefixes) followed by the op's CACHE entries, as
  // the running interpreter encodes it (nothing for 3.11's PRECALL on 3.12). False, and ok()
  // false from then on, when the interpreter has no such instruction.
  bool Emit(Opc op, int arg = 0);
  // What an exhausted FOR_ITER jumps to: on 3.12 the jump target must be an END_FOR (the
  // interpreter skips it; a generator's return lands on it), on 3.13 END_FOR and POP_TOP, on
  // 3.11 nothing.
  void EmitForIterExit();
  bool ok() const { return ok_; }
  int units() const { return static_cast<int>(code_.size() / 2); }
  const std::string& code() const { return code_; }
  // Appends another emitter's code (relative jumps inside it stay valid).
  void Append(const Emitter& other) {
    code_ += other.code_;
    ok_ = ok_ && other.ok_;
  }

 private:
  std::string code_;
  bool ok_ = true;
  int pending_kw_names_ = -1;  // 3.13: a KW_NAMES emitted, its CALL not yet
};

// A location table that gives every code unit of a `units`-long code the line `line`
// (relative to `firstlineno`), without columns (Objects/locations.md, code 13).
std::string LineTableForOneLine(int units, int line, int firstlineno);
// "No location" entries (code 15) covering `units` code units.
std::string NoLocation(int units);

// Makes every load of the local `slots` in `code` (the running interpreter's bytecode) check
// that the local is bound. 3.12's LOAD_FAST trusts the compiler's proof that it is, which a
// resume function that unbinds locals must not rely on; 3.11's LOAD_FAST always checks.
// 3.13's paired loads (LOAD_FAST_LOAD_FAST, STORE_FAST_LOAD_FAST) have no checking form and
// stay: the compiler pairs only loads it proved bound on every path from the function's
// entry, and a resume function's unbound locals are those the original frame has unbound at
// the break, so every path on from there binds them before such a load too.
absl::Status CheckLoadsOf(std::string* code, const std::vector<int>& slots);

// code.replace(**kwargs) for the fields given; takes ownership of the values in `fields`.
absl::StatusOr<PyObject*> ReplaceCode(PyCodeObject* code, PyObject* fields);

}  // namespace pijit::bytecode
