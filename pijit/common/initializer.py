"""Weight initializers (MindSpore's mindspore.common.initializer). Random ones draw from
pijit's global generator, so pijit.set_seed makes them reproducible."""
import math
import numbers

import numpy as np

from pijit import _C
from pijit._numbers import plain
from pijit._tensor import Tensor, float32, float64


def _fans(shape):
    """(fan_in, fan_out): dense weights are (out, in), conv weights (out, in, kh, kw)."""
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


class Initializer:
    """Fills a tensor of a given shape and dtype: `init(shape, dtype)` or
    `initializer(init, shape, dtype)`."""

    def __init__(self, **kwargs):
        self._kwargs = {k: plain(v) for k, v in kwargs.items()}

    def _fill(self, shape, dtype):
        raise NotImplementedError

    def __call__(self, shape, dtype=float32):
        shape = plain(shape)
        shape = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
        return self._fill(shape, dtype)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self._kwargs.items())
        return f"{type(self).__name__}({args})"


class Constant(Initializer):
    """Every element `value`."""

    def __init__(self, value):
        super().__init__(value=value)
        self.value = plain(value)

    def _fill(self, shape, dtype):
        return _C.ops.full(shape, self.value, dtype=dtype)


class Zero(Constant):
    def __init__(self):
        Initializer.__init__(self)
        self.value = 0


class One(Constant):
    def __init__(self):
        Initializer.__init__(self)
        self.value = 1


class Normal(Initializer):
    """N(mean, sigma ** 2)."""

    def __init__(self, sigma=0.01, mean=0.0):
        super().__init__(sigma=sigma, mean=mean)
        self.sigma, self.mean = plain(sigma), plain(mean)

    def _fill(self, shape, dtype):
        return _C.ops.normal(shape, self.mean, self.sigma, dtype=dtype)


class TruncatedNormal(Initializer):
    """N(mean, sigma ** 2) restricted to [a, b] (absolute bounds, as MindSpore 2.x): draws
    outside are drawn again."""

    def __init__(self, sigma=0.01, mean=0.0, a=-2.0, b=2.0):
        super().__init__(sigma=sigma, mean=mean, a=a, b=b)
        self.sigma, self.mean, self.a, self.b = (float(plain(v)) for v in (sigma, mean, a, b))
        if not self.a < self.b:
            raise ValueError(f"TruncatedNormal: a ({self.a}) must be below b ({self.b})")

    def _fill(self, shape, dtype):
        out = _C.ops.normal(shape, self.mean, self.sigma, dtype=float64).asnumpy().copy()
        outside = (out < self.a) | (out > self.b)
        for _ in range(1000):
            n = int(outside.sum())
            if n == 0:
                break
            out[outside] = _C.ops.normal((n,), self.mean, self.sigma, dtype=float64).asnumpy()
            outside = (out < self.a) | (out > self.b)
        else:  # bounds far in a tail: the few left are clipped to them
            out[outside] = np.clip(out[outside], self.a, self.b)
        return Tensor(out, dtype)


class Uniform(Initializer):
    """U(-scale, scale)."""

    def __init__(self, scale=0.07):
        super().__init__(scale=scale)
        self.scale = plain(scale)

    def _fill(self, shape, dtype):
        return _C.ops.uniform(shape, -self.scale, self.scale, dtype=dtype)


class _Glorot(Initializer):
    """Xavier (Glorot) initialization, whose scale is gain * sqrt(k / (fan_in + fan_out))."""

    def __init__(self, gain=1):
        super().__init__(gain=gain)
        self.gain = plain(gain)

    def _scale(self, shape, k):
        fan_in, fan_out = _fans(shape)
        return self.gain * math.sqrt(k / max(1, fan_in + fan_out))


class XavierUniform(_Glorot):
    """U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out)) (Glorot)."""

    def _fill(self, shape, dtype):
        bound = self._scale(shape, 6.0)
        return _C.ops.uniform(shape, -bound, bound, dtype=dtype)


def _he_std(shape, negative_slope, mode, nonlinearity, name):
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"{name}: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan = _fans(shape)[0 if mode == "fan_in" else 1]
    if nonlinearity == "leaky_relu":
        gain = math.sqrt(2.0 / (1 + negative_slope ** 2))
    elif nonlinearity == "relu":
        gain = math.sqrt(2.0)
    elif nonlinearity in ("linear", "sigmoid", "conv2d"):
        gain = 1.0
    elif nonlinearity == "tanh":
        gain = 5.0 / 3
    else:
        raise ValueError(f"{name}: unsupported nonlinearity {nonlinearity!r}")
    return gain / math.sqrt(max(1, fan))


