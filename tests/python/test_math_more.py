"""igamma, igammac, Zeta, NextAfter, matrix_exp, batch_dot, population_count, the multilabel
margin loss, gamma and Poisson draws, and the remaining primitives of
pijit/_ops_math_more.py, against SciPy / NumPy references, eagerly and jitted, with
central-difference gradients in float64 and moment checks under fixed seeds."""
import numpy as np
import pytest

import pijit as ms
from pijit import ops

from gradcheck_util import tensor_central_differences

special = pytest.importorskip("scipy.special")
linalg = pytest.importorskip("scipy.linalg")


def T(a, dtype=np.float64):
    return ms.Tensor(np.asarray(a, dtype=dtype))


def jit_matches_eager(fn, *args):
    jf = ms.jit(fn, capture_mode="bytecode")
    ms.reset(jf)  # parametrized lambdas share one code object
    eager = fn(*args).asnumpy()
    # float32 products may go through another oneDNN kernel in the graph (its operands made
    # contiguous), which on AVX2-only hosts sums in another order: a rounding step apart.
    rtol = 1e-6 if eager.dtype == np.float32 else 1e-12
    for _ in range(2):
        np.testing.assert_allclose(jf(*args).asnumpy(), eager, rtol=rtol)
    return eager


def central_differences(loss, x):
    """The gradient of `loss` at `x` by central differences, every point moved in float64."""
    return tensor_central_differences(loss, x, to_tensor=T)


# ---- special functions ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_igamma_and_igammac_match_scipy(dtype):
    rng = np.random.default_rng(0)
    a = np.exp(rng.uniform(np.log(0.05), np.log(200.0), 300))
    x = a * np.exp(rng.uniform(-2.5, 2.5, 300))
    tol = 1e-10 if dtype == np.float64 else 2e-6
    got_p = jit_matches_eager(ops.igamma, T(a, dtype), T(x, dtype))
    got_q = ops.igammac(T(a, dtype), T(x, dtype)).asnumpy()
    assert got_p.dtype == dtype
    np.testing.assert_allclose(got_p, special.gammainc(a.astype(dtype), x.astype(dtype)),
                               rtol=tol, atol=tol)
    np.testing.assert_allclose(got_q, special.gammaincc(a.astype(dtype), x.astype(dtype)),
                               rtol=tol, atol=tol)


