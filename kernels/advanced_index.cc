// Advanced (NumPy) indexing: integer index arrays and boolean masks, mixed with basic items;
// and the writes of __setitem__ (IndexPut) for every index form.
//
// The index is resolved in two steps. The basic items are applied as a strided view with each
// advanced item replaced by full slices over the axes it indexes; the advanced items then
// select, along those view axes, the elements their broadcast index arrays name. An element of
// the result at (p, b, q) (p: view axes before the block, b: the broadcast block, q: the view
// axes after it) sits at base + off_p[p] + off_b[b] + off_q[q] in the input's storage.
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/errors.h"
#include "kernels/index_resolve.h"
#include "kernels/ops.h"

namespace pijit {
namespace {

// One advanced item: an index array, or an integer among arrays (a 0-d array).
struct Advanced {
  int64_t array = -1;  // position in `arrays`; -1: the integer `value`
  int64_t value = 0;
  int64_t vdim = 0;    // first view axis it indexes
  int64_t ndim = 1;    // how many axes it indexes (a mask: its rank)
  int64_t axis = 0;    // first input axis it indexes (for error messages)
  bool mask = false;
};

struct Plan {
  IndexView view;  // basic items applied, advanced items as full slices
  std::vector<Advanced> adv;
  bool adjacent = true;  // the advanced items are consecutive: the block replaces their axes
};

absl::Status NotIndexType(DType d) {
  return absl::NotFoundError(absl::StrFormat(
      "index: arrays used as indices must be of integer (or boolean) type, got %s", DTypeName(d)));
}

// `arrays[i]` gives the dtype and shape of index array i.
absl::StatusOr<Plan> MakePlan(absl::Span<const int64_t> shape, absl::Span<const int64_t> strides,
                              absl::Span<const int64_t> enc,
                              absl::Span<const TensorMeta* const> arrays) {
  if (enc.size() % 4 != 0) return absl::InternalError("index: malformed index encoding");
  const int64_t nd = static_cast<int64_t>(shape.size());
  const size_t n = enc.size() / 4;
  bool has_array = false;
  for (size_t i = 0; i < n; ++i) has_array |= enc[4 * i] == IndexItem::kArray;
  int64_t consumed = 0;
  for (size_t i = 0; i < n; ++i) {
    const int64_t kind = enc[4 * i];
    if (kind == IndexItem::kInt || kind == IndexItem::kSlice) ++consumed;
    if (kind != IndexItem::kArray) continue;
    const int64_t k = enc[4 * i + 1];
    if (k < 0 || k >= static_cast<int64_t>(arrays.size())) {
      return absl::InternalError("index: an index array is missing");
    }
    const TensorMeta& m = *arrays[k];
    if (m.dtype != DType::kBool && !IsInteger(m.dtype)) return NotIndexType(m.dtype);
    consumed += m.dtype == DType::kBool ? static_cast<int64_t>(m.shape.size()) : 1;
  }
  if (consumed > nd) {
    return absl::NotFoundError(absl::StrFormat(
        "index: too many indices for a tensor of dimension %d (shape %s): %d were indexed", nd,
        ShapeToString(shape), consumed));
  }
  Plan plan;
  Shape basic;
  int64_t vdim = 0, axis = 0, last_item = -1;
  for (size_t i = 0; i < n; ++i) {
    const int64_t kind = enc[4 * i];
    const bool advanced = kind == IndexItem::kArray || (kind == IndexItem::kInt && has_array);
    if (!advanced) {
      basic.insert(basic.end(), enc.begin() + 4 * i, enc.begin() + 4 * i + 4);
      if (kind == IndexItem::kSlice) ++vdim, ++axis;
      if (kind == IndexItem::kNewAxis) ++vdim;
      if (kind == IndexItem::kInt) ++axis;
      if (kind == IndexItem::kEllipsis) vdim += nd - consumed, axis += nd - consumed;
      continue;
    }
    Advanced a;
    a.vdim = vdim;
    a.axis = axis;
    if (kind == IndexItem::kInt) {
      a.value = enc[4 * i + 1];
    } else {
      a.array = enc[4 * i + 1];
      const TensorMeta& m = *arrays[a.array];
      a.mask = m.dtype == DType::kBool;
      if (a.mask) a.ndim = static_cast<int64_t>(m.shape.size());
    }
    if (last_item >= 0 && last_item != static_cast<int64_t>(i) - 1) plan.adjacent = false;
    last_item = static_cast<int64_t>(i);
    for (int64_t k = 0; k < a.ndim; ++k) basic.insert(basic.end(), {IndexItem::kSlice, IndexItem::kNone, IndexItem::kNone, 1});
    vdim += a.ndim;
    axis += a.ndim;
    plan.adv.push_back(a);
  }
  PIJIT_ASSIGN_OR_RETURN(plan.view, ResolveIndex(shape, strides, basic));
  for (const Advanced& a : plan.adv) {
    if (!a.mask) continue;
    const TensorMeta& m = *arrays[a.array];
    for (int64_t k = 0; k < a.ndim; ++k) {
      if (m.shape[k] != plan.view.shape[a.vdim + k]) {
        return absl::NotFoundError(absl::StrFormat(
            "index: boolean index did not match indexed tensor along axis %d; size of axis is %d "
            "but size of corresponding boolean axis is %d (tensor of shape %s, mask of shape %s)",
            a.axis + k, plan.view.shape[a.vdim + k], m.shape[k], ShapeToString(shape),
            ShapeToString(m.shape)));
      }
    }
  }
  return plan;
}

// The view axes outside the advanced items, split into those before the block (p) and after
// it (q).
void SplitBasicAxes(const Plan& plan, Shape* p_shape, Shape* p_strides, Shape* q_shape,
                    Shape* q_strides) {
  const int64_t nv = static_cast<int64_t>(plan.view.shape.size());
  std::vector<bool> is_adv(nv, false);
  for (const Advanced& a : plan.adv)
    for (int64_t k = 0; k < a.ndim; ++k) is_adv[a.vdim + k] = true;
  const int64_t first = plan.adv.empty() || !plan.adjacent ? 0 : plan.adv.front().vdim;
  for (int64_t d = 0; d < nv; ++d) {
    if (is_adv[d]) continue;
    const bool before = d < first;
    (before ? p_shape : q_shape)->push_back(plan.view.shape[d]);
    (before ? p_strides : q_strides)->push_back(plan.view.strides[d]);
  }
}

absl::StatusOr<Shape> BroadcastIndexShapes(absl::Span<const Shape> shapes) {
  Shape out;
  for (const Shape& s : shapes) {
    auto b = BroadcastShapes("index", out, s);
    if (!b.ok()) {
      std::string all;
      for (const Shape& t : shapes) absl::StrAppend(&all, all.empty() ? "" : " ", ShapeToString(t));
      return absl::NotFoundError(absl::StrFormat(
          "index: shape mismatch: indexing arrays could not be broadcast together with shapes %s",
          all));
    }
    out = *std::move(b);
  }
  return out;
}

absl::StatusOr<Shape> ResultShape(const Plan& plan, absl::Span<const TensorMeta* const> arrays) {
  std::vector<Shape> shapes;
  for (const Advanced& a : plan.adv) {
    if (a.mask) {
      return absl::UnimplementedError(
          "index: a boolean mask gives a shape that depends on the mask's values");
    }
    shapes.push_back(a.array < 0 ? Shape{} : arrays[a.array]->shape);
  }
  PIJIT_ASSIGN_OR_RETURN(Shape block, BroadcastIndexShapes(shapes));
  Shape p, ps, q, qs;
  SplitBasicAxes(plan, &p, &ps, &q, &qs);
  if (plan.adv.empty()) block.clear();
  p.insert(p.end(), block.begin(), block.end());
  p.insert(p.end(), q.begin(), q.end());
  return p;
}

// Row-major offsets of every position of `sizes` under `strides`.
std::vector<int64_t> Offsets(absl::Span<const int64_t> sizes, absl::Span<const int64_t> strides) {
  const int64_t n = NumElements(sizes), nd = static_cast<int64_t>(sizes.size());
  std::vector<int64_t> out(n);
  Shape idx(nd, 0);
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    out[i] = off;
    for (int64_t k = nd - 1; k >= 0; --k) {
      off += strides[k];
      if (++idx[k] < sizes[k]) break;
      off -= strides[k] * idx[k];
      idx[k] = 0;
    }
  }
  return out;
}

// Where every element of the selection lives, relative to the view's base.
struct Selection {
  Shape shape;                        // p + block + q
  std::vector<int64_t> off_p, off_b, off_q;
};

// The 1-d int64 arrays of a mask's true positions, one per mask axis (row-major order).
std::vector<Tensor> MaskPositions(const Tensor& mask) {
  const Tensor m = mask.Contiguous();
  const int64_t n = m.numel(), nd = m.ndim();
  const bool* v = m.data<bool>();
  int64_t nnz = 0;
  for (int64_t i = 0; i < n; ++i) nnz += v[i] ? 1 : 0;
  std::vector<Tensor> out;
  for (int64_t k = 0; k < std::max<int64_t>(nd, 1); ++k) out.push_back(Tensor::Empty({nnz}, DType::kInt64));
  Shape idx(nd, 0);
  int64_t j = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (v[i]) {
      for (int64_t k = 0; k < nd; ++k) out[k].data<int64_t>()[j] = idx[k];
      if (nd == 0) out[0].data<int64_t>()[j] = 0;
      ++j;
    }
    for (int64_t k = nd - 1; k >= 0; --k) {
      if (++idx[k] < m.shape()[k]) break;
      idx[k] = 0;
    }
  }
  return out;
}

}  // namespace

