"""The primitives of pijit/_primitives_extra.py (ops.Floor(), ops.CumSum(), ops.Median(), ...):
each against a NumPy reference written here, jitted against eager as one graph (the
primitive built outside the jitted function, as models build them in __init__), and, where
differentiable, its gradient against central differences; then attribute checks."""
import math

import numpy as np
import pytest
from scipy import special

import pijit as ms
from pijit import ops
from mint_testutil import T, against_numpy_test, same

R = np.random.default_rng(53)
A = R.normal(size=(3, 4))
B = R.normal(size=(3, 4))
P = R.uniform(0.1, 0.9, size=(3, 4))
INTS = R.integers(1, 20, size=(3, 4)).astype(np.int32)
SQ = R.normal(size=(2, 3, 3)) + 3 * np.eye(3)
HALVES = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.3, -0.7])


def _median(x, axis, keep_dims):
    order = np.argsort(x, axis, kind="stable")
    middle = (x.shape[axis] - 1) // 2
    index = np.take(order, [middle], axis)
    values = np.take_along_axis(x, index, axis)
    if not keep_dims:
        values, index = np.squeeze(values, axis), np.squeeze(index, axis)
    return values, index


def _rows(x, indices, v, combine):
    out = x.copy()
    for i, row in zip(indices, v):
        out[i] = combine(out[i], row)
    return out


