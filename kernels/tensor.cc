#include "kernels/tensor.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <vector>
#include <new>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kernels/flags.h"

namespace pijit {

const char* DeviceName(Device d) { return d == Device::kCUDA ? "GPU" : "CPU"; }

namespace {
// Each dtype's size and names, indexed by its enumerator (PIJIT_DTYPES lists them in order).
struct DTypeInfo {
  size_t size;
  const char* name;
  const char* short_name;
};
constexpr DTypeInfo kDTypeInfo[] = {
#define PIJIT_INFO(e, t, n, s, c) {sizeof(t), n, s},
    PIJIT_DTYPES(PIJIT_INFO)
#undef PIJIT_INFO
};
static_assert(sizeof(kDTypeInfo) / sizeof(kDTypeInfo[0]) == kNumDTypes);
// A value outside the enumeration has size 0 and the name "?".
const DTypeInfo& InfoOf(DType d) {
  static constexpr DTypeInfo kUnknown{0, "?", "?"};
  const size_t i = static_cast<size_t>(d);
  return i < static_cast<size_t>(kNumDTypes) ? kDTypeInfo[i] : kUnknown;
}
}  // namespace

size_t ItemSize(DType d) { return InfoOf(d).size; }
const char* DTypeName(DType d) { return InfoOf(d).name; }
const char* DTypeShortName(DType d) { return InfoOf(d).short_name; }

namespace {
constexpr DType b = DType::kBool, u8 = DType::kUInt8, i8 = DType::kInt8, i16 = DType::kInt16,
                i32 = DType::kInt32, i64 = DType::kInt64, f16 = DType::kFloat16,
                bf = DType::kBFloat16, f32 = DType::kFloat32, f64 = DType::kFloat64;
constexpr int kFirstWideUnsigned = static_cast<int>(DType::kUInt16);
// kPromote[a][b] for the dtypes before the wide unsigned ones, in enum order: MindSpore's rules
// (torch's too). Within a category (bool < integers < floats) the wider type wins, uint8 meets
// int8 at int16; across categories the higher category's type wins whatever its width
// (int32 + float32 -> float32, int64 + float16 -> float16); float16 and bfloat16 meet at
// float32. The wide unsigned types meet only themselves, bool and the floats (CanPromote).
constexpr DType kPromote[kFirstWideUnsigned][kFirstWideUnsigned] = {
    //         b    u8   i8   i16  i32  i64  f16  bf   f32  f64
    /* b   */ {b,   u8,  i8,  i16, i32, i64, f16, bf,  f32, f64},
    /* u8  */ {u8,  u8,  i16, i16, i32, i64, f16, bf,  f32, f64},
    /* i8  */ {i8,  i16, i8,  i16, i32, i64, f16, bf,  f32, f64},
    /* i16 */ {i16, i16, i16, i16, i32, i64, f16, bf,  f32, f64},
    /* i32 */ {i32, i32, i32, i32, i32, i64, f16, bf,  f32, f64},
    /* i64 */ {i64, i64, i64, i64, i64, i64, f16, bf,  f32, f64},
    /* f16 */ {f16, f16, f16, f16, f16, f16, f16, f32, f32, f64},
    /* bf  */ {bf,  bf,  bf,  bf,  bf,  bf,  f32, bf,  f32, f64},
    /* f32 */ {f32, f32, f32, f32, f32, f32, f32, f32, f32, f64},
    /* f64 */ {f64, f64, f64, f64, f64, f64, f64, f64, f64, f64},
};
}  // namespace

namespace {
// The complex type that holds both: complex128 where either side has float64's precision
// (float64 + complex64 -> complex128, as MindSpore and torch), else complex64 (an integer or a
// narrower float with complex64 -> complex64).
DType PromoteComplex(DType a, DType b) {
  for (DType d : {a, b})
    if (d == DType::kComplex128 || d == DType::kFloat64) return DType::kComplex128;
  return DType::kComplex64;
}
}  // namespace

DType PromoteTypes(DType a, DType b) {
  if (IsComplex(a) || IsComplex(b)) return PromoteComplex(a, b);
  if (IsWideUnsigned(a) || IsWideUnsigned(b)) {
    if (a == DType::kBool || IsFloating(b)) return b;
    return a;  // a == b, b bool or floating, or a pair CanPromote refuses (callers check it)
  }
  return kPromote[static_cast<int>(a)][static_cast<int>(b)];
}

absl::StatusOr<DType> PromoteOrError(const char* op, DType a, DType b) {
  if (!CanPromote(a, b)) {
    return absl::UnimplementedError(absl::StrFormat(
        "%s: %s and %s cannot be mixed; uint16, uint32 and uint64 combine only with themselves, "
        "Bool and floating-point types: cast one operand first (e.g. .astype(pijit.int64))",
        op, DTypeName(a), DTypeName(b)));
  }
  return PromoteTypes(a, b);
}

DType PromoteWithScalar(DType tensor, ScalarKind scalar) {
  switch (scalar) {
    case ScalarKind::kBool: return tensor;
    case ScalarKind::kInt: return tensor == DType::kBool ? DType::kInt64 : tensor;
    // An integer tensor with a Python float computes in float32 (MindSpore's default float).
    case ScalarKind::kFloat:
      return IsFloating(tensor) || IsComplex(tensor) ? tensor : DType::kFloat32;
    // A Python complex keeps a complex tensor's dtype, makes a float64 one complex128 and any
    // other complex64 (MindSpore's default float made complex).
    case ScalarKind::kComplex:
      if (IsComplex(tensor)) return tensor;
      return tensor == DType::kFloat64 ? DType::kComplex128 : DType::kComplex64;
  }
  return tensor;
}

void IntegerRange(DType d, int64_t* lo, int64_t* hi) {
  DispatchDType(d, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      *lo = static_cast<int64_t>(std::numeric_limits<T>::min());
      // uint64's upper half is beyond int64: Python integers there are refused as too large.
      *hi = static_cast<int64_t>(std::min<uint64_t>(std::numeric_limits<T>::max(),
                                                    std::numeric_limits<int64_t>::max()));
    } else {
      *lo = std::numeric_limits<int64_t>::min();
      *hi = std::numeric_limits<int64_t>::max();
    }
  });
}

