#include "graph/op_profile.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "kernels/flags.h"

namespace pijit::graph {

namespace op_profile_detail {
std::atomic<bool> g_on{flags::ProfileNodes()};
}

namespace {

struct Entry {
  double seconds = 0;
  int64_t count = 0;
};

class OpProfile {
 public:
  static OpProfile& Get() {
    static OpProfile* p = new OpProfile;  // never destroyed: the exit print reads it
    return *p;
  }
  void Add(std::string key, double seconds) {
    std::lock_guard<std::mutex> lock(mu_);
    Entry& e = entries_[std::move(key)];
    e.seconds += seconds;
    ++e.count;
  }
  void Reset() {
    std::lock_guard<std::mutex> lock(mu_);
    entries_.clear();
  }
  std::vector<NodeTime> Snapshot() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<NodeTime> rows;
    for (const auto& [name, e] : entries_) rows.push_back({name, e.seconds * 1e3, e.count});
    std::sort(rows.begin(), rows.end(), [](const NodeTime& a, const NodeTime& b) { return a.ms > b.ms; });
    return rows;
  }

 private:
  OpProfile() {
    // PIJIT_PROFILE=1 prints the table to stderr when the process exits.
    if (flags::ProfileNodes()) std::atexit([] { Get().Print(); });
  }
  void Print() {
    const std::vector<NodeTime> rows = Snapshot();
    double total = 0;
    for (const NodeTime& r : rows) total += r.ms;
    std::fprintf(stderr, "[pijit] node profile: %.3f ms in all\n", total);
    for (const NodeTime& r : rows) {
      std::fprintf(stderr, "  %6.2f%% %10.3f ms %8lld x  %s\n", 100 * r.ms / total, r.ms,
                   static_cast<long long>(r.count), r.node.c_str());
    }
  }
  std::mutex mu_;
  absl::flat_hash_map<std::string, Entry> entries_;
};

}  // namespace

void SetOpProfiling(bool on) {
  OpProfile::Get();  // made before the first time is added
  op_profile_detail::g_on.store(on, std::memory_order_relaxed);
}

void ResetOpProfile() { OpProfile::Get().Reset(); }

void AddOpTime(std::string_view op, const TensorMeta& meta, bool eager, double seconds) {
  OpProfile::Get().Add(absl::StrCat(eager ? "eager " : "", std::string(op), " ", DTypeShortName(meta.dtype),
                                    ShapeToString(meta.shape)),
                       seconds);
}

std::vector<NodeTime> OpProfileSnapshot() { return OpProfile::Get().Snapshot(); }

}  // namespace pijit::graph
