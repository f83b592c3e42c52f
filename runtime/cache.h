// The per-code cache of compiled entries, stored in the code object's co_extra.
//
//   PyCodeObject ── co_extra[index] ──> CodeState
//                                        ├── entries (most recently used first)
//                                        │     CacheEntry: GuardProgram ─┬─> CompiledGraph + OutputSpec
//                                        │                               └─> or "run eagerly" + reason
//                                        └── counters, break reasons
#pragma once
#include <Python.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bytecode/capture.h"
#include "bytecode/resume.h"
#include "frame_eval/eval_frame.h"
#include "graph/executor.h"
#include "guards/guards.h"
#include "guards/shared.h"
#include "absl/container/inlined_vector.h"

namespace pijit::runtime {

using guards::DynamicDim;
using guards::GuardProgram;
using guards::SharedGuards;

// An owned reference that moves but does not copy.
class OwnedRef {
 public:
  OwnedRef() = default;
  explicit OwnedRef(PyObject* steal) : p_(steal) {}
  OwnedRef(OwnedRef&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  OwnedRef& operator=(OwnedRef&& o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  OwnedRef(const OwnedRef&) = delete;
  ~OwnedRef() { Py_XDECREF(p_); }
  PyObject* get() const { return p_; }

 private:
  PyObject* p_ = nullptr;
};

// Where an exception raised by a break's instruction goes: a resume function at the handler
// of the innermost exception-table range around it (3.11 ranges do not overlap), as in
// CPython's exception_unwind (Python/ceval.c).
struct BreakHandler {
  OwnedRef code;             // the handler's resume code, or none
  int32_t depth = 0;         // stack values below the handler's range that it keeps
  bool lasti = false;        // the handler also wants the raising instruction's offset
  int32_t lasti_value = 0;   // that offset, in the handler resume function's code units
};

// The code objects a graph-break entry runs, found once when the entry is made
// (runtime/continuation.h, PrepareBreak): its calls only make function objects of them.
struct PreparedBreak {
  OwnedRef bridge;               // runs the breaking instruction
  std::vector<OwnedRef> resumes;  // one resume function per outcome of the instruction
  BreakHandler handler;
  int32_t nlocals = 0;           // the original code's locals, passed on to the bridge
};

struct CacheEntry {
  std::unique_ptr<GuardProgram> guards;
  bool eager = false;  // capture failed under these guards: run the original code
  bytecode::BreakReason reason;
  std::optional<graph::CompiledGraph> graph;
  std::vector<int32_t> param_sources;
  std::vector<int8_t> param_numbers;  // per parameter: bytecode::kNoNumber or a dtype
  bytecode::OutputSpec output;
  bool dynamic = false;  // symbolic sizes: a kernel error means "run eagerly", not a bug
  // The settings it was compiled with. Compiled functions of one code object share its cache
  // whatever their settings, so an entry serves a call only where its settings give what the
  // call's would (Serves): a break or eager entry made by a call that allowed breaks does not
  // serve a whole-graph call (which must give the graph without the break, or its
  // GraphBreakError); an eager entry of whole-graph capture does not serve a call that allows
  // breaks (which runs the parts it captures); and an optimised graph does not serve a call
  // compiled at jit_level "O0" (which runs the graph as captured), nor the reverse.
  bool whole_graph = false;
  bool optimized = true;
  bool Serves(bool whole_graph_call, bool optimize_call) const {
    if (optimized != optimize_call) return false;
    if (!brk && !eager) return true;
    return whole_graph_call ? whole_graph : !(whole_graph && eager);
  }
  std::unique_ptr<bytecode::BreakInfo> brk;  // a graph break: run the prefix, then resume
  std::optional<PreparedBreak> prepared;      // brk's code objects
  std::vector<bytecode::Effect> effects;      // replayed after the graph, in order
  int64_t hits = 0;
  std::vector<std::string> inlined;           // functions the capture inlined (the trace's)
};

// Code objects generated from this one for graph breaks, by what they were made for.
struct ResumeCode {
  bytecode::ResumeSpec spec;
  OwnedRef code;
};
struct BridgeCode {
  std::string key;  // BridgeSpec::Key()
  OwnedRef code;
};

// Appends `x` to `list` unless it is there already.
template <typename T>
void AddOnce(std::vector<T>& list, T x) {
  if (std::find(list.begin(), list.end(), x) == list.end()) list.push_back(std::move(x));
}

// The resolved guard sources of one call, filled by the guard checks.
using SourceValues = absl::InlinedVector<PyObject*, 16>;

struct CodeState {
  // -- the cache policy --
  // The entry whose guards accept the call (its sources resolved into `values`), or nullptr.
  // The most recently used entry checks its own program (the steady state of a hot call);
  // after it misses, the other entries that may match are found through the shared tables,
  // and a hit moves to the front.
  CacheEntry* Lookup(const guards::Roots& roots, SourceValues* values) {
    if (!entries.empty()) {  // inline: the hot path of every call
      values->resize(entries[0]->guards->num_sources());
      if (entries[0]->guards->Check(roots, values->data())) return entries[0].get();
    }
    return entries.size() > 1 ? LookupShared(roots, values) : nullptr;
  }
  // The entry whose guards accept the call among those that serve a call of this mode
  // (CacheEntry::Serves), most recently used first; the rare path after Lookup found one that
  // does not.
  CacheEntry* LookupServing(const guards::Roots& roots, SourceValues* values, bool whole_graph_call,
                            bool optimize_call);
  // Drops the entries guarding objects that have died: they can never match again.
  void DropDeadEntries();
  // No more entries: the cache limit, or a compile count that keeps evicting (entries whose
  // guarded objects keep dying are recompiled on every call otherwise).
  bool AtLimit() const;
  // Symbolic promotion on a miss: sizes in which the call's tensors differ from an entry's
  // (and nothing else) become symbolic, so a loop over batch sizes compiles at most twice;
  // Python numbers that differ from an entry's (and nothing else) become graph inputs.
  void PromoteOnMiss(const guards::Roots& roots, SourceValues* values);
  // Adds `entry` as the most recently used one.
  CacheEntry& Install(std::unique_ptr<CacheEntry> entry);

  std::vector<std::unique_ptr<CacheEntry>> entries;
  // Lookup after the most recently used entry missed.
  CacheEntry* LookupShared(const guards::Roots& roots, SourceValues* values);
  // The entries' guards checked together; rebuilt when entries are added or dropped.
  SharedGuards shared;
  std::vector<CacheEntry*> by_program;  // the entry of each of shared's programs
  bool shared_stale = true;
  int64_t call_count = 0;
  int64_t compile_count = 0;
  int64_t hit_count = 0;
  int64_t eager_count = 0;
  int64_t graph_break_count = 0;  // captures that ended in a recorded reason
  bool limit_warned = false;
  bool limit_traced = false;  // the trace has its recompile_limit event
  bool saw_tensor_work = false;  // some capture found tensors or ops
  bool skip = false;             // capture-all mode: no tensor work, never look again
  pijit_skip_info skip_info{};   // skipped code: whether its runs may take the hook off
  std::vector<DynamicDim> dynamic_dims;  // sizes seen to vary between calls
  std::vector<std::string> dynamic_numbers;  // sources whose int or float varies between calls
  std::vector<ResumeCode> resumes;  // resume functions generated from this code object
  std::vector<BridgeCode> bridges;  // code that runs a breaking instruction in Python
  // For generated code: the original code object it was made from, and how far its
  // instructions are shifted (resume functions); breaks in it are mapped back there.
  OwnedRef origin;
  int32_t origin_shift = 0;
  bool capture_always = false;  // resume functions: captured wherever the hook sees them
  bool static_only = false;      // the trace reads sizes: every entry is specialised
  std::vector<bytecode::BreakReason> reasons;
  // While a structured trace is on (runtime/trace.h): milliseconds in this code's compiles
  // and in its graph runs (inclusive of the resume functions a break continues in).
  double traced_compile_ms = 0, traced_run_ms = 0;
};

// The state of `code`, created on first use when `create`; nullptr otherwise.
CodeState* GetCodeState(PyCodeObject* code, bool create);
// Every live state with its code object (borrowed: a state lives exactly as long as its code).
void ForEachCodeState(const std::function<void(PyCodeObject*, const CodeState&)>& fn);
// Drops every cache entry of `code` (pijit.reset of one function).
void ResetCodeState(PyCodeObject* code);
// Drops every cache entry of every code object (pijit.reset()).
void ResetAll();

constexpr size_t kDefaultCacheLimit = 8;
size_t CacheLimit();
void SetCacheLimit(size_t n);

}  // namespace pijit::runtime
