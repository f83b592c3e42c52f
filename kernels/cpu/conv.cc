// conv2d over NCHW data: float32 on oneDNN (primitives cached by problem and attributes),
// float64 on a direct loop; and conv2d with an epilogue (bias, activations, residual adds) as
// one oneDNN primitive with post-ops, or the direct kernels with the epilogue applied to
// their result while it is in cache.
#include <algorithm>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "kernels/blocked_layout.h"
#include "kernels/cpu/conv_direct.h"
#include "kernels/cpu/conv_onednn.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/loops.h"
#include "kernels/cpu/window.h"
#include "kernels/errors.h"
#include "kernels/thread_pool.h"

namespace pijit {
namespace {

absl::Status CheckFloat(const char* op, const char* what, DType d, DType want) {
  if (!IsFloating(d)) {
    return absl::UnimplementedError(absl::StrFormat(
        "%s: unsupported dtype %s for %s, expected a floating dtype (Float16, BFloat16, Float32 or Float64)", op, DTypeName(d), what));
  }
  if (d != want) {
    return absl::UnimplementedError(absl::StrFormat(
        "%s: %s has dtype %s but the input has dtype %s", op, what, DTypeName(d), DTypeName(want)));
  }
  return absl::OkStatus();
}

// N, C, H, W, O, KH, KW, strides 2, pads 4, dilations 2, groups, has_bias, then the
// post-ops oneDNN applies (MatMulPost codes: kAdd, kMul and the activations other than relu),
// each kAdd and kMul followed by 1 when its operand is a channel vector, 0 when it has the
// result's shape.
using ConvKey = absl::InlinedVector<int64_t, 20>;
constexpr size_t kConvKeyFixed = 17;

struct ConvPrimitive : ConvProblem {
  dnnl::memory::desc bias;
  dnnl::convolution_forward prim;
  // Per kAdd and kMul post-op, in order: its position in the post-op chain, and the layout
  // its operand is read in (a channel vector's own, or dst_in).
  std::vector<int> binary_index;
  std::vector<dnnl::memory::desc> binary_in;
  // The layouts the primitive computes in, when they are not the plain ones: the input and
  // the weights are reordered into them and the result back out of its.
  dnnl::memory::desc src_in, weights_in, dst_in;
  bool blocked = false;
};

// The primitive for `k`, or null when oneDNN cannot build it with the key's post-ops (the
// failure is cached too; a plain convolution always builds).
const ConvPrimitive* GetConv(const ConvKey& k) {
  return CachedPrimitive(k, [&] {
    auto p = std::make_unique<ConvPrimitive>();
    static_cast<ConvProblem&>(*p) = MakeConvProblem(k.data());
    const auto prop = dnnl::prop_kind::forward_inference;
    const auto alg = dnnl::algorithm::convolution_direct;
    // Many channels: let oneDNN choose blocked layouts (its direct kernels); the reorders cost
    // less than the GEMM-based kernel it runs on plain NCHW. Few channels: plain layouts.
    p->blocked = BlockedLayoutsPay(k[1], k[4], k[15]) || FirstLayerLayoutsPay(k[1], k[4], k[15]);
    using dnnl::memory;
    memory::desc src = LayoutFor(p->blocked, p->src);
    const memory::desc wts = LayoutFor(p->blocked, p->weights);
    memory::desc dst = LayoutFor(p->blocked, p->dst);
    // 1x1 convolutions in nChw8c (its direct 1x1 kernels): given the choice oneDNN 3.2 takes
    // its NHWC brgemm ones, slower there (ResNet-50's 1x1 layers, the MobileNet block's).
    // Depthwise ones too: given the choice it takes NHWC kernels, 1.4-2.4x slower there
    // (benchmarks/onednn_depthwise.cc).
    if (p->blocked && ((k[5] == 1 && k[6] == 1 && k[15] == 1 && k[1] % 8 == 0 && k[4] % 8 == 0) ||
                       DepthwiseRunsBlocked(k[1], k[4], k[15]))) {
      const int64_t block = DirectKernelBlock(k[1], k[4]);
      src = ActivationLayout(p->src.get_dims(), block);
      dst = ActivationLayout(p->dst.get_dims(), block);
    }
    if (k[16]) p->bias = memory::desc({k[4]}, memory::data_type::f32, memory::format_tag::a);
    // The primitive descriptor for attributes `attr` (oneDNN's choice of layouts with them).
    auto describe = [&](const dnnl::primitive_attr& attr) {
      return k[16] ? dnnl::convolution_forward::primitive_desc(
                         DnnlEngine(), prop, alg, src, wts, p->bias, dst, p->strides, p->dilates,
                         p->pad_l, p->pad_r, attr)
                   : dnnl::convolution_forward::primitive_desc(
                         DnnlEngine(), prop, alg, src, wts, dst, p->strides, p->dilates,
                         p->pad_l, p->pad_r, attr);
    };
    try {
      dnnl::convolution_forward::primitive_desc pd = describe(dnnl::primitive_attr());
      if (k.size() > kConvKeyFixed) {
        // The residual operands are read in the result's layout, known once oneDNN has chosen
        // it for the plain problem; the post-ops must not make it choose another.
        const memory::desc out = pd.dst_desc();
        const memory::desc channel({1, k[4], 1, 1}, memory::data_type::f32,
                                   memory::format_tag::abcd);
        dnnl::post_ops ops;
        int index = 0;
        for (size_t i = kConvKeyFixed; i < k.size(); ++i, ++index) {
          const auto post = static_cast<MatMulPost>(k[i]);
          if (post == MatMulPost::kAdd || post == MatMulPost::kMul) {
            p->binary_index.push_back(index);
            p->binary_in.push_back(k[++i] ? channel : out);
            ops.append_binary(post == MatMulPost::kMul ? dnnl::algorithm::binary_mul
                                                       : dnnl::algorithm::binary_add,
                              p->binary_in.back());
          } else {
            ops.append_eltwise(EltwiseAlgorithm(post), 0.f, 0.f);
          }
        }
        dnnl::primitive_attr attr;
        attr.set_post_ops(ops);
        pd = describe(attr);
        if (pd.dst_desc() != out) throw dnnl::error(dnnl_unimplemented, "layout changed");
        // oneDNN's reference kernels take post-ops its fast ones do not: slower than the
        // convolution and the ops one by one.
        if (IsReferenceKernel(pd)) throw dnnl::error(dnnl_unimplemented, "reference kernel");
      }
      p->prim = dnnl::convolution_forward(pd);
      p->src_in = pd.src_desc();
      p->weights_in = pd.weights_desc();
      p->dst_in = pd.dst_desc();
      p->blocked = p->src_in != p->src || p->weights_in != p->weights || p->dst_in != p->dst;
    } catch (const dnnl::error&) {
      if (k.size() == kConvKeyFixed) throw;  // as before: a plain convolution always builds
      p.reset();
    }
    return p;
  });
}

// The key of the primitive for the problem of x `xs` and weights `ws`, with a bias or not,
// and the post-ops `post` (kAdd, kMul and activations), each kAdd and kMul followed by whether
// its operand is a channel vector (`channel`, in their order).
ConvKey PrimitiveKey(const Shape& xs, const Shape& ws, const Geometry2D& g, const Window2D& win,
                     bool has_bias, absl::Span<const int64_t> post,
                     absl::Span<const bool> channel) {
  ConvKey key = ConvKeyOf<ConvKey>(xs, ws, g, win, has_bias);
  size_t next = 0;
  for (int64_t p : post) {
    key.push_back(p);
    if (MatMulPostTakesOperand(p)) key.push_back(channel[next++]);
  }
  return key;
}

// How an epilogue runs on oneDNN: a kBias operand becomes the primitive's bias (added after
// the sums, as an add would), kAdd, kMul and the activations other than a last relu its
// post-ops; that relu runs after it (as Unary's relu: oneDNN's turns NaN into 0).
struct OneDnnEpilogue {
  std::optional<size_t> bias_operand;       // the operand kBias reads
  absl::InlinedVector<int64_t, 4> post;     // the primitive's post-ops
  absl::InlinedVector<size_t, 4> operands;  // the operand of each of its kAdd and kMul
  bool relu_after = false;
};

OneDnnEpilogue SplitForOneDnn(absl::Span<const int64_t> post) {
  OneDnnEpilogue e;
  e.relu_after = !post.empty() && post.back() == static_cast<int64_t>(MatMulPost::kRelu);
  if (e.relu_after) post.remove_suffix(1);
  size_t next = 0;
  for (int64_t p : post) {
    if (p == static_cast<int64_t>(MatMulPost::kBias)) {
      e.bias_operand = next++;
      continue;
    }
    if (MatMulPostTakesOperand(p)) e.operands.push_back(next++);
    e.post.push_back(p);
  }
  return e;
}

}  // namespace

namespace conv_onednn {

bool Run(const Operands& d, const Geometry2D& g, const Window2D& win,
         absl::Span<const int64_t> post, absl::Span<const Tensor> binaries) {
  absl::InlinedVector<bool, 4> channel;
  for (const Tensor& b : binaries) channel.push_back(b.shape() != d.out.shape());
  const ConvPrimitive* prim = GetConv(PrimitiveKey(PlainShapeOfBlocked(d.x.shape()),
                                                   d.w.shape(), g, win, d.bias != nullptr, post,
                                                   channel));
  if (prim == nullptr) return false;
  const ConvPrimitive& p = *prim;
  using dnnl::memory;
  // The operands' own layouts: plain NCHW, or blocked where the caller holds them so.
  const memory::desc x_layout = ActivationLayout(p.src.get_dims(), d.x_block);
  const memory::desc out_layout = ActivationLayout(p.dst.get_dims(), d.out_block);
  memory src(x_layout, DnnlEngine(), d.x.raw_data());
  memory wts(p.weights, DnnlEngine(), d.w.raw_data());
  memory dst(out_layout, DnnlEngine(), d.out.raw_data());
  // Into the primitive's layouts (no-ops where they are the operands' own).
  memory src_in = InLayout(src, p.src_in), wts_in = InLayout(wts, p.weights_in);
  memory dst_in = p.dst_in == out_layout ? dst : memory(p.dst_in, DnnlEngine());
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src_in}, {DNNL_ARG_WEIGHTS, wts_in},
                                       {DNNL_ARG_DST, dst_in}};
  if (d.bias) args.emplace(DNNL_ARG_BIAS, memory(p.bias, DnnlEngine(), d.bias->raw_data()));
  for (size_t i = 0; i < binaries.size() && i < p.binary_index.size(); ++i) {
    void* data = binaries[i].raw_data();
    // A channel vector is read as it is; a full operand, held in the result's layout, in the
    // primitive's.
    const bool full = p.binary_in[i] == p.dst_in;
    memory r(full ? out_layout : p.binary_in[i], DnnlEngine(), data);
    if (full) r = InLayout(r, p.dst_in);
    args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(p.binary_index[i]) | DNNL_ARG_SRC_1, r);
  }
  p.prim.execute(DnnlStream(), args);
  if (!(p.dst_in == out_layout)) dnnl::reorder(dst_in, dst).execute(DnnlStream(), dst_in, dst);
  DnnlStream().wait();
  return true;
}

