"""pijit.numpy (mindspore.numpy): shapes, selection and indexing, comparison and logic,
products and norms, statistics and polynomials against NumPy, eager against jitted,
gradients against central differences, and clear errors for bad arguments."""
import numpy as np
import pytest

import pijit as ms
import pijit.numpy as mnp
from test_numpy_namespace import T, grad_matches, jitted_matches, same

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

rng = np.random.default_rng(2)
A = rng.standard_normal((2, 3, 4))
M = rng.standard_normal((3, 4))


# ---- shapes --------------------------------------------------------------------------------------

def test_reshape_transpose_and_axes():
    same(mnp.reshape(T(A), (4, -1)), A.reshape(4, -1))
    same(mnp.reshape(T(A), 24), A.reshape(24))
    same(mnp.ravel(T(A)), A.ravel())
    same(mnp.transpose(T(A)), A.transpose())
    same(mnp.transpose(T(A), (1, -1, 0)), A.transpose(1, -1, 0))
    same(mnp.swapaxes(T(A), 0, -1), np.swapaxes(A, 0, -1))
    for src, dst in ((0, -1), ((0, 1), (2, 0)), (-1, 0)):
        same(mnp.moveaxis(T(A), src, dst), np.moveaxis(A, src, dst))
    for axis, start in ((2, 0), (0, 3), (1, 1), (-1, 1)):
        same(mnp.rollaxis(T(A), axis, start), np.rollaxis(A, axis, start))
    same(mnp.expand_dims(T(A), (0, -1)), np.expand_dims(A, (0, -1)))
    same(mnp.expand_dims(T(A), 1), np.expand_dims(A, 1))
    b = A.reshape(1, 2, 1, 12)
    same(mnp.squeeze(T(b)), np.squeeze(b))
    same(mnp.squeeze(T(b), (0, 2)), np.squeeze(b, (0, 2)))
    assert mnp.size(T(A)) == 24 and mnp.size(T(A), -1) == 4
    assert mnp.array_str(T([1, 2])) == np.array2string(np.array([1, 2]))


def test_joining():
    x, y = M, rng.standard_normal((2, 4))
    same(mnp.concatenate((T(x), T(y))), np.concatenate((x, y)))
    same(mnp.concatenate([T(x), T(x)], axis=1), np.concatenate([x, x], axis=1))
    same(mnp.concatenate([T(x), T(y)], axis=None), np.concatenate([x, y], axis=None))
    same(mnp.concatenate([T([1, 2], np.int32), T([0.5])]), np.array([1.0, 2.0, 0.5]))
    for axis in (0, 1, -1):
        same(mnp.stack([T(x), T(x * 2)], axis), np.stack([x, x * 2], axis))
    v = np.array([1.0, 2.0, 3.0])
    for name in ("hstack", "vstack", "dstack", "column_stack"):
        same(getattr(mnp, name)([T(v), T(v)]), getattr(np, name)([v, v]))
        same(getattr(mnp, name)((T(x), T(x))), getattr(np, name)((x, x)))
    same(mnp.append(T(x), T(y), axis=0), np.append(x, y, axis=0))
    same(mnp.append(T(x), T(v)), np.append(x, v))
    for name in ("atleast_1d", "atleast_2d", "atleast_3d"):
        for a in (np.array(5.0), v, x, A):
            same(getattr(mnp, name)(T(a)), getattr(np, name)(a))
        same(getattr(mnp, name)(T(v), T(x)), list(getattr(np, name)(v, x)))


@pytest.mark.parametrize("sections", [2, [1, 3], [-2], [0, 5, 2]])
def test_splitting(sections):
    x = rng.standard_normal((4, 6, 4))
    same(mnp.array_split(T(x), sections, axis=1), np.array_split(x, sections, axis=1))
    if sections != [0, 5, 2]:
        for name, axis in (("hsplit", 1), ("vsplit", 0), ("dsplit", 2)):
            same(getattr(mnp, name)(T(x), sections), getattr(np, name)(x, sections))
        same(mnp.split(T(x), sections, axis=-1), np.split(x, sections, axis=-1))
    same(mnp.array_split(T(np.arange(7)), 3), np.array_split(np.arange(7).astype(np.int64), 3))


def test_tile_repeat_flip_roll_rot90():
    x = np.arange(6).reshape(2, 3).astype(np.int32)
    for reps in (2, (2, 1), (1, 2, 2)):
        same(mnp.tile(T(x), reps), np.tile(x, reps))
    for repeats, axis in ((2, None), (3, 0), ([1, 0, 2], 1), (0, 1), ([2], 0)):
        same(mnp.repeat(T(x), repeats, axis), np.repeat(x, repeats, axis))
    for axis in (None, 0, 1, (0, 1)):
        same(mnp.flip(T(x), axis), np.flip(x, axis))
    same(mnp.fliplr(T(x)), np.fliplr(x))
    same(mnp.flipud(T(x)), np.flipud(x))
    for shift, axis in ((2, None), (-1, 0), (4, 1), ((1, 2), (0, 1)), ((1, 1), (1, 1))):
        same(mnp.roll(T(x), shift, axis), np.roll(x, shift, axis))
    for k in (-1, 0, 1, 2, 3, 5):
        same(mnp.rot90(T(A), k), np.rot90(A, k))
        same(mnp.rot90(T(A), k, (2, 0)), np.rot90(A, k, (2, 0)))


def test_broadcasting():
    v = np.array([1.0, 2.0, 3.0])
    same(mnp.broadcast_to(T(v), (2, 3)), np.broadcast_to(v, (2, 3)))
    same(mnp.broadcast_to(2.0, 3), np.broadcast_to(np.float32(2.0), 3))
    same(mnp.broadcast_arrays(T(v), T(np.ones((2, 1)))),
         np.broadcast_arrays(v, np.ones((2, 1))))


