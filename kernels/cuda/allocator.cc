// The device allocator and host/device copies (kernels/cuda/allocator.h).
#include "kernels/cuda/allocator.h"

#include "absl/strings/str_format.h"
#include "kernels/cuda/cuda_api.h"
#include "kernels/cuda/device_ops.h"
#include "kernels/errors.h"

namespace pijit::cuda {

size_t CachingAllocator::RoundSize(size_t nbytes) {
  constexpr size_t kSmall = 512, kLarge = size_t{2} << 20, kSmallLimit = size_t{1} << 20;
  if (nbytes == 0) nbytes = 1;
  const size_t unit = nbytes < kSmallLimit ? kSmall : kLarge;
  return (nbytes + unit - 1) / unit * unit;
}

CachingAllocator::~CachingAllocator() { EmptyCache(); }

bool CachingAllocator::TakeFrom(FreeLists& lists, size_t size, uint64_t* ptr) {
  auto it = lists.find(size);
  if (it == lists.end() || it->second.empty()) return false;
  *ptr = it->second.back();
  it->second.pop_back();
  return true;
}

absl::StatusOr<uint64_t> CachingAllocator::Allocate(size_t nbytes) {
  const size_t size = RoundSize(nbytes);
  PoolId pool = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pool = open_pool_;
    uint64_t ptr = 0;
    // An open pool's own free blocks first, then the shared cache's.
    if (pool && TakeFrom(pools_[pool].free, size, &ptr)) {
      stats_.bytes_in_use += size;
      ++stats_.cache_hits;
      return ptr;
    }
    if (TakeFrom(free_, size, &ptr)) {
      stats_.bytes_cached -= size;
      stats_.bytes_in_use += size;
      ++stats_.cache_hits;
      if (pool) {
        pool_of_[ptr] = pool;
        ++pools_[pool].blocks;
      }
      return ptr;
    }
  }
  absl::StatusOr<uint64_t> ptr = raw_.allocate(size);
  if (!ptr.ok() && absl::IsResourceExhausted(ptr.status())) {
    EmptyCache();
    ptr = raw_.allocate(size);
  }
  if (!ptr.ok()) return ptr.status();
  std::lock_guard<std::mutex> lock(mu_);
  stats_.bytes_in_use += size;
  ++stats_.raw_allocations;
  if (pool) {
    pool_of_[*ptr] = pool;
    ++pools_[pool].blocks;
  }
  return ptr;
}

void CachingAllocator::Release(uint64_t ptr, size_t nbytes) {
  const size_t size = RoundSize(nbytes);
  std::lock_guard<std::mutex> lock(mu_);
  stats_.bytes_in_use -= size;
  if (auto owner = pool_of_.find(ptr); owner != pool_of_.end()) {
    auto pool = pools_.find(owner->second);
    if (!pool->second.retired) {
      pool->second.free[size].push_back(ptr);  // reserved for its graph
      return;
    }
    pool_of_.erase(owner);
    if (--pool->second.blocks == 0) pools_.erase(pool);
  }
  free_[size].push_back(ptr);
  stats_.bytes_cached += size;
}

CachingAllocator::PoolId CachingAllocator::OpenPool() {
  std::lock_guard<std::mutex> lock(mu_);
  open_pool_ = next_pool_++;
  pools_[open_pool_];
  return open_pool_;
}

void CachingAllocator::ClosePool() {
  std::lock_guard<std::mutex> lock(mu_);
  open_pool_ = 0;
}

void CachingAllocator::RetirePool(PoolId id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (open_pool_ == id) open_pool_ = 0;
  auto pool = pools_.find(id);
  if (pool == pools_.end()) return;
  for (auto& [size, ptrs] : pool->second.free) {
    for (uint64_t p : ptrs) {
      pool_of_.erase(p);
      free_[size].push_back(p);
      stats_.bytes_cached += size;
      --pool->second.blocks;
    }
  }
  pool->second.free.clear();
  pool->second.retired = true;
  if (pool->second.blocks == 0) pools_.erase(pool);
}

size_t CachingAllocator::PoolBlocks(PoolId id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto pool = pools_.find(id);
  return pool == pools_.end() ? 0 : pool->second.blocks;
}

void CachingAllocator::EmptyCache() {
  absl::flat_hash_map<size_t, std::vector<uint64_t>> blocks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    blocks.swap(free_);
    stats_.bytes_cached = 0;
  }
  for (auto& [size, ptrs] : blocks)
    for (uint64_t p : ptrs) raw_.free(p);
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

