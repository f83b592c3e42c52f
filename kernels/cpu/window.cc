// Window attributes of conv2d and the poolings: encoding for graph attributes and geometry;
// the post-op checks of the fused matmul and convolution.
#include "kernels/cpu/window.h"

#include "kernels/errors.h"

namespace pijit {

Shape EncodeWindow(const Window2D& w) {
  return {w.same, w.kernel[0], w.kernel[1], w.stride[0], w.stride[1], w.pad[0], w.pad[1],
          w.pad[2], w.pad[3], w.dilation[0], w.dilation[1], w.ceil_mode, w.count_include_pad,
          w.groups};
}

absl::StatusOr<Window2D> DecodeWindow(const char* op, absl::Span<const int64_t> v) {
  if (v.size() != kWindowInts) {
    return absl::InternalError(absl::StrFormat("%s: expects %d window ints, got %d", op,
                                               kWindowInts, v.size()));
  }
  Window2D w;
  w.same = v[0] != 0;
  w.kernel[0] = v[1];
  w.kernel[1] = v[2];
  w.stride[0] = v[3];
  w.stride[1] = v[4];
  for (int i = 0; i < 4; ++i) w.pad[i] = v[5 + i];
  w.dilation[0] = v[9];
  w.dilation[1] = v[10];
  w.ceil_mode = v[11] != 0;
  w.count_include_pad = v[12] != 0;
  w.groups = v[13];
  return w;
}

absl::StatusOr<Geometry2D> ResolveWindow(const char* op, const Shape& x, const int64_t kernel[2],
                                         const Window2D& win, bool pooling) {
  for (int i = 0; i < 2; ++i) {
    if (kernel[i] <= 0 || win.stride[i] <= 0 || win.dilation[i] <= 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: kernel size, stride and dilation must be positive, got kernel (%d, %d), stride "
          "(%d, %d), dilation (%d, %d)", op, kernel[0], kernel[1], win.stride[0], win.stride[1],
          win.dilation[0], win.dilation[1]));
    }
  }
  for (int i = 0; i < 4; ++i) {
    if (win.pad[i] < 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: padding must be non-negative, got (%d, %d, %d, %d)", op, win.pad[0], win.pad[1],
          win.pad[2], win.pad[3]));
    }
  }
  Geometry2D g;
  for (int i = 0; i < 2; ++i) {
    const int64_t in = x[2 + i], s = win.stride[i];
    const int64_t eff = win.dilation[i] * (kernel[i] - 1) + 1;
    int64_t& lo = g.pad[2 * i];
    int64_t& hi = g.pad[2 * i + 1];
    if (win.same) {
      // TensorFlow's SAME (MindSpore's pad_mode 'same'): the extra pixel goes at the end.
      g.out[i] = (in + s - 1) / s;
      const int64_t total = std::max<int64_t>(0, (g.out[i] - 1) * s + eff - in);
      lo = total / 2;
      hi = total - lo;
      g.pad_given[2 * i] = lo;
      g.pad_given[2 * i + 1] = hi;
      continue;
    }
    lo = win.pad[2 * i];
    hi = win.pad[2 * i + 1];
    g.pad_given[2 * i] = lo;
    g.pad_given[2 * i + 1] = hi;
    if (pooling && (2 * lo > eff || 2 * hi > eff)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: padding (%d, %d, %d, %d) must be at most half of the kernel size (%d, %d)", op,
          win.pad[0], win.pad[1], win.pad[2], win.pad[3], kernel[0], kernel[1]));
    }
    const int64_t span = in + lo + hi - eff;
    if (span < 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: the %s window (%d, %d) with dilation (%d, %d) is larger than the padded input "
          "%s with padding (%d, %d, %d, %d)", op, pooling ? "pooling" : "kernel", kernel[0],
          kernel[1], win.dilation[0], win.dilation[1], ShapeToString(x), win.pad[0], win.pad[1],
          win.pad[2], win.pad[3]));
    }
    g.out[i] = (win.ceil_mode ? (span + s - 1) / s : span / s) + 1;
    // The last window must start inside the input or its leading padding (PyTorch's rule).
    if (win.ceil_mode && (g.out[i] - 1) * s >= in + lo) --g.out[i];
    hi = std::max(hi, (g.out[i] - 1) * s + eff - in - lo);
  }
  return g;
}

absl::Status CheckPostOps(const PostOpRules& rules, const TensorMeta& out, bool has_bias,
                          absl::Span<const int64_t> post,
                          absl::Span<const TensorMeta* const> operands) {
  size_t next = 0;
  for (size_t i = 0; i < post.size(); ++i) {
    if (post[i] < 0 || post[i] >= kNumMatMulPosts) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: unknown post-op %d", rules.op, post[i]));
    }
    const bool is_bias = post[i] == static_cast<int64_t>(MatMulPost::kBias);
    if (is_bias && (i != 0 || has_bias)) {
      return absl::InvalidArgumentError(absl::StrCat(rules.op, ": ", rules.bias_first));
    }
    if (!MatMulPostTakesOperand(post[i])) continue;
    if (next == operands.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(rules.op, ": more bias/add post-ops than operands"));
    }
    const TensorMeta& o = *operands[next++];
    if (o.dtype != out.dtype) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: operand %d has dtype %s but %s has dtype %s", rules.op, next - 1,
          DTypeName(o.dtype), rules.result, DTypeName(out.dtype)));
    }
    PIJIT_ASSIGN_OR_RETURN(Shape s, BroadcastShapes(rules.op, o.shape, out.shape));
    const bool bias_ok = !is_bias || rules.bias_fits(o, out);
    if (s != out.shape || !bias_ok) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: operand %s does not %s %s shape %s", rules.op, ShapeToString(o.shape),
          bias_ok ? "broadcast to" : rules.bias_along, rules.result_shape,
          ShapeToString(out.shape)));
    }
  }
  if (next != operands.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(rules.op, ": more operands than bias/add post-ops"));
  }
  return absl::OkStatus();
}

}  // namespace pijit
