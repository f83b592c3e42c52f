"""The ops functions composed of pijit's ops (pijit/_ops_math_extra.py, _ops_array_extra.py):
each against a NumPy reference written here, jitted against eager as one graph, and, where
differentiable, its gradient against central differences; then the forms with several
results, random draws and argument errors."""
import math

import numpy as np
import pytest
from scipy import special

import pijit as ms
from pijit import ops
from mint_testutil import T, against_numpy_test, jitted_matches, same

R = np.random.default_rng(41)
A = R.normal(size=(3, 4))
B = R.normal(size=(3, 4))
P = R.uniform(0.1, 0.9, size=(3, 4))
SQ = R.normal(size=(2, 3, 3)) + 3 * np.eye(3)
M, V = R.normal(size=(3, 4)), R.normal(size=(4,))
INTS = R.integers(-9, 10, size=(3, 4))
NONZERO_INTS = np.where(INTS == 0, 3, INTS)


def _stable_argsort(a, axis, descending=False):
    return np.argsort(-a if descending else a, axis=axis, kind="stable")


def _logsumexp(a, axis, keepdims=False):
    top = a.max(axis, keepdims=True)
    out = np.log(np.exp(a - top).sum(axis, keepdims=True)) + top
    return out if keepdims else np.squeeze(out, axis)


