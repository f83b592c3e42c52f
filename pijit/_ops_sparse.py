"""MindSpore's functions and primitives on sparse tensors (pijit/common/sparse_tensor.py):
the elementwise coo_*/csr_* functions (applied to the stored values), sums and products whose
result positions come from the inputs' positions, conversions to and from dense Tensors, and
the primitives that take a sparse tensor as its parts (SparseToDense, SparseTensorDenseAdd,
SparseTensorDenseMatmul, Coalesce, SparseSlice).

Values are computed with pijit ops (gathers, segment sums, products), so results are
differentiated with respect to the values and the dense operands; positions are computed on
the host from the inputs' positions."""
import numpy as np

from pijit import _C
from pijit import ops as _pijit_ops
from pijit import _ops_composed
from pijit._ops_array_extra import unsorted_segment_max, unsorted_segment_sum
from pijit._ops_nd import gather_nd
from pijit._ops_special import stop_gradient
from pijit._tensor import Tensor, int32, int64
from pijit.common.sparse_tensor import (COOTensor, CSRTensor, indptr_of,
                                        sum_at_equal_positions)

_ops = _C.ops

# The functions applied to the stored values, by the name of the ops function each is (MindSpore
# applies each to the values alone). Looked up when called: pijit.ops is still being built
# when this module is imported.
_ELEMENTWISE = ("abs acos acosh asin asinh atan atanh ceil cos cosh exp expm1 floor inv "
                "isfinite isinf isnan log log1p neg relu relu6 round sigmoid sin sinh softsign "
                "sqrt square tan tanh").split()


def _elementwise(kind, cls, name):
    def function(x):
        if not isinstance(x, cls):
            raise TypeError(f"{kind}_{name}: x must be a {cls.__name__}, got {type(x).__name__}")
        return x.with_values(getattr(_pijit_ops, name)(x.values))

    function.__name__ = function.__qualname__ = f"{kind}_{name}"
    function.__doc__ = f"{name} of the stored values of a {cls.__name__} (same positions)."
    return function


for _name in _ELEMENTWISE:
    globals()[f"coo_{_name}"] = _elementwise("coo", COOTensor, _name)
    globals()[f"csr_{_name}"] = _elementwise("csr", CSRTensor, _name)


def _check(fname, name, value, cls):
    if not isinstance(value, cls):
        raise TypeError(f"{fname}: {name} must be a {cls.__name__}, got {type(value).__name__}")
    return value


def coo_add(x1, x2, thresh):
    """x1 + x2 as a COOTensor, positions in row-major order, the pairs whose sum is smaller in
    magnitude than `thresh` (a 0-D Tensor) left out."""
    _check("coo_add", "x1", x1, COOTensor)
    _check("coo_add", "x2", x2, COOTensor)
    if x1.shape != x2.shape:
        raise ValueError(f"coo_add: shapes {x1.shape} and {x2.shape} differ")
    if x1.dtype != x2.dtype:
        raise TypeError(f"coo_add: values' dtypes {x1.dtype} and {x2.dtype} differ")
    if not isinstance(thresh, Tensor) or thresh.ndim != 0:
        raise ValueError(f"coo_add: thresh must be a 0-D Tensor, got {thresh!r}")
    positions = np.concatenate((x1.indices.asnumpy(), x2.indices.asnumpy())).astype(np.int64)
    unique, values = sum_at_equal_positions(positions, _ops.concat((x1.values, x2.values), 0))
    keep = np.flatnonzero(np.abs(values.asnumpy()) >= thresh.asnumpy())
    if len(keep) < len(unique):
        unique, values = unique[keep], _ops.gather(values, Tensor(keep.astype(np.int64)), 0)
    return COOTensor(Tensor(np.ascontiguousarray(unique)), values, x1.shape)


