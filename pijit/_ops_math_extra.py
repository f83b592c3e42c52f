"""More of MindSpore's ops functions, element-wise and linear-algebra ones, with its names and
signatures: composed of pijit's native ops, pijit.numpy's functions and pijit.mint's, so
they run on the eager tape, differentiate by the ops' rules and are captured by pijit.jit
(fused where element-wise)."""
import math

from pijit import _C
from pijit import _ops_composed
from pijit.mint import _elementwise as _mint_elementwise
from pijit.mint import _reduce as _mint_reduce
from pijit.mint import _shape as _mint_shape
from pijit.mint import linalg as _mint_linalg
from pijit.mint._checks import as_real_float, check_dims, check_tensor, is_float, raise_error
from pijit.numpy import linalg as _np_linalg
from pijit.numpy import reductions as _np_reductions
from pijit._tensor import bool_, float32, int32
# Names MindSpore gives to functions pijit already has.
from pijit._C.ops import (abs as absolute, acos as arccos, acosh as arccosh,  # noqa: F401
                          asin as arcsin, asinh as arcsinh, atan as arctan, atanh as arctanh,
                          bitwise_not as invert, floor_divide as floor_div, mul as multiply,
                          reciprocal as inv, sign as sgn)
from pijit.mint._elementwise import atan2, atan2 as arctan2, erfinv, isclose  # noqa: F401
from pijit.mint.linalg import inv as inverse, inv as matrix_inverse  # noqa: F401
from pijit.numpy.linalg import inner, kron, outer, outer as ger  # noqa: F401
from pijit.numpy.math_ops import (copysign, deg2rad, float_power, fmod,  # noqa: F401
                                  fmod as truncate_mod, gcd, heaviside, hypot, lcm, logaddexp,
                                  logaddexp2, rad2deg, signbit)

_ops = _C.ops

# ---- names MindSpore gives to functions pijit already has ------------------------------------

def divide(input, other, *, rounding_mode=None):  # noqa: A002 - MindSpore's names
    """input / other, truncated ('trunc') or floored ('floor') when rounding_mode says."""
    return _mint_elementwise.div(input, other, rounding_mode=rounding_mode)


true_divide = _ops.div


def truncate_div(x, y):
    """x / y rounded toward zero (integers stay integers)."""
    return _mint_elementwise.div(x, y, rounding_mode="trunc")


def subtract(input, other, *, alpha=1):  # noqa: A002
    """input - alpha * other."""
    return _mint_elementwise.sub(input, other, alpha=alpha)


def positive(input):  # noqa: A002
    """input itself (bool inputs are rejected, as in MindSpore)."""
    check_tensor("positive", "input", input)
    if input.dtype == bool_:
        raise_error(TypeError, "positive: input must not be a Bool Tensor")
    return input


def erfc(input):  # noqa: A002
    """1 - erf(x)."""
    return 1.0 - _ops.erf(input)


def frac(x):
    """x - trunc(x): the fractional part, with x's sign."""
    return x - _ops.trunc(x)


def sinc(input):  # noqa: A002
    """sin(pi x) / (pi x), 1 at 0."""
    check_tensor("sinc", "input", input)
    x = as_real_float("sinc", input)
    zero = _ops.equal(x, 0.0)
    safe = _ops.where(zero, 1.0, x) * math.pi  # keeps the unused branch finite
    return _ops.where(zero, 1.0, _ops.sin(safe) / safe)


def xlogy(input, other):  # noqa: A002
    """input * log(other), 0 where input is 0 (even where other is 0)."""
    safe = _ops.where(_ops.equal(input, 0), 1.0, other)
    return _ops.where(_ops.equal(input, 0), 0.0, input * _ops.log(safe))


def xdivy(x, y):
    """x / y, 0 where x is 0."""
    safe = _ops.where(_ops.equal(x, 0), 1.0, y)
    return _ops.where(_ops.equal(x, 0), 0.0, x / safe)


def ldexp(x, other):
    """x * 2 ** other."""
    return x * _ops.pow(2.0, other)


def logit(input, eps=None):  # noqa: A002
    """log(p / (1 - p)), with p clipped to [eps, 1 - eps] when eps is given."""
    p = input if eps is None else _ops.clip(input, eps, 1.0 - eps)
    return _ops.log(p / (1.0 - p))


def lerp(input, end, weight):  # noqa: A002
    """input + weight * (end - input)."""
    return input + weight * (end - input)


def addcdiv(input, tensor1, tensor2, value=1):  # noqa: A002
    """input + value * tensor1 / tensor2."""
    return input + value * (tensor1 / tensor2)