# (id, the function of tensors, its NumPy reference of arrays, inputs, differentiable in the
# first input)
CASES = [
    ("absolute", ops.absolute, np.abs, [A], False),
    ("arccos", ops.arccos, np.arccos, [P], True),
    ("arcsinh", ops.arcsinh, np.arcsinh, [A], True),
    ("arctanh", ops.arctanh, np.arctanh, [P], True),
    ("atan2", ops.atan2, np.arctan2, [A, B], True),
    ("multiply", ops.multiply, np.multiply, [A, B], True),
    ("subtract", lambda x, y: ops.subtract(x, y, alpha=2), lambda x, y: x - 2 * y, [A, B], True),
    ("divide_floor", lambda x, y: ops.divide(x, y, rounding_mode="floor"),
     lambda x, y: np.floor(x / y), [A, B], False),
    ("truncate_div", ops.truncate_div, lambda x, y: np.trunc(x / y).astype(x.dtype),
     [INTS, NONZERO_INTS], False),
    ("truncate_mod", ops.truncate_mod, np.fmod, [A, B], False),
    ("true_divide", ops.true_divide, np.true_divide, [A, B], True),
    ("floor_div", ops.floor_div, np.floor_divide, [A, B], False),
    ("inv", ops.inv, np.reciprocal, [P], True),
    ("invert", ops.invert, np.invert, [INTS.astype(np.int32)], False),
    ("sgn", ops.sgn, np.sign, [A], False),
    ("erfc", ops.erfc, special.erfc, [A], True),
    ("erfinv", ops.erfinv, special.erfinv, [P], True),
    ("deg2rad", ops.deg2rad, np.deg2rad, [A], True),
    ("rad2deg", ops.rad2deg, np.rad2deg, [A], True),
    ("copysign", ops.copysign, np.copysign, [A, B], False),
    ("hypot", ops.hypot, np.hypot, [A, B], True),
    ("logaddexp", ops.logaddexp, np.logaddexp, [A, B], True),
    ("logaddexp2", ops.logaddexp2, np.logaddexp2, [A, B], True),
    ("heaviside", ops.heaviside, np.heaviside, [np.round(A), B], False),
    ("lcm", ops.lcm, np.lcm, [INTS.astype(np.int32), NONZERO_INTS.astype(np.int32)], False),
    ("signbit", ops.signbit, np.signbit, [A], False),
    ("frac", ops.frac, lambda x: x - np.trunc(x), [A * 3], True),
    ("sinc", ops.sinc, np.sinc, [np.concatenate([A, np.zeros((1, 4))])], True),
    ("xlogy", ops.xlogy, lambda x, y: np.where(x == 0, 0.0, x * np.log(np.where(x == 0, 1, y))),
     [np.where(A > 0.5, 0.0, A), P], False),
    ("xlogy_nonzero", ops.xlogy, lambda x, y: x * np.log(y), [A, P], True),
    ("xdivy", ops.xdivy, lambda x, y: np.where(x == 0, 0.0, x / np.where(x == 0, 1, y)),
     [np.where(A > 0.5, 0.0, A), P], False),
    ("xdivy_nonzero", ops.xdivy, np.divide, [A, P], True),
    ("ldexp", ops.ldexp, lambda x, e: x * 2.0 ** e, [A, np.round(B * 3)], True),
    ("logit", ops.logit, lambda p: np.log(p / (1 - p)), [P], True),
    ("logit_eps", lambda p: ops.logit(p, 0.2), lambda p: special.logit(np.clip(p, 0.2, 0.8)),
     [P], False),
    ("lerp", lambda x, y: ops.lerp(x, y, 0.3), lambda x, y: x + 0.3 * (y - x), [A, B], True),
    ("addcdiv", lambda x, y: ops.addcdiv(x, y, y * 0 + 2.0, value=3),
     lambda x, y: x + 3 * y / 2.0, [A, B], True),
    ("addcmul", lambda x, y: ops.addcmul(x, y, y, value=0.5), lambda x, y: x + 0.5 * y * y,
     [A, B], True),
    ("nan_to_num", lambda x: ops.nan_to_num(x, 1.0, 5.0),
     lambda x: np.nan_to_num(x, nan=1.0, posinf=5.0, neginf=np.finfo(np.float64).min),
     [np.array([np.nan, np.inf, -np.inf, 2.0])], False),
    ("isneginf", ops.isneginf, np.isneginf, [np.array([np.nan, np.inf, -np.inf, 2.0])], False),
    ("isposinf", ops.isposinf, np.isposinf, [np.array([np.nan, np.inf, -np.inf, 2.0])], False),
    ("logsumexp", lambda x: ops.logsumexp(x, 1), lambda x: _logsumexp(x, 1), [A * 30], True),
    ("logsumexp_keep", lambda x: ops.logsumexp(x, (0, 1), True),
     lambda x: _logsumexp(_logsumexp(x, 1, True), 0, True), [A], True),
    ("cumsum", lambda x: ops.cumsum(x, 1), lambda x: np.cumsum(x, 1), [A], True),
    ("cumprod", lambda x: ops.cumprod(x, 0), lambda x: np.cumprod(x, 0), [A], True),
    ("count_nonzero", lambda x: ops.count_nonzero(x, 1),
     lambda x: np.count_nonzero(x, 1).astype(np.int32), [INTS], False),
    ("mm", ops.mm, np.matmul, [A, B.T], True),
    ("mv", ops.mv, np.matmul, [M, V], True),
    ("bmm", ops.bmm, np.matmul, [SQ, SQ], True),
    ("addmm", lambda x, y: ops.addmm(x, y, y.T, beta=0.5, alpha=2),
     lambda x, y: 0.5 * x + 2 * y @ y.T, [A[:, :3], A], True),
    ("addmv", lambda v, m: ops.addmv(v[:3], m, v, alpha=-1), lambda v, m: v[:3] - m @ v, [V, M],
     True),
    ("addr", lambda x, v: ops.addr(x, v[:3], v, beta=2), lambda x, v: 2 * x + np.outer(v[:3], v),
     [A, V], True),
    ("baddbmm", lambda x: ops.baddbmm(x, x, x, 0.5, 2), lambda x: 0.5 * x + 2 * x @ x, [SQ], True),
    ("addbmm", lambda x: ops.addbmm(x[0], x, x, alpha=3), lambda x: x[0] + 3 * (x @ x).sum(0),
     [SQ], True),
    ("adjoint", ops.adjoint, lambda x: np.swapaxes(x, -1, -2), [SQ], True),
    ("t", ops.t, np.transpose, [A], True),
    ("dot", ops.dot, np.dot, [A, B.T], True),
    ("det", ops.det, np.linalg.det, [SQ], True),
    ("inverse", ops.inverse, np.linalg.inv, [SQ], True),
    ("trace", ops.trace, np.trace, [A], True),
    ("cross", lambda x, y: ops.cross(x, y), lambda x, y: np.cross(x, y, axis=0),
     [A[:, :3], B[:, :3]], True),
    ("kron", ops.kron, np.kron, [A[:2, :2], B], True),
    ("outer", ops.outer, np.outer, [V, V[:3]], True),
    ("ger", ops.ger, np.outer, [V, V[:3]], True),
    ("inner", ops.inner, np.inner, [A, B], True),
    ("dist", lambda x, y: ops.dist(x, y, 3), lambda x, y: (np.abs(x - y) ** 3).sum() ** (1 / 3),
     [A, B], True),
    ("dist_inf", lambda x, y: ops.dist(x, y, math.inf), lambda x, y: np.abs(x - y).max(), [A, B],
     False),
    ("cdist", ops.cdist, lambda x, y: np.sqrt(((x[:, None] - y[None]) ** 2).sum(-1)), [A, B[:2]],
     True),
    ("cdist_p1", lambda x, y: ops.cdist(x, y, 1.0), lambda x, y: np.abs(x[:, None] - y[None])
     .sum(-1), [A, B[:2]], False),
    ("cosine_similarity", lambda x, y: ops.cosine_similarity(x, y, dim=1),
     lambda x, y: (x * y).sum(1) / np.sqrt((x * x).sum(1) * (y * y).sum(1)), [A, B], True),
    # shapes
    ("flip", lambda x: ops.flip(x, (0, 1)), lambda x: x[::-1, ::-1], [A], True),
    ("fliplr", ops.fliplr, np.fliplr, [A], True),
    ("flipud", ops.flipud, np.flipud, [A], True),
    ("reverse", lambda x: ops.reverse(x, [1]), lambda x: x[:, ::-1], [A], True),
    ("roll", lambda x: ops.roll(x, (1, -2), (0, 1)), lambda x: np.roll(x, (1, -2), (0, 1)), [A],
     True),
    ("rot90", lambda x: ops.rot90(x, 1, [0, 1]), np.rot90, [A], True),
    ("ravel", ops.ravel, np.ravel, [A], True),
    ("moveaxis", lambda x: ops.moveaxis(x, 0, -1), lambda x: np.moveaxis(x, 0, -1), [SQ], True),
    ("movedim", lambda x: ops.movedim(x, 2, 0), lambda x: np.moveaxis(x, 2, 0), [SQ], True),
    ("swapdims", lambda x: ops.swapdims(x, 0, 2), lambda x: np.swapaxes(x, 0, 2), [SQ], True),
    ("tril", lambda x: ops.tril(x, -1), lambda x: np.tril(x, -1), [A], True),
    ("triu", lambda x: ops.triu(x, 1), lambda x: np.triu(x, 1), [A], True),
    ("diag", ops.diag, np.diag, [V], True),
    ("diagflat", ops.diagflat, np.diagflat, [A[:2, :2]], True),
    ("diagonal", lambda x: ops.diagonal(x, 1, 1, 2), lambda x: np.diagonal(x, 1, 1, 2), [SQ], True),
    ("diff", lambda x: ops.diff(x, 2, 1), lambda x: np.diff(x, 2, 1), [A], True),
    ("narrow", lambda x: ops.narrow(x, 1, 1, 2), lambda x: x[:, 1:3], [A], True),
    ("expand", lambda x: ops.expand(x, (2, 3, 4)), lambda x: np.broadcast_to(x, (2, 3, 4)), [A],
     True),
    ("hstack", lambda x, y: ops.hstack((x, y)), lambda x, y: np.hstack((x, y)), [A, B], True),
    ("column_stack", lambda x: ops.column_stack((x, x)), lambda x: np.column_stack((x, x)), [V],
     True),
    ("repeat_elements", lambda x: ops.repeat_elements(x, 2, 1), lambda x: np.repeat(x, 2, 1), [A],
     True),
    ("repeat_interleave", lambda x: ops.repeat_interleave(x, 3), lambda x: np.repeat(x, 3), [A],
     True),
    ("masked_fill", lambda x: ops.masked_fill(x, x > 0.5, -1.0),
     lambda x: np.where(x > 0.5, -1.0, x), [A], True),
    ("index_fill", lambda x: ops.index_fill(x, 1, T(np.array([0, 2])), 7.0),
     lambda x: np.where(np.isin(np.arange(4), [0, 2]), 7.0, x), [A], True),
    ("index_select", lambda x: ops.index_select(x, 1, T(np.array([3, 3, 0]))),
     lambda x: x[:, [3, 3, 0]], [A], True),
    ("gather_elements", lambda x: ops.gather_elements(x, 1, T(np.array([[0, 3], [1, 1], [2, 0]]))),
     lambda x: np.take_along_axis(x, np.array([[0, 3], [1, 1], [2, 0]]), 1), [A], True),
    ("msort", ops.msort, lambda x: np.sort(x, 0), [A], True),
    ("argsort", lambda x: ops.argsort(x, 0, descending=True),
     lambda x: _stable_argsort(x, 0, True), [np.round(A)], False),
    ("bias_add", lambda x, b: ops.bias_add(x, b[:3]), lambda x, b: x + b[None, :3, None],
     [SQ, V], True),
    ("unsorted_segment_sum", lambda x: ops.unsorted_segment_sum(x, T(np.array([2, 0, 2])), 4),
     lambda x: np.stack([x[[1]].sum(0), np.zeros(4), x[[0, 2]].sum(0), np.zeros(4)]), [A], True),
    ("unsorted_segment_max", lambda x: ops.unsorted_segment_max(x, T(np.array([1, 0, 1])), 2),
     lambda x: np.stack([x[1], np.maximum(x[0], x[2])]), [A], True),
    ("unsorted_segment_min", lambda x: ops.unsorted_segment_min(x, T(np.array([1, 0, 1])), 2),
     lambda x: np.stack([x[1], np.minimum(x[0], x[2])]), [A], True),
    ("unsorted_segment_prod", lambda x: ops.unsorted_segment_prod(x, T(np.array([0, 0, 1])), 2),
     lambda x: np.stack([x[0] * x[1], x[2]]), [A], True),
]