// A Storage whose buffer is inside it: make_shared puts it, the Storage and the reference
// counts in one ordinary allocation. For the small results of eager ops this halves the
// allocations and avoids memalign, which costs several times what malloc does.
class InlineStorage : public Storage {
 public:
  static constexpr size_t kMaxBytes = 256;
  InlineStorage() : Storage(Private{}) {}
  static std::shared_ptr<Storage> Make(size_t nbytes) {
    auto s = std::make_shared<InlineStorage>();
    const auto addr = reinterpret_cast<uintptr_t>(s->bytes_);
    s->data_ = reinterpret_cast<void*>((addr + 63) / 64 * 64);
    s->nbytes_ = nbytes;
    return s;
  }

 private:
  unsigned char bytes_[kMaxBytes + 64];  // room to align the start to 64 bytes
};

namespace {

// Large buffers are 2 MiB aligned and backed by transparent huge pages where the kernel
// allows: a fresh 40 MB result then costs ~20 page faults instead of ~10,000.
constexpr size_t kHuge = size_t{2} << 20;
constexpr size_t kCachedMin = size_t{1} << 20;

size_t AlignFor(size_t nbytes) { return nbytes >= 4 * kHuge ? kHuge : 64; }
size_t RoundedSize(size_t nbytes) {
  const size_t align = AlignFor(nbytes);
  const size_t rounded = (nbytes + align - 1) / align * align;
  return rounded == 0 ? 64 : rounded;
}

// Released large buffers by rounded size (see BufferCacheBytes in tensor.h).
class BufferCache {
 public:
  BufferCache() {
    if (auto bytes = flags::BufferCacheBytes()) limit_ = *bytes;
  }
  void* Take(size_t rounded) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(rounded);
    if (it == free_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    held_ -= rounded;
    return p;
  }
  // Keeps `p` for reuse; false (and the caller frees it) when that would pass the bound.
  bool Give(void* p, size_t rounded) {
    std::lock_guard<std::mutex> lock(mu_);
    if (held_ + rounded > limit_) return false;
    free_[rounded].push_back(p);
    held_ += rounded;
    return true;
  }
  size_t held() {
    std::lock_guard<std::mutex> lock(mu_);
    return held_;
  }
  void SetLimit(size_t bytes) {
    std::vector<void*> drop;
    {
      std::lock_guard<std::mutex> lock(mu_);
      limit_ = bytes;
      for (auto& [size, list] : free_) {
        while (held_ > limit_ && !list.empty()) {
          drop.push_back(list.back());
          list.pop_back();
          held_ -= size;
        }
      }
    }
    for (void* p : drop) std::free(p);
  }

 private:
  std::mutex mu_;
  absl::flat_hash_map<size_t, std::vector<void*>> free_;
  size_t held_ = 0;
  size_t limit_ = size_t{256} << 20;
};

BufferCache& Buffers() {
  static auto* cache = new BufferCache();  // lives for the process: tensors may outlive statics
  return *cache;
}

}  // namespace

