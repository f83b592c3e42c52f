"""Fractional max pooling (fractional_max_pool2d/3d and the FractionalMaxPool*WithFixedKsize
primitives): max pooling over kernel windows whose starts advance by a random, non-integer
stride, so that any output size can be reached.

For each (sample, channel) plane and each spatial axis, one random number u in [0, 1) places the
windows: with alpha = (in - k) / (out - 1), window i starts at int((i + u) alpha) - int(u alpha)
and the last one at in - k (Graham's pseudo-random sequence, the one MindSpore and torch use).
The starts are computed on the host from the random numbers; the values are gathered and
reduced by pijit ops, so the result is differentiable with respect to the input."""
import numpy as np

from pijit import _C
from pijit._tensor import Tensor, float16, float32, float64, int64
from pijit.mint._checks import check_bool, check_tensor, raise_error
from pijit.mint._shape import gather as _gather
from pijit.ops import Primitive

_ops = _C.ops


def _sizes(fname, name, value, rank, kind):
    values = (value,) * rank if isinstance(value, kind) and not isinstance(value, bool) \
        else tuple(value) if isinstance(value, (tuple, list)) else None
    if values is None or len(values) != rank or \
            not all(isinstance(v, kind) and not isinstance(v, bool) for v in values):
        raise_error(ValueError, f"{fname}: {name} must be a {kind.__name__} or a tuple of {rank} "
                                f"of them, got {value!r}")
    return values


def _output_shape(fname, spatial, kernel, output_size, output_ratio):
    if (output_size is None) == (output_ratio is None):
        raise_error(ValueError, f"{fname}: give exactly one of output_size and output_ratio")
    rank = len(spatial)
    if output_size is not None:
        out = _sizes(fname, "output_size", output_size, rank, int)
    else:
        ratio = _sizes(fname, "output_ratio", output_ratio, rank, float)
        if not all(0 < r < 1 for r in ratio):
            raise_error(ValueError, f"{fname}: output_ratio must lie in (0, 1), got {ratio}")
        out = tuple(int(n * r) for n, r in zip(spatial, ratio))
    for n, k, o in zip(spatial, kernel, out):
        if k < 1 or o < 1 or o + k - 1 > n:
            raise_error(ValueError, f"{fname}: an output of {out} with kernel {kernel} does not "
                                    f"fit the input's {spatial} (output + kernel - 1 must not "
                                    f"exceed the input on each axis)")
    return out


def _window_starts(u, size, kernel, out):
    """(N, C, out) starts of the windows along one axis from (N, C) random numbers."""
    starts = np.empty(u.shape + (out,), dtype=np.int64)
    if out > 1:
        alpha = (size - kernel) / (out - 1)
        i = np.arange(out - 1)
        starts[..., :-1] = np.floor((i + u[..., None]) * alpha).astype(np.int64) - \
            np.floor(u * alpha).astype(np.int64)[..., None]
    starts[..., -1] = size - kernel
    return starts


def _window_indices(samples, spatial, kernel, out, axis_of_sample):
    """(N, C, *out, prod(kernel)) flat plane indices of every window's elements."""
    n, c = samples.shape[:2]
    rank = len(spatial)
    flat = np.zeros((n, c) + tuple(out) + tuple(kernel), dtype=np.int64)
    for axis in range(rank):
        starts = _window_starts(samples[..., axis_of_sample[axis]], spatial[axis], kernel[axis],
                                out[axis])
        positions = starts[..., None] + np.arange(kernel[axis])  # (N, C, out, k)
        shape = [n, c] + [1] * (2 * rank)
        shape[2 + axis], shape[2 + rank + axis] = out[axis], kernel[axis]
        flat = flat * spatial[axis] + positions.reshape(shape)
    return flat.reshape((n, c) + tuple(out) + (-1,))


