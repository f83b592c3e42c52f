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
  enum Kind : uint8_t {
    kArg,           // args[index]
    kGlobal,        // the called function's globals[name]
    kBuiltin,       // builtins[name], while globals has no such name
    kAttr,          // plain attribute `name` of source `parent`
    kClosure,       // contents of the called function's closure cell `index`
    kFuncGlobal,    // globals[name] of the function at source `parent`
    kFuncBuiltin,   // builtins[name] of the function at `parent`, while its globals lack it
    kFuncClosure,   // contents of closure cell `index` of the function at `parent`
    kFuncDefaults,  // __defaults__ of the function at `parent` (None when absent)
    kTypeAttr,      // `name` looked up on the type of `parent` (the MRO, no instance dict)
    kItem,          // item `index` of the tuple or list at `parent`
    kDictItem,      // the value for key `name` of the dict at `parent`
    kFuncKwDefaults,  // __kwdefaults__ of the function at `parent` (None when absent)
    kJitWrapped,    // the Python function that the pijit.jit callable at `parent` compiles
    kClassAttr,     // `name` looked up in the MRO of the class at `parent` (no metaclass)
    kDescrFunc,     // the function of the staticmethod or classmethod at `parent`, or the
                    // getter of the property there (its setter with `index` kPropertySetter)
    kTypeOf,        // type(parent)
    kPartialPart,   // of the functools.partial at `parent`: index 0 func, 1 args, 2 keywords
    kTensorClassAttr,  // `name` looked up on pijit's Tensor class (no parent)
  };
  Kind kind;
  int32_t parent = -1;       // parent source, for the kinds that have one
  int32_t index = -1;        // argument / closure cell / item index
  PyObject* name = nullptr;  // owned: global, builtin or attribute name, or dict key
};

struct Guard {
  enum Kind : uint8_t {
    kTensorMatch,  // exact type, dtype, shape and strides
    kIdMatch,      // the same object (weakly held where possible)
    kEqualsMatch,  // exact type and == value (None, bool, int, float, str, tuples of them)
    kTypeMatch,    // exact type, and for tuples and lists the length (in `length`)
    kSameAs,       // the same object as source `other` (two paths to one tensor)
    kDictKeys,     // an exact dict whose keys are `value` (a tuple), in that order
    kIntBound,     // an exact int with |value| < 2^`length`
    kAttrMissing,  // no attribute `value` (a str) on the object, its class or by __getattr__
    kArrayMatch,   // an array of exact type `type` whose item format, shape and bytes are
                   // `value` (a bytes object, see ArrayContents): a constant array read by
                   // value (iterated), which may be a new object with the same contents
  };
  Kind kind;
  int32_t source;
  PyTypeObject* type = nullptr;  // exact type (TENSOR_MATCH, EQUALS_MATCH); owned
  PyObject* value = nullptr;     // ID_MATCH: the object or a weakref to it; EQUALS_MATCH: the
                                 // value; DICT_KEYS: the keys; owned
  bool weak = false;             // ID_MATCH through a weak reference
  DType dtype = DType::kFloat32;
  Shape shape, strides;
  Py_ssize_t length = -1;  // kTypeMatch of a tuple, list or dict
  int32_t other = -1;      // kSameAs
  uint64_t dynamic = 0;    // kTensorMatch: bit d set = dimension d may take any size
  bool contiguous = true;  // kTensorMatch with dynamic dims: contiguity instead of strides
  Device device = Device::kCPU;  // kTensorMatch
};

// The Python function a pijit.jit callable compiles (borrowed), or nullptr for any other
// object: set by the bindings, which own that type (kJitWrapped sources read through it).
extern PyObject* (*g_jit_wrapped_function)(PyObject* obj);
// The function a staticmethod or classmethod wraps, or a property's getter (borrowed), or
// nullptr for anything else.
PyObject* DescriptorFunction(PyObject* descr, bool setter = false);
// Source::kDescrFunc's index for a property's setter.
inline constexpr int32_t kPropertySetter = 1;

// A tensor dimension that varies between calls: (source description, dimension).
using DynamicDim = std::pair<std::string, int>;

// What sources are resolved against: the call's arguments and its function's namespaces.
struct Roots {
  PyObject* const* args;
  PyObject* globals;   // dict
  PyObject* builtins;  // dict
  PyObject* closure;   // tuple of cells or nullptr
};

// Python bool, int or float (exact types: subclasses may define their own operators).
inline bool IsPythonNumber(PyObject* o) {
  return PyBool_Check(o) || PyLong_CheckExact(o) || PyFloat_CheckExact(o);
}
// None, numbers, str and tuples of these: plain data whose comparison, hashing, formatting
// and truth run no user code. Such values are guarded by equality (EQUALS_MATCH).
bool IsPlainValue(PyObject* o);
// An array's item format, shape and bytes as one bytes object (nullptr, no error set, when
// it exposes no C-contiguous buffer or is larger than kMaxArrayGuardBytes): what ARRAY_MATCH
// compares. Arrays are compared by contents because they are mutable: the same object may
// hold other values on the next call.
inline constexpr Py_ssize_t kMaxArrayGuardBytes = 1 << 16;
PyObject* ArrayContents(PyObject* array);
// Whether `obj` has no attribute `name`, decided without running user code: its type looks
// attributes up generically, defines no __getattr__ and has no `name`, and its instance dict
// lacks it. False when that cannot be told so.
bool AttrMissing(PyObject* obj, PyObject* name);