# ---- selection and indexing ----------------------------------------------------------------------

def test_where_select_choose_piecewise():
    x = np.linspace(-2.0, 2.0, 9)
    same(mnp.where(T(x > 0), T(x), 0.0), np.where(x > 0, x, 0.0))
    same(mnp.where(T(x > 0), 1, T(x)), np.where(x > 0, 1, x))
    same(mnp.where([True, False], 1, 2), np.array([1, 2], np.int32))
    conds, choices = [x < -1, x > 1], [x ** 2, -x]
    same(mnp.select([T(c) for c in conds], [T(c) for c in choices], 7.0),
         np.select(conds, choices, 7.0))
    idx = np.array([[0, 2, 1], [1, 0, 2]])
    options = [np.arange(3), np.full(3, 10), np.array([[20], [30]])]
    same(mnp.choose(T(idx), [T(o) for o in options]), np.choose(idx, options))
    same(mnp.choose(T(idx + 2), [T(o) for o in options], mode="wrap"),
         np.choose(idx + 2, options, mode="wrap"))
    same(mnp.choose(T(idx + 2), [T(o) for o in options]), np.choose(idx + 2, options,
                                                                     mode="clip"))
    same(mnp.piecewise(T(x), [T(x < 0), T(x >= 0)], [lambda t: -t, lambda t: t * 2]),
         np.piecewise(x, [x < 0, x >= 0], [lambda t: -t, lambda t: t * 2]))
    same(mnp.piecewise(T(x), [T(x < -1), T(x > 1)], [0.5, lambda t: t, -1.0]),
         np.piecewise(x, [x < -1, x > 1], [0.5, lambda t: t, -1.0]))


def test_take_and_take_along_axis():
    idx = np.array([[0, 3], [5, -1]])
    same(mnp.take(T(A), T(idx)), np.take(A, idx, mode="clip"))
    same(mnp.take(T(A), [0, 2, 5], axis=-1, mode="wrap"), np.take(A, [0, 2, 5], -1, mode="wrap"))
    same(mnp.take(T(A), [2, 0], axis=1, mode="raise"), np.take(A, [2, 0], axis=1))
    order = np.argsort(A, axis=1)
    same(mnp.take_along_axis(T(A), T(order), 1), np.take_along_axis(A, order, 1))
    top = np.argmax(A, axis=-1)[..., None]
    same(mnp.take_along_axis(T(A), T(top), -1), np.take_along_axis(A, top, -1))
    same(mnp.take_along_axis(T(A), T(np.array([[[0]], [[1]]])), 1),
         np.take_along_axis(A, np.array([[[0]], [[1]]]), 1))
    same(mnp.take_along_axis(T(A[0, 0]), T([3, -1, 0]), None),
         np.take_along_axis(A[0, 0], np.array([3, -1, 0]), None))


def test_index_conversions():
    flat = np.array([0, 5, 11, 23, -1])
    for order in ("C", "F"):
        same(mnp.unravel_index(T(flat), (2, 3, 4), order), np.unravel_index(flat % 24, (2, 3, 4),
                                                                            order))
        coords = np.unravel_index(flat % 24, (2, 3, 4), order)
        same(mnp.ravel_multi_index([T(c) for c in coords], (2, 3, 4), order=order),
             np.ravel_multi_index(coords, (2, 3, 4), order=order))
    same(mnp.ravel_multi_index([T([3, -1]), T([1, 7])], (3, 4), mode="wrap"),
         np.ravel_multi_index([[3, -1], [1, 7]], (3, 4), mode="wrap"))
    same(mnp.ravel_multi_index([T([3, -1]), T([1, 7])], (3, 4)),
         np.ravel_multi_index([[3, -1], [1, 7]], (3, 4), mode="clip"))


def test_apply_along_and_over_axes():
    same(mnp.apply_along_axis(lambda v: v * 2 + v[0], 1, T(A)),
         np.apply_along_axis(lambda v: v * 2 + v[0], 1, A))
    same(mnp.apply_along_axis(lambda v: mnp.sum(v), -1, T(A)),
         np.apply_along_axis(np.sum, -1, A))
    same(mnp.apply_along_axis(lambda v: mnp.outer(v, v), 0, T(M)),
         np.apply_along_axis(lambda v: np.outer(v, v), 0, M))
    same(mnp.apply_over_axes(mnp.sum, T(A), [0, 2]), np.apply_over_axes(np.sum, A, [0, 2]))
    same(mnp.apply_over_axes(lambda a, ax: mnp.amax(a, ax, keepdims=True), T(A), 1),
         np.apply_over_axes(lambda a, ax: np.amax(a, ax, keepdims=True), A, 1))


@pytest.mark.parametrize("mode", ["constant", "edge", "wrap", "reflect", "symmetric", "maximum",
                                  "minimum", "mean", "linear_ramp", "empty"])
def test_pad(mode):
    x = np.arange(1.0, 13.0).reshape(3, 4) ** 1.5
    for widths in ((1, 2), ((2, 1), (0, 3)), ((5, 4), (7, 6)), 2):
        same(mnp.pad(T(x), widths, mode), np.pad(x, widths, mode) if mode != "empty" else
             np.pad(x, widths, "constant"), rtol=1e-12)
    ints = np.arange(12).reshape(3, 4).astype(np.int32)
    if mode != "empty":
        same(mnp.pad(T(ints), ((1, 2), (2, 1)), mode), np.pad(ints, ((1, 2), (2, 1)), mode))


