#include "runtime/cache.h"

#include <vector>

#include "absl/container/flat_hash_set.h"

namespace pijit::runtime {
namespace {
Py_ssize_t g_extra_index = -1;
size_t g_cache_limit = kDefaultCacheLimit;
absl::flat_hash_set<CodeState*>& Live() {
  static auto* live = new absl::flat_hash_set<CodeState*>();
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
  Live().insert(state);
  return state;
}

// Resetting moves each state's contents out first and drops them only when no state is being
// touched: dropping releases graphs, guards and resume code objects, which can free other
// code objects (or the state's own one), and with them their CodeStates and Live() entries.
void ResetAll() {
  std::vector<CodeState> dropped;
  dropped.reserve(Live().size());
  for (CodeState* s : Live()) {
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

size_t CacheLimit() { return g_cache_limit; }
void SetCacheLimit(size_t n) { g_cache_limit = n; }

}  // namespace pijit::runtime
