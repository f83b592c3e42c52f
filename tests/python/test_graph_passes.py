"""Jitted functions whose graphs the optimisation passes rewrite give eager's results."""
import numpy as np

import pijit
from pijit import ops


def _jit(f):
    return pijit.jit(f, mode="PIJit")


def test_simplified_chain_matches_eager_bit_for_bit():
    def f(x, y):
        return (x + y) * (x + y) - ops.neg(ops.neg(x)) * 1.0 + (x * 2.0) / 1.0

    rng = np.random.default_rng(0)
    xn = rng.standard_normal((3, 5)).astype(np.float32)
    yn = rng.standard_normal((3, 5)).astype(np.float32)
    x, y = pijit.Tensor(xn), pijit.Tensor(yn)
    got = _jit(f)(x, y).asnumpy()
    np.testing.assert_array_equal(got, f(x, y).asnumpy())


def test_output_simplified_to_an_argument_does_not_alias_it():
    def f(x):
        return x * 1.0

    xn = np.arange(4, dtype=np.float32)
    out = _jit(f)(pijit.Tensor(xn))
    xn[0] = 100.0
    np.testing.assert_array_equal(out.asnumpy(), [0.0, 1.0, 2.0, 3.0])


def test_duplicate_outputs_merged_by_cse_are_distinct_tensors():
    def f(x):
        return ops.exp(x), ops.exp(x)

    a, b = _jit(f)(pijit.Tensor(np.zeros(3, np.float32)))
    a.asnumpy()[0] = 5.0
    np.testing.assert_array_equal(b.asnumpy(), [1.0, 1.0, 1.0])


def test_negative_zero_survives_x_plus_zero():
    def f(x):
        return x + 0.0

    got = _jit(f)(pijit.Tensor(np.array([-0.0, 1.0], np.float32))).asnumpy()
    assert not np.signbit(got[0])  # -0.0 + 0.0 is +0.0, as in eager