def test_pad_options():
    x = np.arange(1.0, 7.0).reshape(2, 3)
    same(mnp.pad(T(x), 2, constant_values=((1, 2), (3, 4))),
         np.pad(x, 2, constant_values=((1, 2), (3, 4))))
    same(mnp.pad(T(x), 2, "linear_ramp", end_values=(-1, 5)),
         np.pad(x, 2, "linear_ramp", end_values=(-1, 5)))
    same(mnp.pad(T(x), 3, "mean", stat_length=2), np.pad(x, 3, "mean", stat_length=2))
    same(mnp.pad(T(x), (4, 5), "reflect", reflect_type="odd"),
         np.pad(x, (4, 5), "reflect", reflect_type="odd"))
    same(mnp.pad(T(x), (4, 5), "symmetric", reflect_type="odd"),
         np.pad(x, (4, 5), "symmetric", reflect_type="odd"))


# ---- comparison and logic ------------------------------------------------------------------------

def test_comparisons_and_logic():
    x = np.array([[1.0, np.nan, 3.0], [-np.inf, 0.0, np.inf]])
    y = np.array([1.0, 2.0, np.inf])
    for name in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
                 "logical_and", "logical_or", "logical_xor"):
        same(getattr(mnp, name)(T(x), T(y)), getattr(np, name)(x, y))
        same(getattr(mnp, name)(T(x), 1), getattr(np, name)(x, 1))
    same(mnp.less(T([1, 2, 3], np.int32), 2.5), np.array([True, True, False]))
    same(mnp.logical_not(T(x)), np.logical_not(x))
    for name in ("isnan", "isinf", "isposinf", "isneginf", "isfinite", "signbit"):
        same(getattr(mnp, name)(T(x)), getattr(np, name)(x))
        same(getattr(mnp, name)(T([1, -2], np.int32)), getattr(np, name)(np.array([1, -2])))
    for name in ("all", "any", "sometrue"):
        ref = np.any if name == "sometrue" else getattr(np, name)
        for axis in (None, 0, 1, (0, 1)):
            same(getattr(mnp, name)(T(x > 0), axis), ref(x > 0, axis))
        same(getattr(mnp, name)(T(M), 1, keepdims=True), ref(M, 1, keepdims=True))


def test_closeness_and_equality():
    x = np.array([1.0, 1.0 + 1e-9, np.nan, np.inf, -np.inf, 1e-9])
    y = np.array([1.0, 1.0, np.nan, np.inf, np.inf, 0.0])
    same(mnp.isclose(T(x), T(y)), np.isclose(x, y))
    same(mnp.isclose(T(x), T(y), equal_nan=True), np.isclose(x, y, equal_nan=True))
    same(mnp.isclose(T(x), T(y), rtol=0, atol=1e-10), np.isclose(x, y, rtol=0, atol=1e-10))
    same(mnp.isclose(T([1, 5], np.int32), T([2, 5], np.int32), atol=1), np.array([True, True]))
    same(mnp.allclose(T(x[:2]), T(y[:2])), np.array(np.allclose(x[:2], y[:2])))
    same(mnp.array_equal(T(M), T(M.copy())), np.array(True))
    same(mnp.array_equal(T(M), T(M[:2])), np.array(False))
    same(mnp.array_equal(T(x), T(x), equal_nan=True), np.array(True))
    same(mnp.array_equiv(T(M[0]), T(np.stack([M[0]] * 3))), np.array(True))
    same(mnp.array_equiv(T(M[0]), T(M[:2, :3])), np.array(False))
    assert mnp.isscalar(3.0) and mnp.isscalar(np.int32(1)) and not mnp.isscalar(T(3.0))
    assert not mnp.isscalar([1])


def test_membership():
    a = np.array([[1, 5, 3], [7, 2, 5]])
    test = np.array([5, 2, 9])
    same(mnp.in1d(T(a), T(test)), np.isin(a.ravel(), test))
    same(mnp.isin(T(a), T(test)), np.isin(a, test))
    same(mnp.isin(T(a), [5], invert=True), np.isin(a, [5], invert=True))
    same(mnp.isin(T(a), T(np.zeros(0, np.int32))), np.isin(a, []))


# ---- products and norms --------------------------------------------------------------------------

def test_products():
    x, y = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 5))
    v, w = rng.standard_normal(4), rng.standard_normal(4)
    same(mnp.matmul(T(x), T(y)), np.matmul(x, y), rtol=1e-12)
    same(mnp.matmul(T(v), T(y)), np.matmul(v, y), rtol=1e-12)
    same(mnp.matmul(T(x), T(v)), np.matmul(x, v), rtol=1e-12)
    for a, b in ((v, w), (x, y), (x, v), (M, M.T), (2.0, M), (x, rng.standard_normal((3, 4, 2)))):
        same(mnp.dot(T(a), T(b)), np.dot(a, b), rtol=1e-12)
    for a, b in ((v, w), (x, M), (M, v), (3.0, v)):
        same(mnp.inner(T(a), T(b)), np.inner(a, b), rtol=1e-12)
    same(mnp.outer(T(M), T(v)), np.outer(M, v), rtol=1e-12)
    same(mnp.vdot(T(M), T(M)), np.vdot(M, M), rtol=1e-12)
    z = rng.standard_normal((4, 3, 2))
    for axes in (0, 1, 2, ([1, 2], [1, 0]), ((2,), (0,))):
        b = z if axes != 1 else rng.standard_normal((4, 2))
        if axes == 2:
            b = rng.standard_normal((3, 4, 2))
        same(mnp.tensordot(T(x), T(b), axes), np.tensordot(x, b, axes), rtol=1e-12)
    ints = np.arange(6).reshape(2, 3).astype(np.int32)
    same(mnp.matmul(T(ints), T(ints.T)), ints @ ints.T)
    same(mnp.dot(T(ints), T([1.5, 0.5, 2.0], np.float32)),
         (ints @ np.array([1.5, 0.5, 2.0])).astype(np.float32))