size_t BufferCacheBytes() { return Buffers().held(); }
void SetBufferCacheLimit(size_t bytes) { Buffers().SetLimit(bytes); }

namespace {
// One thread-local block, so that an allocation reads it with one thread-local access.
struct ThreadAllocations {
  PlannedSlot* planned = nullptr;  // the innermost open slot of this thread
  uint64_t count = 0;
};
thread_local ThreadAllocations t_allocations;
}  // namespace

uint64_t StorageAllocations() { return t_allocations.count; }

PlannedSlot::PlannedSlot() : storage_(nullptr), top_(&t_allocations.planned), outer_(*top_) {
  *top_ = this;
}

PlannedSlot::PlannedSlot(const std::shared_ptr<Storage>& storage)
    : storage_(&storage), top_(&t_allocations.planned), outer_(*top_) {
  *top_ = this;
}

PlannedSlot::~PlannedSlot() { *top_ = outer_; }

std::shared_ptr<Storage> Storage::Allocate(size_t nbytes) {
  ThreadAllocations& t = t_allocations;
  if (PlannedSlot* p = t.planned;
      p != nullptr && p->storage_ != nullptr && !p->taken_ && (*p->storage_)->nbytes() == nbytes) {
    p->taken_ = true;
    return *p->storage_;
  }
  ++t.count;
  if (nbytes <= InlineStorage::kMaxBytes) return InlineStorage::Make(nbytes);
  auto s = std::make_shared<Storage>(Private{});
  const size_t align = AlignFor(nbytes), rounded = RoundedSize(nbytes);
  if (nbytes >= kCachedMin) s->data_ = Buffers().Take(rounded);
  if (s->data_ == nullptr) {
    s->data_ = std::aligned_alloc(align, rounded);
    // The bindings turn this into MemoryError; kernels never see a null buffer.
    if (s->data_ == nullptr) throw std::bad_alloc();
    if (align == kHuge) madvise(s->data_, rounded, MADV_HUGEPAGE);
  }
  s->nbytes_ = nbytes;
  s->owned_ = true;
  return s;
}

std::shared_ptr<Storage> Storage::Wrap(void* data, size_t nbytes, std::function<void()> release,
                                       Device device) {
  auto s = std::make_shared<Storage>(Private{});
  s->device_ = device;
  s->data_ = data;
  s->nbytes_ = nbytes;
  s->release_ = std::move(release);
  return s;
}

Storage::~Storage() {
  if (owned_ && !(nbytes_ >= kCachedMin && Buffers().Give(data_, RoundedSize(nbytes_)))) {
    std::free(data_);
  }
  if (release_) release_();
}

Shape ContiguousStrides(absl::Span<const int64_t> shape) {
  Shape strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

int64_t NumElements(absl::Span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string ShapeToString(absl::Span<const int64_t> shape) {
  if (shape.size() == 1) return absl::StrCat("(", shape[0], ",)");
  return absl::StrCat("(", absl::StrJoin(shape, ", "), ")");
}

Tensor Tensor::Empty(absl::Span<const int64_t> shape, DType dtype) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = Shape(shape.begin(), shape.end());
  t.strides_ = ContiguousStrides(shape);
  t.storage_ = Storage::Allocate(static_cast<size_t>(NumElements(shape)) * ItemSize(dtype));
  return t;
}

Tensor Tensor::View(std::shared_ptr<Storage> storage, DType dtype, Shape shape, Shape strides,
                    int64_t offset) {
  Tensor t;
  t.storage_ = std::move(storage);
  t.device_ = t.storage_ ? t.storage_->device() : Device::kCPU;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.strides_ = std::move(strides);
  t.offset_ = offset;
  return t;
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] == 1) continue;
    if (strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

Tensor Tensor::Contiguous() const {
  if (is_contiguous()) return *this;
  Tensor out = Empty(shape_, dtype_);
  CopyInto(*this, out);
  return out;
}

namespace {
template <typename S, typename D>
void StridedCopy(const Tensor& src, const Tensor& dst) {
  const S* s = src.data<S>();
  D* d = dst.data<D>();
  const int64_t n = src.numel();
  if (n == 0) return;
  const int64_t nd = src.ndim();
  if (src.is_contiguous()) {
    for (int64_t i = 0; i < n; ++i) d[i] = static_cast<D>(s[i]);
    return;
  }
  const auto& shape = src.shape();
  const auto& st = src.strides();
  if (nd >= 2 && st[nd - 1] != 1 && shape[nd - 1] > 1 && shape[nd - 2] > 1) {
    // A transposed last pair of axes: copy 2-D slices in square tiles, so that both the
    // strided reads and the contiguous writes stay in cache.
    constexpr int64_t kTile = 32;
    const int64_t rows = shape[nd - 2], cols = shape[nd - 1];
    const int64_t rs = st[nd - 2], cs = st[nd - 1];
    Shape idx(nd - 2, 0);
    for (int64_t base = 0; base < n; base += rows * cols) {
      int64_t off = 0;
      for (int64_t k = 0; k + 2 < nd; ++k) off += idx[k] * st[k];
      for (int64_t r0 = 0; r0 < rows; r0 += kTile)
        for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
          const int64_t r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
          for (int64_t r = r0; r < r1; ++r)
            for (int64_t c = c0; c < c1; ++c)
              d[base + r * cols + c] = static_cast<D>(s[off + r * rs + c * cs]);
        }
      for (int64_t k = nd - 3; k >= 0; --k) {
        if (++idx[k] < shape[k]) break;
        idx[k] = 0;
      }
    }
    return;
  }
  // Walk the source with an index counter; the innermost axis is a strided run.
  Shape idx(nd, 0);
  const int64_t inner = nd ? shape[nd - 1] : 1;
  const int64_t inner_stride = nd ? st[nd - 1] : 0;
  for (int64_t base = 0; base < n; base += inner) {
    int64_t off = 0;
    for (int64_t k = 0; k + 1 < nd; ++k) off += idx[k] * st[k];
    for (int64_t i = 0; i < inner; ++i) d[base + i] = static_cast<D>(s[off + i * inner_stride]);
    for (int64_t k = nd - 2; k >= 0; --k) {
      if (++idx[k] < shape[k]) break;
      idx[k] = 0;
    }
  }
}
}  // namespace

