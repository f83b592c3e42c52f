"""Sparse tensors (MindSpore's COOTensor, CSRTensor, RowTensor and SparseTensor).

A sparse tensor is a dense Tensor of its stored values plus integer positions: COO keeps one
(row, column) pair per value, CSR the values row by row with each row's start in `indptr` and
each value's column in `indices`. Values are ordinary pijit Tensors, so every operation on
them (the arithmetic below, the coo_*/csr_* functions, to_dense, products with dense
matrices) is made of pijit ops and is differentiated with respect to the values; positions
carry no gradient. Where the positions of a result depend on the positions of the inputs (a
sum of two sparse tensors, a product of two CSR matrices, coalescing, conversions), they are
computed on the host from the inputs' positions, so a captured graph breaks there.

As in MindSpore, positions are not checked against the shape beyond their count and dtype,
repeated COO positions are summed by to_dense and kept apart otherwise, and the elementwise
functions apply to the stored values only."""
import numpy as np

from pijit import _C
from pijit._tensor import Tensor, int16, int32, int64

_ops = _C.ops
_INDEX_DTYPES = (int16, int32, int64)

__all__ = ["COOTensor", "CSRTensor", "RowTensor", "SparseTensor"]


def _check_shape(owner, shape, rank=None):
    if not isinstance(shape, tuple) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise TypeError(f"{owner}: shape must be a tuple of non-negative ints, got {shape!r}")
    if rank is not None and len(shape) != rank:
        raise ValueError(f"{owner}: shape must have {rank} dimensions, got {shape}")
    return shape


def _check_index_tensor(owner, name, value, ndim):
    if not isinstance(value, Tensor):
        raise TypeError(f"{owner}: {name} must be a Tensor, got {type(value).__name__}")
    if value.dtype not in _INDEX_DTYPES:
        raise TypeError(f"{owner}: {name} must be int16, int32 or int64, got {value.dtype}")
    if value.ndim != ndim:
        raise ValueError(f"{owner}: {name} must be {ndim}-D, got shape {tuple(value.shape)}")
    return value


def _stop(t):
    from pijit._ops_special import stop_gradient
    return stop_gradient(t)


def sum_at_equal_positions(positions, values):
    """The distinct rows of `positions` (a NumPy (N, ndim) array, row-major order) and, for
    each, the sum of the `values` there (a segment sum, so gradients reach every value; the
    values' dtype kept, which integer sums would widen)."""
    from pijit._ops_array_extra import unsorted_segment_sum
    if len(positions) == 0:
        return positions, _ops.zeros((0,), dtype=values.dtype)
    unique, segment = np.unique(positions, axis=0, return_inverse=True)
    sums = unsorted_segment_sum(values, Tensor(segment.reshape(-1).astype(np.int32)), len(unique))
    return unique, sums.astype(values.dtype)


def indptr_of(rows, count, dtype):
    """CSR's row starts (count + 1 of them, NumPy `dtype`) for values in the row order `rows`
    (a NumPy array, sorted)."""
    counts = np.bincount(rows, minlength=count) if len(rows) else np.zeros(count, np.int64)
    return np.concatenate(([0], np.cumsum(counts))).astype(dtype)


class _StoredValues:
    """What COOTensor and CSRTensor share: stored values with their positions and the dense
    shape, and the operations that act on the values alone. Subclasses set _indices,
    _values and _shape and define with_values."""

    indices = property(lambda self: self._indices)
    values = property(lambda self: self._values)
    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._values.dtype)
    size = property(lambda self: self._values.size)
    itemsize = property(lambda self: self._values.itemsize)
    ndim = property(lambda self: len(self._shape))

    def astype(self, dtype):
        return self.with_values(self._values.astype(dtype))

    def abs(self):
        return self.with_values(_ops.abs(self._values))

    def __neg__(self):
        return self.with_values(-self._values)