test_against_numpy_jitted_and_gradient = against_numpy_test(CASES)


def test_several_results():
    x = np.round(A * 2)
    values, indices = ops.topk(T(x), 2)
    order = _stable_argsort(x, 1, True)[:, :2]
    same((values, indices), (np.take_along_axis(x, order, 1), order))
    values, indices = ops.median(T(A), axis=0, keepdims=True)
    order = np.argsort(A, 0)[1:2]
    same((values, indices), (np.take_along_axis(A, order, 0), order))
    values, indices = ops.median(T(A[:2]), 0)  # an even count: the lower middle
    same(values, np.minimum(A[0], A[1]))
    for fn, acc in ((ops.cummax, np.maximum), (ops.cummin, np.minimum)):
        values, indices = fn(T(x), 1)
        same(values, acc.accumulate(x, 1))
        # the index of the last place the running extreme was reached
        want = np.array([[max(j for j in range(i + 1) if x[r, j] == acc.accumulate(x[r])[i])
                          for i in range(4)] for r in range(3)])
        same(indices, want)
        jitted_matches(lambda t: fn(t, 0), T(x))
    same(ops.chunk(T(np.arange(7.0)), 3), np.split(np.arange(7.0), [3, 6]))
    same(ops.tensor_split(T(np.arange(7.0)), 3), np.array_split(np.arange(7.0), 3))
    same(ops.tensor_split(T(A), [1, 3], axis=1), np.split(A, [1, 3], 1))
    same(ops.unbind(T(A), 1), [A[:, i] for i in range(4)])
    same(ops.hsplit(T(A), 2), np.hsplit(A, 2))
    same(ops.meshgrid(T(V), T(V[:2]), indexing="ij"), np.meshgrid(V, V[:2], indexing="ij"))
    same(ops.meshgrid((T(V), T(V[:2]))), np.meshgrid(V, V[:2]))
    same(ops.sequence_mask(T(np.array([1, 3])), 4), np.arange(4) < np.array([[1], [3]]))
    same(ops.sequence_mask(T(np.array([1, 3]))), np.arange(3) < np.array([[1], [3]]))
    same(ops.searchsorted(T(np.array([1.0, 2.0, 3.0])), T(np.array([2.0]))), np.array([1]))


