// Shared by the NCHW layer kernels: window geometry (output size and resolved padding) and
// the oneDNN engine and stream; and the post-op checks of fused_matmul and fused_conv2d.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"

#include "kernels/cpu/conv_depthwise.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/conv_direct.h"

#include "kernels/ops.h"

namespace pijit {

// A window resolved against an input size: output size and explicit padding per side.
struct Geometry2D {
  int64_t out[2];
  int64_t pad[4];  // top, bottom, left, right; bottom/right grow for ceil_mode
  int64_t pad_given[4];  // the padding before ceil_mode extension (avg divisor bounds)
};

// `kernel` is the window's size (conv2d: the weight's); errors name `op` and the shapes.
absl::StatusOr<Geometry2D> ResolveWindow(const char* op, const Shape& x, const int64_t kernel[2],
                                         const Window2D& win, bool pooling);

inline dnnl::engine& DnnlEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}
inline dnnl::stream& DnnlStream() {
  static thread_local dnnl::stream stream(DnnlEngine());
  return stream;
}

// A float32 NCHW convolution for oneDNN, from the 16 numbers that identify it: N, C, H, W, O,
// KH, KW, strides (2), pads (top, bottom, left, right), dilations (2, 1 = dense), groups.
struct ConvProblem {
  dnnl::memory::desc src, weights, dst;
  dnnl::memory::dims strides, dilates, pad_l, pad_r;
};
inline ConvProblem MakeConvProblem(const int64_t* k) {
  using dnnl::memory;
  using tag = memory::format_tag;
  const auto f32 = memory::data_type::f32;
  const int64_t n = k[0], c = k[1], h = k[2], w = k[3], o = k[4], kh = k[5], kw = k[6];
  const int64_t groups = k[15];
  ConvProblem p;
  p.src = memory::desc({n, c, h, w}, f32, tag::nchw);
  p.weights = groups > 1 ? memory::desc({groups, o / groups, c / groups, kh, kw}, f32, tag::goihw)
                         : memory::desc({o, c, kh, kw}, f32, tag::oihw);
  const int64_t oh = (h + k[9] + k[10] - (k[13] * (kh - 1) + 1)) / k[7] + 1;
  const int64_t ow = (w + k[11] + k[12] - (k[14] * (kw - 1) + 1)) / k[8] + 1;
  p.dst = memory::desc({n, o, oh, ow}, f32, tag::nchw);
  p.strides = {k[7], k[8]};
  p.dilates = {k[13] - 1, k[14] - 1};
  p.pad_l = {k[9], k[11]};
  p.pad_r = {k[10], k[12]};
  return p;
}

// The 16 numbers MakeConvProblem reads, for x of shape `xs` and weights of shape `ws`, then
// `last` (the forward: whether it has a bias; the gradients: which one); `Key` is the caller's
// cache key type.
template <typename Key>
Key ConvKeyOf(const Shape& xs, const Shape& ws, const Geometry2D& g, const Window2D& win,
              int64_t last) {
  return Key{xs[0], xs[1], xs[2], xs[3], ws[0], ws[2], ws[3], win.stride[0], win.stride[1],
             g.pad[0], g.pad[1], g.pad[2], g.pad[3], win.dilation[0], win.dilation[1],
             win.groups, last};
}

// `plain`'s dims in a float32 layout that oneDNN chooses when `blocked` (for its blocked
// kernels), else `plain`.
// Whether oneDNN is given its choice of layouts (`format_tag::any`: blocked ones, where its
// direct jit kernels run, with reorders around them) rather than plain NCHW (where it runs
// GEMM-based kernels): with many channels per group, or with groups of 8-channel multiples
// (the blocks of its AVX2 grouped kernels; where it has no such kernel, it keeps plain layouts
// itself). `c` and `o` are the input and output channels.
inline bool ManyChannelsPerGroup(int64_t c, int64_t o, int64_t groups) {
  return c / groups >= 16 && o / groups >= 16;
}
// A depthwise convolution (a group per input channel, one output each) over 8-channel
// multiples: oneDNN's depthwise kernels over nChw8c run it in compiled graphs, whose
// activations are blocked around it (MobileNetV2's 3x3 layer, 192 channels at 56x56, batch 32,
// benchmarks/onednn_depthwise.cc: 4.6-5.5 ms forward, 5.4-6.1 and 6.7-7.1 ms for the
// gradients; the NCHW kernels took 11.5, 8.5 and 7.8 ms in a profile of convnets_more.py's
// block); eager mode keeps the NCHW kernels, where the reorders around would cost more.
inline bool DepthwiseRunsBlocked(int64_t c, int64_t o, int64_t groups) {
  return groups > 1 && groups == c && o == c && c % 8 == 0;
}
inline bool BlockedLayoutsPay(int64_t c, int64_t o, int64_t groups) {
  const int64_t cg = c / groups, og = o / groups;
  return ManyChannelsPerGroup(c, o, groups) || (groups > 1 && cg % 8 == 0 && og % 8 == 0) ||
         DepthwiseRunsBlocked(c, o, groups);
}
// The forward convolution's other case: a dense one from few input channels to many (a
// network's stem), where oneDNN's first-layer kernels read NCHW and write blocked
// (ResNet-50's 7x7 stem at batch 8: 10 ms against 26 ms for its GEMM-based kernel on NCHW).
inline bool FirstLayerLayoutsPay(int64_t c, int64_t o, int64_t groups) {
  return groups == 1 && c < 8 && o >= 16;
}

