// Small bytecode emitter shared by resume functions and graph-break bridges (3.11 format:
// two-byte code units, EXTENDED_ARG prefixes, zeroed inline CACHE entries).
#pragma once
#include <Python.h>

#include <string>

#include "absl/status/statusor.h"
#include "bytecode/instructions.h"

namespace pijit::bytecode {

class Emitter {
 public:
  // Appends `op arg` (with EXTENDED_ARG prefixes) followed by the op's CACHE entries.
  void Emit(Opc op, int arg = 0);
  int units() const { return static_cast<int>(code_.size() / 2); }
  const std::string& code() const { return code_; }
  // Appends another emitter's code (relative jumps inside it stay valid).
  void Append(const Emitter& other) { code_ += other.code_; }

 private:
  std::string code_;
};

// A location table that gives every code unit of a `units`-long code the line `line`
// (relative to `firstlineno`), without columns (Objects/locations.md, code 13).
std::string LineTableForOneLine(int units, int line, int firstlineno);
// "No location" entries (code 15) covering `units` code units.
std::string NoLocation(int units);

// code.replace(**kwargs) for the fields given; takes ownership of the values in `fields`.
absl::StatusOr<PyObject*> ReplaceCode(PyCodeObject* code, PyObject* fields);

}  // namespace pijit::bytecode
