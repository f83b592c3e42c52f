// max and average pooling over H and W of NCHW data: float32 on oneDNN (primitives cached by
// problem and attributes), float64 and oneDNN-less cases on a direct loop.
#include <array>
#include <cmath>
#include <limits>
#include <memory>

#include "absl/container/flat_hash_map.h"
#include "kernels/blocked_layout.h"
#include "kernels/cpu/dnnl_threads.h"
#include "kernels/cpu/window.h"
#include "kernels/errors.h"

namespace pijit {
namespace {

const char* PoolName(PoolKind k) { return k == PoolKind::kMax ? "max_pool2d" : "avg_pool2d"; }

// N, C, H, W, KH, KW, strides 2, pads 4, dilations 2, algorithm, block of the layout (0:
// NCHW).
using PoolKey = std::array<int64_t, 16>;

struct PoolPrimitive {
  dnnl::memory::desc src, dst;
  dnnl::pooling_forward prim;
};

const PoolPrimitive& GetPool(const PoolKey& k, int64_t oh, int64_t ow) {
  return *CachedPrimitive(k, [&] {
    using dnnl::memory;
    auto p = std::make_unique<PoolPrimitive>();
    p->src = ActivationLayout({k[0], k[1], k[2], k[3]}, k[15]);
    p->dst = ActivationLayout({k[0], k[1], oh, ow}, k[15]);
    p->prim = dnnl::pooling_forward(dnnl::pooling_forward::primitive_desc(
        DnnlEngine(), dnnl::prop_kind::forward_inference, static_cast<dnnl::algorithm>(k[14]),
        p->src, p->dst, {k[6], k[7]}, {k[4], k[5]}, {k[12] - 1, k[13] - 1}, {k[8], k[10]},
        {k[9], k[11]}));
    return p;
  });
}

template <typename T>
void PoolLoop(PoolKind kind, const Tensor& x, const Window2D& win, const Geometry2D& g,
              bool include_pad, Tensor& out) {
  const Shape& xs = x.shape();
  const int64_t planes = xs[0] * xs[1], h = xs[2], w = xs[3], oh = g.out[0], ow = g.out[1];
  const T* px = x.data<T>();
  T* po = out.data<T>();
  for (int64_t p = 0; p < planes; ++p) {
    const T* plane = px + p * h * w;
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t xo = 0; xo < ow; ++xo) {
        const int64_t y0 = y * win.stride[0] - g.pad[0], x0 = xo * win.stride[1] - g.pad[2];
        T acc = kind == PoolKind::kMax ? -std::numeric_limits<T>::infinity() : T(0);
        int64_t count = 0;
        ForEachInWindow(win, h, w, y0, x0, [&](int64_t at) {
          const T v = plane[at];
          if (kind == PoolKind::kMax) {
            acc = MaxPoolTakes(v, acc) ? v : acc;
          } else {
            acc += v;
          }
          ++count;
        });
        if (kind == PoolKind::kAvg) {
          if (include_pad) count = PaddedWindowCount(win, g, h, w, y0, x0);
          acc = count > 0 ? acc / static_cast<T>(count) : T(0);
        }
        po[(p * oh + y) * ow + xo] = acc;
      }
  }
}

// Whether only the loop pools this window: average pooling that counts the padding (not
// 'same', whose divisor is MindSpore's pixels inside the input) over a ceil_mode extension.
bool OnlyTheLoopPools(PoolKind kind, const Window2D& win, const Geometry2D& g) {
  const bool include_pad = win.count_include_pad && !win.same;
  const bool extended = g.pad[1] != g.pad_given[1] || g.pad[3] != g.pad_given[3];
  return kind == PoolKind::kAvg && include_pad && extended;
}

}  // namespace

// Whether pooling runs on oneDNN's kernels over the blocked layout of `block` for this
// problem (x in NCHW): float32, whole blocks of channels, not a case only the loop pools.
bool Pool2DRunsBlocked(PoolKind kind, const TensorMeta& x, const Window2D& win, int64_t block) {
  if (x.dtype != DType::kFloat32 || x.shape.size() != 4 || !IsChannelBlock(x.shape[1], block) ||
      NumElements(x.shape) == 0) {
    return false;
  }
  auto g = ResolveWindow(PoolName(kind), x.shape, win.kernel, win, true);
  return g.ok() && !OnlyTheLoopPools(kind, win, *g);
}


