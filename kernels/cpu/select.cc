// Selection kernels: where(cond, x, y) and clip(x, lo, hi).
#include "absl/strings/str_join.h"
#include "kernels/cpu/loops.h"
#include "kernels/errors.h"
#include "kernels/ops.h"
#include "kernels/thread_pool.h"

namespace pijit {
namespace {

// Broadcasts several shapes; the error lists all of them.
absl::StatusOr<Shape> BroadcastAll(const char* op, absl::Span<const Shape* const> shapes) {
  Shape out;
  for (const Shape* s : shapes) {
    auto b = BroadcastShapes(op, out, *s);
    if (!b.ok()) {
      std::string all = absl::StrJoin(shapes, " ", [](std::string* o, const Shape* s) {
        absl::StrAppend(o, ShapeToString(*s));
      });
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: operands could not be broadcast together with shapes %s", op, all));
    }
    out = *b;
  }
  return out;
}

}  // namespace

absl::StatusOr<TensorMeta> InferWhere(const TensorMeta& cond, const TensorMeta& x,
                                      const TensorMeta& y) {
  const Shape* shapes[] = {&cond.shape, &x.shape, &y.shape};
  PIJIT_ASSIGN_OR_RETURN(Shape shape, BroadcastAll("where", shapes));
  PIJIT_ASSIGN_OR_RETURN(DType dt, PromoteOrError("where", x.dtype, y.dtype));
  return TensorMeta{dt, std::move(shape)};
}

absl::StatusOr<Tensor> Where(const Tensor& cond, const Tensor& x, const Tensor& y) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferWhere(MetaOf(cond), MetaOf(x), MetaOf(y)));
  PIJIT_ASSIGN_OR_RETURN(Tensor cc, Cast(cond, DType::kBool));
  PIJIT_ASSIGN_OR_RETURN(Tensor cx, Cast(x, meta.dtype));
  PIJIT_ASSIGN_OR_RETURN(Tensor cy, Cast(y, meta.dtype));
  PIJIT_ASSIGN_OR_RETURN(Tensor vc, BroadcastTo(cc, meta.shape));
  PIJIT_ASSIGN_OR_RETURN(Tensor vx, BroadcastTo(cx, meta.shape));
  PIJIT_ASSIGN_OR_RETURN(Tensor vy, BroadcastTo(cy, meta.shape));
  Tensor out = Tensor::Empty(meta.shape, meta.dtype);
  // The common shape of gradients (where(mask, g, 0)): contiguous condition and operands of
  // the result's shape, or scalars. One pass, split across cores when large.
  auto flat = [&](const Tensor& t) {
    return (t.shape() == meta.shape && t.is_contiguous()) || t.numel() == 1;
  };
  if (flat(cc) && flat(cx) && flat(cy) && out.numel() > 1) {
    DispatchDType(meta.dtype, [&](auto tag) {
      using T = decltype(tag);
      const bool* pc = cc.data<bool>();
      const T* px = cx.data<T>();
      const T* py = cy.data<T>();
      T* po = out.data<T>();
      const int64_t sc = cc.numel() == 1 ? 0 : 1, sx = cx.numel() == 1 ? 0 : 1,
                    sy = cy.numel() == 1 ? 0 : 1;
      ParallelFor(out.numel(), 1 << 16, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) po[i] = pc[i * sc] ? px[i * sx] : py[i * sy];
      });
    });
    return out;
  }
  DispatchDType(meta.dtype, [&](auto tag) {
    using T = decltype(tag);
    loops::Ternary<bool, T, T>(vc, vx, vy, out, [](bool c, T a, T b) { return c ? a : b; });
  });
  return out;
}

absl::StatusOr<TensorMeta> InferClip(const TensorMeta& x, const TensorMeta* lo,
                                     const TensorMeta* hi) {
  if (!lo && !hi) {
    return absl::InvalidArgumentError("clip: at least one of min and max must be given");
  }
  absl::InlinedVector<const Shape*, 3> shapes = {&x.shape};
  DType dt = x.dtype;
  for (const TensorMeta* b : {lo, hi}) {
    if (!b) continue;
    shapes.push_back(&b->shape);
    PIJIT_ASSIGN_OR_RETURN(dt, PromoteOrError("clip", dt, b->dtype));
  }
  PIJIT_ASSIGN_OR_RETURN(Shape shape, BroadcastAll("clip", shapes));
  return TensorMeta{dt, std::move(shape)};
}

absl::StatusOr<Tensor> Clip(const Tensor& x, const Tensor* lo, const Tensor* hi) {
  TensorMeta mlo, mhi;
  if (lo) mlo = MetaOf(*lo);
  if (hi) mhi = MetaOf(*hi);
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta,
                         InferClip(MetaOf(x), lo ? &mlo : nullptr, hi ? &mhi : nullptr));
  auto view = [&](const Tensor& t) -> absl::StatusOr<Tensor> {
    PIJIT_ASSIGN_OR_RETURN(Tensor c, Cast(t, meta.dtype));
    return BroadcastTo(c, meta.shape);
  };
  PIJIT_ASSIGN_OR_RETURN(Tensor vx, view(x));
  Tensor vlo, vhi;
  if (lo) { PIJIT_ASSIGN_OR_RETURN(vlo, view(*lo)); }
  if (hi) { PIJIT_ASSIGN_OR_RETURN(vhi, view(*hi)); }
  Tensor out = Tensor::Empty(meta.shape, meta.dtype);
  DispatchDType(meta.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (lo && hi) {
      loops::Ternary<T, T, T>(vx, vlo, vhi, out,
                              [](T v, T l, T h) { return loops::Min(loops::Max(v, l), h); });
    } else if (lo) {
      loops::Binary<T, T>(vx, vlo, out, [](T v, T l) { return loops::Max(v, l); });
    } else {
      loops::Binary<T, T>(vx, vhi, out, [](T v, T h) { return loops::Min(v, h); });
    }
  });
  return out;
}

}  // namespace pijit