class COOTensor(_StoredValues):
    """COOTensor(indices, values, shape) or COOTensor(coo_tensor=other): the 2-D tensor whose
    entry indices[i] is values[i] (indices (N, 2) int16/int32/int64, values (N,), shape a
    tuple of two ints) and whose other entries are 0."""

    def __init__(self, indices=None, values=None, shape=None, coo_tensor=None):
        if coo_tensor is not None:
            if not isinstance(coo_tensor, COOTensor):
                raise TypeError(f"COOTensor: coo_tensor must be a COOTensor, got "
                                f"{type(coo_tensor).__name__}")
            if not (indices is None and values is None and shape is None):
                raise TypeError("COOTensor: with coo_tensor, indices, values and shape must be None")
            indices, values, shape = coo_tensor.indices, coo_tensor.values, coo_tensor.shape
        _check_shape("COOTensor", shape, 2)
        _check_index_tensor("COOTensor", "indices", indices, 2)
        if not isinstance(values, Tensor) or values.ndim != 1:
            raise ValueError(f"COOTensor: values must be a 1-D Tensor, got "
                             f"{getattr(values, 'shape', type(values).__name__)}")
        if indices.shape[1] != len(shape) or indices.shape[0] != values.shape[0]:
            raise ValueError(f"COOTensor: indices must be ({values.shape[0]}, {len(shape)}) for "
                             f"{values.shape[0]} values of a {len(shape)}-D shape, got "
                             f"{tuple(indices.shape)}")
        self._indices, self._values, self._shape = _stop(indices), values, shape


    def __repr__(self):
        return (f"COOTensor(shape={list(self._shape)}, dtype={self.dtype}, indices={self._indices!r}, "
                f"values={self._values!r})")

    def with_values(self, values):
        return COOTensor(self._indices, values, self._shape)

    def to_tuple(self):
        return self._indices, self._values, self._shape

    def to_dense(self):
        """The dense Tensor (values at repeated positions summed)."""
        from pijit._ops_nd import tensor_scatter_add
        return tensor_scatter_add(_ops.zeros(self._shape, dtype=self.dtype), self._indices,
                                  self._values)

    def coalesce(self):
        """A copy with each position once (values at repeated positions summed), positions in
        row-major order."""
        unique, values = sum_at_equal_positions(self._indices.asnumpy(), self._values)
        return COOTensor(Tensor(unique), values, self._shape)

    def to_csr(self):
        """The CSRTensor of the same entries (rows in order, each row's entries in their
        order here)."""
        positions = self._indices.asnumpy()
        order = np.argsort(positions[:, 0], kind="stable")
        indptr = indptr_of(positions[order, 0], self._shape[0], positions.dtype)
        values = _ops.gather(self._values, Tensor(order.astype(np.int64)), 0)
        return CSRTensor(Tensor(indptr), Tensor(np.ascontiguousarray(positions[order, 1])), values,
                         self._shape)

    def add(self, other, thresh):
        from pijit._ops_sparse import coo_add
        return coo_add(self, other, thresh)

    def _same_shape(self, other):
        if tuple(other.shape) != self._shape:
            raise ValueError(f"COOTensor: shapes {self._shape} and {tuple(other.shape)} differ")

    def __add__(self, other):
        self._same_shape(other)
        if isinstance(other, Tensor):
            from pijit._ops_nd import tensor_scatter_add
            return tensor_scatter_add(other, self._indices, self._values)
        if isinstance(other, COOTensor):
            return self.add(other, Tensor(0, self.dtype))
        raise TypeError(f"COOTensor: cannot add a {type(other).__name__}")

    def __sub__(self, other):
        self._same_shape(other)
        if isinstance(other, Tensor):
            from pijit._ops_nd import tensor_scatter_add
            return tensor_scatter_add(-other, self._indices, self._values)
        if isinstance(other, COOTensor):
            return self.add(-other, Tensor(0, self.dtype))
        raise TypeError(f"COOTensor: cannot subtract a {type(other).__name__}")

    def _at_positions(self, other, op):
        self._same_shape(other)
        if not isinstance(other, Tensor):
            raise TypeError(f"COOTensor: cannot {op} by a {type(other).__name__}")
        from pijit._ops_nd import gather_nd
        return gather_nd(other, self._indices)

    def __mul__(self, other):
        return self.with_values(self._values * self._at_positions(other, "multiply"))

    def __truediv__(self, other):
        return self.with_values(self._values / self._at_positions(other, "divide"))


