// The per-code cache of compiled entries, stored in the code object's co_extra.
//
//   PyCodeObject ── co_extra[index] ──> CodeState
//                                        ├── entries (most recently used first)
//                                        │     CacheEntry: GuardProgram ─┬─> CompiledGraph + OutputSpec
//                                        │                               └─> or "run eagerly" + reason
//                                        └── counters, break reasons
#pragma once
#include <Python.h>

#include <memory>
#include <optional>
#include <vector>

#include "bytecode/capture.h"
#include "graph/executor.h"
#include "guards/guards.h"

namespace pijit::guards {

struct CacheEntry {
  std::unique_ptr<GuardProgram> guards;
  bool eager = false;  // capture failed under these guards: run the original code
  bytecode::BreakReason reason;
  std::optional<graph::CompiledGraph> graph;
  std::vector<int32_t> param_sources;
  bytecode::OutputSpec output;
  bool dynamic = false;  // symbolic sizes: a kernel error means "run eagerly", not a bug
  int64_t hits = 0;
};

struct CodeState {
  std::vector<std::unique_ptr<CacheEntry>> entries;
  int64_t call_count = 0;
  int64_t compile_count = 0;
  int64_t hit_count = 0;
  int64_t eager_count = 0;
  int64_t graph_break_count = 0;  // captures that ended in a recorded reason
  bool limit_warned = false;
  bool saw_tensor_work = false;  // some capture found tensors or ops
  bool skip = false;             // capture-all mode: no tensor work, never look again
  std::vector<DynamicDim> dynamic_dims;  // sizes seen to vary between calls
  bool static_only = false;      // the trace reads sizes: every entry is specialised
  std::vector<bytecode::BreakReason> reasons;
};

// The state of `code`, created on first use when `create`; nullptr otherwise.
CodeState* GetCodeState(PyCodeObject* code, bool create);
// Drops every cache entry of `code` (pijit.reset of one function).
void ResetCodeState(PyCodeObject* code);
// Drops every cache entry of every code object (pijit.reset()).
void ResetAll();

constexpr size_t kDefaultCacheLimit = 8;
size_t CacheLimit();
void SetCacheLimit(size_t n);

}  // namespace pijit::guards
