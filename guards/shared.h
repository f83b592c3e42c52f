// The guards of every cache entry of one code object, checked together.
//
// Entries of one code object mostly guard the same things: the same arguments' types and
// layouts, the same globals, and differ in one dtype, shape or constant. SharedGuards interns
// the sources and guards of all entries into one table each, so that within one call a
// source shared by several entries is resolved once and a guard they share is evaluated once;
// a miss that tries every entry costs about one entry's guards plus what distinguishes the
// others. Each entry's guards are ordered by how many entries share them, fewest first, so
// that a non-matching entry fails on what distinguishes it before the shared prefix is
// evaluated. Checking allocates nothing for up to 64 sources and 128 guards. (The cache
// checks its most recently used entry on its own first: a hot call's steady state.)
//
//   entries:   A: args[0] float32 (8,)   args[1] float32 (8,)   G['scale'] == 2
//              B: args[0] float16 (8,)   args[1] float32 (8,)   G['scale'] == 2
//   shared:    sources args[0], args[1], G['scale'];  guards gA0, gB0, g1, g2
//   A checks gA0 then g1, g2;  B checks gB0, then g1 and g2 as A left them
//
// Entries that differ in one tensor's layout (dtype, rank, sizes, strides) are also indexed by
// it: the source with the most distinct exact TENSOR_MATCHes becomes a key, and a call looks
// its tensor up in a hash table instead of trying each entry, so finding the entry costs the
// same for 8 entries as for 64. Entries with no exact TENSOR_MATCH there are always tried.
//
// The table borrows from the entries' programs: rebuild it whenever the set of entries or
// their guards change.
#pragma once
#include <Python.h>

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"
#include "guards/guards.h"

namespace pijit::guards {

class SharedGuards {
 public:
  // Builds the tables of `programs` (borrowed: they must outlive the next Build and not
  // change meanwhile). Program k is then checked by Call::Check(k, ...).
  void Build(absl::Span<const GuardProgram* const> programs);
  size_t num_sources() const { return sources_.size(); }

  // One call's evaluation: what has been resolved and checked so far.
  class Call {
   public:
    Call(const SharedGuards& shared, const Roots& roots);
    // Whether program k's sources all resolve and its guards all pass; on success fills
    // `values` (the program's own source order, borrowed) as GuardProgram::Check does.
    bool Check(size_t k, PyObject** values);
    // The programs that may match, ascending: those the key tensor allows, or all.
    void Candidates(absl::InlinedVector<int32_t, 8>* out);

   private:
    PyObject* Value(int32_t source);
    bool Passes(int32_t guard);
    const SharedGuards& shared_;
    const Roots& roots_;
    enum : uint8_t { kUnknown = 0, kYes = 1, kNo = 2 };
    absl::InlinedVector<PyObject*, 64> values_;
    absl::InlinedVector<uint8_t, 64> source_state_;
    absl::InlinedVector<uint8_t, 128> guard_state_;
  };

  // Guards evaluated by every Call since the process started (tests count sharing with it).
  static uint64_t evaluations();

 private:
  struct SharedSource {
    const Source* source;  // a representative (parent index is the program's own)
    int32_t parent = -1;   // shared index of the parent
  };
  struct SharedGuard {
    const Guard* guard;  // a representative
    int32_t source = -1, other = -1;  // shared indices
  };
  struct Program {
    std::vector<int32_t> sources;  // program source i -> shared source
    std::vector<int32_t> guards;   // shared guards, in checking order
  };
  // What an exact TENSOR_MATCH checks.
  struct TensorKey {
    PyTypeObject* type;
    DType dtype;
    Device device;
    Shape shape, strides;
    bool operator==(const TensorKey& o) const {
      return type == o.type && dtype == o.dtype && device == o.device && shape == o.shape &&
             strides == o.strides;
    }
    template <typename H> friend H AbslHashValue(H h, const TensorKey& k) {
      // The device is compared, not hashed: every tensor of one call is on one device.
      return H::combine(std::move(h), k.type, static_cast<int>(k.dtype), k.shape, k.strides);
    }
  };
  void BuildIndex();

  std::vector<SharedSource> sources_;
  std::vector<SharedGuard> guards_;
  std::vector<Program> programs_;
  int32_t key_source_ = -1;  // shared source the index looks up, or -1: no index
  absl::flat_hash_map<TensorKey, std::vector<int32_t>> by_key_;  // -> programs
  std::vector<int32_t> unkeyed_;  // programs with no exact TENSOR_MATCH on the key source
  std::vector<int32_t> all_;      // 0 .. programs - 1
};

}  // namespace pijit::guards