def addcmul(input, tensor1, tensor2, value=1):  # noqa: A002
    """input + value * tensor1 * tensor2."""
    return input + value * (tensor1 * tensor2)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):  # noqa: A002
    """input with NaN, +inf and -inf replaced by `nan`, `posinf` and `neginf` (the dtype's
    largest and lowest finite values by default)."""
    check_tensor("nan_to_num", "input", input)
    if not is_float(input):
        return input
    info = _FINITE_LIMITS[input.dtype.name]
    posinf = info[0] if posinf is None else posinf
    neginf = info[1] if neginf is None else neginf
    out = _ops.where(_ops.not_equal(input, input), nan, input)
    out = _ops.where(_ops.equal(out, math.inf), posinf, out)
    return _ops.where(_ops.equal(out, -math.inf), neginf, out)


# (largest, lowest) finite value of each float dtype, keyed by the dtype's name (captured
# code looks names up in a dict; bfloat16 shares float32's exponent range).
_FINITE_LIMITS = {"f16": (65504.0, -65504.0), "bf16": (3.3895313892515355e38, -3.3895313892515355e38),
                  "f32": (3.4028234663852886e38, -3.4028234663852886e38),
                  "f64": (1.7976931348623157e308, -1.7976931348623157e308)}


def isneginf(input):  # noqa: A002
    return _ops.equal(input, -math.inf) if is_float(input) else _ops.zeros_like(input) != 0


def isposinf(input):  # noqa: A002
    return _ops.equal(input, math.inf) if is_float(input) else _ops.zeros_like(input) != 0


def isreal(input):  # noqa: A002
    """True everywhere: pijit's dtypes are all real."""
    check_tensor("isreal", "input", input)
    return _ops.ones_like(input, dtype=bool_)


def is_floating_point(input):  # noqa: A002
    return is_float(input)


def is_tensor(obj):
    return isinstance(obj, _C.Tensor)


# ---- reductions and scans ----------------------------------------------------------------------

def logsumexp(input, axis, keep_dims=False):  # noqa: A002
    """log(sum(exp(input))) over `axis`, computed without overflow."""
    axis = check_dims("logsumexp", axis, input.ndim, "axis")
    top = _ops.max(input, axis, keepdims=True)
    top = _ops.where(_ops.equal(_ops.abs(top), math.inf), 0.0, top)
    out = _ops.log(_ops.sum(_ops.exp(input - top), axis, keepdims=True)) + top
    return out if keep_dims else _ops.squeeze(out, axis)


def cumsum(x, axis, dtype=None):
    """Running sums along `axis`, in `dtype` when given."""
    return _mint_reduce.cumsum(x, axis, dtype)


def cumprod(input, dim, dtype=None):  # noqa: A002
    """Running products along `dim`, in `dtype` when given."""
    check_tensor("cumprod", "input", input)
    return _np_reductions.cumprod(input if dtype is None else input.astype(dtype), dim)


def count_nonzero(x, axis=(), keep_dims=False, dtype=None):
    """The number of nonzero elements over `axis` (every axis when empty), Int32 unless
    `dtype` says."""
    axis = None if axis == () else axis
    count = _ops.sum(_ops.not_equal(x, 0), axis, keepdims=keep_dims)
    return count.astype(int32 if dtype is None else dtype)


# ---- linear algebra ------------------------------------------------------------------------------

def _scaled_sum(fname, input, product, beta, alpha):  # noqa: A002
    """beta * input + alpha * product; beta 0 ignores input (NaN in it included)."""
    scaled = product if alpha == 1 else product * alpha
    if beta == 0:
        return scaled + _ops.zeros_like(input)
    return scaled + (input if beta == 1 else input * beta)


def mm(input, mat2):  # noqa: A002
    """The product of two matrices."""
    if input.ndim != 2 or mat2.ndim != 2:
        raise_error(ValueError, f"mm: input and mat2 must be 2-D, got {input.ndim}-D and "
                                f"{mat2.ndim}-D")
    return _ops.matmul(input, mat2)


def mv(mat, vec):
    """The product of a matrix and a vector."""
    if mat.ndim != 2 or vec.ndim != 1:
        raise_error(ValueError, f"mv: mat must be 2-D and vec 1-D, got {mat.ndim}-D and "
                                f"{vec.ndim}-D")
    return _ops.matmul(mat, vec)


def bmm(input_x, mat2):
    """Batched matrix product of (b, n, m) and (b, m, p) tensors."""
    return _mint_shape.bmm(input_x, mat2)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):  # noqa: A002
    """beta * input + alpha * (mat1 @ mat2)."""
    return _scaled_sum("addmm", input, mm(mat1, mat2), beta, alpha)


def addmv(input, mat, vec, *, beta=1, alpha=1):  # noqa: A002
    """beta * input + alpha * (mat @ vec)."""
    return _scaled_sum("addmv", input, mv(mat, vec), beta, alpha)


