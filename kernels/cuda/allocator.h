// A caching allocator of device memory. cuMemAlloc and cuMemFree synchronise the device and
// cost tens of microseconds, so a freed block is kept, keyed by its rounded size, for the
// next request of that size: a compiled graph's steady-state call then allocates nothing from
// the driver. All work runs on one stream (kernels/cuda/cuda_api.h), so a block freed after
// the kernels that use it are queued can be handed to the next kernel at once: it runs after
// them.
//
// The bookkeeping is separate from the driver (RawAllocator), so the CPU tests run it over
// host memory. When the driver reports out of memory, the cache is emptied and the request
// tried once more.
//
// Pools (for CUDA graphs, kernels/cuda/graph_capture.h): a recorded graph replays into the
// addresses it was recorded with, so the blocks it used must never go to other work while it
// lives. While a pool is open, every block handed out belongs to it, and a block of a pool
// released goes back to that pool's free list, not to the shared cache; within the recording
// the pool reuses its own blocks in stream order, as the cache does. When the graph goes, the
// pool is retired: its free blocks return to the cache at once, the others when released.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "kernels/tensor.h"

namespace pijit::cuda {

struct RawAllocator {
  std::function<absl::StatusOr<uint64_t>(size_t)> allocate;
  std::function<void(uint64_t)> free;
};

struct AllocatorStats {
  size_t bytes_in_use = 0;
  size_t bytes_cached = 0;
  uint64_t raw_allocations = 0;  // requests that went to the driver
  uint64_t cache_hits = 0;
};

class CachingAllocator {
 public:
  explicit CachingAllocator(RawAllocator raw) : raw_(std::move(raw)) {}
  ~CachingAllocator();  // returns the cached blocks
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // Sizes are rounded up: to 512 bytes below 1 MiB, to 2 MiB above, so that sizes that differ
  // a little share blocks.
  static size_t RoundSize(size_t nbytes);
  absl::StatusOr<uint64_t> Allocate(size_t nbytes);
  // `ptr` came from Allocate(nbytes).
  void Release(uint64_t ptr, size_t nbytes);
  void EmptyCache();  // the shared cache's blocks (pools keep theirs)
  AllocatorStats stats() const;

  using PoolId = uint64_t;
  // Opens a new pool: Allocate draws for it until ClosePool. One pool is open at a time.
  PoolId OpenPool();
  void ClosePool();
  void RetirePool(PoolId pool);
  // Blocks a pool holds: handed out and free (tests).
  size_t PoolBlocks(PoolId pool) const;

 private:
  using FreeLists = absl::flat_hash_map<size_t, std::vector<uint64_t>>;  // rounded size -> blocks
  struct Pool {
    FreeLists free;
    size_t blocks = 0;  // handed out or free
    bool retired = false;
  };
  static bool TakeFrom(FreeLists& lists, size_t size, uint64_t* ptr);

  RawAllocator raw_;
  mutable std::mutex mu_;
  FreeLists free_;
  absl::flat_hash_map<PoolId, Pool> pools_;
  absl::flat_hash_map<uint64_t, PoolId> pool_of_;  // the blocks that belong to a pool
  PoolId open_pool_ = 0;                            // 0: none
  PoolId next_pool_ = 1;
  AllocatorStats stats_;
};

// The allocator of the device (made on first use; CudaApi::Get() must succeed).
absl::StatusOr<CachingAllocator*> DeviceAllocator();

// --- device tensors ----------------------------------------------------------------------
// A fresh contiguous tensor on the GPU (uninitialised).
absl::StatusOr<Tensor> EmptyOnDevice(absl::Span<const int64_t> shape, DType dtype);
// A copy of a host tensor on the GPU (any strides; the copy is contiguous).
absl::StatusOr<Tensor> ToDevice(const Tensor& host);
// A host copy of a device tensor; a strided one is made contiguous on the device first.
absl::StatusOr<Tensor> ToHost(const Tensor& device);
// Copies `src` (host or device, any strides) into `dst`, a contiguous device tensor of the same
// shape and dtype, in stream order (from the host: the call returns once `src` may change).
absl::Status CopyIntoDevice(const Tensor& src, const Tensor& dst);

}  // namespace pijit::cuda