Layouts ChosenLayouts(const Shape& xs, const Shape& ws, const Geometry2D& g,
                      const Window2D& win) {
  const ConvPrimitive& p = *GetConv(ConvKeyOf<ConvKey>(xs, ws, g, win, 0));
  // The block of layout `in` of the activation `plain`: NHWC (all channels innermost) last,
  // so that it wins where C is 8 or 16 and nChw8c / nChw16c is the same.
  auto block_of = [](const dnnl::memory::desc& in, const dnnl::memory::desc& plain) {
    int64_t found = 0;
    for (int64_t block : {int64_t{8}, int64_t{16}, plain.get_dims()[1]})
      if (in == ActivationLayout(plain.get_dims(), block)) found = block;
    return found;
  };
  return Layouts{block_of(p.src_in, p.src), block_of(p.dst_in, p.dst)};
}

}  // namespace conv_onednn

namespace {

// Runs the convolution on oneDNN over NCHW tensors (conv_onednn::Run).
bool ConvF32(const Tensor& x, const Tensor& w, const Tensor* bias, const Geometry2D& g,
             const Window2D& win, Tensor& out, absl::Span<const int64_t> post = {},
             absl::Span<const Tensor> binaries = {}) {
  return conv_onednn::Run({x, w, bias, out, 0, 0}, g, win, post, binaries);
}

// Direct convolution (float64, and any problem oneDNN is not given).
template <typename T>
void ConvLoop(const Tensor& x, const Tensor& w, const Tensor* bias, const Geometry2D& g,
              const Window2D& win, Tensor& out) {
  const Shape& xs = x.shape();
  const Shape& ws = w.shape();
  const int64_t n = xs[0], c = xs[1], h = xs[2], wd = xs[3], o = ws[0], kh = ws[2], kw = ws[3];
  const int64_t cg = c / win.groups, og = o / win.groups, oh = g.out[0], ow = g.out[1];
  const T* px = x.data<T>();
  const T* pw = w.data<T>();
  T* po = out.data<T>();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t oc = 0; oc < o; ++oc) {
      const int64_t grp = oc / og;
      const T b0 = bias ? bias->data<T>()[oc] : T(0);
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xo = 0; xo < ow; ++xo) {
          T acc = 0;
          for (int64_t ic = 0; ic < cg; ++ic) {
            const T* plane = px + ((b * c) + grp * cg + ic) * h * wd;
            const T* kern = pw + ((oc * cg) + ic) * kh * kw;
            ForEachTapInPlane(kh, kw, win.dilation[0], win.dilation[1], h, wd,
                              y * win.stride[0] - g.pad[0], xo * win.stride[1] - g.pad[2],
                              [&](int64_t at, int64_t k) { acc += plane[at] * kern[k]; });
          }
          po[((b * o + oc) * oh + y) * ow + xo] = acc + b0;
        }
    }
}

}  // namespace

