"""Deformable convolution (ops.deformable_conv2d, v2 with modulation masks).

Each output position reads every kernel tap at its regular place plus a learned offset, by
bilinear interpolation (a corner outside the image reads zero), scaled by a learned mask. The
sampling is composed of pijit ops (gathers of the four corners, weighted sums) and the
contraction with the weights is one batched matrix product, so the whole op is captured and
differentiable with respect to the input, the weights, the offsets and the masks."""
from pijit import _C
from pijit._tensor import float16, float32, int64
from pijit.mint._checks import check_tensor, raise_error
from pijit.mint._shape import gather as _gather

_ops = _C.ops


def _four(fname, name, value):
    if not isinstance(value, (tuple, list)) or len(value) != 4 or \
            not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise_error(TypeError, f"{fname}: {name} must be a tuple of 4 ints, got {value!r}")
    return tuple(value)


def _check(x, weight, offsets, kernel_size, strides, padding, dilations, groups,
           deformable_groups, modulated):
    fname = "deformable_conv2d"
    for name, t in (("x", x), ("weight", weight), ("offsets", offsets)):
        check_tensor(fname, name, t)
        if t.ndim != 4:
            raise_error(ValueError, f"{fname}: {name} must be 4-D (NCHW), got {t.ndim}-D")
    if x.dtype not in (float16, float32) or weight.dtype != x.dtype or offsets.dtype != x.dtype:
        raise_error(TypeError, f"{fname}: x, weight and offsets must share a Float16 or Float32 "
                               f"dtype, got {x.dtype}, {weight.dtype}, {offsets.dtype}")
    if not modulated:
        raise_error(ValueError, f"{fname}: only modulated=True (v2) is supported, as in "
                                f"MindSpore")
    kh, kw = kernel_size if isinstance(kernel_size, (tuple, list)) else (None, None)
    if not (isinstance(kh, int) and isinstance(kw, int)) or (kh, kw) != tuple(weight.shape[2:]):
        raise_error(ValueError, f"{fname}: kernel_size {kernel_size!r} must equal the weight's "
                                f"window {tuple(weight.shape[2:])}")
    strides, padding, dilations = (_four(fname, "strides", strides),
                                   _four(fname, "padding", padding),
                                   _four(fname, "dilations", dilations))
    if strides[:2] != (1, 1) or dilations[:2] != (1, 1):
        raise_error(ValueError, f"{fname}: the N and C entries of strides and dilations must be "
                                f"1, got {strides} and {dilations}")
    n, c, h, w = x.shape
    if groups < 1 or deformable_groups < 1 or c % groups or weight.shape[0] % groups or \
            c % deformable_groups or weight.shape[1] * groups != c:
        raise_error(ValueError, f"{fname}: {c} input channels, weight {tuple(weight.shape)}, "
                                f"groups {groups} and deformable_groups {deformable_groups} do "
                                f"not fit")
    oh = (h + padding[0] + padding[1] - dilations[2] * (kh - 1) - 1) // strides[2] + 1
    ow = (w + padding[2] + padding[3] - dilations[3] * (kw - 1) - 1) // strides[3] + 1
    want = (n, 3 * deformable_groups * kh * kw, oh, ow)
    if tuple(offsets.shape) != want:
        raise_error(ValueError, f"{fname}: offsets must be {want} (offset_x, offset_y and mask "
                                f"for each deformable group and tap), got "
                                f"{tuple(offsets.shape)}")
    return strides, padding, dilations, (kh, kw), (oh, ow)


