"""The Tensor methods of pijit/_tensor_methods_extra.py against NumPy references written here,
jitted against eager, gradients where differentiable, and the casts, sizes and predicates.

Capture inlines these Python-defined methods like any Python function
(bytecode/handlers_attr.cc, guarded on the Tensor class's attribute), so the jitted check asks
for equal results and for no break inside pijit's code: the only breaks allowed are in the
test's own NumPy work inside the jitted lambdas (indexing global arrays, mint_testutil.T)."""
import os

import numpy as np
import pytest
from scipy import special

import pijit as ms
from mint_testutil import T, against_numpy_test, same

R = np.random.default_rng(67)
A = R.normal(size=(3, 4))
B = R.normal(size=(3, 4))
P = R.uniform(0.1, 0.9, size=(3, 4))
SQ = R.normal(size=(2, 3, 3)) + 3 * np.eye(3)
V = R.normal(size=(4,))
INTS = R.integers(1, 20, size=(3, 4)).astype(np.int32)
SPD = (lambda m: m @ m.T + 3 * np.eye(3))(R.normal(size=(3, 3)))
ROWS = T(np.array([[1], [2]]))

def _pijit_matches(fn, *args):
    """fn under jit(mode="PIJit") gives fn's eager result; a graph break is only the one
    documented above."""
    eager = fn(*args)
    jf = ms.jit(fn, mode="PIJit")
    ms.reset(jf)
    got = jf(*args)
    for e, g in zip(eager if isinstance(eager, tuple) else (eager,),
                    got if isinstance(got, tuple) else (got,), strict=True):
        assert e.dtype == g.dtype and e.shape == g.shape
        np.testing.assert_allclose(g.asnumpy(), e.asnumpy(), rtol=1e-12, atol=1e-12)
    reasons = ms.get_code_extra(jf)["all_reasons"]
    package = os.path.dirname(os.path.abspath(ms.__file__))
    assert not any(os.path.abspath(r["file"]).startswith(package) for r in reasons), reasons