absl::StatusOr<TensorMeta> InferConv2D(const TensorMeta& x, const TensorMeta& w,
                                       const TensorMeta* bias, const Window2D& win) {
  constexpr const char* op = "conv2d";
  PIJIT_RETURN_IF_ERROR(CheckFloat(op, "input", x.dtype, x.dtype));
  PIJIT_RETURN_IF_ERROR(CheckFloat(op, "weight", w.dtype, x.dtype));
  if (x.shape.size() != 4 || w.shape.size() != 4) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "conv2d: expected a 4-D input (N, C, H, W) and a 4-D weight (C_out, C_in / groups, KH, "
        "KW), got input %s and weight %s", ShapeToString(x.shape), ShapeToString(w.shape)));
  }
  const int64_t c = x.shape[1], o = w.shape[0], groups = win.groups;
  if (groups < 1 || c % groups != 0 || o % groups != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "conv2d: groups (%d) must be positive and divide the input channels (%d) and the output "
        "channels (%d); input %s, weight %s", groups, c, o, ShapeToString(x.shape),
        ShapeToString(w.shape)));
  }
  if (w.shape[1] * groups != c) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "conv2d: input %s has %d channels but weight %s expects %d (%d per group, groups=%d)",
        ShapeToString(x.shape), c, ShapeToString(w.shape), w.shape[1] * groups, w.shape[1],
        groups));
  }
  if (bias) {
    PIJIT_RETURN_IF_ERROR(CheckFloat(op, "bias", bias->dtype, x.dtype));
    if (bias->shape.size() != 1 || bias->shape[0] != o) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "conv2d: bias of shape %s does not match the %d output channels of weight %s",
          ShapeToString(bias->shape), o, ShapeToString(w.shape)));
    }
  }
  const int64_t kernel[2] = {w.shape[2], w.shape[3]};
  PIJIT_ASSIGN_OR_RETURN(Geometry2D g, ResolveWindow(op, x.shape, kernel, win, false));
  return TensorMeta{x.dtype, {x.shape[0], o, g.out[0], g.out[1]}};
}

