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
  void EmptyCache();
  AllocatorStats stats() const;

 private:
  RawAllocator raw_;
  mutable std::mutex mu_;
  absl::flat_hash_map<size_t, std::vector<uint64_t>> free_;  // rounded size -> blocks
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

}  // namespace pijit::cuda