absl::Status ExpandBooleanMasks(Shape* encoded, std::vector<Tensor>* arrays) {
  Shape enc;
  std::vector<Tensor> out;
  for (size_t i = 0; i + 3 < encoded->size(); i += 4) {
    const int64_t* item = encoded->data() + i;
    if (item[0] != IndexItem::kArray) {
      enc.insert(enc.end(), item, item + 4);
      continue;
    }
    if (item[1] < 0 || item[1] >= static_cast<int64_t>(arrays->size())) {
      return absl::InternalError("index: an index array is missing");
    }
    const Tensor& a = (*arrays)[item[1]];
    std::vector<Tensor> parts;
    if (a.dtype() == DType::kBool && a.ndim() > 0) parts = MaskPositions(a);
    else parts.push_back(a);
    for (Tensor& p : parts) {
      enc.insert(enc.end(), {IndexItem::kArray, static_cast<int64_t>(out.size()), IndexItem::kNone, 1});
      out.push_back(std::move(p));
    }
  }
  *encoded = std::move(enc);
  *arrays = std::move(out);
  return absl::OkStatus();
}

namespace {
// An integer index array as int64. uint64 values past int64's range would read as negative
// (counted from the end): they are out of bounds of every axis, as in NumPy.
absl::StatusOr<Tensor> IndexAsInt64(const Tensor& index, absl::Span<const int64_t> input_shape) {
  if (index.dtype() == DType::kUInt64) {
    const Tensor c = index.Contiguous();
    for (int64_t i = 0; i < c.numel(); ++i) {
      const uint64_t v = c.data<uint64_t>()[i];
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return absl::NotFoundError(absl::StrFormat(
            "index: index %u is out of bounds for every axis (tensor of shape %s)", v,
            ShapeToString(input_shape)));
      }
    }
  }
  return Cast(index, DType::kInt64);
}

