"""Resizing operations with MindSpore's names and signatures: interpolate (nearest, linear,
bilinear, trilinear, area), adaptive average and max pooling in 1-D and 2-D, pixel_shuffle and
pixel_unshuffle. Each is composed of pijit's native ops: the sampling positions and weights
depend only on shapes, so a constexpr helper computes them at compile time and the data moves
through gather (nearest), one matmul per axis (linear, area, adaptive average) or slices and
max (adaptive max). Gradients come from those ops' rules."""
import math

import numpy as np

from pijit import _C
from pijit._numbers import plain
from pijit.ops import constexpr

_ops = _C.ops
_MODES = {"nearest": None, "linear": 1, "bilinear": 2, "trilinear": 3, "area": None}


def _sizes(name, what, v, n):
    """An int or n ints, each positive (None entries allowed where `what` says so)."""
    v = plain(v)
    if isinstance(v, int) and not isinstance(v, bool):
        v = (v,) * n
    v = tuple(v) if isinstance(v, (tuple, list)) else v
    if not isinstance(v, tuple) or len(v) != n or any(
            x is not None and (isinstance(x, bool) or not isinstance(x, int) or x <= 0) for x in v):
        raise ValueError(f"{name}: {what} must be a positive int or {n} positive ints, got {v!r}")
    return v


@constexpr
def _window_matrix(n_in, n_out, dtype):
    """(n_out, n_in) averaging weights of adaptive pooling: output i averages inputs
    floor(i * n_in / n_out) .. ceil((i + 1) * n_in / n_out) - 1."""
    m = np.zeros((n_out, n_in))
    for i in range(n_out):
        lo, hi = (i * n_in) // n_out, -((-(i + 1) * n_in) // n_out)
        m[i, lo:hi] = 1.0 / (hi - lo)
    return _C.Tensor(m, dtype)