def _fractional_max_pool(fname, x, kernel_size, output_size, output_ratio, return_indices,
                         random_samples, rank, axis_of_sample):
    check_tensor(fname, "input_x", x)
    check_bool(fname, "return_indices", return_indices)
    if x.ndim != rank + 2:
        raise_error(ValueError, f"{fname}: input_x must have {rank + 2} dimensions (N, C, "
                                f"spatial...), got {x.ndim}")
    spatial = tuple(x.shape[2:])
    kernel = _sizes(fname, "kernel_size", kernel_size, rank, int)
    out = _output_shape(fname, spatial, kernel, output_size, output_ratio)
    n, c = x.shape[:2]
    if random_samples is None:
        samples = _ops.uniform((n, c, rank), 0.0, 1.0, dtype=float32).asnumpy()
    else:
        check_tensor(fname, "_random_samples", random_samples)
        if random_samples.dtype not in (float16, float32, float64):
            raise_error(TypeError, f"{fname}: _random_samples must be a float Tensor, got "
                                   f"{random_samples.dtype}")
        if tuple(random_samples.shape) != (n, c, rank):
            raise_error(ValueError, f"{fname}: _random_samples must be ({n}, {c}, {rank}), got "
                                    f"{tuple(random_samples.shape)}")
        samples = random_samples.asnumpy().astype(np.float64)
        if samples.size and (samples.min() < 0 or samples.max() >= 1):
            raise_error(ValueError, f"{fname}: _random_samples must lie in [0, 1)")
    index = _window_indices(samples, spatial, kernel, out, axis_of_sample)
    windows = _gather(_ops.reshape(x, (n, c, -1)), 2,
                      Tensor(index.reshape(n, c, -1)))
    windows = _ops.reshape(windows, index.shape)
    values = _ops.max(windows, -1)
    if not return_indices:
        return values
    best = _ops.argmax(windows, -1).astype(int64)
    argmax = _gather(Tensor(index), rank + 2, _ops.unsqueeze(best, -1))
    return values, _ops.squeeze(argmax, -1)


def fractional_max_pool2d(input_x, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """Fractional max pooling of (N, C, H, W) to (N, C, oH, oW) given by output_size or
    output_ratio; _random_samples (N, C, 2) places the windows (its [..., 0] along the
    width, [..., 1] along the height, as MindSpore), drawn when not given. With
    return_indices also the Int64 flat (h * W + w) index of each maximum."""
    return _fractional_max_pool("fractional_max_pool2d", input_x, kernel_size, output_size,
                                output_ratio, return_indices, _random_samples, 2, (1, 0))


def fractional_max_pool3d(input_x, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """Fractional max pooling of (N, C, D, H, W); _random_samples (N, C, 3) places the
    windows along depth, height and width."""
    return _fractional_max_pool("fractional_max_pool3d", input_x, kernel_size, output_size,
                                output_ratio, return_indices, _random_samples, 3, (0, 1, 2))


class _FixedKsizePool(Primitive):
    """A fractional max pool with its output size fixed at construction: (y, argmax) of
    `_pool` with return_indices, on data in the one layout `_layout`."""
    _layout = ""
    _pool = None

    def __init__(self, ksize, output_shape, data_format=None):
        data_format = self._layout if data_format is None else data_format
        if data_format != self._layout:
            raise_error(ValueError, f"{type(self).__name__}: data_format must be "
                                    f"'{self._layout}', got {data_format!r}")
        super().__init__(ksize=ksize, output_shape=output_shape, data_format=data_format)

    def __call__(self, input_x, random_samples):
        return type(self)._pool(input_x, self.ksize, self.output_shape, None, True,
                                random_samples)


class FractionalMaxPoolWithFixedKsize(_FixedKsizePool):
    """FractionalMaxPoolWithFixedKsize(ksize, output_shape, data_format="NCHW")(input_x,
    random_samples): (y, argmax) as fractional_max_pool2d with return_indices."""
    _layout = "NCHW"
    _pool = staticmethod(fractional_max_pool2d)


class FractionalMaxPool3DWithFixedKsize(_FixedKsizePool):
    """FractionalMaxPool3DWithFixedKsize(ksize, output_shape, data_format="NCDHW")(x,
    random_samples): (y, argmax) as fractional_max_pool3d with return_indices."""
    _layout = "NCDHW"
    _pool = staticmethod(fractional_max_pool3d)


__all__ = ["FractionalMaxPool3DWithFixedKsize", "FractionalMaxPoolWithFixedKsize",
           "fractional_max_pool2d", "fractional_max_pool3d"]
