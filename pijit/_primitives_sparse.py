"""MindSpore's primitives that take a sparse tensor as its parts (indices, values, shape):
SparseToDense, SparseTensorDenseAdd, SparseTensorDenseMatmul, Coalesce, SparseSlice, and
SparseGatherV2 (a gather whose gradient MindSpore keeps sparse; pijit's is dense, the same
values). Values flow through pijit ops; positions are read on the host where the result's
positions depend on them."""
import numpy as np

from pijit import _C
from pijit._ops_composed import swapaxes
from pijit._ops_nd import tensor_scatter_add
from pijit._ops_sparse import sparse_dense_product
from pijit._tensor import Tensor
from pijit.common.sparse_tensor import sum_at_equal_positions
from pijit.ops import Primitive

_ops = _C.ops

__all__ = ["SparseToDense", "SparseTensorDenseAdd", "SparseTensorDenseMatmul", "Coalesce",
           "SparseSlice", "SparseGatherV2"]


def _shape_tuple(fname, shape):
    if isinstance(shape, Tensor):
        shape = tuple(int(d) for d in shape.asnumpy().reshape(-1))
    if not isinstance(shape, (tuple, list)) or not all(
            isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise TypeError(f"{fname}: the shape must be a tuple of non-negative ints, got {shape!r}")
    return tuple(int(d) for d in shape)


def _check_parts(fname, indices, values, shape):
    for name, value in (("indices", indices), ("values", values)):
        if not isinstance(value, Tensor):
            raise TypeError(f"{fname}: {name} must be a Tensor, got {type(value).__name__}")
    shape = _shape_tuple(fname, shape)
    if indices.ndim != 2 or values.ndim != 1 or indices.shape[0] != values.shape[0] or \
            indices.shape[1] != len(shape):
        raise ValueError(f"{fname}: needs indices (N, {len(shape)}) and values (N,), got "
                         f"{tuple(indices.shape)} and {tuple(values.shape)}")
    return shape


class SparseToDense(Primitive):
    """SparseToDense()(indices, values, sparse_shape): the dense Tensor with values at indices
    (summed where repeated), zeros elsewhere."""

    def __call__(self, indices, values, sparse_shape):
        shape = _check_parts("SparseToDense", indices, values, sparse_shape)
        return tensor_scatter_add(_ops.zeros(shape, dtype=values.dtype), indices, values)


class SparseTensorDenseAdd(Primitive):
    """SparseTensorDenseAdd()(x1_indices, x1_values, x1_shape, x2): x2 plus the sparse x1."""

    def __call__(self, x1_indices, x1_values, x1_shape, x2):
        shape = _check_parts("SparseTensorDenseAdd", x1_indices, x1_values, x1_shape)
        if not isinstance(x2, Tensor) or tuple(x2.shape) != shape:
            raise ValueError(f"SparseTensorDenseAdd: x2 must be a Tensor of shape {shape}")
        return tensor_scatter_add(x2, x1_indices, x1_values)


class SparseTensorDenseMatmul(Primitive):
    """SparseTensorDenseMatmul(adjoint_st=False, adjoint_dt=False)(indices, values,
    sparse_shape, dense): the sparse 2-D matrix (transposed with adjoint_st) times the dense
    one (transposed with adjoint_dt)."""

    def __init__(self, adjoint_st=False, adjoint_dt=False):
        for name, value in (("adjoint_st", adjoint_st), ("adjoint_dt", adjoint_dt)):
            if not isinstance(value, bool):
                raise TypeError(f"SparseTensorDenseMatmul: {name} must be a bool, got "
                                f"{type(value).__name__}")
        super().__init__(adjoint_st=adjoint_st, adjoint_dt=adjoint_dt)

    def __call__(self, indices, values, sparse_shape, dense):
        shape = _check_parts("SparseTensorDenseMatmul", indices, values, sparse_shape)
        if len(shape) != 2 or not isinstance(dense, Tensor) or dense.ndim != 2:
            raise ValueError("SparseTensorDenseMatmul: needs a 2-D sparse matrix and a 2-D dense "
                             "one")
        rows, columns = indices[:, 0], indices[:, 1]
        m, n = shape
        if self.adjoint_st:
            rows, columns, m, n = columns, rows, n, m
        if self.adjoint_dt:
            dense = swapaxes(dense, 0, 1)
        if dense.shape[0] != n:
            raise ValueError(f"SparseTensorDenseMatmul: the dense matrix needs {n} rows, has "
                             f"{dense.shape[0]}")
        return sparse_dense_product(values.astype(dense.dtype), rows, columns, dense, m)


class Coalesce(Primitive):
    """Coalesce()(x_indices, x_values, x_shape): each position once, values at repeated
    positions summed, positions in row-major order. x_indices is (ndim, N) as in MindSpore;
    returns (y_indices (ndim, M), y_values (M,), y_shape)."""

    def __call__(self, x_indices, x_values, x_shape):
        if not isinstance(x_indices, Tensor) or x_indices.ndim != 2:
            raise ValueError("Coalesce: x_indices must be a 2-D Tensor (ndim, N)")
        positions = np.ascontiguousarray(x_indices.asnumpy().T)
        shape = _shape_tuple("Coalesce", x_shape)
        _check_parts("Coalesce", Tensor(positions), x_values, shape)
        unique, values = sum_at_equal_positions(positions, x_values)
        y_shape = x_shape if isinstance(x_shape, Tensor) else Tensor(np.array(shape, np.int64))
        return Tensor(np.ascontiguousarray(unique.T)), values, y_shape


class SparseSlice(Primitive):
    """SparseSlice()(indices, values, shape, start, size): the entries inside the box
    [start, start + size) of each dimension, positions relative to start; returns
    (y_indices, y_values, y_shape), y_shape clipped to the tensor."""

    def __call__(self, indices, values, shape, start, size):
        dense_shape = np.array(_check_parts("SparseSlice", indices, values, shape), np.int64)
        start = np.asarray(start.asnumpy() if isinstance(start, Tensor) else start, np.int64)
        size = np.asarray(size.asnumpy() if isinstance(size, Tensor) else size, np.int64)
        if start.shape != dense_shape.shape or size.shape != dense_shape.shape or \
                np.any(start < 0) or np.any(size < 0):
            raise ValueError(f"SparseSlice: start and size must be {len(dense_shape)} "
                             f"non-negative ints, got {start.tolist()} and {size.tolist()}")
        stop = np.minimum(start + size, dense_shape)
        positions = indices.asnumpy().astype(np.int64)
        inside = np.flatnonzero(np.all((positions >= start) & (positions < stop), axis=1))
        y_indices = Tensor(np.ascontiguousarray(positions[inside] - start).astype(
            indices.asnumpy().dtype))
        y_values = _ops.gather(values, Tensor(inside.astype(np.int64)), 0)
        return y_indices, y_values, Tensor(np.maximum(stop - start, 0))


class SparseGatherV2(Primitive):
    """SparseGatherV2()(input_params, input_indices, axis): ops.gather's result."""

    def __call__(self, input_params, input_indices, axis):
        return _ops.gather(input_params, input_indices, axis)
