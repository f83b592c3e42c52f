#include "kernels/tensor.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace pijit {

size_t ItemSize(DType d) {
  switch (d) {
#define PIJIT_SIZE(e, t, n, s, c) case DType::e: return sizeof(t);
    PIJIT_DTYPES(PIJIT_SIZE)
#undef PIJIT_SIZE
  }
  return 0;
}
const char* DTypeName(DType d) {
  switch (d) {
#define PIJIT_NAME(e, t, n, s, c) case DType::e: return n;
    PIJIT_DTYPES(PIJIT_NAME)
#undef PIJIT_NAME
  }
  return "?";
}
const char* DTypeShortName(DType d) {
  switch (d) {
#define PIJIT_SNAME(e, t, n, s, c) case DType::e: return s;
    PIJIT_DTYPES(PIJIT_SNAME)
#undef PIJIT_SNAME
  }
  return "?";
}

namespace {
constexpr DType b = DType::kBool, u8 = DType::kUInt8, i8 = DType::kInt8, i16 = DType::kInt16,
                i32 = DType::kInt32, i64 = DType::kInt64, f16 = DType::kFloat16,
                bf = DType::kBFloat16, f32 = DType::kFloat32, f64 = DType::kFloat64;
// kPromote[a][b], rows and columns in enum order. The NumPy types follow np.result_type
// (an integer meets a float wide enough to hold it exactly: int16 + float16 -> float32,
// int32 + float32 -> float64); bfloat16 stays bfloat16 with bools and integers and meets
// float16 at float32 (torch, ml_dtypes).
constexpr DType kPromote[kNumDTypes][kNumDTypes] = {
    //         b    u8   i8   i16  i32  i64  f16  bf   f32  f64
    /* b   */ {b,   u8,  i8,  i16, i32, i64, f16, bf,  f32, f64},
    /* u8  */ {u8,  u8,  i16, i16, i32, i64, f16, bf,  f32, f64},
    /* i8  */ {i8,  i16, i8,  i16, i32, i64, f16, bf,  f32, f64},
    /* i16 */ {i16, i16, i16, i16, i32, i64, f32, bf,  f32, f64},
    /* i32 */ {i32, i32, i32, i32, i32, i64, f64, bf,  f64, f64},
    /* i64 */ {i64, i64, i64, i64, i64, i64, f64, bf,  f64, f64},
    /* f16 */ {f16, f16, f16, f32, f64, f64, f16, f32, f32, f64},
    /* bf  */ {bf,  bf,  bf,  bf,  bf,  bf,  f32, bf,  f32, f64},
    /* f32 */ {f32, f32, f32, f32, f64, f64, f32, f32, f32, f64},
    /* f64 */ {f64, f64, f64, f64, f64, f64, f64, f64, f64, f64},
};
}  // namespace

DType PromoteTypes(DType a, DType b) {
  return kPromote[static_cast<int>(a)][static_cast<int>(b)];
}

DType PromoteWithScalar(DType tensor, ScalarKind scalar) {
  switch (scalar) {
    case ScalarKind::kBool: return tensor;
    case ScalarKind::kInt: return tensor == DType::kBool ? DType::kInt64 : tensor;
    case ScalarKind::kFloat: return IsFloating(tensor) ? tensor : DType::kFloat64;
  }
  return tensor;
}

void IntegerRange(DType d, int64_t* lo, int64_t* hi) {
  DispatchDType(d, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      *lo = static_cast<int64_t>(std::numeric_limits<T>::min());
      *hi = static_cast<int64_t>(std::numeric_limits<T>::max());
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

// Large buffers are 2 MiB aligned and backed by transparent huge pages where the kernel
// allows: a fresh 40 MB result then costs ~20 page faults instead of ~10,000.
constexpr size_t kHuge = size_t{2} << 20;

// Recently freed huge-page buffers, reused by the next allocation of the same rounded size.
// glibc maps every 2 MiB-aligned block afresh, and the kernel zeroes each new page: 1.6 ms
// of system time per 16 MB result was measured, as much as a softmax over it takes. The
// cache holds at most kMaxBytes, dropping the least recently freed buffers first.
class HugeBufferCache {
 public:
  static constexpr size_t kMaxBytes = size_t{96} << 20;
  static HugeBufferCache& Get() {
    static HugeBufferCache* cache = new HugeBufferCache;  // lives for the process
    return *cache;
  }
  void* Take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = free_.size(); i-- > 0;) {
      if (free_[i].first != bytes) continue;
      void* p = free_[i].second;
      free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
      held_ -= bytes;
      return p;
    }
    return nullptr;
  }
  void Put(void* p, size_t bytes) {
    std::vector<void*> drop;
    {
      std::lock_guard<std::mutex> lock(mu_);
      free_.emplace_back(bytes, p);
      held_ += bytes;
      while (held_ > kMaxBytes) {
        drop.push_back(free_.front().second);
        held_ -= free_.front().first;
        free_.erase(free_.begin());
      }
    }
    for (void* d : drop) std::free(d);
  }

 private:
  std::mutex mu_;
  std::vector<std::pair<size_t, void*>> free_;  // least recently freed first
  size_t held_ = 0;
};

std::shared_ptr<Storage> Storage::Allocate(size_t nbytes) {
  if (nbytes <= InlineStorage::kMaxBytes) return InlineStorage::Make(nbytes);
  auto s = std::make_shared<Storage>(Private{});
  const size_t align = nbytes >= 4 * kHuge ? kHuge : 64;
  size_t rounded = (nbytes + align - 1) / align * align;
  if (align == kHuge) {
    s->data_ = HugeBufferCache::Get().Take(rounded);
    s->cached_bytes_ = rounded;
  }
  if (s->data_ == nullptr) {
    s->data_ = std::aligned_alloc(align, rounded == 0 ? 64 : rounded);
    // The bindings turn this into MemoryError; kernels never see a null buffer.
    if (s->data_ == nullptr) throw std::bad_alloc();
    if (align == kHuge) madvise(s->data_, rounded, MADV_HUGEPAGE);
  }
  s->nbytes_ = nbytes;
  s->owned_ = true;
  return s;
}

std::shared_ptr<Storage> Storage::Wrap(void* data, size_t nbytes, std::function<void()> release) {
  auto s = std::make_shared<Storage>(Private{});
  s->data_ = data;
  s->nbytes_ = nbytes;
  s->release_ = std::move(release);
  return s;
}

Storage::~Storage() {
  if (owned_ && cached_bytes_ > 0) HugeBufferCache::Get().Put(data_, cached_bytes_);
  else if (owned_) std::free(data_);
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

void CopyInto(const Tensor& src, const Tensor& dst) {
  DispatchDType(src.dtype(), [&](auto s) {
    DispatchDType(dst.dtype(), [&](auto d) {
      StridedCopy<decltype(s), decltype(d)>(src, dst);
    });
  });
}

}  // namespace pijit
