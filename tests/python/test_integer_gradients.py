"""Gradients with respect to integer tensors, as MindSpore gives them: they flow through
integer arithmetic in the integer dtype, and a gradient reaching an integer tensor from a float
computation is cast to its dtype, truncating (x * 0.5 gives 0, x.astype(float32) * 1.5 gives
1). Integers computed from floats (argmax) and comparisons cut the path. The expected values
are the float gradients computed with NumPy, truncated; eager and jitted must agree."""
import numpy as np
import pytest

import pijit as ms
from pijit import ops

X = np.array([1, 2, 3, 4], np.int32)
Y = np.array([3, 1, 2, 5], np.int32)
M = np.array([[1, 2], [3, 4]], np.int32)
ONES = np.ones(4)

CASES = {
    "scaled": (lambda x: (x * 2).sum(), (X,), lambda x: [2 * ONES]),
    "square": (lambda x: (x * x).sum(), (X,), lambda x: [2 * x]),
    "pow": (lambda x: (x ** 2).sum(), (X,), lambda x: [2 * x]),
    "add_sub": (lambda x, y: (x + y * 3 - x * y).sum(), (X, Y), lambda x, y: [1 - y, 3 - x]),
    "negate": (lambda x: (-x * 5).sum(), (X,), lambda x: [-5 * ONES]),
    "through_float": (lambda x: (x.astype(ms.float32) * 1.5).sum(), (X,), lambda x: [np.trunc(1.5 * ONES)]),
    "promoted_to_float": (lambda x: (x * 0.5).sum(), (X,), lambda x: [np.trunc(0.5 * ONES)]),
    "reshape": (lambda x: (x.reshape(2, 2) * 3).sum(), (X,), lambda x: [3 * ONES]),
    "slice": (lambda x: (x[1:] * 3).sum(), (X,), lambda x: [np.array([0, 3, 3, 3])]),
    "maximum": (lambda x, y: ops.maximum(x, y).sum(), (X, Y), lambda x, y: [x > y, y >= x]),
    "matmul": (lambda m: ops.matmul(m, m).sum(), (M,),
               lambda m: [np.ones((2, 2)) @ m.T + m.T @ np.ones((2, 2))]),
    "products_of_sums": (lambda x, y: x.sum() * y.sum(), (X, Y), lambda x, y: [y.sum() * ONES, x.sum() * ONES]),
    "floor_division": (lambda x: (x // 2).sum(), (X,), lambda x: [0 * ONES]),
}


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jitted"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_integer_input_gradients_match_truncated_float_gradients(name, jitted):
    fn, args, expected = CASES[name]
    ms.reset()  # every case's gradient function compiles on its own, under no earlier entries
    grad = ms.grad(fn, grad_position=tuple(range(len(args))))
    if jitted:
        grad = ms.jit(grad, capture_mode="bytecode")
    got = grad(*(ms.Tensor(a) for a in args))
    if jitted:
        assert ms.get_code_extra(grad)["graph_count"] >= 1
    got = got if isinstance(got, tuple) else (got,)
    for g, a, want in zip(got, args, expected(*args)):
        assert g.dtype == ms.int32
        np.testing.assert_array_equal(g.asnumpy(), np.asarray(want).astype(np.int32))


def test_integers_computed_from_floats_and_comparisons_cut_the_path():
    x = ms.Tensor(np.array([0.5, 2.0, -1.0], np.float32))
    # argmax's integer result carries no gradient back to x; the comparison's mask neither.
    g = ms.grad(lambda t: (ops.argmax(t).astype(ms.float32) + (t > 0).astype(ms.float32) * 3).sum())(x)
    np.testing.assert_array_equal(g.asnumpy(), np.zeros(3, np.float32))
    # A Bool input has no gradient at all; an integer input that nothing uses gets zeros.
    n = ms.Tensor(np.array([1, 2, 3], np.int64))
    gx, gn = ms.grad(lambda t, k: (t * 2).sum(), (0, 1))(x, n)
    np.testing.assert_array_equal(gx.asnumpy(), np.full(3, 2, np.float32))
    assert gn.dtype == ms.int64 and gn.asnumpy().tolist() == [0, 0, 0]


def test_bitwise_ops_without_a_gradient_rule_give_zeros_instead_of_an_error():
    x = ms.Tensor(X)
    g = ms.grad(lambda t: ((t & 3) * 2 + t).sum())(x)
    np.testing.assert_array_equal(g.asnumpy(), np.ones(4, np.int32))