def test_igamma_edges_and_gradient():
    edge = ops.igamma(T([1.0, 1.0, -1.0, 2.0]), T([0.0, np.inf, 1.0, -1.0])).asnumpy()
    np.testing.assert_array_equal(edge[:2], [0.0, 1.0])
    assert np.isnan(edge[2:]).all()
    a, x = np.array([0.7, 3.0, 12.0]), np.array([0.5, 5.0, 9.0])
    got = ms.grad(lambda t: ops.igamma(T(a), t).sum())(T(x)).asnumpy()
    np.testing.assert_allclose(got, np.exp(-x) * x ** (a - 1) / special.gamma(a), rtol=1e-8)
    got_a = ms.grad(lambda t: ops.igammac(t, T(x)).sum())(T(a)).asnumpy()
    np.testing.assert_allclose(got_a, central_differences(lambda t: ops.igammac(t, T(x)).sum(),
                                                          a), rtol=1e-6)
    with pytest.raises(TypeError, match="igamma"):
        ops.igamma(T([1], np.int32), T([1.0]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_zeta_matches_scipy(dtype):
    x = np.array([1.5, 2.0, 3.0, 7.5, 30.0, 1.01])
    q = np.array([0.2, 1.0, 2.5, 10.0, 1.0, 4.0])
    got = jit_matches_eager(lambda a, b: ops.Zeta()(a, b), T(x, dtype), T(q, dtype))
    np.testing.assert_allclose(got, special.zeta(x, q), rtol=1e-12 if dtype == np.float64
                               else 1e-6)
    assert np.isinf(ops.Zeta()(T([1.0]), T([1.0])).asnumpy()[0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_next_after_matches_numpy(dtype):
    tiny = np.finfo(dtype).tiny
    x = np.array([1.0, 1.0, 0.0, 0.0, -2.0, -2.0, tiny, 3.0, 1e30, np.inf, np.nan], dtype)
    y = np.array([2.0, 0.0, 1.0, -1.0, 0.0, -5.0, 0.0, 3.0, -np.inf, 0.0, 1.0], dtype)
    got = ops.NextAfter()(T(x, dtype), T(y, dtype)).asnumpy()
    np.testing.assert_array_equal(got, np.nextafter(x, y))
    with pytest.raises(TypeError, match="NextAfter"):
        ops.NextAfter()(T([1.0], np.float32), T([1.0]))


# ---- matrices ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matrix_exp_matches_scipy(dtype):
    rng = np.random.default_rng(1)
    a = rng.normal(size=(3, 4, 4)) * np.array([0.01, 1.0, 6.0])[:, None, None]
    got = jit_matches_eager(ops.matrix_exp, T(a, dtype))
    want = np.stack([linalg.expm(m) for m in a])
    np.testing.assert_allclose(got, want, rtol=1e-11 if dtype == np.float64 else 2e-5,
                               atol=1e-12 if dtype == np.float64 else 1e-5)
    np.testing.assert_array_equal(ops.MatrixExp()(T(a)).asnumpy(), ops.matrix_exp(T(a)).asnumpy())
    np.testing.assert_allclose(ops.matrix_exp(T(np.zeros((2, 2)))).asnumpy(), np.eye(2))


def test_matrix_exp_gradient_and_errors():
    a = np.random.default_rng(2).normal(size=(3, 3))
    w = T(np.random.default_rng(3).normal(size=(3, 3)))

    def loss(t):
        return (ops.matrix_exp(t) * w).sum()

    np.testing.assert_allclose(ms.grad(loss)(T(a)).asnumpy(), central_differences(loss, a),
                               rtol=1e-6, atol=1e-8)
    with pytest.raises(ValueError, match="matrix_exp"):
        ops.matrix_exp(T(np.zeros((2, 3))))
    with pytest.raises(TypeError, match="matrix_exp"):
        ops.matrix_exp(T(np.zeros((2, 2)), np.int32))


@pytest.mark.parametrize("shapes, axes, contract", [
    (((2, 2, 3), (2, 3, 2)), (-1, -2), ((2,), (1,))),
    (((2, 2), (2, 3, 2)), (1, 2), ((1,), (2,))),
    (((6, 2, 3, 4), (6, 5, 4, 8)), None, ((3,), (2,))),
    (((2, 2, 4), (2, 5, 4, 5)), 2, ((2,), (2,))),
    (((3, 4), (3, 4)), None, ((1,), (1,))),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batch_dot_matches_tensordot(shapes, axes, contract, dtype):
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=shapes[0]), rng.normal(size=shapes[1])
    got = jit_matches_eager(lambda x, y: ops.batch_dot(x, y, axes), T(a, dtype), T(b, dtype))
    want = np.stack([np.tensordot(a[i], b[i], (contract[0][0] - 1, contract[1][0] - 1))
                     for i in range(a.shape[0])])
    if want.ndim == 1:
        want = want[:, None]
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12,
                               atol=1e-5 if dtype == np.float32 else 0)


def test_batch_dot_gradient_and_errors():
    a, b = np.random.default_rng(5).normal(size=(2, 3, 4)), T(np.ones((2, 4, 2)))
    got = ms.grad(lambda t: (ops.batch_dot(t, b, (-1, -2)) ** 2).sum())(T(a)).asnumpy()
    want = central_differences(lambda t: (ops.batch_dot(t, b, (-1, -2)) ** 2).sum(), a)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    with pytest.raises(ValueError, match="batch_dot"):
        ops.batch_dot(T(np.ones((2, 3))), T(np.ones((3, 3))))
    with pytest.raises(ValueError, match="batch_dot"):
        ops.batch_dot(T(np.ones((2, 3))), T(np.ones((2, 3))), (0, 1))
    with pytest.raises(TypeError, match="batch_dot"):
        ops.batch_dot(T(np.ones((2, 3))), T(np.ones((2, 3)), np.float32))


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.int32, np.int64])
def test_population_count_matches_binary_form(dtype):
    info = np.iinfo(dtype)
    x = np.array([0, 1, 5, info.max, info.min, -1 if info.min < 0 else 200], dtype)
    got = jit_matches_eager(ops.population_count, T(x, dtype))
    bits = x.dtype.itemsize * 8
    want = [bin(int(v) & ((1 << bits) - 1)).count("1") for v in x]
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(ops.PopulationCount()(T(x, dtype)).asnumpy(), want)
    with pytest.raises(TypeError, match="population_count"):
        ops.population_count(T([1.0]))


# ---- the multilabel margin loss --------------------------------------------------------------------

def _multilabel_reference(x, y):
    losses, is_target = [], np.zeros_like(y)
    for row in range(x.shape[0]):
        labels = []
        for label in y[row]:
            if label < 0:
                break
            labels.append(label)
        is_target[row, labels] = 1
        total = sum(max(0.0, 1 - (x[row, j] - x[row, i])) for j in labels
                    for i in range(x.shape[1]) if i not in labels)
        losses.append(total / x.shape[1])
    return np.array(losses), is_target


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_multi_label_margin_loss_matches_reference(reduction, dtype):
    x = np.random.default_rng(6).normal(size=(3, 4))
    y = np.array([[3, 0, -1, 1], [1, 2, 3, 0], [-1, 1, 1, 1]])
    losses, is_target = _multilabel_reference(x, y)
    want = {"none": losses, "mean": losses.mean(), "sum": losses.sum()}[reduction]
    got = jit_matches_eager(lambda a, b: ops.multi_label_margin_loss(a, b, reduction),
                            T(x, dtype), T(y, np.int64))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    loss, targets = ops.MultilabelMarginLoss(reduction)(T(x, dtype), T(y, np.int32))
    np.testing.assert_allclose(loss.asnumpy(), want, rtol=1e-6)
    np.testing.assert_array_equal(targets.asnumpy(), is_target)
    one = ops.multi_label_margin_loss(T(x[0]), T(y[0], np.int64), reduction).asnumpy()
    np.testing.assert_allclose(one, losses[0], rtol=1e-12)


def test_multi_label_margin_loss_gradient_and_errors():
    x = np.random.default_rng(7).normal(size=(2, 4))
    y = T(np.array([[3, 0, -1, 1], [1, -1, 0, 0]]), np.int64)

    def loss(t):
        return ops.multi_label_margin_loss(t, y)

    np.testing.assert_allclose(ms.grad(loss)(T(x)).asnumpy(), central_differences(loss, x),
                               rtol=1e-6, atol=1e-9)
    with pytest.raises(ValueError, match="multi_label_margin_loss"):
        ops.multi_label_margin_loss(T(x), T(np.zeros((2, 3)), np.int64))
    with pytest.raises(ValueError, match="reduction"):
        ops.multi_label_margin_loss(T(x), y, "avg")


# ---- random draws ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_random_gamma_moments_and_shape(dtype):
    alpha = np.array([0.3, 1.0, 4.0, 30.0])
    ms.set_seed(11)
    draws = ops.random_gamma((20000,), T(alpha, dtype)).asnumpy()
    assert draws.shape == (20000, 4) and draws.dtype == dtype and (draws > 0).all()
    np.testing.assert_allclose(draws.mean(0), alpha, rtol=0.05)
    np.testing.assert_allclose(draws.var(0), alpha, rtol=0.1)


def test_gamma_broadcasts_and_uses_rate():
    ms.set_seed(12)
    alpha, beta = T([[3.0, 4.0], [5.0, 6.0]], np.float32), T([1.0, 2.0], np.float32)
    draws = ops.gamma((20000, 1, 2), alpha, beta).asnumpy()
    assert draws.shape == (20000, 2, 2) and draws.dtype == np.float32
    np.testing.assert_allclose(draws.mean(0), [[3.0, 2.0], [5.0, 3.0]], rtol=0.05)
    np.testing.assert_allclose(draws.var(0), [[3.0, 1.0], [5.0, 1.5]], rtol=0.1)
    assert ops.Gamma(seed=3)((3, 1, 2), alpha, beta).shape == (3, 2, 2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_random_poisson_moments_and_shape(dtype):
    rate = np.array([0.5, 4.0, 9.9, 10.0, 60.0, 1000.0])
    ms.set_seed(13)
    draws = ops.random_poisson(T([20000], np.int64), T(rate, dtype), dtype=ms.float64).asnumpy()
    assert draws.shape == (20000, 6) and draws.dtype == np.float64
    np.testing.assert_array_equal(draws, np.round(draws))
    np.testing.assert_allclose(draws.mean(0), rate, rtol=0.03)
    np.testing.assert_allclose(draws.var(0), rate, rtol=0.1)
    ints = ops.RandomPoisson(dtype=ms.int64)(T([2, 3], np.int32), T([2.0, 2.0])).asnumpy()
    assert ints.shape == (2, 3, 2) and ints.dtype == np.int64


@pytest.mark.parametrize("draw", [
    lambda: ops.random_gamma((5,), T([2.0])),
    lambda: ops.gamma((5,), T([2.0], np.float32), T([1.0], np.float32)),
    lambda: ops.random_poisson((5,), T([3.0])),
    lambda: ops.Cauchy((5,))(),
    lambda: ops.LogNormalReverse()(T(np.zeros(5))),
    lambda: ops.NonDeterministicInts()(T([5], np.int64)),
])
def test_draws_repeat_under_set_seed(draw):
    ms.set_seed(21)
    first = draw().asnumpy()
    again = draw().asnumpy()
    ms.set_seed(21)
    np.testing.assert_array_equal(draw().asnumpy(), first)
    assert not np.array_equal(first, again)


def test_random_draw_errors():
    with pytest.raises(TypeError, match="random_gamma"):
        ops.random_gamma((2,), T([1], np.int32))
    with pytest.raises(TypeError, match="gamma"):
        ops.gamma([2, 1.5], T([1.0]), T([1.0]))
    with pytest.raises(TypeError, match="random_poisson"):
        ops.random_poisson(T([2.0]), T([1.0]))


def test_cauchy_log_normal_and_nondeterministic_ints_distributions():
    ms.set_seed(31)
    c = ops.Cauchy((40000,), median=2.0, sigma=0.5)().asnumpy()
    assert c.dtype == np.float32
    np.testing.assert_allclose(np.median(c), 2.0, atol=0.02)
    np.testing.assert_allclose(np.percentile(c, 75) - np.percentile(c, 25), 1.0, rtol=0.05)
    logs = np.log(ops.LogNormalReverse(1.0, 0.5)(T(np.zeros(40000))).asnumpy())
    np.testing.assert_allclose([logs.mean(), logs.std()], [1.0, 0.5], rtol=0.02)
    for dtype, bits in ((ms.int32, 32), (ms.int64, 64)):
        ints = ops.NonDeterministicInts(dtype)(T([20000], np.int64)).asnumpy()
        assert ints.shape == (20000,) and ints.dtype == (np.int32 if bits == 32 else np.int64)
        np.testing.assert_allclose(ints.astype(np.float64).mean() / 2.0 ** (bits - 1), 0.0,
                                   atol=0.03)
        assert ints.min() < -2.0 ** (bits - 2) and ints.max() > 2.0 ** (bits - 2)


# ---- the other primitives ------------------------------------------------------------------------------

def _diag_band_reference(x, low, high, align, pad):
    rows, cols = x.shape
    width = min(rows + min(high, 0), cols - max(low, 0))
    out = np.full((high - low + 1, width), pad, x.dtype)
    for r, d in enumerate(range(high, low - 1, -1)):
        diagonal = np.diagonal(x, d)
        right = align.split("_")[0 if d >= 0 else 1] == "RIGHT"
        start = width - diagonal.size if right else 0
        out[r, start:start + diagonal.size] = diagonal
    return out


@pytest.mark.parametrize("align", ["RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT"])
@pytest.mark.parametrize("k", [(-1, 2), (0, 0), (-2, -1)])
def test_matrix_diag_v3_family_round_trips(align, k):
    x = np.arange(1.0, 13.0).reshape(3, 4)
    part = ops.MatrixDiagPartV3(align)(T(x), T(list(k), np.int32), T(9.0)).asnumpy()
    want = _diag_band_reference(x, k[0], k[1], align, 9.0)
    np.testing.assert_array_equal(part, want if k[0] != k[1] else want[0])
    band = np.where(np.logical_and(np.subtract.outer(np.arange(3), np.arange(4)) <= -k[0],
                                   np.subtract.outer(np.arange(3), np.arange(4)) >= -k[1]), x, 0)
    built = ops.MatrixDiagV3(align)(T(part), T(list(k), np.int32), T(3, np.int32),
                                    T(4, np.int32), T(0.0)).asnumpy()
    np.testing.assert_array_equal(built, band)
    replaced = ops.MatrixSetDiagV3(align)(T(np.zeros((2, 3, 4))), T(np.stack([part, part])),
                                          T(list(k), np.int32)).asnumpy()
    np.testing.assert_array_equal(replaced, np.stack([band, band]))


def test_matrix_diag_v3_errors():
    with pytest.raises(ValueError, match="align"):
        ops.MatrixDiagV3("UP_DOWN")
    with pytest.raises(ValueError, match="k"):
        ops.MatrixDiagPartV3()(T(np.ones((3, 3))), T([2, 1], np.int32), T(0.0))
    with pytest.raises(ValueError, match="MatrixSetDiagV3"):
        ops.MatrixSetDiagV3()(T(np.ones((3, 3))), T(np.ones(2)), T(0, np.int32))


def test_tridiagonal_matmul_matches_dense_product():
    rng = np.random.default_rng(8)
    sup, main, sub = (rng.normal(size=(2, 1, 4)) for _ in range(3))
    rhs = rng.normal(size=(2, 4, 3))
    dense = np.stack([np.diag(main[b, 0]) + np.diag(sup[b, 0, :-1], 1) + np.diag(sub[b, 0, 1:], -1)
                      for b in range(2)])
    got = jit_matches_eager(lambda *a: ops.TridiagonalMatMul()(*a), T(sup), T(main), T(sub),
                            T(rhs))
    np.testing.assert_allclose(got, dense @ rhs, rtol=1e-12)
    with pytest.raises(ValueError, match="TridiagonalMatMul"):
        ops.TridiagonalMatMul()(T(sup), T(main), T(sub), T(rhs[:, :3]))


@pytest.mark.parametrize("reverse", [False, True])
def test_nth_element_matches_sort(reverse):
    x = np.random.default_rng(9).normal(size=(3, 5))
    got = ops.NthElement(reverse)(T(x), 1).asnumpy()
    ordered = np.sort(x, -1)[:, ::-1] if reverse else np.sort(x, -1)
    np.testing.assert_array_equal(got, ordered[:, 1])
    with pytest.raises(ValueError, match="NthElement"):
        ops.NthElement()(T(x), 5)


def test_histogram_counts_like_numpy():
    x = np.random.default_rng(10).normal(size=500)
    got = ops.Histogram(bins=7, min=-1.0, max=1.5)(T(x, np.float32)).asnumpy()
    want = np.histogram(x[(x >= -1) & (x <= 1.5)].astype(np.float32), 7, (-1.0, 1.5))[0]
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)
    data_range = ops.Histogram(bins=4)(T([1, 2, 1, 7], np.int32)).asnumpy()
    assert data_range.dtype == np.int32
    np.testing.assert_array_equal(data_range, [3, 0, 0, 1])
    np.testing.assert_array_equal(ops.Histogram(bins=4, min=0.0, max=3.0)(T([1.0, 2, 1])).asnumpy(),
                                  [0, 2, 1, 0])
    with pytest.raises(ValueError, match="Histogram"):
        ops.Histogram(bins=3, min=2.0, max=1.0)(T([1.0]))


def test_scatter_add_with_axis_and_compare_and_bitpack():
    x = np.zeros((2, 3))
    indices = np.array([[0, 2], [1, 1]])
    got = ops.ScatterAddWithAxis(1)(T(x), T(indices, np.int64), T([[1.0, 2.0], [3.0, 4.0]]))
    np.testing.assert_array_equal(got.asnumpy(), [[1, 0, 2], [0, 7, 0]])
    values = np.random.default_rng(11).normal(size=(2, 16))
    packed = ops.CompareAndBitpack()(T(values), T(0.1)).asnumpy()
    assert packed.dtype == np.uint8
    np.testing.assert_array_equal(packed, np.packbits(values > 0.1, axis=-1))
    with pytest.raises(ValueError, match="CompareAndBitpack"):
        ops.CompareAndBitpack()(T(np.ones(5)), T(0.0))
