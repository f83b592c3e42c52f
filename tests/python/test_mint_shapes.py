"""pijit.mint's shape, indexing, ordering and linear-algebra functions against NumPy (values,
index dtypes), jitted against eager as one graph, gradients against central differences,
and clear errors for bad arguments."""
import numpy as np
import pytest

from pijit import mint
from mint_testutil import T, grad_matches, jitted_matches, same


@pytest.fixture
def rng():
    return np.random.default_rng(23)


def test_cat_stack_split_narrow(rng):
    a, b = rng.normal(size=(2, 3)), rng.normal(size=(2, 2))
    same(mint.cat((T(a), T(b)), dim=1), np.concatenate([a, b], 1))
    same(mint.stack([T(a), T(a * 2)], dim=-1), np.stack([a, a * 2], -1))
    same(mint.split(T(a), 2, dim=1), np.split(a, [2], 1))
    same(mint.split(T(a), [1, 2], 1), np.split(a, [1], 1))
    same(mint.narrow(T(a), 1, 1, 2), a[:, 1:3])
    same(mint.narrow(T(a), -1, -2, 1), a[:, 1:2])
    jitted_matches(lambda x, y: mint.narrow(mint.cat((x, y), 1), 1, 2, 3), T(a), T(b))
    grad_matches(lambda x: mint.narrow(mint.cat((x, x), 0), 0, 1, 2), a)
    with pytest.raises(ValueError, match="length"):
        mint.narrow(T(a), 1, 2, 2)
    with pytest.raises(TypeError, match="tensors"):
        mint.cat(T(a))


def test_flip_permute_tile_broadcast_repeat_interleave(rng):
    a = rng.normal(size=(2, 3, 4))
    same(mint.flip(T(a), (0, 2)), a[::-1, :, ::-1])
    same(mint.permute(T(a), (2, 0, 1)), a.transpose(2, 0, 1))
    same(mint.tile(T(a), (2, 1, 1)), np.tile(a, (2, 1, 1)))
    same(mint.tile(T(a[0]), (2, 1, 2)), np.tile(a[0], (2, 1, 2)))
    same(mint.broadcast_to(T(a[:, :1]), (2, 5, 4)), np.broadcast_to(a[:, :1], (2, 5, 4)))
    same(mint.repeat_interleave(T(a), 2, dim=1), np.repeat(a, 2, 1))
    same(mint.repeat_interleave(T(a[0, 0]), T(np.array([1, 0, 2, 1]))),
         np.repeat(a[0, 0], [1, 0, 2, 1]))
    same(mint.repeat_interleave(T(a[0]), 2), np.repeat(a[0], 2))
    jitted_matches(lambda x: mint.flip(mint.permute(x, (1, 0, 2)), 0) * 2, T(a))
    grad_matches(lambda x: mint.repeat_interleave(mint.flip(x, 1), 2, 0), a[0])
    with pytest.raises(ValueError, match="dims"):
        mint.permute(T(a), (0, 1))
    with pytest.raises(ValueError, match="repeats an axis"):
        mint.flip(T(a), (1, -2))


def _gather_reference(a, dim, index):
    out = np.empty(index.shape, a.dtype)
    for pos in np.ndindex(*index.shape):
        src = list(pos)
        src[dim] = index[pos]
        out[pos] = a[tuple(src)]
    return out


def _scatter_add_reference(a, dim, index, src):
    out = a.copy()
    for pos in np.ndindex(*index.shape):
        dst = list(pos)
        dst[dim] = index[pos]
        out[tuple(dst)] += src[pos]
    return out


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather_and_scatter_add(rng, dim):
    a = rng.normal(size=(3, 4))
    index = rng.integers(0, a.shape[dim], size=(2, 3))  # smaller than a on the other axis
    same(mint.gather(T(a), dim, T(index)), _gather_reference(a, dim % 2, index))
    src = rng.normal(size=(3, 4))
    same(mint.scatter_add(T(a), dim, T(index), T(src)),
         _scatter_add_reference(a, dim % 2, index, src), rtol=1e-12)
    grad_matches(lambda x: mint.gather(x, dim, T(index)), a)
    grad_matches(lambda x: mint.scatter_add(x, dim, T(index), x * 2.0), a)
    jitted_matches(lambda x, i: mint.scatter_add(x, dim, i, x) + mint.gather(x, dim, i).sum(),
                   T(a), T(index))


