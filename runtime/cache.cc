#include "runtime/cache.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace pijit::runtime {
namespace {
Py_ssize_t g_extra_index = -1;
size_t g_cache_limit = kDefaultCacheLimit;
// Every live state and its code object (borrowed; the state is freed with the code).
absl::flat_hash_map<CodeState*, PyCodeObject*>& Live() {
  static auto* live = new absl::flat_hash_map<CodeState*, PyCodeObject*>();
  return *live;
}

void FreeCodeState(void* p) {
  Live().erase(static_cast<CodeState*>(p));
  delete static_cast<CodeState*>(p);
}

Py_ssize_t ExtraIndex() {
  if (g_extra_index < 0) g_extra_index = _PyEval_RequestCodeExtraIndex(FreeCodeState);
  return g_extra_index;
}
}  // namespace

CodeState* GetCodeState(PyCodeObject* code, bool create) {
  void* extra = nullptr;
  PyObject* co = reinterpret_cast<PyObject*>(code);
  if (_PyCode_GetExtra(co, ExtraIndex(), &extra) < 0) {
    PyErr_Clear();
    return nullptr;
  }
  if (extra || !create) return static_cast<CodeState*>(extra);
  auto* state = new CodeState();
  if (_PyCode_SetExtra(co, ExtraIndex(), state) < 0) {
    PyErr_Clear();
    delete state;
    return nullptr;
  }
  Live().emplace(state, code);
  return state;
}

void ForEachCodeState(const std::function<void(PyCodeObject*, const CodeState&)>& fn) {
  // `fn` may run Python (a collection can free code objects and their states): hold every
  // code object first and walk a copy.
  std::vector<std::pair<CodeState*, PyCodeObject*>> states(Live().begin(), Live().end());
  for (auto& [state, code] : states) Py_INCREF(code);
  for (auto& [state, code] : states) fn(code, *state);
  for (auto& [state, code] : states) Py_DECREF(code);
}

// Resetting moves each state's contents out first and drops them only when no state is being
// touched: dropping releases graphs, guards and resume code objects, which can free other
// code objects (or the state's own one), and with them their CodeStates and Live() entries.
void ResetAll() {
  std::vector<CodeState> dropped;
  dropped.reserve(Live().size());
  for (const auto& [s, code] : Live()) {
    dropped.push_back(std::move(*s));
    *s = CodeState();
  }
}

void ResetCodeState(PyCodeObject* code) {
  CodeState* s = GetCodeState(code, false);
  if (s == nullptr) return;
  CodeState dropped = std::move(*s);
  *s = CodeState();
}

CacheEntry* CodeState::LookupServing(const guards::Roots& roots, SourceValues* values,
                                     bool whole_graph_call, bool optimize_call) {
  for (const std::unique_ptr<CacheEntry>& e : entries) {
    if (!e->Serves(whole_graph_call, optimize_call)) continue;
    values->resize(e->guards->num_sources());
    if (e->guards->Check(roots, values->data())) return e.get();
  }
  return nullptr;
}

CacheEntry* CodeState::LookupShared(const guards::Roots& roots, SourceValues* values) {
  CacheEntry* hit = nullptr;
  if (shared_stale) {
    absl::InlinedVector<const guards::GuardProgram*, 8> programs;
    by_program.clear();
    for (const auto& e : entries) {
      programs.push_back(e->guards.get());
      by_program.push_back(e.get());
    }
    shared.Build(programs);
    shared_stale = false;
  }
  guards::SharedGuards::Call call(shared, roots);
  absl::InlinedVector<int32_t, 8> candidates;
  call.Candidates(&candidates);
  for (int32_t p : candidates) {
    CacheEntry* e = by_program[p];
    if (e == entries[0].get()) continue;
    values->resize(e->guards->num_sources());
    if (call.Check(p, values->data())) {
      hit = e;
      break;
    }
  }
  if (hit) {
    auto it = std::find_if(entries.begin(), entries.end(),
                           [hit](const auto& e) { return e.get() == hit; });
    std::rotate(entries.begin(), it, it + 1);
  }
  return hit;
}

void CodeState::DropDeadEntries() {
  entries.erase(std::remove_if(entries.begin(), entries.end(),
                               [](const auto& e) { return e->guards->HasDeadReferent(); }),
                entries.end());
  shared_stale = true;
}

bool CodeState::AtLimit() const {
  return entries.size() >= CacheLimit() || compile_count >= static_cast<int64_t>(CacheLimit()) * 8;
}

void CodeState::PromoteOnMiss(const guards::Roots& roots, SourceValues* values) {
  // What the first non-eager entry that differs from the call only in `mismatch` reports.
  auto first_mismatch = [&](auto mismatch, auto* found) {
    for (const auto& e : entries) {
      if (e->eager) continue;
      values->resize(e->guards->num_sources());
      if ((e->guards.get()->*mismatch)(roots, values->data(), found)) return;
      found->clear();
    }
  };
  if (!static_only) {
    std::vector<DynamicDim> dims;
    first_mismatch(&GuardProgram::ShapeOnlyMismatch, &dims);
    for (auto& d : dims) AddOnce(dynamic_dims, std::move(d));
  }
  // Numbers only where they meet floating tensors in arithmetic (the guards know): a learning
  // rate or a step count that changes on every call compiles once more, not once per value.
  std::vector<std::string> numbers;
  first_mismatch(&GuardProgram::NumberOnlyMismatch, &numbers);
  for (auto& n : numbers) AddOnce(dynamic_numbers, std::move(n));
}

CacheEntry& CodeState::Install(std::unique_ptr<CacheEntry> entry) {
  entries.insert(entries.begin(), std::move(entry));
  shared_stale = true;
  return *entries.front();
}

size_t CacheLimit() { return g_cache_limit; }
void SetCacheLimit(size_t n) { g_cache_limit = n; }

}  // namespace pijit::runtime
