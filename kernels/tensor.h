// The tensor runtime: reference-counted storage and strided views over it.
//
// A Tensor is a cheap value (shared storage + dtype + shape + strides + offset). Strides and
// the offset are counted in elements, not bytes. Views (reshape of contiguous data, transpose,
// broadcast) share storage; kernels always write fresh contiguous outputs.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/dtype.h"

namespace pijit {

using Shape = absl::InlinedVector<int64_t, 6>;

class Storage {
  struct Private {};

 public:
  explicit Storage(Private) {}
  // 64-byte aligned, uninitialised. Small buffers share one allocation with their Storage.
  static std::shared_ptr<Storage> Allocate(size_t nbytes);
  // Borrow memory owned elsewhere (a NumPy array): `release` runs when the last view dies.
  static std::shared_ptr<Storage> Wrap(void* data, size_t nbytes, std::function<void()> release);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }

 private:
  friend class InlineStorage;
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  std::function<void()> release_;
  bool owned_ = false;
  size_t cached_bytes_ = 0;  // a huge-page buffer of this size, returned to the cache when freed
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
  Shape shape_;
  Shape strides_;
  int64_t offset_ = 0;
};

// Copies `src` (any strides) into the contiguous tensor `dst` of the same shape, converting
// the element type if the dtypes differ.
void CopyInto(const Tensor& src, const Tensor& dst);

}  // namespace pijit