class SparseTensor(COOTensor):
    """MindSpore's older name of COOTensor (indices, values and shape are required)."""

    def __init__(self, indices, values, shape):
        super().__init__(indices, values, shape)


class CSRTensor(_StoredValues):
    """CSRTensor(indptr, indices, values, shape) or CSRTensor(csr_tensor=other): a 2-D tensor
    stored row by row: row r's values are values[indptr[r]:indptr[r + 1]], in the columns
    indices[indptr[r]:indptr[r + 1]] (indptr (M + 1,), indices and values (N,))."""

    def __init__(self, indptr=None, indices=None, values=None, shape=None, csr_tensor=None):
        if csr_tensor is not None:
            if not isinstance(csr_tensor, CSRTensor):
                raise TypeError(f"CSRTensor: csr_tensor must be a CSRTensor, got "
                                f"{type(csr_tensor).__name__}")
            if not (indptr is None and indices is None and values is None and shape is None):
                raise TypeError("CSRTensor: with csr_tensor, indptr, indices, values and shape must "
                                "be None")
            indptr, indices, values, shape = csr_tensor.to_tuple()
        _check_shape("CSRTensor", shape, 2)
        _check_index_tensor("CSRTensor", "indptr", indptr, 1)
        _check_index_tensor("CSRTensor", "indices", indices, 1)
        if not isinstance(values, Tensor) or values.ndim != 1:
            raise ValueError(f"CSRTensor: values must be a 1-D Tensor, got "
                             f"{getattr(values, 'shape', type(values).__name__)}")
        if indptr.shape[0] != shape[0] + 1 or indices.shape[0] != values.shape[0]:
            raise ValueError(f"CSRTensor: needs indptr of {shape[0] + 1} entries for shape {shape} "
                             f"and as many indices as values, got indptr {tuple(indptr.shape)}, "
                             f"indices {tuple(indices.shape)}, values {tuple(values.shape)}")
        if indptr.dtype != indices.dtype:
            raise TypeError(f"CSRTensor: indptr and indices must have one dtype, got "
                            f"{indptr.dtype} and {indices.dtype}")
        self._indptr, self._indices = _stop(indptr), _stop(indices)
        self._values, self._shape = values, shape

    indptr = property(lambda self: self._indptr)

    def __repr__(self):
        return (f"CSRTensor(shape={list(self._shape)}, dtype={self.dtype}, indptr={self._indptr!r}, "
                f"indices={self._indices!r}, values={self._values!r})")

    def with_values(self, values):
        return CSRTensor(self._indptr, self._indices, values, self._shape)

    def to_tuple(self):
        return self._indptr, self._indices, self._values, self._shape

    def row_ids(self):
        """Each stored value's row, as an int32 Tensor (read from indptr on the host)."""
        counts = np.diff(self._indptr.asnumpy().astype(np.int64))
        return Tensor(np.repeat(np.arange(self._shape[0], dtype=np.int32), counts))

    def to_coo(self):
        rows = self.row_ids().astype(self._indices.dtype)
        return COOTensor(_ops.stack((rows, self._indices), 1), self._values, self._shape)

    def to_dense(self):
        return self.to_coo().to_dense()

    def mv(self, dense_vector):
        """The product with a dense (N, 1) column: a dense (M, 1) Tensor."""
        if not isinstance(dense_vector, Tensor) or tuple(dense_vector.shape) != (self._shape[1], 1):
            raise ValueError(f"CSRTensor.mv: needs a ({self._shape[1]}, 1) Tensor, got "
                             f"{getattr(dense_vector, 'shape', type(dense_vector).__name__)}")
        return self.mm(dense_vector)

    def mm(self, matrix):
        """The product with a dense (N, K) Tensor (a dense (M, K) Tensor) or a CSRTensor (a
        CSRTensor)."""
        from pijit._ops_sparse import csr_mm
        return csr_mm(self, matrix)

    def sum(self, axis):
        """The sums over `axis` (0 or 1, or -2, -1), the axis kept with size 1: dense."""
        from pijit._ops_array_extra import unsorted_segment_sum
        if isinstance(axis, bool) or axis not in (0, 1, -1, -2):
            raise ValueError(f"CSRTensor.sum: axis must be 0, 1, -1 or -2, got {axis!r}")
        if axis % 2 == 1:
            return _ops.unsqueeze(unsorted_segment_sum(self._values, self.row_ids(),
                                                       self._shape[0]), 1)
        columns = self._indices.astype(int32)
        return _ops.unsqueeze(unsorted_segment_sum(self._values, columns, self._shape[1]), 0)

    def add(self, b, alpha, beta):
        from pijit._ops_sparse import csr_add
        return csr_add(self, b, alpha, beta)

    def _at_positions(self, other, op):
        if not isinstance(other, Tensor):
            raise TypeError(f"CSRTensor: cannot {op} by a {type(other).__name__}")
        from pijit._ops_nd import gather_nd
        dense = _ops.broadcast_to(other, self._shape) if tuple(other.shape) != self._shape \
            else other
        positions = _ops.stack((self.row_ids().astype(int64), self._indices.astype(int64)), 1)
        return gather_nd(dense, positions)

    def __mul__(self, other):
        return self.with_values(self._values * self._at_positions(other, "multiply"))

    def __truediv__(self, other):
        return self.with_values(self._values / self._at_positions(other, "divide"))

    def __add__(self, other):
        if not isinstance(other, CSRTensor):
            raise TypeError(f"CSRTensor: cannot add a {type(other).__name__}")
        return self.add(other, Tensor(1, self.dtype), Tensor(1, self.dtype))

    def __sub__(self, other):
        if not isinstance(other, CSRTensor):
            raise TypeError(f"CSRTensor: cannot subtract a {type(other).__name__}")
        return self.add(other, Tensor(1, self.dtype), Tensor(-1, self.dtype))


