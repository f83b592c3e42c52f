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

absl::StatusOr<uint64_t> CachingAllocator::Allocate(size_t nbytes) {
  const size_t size = RoundSize(nbytes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(size);
    if (it != free_.end() && !it->second.empty()) {
      const uint64_t ptr = it->second.back();
      it->second.pop_back();
      stats_.bytes_cached -= size;
      stats_.bytes_in_use += size;
      ++stats_.cache_hits;
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
  return ptr;
}

void CachingAllocator::Release(uint64_t ptr, size_t nbytes) {
  const size_t size = RoundSize(nbytes);
  std::lock_guard<std::mutex> lock(mu_);
  free_[size].push_back(ptr);
  stats_.bytes_in_use -= size;
  stats_.bytes_cached += size;
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
        *api, api->cuMemcpyHtoD(reinterpret_cast<CUdeviceptr>(out.raw_data()), src.raw_data(), nbytes),
        "cuMemcpyHtoD"));
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
        *api, api->cuMemcpyDtoH(out.raw_data(), reinterpret_cast<CUdeviceptr>(src.raw_data()), nbytes),
        "cuMemcpyDtoH"));
  }
  return out;
}

}  // namespace pijit::cuda
