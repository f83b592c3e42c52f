"""stop_gradient, gumbel_softmax, the Bessel functions, bit shifts, approximate_equal and the
index functions added to pijit/_ops_nd.py (tensor_scatter_elements, max_unpool, space/batch
moves, matrix diagonals) against NumPy and SciPy references, jitted against eager as one
graph, and gradients against central differences."""
import numpy as np
import pytest
from scipy import special

import pijit as ms
from pijit import ops
from mint_testutil import T, grad_matches, jitted_matches, same

R = np.random.default_rng(113)


def test_stop_gradient_cuts_the_gradient_eagerly_and_captured():
    x = np.array([1.0, -2.0, 3.0])

    def loss(t):
        return (ops.stop_gradient(t) * t + ops.stop_gradient(t * t)).sum()

    same(ops.stop_gradient(T(x)), x)
    same(ms.grad(loss)(T(x)), x)  # only the second factor's t carries a gradient

    def jitted_grad(t):
        return ms.grad(loss)(t)

    jitted_matches(jitted_grad, T(x))
    jitted_matches(lambda t: ops.stop_gradient(t) * 2 + t, T(x))
    same(ms.grad(lambda t: ops.stop_gradient(t).sum())(T(x)), np.zeros(3))


def test_gumbel_softmax():
    logits = R.normal(size=(3, 5))
    ms.set_seed(12)
    soft = ops.gumbel_softmax(T(logits), tau=0.5).asnumpy()
    np.testing.assert_allclose(soft.sum(-1), 1.0, rtol=1e-12)
    ms.set_seed(12)
    hard = ops.gumbel_softmax(T(logits), tau=0.5, hard=True).asnumpy()
    np.testing.assert_allclose(hard, np.eye(5)[soft.argmax(-1)], atol=1e-12)
    weights = T(R.normal(size=(3, 5)))

    def soft_loss(t):
        ms.set_seed(12)
        return (ops.gumbel_softmax(t, tau=0.5) * weights).sum()

    def hard_loss(t):
        ms.set_seed(12)
        return (ops.gumbel_softmax(t, tau=0.5, hard=True) * weights).sum()

    # straight-through: the hard sample's gradient is the soft sample's
    same(ms.grad(hard_loss)(T(logits)), ms.grad(soft_loss)(T(logits)).asnumpy(), rtol=1e-10)
    ms.set_seed(5)
    draws = ops.gumbel_softmax(T(np.log(np.tile([[0.2, 0.8]], (4000, 1)))), hard=True).asnumpy()
    assert abs(draws[:, 1].mean() - 0.8) < 0.03
    with pytest.raises(ValueError, match="tau"):
        ops.gumbel_softmax(T(logits), tau=0)


@pytest.mark.parametrize("name, reference", [
    ("bessel_i0", special.i0), ("bessel_i0e", special.i0e), ("bessel_i1", special.i1),
    ("bessel_i1e", special.i1e)])
def test_bessel_functions(name, reference):
    x = np.linspace(-20.0, 20.0, 17)
    fn = getattr(ops, name)
    same(fn(T(x)), reference(x), rtol=1e-12, atol=1e-300)
    same(fn(T(np.array([0, 2], np.int32))), reference(np.array([0.0, 2.0])).astype(np.float32),
         rtol=1e-6)
    jitted_matches(fn, T(x))
    grad_matches(fn, np.array([-3.0, -0.5, 0.7, 4.0]), rtol=1e-5)


@pytest.mark.parametrize("name, reference", [
    ("lgamma", special.gammaln), ("digamma", special.digamma)])
def test_gamma_family(name, reference):
    x = np.concatenate([np.linspace(-4.7, -0.1, 9), np.linspace(0.05, 40.0, 15)])
    fn = getattr(ops, name)
    got = fn(T(x)).asnumpy()
    np.testing.assert_allclose(got, reference(x), rtol=1e-13,
                               atol=1e-13 * np.abs(reference(x)).max())
    same(fn(T(np.array([1, 3], np.int32))), reference(np.array([1.0, 3.0])).astype(np.float32),
         rtol=1e-6, atol=1e-7)
    jitted_matches(fn, T(x))
    same(getattr(ops, name.capitalize())()(T(x)), got)
    grad_matches(fn, np.array([-2.5, 0.3, 1.7, 6.0]), rtol=1e-5)
    if name == "lgamma":  # its derivative is digamma
        same(ms.grad(lambda t: ops.lgamma(t).sum())(T(x)), special.digamma(x), rtol=1e-9)


def test_mvlgamma():
    x = np.array([1.6, 2.5, 7.0])
    same(ops.mvlgamma(T(x), 3), special.multigammaln(x, 3), rtol=1e-13)
    same(ops.Mvlgamma(p=2)(T(x)), special.multigammaln(x, 2), rtol=1e-13)
    with pytest.raises(ValueError, match="p must be"):
        ops.mvlgamma(T(x), 0)


