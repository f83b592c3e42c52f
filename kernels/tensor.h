// The tensor runtime: reference-counted storage and strided views over it.
//
// A Tensor is a cheap value (shared storage + dtype + shape + strides + offset). Strides and
// the offset are counted in elements, not bytes. Views (reshape of contiguous data, transpose,
// broadcast) share storage; kernels always write fresh contiguous outputs.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/dtype.h"

namespace pijit {

using Shape = absl::InlinedVector<int64_t, 6>;

// PromoteTypes for ops that report what they cannot mix: the result dtype of `op` on a and b,
// or a TypeError (Unimplemented) naming both where MindSpore refuses the pair (CanPromote).
absl::StatusOr<DType> PromoteOrError(const char* op, DType a, DType b);

// Where a storage's memory lives. Every storage is host memory today; a CUDA backend
// (kernels/cuda/) makes device storages. The guards check it (TENSOR_MATCH), so a graph
// compiled for one device never runs on another's tensors.
enum class Device : uint8_t { kCPU, kCUDA };
const char* DeviceName(Device d);  // "CPU", "GPU": MindSpore's device_target names

class Storage {
  struct Private {};

 public:
  explicit Storage(Private) {}
  // 64-byte aligned, uninitialised. Small buffers share one allocation with their Storage;
  // large ones come from the buffer cache (below) when it holds one of their size.
  static std::shared_ptr<Storage> Allocate(size_t nbytes);
  // Borrow memory owned elsewhere (a NumPy array, a device allocation): `release` runs when
  // the last view dies.
  static std::shared_ptr<Storage> Wrap(void* data, size_t nbytes, std::function<void()> release,
                                       Device device = Device::kCPU);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

 private:
  friend class InlineStorage;
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Device device_ = Device::kCPU;
  std::function<void()> release_;
  bool owned_ = false;
};

// Large buffers (1 MiB and up) released by tensors are kept for the next allocation of the
// same size, up to a bound (256 MiB; PIJIT_BUFFER_CACHE_MB overrides, 0 turns it off): the
// intermediates and results of a compiled graph, or of an eager loop, have the same sizes on
// every call, and a reused buffer costs no page faults and no zeroing by the kernel.
size_t BufferCacheBytes();                   // bytes held for reuse now
void SetBufferCacheLimit(size_t bytes);      // drops what is held beyond the new bound

// Storages allocated on the calling thread so far (Storage::Allocate calls that took fresh
// memory: a planned slot is not counted). Cheap (a thread-local counter); tests use it to show
// that a compiled graph's steady-state call allocates only its outputs.
uint64_t StorageAllocations();

// Planned allocation (graph/memory_plan.h). While a PlannedSlot is in scope on a thread, the
// first Storage::Allocate on that thread of exactly the slot's size returns the slot's
// storage instead of fresh memory. The executor opens one around each planned node's kernel,
// so that the kernel writes its result where the plan put it, with no copy. A kernel that
// allocates a same-sized scratch buffer before its result puts the scratch there instead:
// harmless, as the slot is free for the node's whole run, and the executor checks where the
// result landed. Slots nest (the inner one hides the outer until it closes); one made
// without a storage only hides the enclosing slot (a graph call made while another call's
// slot is open on the same thread must not take it). Not movable.
class PlannedSlot {
 public:
  PlannedSlot();
  explicit PlannedSlot(const std::shared_ptr<Storage>& storage);
  ~PlannedSlot();
  PlannedSlot(const PlannedSlot&) = delete;
  PlannedSlot& operator=(const PlannedSlot&) = delete;
  bool taken() const { return taken_; }

 private:
  friend class Storage;
  const std::shared_ptr<Storage>* storage_;  // null: a barrier
  PlannedSlot** top_;                        // this thread's innermost open slot
  PlannedSlot* outer_;
  bool taken_ = false;
};

Shape ContiguousStrides(absl::Span<const int64_t> shape);
int64_t NumElements(absl::Span<const int64_t> shape);
std::string ShapeToString(absl::Span<const int64_t> shape);  // "(2, 3)"

class Tensor {
 public:
  Tensor() = default;
  // A fresh contiguous tensor (uninitialised).
  static Tensor Empty(absl::Span<const int64_t> shape, DType dtype);
  static Tensor View(std::shared_ptr<Storage> storage, DType dtype, Shape shape, Shape strides,
                     int64_t offset);
  template <typename T>
  static Tensor Scalar(T value) {
    Tensor t = Empty({}, DTypeOf<T>::value);
    *t.data<T>() = value;
    return t;
  }

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  // Kept beside the dtype (its storage's, copied when the tensor is made): the guards read it
  // on every call, and the storage is another cache line.
  Device device() const { return device_; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  int64_t offset() const { return offset_; }
  int64_t ndim() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numel() const { return NumElements(shape_); }
  size_t itemsize() const { return ItemSize(dtype_); }
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }

  void* raw_data() const {
    return static_cast<char*>(storage_->data()) + offset_ * static_cast<int64_t>(itemsize());
  }
  template <typename T>
  T* data() const { return static_cast<T*>(raw_data()); }

  // This tensor if contiguous, else a contiguous copy.
  Tensor Contiguous() const;

 private:
  std::shared_ptr<Storage> storage_;
  DType dtype_ = DType::kFloat32;
  Device device_ = Device::kCPU;
  Shape shape_;
  Shape strides_;
  int64_t offset_ = 0;
};

// Copies `src` (any strides) into the contiguous tensor `dst` of the same shape, converting
// the element type if the dtypes differ.
void CopyInto(const Tensor& src, const Tensor& dst);

}  // namespace pijit
