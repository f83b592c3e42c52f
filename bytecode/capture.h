// Capture: abstract interpretation of a function's bytecode over the values of one call.
// Tensor values become graph nodes; Python values are tracked as constants guarded at their
// source. The result is a graph plus the guards under which it is valid, or the reason the
// function has to run eagerly (with the guards under which that verdict holds).
#pragma once
#include <Python.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bytecode/instructions.h"
#include "graph/graph.h"
#include "guards/guards.h"

namespace pijit::bytecode {

// What kind of thing stopped capture. The name (BreakCategoryName) is what explain(),
// get_code_extra() and the messages show.
//   X(enumerator, name, fatal): fatal categories are errors of the call itself (bad input, a
//   Python exception), which running the code eagerly reports as Python would.
#define PIJIT_BREAK_CATEGORIES(X)                 \
  X(kDataDependent, "data_dependent", false)      \
  X(kInlineDepth, "inline_depth", false)          \
  X(kInternal, "internal", false)                 \
  X(kInvalidInput, "invalid_input", true)         \
  X(kPythonError, "python_error", true)           \
  X(kSideEffect, "side_effect", false)            \
  X(kTensorMutation, "tensor_mutation", false)    \
  X(kTooLong, "too_long", false)                  \
  X(kUnsupportedAttribute, "unsupported_attribute", false) \
  X(kUnsupportedBytecode, "unsupported_bytecode", false)   \
  X(kUnsupportedCall, "unsupported_call", false)           \
  X(kUnsupportedFunction, "unsupported_function", false)   \
  X(kUnsupportedOperator, "unsupported_operator", false)   \
  X(kUnsupportedOp, "unsupported_op", false)               \
  X(kUnsupportedOutput, "unsupported_output", false)

enum class BreakCategory : uint8_t {
#define PIJIT_BREAK_ENUM(e, name, fatal) e,
  PIJIT_BREAK_CATEGORIES(PIJIT_BREAK_ENUM)
#undef PIJIT_BREAK_ENUM
};
const char* BreakCategoryName(BreakCategory c);
// The call itself is wrong (invalid input, a Python error): the eager run raises it.
bool BreakCategoryIsCallError(BreakCategory c);

// Why a function (or, later, part of one) is not captured: a record, not just a message.
struct BreakReason {
  BreakCategory category = BreakCategory::kInternal;
  std::string file;
  int line = 0;
  std::string explanation;
  std::string hint;
  std::string ToText() const;
  // As a new dict {category, file, line, explanation, hint} (and `text`, ToText's, with
  // `with_text`): explain(), get_code_extra() and the structured trace report it this way.
  PyObject* ToDict(bool with_text) const;
};

// How to build the Python return value from the graph's outputs and the call's inputs.
struct OutputSpec {
  enum Kind : uint8_t {
    kGraphOutput,  // graph output `index`
    kSource,       // the current value of guard source `index`
    kConstant,     // `constant`
    kTuple,        // a new tuple of `items`
    kList,         // a new list of `items`
    kNull,         // a NULL on the value stack (graph breaks only)
    kUnbound,      // an unbound local (graph breaks only)
    kIterator,     // an iterator over a new tuple of `items` (graph breaks only)
    kMethod,       // Tensor's method named by `constant` (graph breaks only)
    kRef,          // the object built for the spec whose `memo` is `index` (aliasing)
    kDict,         // a new dict: keys in `constant` (a tuple), values in `items`
    kBoundMethod,  // attribute `constant` of the object built by items[0] (graph breaks only)
    kDictIterator,  // iter(dict at guard source `index`) advanced by `constant` (an int) items
                    // (graph breaks only: a loop over an input dict, continued in Python)
    kGraphNumber,   // graph output `index` (0-d) as a Python number of type `constant`
    kObject,        // an instance of the class items[0] (object.__new__) with attributes
                    // `constant` (a tuple of names) set to items[1:]
    kListIterator,  // iter(the list built by items[0]) advanced by `constant` (an int) items
                    // (graph breaks only: a loop over a list made during capture)
  };
  Kind kind = kConstant;
  int32_t index = -1;           // graph output, guard source, or memo slot (kRef)
  int32_t memo = -1;            // containers: remember the built object in this slot
  PyObject* constant = nullptr;  // owned
  std::vector<OutputSpec> items;
  OutputSpec() = default;
  OutputSpec(OutputSpec&& o) noexcept { *this = std::move(o); }
  OutputSpec& operator=(OutputSpec&& o) noexcept;
  OutputSpec(const OutputSpec&) = delete;
  ~OutputSpec() { Py_XDECREF(constant); }
};

// Where a function stops being capturable and how to continue in Python from there: the
// breaking instruction runs in C++ (dispatch), then a resume function built from the
// original code continues after it.
struct BreakInfo {
  int32_t index = -1;        // instruction index in the decoded code
  Opc op = Opc::NOP;
  int32_t arg = 0;
  int32_t offset = 0;        // code-unit offset of the instruction
  int32_t next_offset = 0;   // where execution continues when it falls through
  int32_t jump_offset = -1;  // where a taken jump continues
  int32_t kwnames_index = -1;   // CALL: co_consts index of the pending KW_NAMES tuple
  int32_t line = 0;             // source line of the instruction
  std::vector<OutputSpec> stack;   // the value stack before the instruction, bottom first
  std::vector<OutputSpec> locals;  // every local slot of the function
  BreakReason reason;
  BreakInfo() = default;
  BreakInfo(const BreakInfo&) = delete;
};

// A mutation the captured code makes on objects that outlive the call, replayed in order
// after the graph runs (and before the instruction of a graph break).
struct Effect {
  enum Kind : uint8_t {
    kSetAttr,    // setattr(target, name, value)
    kSetGlobal,  // the function's globals[name] = value
    kAppend,     // target.append(value) on a list
    kSetItem,    // target[name] = value on a dict (name: a plain key)
    kInsert,     // target.insert(name, value) on a list (name: an int constant)
    kDelAttr,    // del target.name
    kDelGlobal,  // del the function's globals[name]
    kDelItem,    // del target[name] on a dict (a key) or a list (an int index)
    kSetCell,    // closure cell `name` (an int) of the function `target` := value; a
                 // target of kind kNull is the called function itself
    kCall,       // target(*value, **name): print in whole-graph mode (`name`: a dict of
                 // constant keywords, or no constant)
  };
  Kind kind = kSetAttr;
  OutputSpec target;  // the object mutated (every kind but kSetGlobal and kDelGlobal)
  OutputSpec name;    // kConstant: the attribute or global name, dict key, list or cell index
  OutputSpec value;   // kConstant None for the deletions
};

struct CaptureResult {
  bool ok = false;
  BreakReason reason;  // when !ok
  std::unique_ptr<guards::GuardProgram> guards = std::make_unique<guards::GuardProgram>();
  graph::Graph graph;
  std::vector<int32_t> param_sources;  // graph parameter i is the tensor at this source
  // Per parameter: kNoNumber for a tensor; else the parameter is the Python int or float at
  // its source, converted on each call to a 0-d tensor of this dtype as eager arithmetic
  // converts a scalar next to a tensor of that dtype (a dynamic number).
  std::vector<int8_t> param_numbers;
  OutputSpec output;
  size_t num_instructions = 0;
  std::unique_ptr<BreakInfo> brk;  // set when !ok and the function can continue past it
  std::vector<Effect> effects;     // replayed after the graph (before a break's instruction)
  int32_t num_memo = 0;     // memo slots the output (or the break state) uses
  bool dynamic = false;     // some tensor dimension is symbolic (guards do not check it)
  bool read_shape = false;  // the trace read a tensor's shape as a Python value
  // The functions inlined into the capture, "qualname (file:line)", each once, in the order
  // they were first called (the structured trace reports them).
  std::vector<std::string> inlined;
  // What runs outside the graph in the graph's stead, for explain(): each print replayed after
  // the graph ("file:line"), and the classes of the objects made in the function that the
  // call's result rebuilds (namedtuples, dataclasses, plain objects).
  std::vector<std::string> reordered_prints;
  std::vector<std::string> rebuilt_objects;
};

inline constexpr int8_t kNoNumber = -1;

// `args` are the values of the first `nargs` local slots (positional then keyword-only
// parameters), `func` the function object whose code is `code`.
// `dynamic_dims` lists tensor dimensions (by source) to leave symbolic; `dynamic_numbers`
// sources (by SourceText) whose Python int or float, where it only meets a floating tensor in
// arithmetic, becomes a graph parameter instead of a guarded constant. With `allow_break`,
// an unsupported instruction of the function itself (or a call that cannot be inlined)
// ends the graph there and fills `brk` instead of failing the whole function.
CaptureResult Capture(PyCodeObject* code, PyObject* func, PyObject* const* args, int nargs,
                      const std::vector<guards::DynamicDim>& dynamic_dims = {},
                      bool allow_break = false,
                      const std::vector<std::string>& dynamic_numbers = {});



}  // namespace pijit::bytecode
