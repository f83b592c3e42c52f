"""COOTensor, CSRTensor, RowTensor, the coo_*/csr_* functions and the sparse primitives,
against dense NumPy computations (and scipy.sparse where it gives the reference), gradients
with respect to the values against finite differences, jitted calls against eager ones."""
import numpy as np
import pytest

import pijit as ms
from pijit import COOTensor, CSRTensor, RowTensor, Tensor, ops

from gradcheck_util import central_differences

scipy_sparse = pytest.importorskip("scipy.sparse", reason="scipy.sparse gives the CSR reference")


def _random_sparse(shape=(5, 6), density=0.4, seed=0):
    rng = np.random.default_rng(seed)
    dense = rng.standard_normal(shape) * (rng.random(shape) < density)
    return dense


def _coo_of(dense, dtype=np.int32):
    positions = np.argwhere(dense)
    return COOTensor(Tensor(positions.astype(dtype)), Tensor(dense[tuple(positions.T)]),
                     dense.shape)


def _csr_of(dense):
    m = scipy_sparse.csr_matrix(dense)
    return CSRTensor(Tensor(m.indptr.astype(np.int32)), Tensor(m.indices.astype(np.int32)),
                     Tensor(m.data), dense.shape)


def test_coo_as_mindspore_documents():
    x = COOTensor(Tensor([[0, 1], [1, 2]], dtype=ms.int32), Tensor([1, 2], dtype=ms.float32),
                  (3, 4))
    np.testing.assert_array_equal(x.to_dense().asnumpy(),
                                  [[0, 1, 0, 0], [0, 0, 2, 0], [0, 0, 0, 0]])
    assert x.shape == (3, 4) and x.dtype == ms.float32 and x.ndim == 2 and x.size == 2
    assert x.astype(ms.float64).dtype == ms.float64
    indices, values, shape = x.to_tuple()
    assert shape == (3, 4) and values.shape == (2,) and indices.shape == (2, 2)
    same = COOTensor(coo_tensor=x)
    np.testing.assert_array_equal(same.to_dense().asnumpy(), x.to_dense().asnumpy())


def test_coo_add_as_mindspore_documents():
    a = COOTensor(Tensor([[0, 1], [1, 2]], dtype=ms.int64), Tensor([1, 2], dtype=ms.int32), (3, 4))
    b = COOTensor(Tensor([[0, 0], [1, 1]], dtype=ms.int64), Tensor([3, 4], dtype=ms.int32), (3, 4))
    out = a.add(b, Tensor(0, dtype=ms.int32))
    np.testing.assert_array_equal(out.indices.asnumpy(), [[0, 0], [0, 1], [1, 1], [1, 2]])
    np.testing.assert_array_equal(out.values.asnumpy(), [3, 1, 4, 2])
    assert out.dtype == ms.int32


def test_coo_add_sums_shared_positions_and_drops_small_sums():
    a, b = _random_sparse(seed=1), _random_sparse(seed=2)
    b[np.nonzero(a)] = -a[np.nonzero(a)] + 1e-3 * (np.arange(np.count_nonzero(a)) % 2)  # cancel
    out = ops.coo_add(_coo_of(a), _coo_of(b), Tensor(1e-2))
    expected = a + b
    expected[np.abs(expected) < 1e-2] = 0
    np.testing.assert_allclose(out.to_dense().asnumpy(), expected, atol=1e-12)
    assert np.all(np.abs(out.values.asnumpy()) >= 1e-2)
    summed = _coo_of(a) + _coo_of(b)
    np.testing.assert_allclose(summed.to_dense().asnumpy(), a + b, atol=1e-12)


def test_coo_with_dense_operands():
    a = _random_sparse(seed=3)
    dense = np.random.default_rng(4).standard_normal(a.shape) + 3.0
    x = _coo_of(a)
    np.testing.assert_allclose((x + Tensor(dense)).asnumpy(), a + dense)
    np.testing.assert_allclose((x - Tensor(dense)).asnumpy(), a - dense)
    np.testing.assert_allclose((x * Tensor(dense)).to_dense().asnumpy(), a * dense)
    np.testing.assert_allclose((x / Tensor(dense)).to_dense().asnumpy(), a / dense)
    np.testing.assert_allclose((-x).to_dense().asnumpy(), -a)
    with pytest.raises(ValueError, match="shapes"):
        x + Tensor(np.ones((2, 2)))