def cross_with_2d_vectors(a, b):
    """np.cross as NumPy defined it for 2-component vectors (z = 0) before removing them
    (NumPy 2.5 raises): both 2-component gives the z component alone."""
    if a.shape[-1] == 2 and b.shape[-1] == 2:
        return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    pad = lambda v: np.concatenate([v, np.zeros(v.shape[:-1] + (1,))], -1) if v.shape[-1] == 2 else v
    return np.cross(pad(a), pad(b))


# NumPy dropped 2-component vectors from cross; mindspore.numpy accepts them.
def test_cross_kron_multi_dot_matrix_power():
    a, b = rng.standard_normal((5, 3)), rng.standard_normal((5, 3))
    same(mnp.cross(T(a), T(b)), np.cross(a, b), rtol=1e-12)
    same(mnp.cross(T(a[:, :2]), T(b)), cross_with_2d_vectors(a[:, :2], b), rtol=1e-12)
    same(mnp.cross(T(a), T(b[:, :2])), cross_with_2d_vectors(a, b[:, :2]), rtol=1e-12)
    same(mnp.cross(T(a[:, :2]), T(b[:, :2])), cross_with_2d_vectors(a[:, :2], b[:, :2]),
         rtol=1e-12)
    same(mnp.cross(T(a.T), T(b.T), axisa=0, axisb=0, axisc=0), np.cross(a.T, b.T, 0, 0, 0),
         rtol=1e-12)
    same(mnp.cross(T(a.T), T(b.T), axis=0), np.cross(a.T, b.T, axis=0), rtol=1e-12)
    x, y = np.arange(6).reshape(2, 3), np.array([[1, -1], [2, 0]])
    same(mnp.kron(T(x), T(y)), np.kron(x, y))
    same(mnp.kron(T(np.array([1, 2])), T(x)), np.kron([1, 2], x))
    mats = [rng.standard_normal(s) for s in ((4,), (4, 3), (3, 5), (5,))]
    same(mnp.multi_dot([T(m) for m in mats]), np.linalg.multi_dot(mats), rtol=1e-12)
    same(mnp.multi_dot([T(m) for m in mats[1:3]]), np.linalg.multi_dot(mats[1:3]), rtol=1e-12)
    sq = rng.standard_normal((2, 3, 3))
    for n in (0, 1, 2, 5):
        same(mnp.matrix_power(T(sq), n), np.linalg.matrix_power(sq, n), rtol=1e-10)
    same(mnp.matrix_power(T(np.array([[1, 1], [1, 0]], np.int32)), 10),
         np.linalg.matrix_power(np.array([[1, 1], [1, 0]], np.int32), 10))


@pytest.mark.parametrize("ord_", [None, 1, 2, 3, 0, np.inf, -np.inf, -1, "fro"])
def test_norm(ord_):
    v = rng.standard_normal(5)
    if ord_ != "fro":
        same(mnp.norm(T(v), ord_), np.linalg.norm(v, ord_), rtol=1e-12)
        same(mnp.norm(T(A), ord_, axis=1, keepdims=True),
             np.linalg.norm(A, ord_, axis=1, keepdims=True), rtol=1e-12)
    if ord_ in (None, "fro", 1, -1, np.inf, -np.inf):
        same(mnp.norm(T(M), ord_), np.linalg.norm(M, ord_), rtol=1e-12)
        same(mnp.norm(T(A), ord_, axis=(2, 0)), np.linalg.norm(A, ord_, axis=(2, 0)), rtol=1e-12)
    same(mnp.norm(T(A)), np.linalg.norm(A), rtol=1e-12)
    same(mnp.norm(T(A), keepdims=True), np.linalg.norm(A, keepdims=True), rtol=1e-12)
    assert mnp.norm(T([3, 4], np.int32)).dtype == ms.float32


# ---- statistics ----------------------------------------------------------------------------------

def test_searchsorted_digitize_interp():
    a = np.array([1.0, 2.0, 2.0, 3.5, 7.0])
    v = np.array([[0.0, 2.0, 2.5], [7.0, 8.0, 3.5]])
    for side in ("left", "right"):
        same(mnp.searchsorted(T(a), T(v), side), np.searchsorted(a, v, side))
        order = np.array([4, 0, 3, 1, 2])
        same(mnp.searchsorted(T(a[order]), T(v), side, sorter=T(np.argsort(a[order]))),
             np.searchsorted(a[order], v, side, sorter=np.argsort(a[order])))
    same(mnp.searchsorted(T(a), 2.0), np.searchsorted(a, 2.0))
    bins = np.array([0.0, 1.0, 2.5, 4.0])
    x = np.array([-1.0, 0.0, 1.0, 2.0, 2.5, 3.9, 4.0, 10.0])
    for right in (False, True):
        same(mnp.digitize(T(x), T(bins), right), np.digitize(x, bins, right))
        same(mnp.digitize(T(x), T(bins[::-1]), right), np.digitize(x, bins[::-1], right))
    xp, fp = np.array([0.0, 1.0, 1.5, 4.0]), np.array([2.0, -1.0, 0.0, 3.0])
    for left, right in ((None, None), (-5.0, 5.0)):
        same(mnp.interp(T(x), T(xp), T(fp), left, right), np.interp(x, xp, fp, left, right),
             rtol=1e-12)
    same(mnp.interp(T(x), T([1.0]), T([3.0])), np.interp(x, [1.0], [3.0]))
    assert mnp.interp(T([0.5], np.float32), [0, 1], [0, 2]).dtype == ms.float32