class RowTensor:
    """RowTensor(indices, values, shape): the tensor whose rows indices[i] are values[i]
    (indices (D0,), values (D0, D1, ...)) and whose other rows are 0; what sparse gradients of
    embedding lookups are in MindSpore."""

    def __init__(self, indices=None, values=None, shape=None, row_tensor=None):
        if row_tensor is not None:
            if not isinstance(row_tensor, RowTensor):
                raise TypeError(f"RowTensor: row_tensor must be a RowTensor, got "
                                f"{type(row_tensor).__name__}")
            indices, values, shape = row_tensor.indices, row_tensor.values, row_tensor.dense_shape
        _check_shape("RowTensor", shape)
        _check_index_tensor("RowTensor", "indices", indices, 1)
        if not isinstance(values, Tensor) or values.ndim != len(shape) or \
                values.shape[0] != indices.shape[0] or tuple(values.shape[1:]) != shape[1:]:
            raise ValueError(f"RowTensor: values must be ({indices.shape[0]}, *{shape[1:]}), got "
                             f"{getattr(values, 'shape', type(values).__name__)}")
        self._indices, self._values, self._shape = _stop(indices), values, shape

    indices = property(lambda self: self._indices)
    values = property(lambda self: self._values)
    dense_shape = property(lambda self: self._shape)

    def to_dense(self):
        from pijit._ops_nd import tensor_scatter_add
        return tensor_scatter_add(_ops.zeros(self._shape, dtype=self._values.dtype),
                                  _ops.unsqueeze(self._indices, 1), self._values)

    def __repr__(self):
        return (f"RowTensor(dense_shape={list(self._shape)}, indices={self._indices!r}, "
                f"values={self._values!r})")