def test_coalesce_and_to_csr():
    positions = np.array([[0, 1], [2, 0], [0, 1], [1, 2]])
    values = np.array([1.0, 2.0, 3.0, 4.0])
    x = COOTensor(Tensor(positions.astype(np.int64)), Tensor(values), (3, 3))
    merged = x.coalesce()
    np.testing.assert_array_equal(merged.indices.asnumpy(), [[0, 1], [1, 2], [2, 0]])
    np.testing.assert_array_equal(merged.values.asnumpy(), [4.0, 4.0, 2.0])
    csr = x.to_csr()
    reference = scipy_sparse.coo_matrix((values, positions.T), shape=(3, 3)).toarray()
    np.testing.assert_array_equal(csr.to_dense().asnumpy(), reference)
    np.testing.assert_array_equal(csr.indptr.asnumpy(), [0, 2, 3, 4])


def test_csr_as_mindspore_documents():
    csr = CSRTensor(Tensor([0, 1, 2], dtype=ms.int32), Tensor([0, 1], dtype=ms.int32),
                    Tensor([2, 1], dtype=ms.float32), (2, 4))
    np.testing.assert_array_equal(csr.mv(Tensor([[1], [1], [1], [1]], dtype=ms.float32)).asnumpy(),
                                  [[2], [1]])
    dense = Tensor([[1., 2.], [1, 2.], [1, 2.], [1., 2.]], dtype=ms.float32)
    np.testing.assert_array_equal(csr.mm(dense).asnumpy(), [[2, 4], [1, 2]])
    np.testing.assert_array_equal(csr.sum(1).asnumpy(), [[2], [1]])
    b = CSRTensor(csr.indptr, csr.indices, Tensor([1, 2], dtype=ms.float32), (2, 4))
    np.testing.assert_array_equal(csr.add(b, Tensor(1, ms.float32), Tensor(1, ms.float32))
                                  .values.asnumpy(), [3, 3])


def test_csr_mm_of_two_csr_matrices_as_mindspore_documents():
    a = CSRTensor(Tensor([0, 1, 1, 3, 4], dtype=ms.int32), Tensor([0, 3, 4, 0], dtype=ms.int32),
                  Tensor([1.0, 5.0, -1.0, -2.0], dtype=ms.float32), (4, 5))
    b = CSRTensor(Tensor([0, 1, 1, 3, 3, 3], dtype=ms.int32), Tensor([0, 0, 1], dtype=ms.int32),
                  Tensor([2.0, 7.0, 8.0], dtype=ms.float32), (5, 3))
    c = ops.csr_mm(a, b)
    assert c.shape == (4, 3)
    np.testing.assert_array_equal(c.values.asnumpy(), [2, -4])
    np.testing.assert_array_equal(c.indptr.asnumpy(), [0, 1, 1, 1, 2])
    np.testing.assert_array_equal(c.indices.asnumpy(), [0, 0])


@pytest.mark.parametrize("trans_a, trans_b", [(False, False), (True, False), (False, True)])
def test_csr_mm_against_scipy(trans_a, trans_b):
    a, b = _random_sparse((5, 6), seed=5), _random_sparse((6, 4), seed=6)
    a_in = a.T.copy() if trans_a else a
    b_in = b.T.copy() if trans_b else b
    got = ops.csr_mm(_csr_of(a_in), _csr_of(b_in), trans_a=trans_a, trans_b=trans_b)
    np.testing.assert_allclose(got.to_dense().asnumpy(), a @ b, atol=1e-12)
    dense = ops.csr_mm(_csr_of(a_in), Tensor(b_in), trans_a=trans_a, trans_b=trans_b)
    np.testing.assert_allclose(dense.asnumpy(), a @ b, atol=1e-12)


def test_csr_arithmetic_sum_and_softmax():
    a = _random_sparse(seed=7)
    dense = np.random.default_rng(8).standard_normal(a.shape) + 3.0
    x = _csr_of(a)
    np.testing.assert_allclose((x * Tensor(dense)).to_dense().asnumpy(), a * dense)
    np.testing.assert_allclose((x / Tensor(dense)).to_dense().asnumpy(), a / dense)
    np.testing.assert_allclose((x - _csr_of(dense * (a != 0))).to_dense().asnumpy(),
                               a - dense * (a != 0), atol=1e-12)
    np.testing.assert_allclose(x.sum(0).asnumpy(), a.sum(0, keepdims=True), atol=1e-12)
    soft = ops.csr_softmax(x, ms.float64).to_dense().asnumpy()
    for r in range(a.shape[0]):
        stored = np.flatnonzero(a[r])
        if len(stored):
            e = np.exp(a[r, stored] - a[r, stored].max())
            np.testing.assert_allclose(soft[r, stored], e / e.sum(), atol=1e-12)


