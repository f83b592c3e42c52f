#include "kernels/tensor.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <new>

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

DType PromoteTypes(DType a, DType b) {
  if (a == b) return a;
  auto rank = [](DType d) { return static_cast<int>(d); };
  DType hi = rank(a) > rank(b) ? a : b;
  DType lo = rank(a) > rank(b) ? b : a;
  // int32/int64 with float32 needs float64 to hold every integer exactly (NumPy's rule).
  if (hi == DType::kFloat32 && IsInteger(lo)) return DType::kFloat64;
  return hi;
}

DType PromoteWithScalar(DType tensor, ScalarKind scalar) {
  switch (scalar) {
    case ScalarKind::kBool: return tensor;
    case ScalarKind::kInt: return tensor == DType::kBool ? DType::kInt64 : tensor;
    case ScalarKind::kFloat: return IsFloating(tensor) ? tensor : DType::kFloat64;
  }
  return tensor;
}

std::shared_ptr<Storage> Storage::Allocate(size_t nbytes) {
  auto s = std::make_shared<Storage>(Private{});
  // Large buffers are 2 MiB aligned and backed by transparent huge pages where the kernel
  // allows: a fresh 40 MB result then costs ~20 page faults instead of ~10,000.
  constexpr size_t kHuge = size_t{2} << 20;
  const size_t align = nbytes >= 4 * kHuge ? kHuge : 64;
  size_t rounded = (nbytes + align - 1) / align * align;
  s->data_ = std::aligned_alloc(align, rounded == 0 ? 64 : rounded);
  // The bindings turn this into MemoryError; kernels never see a null buffer.
  if (s->data_ == nullptr) throw std::bad_alloc();
  if (align == kHuge) madvise(s->data_, rounded, MADV_HUGEPAGE);
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
  if (owned_) std::free(data_);
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
  // Walk the source with an index counter; the innermost axis is a strided run.
  Shape idx(nd, 0);
  const auto& shape = src.shape();
  const auto& st = src.strides();
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