def addr(x, vec1, vec2, *, beta=1, alpha=1):
    """beta * x + alpha * outer(vec1, vec2)."""
    return _scaled_sum("addr", x, _ops.unsqueeze(vec1, 1) * _ops.unsqueeze(vec2, 0), beta,
                       alpha)


def baddbmm(input, batch1, batch2, beta=1, alpha=1):  # noqa: A002
    """beta * input + alpha * (batch1 @ batch2), batch by batch."""
    return _scaled_sum("baddbmm", input, bmm(batch1, batch2), beta, alpha)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):  # noqa: A002
    """beta * input + alpha * the sum over the batch of batch1[i] @ batch2[i]."""
    return _scaled_sum("addbmm", input, _ops.sum(bmm(batch1, batch2), 0), beta, alpha)


def adjoint(x):
    """x with its last two axes swapped (the conjugate is x itself: the dtypes are real)."""
    return _ops_composed.swapaxes(x, -1, -2)


def t(input):  # noqa: A002
    """A matrix transposed; a vector as it is."""
    if input.ndim > 2:
        raise_error(ValueError, f"t: input must be at most 2-D, got {input.ndim}-D")
    return _ops.transpose(input, (1, 0)) if input.ndim == 2 else input


def dot(input, other):  # noqa: A002
    """The product over input's last axis and other's second-to-last (other's only axis
    when it is 1-D)."""
    return _np_linalg.dot(input, other)


def det(input):  # noqa: A002
    """The determinant of each square matrix in the last two axes, by Gaussian elimination
    with partial pivoting."""
    return _mint_linalg.det(input)


matrix_determinant = det


def trace(input):  # noqa: A002
    """The sum of a matrix's diagonal."""
    if input.ndim != 2:
        raise_error(ValueError, f"trace: input must be 2-D, got {input.ndim}-D")
    n = min(input.shape)
    return _ops.sum(input[:n, :n] * _ops.eye(n, dtype=input.dtype))


def cross(input, other, dim=None):  # noqa: A002
    """The cross product of 3-vectors along `dim` (the first axis of size 3 when None)."""
    if dim is None:
        dims = [d for d, n in enumerate(input.shape) if n == 3]
        if not dims:
            raise_error(ValueError, f"cross: no axis of size 3 in {input.shape}")
        dim = dims[0]
    return _np_linalg.cross(input, other, axis=dim)


def dist(input, other, p=2):  # noqa: A002
    """The p-norm of input - other, as a scalar."""
    diff = _ops.abs(input - other)
    if p == math.inf:
        return _ops.max(diff)
    if p == 0:
        return _ops.sum(_ops.not_equal(diff, 0)).astype(diff.dtype)
    return _ops.pow(_ops.sum(_ops.pow(diff, float(p))), 1.0 / p)


def cdist(x1, x2, p=2.0):
    """The p-norm distance between each row of x1 (..., P, M) and each of x2 (..., R, M):
    (..., P, R)."""
    diff = _ops.abs(_ops.unsqueeze(x1, -2) - _ops.unsqueeze(x2, -3))
    if p == math.inf:
        return _ops.max(diff, -1)
    if p == 2.0:
        return _ops.sqrt(_ops.sum(diff * diff, -1))
    return _ops.pow(_ops.sum(_ops.pow(diff, float(p)), -1), 1.0 / p)


def cosine_similarity(x1, x2, dim=1, eps=1e-08):
    """x1 . x2 / max(|x1| |x2|, eps) along `dim`."""
    dot_product = _ops.sum(x1 * x2, dim)
    norms = _ops.sqrt(_ops.sum(x1 * x1, dim) * _ops.sum(x2 * x2, dim))
    return dot_product / _ops.maximum(norms, eps)

__all__ = [
    "absolute", "addbmm", "addcdiv", "addcmul", "addmm", "addmv", "addr", "adjoint", "arccos",
    "arccosh", "arcsin", "arcsinh", "arctan", "arctan2", "arctanh", "atan2", "baddbmm", "bmm",
    "cdist", "copysign", "cosine_similarity", "count_nonzero", "cross", "cumprod", "cumsum",
    "deg2rad", "det", "dist", "divide", "dot", "erfc", "erfinv", "float_power", "floor_div",
    "fmod", "frac", "gcd", "ger", "heaviside", "hypot", "inner", "inv", "inverse", "invert",
    "is_floating_point", "is_tensor", "isclose", "isneginf", "isposinf", "isreal",
    "kron", "lcm", "ldexp", "lerp", "logaddexp", "logaddexp2", "logit", "logsumexp",
    "matrix_determinant", "matrix_inverse", "mm", "multiply", "mv", "nan_to_num", "outer",
    "positive", "rad2deg", "sgn", "signbit", "sinc", "subtract", "t", "trace", "true_divide",
    "truncate_div", "truncate_mod", "xdivy", "xlogy",
]