@pytest.mark.parametrize("name", ["abs", "exp", "sin", "relu6", "sigmoid", "square", "isnan",
                                  "softsign", "round", "neg", "tanh"])
def test_elementwise_functions_map_the_stored_values(name):
    a = _random_sparse(seed=9)
    coo, csr = _coo_of(a), _csr_of(a)
    reference = getattr(ops, name)(coo.values).asnumpy()
    out = getattr(ops, f"coo_{name}")(coo)
    assert isinstance(out, COOTensor)
    np.testing.assert_array_equal(out.values.asnumpy(), reference)
    np.testing.assert_array_equal(out.indices.asnumpy(), coo.indices.asnumpy())
    out = getattr(ops, f"csr_{name}")(csr)
    np.testing.assert_array_equal(out.values.asnumpy(),
                                  getattr(ops, name)(csr.values).asnumpy())
    with pytest.raises(TypeError, match=f"coo_{name}: x must be a COOTensor"):
        getattr(ops, f"coo_{name}")(csr)


def test_conversions():
    a = _random_sparse(seed=10)
    t = Tensor(a)
    coo, csr = ops.dense_to_sparse_coo(t), ops.dense_to_sparse_csr(t)
    np.testing.assert_array_equal(coo.to_dense().asnumpy(), a)
    np.testing.assert_array_equal(csr.to_dense().asnumpy(), a)
    np.testing.assert_array_equal(t.to_coo().indices.asnumpy(), np.argwhere(a))
    np.testing.assert_array_equal(ops.csr_to_coo(csr).to_dense().asnumpy(), a)
    np.testing.assert_array_equal(t.to_csr().indptr.asnumpy(), scipy_sparse.csr_matrix(a).indptr)


def test_coo_concat():
    a, b = _random_sparse((2, 3), seed=11), _random_sparse((4, 3), seed=12)
    out = ops.coo_concat((_coo_of(a), _coo_of(b)), 0)
    np.testing.assert_array_equal(out.to_dense().asnumpy(), np.concatenate((a, b)))
    c = _random_sparse((2, 5), seed=13)
    np.testing.assert_array_equal(ops.coo_concat((_coo_of(a), _coo_of(c)), 1).to_dense()
                                  .asnumpy(), np.concatenate((a, c), 1))
    positions = out.indices.asnumpy()
    assert (np.lexsort((positions[:, 1], positions[:, 0])) == np.arange(len(positions))).all()
    with pytest.raises(ValueError, match="agree"):
        ops.coo_concat((_coo_of(a), _coo_of(c)), 0)


def test_row_tensor():
    x = RowTensor(Tensor([0]), Tensor([[1, 2]], dtype=ms.float32), (3, 2))
    np.testing.assert_array_equal(x.values.asnumpy(), [[1, 2]])
    np.testing.assert_array_equal(x.indices.asnumpy(), [0])
    assert x.dense_shape == (3, 2)
    np.testing.assert_array_equal(x.to_dense().asnumpy(), [[1, 2], [0, 0], [0, 0]])


def test_sparse_segment_mean():
    x = np.arange(12.0).reshape(4, 3)
    got = ops.sparse_segment_mean(Tensor(x), Tensor(np.array([0, 1, 2, 2], np.int32)),
                                  Tensor(np.array([0, 0, 2, 2], np.int32)))
    np.testing.assert_allclose(got.asnumpy(), [(x[0] + x[1]) / 2, np.zeros(3), x[2]])


