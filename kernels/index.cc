// Basic indexing (ints, slices, None, Ellipsis): a strided view, as NumPy's basic indexing.
#include <cstring>

#include "kernels/errors.h"
#include "kernels/index_resolve.h"
#include "kernels/ops.h"

namespace pijit {

Shape EncodeIndex(absl::Span<const IndexItem> items) {
  Shape out;
  for (const IndexItem& it : items) out.insert(out.end(), {it.kind, it.start, it.stop, it.step});
  return out;
}

namespace {

// Mirrors PySlice_AdjustIndices (Objects/sliceobject.c) with omitted bounds as kNone.
int64_t AdjustSlice(int64_t len, int64_t* start, int64_t* stop, int64_t step) {
  const int64_t none = IndexItem::kNone;
  if (step > 0) {
    *start = *start == none ? 0 : (*start < 0 ? std::max<int64_t>(*start + len, 0) : std::min(*start, len));
    *stop = *stop == none ? len : (*stop < 0 ? std::max<int64_t>(*stop + len, 0) : std::min(*stop, len));
    return *stop > *start ? (*stop - *start - 1) / step + 1 : 0;
  }
  *start = *start == none ? len - 1
                          : (*start < 0 ? std::max<int64_t>(*start + len, -1) : std::min(*start, len - 1));
  *stop = *stop == none ? -1 : (*stop < 0 ? std::max<int64_t>(*stop + len, -1) : std::min(*stop, len - 1));
  return *stop < *start ? (*start - *stop - 1) / (-step) + 1 : 0;
}

}  // namespace

absl::StatusOr<IndexView> ResolveIndex(absl::Span<const int64_t> shape,
                                  absl::Span<const int64_t> strides,
                                  absl::Span<const int64_t> enc) {
  if (enc.size() % 4 != 0) return absl::InternalError("index: malformed index encoding");
  const int64_t nd = static_cast<int64_t>(shape.size());
  const size_t n = enc.size() / 4;
  int64_t consumed = 0, ellipses = 0;
  for (size_t i = 0; i < n; ++i) {
    const int64_t kind = enc[4 * i];
    if (kind == IndexItem::kInt || kind == IndexItem::kSlice) ++consumed;
    if (kind == IndexItem::kEllipsis) ++ellipses;
    if (kind == IndexItem::kArray) {
      return absl::InternalError("index: an index array reached basic indexing");
    }
  }
  if (ellipses > 1) {
    return absl::NotFoundError("index: an index can only have a single ellipsis ('...')");
  }
  if (consumed > nd) {
    return absl::NotFoundError(absl::StrFormat(
        "index: too many indices for a tensor of dimension %d (shape %s): %d were indexed", nd,
        ShapeToString(shape), consumed));
  }
  IndexView v;
  int64_t d = 0;
  auto keep = [&](int64_t count) {
    for (int64_t k = 0; k < count; ++k, ++d) {
      v.shape.push_back(shape[d]);
      v.strides.push_back(strides[d]);
    }
  };
  for (size_t i = 0; i < n; ++i) {
    const int64_t kind = enc[4 * i];
    int64_t start = enc[4 * i + 1], stop = enc[4 * i + 2], step = enc[4 * i + 3];
    switch (kind) {
      case IndexItem::kInt: {
        const int64_t size = shape[d];
        if (start < -size || start >= size) {
          return absl::NotFoundError(absl::StrFormat(
              "index: index %d is out of bounds for axis %d with size %d (tensor of shape %s)",
              start, d, size, ShapeToString(shape)));
        }
        v.offset += (start < 0 ? start + size : start) * strides[d];
        ++d;
        break;
      }
      case IndexItem::kSlice: {
        if (step == 0) return absl::InvalidArgumentError("index: slice step cannot be zero");
        const int64_t len = AdjustSlice(shape[d], &start, &stop, step);
        if (len > 0) v.offset += start * strides[d];
        v.shape.push_back(len);
        v.strides.push_back(strides[d] * step);
        ++d;
        break;
      }
      case IndexItem::kNewAxis:
        v.shape.push_back(1);
        v.strides.push_back(0);
        break;
      case IndexItem::kEllipsis:
        keep(nd - consumed);
        break;
      default:
        return absl::InternalError("index: unknown index item kind");
    }
  }
  keep(nd - d);  // trailing axes not indexed
  return v;
}

absl::StatusOr<TensorMeta> InferIndex(const TensorMeta& a, absl::Span<const int64_t> encoded) {
  PIJIT_ASSIGN_OR_RETURN(IndexView v, ResolveIndex(a.shape, ContiguousStrides(a.shape), encoded));
  return TensorMeta{a.dtype, std::move(v.shape)};
}

absl::StatusOr<Tensor> Index(const Tensor& a, absl::Span<const int64_t> encoded) {
  PIJIT_ASSIGN_OR_RETURN(IndexView v, ResolveIndex(a.shape(), a.strides(), encoded));
  return Tensor::View(a.storage(), a.dtype(), std::move(v.shape), std::move(v.strides),
                      a.offset() + v.offset);
}

absl::StatusOr<TensorMeta> InferIndexGrad(const TensorMeta& grad, absl::Span<const int64_t> shape,
                                          absl::Span<const int64_t> encoded) {
  PIJIT_RETURN_IF_ERROR(CheckShape("index_grad", shape));
  PIJIT_ASSIGN_OR_RETURN(IndexView v, ResolveIndex(shape, ContiguousStrides(shape), encoded));
  if (v.shape != grad.shape) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "index_grad: the gradient has shape %s but the index selects shape %s of shape %s",
        ShapeToString(grad.shape), ShapeToString(v.shape), ShapeToString(shape)));
  }
  return TensorMeta{grad.dtype, Shape(shape.begin(), shape.end())};
}

absl::StatusOr<Tensor> IndexGrad(const Tensor& grad, absl::Span<const int64_t> shape,
                                 absl::Span<const int64_t> encoded) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferIndexGrad(MetaOf(grad), shape, encoded));
  PIJIT_ASSIGN_OR_RETURN(IndexView v, ResolveIndex(shape, ContiguousStrides(shape), encoded));
  Tensor out = Tensor::Empty(meta.shape, meta.dtype);
  std::memset(out.raw_data(), 0, out.numel() * out.itemsize());
  const Tensor src = grad.Contiguous();
  const int64_t n = src.numel(), nd = static_cast<int64_t>(v.shape.size());
  // Basic indexing selects each element at most once, so a plain store suffices. Walk the
  // selected elements in row-major order with an index counter over the view's strides.
  DispatchDType(src.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* s = src.data<T>();
    T* d = out.data<T>() + v.offset;
    Shape idx(nd, 0);
    int64_t off = 0;
    for (int64_t i = 0; i < n; ++i) {
      d[off] = s[i];
      for (int64_t k = nd - 1; k >= 0; --k) {
        off += v.strides[k];
        if (++idx[k] < v.shape[k]) break;
        off -= v.strides[k] * idx[k];
        idx[k] = 0;
      }
    }
  });
  return out;
}

}  // namespace pijit