namespace {

template <typename T>
void ReluInPlace(T* v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) v[i] = loops::Relu(v[i]);
}

}  // namespace

absl::StatusOr<Tensor> Conv2D(const Tensor& x, const Tensor& w, const Tensor* bias,
                              const Window2D& win, bool relu) {
  std::optional<TensorMeta> bias_meta;
  if (bias) bias_meta = MetaOf(*bias);
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferConv2D(MetaOf(x), MetaOf(w),
                                                      bias ? &*bias_meta : nullptr, win));
  if (IsHalfFloat(meta.dtype)) {
    // float16/bfloat16: computed in float32 (oneDNN), rounded once at the end.
    PIJIT_ASSIGN_OR_RETURN(Tensor wx, Cast(x, DType::kFloat32));
    PIJIT_ASSIGN_OR_RETURN(Tensor ww, Cast(w, DType::kFloat32));
    Tensor wb;
    if (bias) { PIJIT_ASSIGN_OR_RETURN(wb, Cast(*bias, DType::kFloat32)); }
    PIJIT_ASSIGN_OR_RETURN(Tensor r, Conv2D(wx, ww, bias ? &wb : nullptr, win, relu));
    return Cast(r, meta.dtype);
  }
  const int64_t kernel[2] = {w.shape()[2], w.shape()[3]};
  PIJIT_ASSIGN_OR_RETURN(Geometry2D g, ResolveWindow("conv2d", x.shape(), kernel, win, false));
  Tensor out = Tensor::Empty(meta.shape, meta.dtype);
  if (out.numel() == 0) return out;
  const Tensor cx = x.Contiguous(), cw = w.Contiguous();
  Tensor cb;
  if (bias) cb = bias->Contiguous();
  const Tensor* pb = bias ? &cb : nullptr;
  if (x.numel() == 0 || w.numel() == 0) {
    // No input channels (or an empty kernel): the bias alone.
    DispatchDType(meta.dtype, [&](auto tag) {
      using T = decltype(tag);
      const int64_t plane = meta.shape[2] * meta.shape[3];
      for (int64_t i = 0; i < out.numel(); ++i)
        out.data<T>()[i] = pb ? pb->data<T>()[(i / plane) % meta.shape[1]] : T(0);
      if (relu) ReluInPlace(out.data<T>(), out.numel());
    });
    return out;
  }
  if (meta.dtype == DType::kFloat32) {
    if (const auto depthwise = DepthwiseProblem(x.shape(), w.shape(), g, win)) {
      conv_depthwise::Forward(*depthwise, cx.data<float>(), cw.data<float>(),
                              pb ? pb->data<float>() : nullptr, out.data<float>());
      if (relu) ReluInPlace(out.data<float>(), out.numel());
      return out;
    }
    if (const auto direct = DirectProblem(x.shape(), w.shape(), g, win);
        direct && conv_direct::Forward(*direct, cx.data<float>(), cw.data<float>(),
                                       pb ? pb->data<float>() : nullptr, out.data<float>(),
                                       relu)) {
      return out;
    }
    ConvF32(cx, cw, pb, g, win, out);  // a plain convolution always builds
    if (relu) ReluInPlace(out.data<float>(), out.numel());
  } else {
    ConvLoop<double>(cx, cw, pb, g, win, out);
    if (relu) ReluInPlace(out.data<double>(), out.numel());
  }
  return out;
}

