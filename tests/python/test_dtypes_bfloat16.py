"""bfloat16, which NumPy lacks, against float32 references: inputs are bfloat16 values (exact
in float32), the reference computes in float32 like pijit does and rounds to bfloat16 to
nearest even. Arithmetic then agrees exactly; functions (std:: against NumPy's float32
loops) and sums (in another order) within 2**-7 relative, two bfloat16 ulps."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import pijit as ms
from pijit import ops

BF = ms.bfloat16
HYP = settings(max_examples=60, deadline=None)
FN_TOL = dict(rtol=2 ** -7, atol=1e-6)


def round_bf16(x):
    """float32 -> nearest bfloat16 (ties to even), as float32."""
    x = np.asarray(x, np.float32)
    bits = x.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    return np.where(np.isnan(x), np.float32(np.nan), rounded.view(np.float32))


def bf(x):
    """A bfloat16 tensor of x's (bfloat16-rounded) values."""
    return ms.Tensor(np.asarray(x, np.float32)).astype(BF)


def values(t):
    assert t.dtype == BF, t.dtype
    return t.astype(ms.float32).asnumpy()


def bf_arrays(shape, bound=100.0):
    return hnp.arrays(np.float32, shape, elements=st.floats(-bound, bound, width=32)).map(round_bf16)


BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
          "maximum": np.maximum, "minimum": np.minimum}
COMPARE = {"equal": np.equal, "less": np.less, "greater_equal": np.greater_equal}


@given(data=st.data(), name=st.sampled_from(sorted(BINARY)),
       shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4))
@HYP
def test_binary_arithmetic_is_float32_rounded_once(data, name, shapes):
    a = data.draw(bf_arrays(shapes.input_shapes[0]))
    b = data.draw(bf_arrays(shapes.input_shapes[1]))
    with np.errstate(all="ignore"):
        expected = round_bf16(BINARY[name](a, b))
    got = values(getattr(ops, name)(bf(a), bf(b)))
    np.testing.assert_array_equal(got, expected)


@given(a=bf_arrays((3, 4)), b=bf_arrays((4,)), name=st.sampled_from(sorted(COMPARE)))
@HYP
def test_comparisons_give_bool(a, b, name):
    out = getattr(ops, name)(bf(a), bf(b))
    assert out.dtype == ms.bool_
    np.testing.assert_array_equal(out.asnumpy(), COMPARE[name](a, b))


@pytest.mark.parametrize("scalar", [2, -3, 1.5, True])
def test_python_scalars_keep_bfloat16(scalar):
    a = round_bf16(np.linspace(-3, 3, 7))
    np.testing.assert_array_equal(values(bf(a) * scalar), round_bf16(a * np.float32(scalar)))
    np.testing.assert_array_equal(values(scalar + bf(a)), round_bf16(np.float32(scalar) + a))


UNARY = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos,
         "tanh": np.tanh, "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "neg": np.negative,
         "abs": np.abs, "relu": lambda x: np.maximum(x, 0), "square": np.square,
         "sign": np.sign, "rsqrt": lambda x: 1 / np.sqrt(x)}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_functions_match_float32_within_two_ulps(name):
    a = round_bf16(np.linspace(0.05 if name in ("log", "sqrt", "rsqrt") else -6, 6, 41))
    with np.errstate(all="ignore"):
        expected = round_bf16(UNARY[name](a))
    np.testing.assert_allclose(values(getattr(ops, name)(bf(a))), expected, **FN_TOL)


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod", "var", "std"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_reductions_keep_bfloat16(name, axis):
    a = round_bf16(np.random.default_rng(5).uniform(0.5, 1.5, (4, 6)))
    expected = round_bf16(getattr(np, name)(a.astype(np.float64), axis=axis))
    # ops.max and ops.min return (values, indices), as MindSpore's do; amax/amin the values.
    op = getattr(ops, {"max": "amax", "min": "amin"}.get(name, name))
    np.testing.assert_allclose(values(op(bf(a), axis)), expected, **FN_TOL)
    assert ops.argmax(bf(a), 1).dtype == ms.int64
    np.testing.assert_array_equal(ops.argmax(bf(a), 1).asnumpy(), np.argmax(a, 1))


def test_softmax_matmul_clip_where_and_shape_ops():
    rng = np.random.default_rng(9)
    a, b = round_bf16(rng.standard_normal((3, 5))), round_bf16(rng.standard_normal((5, 2)))
    e = np.exp(a - a.max(1, keepdims=True))
    np.testing.assert_allclose(values(ops.softmax(bf(a), 1)), e / e.sum(1, keepdims=True), **FN_TOL)
    np.testing.assert_allclose(values(bf(a) @ bf(b)), round_bf16(a @ b), rtol=2 ** -7, atol=2 ** -6)
    np.testing.assert_array_equal(values(ops.clip(bf(a), -0.5, 0.5)), np.clip(a, -0.5, 0.5))
    np.testing.assert_array_equal(values(ops.where(bf(a) > 0, bf(a), 0.0)), np.where(a > 0, a, 0))
    t = bf(a)
    np.testing.assert_array_equal(values(t.transpose(1, 0)[1:, :2]), a.T[1:, :2])
    np.testing.assert_array_equal(values(ops.concat((t, t), 0)), np.concatenate((a, a)))
    np.testing.assert_array_equal(values(ops.stack((t, t), 1)), np.stack((a, a), 1))
    np.testing.assert_array_equal(values(t.reshape(5, 3)), a.reshape(5, 3))


def test_casts_to_and_from_bfloat16_round_to_nearest_even():
    x = np.array([1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, 3.4e38, -1e-40, np.inf, 1 / 3], np.float32)
    np.testing.assert_array_equal(values(ms.Tensor(x).astype(BF)), round_bf16(x))
    ints = np.array([-128, 255, 1000, 257], np.int16)
    np.testing.assert_array_equal(values(ms.Tensor(ints).astype(BF)), round_bf16(ints))
    back = ms.Tensor(np.array([1.5, -2.75, 300.0], np.float32)).astype(BF).astype(ms.int16)
    np.testing.assert_array_equal(back.asnumpy(), [1, -2, 300])
    assert np.isnan(values(ms.Tensor(np.array([np.nan], np.float32)).astype(BF))[0])


def test_integer_and_float16_operands_promote_as_ml_frameworks_do():
    a = round_bf16([1.5, 2.5])
    i8 = np.array([3, -4], np.int8)
    out = bf(a) + ms.Tensor(i8)
    np.testing.assert_array_equal(values(out), round_bf16(a + i8))
    h = (bf(a) + ms.Tensor(np.array([0.5, 0.25], np.float16)))
    assert h.dtype == ms.float32
    np.testing.assert_array_equal(h.asnumpy(), a + np.array([0.5, 0.25], np.float32))