def test_predicates_and_sizes():
    x = T(A)
    assert ops.numel(x) == 12 and ops.size(x) == 12 and ops.rank(x) == 2
    assert ops.is_tensor(x) and not ops.is_tensor(A)
    assert ops.is_floating_point(x) and not ops.is_floating_point(T(INTS))
    assert ops.is_complex(x) is False
    same(ops.isreal(x), np.ones((3, 4), bool))
    same(ops.isclose(x, x + 1e-9), np.ones((3, 4), bool))
    same(ops.positive(x), A)
    with pytest.raises(TypeError, match="Bool"):
        ops.positive(T(A > 0))


def test_random_draws():
    ms.set_seed(3)
    ints = ops.randint(2, 7, (4000,)).asnumpy()
    assert ints.dtype == np.int64 and set(np.unique(ints)) == {2, 3, 4, 5, 6}
    assert ops.randint_like(T(INTS), 0, 3).dtype == T(INTS).dtype
    like = ops.rand_like(T(A), dtype=ms.float32)
    assert like.shape == (3, 4) and like.dtype == ms.float32
    normal = ops.randn_like(T(np.zeros(4000))).asnumpy()
    assert abs(normal.mean()) < 0.1 and abs(normal.std() - 1) < 0.1
    assert ops.standard_normal((2, 3)).shape == (2, 3)
    coins = ops.bernoulli(T(np.zeros(4000)), 0.25).asnumpy()
    assert set(np.unique(coins)) == {0.0, 1.0} and abs(coins.mean() - 0.25) < 0.03
    same(ops.rand_like(T(A), seed=5), ops.rand_like(T(A), seed=5).asnumpy())
    with pytest.raises(ValueError, match="high"):
        ops.randint(3, 3, (2,))