namespace {

// The op-by-op evaluation (also the definition the fused one is tested against).
absl::StatusOr<Tensor> RunOneByOne(const Tensor& x, const Tensor& w, const Tensor* bias,
                                   const Window2D& win, absl::Span<const int64_t> post,
                                   absl::Span<const Tensor* const> operands) {
  PIJIT_ASSIGN_OR_RETURN(Tensor r, Conv2D(x, w, bias, win));
  return ApplyPostOpsOneByOne(std::move(r), post, operands);
}

// Whether every value of the float32 tensor `t` is finite.
bool AllFinite(const Tensor& t) {
  const float* v = t.data<float>();
  const int64_t n = t.numel();
  int bad = 0;
  for (int64_t i = 0; i < n; ++i) bad |= (v[i] - v[i]) != 0.0f;
  return !bad;
}

// Applies `post` (bias, add, mul and relu only) to the float32 result `out` [N, O, H, W]
// in one pass; `dense` holds the operands of those post-ops, contiguous, in order (channel
// vectors or of the result's shape). The same float operations as Binary's add and mul and
// Unary's relu, so the same bits.
void ApplyInPlace(Tensor& out, absl::Span<const int64_t> post, absl::Span<const Tensor> dense) {
  const int64_t o = out.shape()[1], plane = out.shape()[2] * out.shape()[3];
  const int64_t numel = out.numel();
  float* y = out.data<float>();
  ParallelFor(out.shape()[0] * o, std::max<int64_t>(1, (1 << 14) / plane),
              [&](int64_t lo, int64_t hi) {
    for (int64_t pl = lo; pl < hi; ++pl) {
      float* v = y + pl * plane;
      size_t next = 0;
      for (int64_t p : post) {
        if (p == static_cast<int64_t>(MatMulPost::kRelu)) {
          for (int64_t i = 0; i < plane; ++i) v[i] = loops::Relu(v[i]);
          continue;
        }
        const Tensor& operand = dense[next++];
        const bool mul = p == static_cast<int64_t>(MatMulPost::kMul);
        if (operand.numel() != numel) {  // a channel vector (a bias is one)
          const float b = operand.data<float>()[pl % o];
          if (mul) {
            for (int64_t i = 0; i < plane; ++i) v[i] = v[i] * b;
          } else {
            for (int64_t i = 0; i < plane; ++i) v[i] = v[i] + b;
          }
          continue;
        }
        const float* r = operand.data<float>() + pl * plane;
        if (mul) {
          for (int64_t i = 0; i < plane; ++i) v[i] = v[i] * r[i];
        } else {
          for (int64_t i = 0; i < plane; ++i) v[i] = v[i] + r[i];
        }
      }
    }
  });
}

// Applies the epilogue to a plain convolution's result: runs of bias, add, mul and relu in one
// pass each, the other activations as Unary does.
absl::Status ApplyAfter(Tensor& out, absl::Span<const int64_t> post,
                        absl::Span<const Tensor> dense) {
  size_t i = 0, next = 0;
  while (i < post.size()) {
    if (MatMulPostTakesOperand(post[i]) || post[i] == static_cast<int64_t>(MatMulPost::kRelu)) {
      size_t j = i, used = 0;
      for (; j < post.size() && (MatMulPostTakesOperand(post[j]) ||
                                 post[j] == static_cast<int64_t>(MatMulPost::kRelu));
           ++j)
        used += MatMulPostTakesOperand(post[j]);
      ApplyInPlace(out, post.subspan(i, j - i), dense.subspan(next, used));
      next += used;
      i = j;
      continue;
    }
    PIJIT_ASSIGN_OR_RETURN(out, ApplyPostOpsOneByOne(std::move(out), post.subspan(i, 1), {}));
    ++i;
  }
  return absl::OkStatus();
}

// Runs the convolution and its epilogue `post` (operands `dense`, contiguous) on oneDNN, as
// SplitForOneDnn says. False, the result untouched, when oneDNN cannot build the primitive.
bool EpilogueOnOneDnn(const conv_onednn::Operands& d, const Geometry2D& g, const Window2D& win,
                      absl::Span<const int64_t> post, absl::Span<const Tensor> dense) {
  const OneDnnEpilogue e = SplitForOneDnn(post);
  // A kBias operand: contiguous [O, 1, 1] or [1, O, 1, 1], O floats.
  const Tensor* pb = e.bias_operand ? &dense[*e.bias_operand] : d.bias;
  absl::InlinedVector<Tensor, 4> binaries;
  for (size_t k : e.operands) binaries.push_back(dense[k]);
  if (!conv_onednn::Run({d.x, d.w, pb, d.out, d.x_block, d.out_block}, g, win, e.post,
                        binaries)) {
    return false;
  }
  if (e.relu_after) {
    // Elementwise: the same in any layout.
    float* v = d.out.data<float>();
    ParallelFor(d.out.numel(), 1 << 14, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) v[i] = loops::Relu(v[i]);
    });
  }
  return true;
}

}  // namespace