def _sample(x, ys, xs, deformable_groups):
    """Bilinear samples of x (N, C, H, W) at rows ys and columns xs, both
    (N, G, K, L): (N, C, K, L), zero where a corner falls outside the image."""
    n, c, h, w = x.shape
    g = deformable_groups
    k, length = ys.shape[2], ys.shape[3]
    planes = _ops.reshape(x, (n, g, c // g, h * w))
    y0, x0 = _ops.floor(ys), _ops.floor(xs)
    out = None
    for dy in (0, 1):
        for dx in (0, 1):
            cy, cx = y0 + dy, x0 + dx
            # (1 - |ys - cy|) (1 - |xs - cx|) written without abs, whose gradient vanishes
            # where a sample lands exactly on a row or column.
            wy = ys - y0 if dy else y0 + 1 - ys
            wx = xs - x0 if dx else x0 + 1 - xs
            weight = wy * wx
            inside = _ops.logical_and(_ops.logical_and(cy >= 0, cy <= h - 1),
                                      _ops.logical_and(cx >= 0, cx <= w - 1))
            weight = _ops.where(inside, weight, _ops.zeros_like(weight))
            flat = (_ops.clip(cy, 0, h - 1) * w + _ops.clip(cx, 0, w - 1)).astype(int64)
            index = _ops.broadcast_to(_ops.reshape(flat, (n, g, 1, k * length)),
                                      (n, g, c // g, k * length))
            values = _ops.reshape(_gather(planes, 3, index), (n, g, c // g, k, length))
            term = values * _ops.unsqueeze(weight, 2)
            out = term if out is None else out + term
    return _ops.reshape(out, (n, c, k, length))


def deformable_conv2d(x, weight, offsets, kernel_size, strides, padding, bias=None,
                      dilations=(1, 1, 1, 1), groups=1, deformable_groups=1, modulated=True):
    """Modulated deformable convolution of x (N, C, H, W) with weight (O, C / groups, kh, kw).
    offsets (N, 3 * deformable_groups * kh * kw, oH, oW) holds, in this order, the x (width)
    offsets, the y (height) offsets and the masks, each block ordered by deformable group and
    then tap (row-major over the window); strides and dilations are (1, 1, sh, sw), padding
    (top, bottom, left, right)."""
    strides, padding, dilations, (kh, kw), (oh, ow) = _check(
        x, weight, offsets, kernel_size, strides, padding, dilations, groups, deformable_groups,
        modulated)
    n, c = x.shape[:2]
    g, k, length = deformable_groups, kh * kw, oh * ow
    dtype = x.dtype
    rows = _ops.arange(oh).astype(dtype) * strides[2] - padding[0]
    cols = _ops.arange(ow).astype(dtype) * strides[3] - padding[2]
    tap_rows = _ops.reshape(_ops.arange(kh).astype(dtype) * dilations[2], (kh, 1))
    tap_cols = _ops.reshape(_ops.arange(kw).astype(dtype) * dilations[3], (1, kw))
    base_y = _ops.reshape(_ops.broadcast_to(tap_rows, (kh, kw)), (k, 1, 1)) + \
        _ops.reshape(rows, (1, oh, 1))
    base_x = _ops.reshape(_ops.broadcast_to(tap_cols, (kh, kw)), (k, 1, 1)) + \
        _ops.reshape(cols, (1, 1, ow))
    parts = _ops.reshape(offsets, (n, 3, g, k, oh, ow))
    ys = _ops.reshape(parts[:, 1] + base_y, (n, g, k, length))
    xs = _ops.reshape(parts[:, 0] + base_x, (n, g, k, length))
    mask = _ops.reshape(parts[:, 2], (n, g, 1, k, length))
    columns = _sample(x, ys, xs, g)
    columns = _ops.reshape(columns, (n, g, c // g, k, length)) * mask
    columns = _ops.reshape(columns, (n, groups, (c // groups) * k, length))
    o = weight.shape[0]
    kernel = _ops.reshape(weight, (1, groups, o // groups, (c // groups) * k))
    out = _ops.reshape(_ops.matmul(kernel, columns), (n, o, oh, ow))
    if bias is not None:
        check_tensor("deformable_conv2d", "bias", bias)
        if tuple(bias.shape) != (o,):
            raise_error(ValueError, f"deformable_conv2d: bias must be ({o},), got "
                                    f"{tuple(bias.shape)}")
        out = out + _ops.reshape(bias, (1, o, 1, 1))
    return out


__all__ = ["deformable_conv2d"]