// The block of oneDNN's direct kernels' activation layouts on this host: 16 with AVX-512
// (nChw16c), else 8 (nChw8c).
inline int64_t HostActivationBlock() { return cpu::Host().avx512f ? 16 : 8; }

// The block the primitives of a convolution from c to o channels are given where oneDNN's own
// choice of layout is slower (1x1 and depthwise convolutions: kernels/cpu/conv.cc GetConv),
// the forward's and the gradients' alike: the host's block where it divides both, else 8.
inline int64_t DirectKernelBlock(int64_t c, int64_t o) {
  const int64_t host = HostActivationBlock();
  return c % host == 0 && o % host == 0 ? host : 8;
}

// The float32 layout of [N, C, H, W] `dims` in which `block` channels are innermost
// (kernels/blocked_layout.h): NCHW for 0, NHWC for all C, else nChw8c / nChw16c.
inline dnnl::memory::desc ActivationLayout(const dnnl::memory::dims& dims, int64_t block) {
  using dnnl::memory;
  const memory::format_tag tag = block == 0          ? memory::format_tag::nchw
                                 : block == dims[1] ? memory::format_tag::nhwc
                                 : block == 16      ? memory::format_tag::nChw16c
                                                    : memory::format_tag::nChw8c;
  return memory::desc(dims, memory::data_type::f32, tag);
}

inline dnnl::memory::desc LayoutFor(bool blocked, const dnnl::memory::desc& plain) {
  using dnnl::memory;
  return blocked ? memory::desc(plain.get_dims(), memory::data_type::f32, memory::format_tag::any)
                 : plain;
}

// Whether oneDNN chose one of its reference (scalar loop) implementations for `pd`.
template <typename PrimitiveDesc>
bool IsReferenceKernel(const PrimitiveDesc& pd) {
  return std::string(pd.impl_info_str()).rfind("ref", 0) == 0;
}

// `from` in the layout `want`: itself when it has that layout, else a reordered copy.
inline dnnl::memory InLayout(dnnl::memory& from, const dnnl::memory::desc& want) {
  if (from.get_desc() == want) return from;
  dnnl::memory m(want, DnnlEngine());
  dnnl::reorder(from, m).execute(DnnlStream(), from, m);
  return m;
}

// Max pooling's choice, shared by the forward loop and the gradient: `v` replaces the window's
// maximum so far when it is larger or the first NaN (a NaN, once taken, stays).
template <typename T>
inline bool MaxPoolTakes(T v, T best) {
  return (v > best || std::isnan(v)) && !std::isnan(best);
}

// Calls f(offset in the plane, tap i * kw + j) for each tap (i, j) of a kh x kw window with
// dilations (dy, dx) whose top-left corner is (y0, x0) in an h x w plane (negative in the
// padding), row by row; taps that fall in the padding are skipped.
template <typename F>
inline void ForEachTapInPlane(int64_t kh, int64_t kw, int64_t dy, int64_t dx, int64_t h,
                              int64_t w, int64_t y0, int64_t x0, F&& f) {
  for (int64_t i = 0; i < kh; ++i) {
    const int64_t iy = y0 + i * dy;
    if (iy < 0 || iy >= h) continue;
    for (int64_t j = 0; j < kw; ++j) {
      const int64_t ix = x0 + j * dx;
      if (ix < 0 || ix >= w) continue;
      f(iy * w + ix, i * kw + j);
    }
  }
}

// Calls f(offset in the plane) for each element of an h x w plane under the pooling window
// whose top-left corner is (y0, x0), as ForEachTapInPlane.
template <typename F>
inline void ForEachInWindow(const Window2D& win, int64_t h, int64_t w, int64_t y0, int64_t x0,
                            F&& f) {
  ForEachTapInPlane(win.kernel[0], win.kernel[1], win.dilation[0], win.dilation[1], h, w, y0,
                    x0, [&](int64_t at, int64_t) { f(at); });
}

// What average pooling divides by with count_include_pad: the window at (y0, x0) clipped to
// the padded h x w input (not to the ceil_mode extension).
inline int64_t PaddedWindowCount(const Window2D& win, const Geometry2D& g, int64_t h, int64_t w,
                                 int64_t y0, int64_t x0) {
  const int64_t ye = std::min(y0 + win.kernel[0], h + g.pad_given[1]);
  const int64_t xe = std::min(x0 + win.kernel[1], w + g.pad_given[3]);
  return (ye - y0) * (xe - x0);
}

