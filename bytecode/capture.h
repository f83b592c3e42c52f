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

#include "graph/graph.h"
#include "guards/guards.h"

namespace pijit::bytecode {

// Why a function (or, later, part of one) is not captured: a record, not just a message.
struct BreakReason {
  std::string category;  // unsupported_bytecode, unsupported_call, invalid_input, ...
  std::string file;
  int line = 0;
  std::string explanation;
  std::string hint;
  std::string ToText() const;
};

// How to build the Python return value from the graph's outputs and the call's inputs.
struct OutputSpec {
  enum Kind : uint8_t { kGraphOutput, kSource, kConstant, kTuple, kList };
  Kind kind = kConstant;
  int32_t index = -1;           // graph output or guard source
  PyObject* constant = nullptr;  // owned
  std::vector<OutputSpec> items;
  OutputSpec() = default;
  OutputSpec(OutputSpec&& o) noexcept { *this = std::move(o); }
  OutputSpec& operator=(OutputSpec&& o) noexcept;
  OutputSpec(const OutputSpec&) = delete;
  ~OutputSpec() { Py_XDECREF(constant); }
};

struct CaptureResult {
  bool ok = false;
  BreakReason reason;  // when !ok
  std::unique_ptr<guards::GuardProgram> guards = std::make_unique<guards::GuardProgram>();
  graph::Graph graph;
  std::vector<int32_t> param_sources;  // graph parameter i is the tensor at this source
  OutputSpec output;
  size_t num_instructions = 0;
  size_t num_blocks = 0;
  bool dynamic = false;     // some tensor dimension is symbolic (guards do not check it)
  bool read_shape = false;  // the trace read a tensor's shape as a Python value
};

// `args` are the values of the first `nargs` local slots (positional then keyword-only
// parameters), `func` the function object whose code is `code`.
// `dynamic_dims` lists tensor dimensions (by source) to leave symbolic.
CaptureResult Capture(PyCodeObject* code, PyObject* func, PyObject* const* args, int nargs,
                      const std::vector<guards::DynamicDim>& dynamic_dims = {});

}  // namespace pijit::bytecode
