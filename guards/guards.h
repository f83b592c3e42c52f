// Guards: named checks over sources (where a value comes from in a frame), evaluated in
// C++ before a cached graph runs. A guard program is flat: sources resolve in order (a
// source may name an earlier one as its parent), then every guard checks one source.
#pragma once
#include <Python.h>

#include <string>
#include <vector>

#include "kernels/tensor.h"

namespace pijit::guards {

struct Source {
  enum Kind : uint8_t { kArg, kGlobal, kBuiltin, kAttr, kClosure };
  Kind kind;
  int32_t index = -1;       // argument / parent source / closure cell index
  PyObject* name = nullptr;  // owned: global, builtin or attribute name
};

struct Guard {
  enum Kind : uint8_t { kTensorMatch, kIdMatch, kEqualsMatch };
  Kind kind;
  int32_t source;
  PyTypeObject* type = nullptr;  // exact type (TENSOR_MATCH, EQUALS_MATCH); owned
  PyObject* value = nullptr;     // ID_MATCH: the object or a weakref to it; EQUALS_MATCH: the value; owned
  bool weak = false;             // ID_MATCH through a weak reference
  DType dtype = DType::kFloat32;
  Shape shape, strides;
};

// What sources are resolved against: the call's arguments and its function's namespaces.
struct Roots {
  PyObject* const* args;
  PyObject* globals;   // dict
  PyObject* builtins;  // dict
  PyObject* closure;   // tuple of cells or nullptr
};

// Attribute lookup that runs no user code: module dicts, instance dicts and plain class
// attributes; nullptr (no error set) for anything else. Borrowed reference.
PyObject* SafeGetAttr(PyObject* obj, PyObject* name);

class GuardProgram {
 public:
  GuardProgram() = default;
  GuardProgram(const GuardProgram&) = delete;
  GuardProgram& operator=(const GuardProgram&) = delete;
  ~GuardProgram();

  // Returns the index of an equal source, adding it if new. Takes a new reference to name.
  int32_t AddSource(Source::Kind kind, int32_t index, PyObject* name = nullptr);
  // Adds a guard that `obj` (the current value of `source`) keeps what the capture used.
  void GuardTensor(int32_t source, PyObject* obj, const Tensor& t);
  void GuardValue(int32_t source, PyObject* obj);  // EQUALS_MATCH for plain values, else ID_MATCH
  bool HasGuard(int32_t source) const;

  size_t num_sources() const { return sources_.size(); }
  // Resolves every source into `values` (borrowed) and checks every guard.
  bool Check(const Roots& roots, PyObject** values) const;
  std::string SourceText(int32_t source) const;
  std::string ToText() const;

 private:
  std::vector<Source> sources_;
  std::vector<Guard> guards_;
};

}  // namespace pijit::guards