absl::StatusOr<Selection> Select(const Plan& plan, absl::Span<const Tensor* const> arrays,
                                 absl::Span<const int64_t> input_shape) {
  // Each advanced item as int64 arrays over one view axis each (vdim -1: a 0-d mask, which
  // adds an axis without indexing one).
  struct Part {
    Tensor index;
    int64_t vdim, axis;
  };
  std::vector<Part> parts;
  std::vector<Shape> shapes;
  for (const Advanced& a : plan.adv) {
    if (a.array < 0) {
      parts.push_back({Tensor::Scalar<int64_t>(a.value), a.vdim, a.axis});
    } else if (a.mask) {
      std::vector<Tensor> pos = MaskPositions(*arrays[a.array]);
      if (a.ndim == 0) {
        parts.push_back({pos[0], -1, -1});
      } else {
        for (int64_t k = 0; k < a.ndim; ++k) parts.push_back({pos[k], a.vdim + k, a.axis + k});
      }
    } else {
      PIJIT_ASSIGN_OR_RETURN(Tensor idx, IndexAsInt64(*arrays[a.array], input_shape));
      parts.push_back({std::move(idx), a.vdim, a.axis});
    }
  }
  for (const Part& part : parts) shapes.push_back(part.index.shape());
  PIJIT_ASSIGN_OR_RETURN(Shape block, BroadcastIndexShapes(shapes));
  Selection s;
  Shape p, ps, q, qs;
  SplitBasicAxes(plan, &p, &ps, &q, &qs);
  s.off_p = Offsets(p, ps);
  s.off_q = Offsets(q, qs);
  s.off_b.assign(NumElements(block), 0);
  for (const Part& part : parts) {
    if (part.vdim < 0) continue;
    PIJIT_ASSIGN_OR_RETURN(Tensor b, BroadcastTo(part.index, block));
    const Tensor c = b.Contiguous();
    const int64_t* v = c.data<int64_t>();
    const int64_t size = plan.view.shape[part.vdim], stride = plan.view.strides[part.vdim];
    for (size_t i = 0; i < s.off_b.size(); ++i) {
      int64_t x = v[i];
      if (x < -size || x >= size) {
        return absl::NotFoundError(absl::StrFormat(
            "index: index %d is out of bounds for axis %d with size %d (tensor of shape %s)", x,
            part.axis, size, ShapeToString(input_shape)));
      }
      s.off_b[i] += (x < 0 ? x + size : x) * stride;
    }
  }
  if (plan.adv.empty()) block.clear();
  s.shape = p;
  s.shape.insert(s.shape.end(), block.begin(), block.end());
  s.shape.insert(s.shape.end(), q.begin(), q.end());
  return s;
}

