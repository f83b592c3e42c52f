"""Products and norms in mindspore.numpy's names and signatures: matmul, dot, inner, outer,
tensordot, cross, kron, multi_dot, matrix_power and norm. Contractions are reshaped to one
native matmul (oneDNN for Float32, BLAS for Float64), so their gradients are matmul's."""
from pijit._tensor import bool_, int32
from pijit.numpy._utils import (broadcast_shapes, check_axis, check_int, native, operands,
                                plain, raise_error, to_float, to_tensor, with_dtype)


def _pair(fname, a, b):
    """a and b as tensors of one dtype (MindSpore's promotion); bools as Int32."""
    x, y = operands(fname, to_tensor(fname, a), to_tensor(fname, b))
    if x.dtype == bool_:
        x, y = x.astype(int32), y.astype(int32)
    return x, y


def _prod(dims):
    out = 1
    for d in dims:
        out *= d
    return out


def matmul(x1, x2, dtype=None):
    """The matrix product of x1 and x2, batched over leading axes; a 1-D operand is a vector
    (its added axis is removed again). Scalars are not allowed."""
    fname = "matmul"
    a, b = _pair(fname, x1, x2)
    if a.ndim == 0 or b.ndim == 0:
        raise_error(ValueError, f"{fname}: scalars are not allowed, use multiply (got shapes "
                                f"{a.shape} and {b.shape})")
    k_a, k_b = a.shape[-1], b.shape[-2] if b.ndim > 1 else b.shape[0]
    if k_a != k_b:
        raise_error(ValueError, f"{fname}: the last axis of x1 ({k_a}) does not match the "
                                f"contracted axis of x2 ({k_b}); shapes {a.shape} and {b.shape}")
    return with_dtype(fname, native.matmul(a, b), dtype)


def _contract_last(a, b):
    """sum over the last axis of a and the first of b, by one matmul:
    a.shape[:-1] + b.shape[1:]."""
    k = a.shape[-1]
    out = native.matmul(native.reshape(a, (_prod(a.shape[:-1]), k)),
                        native.reshape(b, (k, _prod(b.shape[1:]))))
    return native.reshape(out, tuple(a.shape[:-1]) + tuple(b.shape[1:]))


def dot(a, b):
    """The dot product: a * b for a scalar, the inner product of 1-D vectors, the matrix product
    of 2-D ones, else the sum over the last axis of a and the second-to-last of b."""
    fname = "dot"
    x, y = _pair(fname, a, b)
    if x.ndim == 0 or y.ndim == 0:
        return x * y
    contracted = 0 if y.ndim == 1 else y.ndim - 2
    if x.shape[-1] != y.shape[contracted]:
        raise_error(ValueError, f"{fname}: shapes {x.shape} and {y.shape} are not aligned: "
                                f"{x.shape[-1]} (axis {x.ndim - 1}) != {y.shape[contracted]} "
                                f"(axis {contracted})")
    if y.ndim > 1:
        perm = (y.ndim - 2,) + tuple(range(y.ndim - 2)) + (y.ndim - 1,)
        y = native.transpose(y, perm)
    return _contract_last(x, y)


def inner(a, b):
    """The inner product over the last axes of a and b (a * b when either is a scalar):
    shape a.shape[:-1] + b.shape[:-1]."""
    fname = "inner"
    x, y = _pair(fname, a, b)
    if x.ndim == 0 or y.ndim == 0:
        return x * y
    if x.shape[-1] != y.shape[-1]:
        raise_error(ValueError, f"{fname}: the last axes of shapes {x.shape} and {y.shape} "
                                f"differ")
    perm = (y.ndim - 1,) + tuple(range(y.ndim - 1))
    return _contract_last(x, native.transpose(y, perm))


def outer(a, b):
    """out[i, j] = a[i] * b[j] of the flattened a and b."""
    x, y = _pair("outer", a, b)
    return native.reshape(x, (-1, 1)) * native.reshape(y, (1, -1))


def _tensordot_axes(fname, axes, x, y):
    axes = plain(axes)
    if isinstance(axes, int) and not isinstance(axes, bool):
        if axes < 0 or axes > min(x.ndim, y.ndim):
            raise_error(ValueError, f"{fname}: axes {axes} must be in [0, "
                                    f"{min(x.ndim, y.ndim)}] for shapes {x.shape} and {y.shape}")
        return tuple(range(x.ndim - axes, x.ndim)), tuple(range(axes))
    if not isinstance(axes, (list, tuple)) or len(axes) != 2:
        raise_error(TypeError, f"{fname}: axes must be an int or a pair of axis sequences, got "
                               f"{axes!r}")
    ax_a, ax_b = plain(axes[0]), plain(axes[1])
    ax_a = (ax_a,) if isinstance(ax_a, int) else tuple(ax_a)
    ax_b = (ax_b,) if isinstance(ax_b, int) else tuple(ax_b)
    if len(ax_a) != len(ax_b):
        raise_error(ValueError, f"{fname}: the axis sequences {ax_a} and {ax_b} differ in length")
    return (tuple(check_axis(fname, i, x.ndim) for i in ax_a),
            tuple(check_axis(fname, i, y.ndim) for i in ax_b))