# (id, the method call on the first input, its NumPy reference, inputs, differentiable)
CASES = [
    ("absolute", lambda x: x.absolute(), np.abs, [A], False),
    ("arccos", lambda x: x.arccos(), np.arccos, [P], True),
    ("arcsinh", lambda x: x.arcsinh(), np.arcsinh, [A], True),
    ("arctan2", lambda x, y: x.arctan2(y), np.arctan2, [A, B], True),
    ("atan2", lambda x, y: x.atan2(y), np.arctan2, [A, B], True),
    ("addcmul", lambda x, y: x.addcmul(y, y, value=2), lambda x, y: x + 2 * y * y, [A, B], True),
    ("addcdiv", lambda x, y: x.addcdiv(y, y * 0 + 2.0), lambda x, y: x + y / 2, [A, B], True),
    ("addmm", lambda x, y: x.addmm(y, y.T, alpha=0.5), lambda x, y: x + 0.5 * y @ y.T,
     [A[:, :3], A], True),
    ("addmv", lambda x, m: x.addmv(m, T(V)), lambda x, m: x + m @ V, [A[:, 0], A], True),
    ("addr", lambda x: x.addr(T(V[:3]), T(V)), lambda x: x + np.outer(V[:3], V), [A], True),
    ("baddbmm", lambda x: x.baddbmm(x, x), lambda x: x + x @ x, [SQ], True),
    ("addbmm", lambda x: x[0].addbmm(x, x), lambda x: x[0] + (x @ x).sum(0), [SQ], True),
    ("bmm", lambda x: x.bmm(x), lambda x: x @ x, [SQ], True),
    ("adjoint", lambda x: x.adjoint(), lambda x: np.swapaxes(x, -1, -2), [SQ], True),
    ("copysign", lambda x, y: x.copysign(y), np.copysign, [A, B], False),
    ("cross", lambda x, y: x.cross(y, dim=0), lambda x, y: np.cross(x, y, axis=0),
     [A[:, :3], B[:, :3]], True),
    ("cumsum", lambda x: x.cumsum(), lambda x: np.cumsum(x), [A], True),
    ("cumsum_axis", lambda x: x.cumsum(1), lambda x: np.cumsum(x, 1), [A], True),
    ("cumprod", lambda x: x.cumprod(0), lambda x: np.cumprod(x, 0), [A], True),
    ("deg2rad", lambda x: x.deg2rad(), np.deg2rad, [A], True),
    ("rad2deg", lambda x: x.rad2deg(), np.rad2deg, [A], True),
    ("det", lambda x: x.det(), np.linalg.det, [SQ], True),
    ("diag", lambda x: x.diag(), np.diag, [V], True),
    ("diagonal", lambda x: x.diagonal(1), lambda x: np.diagonal(x, 1), [A], True),
    ("divide", lambda x, y: x.divide(y, rounding_mode="trunc"), lambda x, y: np.trunc(x / y),
     [A, B], False),
    ("erfc", lambda x: x.erfc(), special.erfc, [A], True),
    ("erfinv", lambda x: x.erfinv(), special.erfinv, [P], True),
    ("expand", lambda x: x.expand((2, 3, 4)), lambda x: np.broadcast_to(x, (2, 3, 4)), [A], True),
    ("expand_as", lambda x: x.expand_as(T(SQ[:, :1, :1] * 0 + np.zeros((2, 3, 4)))),
     lambda x: np.broadcast_to(x, (2, 3, 4)), [A], True),
    ("flip", lambda x: x.flip((1,)), lambda x: x[:, ::-1], [A], True),
    ("fliplr", lambda x: x.fliplr(), np.fliplr, [A], True),
    ("flipud", lambda x: x.flipud(), np.flipud, [A], True),
    ("reverse", lambda x: x.reverse([0]), lambda x: x[::-1], [A], True),
    ("ge", lambda x, y: x.ge(y), np.greater_equal, [A, B], False),
    ("gt", lambda x, y: x.gt(y), np.greater, [A, B], False),
    ("le", lambda x, y: x.le(y), np.less_equal, [A, B], False),
    ("heaviside", lambda x, y: x.heaviside(y), np.heaviside, [np.round(A), B], False),
    ("hypot", lambda x, y: x.hypot(y), np.hypot, [A, B], True),
    ("inv", lambda x: x.inv(), np.reciprocal, [P], True),
    ("invert", lambda x: x.invert(), np.invert, [INTS], False),
    ("isclose", lambda x, y: x.isclose(y, atol=0.5, rtol=0.0), lambda x, y: np.abs(x - y) <= 0.5,
     [A, B], False),
    ("lcm", lambda x: x.lcm(x + 1), lambda x: np.lcm(x, x + 1), [INTS], False),
    ("ldexp", lambda x: x.ldexp(T(np.array([1.0, 2.0, 0.0, -1.0]))),
     lambda x: x * 2.0 ** np.array([1.0, 2.0, 0.0, -1.0]), [A], True),
    ("lerp", lambda x, y: x.lerp(y, 0.5), lambda x, y: (x + y) / 2, [A, B], True),
    ("logaddexp", lambda x, y: x.logaddexp(y), np.logaddexp, [A, B], True),
    ("logaddexp2", lambda x, y: x.logaddexp2(y), np.logaddexp2, [A, B], True),
    ("logit", lambda x: x.logit(), special.logit, [P], True),
    ("logsumexp", lambda x: x.logsumexp(1, True), lambda x: special.logsumexp(x, 1, keepdims=True),
     [A], True),
    ("masked_fill", lambda x: x.masked_fill(x < 0, 0.0), lambda x: np.maximum(x, 0), [A], False),
    ("multiply", lambda x, y: x.multiply(y), np.multiply, [A, B], True),
    ("narrow", lambda x: x.narrow(0, 1, 2), lambda x: x[1:3], [A], True),
    ("negative", lambda x: x.negative(), np.negative, [A], True),
    ("positive", lambda x: x.positive(), lambda x: x, [A], True),
    ("ravel", lambda x: x.ravel(), np.ravel, [A], True),
    ("repeat", lambda x: x.repeat(2, 1), lambda x: np.repeat(x, 2, 1), [A], True),
    ("repeat_interleave", lambda x: x.repeat_interleave(2, 0), lambda x: np.repeat(x, 2, 0), [A],
     True),
    ("reshape_as", lambda x: x.reshape_as(T(np.zeros((4, 3)))), lambda x: x.reshape(4, 3), [A],
     True),
    ("roll", lambda x: x.roll(1, 0), lambda x: np.roll(x, 1, 0), [A], True),
    ("rot90", lambda x: x.rot90(2, (0, 1)), lambda x: np.rot90(x, 2), [A], True),
    ("select", lambda x, y: x.select(x > y, y), lambda x, y: np.where(x > y, x, y), [A, B], False),
    ("soft_shrink", lambda x: x.soft_shrink(0.5), lambda x: np.sign(x) * np.maximum(
        np.abs(x) - 0.5, 0), [A], False),
    ("hardshrink", lambda x: x.hardshrink(0.5), lambda x: np.where(np.abs(x) > 0.5, x, 0), [A],
     False),
    ("subtract", lambda x, y: x.subtract(y, alpha=2), lambda x, y: x - 2 * y, [A, B], True),
    ("trace", lambda x: x.trace(), np.trace, [A], True),
    ("triu", lambda x: x.triu(1), lambda x: np.triu(x, 1), [A], True),
    ("true_divide", lambda x, y: x.true_divide(y), np.true_divide, [A, P], True),
    ("xdivy", lambda x, y: x.xdivy(y), np.divide, [A, P], True),
    ("xlogy", lambda x, y: x.xlogy(y), lambda x, y: x * np.log(y), [A, P], True),
    ("gather_elements", lambda x: x.gather_elements(1, T(np.array([[0], [3], [1]]))),
     lambda x: np.take_along_axis(x, np.array([[0], [3], [1]]), 1), [A], True),
    ("index_fill", lambda x: x.index_fill(0, T(np.array([1])), -1.0),
     lambda x: np.where(np.arange(3)[:, None] == 1, -1.0, x), [A], True),
    ("ger", lambda x: x.ger(T(V)), lambda x: np.outer(x, V), [V[:2]], True),
    ("ptp", lambda x: x.ptp(1), lambda x: np.ptp(x, 1), [A], True),
    ("fill", lambda x: x.fill(2.5), lambda x: np.full_like(x, 2.5), [A], False),
    ("copy", lambda x: x.copy(), lambda x: x.copy(), [A], True),
    ("conj", lambda x: x.conj(), np.conj, [A], True),
    ("approximate_equal", lambda x, y: x.approximate_equal(y, 0.5),
     lambda x, y: np.abs(x - y) < 0.5, [A, B], False),
    ("unsorted_segment_max", lambda x: x.unsorted_segment_max(T(np.array([0, 1, 0])), 2),
     lambda x: np.stack([np.maximum(x[0], x[2]), x[1]]), [A], True),
    ("inplace_update", lambda x, y: x.inplace_update(y[:1], (2,)),
     lambda x, y: np.concatenate([x[:2], y[:1]]), [A, B], True),
    ("scatter_add", lambda x: x.scatter_add(ROWS, T(np.ones((2, 4)))),
     lambda x: x + np.array([[0.0], [1.0], [1.0]]), [A[:3]], True),
    ("scatter_max", lambda x: x.scatter_max(ROWS, T(np.zeros((2, 4)))),
     lambda x: np.concatenate([x[:1], np.maximum(x[1:], 0)]), [A[:3]], False),
    ("gather_nd", lambda x: x.gather_nd(T(np.array([[2, 1], [0, 3]]))),
     lambda x: np.array([x[2, 1], x[0, 3]]), [A], True),
    ("norm", lambda x: x.norm(), np.linalg.norm, [A], True),
    ("renorm", lambda x: x.renorm(1, 0, 1.0), lambda x: x * np.minimum(
        1.0, 1.0 / (np.abs(x).sum(1, keepdims=True) + 1e-7)), [A], True),
    ("cholesky", lambda x: x.cholesky(), np.linalg.cholesky, [SPD], True),
    ("i0", lambda x: x.i0(), special.i0, [A], True),
    ("angle", lambda x: x.angle(), np.angle, [A], False),
    ("reverse_sequence", lambda x: x.reverse_sequence(T(np.array([2, 3, 1])), 1),
     lambda x: np.stack([np.concatenate([r[:n][::-1], r[n:]]) for r, n in zip(x, [2, 3, 1])]),
     [A], True),
    ("index_add", lambda x, y: x.index_add(T(np.array([0, 2, 0])), y[:, :3], 1),
     lambda x, y: x + np.stack([y[:, 0] + y[:, 2], np.zeros(3), y[:, 1], np.zeros(3)], 1),
     [A, B], True),
    ("float", lambda x: x.float(), lambda x: x.astype(np.float32), [INTS], False),
    ("half", lambda x: x.half(), lambda x: x.astype(np.float16), [INTS], False),
    ("long", lambda x: x.long(), lambda x: x.astype(np.int64), [INTS], False),
    ("int", lambda x: x.int(), lambda x: x.astype(np.int32), [A * 5], False),
    ("short", lambda x: x.short(), lambda x: x.astype(np.int16), [INTS], False),
    ("bool", lambda x: x.bool(), lambda x: x.astype(bool), [np.round(A)], False),
]


