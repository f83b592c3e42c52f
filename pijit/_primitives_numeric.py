"""Numerical primitives: AccumulateNV2, FloatStatus, Eig (and ops.eigvals), MatrixLogarithm,
Betainc and ParameterizedTruncatedNormal.

Eig and MatrixLogarithm run LAPACK on the host (NumPy, SciPy) and give complex results, which
pijit's complex dtypes hold; as in MindSpore they have no gradient. Betainc's value comes from
SciPy on the host and its gradient with respect to x is composed of pijit ops (MindSpore
differentiates x only). The truncated normal draws come from pijit's generator and are inverted
through the normal CDF by pijit ops."""
import importlib

import numpy as np

from pijit import _C
from pijit import ops as _pijit_ops
from pijit._ops_composed import addn
from pijit._tensor import Tensor, complex64, complex128, float32, float64
from pijit.mint._checks import check_bool, check_tensor, raise_error
from pijit.nn.cell import Cell
from pijit.ops import Primitive

_ops = _C.ops


def _scipy(module, fname):
    """A SciPy module, imported when an op first needs it (pijit itself needs only NumPy)."""
    try:
        return importlib.import_module(f"scipy.{module}")
    except ImportError:
        raise_error(ImportError, f"{fname} computes with SciPy, which is not installed "
                                 f"(pip install scipy)")


class AccumulateNV2(Primitive):
    """AccumulateNV2()(inputs): the element-wise sum of a list or tuple of tensors of one shape
    and dtype (AddN's sum)."""

    def __call__(self, inputs):
        if not isinstance(inputs, (list, tuple)) or not inputs:
            raise_error(TypeError, "AccumulateNV2: inputs must be a non-empty list or tuple of "
                                   "Tensors")
        first = inputs[0]
        for i, t in enumerate(inputs):
            check_tensor("AccumulateNV2", f"inputs[{i}]", t)
            if tuple(t.shape) != tuple(first.shape) or t.dtype != first.dtype:
                raise_error(ValueError, f"AccumulateNV2: inputs[{i}] is {t.dtype} "
                                        f"{tuple(t.shape)}, inputs[0] {first.dtype} "
                                        f"{tuple(first.shape)}; all must match")
        return addn(tuple(inputs))


class FloatStatus(Primitive):
    """FloatStatus()(x): a (1,) tensor of x's dtype holding 1 when x has a NaN or an infinity,
    else 0 (the overflow check of loss scaling)."""

    def __call__(self, x):
        check_tensor("FloatStatus", "x", x)
        if not x.is_floating_point():
            raise_error(TypeError, f"FloatStatus: x must be a float Tensor, got {x.dtype}")
        bad = _ops.logical_not(_ops.all(_pijit_ops.isfinite(x)))
        return _ops.reshape(bad.astype(x.dtype), (1,))


def _square_matrices(fname, x, dtypes):
    check_tensor(fname, "x", x)
    if x.dtype not in dtypes:
        raise_error(TypeError, f"{fname}: x must be one of {', '.join(map(str, dtypes))}, got "
                               f"{x.dtype}")
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise_error(ValueError, f"{fname}: x must be square matrices (*, N, N), got shape "
                                f"{tuple(x.shape)}")
    values = x.asnumpy()
    if not np.isfinite(values).all():
        raise_error(ValueError, f"{fname}: x holds NaN or infinity")
    return values


def _complex_of(dtype):
    return np.complex128 if dtype in (float64, complex128) else np.complex64


class Eig(Primitive):
    """Eig(compute_v=False)(x (*, N, N) float or complex): (eigenvalues (*, N), unit eigenvectors
    in the columns of (*, N, N)), both complex; without compute_v the vectors are an empty
    tensor. The eigenvalues come in LAPACK's order."""

    def __init__(self, compute_v=False):
        check_bool("Eig", "compute_v", compute_v)
        super().__init__(compute_v=compute_v)

    def __call__(self, x):
        values = _square_matrices("Eig", x, (float32, float64, complex64, complex128))
        target = _complex_of(x.dtype)
        if self.compute_v:
            w, v = np.linalg.eig(values)
            return Tensor(w.astype(target)), Tensor(v.astype(target))
        w = np.linalg.eigvals(values)
        return Tensor(w.astype(target)), Tensor(np.zeros((0,), target))


def eigvals(A):  # noqa: N803 - MindSpore's name
    """The complex eigenvalues (*, N) of square matrices A (*, N, N)."""
    return Eig(False)(A)[0]