class _Kaiming(Initializer):
    """He (Kaiming) initialization, whose scale is _he_std's gain / sqrt(fan)."""

    def __init__(self, negative_slope=0, mode="fan_in", nonlinearity="leaky_relu"):
        super().__init__(negative_slope=negative_slope, mode=mode, nonlinearity=nonlinearity)
        self.args = (plain(negative_slope), mode, nonlinearity)


class HeUniform(_Kaiming):
    """U(-b, b) with b = gain * sqrt(3 / fan) (Kaiming)."""

    def _fill(self, shape, dtype):
        bound = math.sqrt(3.0) * _he_std(shape, *self.args, "HeUniform")
        return _C.ops.uniform(shape, -bound, bound, dtype=dtype)


class HeNormal(_Kaiming):
    """N(0, std ** 2) with std = gain / sqrt(fan) (Kaiming)."""

    def _fill(self, shape, dtype):
        return _C.ops.normal(shape, 0.0, _he_std(shape, *self.args, "HeNormal"), dtype=dtype)


class XavierNormal(_Glorot):
    """N(0, std ** 2) with std = gain * sqrt(2 / (fan_in + fan_out)) (Glorot)."""

    def _fill(self, shape, dtype):
        return _C.ops.normal(shape, 0.0, self._scale(shape, 2.0), dtype=dtype)


# The standard deviation of a standard normal truncated to [-2, 2]: VarianceScaling divides
# by it so that its truncated draws keep the asked-for variance.
_TRUNCATED_STD = 0.87962566103423978


class VarianceScaling(Initializer):
    """Draws with variance scale / n, n the fan in, the fan out or their mean (mode): a
    normal truncated to two standard deviations, an untruncated normal, or a uniform."""

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal"):
        super().__init__(scale=scale, mode=mode, distribution=distribution)
        self.scale = float(plain(scale))
        if self.scale <= 0:
            raise ValueError(f"VarianceScaling: scale must be positive, got {scale!r}")
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"VarianceScaling: mode must be 'fan_in', 'fan_out' or 'fan_avg', "
                             f"got {mode!r}")
        if distribution not in ("truncated_normal", "untruncated_normal", "uniform"):
            raise ValueError(f"VarianceScaling: distribution must be 'truncated_normal', "
                             f"'untruncated_normal' or 'uniform', got {distribution!r}")
        self.mode, self.distribution = mode, distribution

    def _fill(self, shape, dtype):
        fan_in, fan_out = _fans(shape)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[self.mode]
        variance = self.scale / max(1.0, n)
        if self.distribution == "uniform":
            limit = math.sqrt(3.0 * variance)
            return _C.ops.uniform(shape, -limit, limit, dtype=dtype)
        std = math.sqrt(variance)
        if self.distribution == "untruncated_normal":
            return _C.ops.normal(shape, 0.0, std, dtype=dtype)
        std /= _TRUNCATED_STD
        return TruncatedNormal(std, 0.0, -2.0 * std, 2.0 * std)(shape, dtype)


class Orthogonal(Initializer):
    """gain times a random orthogonal matrix (of the shape flattened to (shape[0], rest)):
    the Q of a QR decomposition of normal draws, its columns' signs fixed by R's diagonal."""

    def __init__(self, gain=1.0):
        super().__init__(gain=gain)
        self.gain = float(plain(gain))

    def _fill(self, shape, dtype):
        if len(shape) < 2:
            raise ValueError(f"Orthogonal: the shape must have at least 2 dimensions, got "
                             f"{shape}")
        rows, cols = shape[0], math.prod(shape[1:])
        tall = (max(rows, cols), min(rows, cols))
        draws = _C.ops.normal(tall, 0.0, 1.0, dtype=float64).asnumpy()
        q, r = np.linalg.qr(draws)
        q = q * np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        return Tensor((self.gain * q).reshape(shape), dtype)


class Identity(Initializer):
    """The identity matrix (a 2-D shape; ones on the main diagonal of a rectangle)."""

    def _fill(self, shape, dtype):
        if len(shape) != 2:
            raise ValueError(f"Identity: the shape must be 2-D, got {shape}")
        return _C.ops.eye(shape[0], shape[1], dtype=dtype)


