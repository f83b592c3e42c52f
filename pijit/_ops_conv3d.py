"""3-D convolution and pooling of (N, C, D, H, W) data from the 2-D native ops: conv3d runs
one conv2d per kernel depth offset over the depth positions folded into the batch and sums
them; max and average pooling are separable, so the depth window is reduced over strided
slices and the (H, W) window by the 2-D pool. Gradients come from the 2-D ops' rules."""
from pijit import _C
from pijit import _ops_composed
from pijit import _ops_resize
from pijit.mint._checks import check_tensor, raise_error

_ops = _C.ops


def _triple(fname, name, value, low):
    value = (value,) * 3 if isinstance(value, int) and not isinstance(value, bool) \
        else tuple(value)
    if len(value) != 3 or not all(isinstance(v, int) and v >= low for v in value):
        raise_error(ValueError, f"{fname}: {name} must be an int >= {low} or 3 of them, got "
                                f"{value!r}")
    return value


def _pads(fname, pad_mode, padding, sizes, kernel, stride, dilation):
    """((front, back) for D, H and W) by MindSpore's pad modes: 'valid' none, 'pad' the given
    padding (an int, or head, tail, top, bottom, left, right), 'same' enough for
    ceil(size / stride) outputs, the odd element at the end."""
    if pad_mode == "valid":
        return ((0, 0),) * 3
    if pad_mode == "pad":
        pads = (padding,) * 6 if isinstance(padding, int) else tuple(padding)
        if len(pads) == 3:
            pads = (pads[0], pads[0], pads[1], pads[1], pads[2], pads[2])
        if len(pads) != 6 or any(p < 0 for p in pads):
            raise_error(ValueError, f"{fname}: padding must be a non-negative int, 3 or 6 of "
                                    f"them, got {padding!r}")
        return ((pads[0], pads[1]), (pads[2], pads[3]), (pads[4], pads[5]))
    if pad_mode != "same":
        raise_error(ValueError, f"{fname}: pad_mode must be 'same', 'valid' or 'pad', got "
                                f"{pad_mode!r}")
    out = []
    for size, k, s, d in zip(sizes, kernel, stride, dilation):
        total = max((-(-size // s) - 1) * s + (k - 1) * d + 1 - size, 0)
        out.append((total // 2, total - total // 2))
    return tuple(out)


def _depth_slices(x, k, stride, dilation):
    """The (N, C, D_out, H, W) slices of x along depth, one per kernel depth offset."""
    depth = x.shape[2]
    d_out = (depth - dilation * (k - 1) - 1) // stride + 1
    if d_out < 1:
        raise_error(ValueError, f"the kernel depth {k} does not fit the padded depth {depth}")
    return [x[:, :, i * dilation:i * dilation + stride * (d_out - 1) + 1:stride]
            for i in range(k)], d_out


def conv3d(input, weight, bias=None, stride=1, pad_mode="valid", padding=0, dilation=1,  # noqa: A002
           groups=1):
    """3-D convolution of (N, C, D, H, W) input with weight (O, C / groups, kd, kh, kw)."""
    fname = "conv3d"
    check_tensor(fname, "input", input)
    check_tensor(fname, "weight", weight)
    if input.ndim != 5 or weight.ndim != 5:
        raise_error(ValueError, f"{fname}: input and weight must be 5-D, got {input.ndim}-D "
                                f"and {weight.ndim}-D")
    stride = _triple(fname, "stride", stride, 1)
    dilation = _triple(fname, "dilation", dilation, 1)
    kernel = tuple(weight.shape[2:])
    pads = _pads(fname, pad_mode, padding, input.shape[2:], kernel, stride, dilation)
    if any(p for pair in pads for p in pair):
        input = _ops_composed.pad(input, ((0, 0), (0, 0)) + pads)  # noqa: A001
    slices, d_out = _depth_slices(input, kernel[0], stride[0], dilation[0])
    n, c = input.shape[0], input.shape[1]
    total = None
    for i, piece in enumerate(slices):
        folded = _ops.reshape(_ops.transpose(piece, (0, 2, 1, 3, 4)),
                              (n * d_out, c) + tuple(piece.shape[3:]))
        out = _ops.conv2d(folded, weight[:, :, i], stride=stride[1:], dilation=dilation[1:],
                          groups=groups)
        total = out if total is None else total + out
    out = _ops.transpose(_ops.reshape(total, (n, d_out) + tuple(total.shape[1:])),
                         (0, 2, 1, 3, 4))
    if bias is not None:
        out = out + _ops.reshape(bias, (-1, 1, 1, 1))
    return out


def _pool_depth(fname, x, kernel, stride, padding, reduce, fill):
    """The depth window reduced (reduce: maximum or add) over strided slices, after padding
    depth with `fill`."""
    if padding[0]:
        x = _ops_composed.pad(x, ((0, 0), (0, 0), (padding[0],) * 2, (0, 0), (0, 0)),
                              "CONSTANT", fill)
    slices, _ = _depth_slices(x, kernel[0], stride[0], 1)
    out = slices[0]
    for piece in slices[1:]:
        out = reduce(out, piece)
    return out


def _pool_plane(fname, x, pool, kernel, stride, padding, **kwargs):
    """The (H, W) window pooled by the 2-D pool over the depth positions folded into C."""
    n, c, d = x.shape[0], x.shape[1], x.shape[2]
    flat = _ops.reshape(x, (n, c * d) + tuple(x.shape[3:]))
    out = pool(flat, kernel[1:], stride=stride[1:], padding=padding[1:], **kwargs)
    return _ops.reshape(out, (n, c, d) + tuple(out.shape[2:]))


def _pool_args(fname, x, kernel_size, stride, padding, ceil_mode):
    check_tensor(fname, "x", x)
    if x.ndim != 5:
        raise_error(ValueError, f"{fname}: expects (N, C, D, H, W) input, got {x.ndim}-D")
    if ceil_mode:
        raise_error(ValueError, f"{fname}: ceil_mode=True is not supported")
    kernel = _triple(fname, "kernel_size", kernel_size, 1)
    stride = kernel if stride is None else _triple(fname, "stride", stride, 1)
    return kernel, stride, _triple(fname, "padding", padding, 0)


def max_pool3d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """The maximum over each kernel window of (N, C, D, H, W) data (padding reads -inf)."""
    fname = "max_pool3d"
    kernel, stride, padding = _pool_args(fname, x, kernel_size, stride, padding, ceil_mode)
    if return_indices or dilation not in (1, (1, 1, 1)):
        raise_error(ValueError, f"{fname}: return_indices and dilation other than 1 are not "
                                f"supported")
    depth = _pool_depth(fname, x, kernel, stride, padding, _ops.maximum, -float("inf"))
    return _pool_plane(fname, depth, _ops.max_pool2d, kernel, stride, padding)


def avg_pool3d(input_x, kernel_size=1, stride=1, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=0):
    """The mean over each kernel window of (N, C, D, H, W) data, padded places counted (or
    the sum divided by divisor_override when it is not 0)."""
    fname = "avg_pool3d"
    kernel, stride, padding = _pool_args(fname, input_x, kernel_size, stride, padding,
                                         ceil_mode)
    if not count_include_pad and any(padding):
        raise_error(ValueError, f"{fname}: count_include_pad=False with padding is not "
                                f"supported")
    depth = _pool_depth(fname, input_x, kernel, stride, padding, _ops.add, 0.0) / kernel[0]
    out = _pool_plane(fname, depth, _ops.avg_pool2d, kernel, stride, padding,
                      count_include_pad=True)
    if divisor_override:
        out = out * (kernel[0] * kernel[1] * kernel[2] / divisor_override)
    return out


def _depth_bins(depth, out):
    """Adaptive pooling's bins along depth: [floor(i * D / out), ceil((i + 1) * D / out))."""
    return [(i * depth // out, -(-(i + 1) * depth // out)) for i in range(out)]


def _adaptive3d(fname, input, output_size, reduce_depth, pool2d):  # noqa: A002
    """Adaptive pooling of (N, C, D, H, W): each output cell's box is a product of one bin
    per axis, so the depth bins are reduced first and the (H, W) bins by the 2-D op."""
    check_tensor(fname, "input", input)
    if input.ndim != 5:
        raise_error(ValueError, f"{fname}: expects (N, C, D, H, W) input, got {input.ndim}-D")
    sizes = (output_size,) * 3 if isinstance(output_size, int) else tuple(output_size)
    if len(sizes) != 3:
        raise_error(ValueError, f"{fname}: output_size must be an int or 3 of them, got "
                                f"{output_size!r}")
    sizes = tuple(input.shape[2 + i] if s is None else s for i, s in enumerate(sizes))
    pieces = [reduce_depth(input[:, :, lo:hi], 2, keepdims=True)
              for lo, hi in _depth_bins(input.shape[2], sizes[0])]
    depth = _ops.concat(tuple(pieces), 2)
    n, c, d = depth.shape[0], depth.shape[1], depth.shape[2]
    flat = pool2d(_ops.reshape(depth, (n, c * d) + tuple(depth.shape[3:])), sizes[1:])
    return _ops.reshape(flat, (n, c, d) + tuple(flat.shape[2:]))


def adaptive_avg_pool3d(input, output_size):  # noqa: A002
    """The mean over windows splitting D, H and W into output_size parts."""
    return _adaptive3d("adaptive_avg_pool3d", input, output_size, _ops.mean,
                       _ops_resize.adaptive_avg_pool2d)


def adaptive_max_pool3d(input, output_size):  # noqa: A002
    """The maximum over windows splitting D, H and W into output_size parts."""
    return _adaptive3d("adaptive_max_pool3d", input, output_size, _ops.max,
                       _ops_resize.adaptive_max_pool2d)


__all__ = ["adaptive_avg_pool3d", "adaptive_max_pool3d", "avg_pool3d", "conv3d", "max_pool3d"]