// The problem as conv_direct's kernels see it, when they take it (stride and dilation 1,
// few channels: see conv_direct.h); float32 is the caller's part.
inline std::optional<conv_direct::Problem> DirectProblem(const Shape& xs, const Shape& ws,
                                                         const Geometry2D& g,
                                                         const Window2D& win) {
  if (win.stride[0] != 1 || win.stride[1] != 1 || win.dilation[0] != 1 || win.dilation[1] != 1)
    return std::nullopt;
  const conv_direct::Problem p{xs[0], xs[1], xs[2], xs[3], ws[0], ws[2], ws[3], win.groups,
                               {g.pad[0], g.pad[1], g.pad[2], g.pad[3]}};
  if (!conv_direct::Applies(p)) return std::nullopt;
  return p;
}

// The depthwise kernels' problem for a float32 conv2d (the caller checks the dtype), or none
// when they do not take it: groups equal to the input channels, each group's output channels
// reading that one channel.
inline std::optional<conv_depthwise::Problem> DepthwiseProblem(const Shape& xs, const Shape& ws,
                                                               const Geometry2D& g,
                                                               const Window2D& win) {
  if (win.groups != xs[1] || ws[1] != 1 || ws[0] % xs[1] != 0) return std::nullopt;
  const conv_depthwise::Problem p{xs[0], xs[1], xs[2], xs[3], ws[0] / xs[1], ws[2], ws[3],
                                  {win.stride[0], win.stride[1]},
                                  {win.dilation[0], win.dilation[1]},
                                  {g.pad[0], g.pad[1], g.pad[2], g.pad[3]},
                                  g.out[0], g.out[1]};
  if (!conv_depthwise::Applies(p)) return std::nullopt;
  return p;
}

// oneDNN's eltwise post-op for an activation post-op (relu for the others).
inline dnnl::algorithm EltwiseAlgorithm(MatMulPost p) {
  switch (p) {
    case MatMulPost::kGelu: return dnnl::algorithm::eltwise_gelu_erf;
    case MatMulPost::kTanh: return dnnl::algorithm::eltwise_tanh;
    case MatMulPost::kSigmoid: return dnnl::algorithm::eltwise_logistic;
    default: return dnnl::algorithm::eltwise_relu;
  }
}

// How fused_matmul and fused_conv2d name things in the errors of CheckPostOps, and where a
// bias operand must lie.
struct PostOpRules {
  const char* op;            // "fused_matmul"
  const char* result;        // "the product": whose dtype each operand must have
  const char* result_shape;  // "the product's": whose shape each operand must broadcast to
  const char* bias_first;    // the error for a bias post-op that is not first (or not allowed)
  const char* bias_along;    // what a bias operand must do: "run along the last axis of"
  bool (*bias_fits)(const TensorMeta& operand, const TensorMeta& out);
};

// The metas of a fused op's operands, and the pointers to them that its Infer function takes.
struct OperandMetas {
  explicit OperandMetas(absl::Span<const Tensor* const> operands) {
    for (const Tensor* o : operands) metas.push_back(MetaOf(*o));
    for (const TensorMeta& m : metas) ptrs.push_back(&m);
  }
  OperandMetas(const OperandMetas&) = delete;  // ptrs point into metas
  OperandMetas& operator=(const OperandMetas&) = delete;
  absl::InlinedVector<TensorMeta, 4> metas;
  absl::InlinedVector<const TensorMeta*, 4> ptrs;
};

// Checks the post-op codes `post` and their `operands` (one per bias or add, in order) against
// the result `out`: known codes, bias only first (and not when `has_bias`), operands of out's
// dtype that broadcast to its shape, a bias operand where `rules.bias_fits` says.
absl::Status CheckPostOps(const PostOpRules& rules, const TensorMeta& out, bool has_bias,
                          absl::Span<const int64_t> post,
                          absl::Span<const TensorMeta* const> operands);

// The oneDNN primitive for `key`, from this thread's cache, or built by `build` (which returns
// it as a std::unique_ptr, null when oneDNN cannot build it: the failure is cached too). Each
// caller's `build` lambda has a type of its own, hence a cache of its own. The cache is
// bounded: entries are cheap to rebuild.
template <typename Key, typename Build>
const auto* CachedPrimitive(const Key& key, Build build) {
  using P = typename decltype(build())::element_type;
  static thread_local absl::flat_hash_map<Key, std::unique_ptr<P>> cache;
  auto it = cache.find(key);
  if (it != cache.end()) return static_cast<const P*>(it->second.get());
  std::unique_ptr<P> p = build();
  if (cache.size() > 512) cache.clear();
  return static_cast<const P*>(cache.emplace(key, std::move(p)).first->second.get());
}

}  // namespace pijit