class Dirac(Initializer):
    """Convolution weights (out, in, *kernel) that pass channels through: in each of
    `groups` groups, output channel d takes input channel d at the kernel's centre."""

    def __init__(self, groups=1):
        super().__init__(groups=groups)
        self.groups = int(plain(groups))

    def _fill(self, shape, dtype):
        if len(shape) not in (3, 4, 5):
            raise ValueError(f"Dirac: the shape must be 3-D, 4-D or 5-D, got {shape}")
        if self.groups < 1 or shape[0] % self.groups:
            raise ValueError(f"Dirac: {shape[0]} output channels do not divide into "
                             f"{self.groups} groups")
        out = np.zeros(shape)
        per_group = shape[0] // self.groups
        centre = tuple(k // 2 for k in shape[2:])
        for g in range(self.groups):
            for d in range(min(per_group, shape[1])):
                out[(g * per_group + d, d) + centre] = 1.0
        return Tensor(out, dtype)


class Sparse(Initializer):
    """A 2-D matrix of N(0, sigma ** 2) draws with ceil(sparsity * rows) zeros at random rows
    of each column."""

    def __init__(self, sparsity, sigma=0.01):
        super().__init__(sparsity=sparsity, sigma=sigma)
        self.sparsity, self.sigma = float(plain(sparsity)), float(plain(sigma))
        if not 0.0 <= self.sparsity <= 1.0:
            raise ValueError(f"Sparse: sparsity must be in [0, 1], got {sparsity!r}")

    def _fill(self, shape, dtype):
        if len(shape) != 2:
            raise ValueError(f"Sparse: the shape must be 2-D, got {shape}")
        rows, cols = shape
        out = _C.ops.normal(shape, 0.0, self.sigma, dtype=float64).asnumpy().copy()
        zeros = int(math.ceil(self.sparsity * rows))
        # Each column's zero rows: the first `zeros` of a random order (from pijit's
        # generator, so pijit.set_seed decides them).
        keys = _C.ops.uniform((rows, cols), 0.0, 1.0, dtype=float64).asnumpy()
        order = np.argsort(keys, axis=0)[:zeros]
        out[order, np.arange(cols)] = 0.0
        return Tensor(out, dtype)


_BY_NAME = {
    "zeros": Zero, "zero": Zero, "ones": One, "one": One, "normal": Normal, "uniform": Uniform,
    "xavier_uniform": XavierUniform, "xavieruniform": XavierUniform, "he_uniform": HeUniform,
    "heuniform": HeUniform, "he_normal": HeNormal, "henormal": HeNormal,
    "truncatednormal": TruncatedNormal, "truncated_normal": TruncatedNormal,
    "xavier_normal": XavierNormal, "xaviernormal": XavierNormal, "orthogonal": Orthogonal,
    "identity": Identity, "dirac": Dirac, "variancescaling": VarianceScaling,
    "variance_scaling": VarianceScaling,
}


def initializer(init, shape=None, dtype=float32):
    """A Tensor of `shape` and `dtype` filled by `init`: an Initializer, its name ('normal',
    'zeros', 'xavier_uniform', ...), a number (a constant) or a Tensor/array of that shape."""
    init, shape = plain(init), plain(shape)
    if isinstance(init, (Tensor, np.ndarray)):
        if shape is not None and tuple(np.shape(init)) != tuple(
                (shape,) if isinstance(shape, numbers.Integral) else shape):
            raise ValueError(f"initializer: a tensor of shape {tuple(np.shape(init))} does not "
                             f"match the shape {tuple(shape)}")
        return Tensor(init, dtype)
    if shape is None:
        raise ValueError("initializer: shape is required unless init is a Tensor")
    if isinstance(init, str):
        cls = _BY_NAME.get(init.lower())
        if cls is None:
            raise ValueError(f"initializer: unknown initializer {init!r}; expected one of "
                             f"{sorted(set(_BY_NAME))}")
        init = cls()
    elif isinstance(init, bool) or not isinstance(init, (numbers.Number, Initializer)):
        raise TypeError(f"initializer: init must be an Initializer, a str, a number or a "
                        f"Tensor, got {type(init).__name__}")
    elif isinstance(init, numbers.Number):
        init = Constant(init)
    return init(shape, dtype)


__all__ = ["Initializer", "Constant", "Zero", "One", "Normal", "TruncatedNormal", "Uniform",
           "XavierUniform", "XavierNormal", "HeUniform", "HeNormal", "VarianceScaling",
           "Orthogonal", "Identity", "Dirac", "Sparse", "initializer"]
