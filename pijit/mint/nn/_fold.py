"""Sliding windows over the last two axes: unfold (im2col) as strided slices of the padded
input, one per kernel offset; fold (col2im), its adjoint, as a grouped transposed
convolution whose kernel picks one offset per channel; and the argmax indices of a max
pool window. All pijit ops, so they differentiate and capture like them."""
import math

from pijit import _C
from pijit import _ops_composed
from pijit.mint._checks import check_int, check_tensor, raise_error

_ops = _C.ops


def pair(fname, name, value, low):
    """(a, b) from an int or a pair of ints, each at least `low`."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value, value)
    value = tuple(value)
    if len(value) != 2:
        raise_error(ValueError, f"{fname}: {name} must be an int or a pair of ints, got {value}")
    return tuple(check_int(fname, name, v, low=low) for v in value)


def windows(x, kernel, dilation, stride, out_hw):
    """(..., kh * kw, oh, ow): x's element at each kernel offset (row-major) of each window."""
    pieces = []
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            top, left = i * dilation[0], j * dilation[1]
            rows = slice(top, top + stride[0] * (out_hw[0] - 1) + 1, stride[0])
            cols = slice(left, left + stride[1] * (out_hw[1] - 1) + 1, stride[1])
            pieces.append(x[..., rows, cols])
    return _ops.stack(tuple(pieces), -3)


def _out_size(size, kernel, dilation, padding, stride):
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def _window_args(fname, kernel_size, dilation, padding, stride):
    return (pair(fname, "kernel_size", kernel_size, 1), pair(fname, "dilation", dilation, 1),
            pair(fname, "padding", padding, 0), pair(fname, "stride", stride, 1))


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):  # noqa: A002 - mint's name
    """(N, C, H, W) -> (N, C * kh * kw, L): each sliding window's elements as a column, L
    windows in row-major order (zero padding)."""
    check_tensor("unfold", "input", input)
    if input.ndim != 4:
        raise_error(ValueError, f"unfold: input must be 4-D (N, C, H, W), got {input.ndim}-D")
    kernel, dilation, padding, stride = _window_args("unfold", kernel_size, dilation, padding,
                                                     stride)
    n, c, h, w = input.shape
    out_hw = tuple(_out_size(s, k, d, p, st) for s, k, d, p, st in
                   zip((h, w), kernel, dilation, padding, stride))
    if out_hw[0] < 1 or out_hw[1] < 1:
        raise_error(ValueError, f"unfold: the kernel does not fit the padded input {(h, w)}")
    padded = _ops_composed.pad(input, ((0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2)) \
        if padding[0] or padding[1] else input
    cols = windows(padded, kernel, dilation, stride, out_hw)  # (N, C, K, oh, ow)
    return _ops.reshape(cols, (n, c * kernel[0] * kernel[1], out_hw[0] * out_hw[1]))


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):  # noqa: A002
    """(N, C * kh * kw, L) -> (N, C, H, W): the columns summed back into their windows'
    places (unfold's adjoint; overlapping windows add)."""
    check_tensor("fold", "input", input)
    if input.ndim != 3:
        raise_error(ValueError, f"fold: input must be 3-D (N, C * kh * kw, L), got "
                                f"{input.ndim}-D")
    kernel, dilation, padding, stride = _window_args("fold", kernel_size, dilation, padding,
                                                     stride)
    out_h, out_w = pair("fold", "output_size", output_size, 1)
    n, ck, length = input.shape
    k = kernel[0] * kernel[1]
    if ck % k:
        raise_error(ValueError, f"fold: input's axis 1 ({ck}) is not a multiple of the kernel "
                                f"size {k}")
    oh, ow = (_out_size(s, kk, d, p, st) for s, kk, d, p, st in
              zip((out_h, out_w), kernel, dilation, padding, stride))
    if oh * ow != length:
        raise_error(ValueError, f"fold: output_size {(out_h, out_w)} gives {oh * ow} windows, "
                                f"input has {length}")
    channels = ck // k
    # Channel c * K + k of the columns goes back through kernel offset k of channel c.
    picks = _ops.reshape(_ops.eye(k, dtype=input.dtype), (k, 1) + kernel)
    weight = _ops.reshape(_ops.broadcast_to(_ops.unsqueeze(picks, 0), (channels,) + (k, 1) +
                                            kernel), (ck, 1) + kernel)
    # The transposed convolution without padding covers image rows -padding .. up to the
    # last window's end; keep the image's rows and zero-fill any no window reaches.
    out = _ops.conv_transpose2d(_ops.reshape(input, (n, ck, oh, ow)), weight, stride=stride,
                                dilation=dilation, groups=channels)
    kept = tuple(min(covered, p + size) - p for covered, p, size in
                 zip(out.shape[-2:], padding, (out_h, out_w)))
    out = out[..., padding[0]:padding[0] + kept[0], padding[1]:padding[1] + kept[1]]
    if kept != (out_h, out_w):
        out = _ops_composed.pad(out, ((0, 0), (0, 0), (0, out_h - kept[0]),
                                      (0, out_w - kept[1])))
    return out


def max_pool_indices(input, values, kernel, stride, padding, dilation):  # noqa: A002
    """The flat index (h * W + w) in input's last two axes of each of max pooling's
    `values` (the first maximum of its window, in row-major order)."""
    h, w = input.shape[-2:]
    out_hw = values.shape[-2:]
    # Pad with -inf (windows that ceil_mode lets run past the edge included) so a padded
    # place never wins.
    need = tuple((o - 1) * s + d * (k - 1) + 1 for o, s, d, k in zip(out_hw, stride, dilation,
                                                                       kernel))
    after = tuple(max(n - size - p, 0) for n, size, p in zip(need, (h, w), padding))
    lead = ((0, 0),) * (input.ndim - 2)
    padded = _ops_composed.pad(input, lead + ((padding[0], after[0]), (padding[1], after[1])),
                               "CONSTANT", -math.inf)
    offset = _ops.argmax(windows(padded, kernel, dilation, stride, out_hw), -3)
    rows = _ops.reshape(_ops.arange(out_hw[0]) * stride[0] - padding[0], (-1, 1))
    cols = _ops.arange(out_hw[1]) * stride[1] - padding[1]
    row = rows + (offset // kernel[1]) * dilation[0]
    col = cols + (offset % kernel[1]) * dilation[1]
    return row * w + col