def tensordot(a, b, axes=2):
    """The sum of products over the axes `axes` (the last N of a and first N of b for an int
    N, or a pair of axis sequences): the free axes of a, then those of b."""
    fname = "tensordot"
    x, y = _pair(fname, a, b)
    ax_a, ax_b = _tensordot_axes(fname, axes, x, y)
    for i, j in zip(ax_a, ax_b):
        if x.shape[i] != y.shape[j]:
            raise_error(ValueError, f"{fname}: shape mismatch for sum: axis {i} of {x.shape} and "
                                    f"axis {j} of {y.shape}")
    free_a = tuple(i for i in range(x.ndim) if i not in ax_a)
    free_b = tuple(i for i in range(y.ndim) if i not in ax_b)
    x = native.transpose(x, free_a + ax_a)
    y = native.transpose(y, ax_b + free_b)
    k = _prod(x.shape[len(free_a):])
    out = native.matmul(native.reshape(x, (_prod(x.shape[:len(free_a)]), k)),
                        native.reshape(y, (k, _prod(y.shape[len(ax_b):]))))
    return native.reshape(out, tuple(x.shape[:len(free_a)]) + tuple(y.shape[len(ax_b):]))


def vdot(a, b):
    """The dot product of the flattened a and b."""
    x, y = _pair("vdot", a, b)
    if x.size != y.size:
        raise_error(ValueError, f"vdot: a and b have {x.size} and {y.size} elements")
    return native.sum(native.reshape(x, (-1,)) * native.reshape(y, (-1,)), None)


def _components(fname, v, axis):
    v = native.transpose(v, tuple(i for i in range(v.ndim) if i != axis) + (axis,))
    n = v.shape[-1]
    if n not in (2, 3):
        raise_error(ValueError, f"{fname}: incompatible dimensions for cross product (dimension "
                                f"must be 2 or 3), got {n}")
    return (v[..., 0], v[..., 1], v[..., 2] if n == 3 else None), n


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """The cross product of the 2- or 3-component vectors along axisa of a and axisb of b (a
    missing z is 0); 2-D by 2-D gives the z component only. The result's vectors lie along
    axisc; `axis` sets all three."""
    fname = "cross"
    x, y = _pair(fname, a, b)
    if axis is not None:
        axisa = axisb = axisc = axis
    (a0, a1, a2), na = _components(fname, x, check_axis(fname, axisa, x.ndim))
    (b0, b1, b2), nb = _components(fname, y, check_axis(fname, axisb, y.ndim))
    z = a0 * b1 - a1 * b0
    if na == 2 and nb == 2:
        return z
    if a2 is None:
        c = (a1 * b2, native.neg(a0 * b2), z)
    elif b2 is None:
        c = (native.neg(a2 * b1), a2 * b0, z)
    else:
        c = (a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, z)
    out = native.stack(_broadcast_all(c), -1)
    return native.transpose(out, _move_last_to(out.ndim, check_axis(fname, axisc, out.ndim)))


def _broadcast_all(parts):
    shape = broadcast_shapes("cross", *tuple(tuple(p.shape) for p in parts))
    return tuple(native.broadcast_to(p, shape) for p in parts)


def _move_last_to(ndim, axis):
    order = tuple(range(ndim - 1))
    return order[:axis] + (ndim - 1,) + order[axis:]


def kron(a, b):
    """The Kronecker product: blocks a[i, j, ...] * b (shapes padded with leading ones to one
    rank)."""
    x, y = _pair("kron", a, b)
    ndim = max(x.ndim, y.ndim)
    sa = (1,) * (ndim - x.ndim) + tuple(x.shape)
    sb = (1,) * (ndim - y.ndim) + tuple(y.shape)
    xa, yb = (), ()
    for p, q in zip(sa, sb):
        xa, yb = xa + (p, 1), yb + (1, q)
    out = native.reshape(x, xa) * native.reshape(y, yb)
    return native.reshape(out, tuple(p * q for p, q in zip(sa, sb)))