@pytest.mark.parametrize("bins", [4, [0.0, 0.5, 2.0, 3.0]])
def test_histograms(bins):
    data = rng.standard_normal(50) + 1.0
    weights = rng.uniform(0.0, 2.0, 50)
    for kwargs in ({}, {"range": (-1.0, 2.5)}, {"density": True}, {"weights": weights}):
        tkw = {k: (T(v) if k == "weights" else v) for k, v in kwargs.items()}
        counts, edges = mnp.histogram(T(data), bins, **tkw)
        ref_counts, ref_edges = np.histogram(data, bins, **kwargs)
        # Counts are Float32 (MindSpore), or the weights' float dtype.
        same(counts, ref_counts, np.float64 if "weights" in kwargs else np.float32, rtol=1e-6)
        # Edges given as a list of Python floats are Float32 (MindSpore's list conversion).
        edge_dtype = np.float32 if isinstance(bins, list) else np.float64
        same(edges, ref_edges, edge_dtype, rtol=1e-12)
        same(mnp.histogram_bin_edges(T(data), bins, kwargs.get("range")),
             np.histogram_bin_edges(data, bins, kwargs.get("range")), edge_dtype, rtol=1e-12)
    y = rng.standard_normal(50)
    h, xe, ye = mnp.histogram2d(T(data), T(y), [bins, 3])
    rh, rxe, rye = np.histogram2d(data, y, [bins, 3])
    same(h, rh, np.float32)
    same(xe, rxe, edge_dtype, rtol=1e-12)
    same(ye, rye, rtol=1e-12)
    sample = rng.standard_normal((40, 3))
    h, edges = mnp.histogramdd(T(sample), [bins, 2, 3], density=True)
    rh, redges = np.histogramdd(sample, [bins, 2, 3], density=True)
    same(h, rh, np.float32, rtol=1e-6)
    same(edges[0], redges[0], edge_dtype, rtol=1e-12)
    same(edges[1:], redges[1:], rtol=1e-12)


def test_histogram_of_constant_data_and_ints():
    counts, edges = mnp.histogram(T(np.full(5, 2.0)), 3)
    ref_counts, ref_edges = np.histogram(np.full(5, 2.0), 3)
    same(counts, ref_counts, np.float32)
    same(edges, ref_edges)
    counts, edges = mnp.histogram([1, 2, 1], bins=[0, 1, 2, 3])
    same(counts, np.array([0.0, 2.0, 1.0], np.float32))
    same(edges, np.array([0, 1, 2, 3], np.int32))


def test_cov_corrcoef_unwrap():
    x = rng.standard_normal((3, 6))
    y = rng.standard_normal((2, 6))
    fw = np.array([1, 2, 1, 3, 1, 2])
    aw = rng.uniform(0.5, 1.5, 6)
    same(mnp.cov(T(x)), np.cov(x), rtol=1e-12)
    same(mnp.cov(T(x), T(y)), np.cov(x, y), rtol=1e-12)
    same(mnp.cov(T(x.T), rowvar=False, bias=True), np.cov(x.T, rowvar=False, bias=True),
         rtol=1e-12)
    same(mnp.cov(T(x), ddof=2, fweights=T(fw), aweights=T(aw)),
         np.cov(x, ddof=2, fweights=fw, aweights=aw), rtol=1e-12)
    same(mnp.cov(T(x), fweights=T(fw)), np.cov(x, fweights=fw), rtol=1e-12)
    same(mnp.cov(T(x), aweights=T(aw)), np.cov(x, aweights=aw), rtol=1e-12)
    same(mnp.cov(T(x[0])), np.cov(x[0]), rtol=1e-12)
    same(mnp.corrcoef(T(x)), np.corrcoef(x), rtol=1e-12)
    same(mnp.corrcoef(T(x), T(y)), np.corrcoef(x, y), rtol=1e-12)
    same(mnp.corrcoef(T(x[0])), np.corrcoef(x[0]), rtol=1e-12)
    phase = np.cumsum(rng.uniform(-3.0, 3.0, (2, 12)), axis=1)
    wrapped = np.angle(np.exp(1j * phase))
    same(mnp.unwrap(T(wrapped)), np.unwrap(wrapped), rtol=1e-12)
    same(mnp.unwrap(T(wrapped), 4.0, axis=1), np.unwrap(wrapped, 4.0, axis=1), rtol=1e-12)
    same(mnp.unwrap(T(wrapped * 2), period=8.0), np.unwrap(wrapped * 2, period=8.0), rtol=1e-12)


# ---- convolution and polynomials -----------------------------------------------------------------

@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("n, m", [(5, 3), (5, 4), (3, 5), (4, 6), (1, 3), (4, 4)])
def test_convolve_correlate(mode, n, m):
    a, v = rng.standard_normal(n), rng.standard_normal(m)
    same(mnp.convolve(T(a), T(v), mode), np.convolve(a, v, mode), rtol=1e-12, atol=1e-14)
    same(mnp.correlate(T(a), T(v), mode), np.correlate(a, v, mode), rtol=1e-12, atol=1e-14)


