"""einsum, the N-d gather/scatter family, the sampling functions and the window functions of
pijit.ops (pijit/_ops_nd.py, _ops_sample.py) against NumPy and SciPy references, jitted
against eager as one graph, gradients against central differences, and sample statistics
for the random draws."""
import numpy as np
import pytest
from scipy import special
from scipy.signal import windows

import pijit as ms
from pijit import ops
from mint_testutil import T, grad_matches, jitted_matches, same

R = np.random.default_rng(83)


@pytest.mark.parametrize("equation, shapes", [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bij,bkj->bik", [(2, 3, 4), (2, 5, 4)]),
    ("ijk,jk->i", [(2, 3, 4), (3, 4)]),
    ("ij->ji", [(2, 3)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("iij->j", [(3, 3, 2)]),
    ("ij,kl", [(2, 3), (2, 2)]),
    ("i,i", [(4,), (4,)]),
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
    ("abc,cd,de->abe", [(2, 3, 4), (4, 2), (2, 3)]),
    ("ab,ab,ab->a", [(3, 2), (3, 2), (3, 2)]),
])
def test_einsum(equation, shapes):
    arrays = [R.normal(size=s) for s in shapes]
    same(ops.einsum(equation, *[T(a) for a in arrays]), np.einsum(equation, *arrays),
         rtol=1e-10, atol=1e-12)
    jitted_matches(lambda *xs: ops.einsum(equation, *xs), *[T(a) for a in arrays])
    rest = [T(a) for a in arrays[1:]]
    grad_matches(lambda x: ops.einsum(equation, x, *rest), arrays[0])


def test_einsum_errors():
    with pytest.raises(ValueError, match="ellipses"):
        ops.einsum("...ij->...ji", T(np.zeros((2, 2))))
    with pytest.raises(ValueError, match="sizes"):
        ops.einsum("ij,jk->ik", T(np.zeros((2, 3))), T(np.zeros((4, 2))))
    with pytest.raises(ValueError, match="operands"):
        ops.einsum("ij,jk->ik", T(np.zeros((2, 3))))


def _scatter_reference(x, indices, updates, combine):
    out = x.copy()
    for pos in np.ndindex(*indices.shape[:-1]):
        target = tuple(indices[pos])
        out[target] = combine(out[target], updates[pos])
    return out


@pytest.mark.parametrize("name, combine", [
    ("tensor_scatter_add", np.add), ("tensor_scatter_sub", np.subtract),
    ("tensor_scatter_mul", np.multiply), ("tensor_scatter_div", np.divide),
    ("tensor_scatter_max", np.maximum), ("tensor_scatter_min", np.minimum),
    ("tensor_scatter_update", lambda a, b: b),
])
def test_tensor_scatter_family(name, combine):
    x = R.normal(size=(3, 4, 2))
    indices = np.array([[0, 1], [2, 3], [0, 1], [1, 0]])  # (0, 1) twice
    if name == "tensor_scatter_update":
        indices = indices[[0, 1, 3]]
    updates = R.uniform(0.5, 2.0, size=(len(indices), 2))
    fn = getattr(ops, name)
    same(fn(T(x), T(indices), T(updates)), _scatter_reference(x, indices, updates, combine),
         rtol=1e-12)
    jitted_matches(lambda a, i, u: fn(a, i, u), T(x), T(indices), T(updates))
    if name in ("tensor_scatter_add", "tensor_scatter_sub", "tensor_scatter_mul",
                "tensor_scatter_update"):
        ti, tu = T(indices), T(updates)
        grad_matches(lambda a: fn(a, ti, tu), x)
        tx = T(x)
        grad_matches(lambda u: fn(tx, ti, u), updates)


def test_gather_nd_and_scatter_nd():
    x = R.normal(size=(3, 4, 2))
    indices = np.array([[[0, 1], [2, 3]], [[1, 1], [0, 0]]])
    same(ops.gather_nd(T(x), T(indices)), x[indices[..., 0], indices[..., 1]])
    same(ops.gather_nd(T(x), T(indices[..., :1])), x[indices[..., 0]])
    ti = T(indices)
    grad_matches(lambda a: ops.gather_nd(a, ti), x)
    updates = R.normal(size=(2, 2, 2))
    want = np.zeros((3, 4, 2))
    np.add.at(want, (indices[..., 0], indices[..., 1]), updates)
    same(ops.scatter_nd(T(indices), T(updates), (3, 4, 2)), want)
    jitted_matches(lambda a, i: ops.gather_nd(a, i) * 2, T(x), T(indices))
    with pytest.raises(ValueError, match="updates must have shape"):
        ops.tensor_scatter_add(T(x), T(indices), T(updates[:1]))
    with pytest.raises(TypeError, match="integer"):
        ops.gather_nd(T(x), T(indices.astype(np.float32)))


# ---- sampling ----------------------------------------------------------------------------------

def test_categorical_and_multinomial_frequencies():
    ms.set_seed(4)
    probs = np.array([[0.1, 0.2, 0.7], [0.5, 0.0, 0.5]])
    draws = ops.random_categorical(T(np.log(probs + 1e-30)), 6000).asnumpy()
    assert draws.shape == (2, 6000) and draws.dtype == np.int64
    for row, p in zip(draws, probs):
        np.testing.assert_allclose(np.bincount(row, minlength=3) / 6000, p, atol=0.025)
    draws = ops.multinomial(T(probs * 3), 6000).asnumpy()
    for row, p in zip(draws, probs):
        np.testing.assert_allclose(np.bincount(row, minlength=3) / 6000, p, atol=0.025)
    distinct = ops.multinomial(T(np.array([1.0, 1.0, 0.0, 1.0])), 3, replacement=False)
    assert sorted(distinct.asnumpy().tolist()) == [0, 1, 3]
    with pytest.raises(ValueError, match="without replacement"):
        ops.multinomial(T(np.ones(2)), 3, replacement=False)


def test_permutations_and_laplace():
    ms.set_seed(8)
    x = np.arange(10.0)
    shuffled = ops.shuffle(T(x)).asnumpy()
    assert sorted(shuffled.tolist()) == x.tolist() and shuffled.tolist() != x.tolist()
    assert sorted(ops.randperm(7).asnumpy().tolist()) == list(range(7))
    draws = ops.standard_laplace((20000,)).asnumpy()
    assert abs(np.median(draws)) < 0.05 and abs(np.abs(draws).mean() - 1.0) < 0.05
    shifted = ops.laplace((20000,), 3.0, 2.0).asnumpy()
    assert abs(np.median(shifted) - 3.0) < 0.1 and abs(np.abs(shifted - 3).mean() - 2) < 0.1
    x = R.normal(size=(2000,))
    out = ops.rrelu(T(x)).asnumpy()
    slopes = out[x < 0] / x[x < 0]
    assert np.all(out[x >= 0] == x[x >= 0])
    assert slopes.min() >= 1 / 8 - 1e-12 and slopes.max() <= 1 / 3 + 1e-12


# ---- windows -----------------------------------------------------------------------------------

@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("n", [1, 2, 7, 16])
def test_windows(periodic, n):
    sym = not periodic
    same(ops.hann_window(n, periodic, dtype=ms.float64), windows.hann(n, sym=sym), atol=1e-12)
    same(ops.hamming_window(n, periodic, dtype=ms.float64), windows.hamming(n, sym=sym),
         atol=1e-12)
    same(ops.blackman_window(n, periodic, dtype=ms.float64), windows.blackman(n, sym=sym),
         atol=1e-12)
    same(ops.bartlett_window(n, periodic, dtype=ms.float64), windows.bartlett(n, sym=sym),
         atol=1e-12)
    same(ops.kaiser_window(n, periodic, 8.0, dtype=ms.float64), windows.kaiser(n, 8.0, sym=sym),
         rtol=1e-10, atol=1e-12)
    assert ops.hann_window(n).dtype == ms.float32


def test_i0():
    x = np.linspace(-25.0, 25.0, 21)
    same(ops.i0(T(x)), special.i0(x), rtol=1e-12)
    grad_matches(ops.i0, np.array([-2.0, 0.5, 3.0]))  # i0' = i1
    jitted_matches(ops.i0, T(x))