test_against_numpy_jitted_and_gradient = against_numpy_test(CASES, jitted=_pijit_matches)


def test_methods_with_several_results():
    x = np.round(A * 2)
    order = np.argsort(-x, 1, kind="stable")
    same(T(x).top_k(2), (np.take_along_axis(x, order[:, :2], 1), order[:, :2]))
    same(T(x).argmax_with_value(1), (np.argmax(x, 1), np.max(x, 1)))
    same(T(x).argmin_with_value(0, True), (np.argmin(x, 0)[None], np.min(x, 0, keepdims=True)))
    same(T(x).cummax(1)[0], np.maximum.accumulate(x, 1))
    same(T(x).cummin(0)[0], np.minimum.accumulate(x, 0))
    middle = np.sort(A, 0)[1]
    same(T(A).median(0)[0], middle)
    same(T(A).unbind(1), [A[:, i] for i in range(4)])
    same(T(A).split(3, 1), np.split(A, [3], 1))
    same(T(np.array([1.0, 2.0, 3.0])).searchsorted(T(np.array([2.0, 2.5])), side="right"),
         np.array([2, 2]))


def test_sizes_predicates_and_constructors():
    x = T(A.astype(np.float32))
    assert x.numel() == x.nelement() == 12 and x.ndimension() == 2
    assert x.has_init is False and x.init_data() is x and x.to_tensor() is x
    assert x.flush_from_cache() is None
    assert x.set_const_arg() is x and x.const_arg is True
    assert x.set_const_arg(False).const_arg is False
    with pytest.raises(TypeError, match="const_arg"):
        x.set_const_arg(1)
    marked = T(A.astype(np.float32)).set_const_arg()
    jitted = ms.jit(lambda t: t * 2)
    same(jitted(marked), A.astype(np.float32) * 2)
    same(jitted(T(A.astype(np.float32) + 1).set_const_arg()), (A.astype(np.float32) + 1) * 2)
    assert x.itemsize == 4 and x.nbytes == 48
    assert x.is_floating_point() and not T(INTS).is_floating_point()
    assert x.is_signed() and T(INTS).is_signed() and not T(INTS.astype(np.uint8)).is_signed()
    same(ms.Tensor.from_numpy(A), A)
    coins = T(np.zeros(4000)).bernoulli(0.5).asnumpy()
    assert set(np.unique(coins)) == {0.0, 1.0} and abs(coins.mean() - 0.5) < 0.04
    with pytest.raises(TypeError, match="Bool"):
        T(A > 0).positive()