def coo_concat(sp_input, concat_dim=0):
    """The COOTensors of `sp_input` joined along `concat_dim` (their other dimension equal),
    positions in row-major order."""
    if not isinstance(sp_input, (tuple, list)) or len(sp_input) < 2:
        raise ValueError("coo_concat: sp_input must be a tuple of at least two COOTensors")
    for i, x in enumerate(sp_input):
        _check("coo_concat", f"sp_input[{i}]", x, COOTensor)
    if isinstance(concat_dim, bool) or concat_dim not in (0, 1, -1, -2):
        raise ValueError(f"coo_concat: concat_dim must be 0 or 1 (or -2, -1), got {concat_dim!r}")
    axis, other = concat_dim % 2, 1 - concat_dim % 2
    if len({x.shape[other] for x in sp_input}) != 1 or len({x.dtype for x in sp_input}) != 1:
        raise ValueError(f"coo_concat: the tensors must agree in dtype and in dimension {other}, "
                         f"got shapes {[x.shape for x in sp_input]}")
    offsets = np.cumsum([0] + [x.shape[axis] for x in sp_input])
    positions = []
    for offset, x in zip(offsets, sp_input):
        p = x.indices.asnumpy().astype(np.int64)
        p[:, axis] += offset
        positions.append(p)
    positions = np.concatenate(positions)
    order = np.lexsort((positions[:, 1], positions[:, 0]))
    values = _ops.gather(_ops.concat(tuple(x.values for x in sp_input), 0),
                         Tensor(order.astype(np.int64)), 0)
    shape = list(sp_input[0].shape)
    shape[axis] = int(offsets[-1])
    return COOTensor(Tensor(np.ascontiguousarray(positions[order])), values, tuple(shape))


def _coo_positions(x):
    return np.stack((x.row_ids().asnumpy().astype(np.int64),
                     x.indices.asnumpy().astype(np.int64)), 1)


def _csr_of(positions, values, shape, index_dtype):
    indptr = indptr_of(positions[:, 0], shape[0], index_dtype)
    return CSRTensor(Tensor(indptr), Tensor(np.ascontiguousarray(positions[:, 1], index_dtype)),
                     values, shape)


def csr_add(a, b, alpha, beta):
    """alpha * a + beta * b for CSRTensors of one shape (alpha and beta Tensors broadcast to
    the values), the positions of both."""
    _check("csr_add", "a", a, CSRTensor)
    _check("csr_add", "b", b, CSRTensor)
    if a.shape != b.shape:
        raise ValueError(f"csr_add: shapes {a.shape} and {b.shape} differ")
    for name, value in (("alpha", alpha), ("beta", beta)):
        _check("csr_add", name, value, Tensor)
    positions = np.concatenate((_coo_positions(a), _coo_positions(b)))
    scaled = _ops.concat((a.values * alpha.astype(a.dtype), b.values * beta.astype(b.dtype)), 0)
    unique, values = sum_at_equal_positions(positions, scaled)
    return _csr_of(unique, values, a.shape, a.indptr.asnumpy().dtype)


def _transposed(x):
    positions = _coo_positions(x)[:, ::-1]
    order = np.lexsort((positions[:, 1], positions[:, 0]))
    values = _ops.gather(x.values, Tensor(order.astype(np.int64)), 0)
    return _csr_of(positions[order], values, x.shape[::-1], x.indptr.asnumpy().dtype)


def csr_mm(a, b, trans_a=False, trans_b=False, adjoint_a=False, adjoint_b=False):
    """The product a @ b of a CSRTensor with a dense (N, K) Tensor (a dense result) or with a
    CSRTensor (a CSRTensor whose positions are those where stored entries meet), each
    transposed first if asked (for real values the adjoint is the transpose)."""
    _check("csr_mm", "a", a, CSRTensor)
    if trans_a or adjoint_a:
        a = _transposed(a)
    if isinstance(b, CSRTensor):
        if trans_b or adjoint_b:
            b = _transposed(b)
        return _sparse_product(a, b)
    _check("csr_mm", "b", b, Tensor)
    if trans_b or adjoint_b:
        b = _ops_composed.swapaxes(b, -1, -2)
    if b.ndim != 2 or b.shape[0] != a.shape[1]:
        raise ValueError(f"csr_mm: b must be ({a.shape[1]}, K) for a of shape {a.shape}, got "
                         f"{tuple(b.shape)}")
    return sparse_dense_product(a.values, a.row_ids(), a.indices, b, a.shape[0])


def sparse_dense_product(values, rows, columns, dense, count):
    """The (count, K) product of the sparse matrix holding values[e] at (rows[e], columns[e])
    with the dense (N, K) matrix: each value times row columns[e] of dense, summed into row
    rows[e]."""
    picked = _ops.gather(dense, columns.astype(int64), 0)
    return unsorted_segment_sum(_ops.unsqueeze(values, 1) * picked, rows.astype(int32), count)