namespace {
// Conversions that involve a complex type. Real to complex gives a zero imaginary part; complex
// to real keeps the real part (MindSpore's Cast, NumPy's astype); to bool, whether either part is
// non-zero (NumPy).
template <typename S, typename D>
D ConvertComplex(S s) {
  if constexpr (std::is_same_v<S, D>) {
    return s;
  } else if constexpr (kIsComplex<S> && kIsComplex<D>) {
    return D(static_cast<typename D::value_type>(s.real()),
             static_cast<typename D::value_type>(s.imag()));
  } else if constexpr (kIsComplex<S>) {
    if constexpr (std::is_same_v<D, bool>) return s.real() != 0 || s.imag() != 0;
    else return static_cast<D>(s.real());
  } else if constexpr (!kIsComplex<D>) {
    return static_cast<D>(s);  // real to real: CopyInto's own loop takes these
  } else {
    using Part = typename D::value_type;
    if constexpr (kIsHalf<S>) return D(static_cast<Part>(static_cast<float>(s)), Part(0));
    else return D(static_cast<Part>(s), Part(0));
  }
}
// Strided walk over `src` (any strides) writing `dst` contiguously.
template <typename S, typename D>
void StridedConvert(const Tensor& src, const Tensor& dst) {
  const S* s = src.data<S>();
  D* d = dst.data<D>();
  const int64_t n = src.numel(), nd = src.ndim();
  Shape idx(nd, 0);
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    d[i] = ConvertComplex<S, D>(s[off]);
    for (int64_t k = nd - 1; k >= 0; --k) {
      off += src.strides()[k];
      if (++idx[k] < src.shape()[k]) break;
      off -= idx[k] * src.strides()[k];
      idx[k] = 0;
    }
  }
}
template <typename S>
void ConvertFrom(const Tensor& src, const Tensor& dst) {
  if (IsComplex(dst.dtype())) {
    DispatchComplex(dst.dtype(), [&](auto d) { StridedConvert<S, decltype(d)>(src, dst); });
  } else {
    DispatchDType(dst.dtype(), [&](auto d) { StridedConvert<S, decltype(d)>(src, dst); });
  }
}
}  // namespace

void CopyInto(const Tensor& src, const Tensor& dst) {
  if (IsComplex(src.dtype())) {
    DispatchComplex(src.dtype(), [&](auto s) { ConvertFrom<decltype(s)>(src, dst); });
    return;
  }
  if (IsComplex(dst.dtype())) {
    DispatchDType(src.dtype(), [&](auto s) { ConvertFrom<decltype(s)>(src, dst); });
    return;
  }
  DispatchDType(src.dtype(), [&](auto s) {
    DispatchDType(dst.dtype(), [&](auto d) {
      StridedCopy<decltype(s), decltype(d)>(src, dst);
    });
  });
}

}  // namespace pijit