// Attribute lookup that runs no user code: module dicts, instance dicts and plain class
// attributes; nullptr (no error set) for anything else. Borrowed reference.
PyObject* SafeGetAttr(PyObject* obj, PyObject* name);
// functools.partial (the C type), or nullptr where functools cannot be imported.
PyTypeObject* PartialType();
// Part `index` (0 func, 1 args, 2 keywords) of an exact functools.partial, borrowed from it;
// nullptr for anything else.
PyObject* PartialPart(PyObject* partial, int index);

// The value of source `s` (its parent's value `parent`, for the kinds that have one), or
// nullptr (no error set) when it does not resolve. Borrowed; runs no user code.
PyObject* ResolveSource(const Source& s, PyObject* parent, const Roots& roots);
// Whether guard `g` passes for the value `v` of its source (`other`: SAME_AS's other source).
bool GuardPasses(const Guard& g, PyObject* v, PyObject* other);
// Whether two guards check the same thing, and two sources (parents aside) name the same
// value; both compare only the guard's or source's own fields.
bool SameGuard(const Guard& a, const Guard& b);
bool SameSource(const Source& a, const Source& b);

class GuardProgram {
 public:
  GuardProgram() = default;
  GuardProgram(const GuardProgram&) = delete;
  GuardProgram& operator=(const GuardProgram&) = delete;
  ~GuardProgram();

  // Returns the index of an equal source, adding it if new. Takes a new reference to name.
  int32_t AddSource(Source::Kind kind, int32_t parent, int32_t index, PyObject* name = nullptr);
  // Adds a guard that `obj` (the current value of `source`) keeps what the capture used.
  // `dynamic` marks dimensions whose size the guard does not check.
  void GuardTensor(int32_t source, PyObject* obj, const Tensor& t, uint64_t dynamic = 0);
  void GuardValue(int32_t source, PyObject* obj);  // EQUALS_MATCH for plain values, else ID_MATCH
  // ARRAY_MATCH on a C-contiguous buffer of at most kMaxArrayGuardBytes; false (nothing
  // guarded, no error set) for anything else.
  bool GuardArrayContents(int32_t source, PyObject* obj);
  void GuardType(int32_t source, PyObject* obj);   // TYPE_MATCH (with length for tuples/lists/dicts)
  // DICT_KEYS: the dict at `source` keeps its keys (str and int) in their order.
  void GuardDictKeys(int32_t source, PyObject* dict);
  // SAME_AS: `source` and `other` (an earlier source) hold the same object.
  void GuardSameAs(int32_t source, int32_t other);
  // INT_BOUND: `source` holds an exact int of magnitude below 2^bits.
  void GuardIntBound(int32_t source, int bits);
  // ATTR_MISSING: the object at `source` (of a type TYPE_MATCH pins) has no attribute `name`.
  void GuardAttrMissing(int32_t source, PyObject* name);
  bool HasGuard(int32_t source) const;

  size_t num_sources() const { return sources_.size(); }
  const std::vector<Source>& sources() const { return sources_; }
  const std::vector<Guard>& guards() const { return guards_; }
  // Resolves every source into `values` (borrowed) and checks every guard.
  bool Check(const Roots& roots, PyObject** values) const;
  // True when the only failing guards are TENSOR_MATCHes whose tensors differ in dimension
  // sizes alone (same type, dtype and rank); appends those dimensions to `dims`.
  bool ShapeOnlyMismatch(const Roots& roots, PyObject** values, std::vector<DynamicDim>* dims) const;
  // True when the only failing guards are EQUALS_MATCHes of an int or a float that is now
  // another number of the same type; appends their sources' SourceText to `sources`.
  bool NumberOnlyMismatch(const Roots& roots, PyObject** values,
                          std::vector<std::string>* sources) const;
  bool has_dynamic() const;
  // Stops checking tensor sizes and layout (dtype, rank and type stay checked).
  void RelaxTensorSizes();
  // An ID_MATCH whose object has died: the entry can never match again.
  bool HasDeadReferent() const;
  std::string SourceText(int32_t source) const;
  std::string GuardText(const Guard& g) const;  // one guard, as ToText prints it
  std::string ToText() const;
  // The first guard that rejects the call of `roots` (its text) and what the value is now;
  // false when every guard passes (guard_text.cc).
  bool FirstFailure(const Roots& roots, std::string* guard, std::string* now) const;

 private:
  // Resolves every source into `values` (borrowed); false when one does not resolve.
  bool ResolveSources(const Roots& roots, PyObject** values) const;

  std::vector<Source> sources_;
  std::vector<Guard> guards_;
};

}  // namespace pijit::guards
