"""Every float function of the op table (kernels/ops.h PIJIT_FLOAT_FUNCTIONS), listed by the
extension itself: a function added to the table is tested here with no change but its
reference below when NumPy has no function of its name. Each is checked against a NumPy
reference (values, dtype rules), its gradient against central finite differences, and its
jitted result against the eager one."""
import math

import numpy as np
import pytest

import pijit
from ms_dtypes import float_function_dtype
from pijit import _C, ops

_erf = np.vectorize(math.erf, otypes=[np.float64])
REFERENCES = {
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "gelu": lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))),
    "softplus": lambda x: np.logaddexp(0, x),
    "erf": _erf,
}
# Inputs inside each function's domain.
POSITIVE = {"log", "rsqrt", "sqrt", "log1p", "log2", "log10"}
UNIT = {"asin", "acos", "atanh", "tan"}  # inside (-1, 1), away from tan's poles
ABOVE_ONE = {"acosh"}
NONZERO = {"reciprocal"}
# Piecewise constant: inputs away from the steps (integers) and from round's ties.
STEPS = {"floor", "ceil", "trunc", "round"}
NAMES = _C._float_functions()


def reference(name):
    if name in REFERENCES:
        return REFERENCES[name]
    assert hasattr(np, name), f"{name}: add a NumPy reference to REFERENCES"
    return getattr(np, name)


def inputs(name, dtype):
    x = np.linspace(-2.5, 2.5, 11)
    if name in POSITIVE:
        x = np.linspace(0.1, 3.0, 11)
    elif name in UNIT:
        x = np.linspace(-0.9, 0.9, 11)
    elif name in ABOVE_ONE:
        x = np.linspace(1.1, 3.0, 11)
    elif name in NONZERO or name in STEPS:
        x = np.linspace(-2.5, 2.5, 11) + 0.2
    return x.astype(dtype)


def test_the_table_lists_the_known_functions():
    assert {"exp", "log", "sin", "cos", "tanh", "erf"} <= set(NAMES)
    assert len(NAMES) == len(set(NAMES))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_match_numpy(name, dtype):
    x = inputs(name, dtype)
    got = getattr(ops, name)(pijit.Tensor(x))
    assert got.dtype == pijit.Tensor(x).dtype
    rtol = 2e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got.asnumpy(), reference(name)(x.astype(np.float64)), rtol=rtol,
                               atol=rtol)


@pytest.mark.parametrize("name", NAMES)
def test_integer_input_computes_in_float32(name):
    # MindSpore's rule: an integer of any width gives float32 (NumPy: float64 for int64).
    x = np.array([1, 2, 3], np.int64)
    got = getattr(ops, name)(pijit.Tensor(x))
    assert np.dtype(got.dtype.to_numpy()) == float_function_dtype(x.dtype) == np.float32
    # The values of the float32 input 1., 2., 3. (exact in float32), within float32 rounding.
    with np.errstate(invalid="ignore", divide="ignore"):  # asin(2) is NaN on both sides
        want = reference(name)(x.astype(np.float32).astype(np.float64))
    np.testing.assert_allclose(got.asnumpy(), want, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("name", NAMES)
def test_gradient_matches_finite_differences(name):
    x = inputs(name, np.float64)
    fn = getattr(ops, name)
    grad = pijit.grad(lambda t: fn(t).sum())(pijit.Tensor(x)).asnumpy()
    h = 1e-6
    numeric = (reference(name)(x + h) - reference(name)(x - h)) / (2 * h)
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", NAMES)
def test_jitted_equals_eager_and_method_surface(name):
    fn = getattr(ops, name)
    x = pijit.Tensor(inputs(name, np.float32))

    def f(t):
        return fn(t * 0.5) + 1

    pijit.reset(f)  # one code object for every name: start from an empty cache
    jf = pijit.jit(f)
    np.testing.assert_array_equal(jf(x).asnumpy(), f(x).asnumpy())
    stats = pijit.get_code_extra(jf)
    assert stats["compile_count"] == 1 and stats["eager_count"] == 0, stats
    if hasattr(pijit.Tensor, name):
        np.testing.assert_array_equal(getattr(x, name)().asnumpy(), fn(x).asnumpy())