absl::StatusOr<TensorMeta> InferConv2DEpilogue(const TensorMeta& x, const TensorMeta& w,
                                               const TensorMeta* bias, const Window2D& win,
                                               absl::Span<const int64_t> post,
                                               absl::Span<const TensorMeta* const> operands) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta out, InferConv2D(x, w, bias, win));
  static constexpr PostOpRules kRules{
      "fused_conv2d", "the convolution", "the result's",
      "bias must be the first post-op, on a convolution without a bias",
      "run along the channels of", [](const TensorMeta& o, const TensorMeta& out) {
        return IsConvChannelVector(o, out.shape[1]);
      }};
  PIJIT_RETURN_IF_ERROR(CheckPostOps(kRules, out, bias != nullptr, post, operands));
  return out;
}

bool Conv2DEpilogueIsOnePrimitive(const TensorMeta& x, const TensorMeta& w,
                                  const TensorMeta* bias, const Window2D& win,
                                  absl::Span<const int64_t> post,
                                  absl::Span<const TensorMeta* const> operands) {
  auto out = InferConv2DEpilogue(x, w, bias, win, post, operands);
  if (!out.ok() || out->dtype != DType::kFloat32 || NumElements(out->shape) == 0 ||
      NumElements(x.shape) == 0 || NumElements(w.shape) == 0) {
    return false;
  }
  // Channel-vector binary post-ops pay only on oneDNN's direct kernels over blocked layouts
  // (many channels, as GetConv chooses them), and there, without AVX-512, not in its 1x1
  // kernels: its GEMM-based convolution on plain layouts applies them per element (ResNet-50's
  // 7x7 stem at batch 8: 790 ms against 69), its AVX2 1x1 kernels slowly (a 1x1 layer at
  // batch 8: 20-30 ms against 9 ms plain and 9 ms for a separate pass over the result).
  // Elsewhere they are left to the elementwise loop after the convolution.
  // (Grouped convolutions on blocked layouts for their 8-channel multiples alone are left out:
  // channel post-ops have not been measured on those kernels.)
  const bool blocked = ManyChannelsPerGroup(x.shape[1], w.shape[0], win.groups);
  const bool one_by_one = w.shape[2] == 1 && w.shape[3] == 1;
  const bool channel_binaries_pay = blocked && (cpu::Host().avx512f || !one_by_one);
  size_t next = 0;
  for (size_t i = 0; i < post.size(); ++i) {
    if (post[i] == static_cast<int64_t>(MatMulPost::kRelu) && i + 1 != post.size()) return false;
    const bool binary = post[i] == static_cast<int64_t>(MatMulPost::kAdd) ||
                        post[i] == static_cast<int64_t>(MatMulPost::kMul);
    if (binary && operands[next]->shape != out->shape &&
        (!IsConvChannelVector(*operands[next], out->shape[1]) || !channel_binaries_pay)) {
      return false;
    }
    next += MatMulPostTakesOperand(post[i]);
  }
  return true;
}