def test_index_select_bmm_matmul(rng):
    a = rng.normal(size=(3, 4))
    same(mint.index_select(T(a), 1, T(np.array([3, 0, 3]))), a[:, [3, 0, 3]])
    x, y = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 4, 5))
    same(mint.bmm(T(x), T(y)), x @ y, rtol=1e-12)
    same(mint.matmul(T(x), T(y[0])), x @ y[0], rtol=1e-12)
    with pytest.raises(ValueError, match="3-D"):
        mint.bmm(T(x[0]), T(y[0]))
    with pytest.raises(TypeError, match="index"):
        mint.index_select(T(a), 0, T(np.array([0.0])))
    with pytest.raises(TypeError, match="index"):
        mint.gather(T(a), 0, T(np.zeros((3, 4))))


def _stable_order(row, descending):
    """Positions of a 1-D row in sorted order by Python's stable sort: NaN last ascending,
    first descending (as torch orders them)."""
    if descending:
        return np.array(sorted(range(len(row)), key=lambda i: (not np.isnan(row[i]),
                                                                 -np.nan_to_num(row[i]))))
    return np.array(sorted(range(len(row)), key=lambda i: (bool(np.isnan(row[i])),
                                                           np.nan_to_num(row[i]))))


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dim", [0, -1])
def test_sort_is_stable_with_nan_last(rng, descending, dim):
    a = rng.integers(0, 4, size=(5, 6)).astype(np.float64)  # many ties
    a[2, 3] = np.nan
    values, indices = mint.sort(T(a), dim=dim, descending=descending)
    order = np.apply_along_axis(_stable_order, dim, a, descending)
    same(indices, order)
    same(values, np.take_along_axis(a, order, dim))
    jitted_matches(lambda x: mint.sort(x, dim, descending), T(a))
    grad_matches(lambda x: mint.sort(x, dim, descending)[0], rng.normal(size=(3, 4)))


def test_topk(rng):
    a = rng.normal(size=(4, 7))
    values, indices = mint.topk(T(a), 3)
    order = np.argsort(-a, axis=1, kind="stable")[:, :3]
    same((values, indices), (np.take_along_axis(a, order, 1), order))
    values, indices = mint.topk(T(a), 2, dim=0, largest=False)
    order = np.argsort(a, axis=0, kind="stable")[:2]
    same((values, indices), (np.take_along_axis(a, order, 0), order))
    grad_matches(lambda x: mint.topk(x, 2)[0], a)
    jitted_matches(lambda x: mint.topk(x, 2, 0), T(a))
    with pytest.raises(ValueError, match="k"):
        mint.topk(T(a), 8)


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted(rng, right):
    seq = np.array([0.0, 1.0, 1.0, 2.5, 4.0])
    values = np.array([[-1.0, 1.0, 2.0], [4.0, 5.0, 1.0]])
    side = "right" if right else "left"
    same(mint.searchsorted(T(seq), T(values), right=right), np.searchsorted(seq, values, side))
    same(mint.searchsorted(T(seq), T(values), side=side, out_int32=True),
         np.searchsorted(seq, values, side).astype(np.int32))
    rows = np.sort(rng.normal(size=(2, 6)), axis=1)
    want = np.stack([np.searchsorted(r, v, side) for r, v in zip(rows, values)])
    same(mint.searchsorted(T(rows), T(values), right=right), want)
    shuffled = rng.permutation(seq)
    same(mint.searchsorted(T(shuffled), T(values), right=right,
                           sorter=T(np.argsort(shuffled, kind="stable"))),
         np.searchsorted(seq, values, side))
    jitted_matches(lambda s, v: mint.searchsorted(s, v, right=right), T(seq), T(values))
    with pytest.raises(ValueError, match="side"):
        mint.searchsorted(T(seq), T(values), side="middle")


def test_inverse_values_batches_and_gradient(rng):
    a = rng.normal(size=(3, 4, 4)) + 4 * np.eye(4)
    same(mint.linalg.inv(T(a)), np.linalg.inv(a), rtol=1e-10, atol=1e-12)
    # A zero leading entry needs the row swap.
    p = np.array([[0.0, 2.0, 1.0], [1.0, 0.0, 3.0], [4.0, 1.0, 0.0]])
    same(mint.inverse(T(p)), np.linalg.inv(p), rtol=1e-10, atol=1e-12)
    grad_matches(mint.linalg.inv, p, rtol=1e-5)
    jitted_matches(mint.inverse, T(a))
    with pytest.raises(ValueError, match="square"):
        mint.linalg.inv(T(a[:, :3]))
    with pytest.raises(TypeError, match="float"):
        mint.linalg.inv(T(np.eye(2, dtype=np.int32)))