std::vector<TensorMeta> Metas(absl::Span<const Tensor* const> arrays) {
  std::vector<TensorMeta> m;
  for (const Tensor* t : arrays) m.push_back(MetaOf(*t));
  return m;
}

std::vector<const TensorMeta*> Ptrs(const std::vector<TensorMeta>& m) {
  std::vector<const TensorMeta*> p;
  for (const TensorMeta& x : m) p.push_back(&x);
  return p;
}

// Calls fn(i, offset) for the selection's elements in row-major order.
template <typename Fn>
void ForEach(const Selection& s, Fn&& fn) {
  int64_t i = 0;
  for (int64_t p : s.off_p)
    for (int64_t b : s.off_b)
      for (int64_t q : s.off_q) fn(i++, p + b + q);
}

}  // namespace

absl::StatusOr<TensorMeta> InferAdvancedIndex(const TensorMeta& a,
                                              absl::Span<const TensorMeta* const> arrays,
                                              absl::Span<const int64_t> encoded) {
  PIJIT_ASSIGN_OR_RETURN(Plan plan, MakePlan(a.shape, ContiguousStrides(a.shape), encoded, arrays));
  PIJIT_ASSIGN_OR_RETURN(Shape shape, ResultShape(plan, arrays));
  return TensorMeta{a.dtype, std::move(shape)};
}

absl::StatusOr<Tensor> AdvancedIndex(const Tensor& a, absl::Span<const Tensor* const> arrays,
                                     absl::Span<const int64_t> encoded) {
  const std::vector<TensorMeta> metas = Metas(arrays);
  PIJIT_ASSIGN_OR_RETURN(Plan plan, MakePlan(a.shape(), a.strides(), encoded, Ptrs(metas)));
  PIJIT_ASSIGN_OR_RETURN(Selection s, Select(plan, arrays, a.shape()));
  Tensor out = Tensor::Empty(s.shape, a.dtype());
  if (out.numel() == 0) return out;
  DispatchDType(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* src = static_cast<const T*>(a.storage()->data()) + a.offset() + plan.view.offset;
    T* dst = out.data<T>();
    ForEach(s, [&](int64_t i, int64_t off) { dst[i] = src[off]; });
  });
  return out;
}

