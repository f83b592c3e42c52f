"""Elementwise chains in jitted functions run as fused kernels and match eager results."""
import itertools
import types

import numpy as np
import pytest

import pijit
from pijit import ops


def chain(a, b, c, d):
    return a * b + c * d - a * 0.5


def _graph_text(jf):
    return pijit.get_code_extra(jf)["graphs"][0]


def _fresh_jit(f):
    """pijit.jit over a copy of f with its own code object, hence its own cache."""
    code = f.__code__.replace(co_name=f"{f.__name__}_{next(_counter)}")
    return pijit.jit(types.FunctionType(code, f.__globals__, code.co_name), mode="PIJit")


_counter = itertools.count()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1,), (7,), (8,), (9,), (1003,), (3, 17), (2, 3, 5)])
def test_fused_chain_is_bit_identical_to_numpy(dtype, shape):
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(shape).astype(dtype) for _ in range(4)]
    jf = _fresh_jit(chain)
    got = jf(*[pijit.Tensor(x) for x in arrays]).asnumpy()
    a, b, c, d = arrays
    np.testing.assert_array_equal(got, a * b + c * d - a * dtype(0.5))
    assert "fused(" in _graph_text(jf)


def test_fused_chain_with_broadcast_inputs():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((6, 10)).astype(np.float32)
    b = rng.standard_normal((10,)).astype(np.float32)
    c = rng.standard_normal((6, 1)).astype(np.float32)
    d = rng.standard_normal(()).astype(np.float32)
    jf = _fresh_jit(chain)
    got = jf(*[pijit.Tensor(x) for x in (a, b, c, d)]).asnumpy()
    np.testing.assert_array_equal(got, a * b + c * d - a * np.float32(0.5))


def test_fused_exp_within_tolerance_of_eager():
    def f(x, y):
        return ops.relu(ops.exp(x * -1.5) * y)

    rng = np.random.default_rng(5)
    xn = rng.uniform(-20, 20, 1001).astype(np.float32)
    yn = rng.standard_normal(1001).astype(np.float32)
    x, y = pijit.Tensor(xn), pijit.Tensor(yn)
    jf = pijit.jit(f, mode="PIJit")
    np.testing.assert_allclose(jf(x, y).asnumpy(), f(x, y).asnumpy(), rtol=4e-7, atol=0)