absl::StatusOr<Tensor> Conv2DEpilogue(const Tensor& x, const Tensor& w, const Tensor* bias,
                                      const Window2D& win, absl::Span<const int64_t> post,
                                      absl::Span<const Tensor* const> operands) {
  const OperandMetas metas(operands);
  const TensorMeta mx = MetaOf(x), mw = MetaOf(w);
  std::optional<TensorMeta> mb;
  if (bias) mb = MetaOf(*bias);
  const TensorMeta* pmb = bias ? &*mb : nullptr;
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta,
                         InferConv2DEpilogue(mx, mw, pmb, win, post, metas.ptrs));
  if (!Conv2DEpilogueIsOnePrimitive(mx, mw, pmb, win, post, metas.ptrs)) {
    return RunOneByOne(x, w, bias, win, post, operands);
  }
  const int64_t kernel[2] = {w.shape()[2], w.shape()[3]};
  PIJIT_ASSIGN_OR_RETURN(Geometry2D g, ResolveWindow("conv2d", x.shape(), kernel, win, false));
  const Tensor cx = x.Contiguous(), cw = w.Contiguous();
  Tensor cb;
  if (bias) cb = bias->Contiguous();
  absl::InlinedVector<Tensor, 4> dense;  // the operands, contiguous, in order
  for (const Tensor* o : operands) dense.push_back(o->Contiguous());
  Tensor out = Tensor::Empty(meta.shape, meta.dtype);

  // Depthwise: the convolution, then the epilogue in one pass per run of bias, add and relu.
  if (const auto depthwise = DepthwiseProblem(x.shape(), w.shape(), g, win)) {
    conv_depthwise::Forward(*depthwise, cx.data<float>(), cw.data<float>(),
                            bias ? cb.data<float>() : nullptr, out.data<float>());
    PIJIT_RETURN_IF_ERROR(ApplyAfter(out, post, dense));
    return out;
  }

  // The direct kernels: a leading channel bias, one add and relu as each result is written
  // (the bias after the sums: the kernels start each sum from `bias`, a convolution's own,
  // which rounds otherwise), the rest of the epilogue after them.
  if (const auto direct = DirectProblem(x.shape(), w.shape(), g, win)) {
    conv_direct::Epilogue epi;
    size_t i = 0, next = 0;
    if (i < post.size() && post[i] == static_cast<int64_t>(MatMulPost::kBias)) {
      epi.channel_bias = dense[next++].data<float>();
      ++i;
    }
    if (i < post.size() && post[i] == static_cast<int64_t>(MatMulPost::kAdd) &&
        dense[next].shape() == meta.shape) {
      epi.residual = dense[next++].data<float>();
      ++i;
    }
    if (i < post.size() && post[i] == static_cast<int64_t>(MatMulPost::kRelu)) {
      epi.relu = true;
      ++i;
    }
    if (conv_direct::Forward(*direct, cx.data<float>(), cw.data<float>(),
                             bias ? cb.data<float>() : nullptr, out.data<float>(), epi)) {
      PIJIT_RETURN_IF_ERROR(
          ApplyAfter(out, post.subspan(i), absl::Span<const Tensor>(dense).subspan(next)));
      return out;
    }
  }

  // oneDNN: a kBias operand becomes the primitive's bias (added after the sums, as an add
  // would), kAdd, kMul and the other activations its post-ops; relu, last, runs after it. Its
  // logistic on plain layouts does not keep NaN: with an infinity or NaN in the operands
  // (where the direct kernels also decline), the approximated activations run one by one.
  bool approximated = false;
  for (int64_t p : post) approximated |= MatMulPostIsApproximated(p);
  if (approximated) {
    bool finite = AllFinite(cx) && AllFinite(cw) && (!bias || AllFinite(cb));
    for (const Tensor& d : dense) finite = finite && AllFinite(d);
    if (!finite) return RunOneByOne(x, w, bias, win, post, operands);
  }
  if (!EpilogueOnOneDnn({cx, cw, bias ? &cb : nullptr, out}, g, win, post, dense)) {
    return RunOneByOne(x, w, bias, win, post, operands);
  }
  return out;
}

std::optional<ConvBlocks> Conv2DBlockedLayouts(const TensorMeta& x, const TensorMeta& w,
                                               const TensorMeta* bias, const Window2D& win,
                                               absl::Span<const int64_t> post,
                                               absl::Span<const TensorMeta* const> operands) {
  if (!Conv2DEpilogueIsOnePrimitive(x, w, bias, win, post, operands)) return std::nullopt;
  for (int64_t p : post)
    if (MatMulPostIsApproximated(p)) return std::nullopt;  // the NaN fallback is NCHW's
  const int64_t kernel[2] = {w.shape[2], w.shape[3]};
  auto g = ResolveWindow("conv2d", x.shape, kernel, win, false);
  // (The direct kernels' problems include depthwise ones: where oneDNN's depthwise kernels
  // run blocked, neither NCHW kernel is asked.)
  if (!g.ok() || (!DepthwiseRunsBlocked(x.shape[1], w.shape[0], win.groups) &&
                  (DirectProblem(x.shape, w.shape, *g, win) ||
                   DepthwiseProblem(x.shape, w.shape, *g, win)))) {
    return std::nullopt;
  }
  const conv_onednn::Layouts chosen = conv_onednn::ChosenLayouts(x.shape, w.shape, *g, win);
  if (chosen.dst_block == 0 || w.shape[0] % chosen.dst_block != 0) return std::nullopt;
  ConvBlocks blocks{chosen.src_block, chosen.dst_block};
  if (x.shape[1] % std::max<int64_t>(blocks.input, 1) != 0) blocks.input = 0;
  // The primitive with the epilogue's post-ops must build too (as Conv2DEpilogue would run
  // it).
  const Shape out{x.shape[0], w.shape[0], g->out[0], g->out[1]};
  const OneDnnEpilogue e = SplitForOneDnn(post);
  absl::InlinedVector<bool, 4> channel;
  for (size_t k : e.operands) channel.push_back(operands[k]->shape != out);
  if (GetConv(PrimitiveKey(x.shape, w.shape, *g, win, bias != nullptr || e.bias_operand, e.post,
                           channel)) == nullptr) {
    return std::nullopt;
  }
  return blocks;
}