def _sparse_product(a, b):
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"csr_mm: shapes {a.shape} and {b.shape} do not multiply")
    a_pos, b_pos = _coo_positions(a), _coo_positions(b)
    b_starts = b.indptr.asnumpy().astype(np.int64)
    left, right = [], []
    for e, (_, k) in enumerate(a_pos):  # each stored a[i, k] meets row k of b
        span = np.arange(b_starts[k], b_starts[k + 1])
        left.append(np.full(len(span), e))
        right.append(span)
    left = np.concatenate(left) if left else np.zeros(0, np.int64)
    right = np.concatenate(right) if right else np.zeros(0, np.int64)
    products = _ops.gather(a.values, Tensor(left.astype(np.int64)), 0) * \
        _ops.gather(b.values, Tensor(right.astype(np.int64)), 0)
    positions = np.stack((a_pos[left, 0], b_pos[right, 1]), 1) if len(left) else \
        np.zeros((0, 2), np.int64)
    unique, values = sum_at_equal_positions(positions, products)
    return _csr_of(unique, values, (a.shape[0], b.shape[1]), a.indptr.asnumpy().dtype)


def csr_softmax(logits, dtype):
    """The softmax of each row's stored values (the positions not stored take no part), as a
    CSRTensor of `dtype` (float32 or float64)."""
    _check("csr_softmax", "logits", logits, CSRTensor)
    values = logits.values.astype(dtype)
    rows, m = logits.row_ids(), logits.shape[0]
    # The shift keeps exp finite and cancels out of the result: no gradient through it.
    largest = _ops.gather(stop_gradient(unsorted_segment_max(values, rows, m)),
                          rows.astype(int64), 0)
    shifted = _ops.exp(values - largest)
    totals = _ops.gather(unsorted_segment_sum(shifted, rows, m), rows.astype(int64), 0)
    return logits.with_values(shifted / totals)


def csr_to_coo(tensor):
    return _check("csr_to_coo", "tensor", tensor, CSRTensor).to_coo()


def dense_to_sparse_coo(tensor):
    """The COOTensor of a 2-D Tensor's non-zero entries (int64 positions, row-major)."""
    _check("dense_to_sparse_coo", "tensor", tensor, Tensor)
    if tensor.ndim != 2:
        raise ValueError(f"dense_to_sparse_coo: tensor must be 2-D, got shape {tuple(tensor.shape)}")
    positions = Tensor(np.argwhere(tensor.asnumpy()).astype(np.int64))
    return COOTensor(positions, gather_nd(tensor, positions), tuple(tensor.shape))


def dense_to_sparse_csr(tensor):
    """The CSRTensor of a 2-D Tensor's non-zero entries (int64 positions)."""
    _check("dense_to_sparse_csr", "tensor", tensor, Tensor)
    return dense_to_sparse_coo(tensor).to_csr()


def sparse_segment_mean(x, indices, segment_ids):
    """out[s] = the mean of the rows x[indices[i]] with segment_ids[i] == s (segment_ids sorted;
    a segment with no rows gives zeros); segment_ids[-1] + 1 segments."""
    for name, value in (("x", x), ("indices", indices), ("segment_ids", segment_ids)):
        _check("sparse_segment_mean", name, value, Tensor)
    ids = segment_ids.asnumpy().astype(np.int64)
    if ids.ndim != 1 or indices.ndim != 1 or len(ids) != indices.shape[0]:
        raise ValueError("sparse_segment_mean: indices and segment_ids must be 1-D of one length")
    if len(ids) and (np.any(np.diff(ids) < 0) or ids[0] < 0):
        raise ValueError("sparse_segment_mean: segment_ids must be sorted and non-negative")
    count = int(ids[-1]) + 1 if len(ids) else 0
    rows = _ops.gather(x, indices.astype(int64), 0)
    sums = unsorted_segment_sum(rows, segment_ids.astype(int32), count)
    sizes = np.maximum(np.bincount(ids, minlength=count), 1).astype(x.dtype.to_numpy())
    return sums / Tensor(sizes.reshape((count,) + (1,) * (x.ndim - 1)))


def tensor_to_coo(self):
    """Tensor.to_coo(): dense_to_sparse_coo."""
    return dense_to_sparse_coo(self)


def tensor_to_csr(self):
    """Tensor.to_csr(): dense_to_sparse_csr."""
    return dense_to_sparse_csr(self)


__all__ = ([f"coo_{n}" for n in _ELEMENTWISE] + [f"csr_{n}" for n in _ELEMENTWISE] +
           ["coo_add", "coo_concat", "csr_add", "csr_mm", "csr_softmax", "csr_to_coo",
            "dense_to_sparse_coo", "dense_to_sparse_csr", "sparse_segment_mean"])