def test_layer_functions():
    x = R.normal(size=(1, 2, 4, 4))
    cols = ops.unfold(T(x), 2, stride=2)
    same(cols, x.reshape(1, 2, 2, 2, 2, 2).transpose(0, 1, 3, 5, 2, 4).reshape(1, 8, 4))
    same(ops.fold(cols, T(np.array([4, 4])), 2, stride=2), x)
    grid = R.uniform(-1, 1, size=(1, 3, 3, 2))
    same(ops.grid_sample(T(x), T(grid)), ms.mint.nn.functional.grid_sample(T(x), T(grid))
         .asnumpy())


def test_argument_errors():
    with pytest.raises(TypeError, match="mask"):
        ops.masked_fill(T(A), T(INTS), 0.0)
    with pytest.raises(ValueError, match="mm"):
        ops.mm(T(V), T(A))
    with pytest.raises(ValueError, match="bias"):
        ops.bias_add(T(SQ), T(V))
    with pytest.raises(TypeError, match="segment_ids"):
        ops.unsorted_segment_sum(T(A), T(np.zeros(3)), 2)
    with pytest.raises(ValueError, match="square"):
        ops.det(T(A))
    with pytest.raises(ValueError, match="2-D"):
        ops.trace(T(SQ))
    with pytest.raises(ValueError, match="size 3"):
        ops.cross(T(A[:2]), T(B[:2]))