def test_polynomials():
    p, q = np.array([3.0, -1.0, 2.0, 0.5]), np.array([1.0, 4.0])
    same(mnp.polyadd(T(p), T(q)), np.polyadd(p, q))
    same(mnp.polysub(T(q), T(p)), np.polysub(q, p))
    same(mnp.polymul(T(p), T(q)), np.polymul(p, q))
    x = np.linspace(-2.0, 2.0, 7)
    same(mnp.polyval(T(p), T(x)), np.polyval(p, x), rtol=1e-12)
    same(mnp.polyval([1, 2, 3], 2), np.array(11, np.int32))
    for m in (0, 1, 2, 4, 5):
        same(mnp.polyder(T(p), m), np.polyder(p, m))
    for m, k in ((1, None), (2, None), (2, [1.0, -2.0]), (1, 3.0)):
        same(mnp.polyint(T(p), m, k), np.polyint(p, m, k), rtol=1e-12)
    same(mnp.polyint(T([1, 2], np.int32)), np.polyint([1, 2]).astype(np.float32))


# ---- eager against jitted ------------------------------------------------------------------------

# Each function of these modules, captured as one graph and equal to its eager result.
JIT_CASES = {
    "reshape": lambda t: mnp.reshape(t, (4, 3)) + mnp.ravel(t)[:3] + mnp.transpose(t, (1, 0)),
    "axes": lambda t: mnp.swapaxes(t, 0, 1) + mnp.moveaxis(t, 0, 1) + mnp.rollaxis(t, 1),
    "dims": lambda t: mnp.squeeze(mnp.expand_dims(t, (0, 2)), (0, 2)) + mnp.size(t),
    "concatenate": lambda t: (mnp.concatenate((t, t), axis=None)[:12] + mnp.append(t, t)[:12]
                              + mnp.ravel(mnp.stack((t, t), 1))[:12]),
    "stacks": lambda t: (mnp.hstack((t, t))[:, :4] + mnp.vstack([t, t * 2])[1:4]
                         + mnp.dstack((t, t))[..., 0] + mnp.column_stack((t[0], t[1]))[:3, :1]),
    "atleast": lambda t: (mnp.atleast_1d(t) + mnp.atleast_2d(t) + mnp.atleast_3d(t)[..., 0]
                          + mnp.atleast_1d(t, t)[0]),
    "splits": lambda t: (mnp.hsplit(t, 2)[0] + mnp.vsplit(t, [1])[1][:, :2].sum()
                         + mnp.array_split(t, 3, axis=1)[2] + mnp.split(t, 2, 1)[0]),
    "dsplit": lambda t: mnp.dsplit(mnp.atleast_3d(t), 1)[0][..., 0],
    "tile_repeat": lambda t: (mnp.tile(t, (1, 2))[:, :4] + mnp.repeat(t, 2, 1)[:, :4]
                              + mnp.repeat(t, [1, 0, 2, 1], axis=1)),
    "flips": lambda t: (mnp.flip(t) + mnp.fliplr(t) + mnp.flipud(t) + mnp.roll(t, 3)
                        + mnp.roll(t, (1, -1), (0, 1))),
    "rot90": lambda t: mnp.rot90(t, 2) + mnp.rot90(t, -1).T,
    "broadcast": lambda t: mnp.broadcast_to(t[0], (3, 4)) + mnp.broadcast_arrays(t, t[0])[1],
    "where_select": lambda t: (mnp.select([t < -0.5, t > 0.5], [t * 2, -t], 0.0)
                               + mnp.where(t > 0, t, 1.0) + mnp.where(t > 0, 1.0, 2.0)),
    "choose": lambda t: mnp.choose(mnp.array([[0, 1, 2, 0]] * 3), [t, -t, t * 2]),
    "piecewise": lambda t: mnp.piecewise(t, [t < 0, t > 1], [lambda u: -u, 1.0, lambda u: u * 2]),
    "take": lambda t: (mnp.take(t, [[0, 5], [11, 3]])
                       + mnp.take(t, [1, 5, -1], 1, mode="wrap")[:2, :2]
                       + mnp.take_along_axis(t, mnp.argmax(t, 1)[:, None], 1)[:2]),
    "indices": lambda t: t + mnp.ravel_multi_index(
        mnp.unravel_index(mnp.array([1, 5, 7, 11]), (3, 4), "F"), (3, 4), order="F"),
    "apply": lambda t: (mnp.apply_along_axis(lambda r: r * r[0], 1, t)
                        + mnp.apply_over_axes(mnp.sum, t, (0, 1))),
    "pad": lambda t: (mnp.pad(t, ((1, 2), (3, 1)), "reflect")[1:4, 3:7]
                      + mnp.pad(t, 2, "edge")[2:5, 2:6]),
    "pad_stats": lambda t: (mnp.pad(t, 2, "mean")[2:5, 2:6] + mnp.pad(t, 2, "wrap")[:3, :4]
                            + mnp.pad(t, 1, "linear_ramp", end_values=2.0)[1:4, 1:5]
                            + mnp.pad(t, 3, "symmetric", reflect_type="odd")[3:6, 3:7]),
    "compare": lambda t: (mnp.equal(t, 0) | mnp.not_equal(t, 1) | mnp.less(t, 0)
                          | mnp.less_equal(t, 0) | mnp.greater(t, 0) | mnp.greater_equal(t, 0)),
    "logical": lambda t: (mnp.logical_or(t > 0, t < -1) ^ mnp.logical_xor(t > 0, True)
                          | mnp.logical_not(t) | mnp.logical_and(t, t > 0)),
    "tests": lambda t: (mnp.isnan(t) | mnp.isinf(t) | mnp.isposinf(t) | mnp.isneginf(t)
                        | mnp.isfinite(t) | mnp.isclose(t, 0.1)),
    "alls": lambda t: (mnp.all(t > -5) & mnp.any(t > 0, 0) | mnp.sometrue(t) | mnp.allclose(t, t)
                       | mnp.array_equal(t, t) | mnp.array_equiv(t, t[0])),
    "membership": lambda t: mnp.isin(mnp.floor(t), [0.0, 1.0]) | mnp.in1d(t, t[0])[:4],
    "products": lambda t: (mnp.dot(t, t.T) + mnp.tensordot(t, t, ([1], [1])) + mnp.inner(t, t)
                           + mnp.outer(t[0], t[1])[:3, :3] + mnp.matmul(t, t.T) + mnp.vdot(t, t)),
    "cross_kron": lambda t: mnp.cross(t[:, :3], t[:, 1:]) + mnp.kron(t[:1, :1], t[:3, :3]),
    "norm": lambda t: (mnp.norm(t) + mnp.norm(t, 1, axis=1) + mnp.norm(t, "fro")
                       + mnp.norm(t, mnp.inf) + mnp.norm(t, 3, axis=1)),
    "matrix_power": lambda t: mnp.matrix_power(t[:, :3], 3) + mnp.multi_dot([t, t.T, t[:, :3]]),
    "search": lambda t: (mnp.searchsorted(mnp.array([-1.0, 0.0, 1.0]), t)
                         + mnp.digitize(t, [0.0, 0.5]) + mnp.digitize(t, [1.0, 0.0], True)),
    "interp": lambda t: mnp.interp(t, mnp.array([-1.0, 0.0, 2.0]), mnp.array([1.0, 0.0, 4.0])),
    "histograms": lambda t: (mnp.histogram(t, 4)[0] + mnp.histogram2d(t[0], t[1], 2)[0].sum()
                             + mnp.histogramdd(t[:, :2], (2, 2))[0].sum()
                             + mnp.histogram_bin_edges(t, 3)[0]),
    "stats": lambda t: mnp.cov(t) + mnp.corrcoef(t) + mnp.unwrap(t * 4.0)[:, :3],
    "convolve": lambda t: (mnp.convolve(t[0], t[1], "same") + mnp.correlate(t[0], t[1][:3])[0]
                           + mnp.polyval(t[2], t[0])),
    "polynomials": lambda t: (mnp.polyadd(t[0], t[1][:2]) + mnp.polysub(t[0], t[1])
                              + mnp.polymul(t[0][:2], t[1][:3]) + mnp.polyder(t[2], 1).sum()
                              + mnp.polyint(t[0], 2, [1.0, 2.0])[:4]),
}