absl::StatusOr<CachingAllocator*> DeviceAllocator() {
  PIJIT_ASSIGN_OR_RETURN(const CudaApi* api, CudaApi::Get());
  // Lives for the process: tensors freed during exit still return their blocks to it.
  static CachingAllocator* allocator = new CachingAllocator(RawAllocator{
      [api](size_t n) -> absl::StatusOr<uint64_t> {
        CUdeviceptr p = 0;
        PIJIT_RETURN_IF_ERROR(DriverStatus(*api, api->cuMemAlloc(&p, n), "cuMemAlloc"));
        return static_cast<uint64_t>(p);
      },
      [api](uint64_t p) { api->cuMemFree(static_cast<CUdeviceptr>(p)); }});
  return allocator;
}

absl::StatusOr<Tensor> EmptyOnDevice(absl::Span<const int64_t> shape, DType dtype) {
  PIJIT_ASSIGN_OR_RETURN(CachingAllocator* allocator, DeviceAllocator());
  const size_t nbytes = static_cast<size_t>(NumElements(shape)) * ItemSize(dtype);
  PIJIT_ASSIGN_OR_RETURN(const uint64_t ptr, allocator->Allocate(nbytes));
  auto storage = Storage::Wrap(
      reinterpret_cast<void*>(ptr), nbytes, [allocator, ptr, nbytes] { allocator->Release(ptr, nbytes); },
      Device::kCUDA);
  return Tensor::View(std::move(storage), dtype, Shape(shape.begin(), shape.end()),
                      ContiguousStrides(shape), 0);
}

absl::StatusOr<Tensor> ToDevice(const Tensor& host) {
  if (host.device() != Device::kCPU) {
    return absl::InvalidArgumentError("ToDevice: the tensor is on the GPU already");
  }
  PIJIT_ASSIGN_OR_RETURN(const CudaApi* api, CudaApi::Get());
  const Tensor src = host.Contiguous();
  PIJIT_ASSIGN_OR_RETURN(Tensor out, EmptyOnDevice(src.shape(), src.dtype()));
  const size_t nbytes = static_cast<size_t>(src.numel()) * src.itemsize();
  if (nbytes) {
    PIJIT_RETURN_IF_ERROR(DriverStatus(
        *api, api->cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(out.raw_data()), src.raw_data(), nbytes,
                                     api->stream),
        "cuMemcpyHtoDAsync"));
  }
  return out;
}

absl::StatusOr<Tensor> ToHost(const Tensor& device) {
  if (device.device() != Device::kCUDA) {
    return absl::InvalidArgumentError("ToHost: the tensor is not on the GPU");
  }
  PIJIT_ASSIGN_OR_RETURN(const CudaApi* api, CudaApi::Get());
  Tensor src = device;
  if (!src.is_contiguous()) {
    PIJIT_ASSIGN_OR_RETURN(src, DeviceContiguous(device));
  }
  Tensor out = Tensor::Empty(src.shape(), src.dtype());
  const size_t nbytes = static_cast<size_t>(src.numel()) * src.itemsize();
  if (nbytes) {
    PIJIT_RETURN_IF_ERROR(DriverStatus(
        *api, api->cuMemcpyDtoHAsync(out.raw_data(), reinterpret_cast<CUdeviceptr>(src.raw_data()), nbytes,
                                     api->stream),
        "cuMemcpyDtoHAsync"));
    // Into pageable memory the copy is done when the call returns; the wait says so outright.
    PIJIT_RETURN_IF_ERROR(DriverStatus(*api, api->cuStreamSynchronize(api->stream), "cuStreamSynchronize"));
  }
  return out;
}

absl::Status CopyIntoDevice(const Tensor& src, const Tensor& dst) {
  if (dst.device() != Device::kCUDA || !dst.is_contiguous() || src.shape() != dst.shape() ||
      src.dtype() != dst.dtype()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "copy into a GPU tensor: expects a contiguous GPU destination of the source's shape and dtype "
        "(source %s%s on the %s, destination %s%s)", DTypeName(src.dtype()), ShapeToString(src.shape()),
        DeviceName(src.device()), DTypeName(dst.dtype()), ShapeToString(dst.shape())));
  }
  PIJIT_ASSIGN_OR_RETURN(const CudaApi* api, CudaApi::Get());
  const size_t nbytes = static_cast<size_t>(dst.numel()) * dst.itemsize();
  if (nbytes == 0) return absl::OkStatus();
  const CUdeviceptr to = reinterpret_cast<CUdeviceptr>(dst.raw_data());
  if (src.device() == Device::kCPU) {
    const Tensor host = src.Contiguous();
    return DriverStatus(*api, api->cuMemcpyHtoDAsync(to, host.raw_data(), nbytes, api->stream),
                        "cuMemcpyHtoDAsync");
  }
  Tensor from = src;
  if (!from.is_contiguous()) {
    PIJIT_ASSIGN_OR_RETURN(from, DeviceContiguous(src));
  }
  return DriverStatus(*api, api->cuMemcpyDtoDAsync(to, reinterpret_cast<CUdeviceptr>(from.raw_data()), nbytes,
                                                   api->stream),
                      "cuMemcpyDtoDAsync");
}

}  // namespace pijit::cuda
