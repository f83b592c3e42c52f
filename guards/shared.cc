#include "guards/shared.h"

#include <algorithm>

#include "interop/convert.h"

namespace pijit::guards {
namespace {
uint64_t g_evaluations = 0;
}  // namespace

uint64_t SharedGuards::evaluations() { return g_evaluations; }

void SharedGuards::Build(absl::Span<const GuardProgram* const> programs) {
  sources_.clear();
  guards_.clear();
  programs_.clear();
  std::vector<int32_t> users;  // per shared guard: how many programs have it
  for (const GuardProgram* p : programs) {
    Program prog;
    for (const Source& s : p->sources()) {
      // Parents come first in a program, so the parent's shared index is known.
      const int32_t parent = s.parent >= 0 ? prog.sources[s.parent] : -1;
      int32_t found = -1;
      for (size_t u = 0; u < sources_.size() && found < 0; ++u)
        if (sources_[u].parent == parent && SameSource(*sources_[u].source, s)) found = u;
      if (found < 0) {
        found = static_cast<int32_t>(sources_.size());
        sources_.push_back({&s, parent});
      }
      prog.sources.push_back(found);
    }
    for (const Guard& g : p->guards()) {
      const int32_t source = prog.sources[g.source];
      const int32_t other = g.other >= 0 ? prog.sources[g.other] : -1;
      int32_t found = -1;
      for (size_t u = 0; u < guards_.size() && found < 0; ++u) {
        const SharedGuard& c = guards_[u];
        if (c.source == source && c.other == other && SameGuard(*c.guard, g)) found = u;
      }
      if (found < 0) {
        found = static_cast<int32_t>(guards_.size());
        guards_.push_back({&g, source, other});
        users.push_back(0);
      }
      // A program may repeat a guard (two paths to one value): keep one.
      if (std::find(prog.guards.begin(), prog.guards.end(), found) == prog.guards.end()) {
        prog.guards.push_back(found);
        ++users[found];
      }
    }
    programs_.push_back(std::move(prog));
  }
  // What distinguishes an entry first; ties keep the program's own order.
  for (Program& prog : programs_) {
    std::stable_sort(prog.guards.begin(), prog.guards.end(),
                     [&users](int32_t a, int32_t b) { return users[a] < users[b]; });
  }
  BuildIndex();
}

void SharedGuards::BuildIndex() {
  all_.resize(programs_.size());
  for (size_t k = 0; k < all_.size(); ++k) all_[k] = static_cast<int32_t>(k);
  key_source_ = -1;
  by_key_.clear();
  unkeyed_.clear();
  // Per source: the exact TENSOR_MATCH of each program on it (or none), and how many keys.
  size_t best_keys = 1;
  for (size_t u = 0; u < sources_.size(); ++u) {
    absl::flat_hash_map<TensorKey, std::vector<int32_t>> keys;
    std::vector<int32_t> rest;
    for (size_t k = 0; k < programs_.size(); ++k) {
      const Guard* exact = nullptr;
      for (int32_t g : programs_[k].guards) {
        const SharedGuard& sg = guards_[g];
        if (sg.source == static_cast<int32_t>(u) && sg.guard->kind == Guard::kTensorMatch &&
            !sg.guard->dynamic) {
          exact = sg.guard;
        }
      }
      if (exact) {
        keys[TensorKey{exact->type, exact->dtype, exact->device, exact->shape, exact->strides}].push_back(
            static_cast<int32_t>(k));
      } else {
        rest.push_back(static_cast<int32_t>(k));
      }
    }
    if (keys.size() > best_keys) {
      best_keys = keys.size();
      key_source_ = static_cast<int32_t>(u);
      by_key_ = std::move(keys);
      unkeyed_ = std::move(rest);
    }
  }
}

void SharedGuards::Call::Candidates(absl::InlinedVector<int32_t, 8>* out) {
  out->clear();
  const SharedGuards& s = shared_;
  if (s.key_source_ < 0) {
    out->assign(s.all_.begin(), s.all_.end());
    return;
  }
  const std::vector<int32_t>* keyed = nullptr;
  PyObject* v = Value(s.key_source_);
  if (const Tensor* t = v ? AsTensor(v) : nullptr) {
    auto it = s.by_key_.find(TensorKey{Py_TYPE(v), t->dtype(), t->device(), t->shape(), t->strides()});
    if (it != s.by_key_.end()) keyed = &it->second;
  }
  if (!keyed) {
    out->assign(s.unkeyed_.begin(), s.unkeyed_.end());
    return;
  }
  out->resize(keyed->size() + s.unkeyed_.size());
  std::merge(keyed->begin(), keyed->end(), s.unkeyed_.begin(), s.unkeyed_.end(), out->begin());
}

SharedGuards::Call::Call(const SharedGuards& shared, const Roots& roots)
    : shared_(shared),
      roots_(roots),
      values_(shared.sources_.size(), nullptr),
      source_state_(shared.sources_.size(), kUnknown),
      guard_state_(shared.guards_.size(), kUnknown) {}

PyObject* SharedGuards::Call::Value(int32_t u) {
  if (source_state_[u] == kUnknown) {
    const SharedSource& s = shared_.sources_[u];
    PyObject* parent = s.parent >= 0 ? Value(s.parent) : nullptr;
    PyObject* v = s.parent >= 0 && !parent ? nullptr : ResolveSource(*s.source, parent, roots_);
    values_[u] = v;
    source_state_[u] = v ? kYes : kNo;
  }
  return values_[u];
}

bool SharedGuards::Call::Passes(int32_t k) {
  if (guard_state_[k] == kUnknown) {
    const SharedGuard& g = shared_.guards_[k];
    PyObject* v = Value(g.source);
    PyObject* other = g.other >= 0 ? Value(g.other) : nullptr;
    bool ok = v && (g.other < 0 || other);
    if (ok) {
      ++g_evaluations;
      ok = GuardPasses(*g.guard, v, other);
    }
    guard_state_[k] = ok ? kYes : kNo;
  }
  return guard_state_[k] == kYes;
}

bool SharedGuards::Call::Check(size_t k, PyObject** values) {
  const Program& prog = shared_.programs_[k];
  for (int32_t g : prog.guards)
    if (!Passes(g)) return false;
  // Sources no guard reads (a parameter the graph takes as is) must resolve too.
  for (size_t i = 0; i < prog.sources.size(); ++i) {
    PyObject* v = Value(prog.sources[i]);
    if (!v) return false;
    values[i] = v;
  }
  return true;
}

}  // namespace pijit::guards