absl::StatusOr<TensorMeta> InferPool2D(PoolKind kind, const TensorMeta& x, const Window2D& win) {
  const char* op = PoolName(kind);
  if (!IsFloating(x.dtype)) {
    return absl::UnimplementedError(absl::StrFormat(
        "%s: unsupported dtype %s, expected a floating dtype (Float16, BFloat16, Float32 or Float64)", op, DTypeName(x.dtype)));
  }
  if (x.shape.size() == 5) {  // blocked (kernels/blocked_layout.h): what it runs on
    const TensorMeta plain{x.dtype, PlainShapeOfBlocked(x.shape)};
    if (!Pool2DRunsBlocked(kind, plain, win, x.shape[4])) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: input of shape %s is not in a blocked layout this pooling runs in", op,
          ShapeToString(x.shape)));
    }
    PIJIT_ASSIGN_OR_RETURN(TensorMeta out, InferPool2D(kind, plain, win));
    return TensorMeta{x.dtype, {x.shape[0], x.shape[1], out.shape[2], out.shape[3], x.shape[4]}};
  }
  if (x.shape.size() != 4) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: expected a 4-D input (N, C, H, W), got shape %s", op, ShapeToString(x.shape)));
  }
  PIJIT_ASSIGN_OR_RETURN(Geometry2D g, ResolveWindow(op, x.shape, win.kernel, win, true));
  return TensorMeta{x.dtype, {x.shape[0], x.shape[1], g.out[0], g.out[1]}};
}

absl::StatusOr<Tensor> Pool2D(PoolKind kind, const Tensor& x, const Window2D& win) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferPool2D(kind, MetaOf(x), win));
  if (IsHalfFloat(meta.dtype)) {  // in float32, rounded once at the end
    PIJIT_ASSIGN_OR_RETURN(Tensor wx, Cast(x, DType::kFloat32));
    PIJIT_ASSIGN_OR_RETURN(Tensor r, Pool2D(kind, wx, win));
    return Cast(r, meta.dtype);
  }
  const bool blocked = x.shape().size() == 5;
  const Shape xs = PlainShapeOfBlocked(x.shape());
  PIJIT_ASSIGN_OR_RETURN(Geometry2D g, ResolveWindow(PoolName(kind), xs, win.kernel, win, true));
  Tensor out = Tensor::Empty(meta.shape, meta.dtype);
  if (out.numel() == 0) return out;
  const Tensor cx = x.Contiguous();
  // 'same' average pooling divides by the pixels inside the input (MindSpore's AvgPool).
  const bool include_pad = win.count_include_pad && !win.same;
  if (meta.dtype == DType::kFloat32 && !OnlyTheLoopPools(kind, win, g)) {
    if (!blocked) {
      // oneDNN's kernels for NCHW loop element by element (ResNet-50's 3x3 max pooling at
      // batch 8: 48 ms); its blocked ones are vectorised (3.4 ms), the reorders around them
      // cheaper than the difference.
      if (const int64_t block = Pool2DBlock(kind, MetaOf(x), win)) {
        PIJIT_ASSIGN_OR_RETURN(Tensor bx, ToBlocked(cx, block));
        PIJIT_ASSIGN_OR_RETURN(Tensor by, Pool2D(kind, bx, win));
        return FromBlocked(by);
      }
    }
    dnnl::algorithm alg = kind == PoolKind::kMax ? dnnl::algorithm::pooling_max
                          : include_pad         ? dnnl::algorithm::pooling_avg_include_padding
                                                : dnnl::algorithm::pooling_avg_exclude_padding;
    const PoolKey key{xs[0], xs[1], xs[2], xs[3], win.kernel[0], win.kernel[1], win.stride[0],
                      win.stride[1], g.pad[0], g.pad[1], g.pad[2], g.pad[3], win.dilation[0],
                      win.dilation[1], static_cast<int64_t>(alg),
                      BlockOfShape(x.shape())};
    const SmallProblemThreads threads(static_cast<double>(out.numel()) * win.kernel[0] *
                                      win.kernel[1]);
    const PoolPrimitive& p = GetPool(key, g.out[0], g.out[1]);
    dnnl::memory src(p.src, DnnlEngine(), cx.raw_data());
    dnnl::memory dst(p.dst, DnnlEngine(), out.raw_data());
    p.prim.execute(DnnlStream(), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
    DnnlStream().wait();
    return out;
  }
  DispatchDType(meta.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) PoolLoop<T>(kind, cx, win, g, include_pad, out);
  });
  return out;
}

int64_t Pool2DBlock(PoolKind kind, const TensorMeta& x, const Window2D& win) {
  const int64_t block = HostActivationBlock();
  return Pool2DRunsBlocked(kind, x, win, block) ? block : 0;
}

}  // namespace pijit