def multi_dot(arrays):
    """The chained dot product of the tensors of `arrays` (the first may be a 1-D row vector,
    the last a 1-D column vector), left to right."""
    fname = "multi_dot"
    if not isinstance(arrays, (list, tuple)) or len(arrays) < 2:
        raise_error(ValueError, f"{fname}: expected a list of at least two tensors")
    tensors = tuple(to_tensor(fname, t) for t in tuple(arrays))
    for i, t in enumerate(tensors):
        edge = i in (0, len(tensors) - 1)
        if t.ndim != 2 and not (edge and t.ndim == 1):
            raise_error(ValueError, f"{fname}: tensor {i} has shape {t.shape}; only the first "
                                    f"and last may be 1-D, the others must be 2-D")
    out = tensors[0]
    for t in tensors[1:]:
        out = dot(out, t)
    return out


def matrix_power(a, n):
    """The square matrices of `a`'s last two axes raised to the integer power n >= 0 (n = 0
    gives identities), by repeated squaring."""
    fname = "matrix_power"
    x = to_tensor(fname, a)
    n = check_int(fname, "n", n)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise_error(ValueError, f"{fname}: expected square matrices in the last two axes, got "
                                f"shape {x.shape}")
    if n < 0:
        raise_error(ValueError, f"{fname}: negative powers need a matrix inverse, which "
                                f"pijit.numpy does not provide; got n={n}")
    if x.dtype == bool_:
        x = x.astype(int32)
    result = None
    base = x
    while n:
        if n & 1:
            result = base if result is None else native.matmul(result, base)
        n >>= 1
        if n:
            base = native.matmul(base, base)
    if result is None:
        eye = native.eye(x.shape[-1], x.shape[-1], dtype=x.dtype)
        return native.broadcast_to(eye, tuple(x.shape))
    return result


def _vector_norm(x, ord_, axes, keepdims):
    ax = tuple(axes)
    if ord_ is None or ord_ == 2:
        return native.sqrt(native.sum(x * x, ax, keepdims))
    magnitude = native.abs(x)
    if ord_ == float("inf"):
        return native.max(magnitude, ax, keepdims)
    if ord_ == float("-inf"):
        return native.min(magnitude, ax, keepdims)
    if ord_ == 0:
        return native.sum(native.not_equal(x, 0.0).astype(x.dtype), ax, keepdims)
    if ord_ == 1:
        return native.sum(magnitude, ax, keepdims)
    return native.pow(native.sum(native.pow(magnitude, float(ord_)), ax, keepdims),
                      1.0 / float(ord_))


def _matrix_norm(fname, x, ord_, axes, keepdims):
    row, col = axes
    if ord_ in (None, "fro"):
        return native.sqrt(native.sum(x * x, (row, col), keepdims))
    if ord_ in (2, -2, "nuc"):
        raise_error(ValueError, f"{fname}: ord={ord_!r} needs singular values, which "
                                f"pijit.numpy does not compute")
    magnitude = native.abs(x)
    if ord_ in (1, -1):
        sums = native.sum(magnitude, (row,), True)
        pick = native.max if ord_ == 1 else native.min
        out = pick(sums, (col,), True)
    elif ord_ in (float("inf"), float("-inf")):
        sums = native.sum(magnitude, (col,), True)
        pick = native.max if ord_ > 0 else native.min
        out = pick(sums, (row,), True)
    else:
        raise_error(ValueError, f"{fname}: invalid norm order {ord_!r} for matrices")
    if keepdims:
        return out
    return native.reshape(out, tuple(d for i, d in enumerate(x.shape) if i not in axes))


def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002 - NumPy's name
    """The vector norm (one axis, or the flattened x when axis and ord are None) or matrix
    norm (two axes, or a 2-D x) of order `ord`: None/2 Euclidean, 1, inf, -inf, 0 (count), any
    p for vectors; None/'fro', 1, -1, inf, -inf for matrices. Integers compute in Float32."""
    fname = "norm"
    x = to_float(fname, x)
    ord_ = plain(ord)
    if axis is None:
        if ord_ is None:
            return _vector_norm(native.reshape(x, (-1,)), None, (0,), False) if not keepdims \
                else native.reshape(_vector_norm(x, None, tuple(range(x.ndim)), True),
                                    (1,) * x.ndim)
        if x.ndim == 1:
            axes = (0,)
        elif x.ndim == 2:
            axes = (0, 1)
        else:
            raise_error(ValueError, f"{fname}: give axis for the norm of order {ord_!r} of a "
                                    f"{x.ndim}-D tensor")
    else:
        axis = plain(axis)
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        axes = tuple(check_axis(fname, a, x.ndim) for a in axes)
    if len(axes) == 1:
        if isinstance(ord_, str):
            raise_error(ValueError, f"{fname}: invalid norm order {ord_!r} for vectors")
        return _vector_norm(x, ord_, axes, bool(keepdims))
    if len(axes) == 2 and axes[0] != axes[1]:
        return _matrix_norm(fname, x, ord_, axes, bool(keepdims))
    raise_error(ValueError, f"{fname}: axis must name one or two distinct axes, got {axis!r}")