@constexpr
def _windows(n_in, n_out):
    return tuple(((i * n_in) // n_out, -((-(i + 1) * n_in) // n_out)) for i in range(n_out))


@constexpr
def _linear_matrix(n_in, n_out, scale, align_corners, dtype):
    """(n_out, n_in) weights of linear interpolation along one axis (the half-pixel rule
    unless align_corners)."""
    m = np.zeros((n_out, n_in))
    for i in range(n_out):
        if align_corners:
            src = i * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        else:
            src = max((i + 0.5) * scale - 0.5, 0.0)
        lo = min(int(math.floor(src)), n_in - 1)
        hi = min(lo + 1, n_in - 1)
        w = src - lo
        m[i, lo] += 1.0 - w
        m[i, hi] += w
    return _C.Tensor(m, dtype)


@constexpr
def _nearest_index(n_in, n_out, scale):
    return _C.Tensor(np.minimum(np.floor(np.arange(n_out) * scale), n_in - 1).astype(np.int64))


def _swap(x, a, b):
    perm = list(range(len(x.shape)))
    perm[a], perm[b] = perm[b], perm[a]
    return _ops.transpose(x, tuple(perm))


def _apply(x, axis, matrix):
    last = len(x.shape) - 1
    if axis == last:
        return _ops.matmul(x, _ops.transpose(matrix, (1, 0)))
    return _swap(_ops.matmul(_swap(x, axis, last), _ops.transpose(matrix, (1, 0))), axis, last)


def _check_rank(name, x, spatial):
    if len(x.shape) != spatial + 2:
        raise ValueError(f"{name}: expects a {spatial + 2}-D input (N, C, {spatial} spatial "
                         f"axes), got shape {tuple(x.shape)}")


def adaptive_avg_pool2d(input, output_size):  # noqa: A002 - MindSpore's name
    """Averages over windows that split H and W into output_size parts (None keeps a size)."""
    _check_rank("adaptive_avg_pool2d", input, 2)
    out = _sizes("adaptive_avg_pool2d", "output_size", output_size, 2)
    return _adaptive_avg(input, out)


def adaptive_avg_pool1d(input, output_size):  # noqa: A002
    _check_rank("adaptive_avg_pool1d", input, 1)
    return _adaptive_avg(input, _sizes("adaptive_avg_pool1d", "output_size", output_size, 1))


def _resized_axes(x, out):
    """(axis, size in, size out) of the trailing axes whose size changes to `out`'s (a tuple,
    not a generator: captured code does not run generator functions)."""
    first = len(x.shape) - len(out)
    return tuple((first + k, x.shape[first + k], n_out) for k, n_out in enumerate(out)
                 if n_out is not None and n_out != x.shape[first + k])


def _adaptive_avg(x, out):
    for axis, n_in, n_out in _resized_axes(x, out):
        if n_out == 1:
            x = _ops.mean(x, axis, keepdims=True)
        else:
            x = _apply(x, axis, _window_matrix(n_in, n_out, x.dtype))
    return x


def adaptive_max_pool2d(input, output_size, return_indices=False):  # noqa: A002
    """Maximum over windows that split H and W into output_size parts."""
    _check_rank("adaptive_max_pool2d", input, 2)
    if return_indices:
        raise ValueError("adaptive_max_pool2d: return_indices=True is not supported")
    return _adaptive_max(input, _sizes("adaptive_max_pool2d", "output_size", output_size, 2))


def adaptive_max_pool1d(input, output_size):  # noqa: A002
    _check_rank("adaptive_max_pool1d", input, 1)
    return _adaptive_max(input, _sizes("adaptive_max_pool1d", "output_size", output_size, 1))


def _adaptive_max(x, out):
    for axis, n_in, n_out in _resized_axes(x, out):
        head = (slice(None),) * axis
        parts = [_ops.max(x[head + (slice(lo, hi),)], axis, keepdims=True)
                 for lo, hi in _windows(n_in, n_out)]
        x = parts[0] if len(parts) == 1 else _ops.concat(parts, axis)
    return x


def _output_size(name, x, size, scale_factor, spatial):
    if (size is None) == (scale_factor is None):
        raise ValueError(f"{name}: give exactly one of size and scale_factor")
    in_sizes = tuple(x.shape[2:])
    if size is not None:
        out = _sizes(name, "size", size, spatial)
        return out, tuple(i / o for i, o in zip(in_sizes, out))
    sf = plain(scale_factor)
    sf = (sf,) * spatial if isinstance(sf, (int, float)) and not isinstance(sf, bool) else tuple(sf)
    if len(sf) != spatial or any(isinstance(s, bool) or not s > 0 for s in sf):
        raise ValueError(f"{name}: scale_factor must be a positive number or {spatial} of them, "
                         f"got {scale_factor!r}")
    out = tuple(int(math.floor(i * s)) for i, s in zip(in_sizes, sf))
    if any(o <= 0 for o in out):
        raise ValueError(f"{name}: scale_factor {scale_factor!r} leaves an empty output")
    return out, tuple(1.0 / s for s in sf)


def interpolate(input, size=None, scale_factor=None, mode="nearest",  # noqa: A002
                align_corners=None, recompute_scale_factor=None):
    """Resizes the spatial axes (all but N and C): 'nearest' copies the source element at
    floor(i * scale); 'linear'/'bilinear'/'trilinear' interpolate (3-, 4-, 5-D input) with the
    half-pixel rule, or corner to corner with align_corners=True; 'area' averages as adaptive
    average pooling does."""
    name = "interpolate"
    if mode not in _MODES:
        raise ValueError(f"{name}: mode must be one of {sorted(_MODES)}, got {mode!r}")
    spatial = len(input.shape) - 2
    if spatial < 1:
        raise ValueError(f"{name}: expects at least 3-D input (N, C, ...), got shape "
                         f"{tuple(input.shape)}")
    if _MODES[mode] is not None and _MODES[mode] != spatial:
        raise ValueError(f"{name}: mode '{mode}' needs a {_MODES[mode] + 2}-D input, got shape "
                         f"{tuple(input.shape)}")
    if align_corners is not None and _MODES[mode] is None:
        raise ValueError(f"{name}: align_corners applies to the linear modes only, not '{mode}'")
    out, scales = _output_size(name, input, size, scale_factor, spatial)
    if recompute_scale_factor:
        scales = tuple(i / o for i, o in zip(input.shape[2:], out))
    if mode == "area":
        return _adaptive_avg(input, out)
    x = input
    for k in range(spatial):
        axis, n_in = 2 + k, input.shape[2 + k]
        if mode == "nearest":
            if out[k] != n_in or scales[k] != 1.0:
                x = _ops.gather(x, _nearest_index(n_in, out[k], scales[k]), axis)
        else:
            x = _apply(x, axis, _linear_matrix(n_in, out[k], scales[k], bool(align_corners),
                                               x.dtype))
    return x


def pixel_shuffle(input, upscale_factor):  # noqa: A002
    """(N, C * r * r, H, W) -> (N, C, H * r, W * r)."""
    r = _sizes("pixel_shuffle", "upscale_factor", upscale_factor, 1)[0]
    _check_rank("pixel_shuffle", input, 2)
    n, c, h, w = input.shape
    if c % (r * r):
        raise ValueError(f"pixel_shuffle: the {c} channels are not divisible by "
                         f"upscale_factor ** 2 = {r * r}")
    x = input.reshape((n, c // (r * r), r, r, h, w))
    return _ops.transpose(x, (0, 1, 4, 2, 5, 3)).reshape((n, c // (r * r), h * r, w * r))


def pixel_unshuffle(input, downscale_factor):  # noqa: A002
    """(N, C, H * r, W * r) -> (N, C * r * r, H, W)."""
    r = _sizes("pixel_unshuffle", "downscale_factor", downscale_factor, 1)[0]
    _check_rank("pixel_unshuffle", input, 2)
    n, c, h, w = input.shape
    if h % r or w % r:
        raise ValueError(f"pixel_unshuffle: H ({h}) and W ({w}) must be divisible by "
                         f"downscale_factor {r}")
    x = input.reshape((n, c, h // r, r, w // r, r))
    return _ops.transpose(x, (0, 1, 3, 5, 2, 4)).reshape((n, c * r * r, h // r, w // r))


__all__ = ["interpolate", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d",
           "adaptive_max_pool2d", "pixel_shuffle", "pixel_unshuffle"]