CASES = [
    ("ACos", ops.ACos(), np.arccos, [P], True),
    ("Acosh", ops.Acosh(), np.arccosh, [P + 1.2], True),
    ("Asin", ops.Asin(), np.arcsin, [P], True),
    ("Asinh", ops.Asinh(), np.arcsinh, [A], True),
    ("Atan", ops.Atan(), np.arctan, [A], True),
    ("Atanh", ops.Atanh(), np.arctanh, [P], True),
    ("Atan2", ops.Atan2(), np.arctan2, [A, B], True),
    ("Cosh", ops.Cosh(), np.cosh, [A], True),
    ("Sinh", ops.Sinh(), np.sinh, [A], True),
    ("Tan", ops.Tan(), np.tan, [P], True),
    ("Ceil", ops.Ceil(), np.ceil, [A * 3], False),
    ("Floor", ops.Floor(), np.floor, [A * 3], False),
    ("Round", ops.Round(), np.round, [HALVES], False),
    ("Rint", ops.Rint(), np.rint, [HALVES], False),
    ("Trunc", ops.Trunc(), np.trunc, [A * 3], False),
    ("Reciprocal", ops.Reciprocal(), np.reciprocal, [P], True),
    ("Inv", ops.Inv(), np.reciprocal, [P], True),
    ("Invert", ops.Invert(), np.invert, [INTS], False),
    ("Expm1", ops.Expm1(), np.expm1, [A], True),
    ("Log1p", ops.Log1p(), np.log1p, [P], True),
    ("Erfc", ops.Erfc(), special.erfc, [A], True),
    ("Erfinv", ops.Erfinv(), special.erfinv, [P], True),
    ("Softsign", ops.Softsign(), lambda x: x / (1 + np.abs(x)), [A], True),
    ("Mish", ops.Mish(), lambda x: x * np.tanh(np.log1p(np.exp(x))), [A], True),
    ("FastGeLU", ops.FastGeLU(), lambda x: x / (1 + np.exp(-1.702 * x)), [A], True),
    ("Identity", ops.Identity(), lambda x: x, [A], True),
    ("RealDiv", ops.RealDiv(), np.divide, [A, P], True),
    ("Mod", ops.Mod(), np.fmod, [A * 3, B], False),
    ("TruncateDiv", ops.TruncateDiv(), lambda x, y: np.trunc(x / y).astype(x.dtype),
     [INTS, np.maximum(INTS // 3, 1)], False),
    ("TruncateMod", ops.TruncateMod(), np.fmod, [INTS, np.maximum(INTS // 3, 1)], False),
    ("Xdivy", ops.Xdivy(), np.divide, [A, P], True),
    ("Xlogy", ops.Xlogy(), lambda x, y: x * np.log(y), [A, P], True),
    ("Hypot", ops.Hypot(), np.hypot, [A, B], True),
    ("Heaviside", ops.Heaviside(), np.heaviside, [np.round(A), B], False),
    ("Lcm", ops.Lcm(), np.lcm, [INTS, INTS + 1], False),
    ("Gcd", ops.Gcd(), np.gcd, [INTS, INTS * 2 + 2], False),
    ("BitwiseAnd", ops.BitwiseAnd(), np.bitwise_and, [INTS, INTS + 3], False),
    ("BitwiseOr", ops.BitwiseOr(), np.bitwise_or, [INTS, INTS + 3], False),
    ("BitwiseXor", ops.BitwiseXor(), np.bitwise_xor, [INTS, INTS + 3], False),
    ("Lerp", lambda x, y: ops.Lerp()(x, y, 0.25), lambda x, y: x + 0.25 * (y - x), [A, B], True),
    ("Addcdiv", lambda x, y: ops.Addcdiv()(x, y, y * 0 + 4.0, 2.0), lambda x, y: x + y / 2,
     [A, B], True),
    ("Addcmul", lambda x, y: ops.Addcmul()(x, y, y, 2.0), lambda x, y: x + 2 * y * y, [A, B], True),
    ("SquaredDifference", ops.SquaredDifference(), lambda x, y: (x - y) ** 2, [A, B], True),
    ("DivNoNan", ops.DivNoNan(), lambda x, y: np.where(y == 0, 0.0, x / np.where(y == 0, 1, y)),
     [A, np.where(B > 0.5, 0.0, B)], False),
    ("MulNoNan", ops.MulNoNan(), lambda x, y: np.where(y == 0, 0.0, x * y),
     [np.where(A > 0.5, np.inf, A), np.where(B > 0.5, 0.0, B)], False),
    ("Elu", ops.Elu(alpha=0.5), lambda x: np.where(x > 0, x, 0.5 * np.expm1(x)), [A], True),
    ("CeLU", ops.CeLU(2.0), lambda x: np.maximum(x, 0) + np.minimum(0, 2 * np.expm1(x / 2)),
     [A], True),
    ("HShrink", ops.HShrink(0.4), lambda x: np.where(np.abs(x) > 0.4, x, 0.0), [A], False),
    ("SoftShrink", ops.SoftShrink(0.4),
     lambda x: np.where(x > 0.4, x - 0.4, np.where(x < -0.4, x + 0.4, 0.0)), [A], False),
    ("Logit", ops.Logit(), special.logit, [P], True),
    ("Logit_eps", ops.Logit(eps=0.2), lambda p: special.logit(np.clip(p, 0.2, 0.8)), [P], False),
    ("Tril", ops.Tril(1), lambda x: np.tril(x, 1), [A], True),
    ("Triu", ops.Triu(), np.triu, [A], True),
    ("ReverseV2", ops.ReverseV2(axis=(0, 1)), lambda x: x[::-1, ::-1], [A], True),
    ("Cdist", ops.Cdist(p=1.0), lambda x, y: np.abs(x[:, None] - y[None]).sum(-1), [A, B[:2]],
     False),
    ("L2Loss", ops.L2Loss(), lambda x: (x * x).sum() / 2, [A], True),
    ("PReLU", lambda x: ops.PReLU()(x, T(np.array([0.1, 0.2, 0.3]))),
     lambda x: np.where(x > 0, x, x * np.array([0.1, 0.2, 0.3])[None, :, None, None]),
     [R.normal(size=(2, 3, 2, 2))], True),
    ("BiasAdd", lambda x: ops.BiasAdd()(x, T(np.array([1.0, 2.0, 3.0]))),
     lambda x: x + np.array([1.0, 2.0, 3.0])[None, :, None], [SQ.transpose(0, 1, 2)], True),
    ("Trace", ops.Trace(), np.trace, [A], True),
    ("MatrixDeterminant", ops.MatrixDeterminant(), np.linalg.det, [SQ], True),
    ("MatrixInverse", ops.MatrixInverse(), np.linalg.inv, [SQ], True),
    ("MatrixInverse_adjoint", ops.MatrixInverse(adjoint=True),
     lambda x: np.linalg.inv(np.swapaxes(x, -1, -2)), [SQ], True),
    ("GatherD", lambda x: ops.GatherD()(x, 1, T(np.array([[3, 0], [1, 1], [0, 2]]))),
     lambda x: np.take_along_axis(x, np.array([[3, 0], [1, 1], [0, 2]]), 1), [A], True),
    ("MaskedFill", lambda x: ops.MaskedFill()(x, x > 0, 0.5), lambda x: np.where(x > 0, 0.5, x),
     [A], True),
    ("Expand", lambda x: ops.Expand()(x, (2, 3, 4)), lambda x: np.broadcast_to(x, (2, 3, 4)), [A],
     True),
    ("UnsortedSegmentSum", lambda x: ops.UnsortedSegmentSum()(x, T(np.array([1, 1, 0])), 3),
     lambda x: np.stack([x[2], x[0] + x[1], np.zeros(4)]), [A], True),
    ("UnsortedSegmentMax", lambda x: ops.UnsortedSegmentMax()(x, T(np.array([1, 1, 0])), 2),
     lambda x: np.stack([x[2], np.maximum(x[0], x[1])]), [A], True),
    ("SigmoidCrossEntropyWithLogits", lambda x, y: ops.SigmoidCrossEntropyWithLogits()(x, y),
     lambda x, y: np.logaddexp(0, x) - x * y, [A * 2, P], True),
    ("KLDivLoss", lambda x, y: ops.KLDivLoss("sum")(x, y), lambda x, y: (y * (np.log(y) - x)).sum(),
     [A, P], True),
    ("SoftMarginLoss", lambda x, y: ops.SoftMarginLoss()(x, y),
     lambda x, y: np.log1p(np.exp(-x * y)).mean(), [A, np.sign(B)], True),
    ("ApproximateEqual", ops.ApproximateEqual(0.5), lambda x, y: np.abs(x - y) < 0.5, [A, B],
     False),
    ("IsClose", ops.IsClose(rtol=0.0, atol=0.3), lambda x, y: np.abs(x - y) <= 0.3, [A, B], False),
    ("L2Normalize", ops.L2Normalize(axis=1),
     lambda x: x / np.sqrt(np.maximum((x * x).sum(1, keepdims=True), 1e-4)), [A], True),
    ("CumSum", lambda x: ops.CumSum()(x, 1), lambda x: np.cumsum(x, 1), [A], True),
    ("CumSum_exclusive_reverse", lambda x: ops.CumSum(exclusive=True, reverse=True)(x, 0),
     lambda x: np.flip(np.concatenate([np.zeros((1, 4)), np.cumsum(np.flip(x, 0), 0)[:-1]]), 0),
     [A], True),
    ("CumProd_exclusive", lambda x: ops.CumProd(exclusive=True)(x, 1),
     lambda x: np.concatenate([np.ones((3, 1)), np.cumprod(x, 1)[:, :-1]], 1), [A], True),
    ("Roll", ops.Roll(shift=2, axis=1), lambda x: np.roll(x, 2, 1), [A], True),
    ("InplaceAdd", lambda x, v: ops.InplaceAdd((2, 0))(x, v[:2]),
     lambda x, v: _rows(x, (2, 0), v[:2], np.add), [A, B], True),
    ("InplaceSub", lambda x, v: ops.InplaceSub(1)(x, v[:1]),
     lambda x, v: _rows(x, (1,), v[:1], np.subtract), [A, B], True),
    ("InplaceUpdate", lambda x, v: ops.InplaceUpdate((0, 2))(x, v[:2]),
     lambda x, v: _rows(x, (0, 2), v[:2], lambda a, b: b), [A, B], True),
]


test_against_numpy_jitted_and_gradient = against_numpy_test(CASES)


def test_primitives_with_several_results():
    x = np.round(A * 2)
    index, values = ops.ArgMaxWithValue(axis=1)(T(x))
    same((index, values), (np.argmax(x, 1), np.max(x, 1)))
    index, values = ops.ArgMinWithValue(axis=0, keep_dims=True)(T(x))
    same((index, values), (np.argmin(x, 0)[None], np.min(x, 0, keepdims=True)))
    order = np.argsort(-x, 1, kind="stable")
    same(ops.Sort(axis=1, descending=True)(T(x)), (np.take_along_axis(x, order, 1), order))
    same(ops.TopK()(T(x), 2), (np.take_along_axis(x, order[:, :2], 1), order[:, :2]))
    same(ops.Median(axis=1, keep_dims=True)(T(A)), _median(A, 1, True))
    same(ops.Median(global_median=True)(T(A))[0], np.sort(A.ravel())[5])
    same(ops.Cummax(axis=0)(T(x))[0], np.maximum.accumulate(x, 0))
    same(ops.Cummin(axis=1)(T(x))[0], np.minimum.accumulate(x, 1))
    same(ops.SquareSumAll()(T(A), T(B)), ((A * A).sum(), (B * B).sum()))
    loss, dlogits = ops.SoftmaxCrossEntropyWithLogits()(T(A), T(P / P.sum(1, keepdims=True)))
    soft = np.exp(A) / np.exp(A).sum(1, keepdims=True)
    labels = P / P.sum(1, keepdims=True)
    same((loss, dlogits), (-(labels * np.log(soft)).sum(1), soft - labels), rtol=1e-10)
    y, mean, var = ops.LayerNorm(begin_norm_axis=1, epsilon=1e-5)(T(A), T(np.ones(4)),
                                                                  T(np.zeros(4)))
    m, v = A.mean(1, keepdims=True), A.var(1, keepdims=True)
    same((y, mean, var), ((A - m) / np.sqrt(v + 1e-5), m, v), rtol=1e-10)
    same(ops.Meshgrid(indexing="ij")((T(A[0]), T(B[0]))), np.meshgrid(A[0], B[0], indexing="ij"))
    same(ops.SearchSorted(right=True)(T(np.array([1.0, 2.0, 2.0])), T(np.array([2.0, 0.0]))),
         np.array([3, 0]))
    same(ops.TensorShape()(T(SQ)), np.array([2, 3, 3]))
    assert ops.Size()(T(A)) == 12 and ops.Rank()(T(SQ)) == 3
    same(ops.LinSpace()(0.0, 1.0, 5), np.linspace(0, 1, 5, dtype=np.float32))
    loss = ops.BCEWithLogitsLoss(reduction="sum")(T(A), T(P), T(np.ones(4)), T(np.ones(4) * 2))
    same(loss, (-(2 * P * np.log(special.expit(A)) + (1 - P) * np.log(1 - special.expit(A))))
         .sum(), rtol=1e-10)
    same(ops.BinaryCrossEntropy()(T(P), T(P)), -(P * np.log(P) + (1 - P) * np.log(1 - P)).mean(),
         rtol=1e-10)
    same(ops.SmoothL1Loss(beta=0.5)(T(A), T(B)),
         np.where(np.abs(A - B) < 0.5, 0.5 * (A - B) ** 2 / 0.5, np.abs(A - B) - 0.25),
         rtol=1e-10)
    same(ops.AdaptiveAvgPool2D((1, 2))(T(SQ[None, :, :, :2])),
         SQ[None, :, :, :2].mean(2, keepdims=True))


def test_dropout_primitive():
    ms.set_seed(2)
    out, mask = ops.Dropout(keep_prob=0.8)(T(np.ones((100, 50), np.float32)))
    kept = mask.asnumpy()
    assert set(np.unique(kept)) == {0.0, 1.0} and abs(kept.mean() - 0.8) < 0.03
    same(out, kept / 0.8)
    with pytest.raises(ValueError, match="keep_prob"):
        ops.Dropout(keep_prob=0.0)


def test_attributes_are_fixed_and_shown():
    prim = ops.CumSum(exclusive=True)
    assert prim.exclusive is True and prim.reverse is False
    with pytest.raises(AttributeError):
        prim.exclusive = False
    assert "alpha=0.5" in repr(ops.Elu(0.5))
    with pytest.raises(TypeError, match="alpha"):
        ops.Elu(0.5, 1.0)
    with pytest.raises(ValueError, match="v must have shape"):
        ops.InplaceAdd((0, 1))(T(A), T(B[:1]))
    assert math.isclose(ops.HShrink().lambd, 0.5)