def test_shifts_and_approximate_equal():
    a = np.array([5, -7, 12, -1], np.int32)
    s = np.array([0, 1, 2, 3], np.int32)
    same(ops.bitwise_left_shift(T(a), T(s)), np.left_shift(a, s))
    same(ops.bitwise_right_shift(T(a), T(s)), np.right_shift(a, s))
    same(ops.bitwise_right_shift(T(a), 1), np.right_shift(a, 1))
    jitted_matches(lambda x, y: ops.bitwise_left_shift(x, y), T(a), T(s))
    with pytest.raises(TypeError, match="integer"):
        ops.bitwise_left_shift(T(a.astype(np.float32)), T(s))
    x, y = R.normal(size=5), R.normal(size=5)
    same(ops.approximate_equal(T(x), T(y), 0.5), np.abs(x - y) < 0.5)


@pytest.mark.parametrize("reduction", ["none", "add"])
def test_tensor_scatter_elements(reduction):
    x = R.normal(size=(3, 4))
    indices = np.array([[2, 0, 1, 2], [0, 1, 2, 0]]) if reduction == "add" else \
        np.array([[2, 0, 1, 2], [0, 1, 0, 1]])
    updates = R.normal(size=(2, 4))
    want = x.copy()
    for i in range(2):
        for j in range(4):
            if reduction == "add":
                want[indices[i, j], j] += updates[i, j]
            else:
                want[indices[i, j], j] = updates[i, j]
    same(ops.tensor_scatter_elements(T(x), T(indices), T(updates), 0, reduction), want,
         rtol=1e-12)
    ti, tu = T(indices), T(updates)
    grad_matches(lambda t: ops.tensor_scatter_elements(t, ti, tu, 0, reduction), x)
    jitted_matches(lambda t, i, u: ops.tensor_scatter_elements(t, i, u, 0, reduction), T(x),
                   T(indices), T(updates))


def test_max_unpool_inverts_max_pool():
    x = R.normal(size=(2, 3, 4, 6))
    values, indices = ms.mint.nn.functional.max_pool2d(T(x), 2, return_indices=True)
    out = ops.max_unpool2d(values, indices, 2).asnumpy()
    want = np.zeros_like(x)
    flat = want.reshape(2, 3, -1)
    np.put_along_axis(flat, indices.asnumpy().reshape(2, 3, -1), values.asnumpy()
                      .reshape(2, 3, -1), -1)
    same(ops.max_unpool2d(values, indices, 2), want)
    assert out.shape == x.shape
    ti = indices
    grad_matches(lambda v: ops.max_unpool2d(v, ti, 2), values.asnumpy())
    jitted_matches(lambda v, i: ops.max_unpool2d(v, i, 2), values, indices)
    sig = R.normal(size=(1, 2, 6))
    idx = np.array([[[1, 2, 5], [0, 3, 4]]])
    vals = sig[:, :, :3]
    want1 = np.zeros((1, 2, 6))
    np.put_along_axis(want1, idx, vals, -1)
    same(ops.max_unpool1d(T(vals), T(idx), 2), want1)


def test_space_to_batch_and_back():
    x = R.normal(size=(2, 3, 3, 4))
    out = ops.space_to_batch_nd(T(x), (2, 2), ((1, 0), (0, 0)))
    padded = np.pad(x, ((0, 0), (0, 0), (1, 0), (0, 0)))
    want = np.stack([padded[n, :, i::2, j::2] for i in range(2) for j in range(2)
                     for n in range(2)])
    same(out, want)
    same(ops.batch_to_space_nd(out, (2, 2), ((1, 0), (0, 0))), x)
    grad_matches(lambda t: ops.space_to_batch_nd(t, 2, ((1, 0), (0, 0))), x[:1, :1])
    jitted_matches(lambda t: ops.batch_to_space_nd(ops.space_to_batch_nd(
        t, (2, 2), ((1, 0), (0, 0))), (2, 2), ((1, 0), (0, 0))), T(x))
    with pytest.raises(ValueError, match="multiple"):
        ops.space_to_batch_nd(T(x), 2, ((0, 0), (0, 0)))


def test_matrix_diagonals():
    v = R.normal(size=(2, 3))
    same(ops.matrix_diag(T(v)), np.stack([np.diag(r) for r in v]))
    same(ops.matrix_diag(T(v), num_cols=5, padding_value=-1.0),
         np.stack([np.where(np.eye(3, 5) > 0, np.pad(np.diag(r), ((0, 0), (0, 2))), -1.0)
                   for r in v]))
    m = R.normal(size=(2, 3, 4))
    same(ops.matrix_diag_part(T(m)), np.stack([np.diag(r) for r in m]))
    d = R.normal(size=(2, 3))
    want = m.copy()
    for b in range(2):
        want[b][np.arange(3), np.arange(3)] = d[b]
    same(ops.matrix_set_diag(T(m), T(d)), want)
    td = T(d)
    grad_matches(lambda t: ops.matrix_set_diag(t, td), m)
    grad_matches(ops.matrix_diag_part, m)
    jitted_matches(lambda t, e: ops.matrix_set_diag(t, e) + ops.matrix_diag(e)[..., :4].sum(),
                   T(m), T(d))
    with pytest.raises(ValueError, match="k=0"):
        ops.matrix_diag_part(T(m), k=1)
