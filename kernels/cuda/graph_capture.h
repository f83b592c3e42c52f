// CUDA graphs: the kernels, copies and library calls that a piece of work issues on pijit's
// stream, recorded once and replayed with one launch.
//
// Recording runs nothing on the device: the stream is in capture mode while `body` runs, so
// every launch is appended to a graph instead. The blocks `body` allocates come from a pool
// of the device allocator (kernels/cuda/allocator.h) that the recording owns, because a
// replay writes into the same addresses. Anything that cannot be recorded (a copy to the
// host, a synchronisation, a module load) makes Record fail; the caller then runs the work
// the ordinary way. The capture mode is CUDA's relaxed one: other threads are not stopped
// from allocating while a recording is made.
#pragma once
#include <cuda.h>

#include <cstdint>
#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "kernels/cuda/allocator.h"

namespace pijit::cuda {

class RecordedWork {
 public:
  static absl::StatusOr<std::unique_ptr<RecordedWork>> Record(const std::function<absl::Status()>& body);
  ~RecordedWork();
  RecordedWork(const RecordedWork&) = delete;
  RecordedWork& operator=(const RecordedWork&) = delete;

  // Issues the recorded work again on pijit's stream (asynchronously).
  absl::Status Replay() const;
  // The graph's nodes (kernels, copies, memsets): what one Replay launches.
  int64_t nodes() const { return nodes_; }

 private:
  RecordedWork() = default;
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
  CachingAllocator::PoolId pool_ = 0;
  int64_t nodes_ = 0;
};

}  // namespace pijit::cuda