def test_primitives():
    a = _random_sparse((4, 5), seed=14)
    positions = np.argwhere(a).astype(np.int64)
    indices, values = Tensor(positions), Tensor(a[tuple(positions.T)])
    np.testing.assert_array_equal(ops.SparseToDense()(indices, values, (4, 5)).asnumpy(), a)
    dense = np.random.default_rng(15).standard_normal((4, 5))
    np.testing.assert_allclose(ops.SparseTensorDenseAdd()(indices, values, (4, 5),
                                                          Tensor(dense)).asnumpy(), a + dense)
    right = np.random.default_rng(16).standard_normal((5, 3))
    np.testing.assert_allclose(ops.SparseTensorDenseMatmul()(indices, values, (4, 5),
                                                             Tensor(right)).asnumpy(), a @ right)
    np.testing.assert_allclose(ops.SparseTensorDenseMatmul(adjoint_st=True, adjoint_dt=True)(
        indices, values, (4, 5), Tensor(np.ones((2, 4)))).asnumpy(), a.T @ np.ones((4, 2)))
    y_indices, y_values, y_shape = ops.SparseSlice()(indices, values, Tensor(np.array([4, 5])),
                                                     Tensor(np.array([1, 1])),
                                                     Tensor(np.array([2, 10])))
    np.testing.assert_array_equal(y_shape.asnumpy(), [2, 4])
    np.testing.assert_array_equal(
        ops.SparseToDense()(y_indices, y_values, tuple(y_shape.asnumpy())).asnumpy(), a[1:3, 1:])
    twice = Tensor(np.concatenate((positions, positions)).T.copy())
    merged = ops.Coalesce()(twice, ops.concat((values, values), 0), Tensor(np.array([4, 5])))
    np.testing.assert_array_equal(merged[0].asnumpy(), positions.T)
    np.testing.assert_allclose(merged[1].asnumpy(), 2 * a[tuple(positions.T)])


def test_gradients_reach_the_values_and_the_dense_operands():
    a = _random_sparse((4, 5), seed=17)
    positions = np.argwhere(a)
    start = a[tuple(positions.T)]
    right = np.random.default_rng(18).standard_normal((5, 3))
    indptr = scipy_sparse.csr_matrix(a).indptr.astype(np.int32)
    columns = Tensor(positions[:, 1].astype(np.int32))

    def loss(values, dense):
        x = CSRTensor(Tensor(indptr), columns, values, (4, 5))
        product = x.mm(dense)
        softened = ops.csr_softmax(x, ms.float64).values
        return (product ** 2).sum() + (softened * values).sum() + x.to_dense().sum()

    def numpy_loss(values, dense):
        full = np.zeros((4, 5))
        full[tuple(positions.T)] = values
        soft = np.zeros_like(values)
        for r in range(4):
            row = positions[:, 0] == r
            if row.any():
                e = np.exp(values[row] - values[row].max())
                soft[row] = e / e.sum()
        return ((full @ dense) ** 2).sum() + (soft * values).sum() + full.sum()

    grads = ms.grad(loss, grad_position=(0, 1))(Tensor(start), Tensor(right))
    np.testing.assert_allclose(grads[0].asnumpy(), central_differences(
        lambda v: numpy_loss(v, right), start), atol=1e-6)
    np.testing.assert_allclose(grads[1].asnumpy(), central_differences(
        lambda d: numpy_loss(start, d), right), atol=1e-6)


def test_jitted_equals_eager():
    a = _random_sparse((4, 5), seed=19)
    x = _coo_of(a)
    dense = Tensor(np.random.default_rng(20).standard_normal((4, 5)))

    def f(values, d):
        y = COOTensor(x.indices, values * 2.0, x.shape)
        return (ops.coo_tanh(y) * d).to_dense() + d

    jitted = ms.jit(f, capture_mode="bytecode")
    np.testing.assert_array_equal(jitted(x.values, dense).asnumpy(), f(x.values, dense).asnumpy())
    np.testing.assert_array_equal(jitted(x.values, dense).asnumpy(), f(x.values, dense).asnumpy())


@pytest.mark.parametrize("make, error, message", [
    (lambda: COOTensor(Tensor([[0, 1]]), Tensor([1.0]), [3, 4]), TypeError, "tuple"),
    (lambda: COOTensor(Tensor([[0.0, 1.0]]), Tensor([1.0]), (3, 4)), TypeError, "int16, int32"),
    (lambda: COOTensor(Tensor([[0, 1]]), Tensor([1.0, 2.0]), (3, 4)), ValueError, "indices must"),
    (lambda: CSRTensor(Tensor([0, 1]), Tensor([0]), Tensor([1.0]), (2, 2)), ValueError,
     "indptr of 3"),
    (lambda: CSRTensor(Tensor(np.array([0, 1, 1], np.int32)), Tensor(np.array([0], np.int64)),
                       Tensor([1.0]), (2, 2)), TypeError, "one dtype"),
    (lambda: ops.csr_mm(_csr_of(np.eye(2)), Tensor(np.ones((3, 2)))), ValueError, "must be"),
    (lambda: ops.coo_add(_coo_of(np.eye(2)), _coo_of(np.eye(3)), Tensor(0.0)), ValueError,
     "differ"),
])
def test_bad_input_is_rejected(make, error, message):
    with pytest.raises(error, match=message):
        make()