class MatrixLogarithm(Primitive):
    """MatrixLogarithm()(x (*, N, N) complex64 or complex128): the principal matrix logarithm
    of each matrix (SciPy's logm)."""

    def __call__(self, x):
        values = _square_matrices("MatrixLogarithm", x, (complex64, complex128))
        flat = values.reshape((-1,) + values.shape[-2:])
        logm = _scipy("linalg", "MatrixLogarithm").logm
        logs = np.stack([logm(m) for m in flat]) if len(flat) else flat
        return Tensor(logs.reshape(values.shape).astype(values.dtype))


class _RegularizedBeta(Cell):
    """I_x(a, b) from SciPy; the bprop differentiates x only:
    dI/dx = x^(a - 1) (1 - x)^(b - 1) / B(a, b)."""

    def construct(self, a, b, x):
        betainc = _scipy("special", "Betainc").betainc
        value = betainc(a.asnumpy(), b.asnumpy(), x.asnumpy())
        return Tensor(np.asarray(value, dtype=x.asnumpy().dtype))

    def bprop(self, a, b, x, out, dout):
        log_beta = _pijit_ops.lgamma(a) + _pijit_ops.lgamma(b) - _pijit_ops.lgamma(a + b)
        density = _ops.exp((a - 1) * _ops.log(x) + (b - 1) * _ops.log(1 - x) - log_beta)
        return _ops.zeros_like(a), _ops.zeros_like(b), dout * density


_regularized_beta = _RegularizedBeta()


class Betainc(Primitive):
    """Betainc()(a, b, x): the regularized incomplete beta function I_x(a, b), element-wise
    over tensors of one shape and one float dtype; differentiable with respect to x."""

    def __call__(self, a, b, x):
        for name, t in (("a", a), ("b", b), ("x", x)):
            check_tensor("Betainc", name, t)
        if a.dtype not in (float32, float64) or b.dtype != a.dtype or x.dtype != a.dtype:
            raise_error(TypeError, f"Betainc: a, b and x must share a Float32 or Float64 dtype, "
                                   f"got {a.dtype}, {b.dtype}, {x.dtype}")
        if not tuple(a.shape) == tuple(b.shape) == tuple(x.shape):
            raise_error(ValueError, f"Betainc: a, b and x must have one shape, got "
                                    f"{tuple(a.shape)}, {tuple(b.shape)}, {tuple(x.shape)}")
        return _regularized_beta(a, b, x)


class ParameterizedTruncatedNormal(Primitive):
    """ParameterizedTruncatedNormal(seed=0, seed2=0)(shape, mean, stdevs, min, max): a
    (batch, ...) tensor whose row i is drawn from the normal N(mean[i], stdevs[i]) truncated to
    [min[i], max[i]] (each parameter a (batch,) tensor or one value), by inverting the normal
    CDF between the bounds' probabilities."""

    def __init__(self, seed=0, seed2=0):
        super().__init__(seed=seed, seed2=seed2)

    def __call__(self, shape, mean, stdevs, min, max):  # noqa: A002 - MindSpore's names
        fname = "ParameterizedTruncatedNormal"
        dims = tuple(int(d) for d in (shape.asnumpy() if isinstance(shape, Tensor) else shape))
        if not dims or any(d < 0 for d in dims):
            raise_error(ValueError, f"{fname}: shape must be non-empty with non-negative sizes, "
                                    f"got {dims}")
        params = []
        for name, p in (("mean", mean), ("stdevs", stdevs), ("min", min), ("max", max)):
            check_tensor(fname, name, p)
            if p.dtype not in (float32, float64) or p.ndim > 1 or \
                    (p.ndim == 1 and p.shape[0] not in (1, dims[0])):
                raise_error(ValueError, f"{fname}: {name} must be a float scalar or (batch="
                                        f"{dims[0]},) tensor, got {p.dtype} {tuple(p.shape)}")
            params.append(_ops.reshape(p.astype(mean.dtype), (-1,) + (1,) * (len(dims) - 1)))
        mu, sigma, low, high = params
        mixed = self.seed * 1000003 + self.seed2
        kwargs = {"seed": mixed % (2 ** 31 - 1) or 1} if mixed else {}
        u = _ops.uniform(dims, 0.0, 1.0, dtype=mean.dtype, **kwargs)
        root2 = 2.0 ** 0.5
        lo = 0.5 * (1 + _ops.erf((low - mu) / (sigma * root2)))
        hi = 0.5 * (1 + _ops.erf((high - mu) / (sigma * root2)))
        p = _ops.clip(lo + u * (hi - lo), 1e-7, 1 - 1e-7)
        draws = mu + sigma * root2 * _pijit_ops.erfinv(2 * p - 1)
        return _ops.minimum(_ops.maximum(draws, low), high)


__all__ = ["AccumulateNV2", "Betainc", "Eig", "FloatStatus", "MatrixLogarithm",
           "ParameterizedTruncatedNormal", "eigvals"]
