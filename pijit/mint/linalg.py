"""mint.linalg: the matrix inverse, by Gauss-Jordan elimination with partial pivoting written
in pijit ops (and the determinant, by the same elimination, for ops.det). The elimination loop runs over the (static) matrix size, so pijit.jit unrolls
it into one graph, and the gradient comes from the ops' rules (the pivot choice is locally
constant, so it equals -inv(A)^T @ g @ inv(A)^T)."""
from pijit import _C
from pijit._tensor import int64
from pijit.mint._checks import check_tensor, is_float, raise_error

_ops = _C.ops


def _column(n, k, dtype):
    """The (n, 1) unit column e_k."""
    return _ops.reshape(_ops.one_hot(_ops.full((1,), k, dtype=int64), n, 1.0, 0.0),
                        (n, 1)).astype(dtype)


def _eliminate(augmented, k, n):
    """One Gauss-Jordan step on column k of the (..., n, 2n) augmented matrix: swap the row
    with the largest |entry| at or below k into row k, scale it to a unit pivot and clear
    column k from every other row."""
    e_k = _column(n, k, augmented.dtype)                           # (n, 1)
    augmented, _ = _row_swap(augmented, k, n)
    row = augmented[..., k:k + 1, :] / augmented[..., k:k + 1, k:k + 1]
    factors = augmented[..., :, k:k + 1] * (1.0 - e_k)             # 0 in row k
    augmented = augmented - factors * row
    return augmented * (1.0 - e_k) + e_k * row


def _row_swap(augmented, k, n):
    """The augmented matrix with the row of largest |entry| in column k at or below row k
    swapped into row k, and whether a swap happened (0 or 1, per matrix)."""
    dtype = augmented.dtype
    e_k = _column(n, k, dtype)                                     # (n, 1)
    below = _ops.greater_equal(_ops.arange(n), k)
    candidates = _ops.where(below, _ops.abs(augmented[..., :, k]), -1.0)
    pivot = _ops.one_hot(_ops.argmax(candidates, -1), n, 1.0, 0.0).astype(dtype)
    e_p = _ops.unsqueeze(pivot, -1)                                # (..., n, 1)
    # The permutation swapping rows k and p (the identity when p == k).
    swap = (_ops.eye(n, dtype=dtype) - e_k * _ops.transpose(e_k, (1, 0))
            - e_p * _ops.unsqueeze(pivot, -2) + e_k * _ops.unsqueeze(pivot, -2)
            + e_p * _ops.transpose(e_k, (1, 0)))
    return _ops.matmul(swap, augmented), 1.0 - pivot[..., k]


def _check_float_matrices(fname, A):  # noqa: N803
    """A must be a float Tensor, square in its last two axes."""
    check_tensor(fname, "A", A)
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise_error(ValueError, f"{fname}: A must be square in its last two axes, got {A.shape}")
    if not is_float(A):
        raise_error(TypeError, f"{fname}: A must be a float Tensor, got {A.dtype}")


def det(A):  # noqa: N803
    """The determinant of each square matrix in the last two axes of A (a float Tensor): the
    product of the pivots of Gaussian elimination, negated once per row swap."""
    _check_float_matrices("det", A)
    n = A.shape[-1]
    product = _ops.ones(A.shape[:-2], dtype=A.dtype)
    rows = _ops.reshape(_ops.arange(n), (n, 1))
    for k in range(n):
        A, swapped = _row_swap(A, k, n)  # noqa: N806
        pivot = A[..., k, k]
        product = product * pivot * (1.0 - 2.0 * swapped)
        # Clear column k below the pivot (a zero pivot leaves the product 0 already).
        safe = _ops.unsqueeze(_ops.unsqueeze(_ops.where(_ops.equal(pivot, 0.0), 1.0, pivot),
                                             -1), -1)
        below = _ops.greater(rows, k).astype(A.dtype)
        A = A - (A[..., :, k:k + 1] / safe) * below * A[..., k:k + 1, :]  # noqa: N806
    return product


def inv(A):  # noqa: N803 - mint's name
    """The inverse of each square matrix in the last two axes of A (a float Tensor). A
    singular matrix gives inf or NaN entries rather than an error: the check would depend on
    the data, which a captured graph cannot raise on."""
    _check_float_matrices("inv", A)
    n = A.shape[-1]
    identity = _ops.broadcast_to(_ops.eye(n, dtype=A.dtype), A.shape)
    augmented = _ops.concat((A, identity), -1)
    for k in range(n):
        augmented = _eliminate(augmented, k, n)
    return augmented[..., :, n:]