absl::Status IndexPut(const Tensor& dst, absl::Span<const Tensor* const> arrays,
                      absl::Span<const int64_t> encoded, const Tensor& value, bool accumulate) {
  for (DType d : {dst.dtype(), value.dtype()}) {
    if (IsComplex(d)) {  // the element loops below are real-only
      return absl::UnimplementedError(absl::StrFormat(
          "__setitem__: %s tensors are not supported; build the result with ops.Complex",
          DTypeName(d)));
    }
  }
  const std::vector<TensorMeta> metas = Metas(arrays);
  PIJIT_ASSIGN_OR_RETURN(Plan plan, MakePlan(dst.shape(), dst.strides(), encoded, Ptrs(metas)));
  PIJIT_ASSIGN_OR_RETURN(Selection s, Select(plan, arrays, dst.shape()));
  // NumPy drops a value's leading size-1 axes that the selection does not have.
  Tensor v = value;
  size_t lead = 0;
  while (v.ndim() - lead > s.shape.size() && v.shape()[lead] == 1) ++lead;
  if (lead > 0) {
    v = Tensor::View(v.storage(), v.dtype(), Shape(v.shape().begin() + lead, v.shape().end()),
                     Shape(v.strides().begin() + lead, v.strides().end()), v.offset());
  }
  auto b = BroadcastTo(v, s.shape);
  if (!b.ok()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "__setitem__: could not broadcast a value of shape %s into the indexed shape %s (tensor "
        "of shape %s)", ShapeToString(value.shape()), ShapeToString(s.shape),
        ShapeToString(dst.shape())));
  }
  if (NumElements(s.shape) == 0) return absl::OkStatus();
  // A contiguous copy in dst's dtype that cannot overlap dst (t[1:] = t[:-1]).
  PIJIT_ASSIGN_OR_RETURN(Tensor c, Cast(*b, dst.dtype()));
  if (c.storage() == dst.storage() || !c.is_contiguous()) {
    Tensor fresh = Tensor::Empty(s.shape, dst.dtype());
    CopyInto(c, fresh);
    c = std::move(fresh);
  }
  DispatchDType(dst.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* d = static_cast<T*>(dst.storage()->data()) + dst.offset() + plan.view.offset;
    const T* src = c.data<T>();
    if (!accumulate) {
      ForEach(s, [&](int64_t i, int64_t off) { d[off] = src[i]; });
    } else if constexpr (std::is_same_v<T, bool>) {
      ForEach(s, [&](int64_t i, int64_t off) { d[off] = d[off] || src[i]; });
    } else {
      ForEach(s, [&](int64_t i, int64_t off) { d[off] = static_cast<T>(d[off] + src[i]); });
    }
  });
  return absl::OkStatus();
}

absl::StatusOr<TensorMeta> InferAdvancedIndexGrad(const TensorMeta& grad,
                                                  absl::Span<const TensorMeta* const> arrays,
                                                  absl::Span<const int64_t> shape,
                                                  absl::Span<const int64_t> encoded) {
  PIJIT_RETURN_IF_ERROR(CheckShape("adv_index_grad", shape));
  PIJIT_ASSIGN_OR_RETURN(TensorMeta sel, InferAdvancedIndex(TensorMeta{grad.dtype, Shape(shape.begin(), shape.end())}, arrays, encoded));
  if (sel.shape != grad.shape) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "adv_index_grad: the gradient has shape %s but the index selects shape %s of shape %s",
        ShapeToString(grad.shape), ShapeToString(sel.shape), ShapeToString(shape)));
  }
  return TensorMeta{grad.dtype, Shape(shape.begin(), shape.end())};
}

absl::StatusOr<Tensor> AdvancedIndexGrad(const Tensor& grad, absl::Span<const Tensor* const> arrays,
                                         absl::Span<const int64_t> shape,
                                         absl::Span<const int64_t> encoded) {
  PIJIT_RETURN_IF_ERROR(CheckShape("adv_index_grad", shape));
  Tensor out = Tensor::Empty(shape, grad.dtype());
  std::memset(out.raw_data(), 0, out.numel() * out.itemsize());
  PIJIT_RETURN_IF_ERROR(IndexPut(out, arrays, encoded, grad, /*accumulate=*/true));
  return out;
}

}  // namespace pijit