@pytest.mark.parametrize("name", sorted(JIT_CASES))
def test_jitted_equals_eager(name):
    fn = JIT_CASES[name]
    jitted_matches(lambda t: fn(t), T(rng.standard_normal((3, 4))))


# ---- gradients -----------------------------------------------------------------------------------

GRAD_CASES = {
    "transpose_flip": lambda t: mnp.flip(mnp.transpose(t), 0) * mnp.arange(1.0, 4.0),
    "concat_stack": lambda t: mnp.stack([t, t * t], 1).sum(1) + mnp.hstack([t, t])[:, :4],
    "split_roll": lambda t: mnp.roll(t, 1, 1) * mnp.array_split(t, 2, 1)[0].sum(1)[:, None],
    "repeat_tile": lambda t: mnp.repeat(t, [2, 1, 0, 1], axis=1) ** 2 + mnp.tile(t, 2)[:, :4],
    "rot90_pad": lambda t: mnp.pad(t, 2, "symmetric") ** 2,
    "pad_reflect": lambda t: mnp.pad(t, ((1, 1), (3, 2)), "reflect", reflect_type="odd") ** 2,
    "take": lambda t: mnp.concatenate([
        mnp.ravel(mnp.take(t, [[0, 5], [11, 5]]) ** 2),
        mnp.ravel(mnp.take_along_axis(t, mnp.array([[1], [0], [3]]), 1))]),
    "where_select": lambda t: mnp.where(t > 0, t * t, -t) + mnp.select([t < -1], [t ** 3], 0.0),
    "dot": lambda t: mnp.dot(t, t.T) + mnp.inner(t, t),
    "tensordot": lambda t: mnp.tensordot(t, t, ([0], [0])),
    "cross": lambda t: mnp.cross(t[:, :3], t[:, 1:]),
    "kron": lambda t: mnp.kron(t[:2, :2], t),
    "norm": lambda t: mnp.norm(t, axis=1) + mnp.norm(t, 3, axis=1) + mnp.norm(t, "fro"),
    "matrix_power": lambda t: mnp.matrix_power(t[:, :3], 3),
    "interp": lambda t: mnp.interp(t, mnp.array([-2.0, 0.0, 2.0]), mnp.array([1.0, -1.0, 3.0])),
    "cov": lambda t: mnp.cov(t) + mnp.corrcoef(t),
    "convolve": lambda t: mnp.convolve(t[0], t[1]) + mnp.correlate(t[2], t[1], "same").sum(),
    "polyval": lambda t: mnp.polyval(t[0], t[1]) + mnp.polyint(t[2])[:4],
    "choose": lambda t: mnp.choose(mnp.array([[0, 1, 0, 1]] * 3), [t, t * t]),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradients_match_finite_differences(name):
    a = np.random.default_rng(3).uniform(-1.5, 1.5, (3, 4))
    grad_matches(GRAD_CASES[name], a)


# ---- bad arguments -------------------------------------------------------------------------------

@pytest.mark.parametrize("call, exc, message", [
    (lambda: mnp.reshape(T(A), (5, -1)), ValueError, r"reshape: cannot reshape .* \(2, 3, 4\)"),
    (lambda: mnp.transpose(T(A), (0, 1)), ValueError, r"transpose: axes \(0, 1\) are not a "),
    (lambda: mnp.swapaxes(T(A), 0, 3), ValueError, r"swapaxes: axis 3 is out of bounds"),
    (lambda: mnp.moveaxis(T(A), (0, 1), 2), ValueError, r"moveaxis: source and destination"),
    (lambda: mnp.squeeze(T(A), 1), ValueError, r"squeeze: cannot select axis 1 of size 3"),
    (lambda: mnp.concatenate([T(M), T(A)]), ValueError, r"concatenate: all the input tensors"),
    (lambda: mnp.concatenate(T(1.0)), TypeError, r"concatenate: expected a non-empty list"),
    (lambda: mnp.stack([T(M), T(M[:2])]), ValueError, r"stack: all input tensors must have"),
    (lambda: mnp.split(T(M), 3, axis=1), ValueError, r"split: an axis of 4 elements does not"),
    (lambda: mnp.vsplit(T([1, 2]), 2), ValueError, r"vsplit: only works on tensors of 2"),
    (lambda: mnp.repeat(T(M), [1, 2], axis=1), ValueError, r"repeat: 2 non-negative repeat"),
    (lambda: mnp.repeat(T(M), T([1, 2])), TypeError, r"repeat: repeats must be an int"),
    (lambda: mnp.roll(T(M), (1, 2), (0, 1, 1)), ValueError, r"roll: shift and axis must"),
    (lambda: mnp.rot90(T(M), axes=(1, 1)), ValueError, r"rot90: axes must be different"),
    (lambda: mnp.broadcast_to(T(M), (4, 4)), ValueError, r"broadcast_to: .*\(3, 4\) .*\(4, 4\)"),
    (lambda: mnp.where(T([True])), ValueError, r"where: give both x and y"),
    (lambda: mnp.select([T([True])], []), ValueError, r"select: condlist and choicelist"),
    (lambda: mnp.take(T(M), [0], mode="bad"), ValueError, r"take: mode must be one of"),
    (lambda: mnp.take(T(M), T([0.5])), TypeError, r"take: indices must be integers"),
    (lambda: mnp.take_along_axis(T(M), T([0]), 1), ValueError, r"take_along_axis: indices and"),
    (lambda: mnp.piecewise(T(M), [T(M > 0)], [1, 2, 3]), ValueError, r"piecewise: with 1 "),
    (lambda: mnp.unravel_index(T([1]), (2, 2), "K"), ValueError, r"unravel_index: order must"),
    (lambda: mnp.pad(T(M), 1, "median"), ValueError, r"pad: mode must be one of"),
    (lambda: mnp.pad(T(M), ((1, 2),) * 3), ValueError, r"pad: pad_width must be"),
    (lambda: mnp.pad(T(M), -1), ValueError, r"pad: pad_width must hold non-negative ints"),
    (lambda: mnp.matmul(T(M), T(M)), ValueError, r"matmul: the last axis of x1 \(4\)"),
    (lambda: mnp.matmul(T(2.0), T(M)), ValueError, r"matmul: scalars are not allowed"),
    (lambda: mnp.dot(T(M), T(M)), ValueError, r"dot: shapes \(3, 4\) and \(3, 4\) are not"),
    (lambda: mnp.tensordot(T(M), T(M), 3), ValueError, r"tensordot: axes 3 must be in"),
    (lambda: mnp.cross(T(M), T(M)), ValueError, r"cross: incompatible dimensions"),
    (lambda: mnp.matrix_power(T(M), 2), ValueError, r"matrix_power: expected square"),
    (lambda: mnp.matrix_power(T(np.eye(2)), -1), ValueError, r"matrix_power: negative powers"),
    (lambda: mnp.norm(T(M), 2), ValueError, r"norm: ord=2 needs singular values"),
    (lambda: mnp.norm(T(A), 1), ValueError, r"norm: give axis"),
    (lambda: mnp.searchsorted(T(M), 1.0), ValueError, r"searchsorted: a must be 1-D"),
    (lambda: mnp.searchsorted(T([1.0]), 1.0, "middle"), ValueError, r"searchsorted: side must"),
    (lambda: mnp.interp(T([1.0]), T([1.0, 2.0]), T([1.0])), ValueError, r"interp: xp and fp"),
    (lambda: mnp.histogram(T(M), 0), ValueError, r"histogram: bins must be positive"),
    (lambda: mnp.histogram(T(M), 3, (2.0, 1.0)), ValueError, r"histogram: range must be"),
    (lambda: mnp.histogramdd(T(M), [2, 2]), ValueError, r"histogramdd: bins must be an int or"),
    (lambda: mnp.cov(T(A)), ValueError, r"cov: m has more than 2 dimensions"),
    (lambda: mnp.convolve(T(M), T([1.0])), ValueError, r"convolve: a must be 1-D"),
    (lambda: mnp.convolve(T([1.0]), T([1.0]), "half"), ValueError, r"convolve: mode must be"),
    (lambda: mnp.polyder(T([1.0, 2.0]), -1), ValueError, r"polyder: order of derivative"),
    (lambda: mnp.polyint(T([1.0]), 2, [1.0]), ValueError, r"polyint: k must be a number or 2"),
    (lambda: mnp.isin(T([1]), "a"), TypeError, r"in1d: expected a Tensor"),
])
def test_bad_arguments_raise_clear_errors(call, exc, message):
    with pytest.raises(exc, match=message):
        call()