absl::StatusOr<TensorMeta> InferConv2DBlocked(const TensorMeta& x, const TensorMeta& w,
                                              const TensorMeta* bias, const Window2D& win,
                                              absl::Span<const int64_t> post,
                                              absl::Span<const TensorMeta* const> operands,
                                              int64_t result_block) {
  PIJIT_ASSIGN_OR_RETURN(TensorMeta px,
                         PlainMetaOfActivation("conv2d in blocked layouts", "the input", x));
  // The result's plain meta first (the operands' shapes are checked against it).
  PIJIT_ASSIGN_OR_RETURN(TensorMeta out, InferConv2D(px, w, bias, win));
  if (!IsChannelBlock(out.shape[1], result_block)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "conv2d in blocked layouts: the result's block %d is not 8 or 16 dividing its %d "
        "channels, nor all of them", result_block, out.shape[1]));
  }
  const Shape blocked{out.shape[0], out.shape[1] / result_block, out.shape[2], out.shape[3],
                      result_block};
  absl::InlinedVector<TensorMeta, 4> plain;
  for (const TensorMeta* o : operands) {
    if (o->shape.size() != 5) {
      plain.push_back(*o);
    } else if (o->shape != blocked) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "conv2d in blocked layouts: operand of shape %s is neither a channel vector nor the "
          "result's blocked shape %s", ShapeToString(o->shape), ShapeToString(blocked)));
    } else {
      plain.push_back(TensorMeta{o->dtype, out.shape});
    }
  }
  absl::InlinedVector<const TensorMeta*, 4> ptrs;
  for (const TensorMeta& m : plain) ptrs.push_back(&m);
  PIJIT_RETURN_IF_ERROR(InferConv2DEpilogue(px, w, bias, win, post, ptrs).status());
  if (out.dtype != DType::kFloat32) {
    return absl::UnimplementedError(absl::StrFormat(
        "conv2d in blocked layouts: dtype %s, expected Float32", DTypeName(out.dtype)));
  }
  return TensorMeta{out.dtype, blocked};
}

absl::StatusOr<Tensor> Conv2DBlocked(const Tensor& x, const Tensor& w, const Tensor* bias,
                                     const Window2D& win, absl::Span<const int64_t> post,
                                     absl::Span<const Tensor* const> operands,
                                     int64_t result_block) {
  const OperandMetas metas(operands);
  std::optional<TensorMeta> mb;
  if (bias) mb = MetaOf(*bias);
  PIJIT_ASSIGN_OR_RETURN(TensorMeta meta, InferConv2DBlocked(MetaOf(x), MetaOf(w),
                                                             bias ? &*mb : nullptr, win, post,
                                                             metas.ptrs, result_block));
  const Shape xs = PlainShapeOfBlocked(x.shape());
  const int64_t kernel[2] = {w.shape()[2], w.shape()[3]};
  PIJIT_ASSIGN_OR_RETURN(Geometry2D g, ResolveWindow("conv2d", xs, kernel, win, false));
  const Tensor cx = x.Contiguous(), cw = w.Contiguous();
  Tensor cb;
  if (bias) cb = bias->Contiguous();
  absl::InlinedVector<Tensor, 4> dense;
  for (const Tensor* o : operands) dense.push_back(o->Contiguous());
  Tensor out = Tensor::Empty(meta.shape, meta.dtype);
  if (!EpilogueOnOneDnn({cx, cw, bias ? &cb : nullptr, out, BlockOfShape(x.shape()), result_block},
                        g, win, post, dense)) {
    return absl::InternalError(absl::StrFormat(
        "conv2d in blocked layouts: oneDNN has no primitive for input %s, weight %s and this "
        "epilogue", ShapeToString(x.shape()), ShapeToString(w.shape())));
  }
  return out;
}

}  // namespace pijit
