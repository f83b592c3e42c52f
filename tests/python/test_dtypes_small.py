"""The small dtypes (float16, bfloat16, int8, int16, uint8): public dtype objects, NumPy,
buffer and DLPack interop, MindSpore's promotion and weak Python scalars (ms_dtypes), NumPy's
integer wraparound, casts, creation, random and the layer ops, and their errors.
(The op-by-op checks of every dtype live in test_eager_ops*.py, which run over NP_DTYPES.)"""
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import pijit as ms
from pijit import ops
import nn_reference as ref
from ms_dtypes import computed_in, float_function_dtype, result_dtype, with_python_scalar
from pijit_testutil import (INT_NP_DTYPES, MS_OF_NP, NP_DTYPES, assert_matches_numpy,
                            elements_for, np_dtype, random_array)

T = ms.Tensor
NEW_NP = [np.dtype(np.float16), np.dtype(np.int8), np.dtype(np.int16), np.dtype(np.uint8)]
HYP = settings(max_examples=60, deadline=None)


@pytest.fixture
def rng():
    return np.random.default_rng(20261122)


# ---- dtype objects ------------------------------------------------------------------------------

@pytest.mark.parametrize("name, printed", [
    ("float16", "Float16"), ("bfloat16", "BFloat16"), ("int8", "Int8"), ("int16", "Int16"),
    ("uint8", "UInt8")])
def test_public_dtype_objects_print_like_mindspore(name, printed):
    dt = getattr(ms, name)
    assert str(dt) == printed
    assert name in ms.__all__
    assert dt.itemsize == (1 if name.endswith("int8") else 2)


def test_tensor_repr_shows_the_dtype_and_bfloat16_values():
    assert "dtype=Int8" in repr(T(np.array([1, -2], np.int8)))
    r = repr(T([1.5, 2.0], ms.bfloat16))
    assert "dtype=BFloat16" in r and "1.5" in r
    assert str(T([0.5], ms.bfloat16)) == "[0.5]"


@pytest.mark.parametrize("spec, expected", [
    (np.float16, ms.float16), ("int8", ms.int8), (np.int16, ms.int16), (np.uint8, ms.uint8),
    ("bfloat16", ms.bfloat16), (ms.bfloat16, ms.bfloat16)])
def test_dtype_arguments_accept_pijit_and_numpy_spellings(spec, expected):
    assert T([1, 2], spec).dtype == expected
    assert ops.zeros((2,), spec).dtype == expected


# ---- NumPy interop ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", NEW_NP, ids=str)
def test_numpy_arrays_convert_both_ways_without_copying(dtype):
    a = np.arange(6).astype(dtype).reshape(2, 3)
    t = T(a)
    assert t.dtype == MS_OF_NP[dtype] and np_dtype(t) == dtype
    back = t.asnumpy()
    assert back.dtype == dtype and np.shares_memory(back, a)
    np.testing.assert_array_equal(back, a)
    assert np.shares_memory(np.asarray(t), a)
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    view = memoryview(t)
    assert view.format == a.dtype.char and view.shape == (2, 3) and view.itemsize == a.itemsize
    np.testing.assert_array_equal(np.asarray(view), a)
    a[0, 0] = 5  # one buffer: the tensor sees the write
    assert t.asnumpy()[0, 0] == 5


def test_buffer_of_a_transposed_view_has_its_strides():
    a = np.arange(6, dtype=np.int16).reshape(2, 3)
    np.testing.assert_array_equal(np.asarray(memoryview(T(a).transpose(1, 0))), a.T)


def test_bfloat16_to_numpy_uses_ml_dtypes_and_shares_memory():
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes is an optional dependency")
    t = T([1.5, -2.25, 3.0], ms.bfloat16)
    a = t.asnumpy()
    assert a.dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(a.astype(np.float32), [1.5, -2.25, 3.0])
    assert np.shares_memory(a, t.asnumpy())
    back = T(a)  # an ml_dtypes array converts back, zero-copy
    assert back.dtype == ms.bfloat16 and np.shares_memory(back.asnumpy(), a)
    assert T(np.ones(2, np.float32), ml_dtypes.bfloat16).dtype == ms.bfloat16


def test_bfloat16_without_ml_dtypes_raises_type_error_saying_what_to_do(monkeypatch):
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # import ml_dtypes now fails
    t = T([1.5, 2.0], ms.bfloat16)
    with pytest.raises(TypeError, match=r"astype\(pijit.float32\)"):
        t.asnumpy()
    with pytest.raises(BufferError):
        memoryview(t)
    # Conversions that do not need a NumPy bfloat16 still work.
    np.testing.assert_array_equal(t.astype(ms.float32).asnumpy(), [1.5, 2.0])
    np.testing.assert_array_equal(np.asarray(t, dtype=np.float32), [1.5, 2.0])
    assert str(t) == "[1.5 2. ]"


@pytest.mark.parametrize("dtype", NEW_NP, ids=str)
def test_dlpack_round_trips_through_numpy_without_copying(dtype):
    a = np.arange(5).astype(dtype)
    t = ms.from_dlpack(a)
    assert t.dtype == MS_OF_NP[dtype]
    back = np.from_dlpack(t)
    assert back.dtype == dtype and np.shares_memory(back, a)


def test_dlpack_carries_bfloat16():
    t = T([1.0, 2.5, -3.0], ms.bfloat16)
    back = ms.from_dlpack(t)
    assert back.dtype == ms.bfloat16 and back._data_ptr() == t._data_ptr()
    np.testing.assert_array_equal(back.astype(ms.float32).asnumpy(), [1.0, 2.5, -3.0])


# ---- promotion, weak scalars, wraparound -------------------------------------------------------

@pytest.mark.parametrize("da", NP_DTYPES, ids=str)
@pytest.mark.parametrize("db", NP_DTYPES, ids=str)
def test_promotion_of_every_pair_follows_mindspore(da, db):
    a, b = np.ones(2, da), np.ones(2, db)
    assert np_dtype(ops.maximum(T(a), T(b))) == result_dtype(da, db)
    assert np_dtype(ops.where(T(np.array([True, False])), T(a), T(b))) == result_dtype(da, db)


@pytest.mark.parametrize("other, expected", [
    (ms.bool_, ms.bfloat16), (ms.uint8, ms.bfloat16), (ms.int8, ms.bfloat16),
    (ms.int16, ms.bfloat16), (ms.int32, ms.bfloat16), (ms.int64, ms.bfloat16),
    (ms.float16, ms.float32), (ms.bfloat16, ms.bfloat16), (ms.float32, ms.float32),
    (ms.float64, ms.float64)])
def test_bfloat16_promotes_as_ml_frameworks_do(other, expected):
    x, y = T([1, 2], ms.bfloat16), T([1, 2], other)
    assert (x + y).dtype == (y + x).dtype == expected


@pytest.mark.parametrize("dtype", INT_NP_DTYPES + [np.dtype(np.float16)], ids=str)
@pytest.mark.parametrize("scalar", [1, -1, 100, 300, 2.5, True])
def test_python_scalars_are_weak_and_out_of_range_ints_raise(dtype, scalar):
    a = np.array([1, 2, 3], dtype)
    try:
        np.add(a, scalar)  # NumPy raises for the same out-of-range ints (300 with int8)
    except OverflowError:
        with pytest.raises(OverflowError, match="out of bounds"):
            T(a) + scalar
        return
    rt = with_python_scalar(dtype, scalar)  # int8 + 2.5 -> float32 (NumPy: float64)
    expected = computed_in(rt, np.add)(a, scalar)
    assert expected.dtype == rt
    assert_matches_numpy(T(a) + scalar, expected)


@pytest.mark.parametrize("dtype", INT_NP_DTYPES[:3], ids=str)
def test_out_of_range_python_ints_compare_divide_and_clip_without_raising(dtype):
    # No OverflowError: comparisons and clip give NumPy's values in the tensor's dtype, and
    # true division computes in float32 (float_function_dtype), where 1000 fits.
    a = np.array([0, 5, 100], dtype)
    for fn in (lambda x: x < -1, lambda x: x == 300, lambda x: x != -1,
               lambda x: ops.clip(x, -5, 300) if isinstance(x, T) else np.clip(x, -5, 300)):
        assert_matches_numpy(fn(T(a)), fn(a))
    rt = float_function_dtype(with_python_scalar(dtype, 1000))
    assert_matches_numpy(T(a) / 1000, a.astype(rt) / 1000)


@given(data=st.data(), dtype=st.sampled_from(INT_NP_DTYPES[:3]),
       name=st.sampled_from(["add", "subtract", "multiply", "floor_divide", "remainder"]))
@HYP
def test_small_integers_wrap_around_like_numpy_hypothesis(data, dtype, name):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=2, max_side=5))
    a = data.draw(hnp.arrays(dtype, shape, elements=elements_for(dtype, 10 ** 6)))
    b = data.draw(hnp.arrays(dtype, shape, elements=elements_for(dtype, 10 ** 6)))
    with np.errstate(all="ignore"):
        expected = getattr(np, name)(a, b)
    ms_name = {"subtract": "sub", "multiply": "mul", "remainder": "mod"}.get(name, name)
    assert_matches_numpy(getattr(ops, ms_name)(T(a), T(b)), expected)


def test_int8_neg_abs_and_matmul_wrap_around():
    a = np.array([-128, 127, -5], np.int8)
    assert_matches_numpy(-T(a), -a)
    assert_matches_numpy(ops.abs(T(a)), np.abs(a))
    m = np.full((2, 40), 100, np.int8)
    with np.errstate(all="ignore"):
        assert_matches_numpy(T(m) @ T(m.T), m @ m.T)


# ---- casts, creation, random ---------------------------------------------------------------------

@pytest.mark.parametrize("src", NP_DTYPES, ids=str)
@pytest.mark.parametrize("dst", NP_DTYPES, ids=str)
def test_astype_between_every_pair_matches_numpy(rng, src, dst):
    a = random_array(rng, (7,), src, -100, 100)
    assert_matches_numpy(T(a).astype(MS_OF_NP[dst]), a.astype(dst))


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")  # 65520 -> inf, on purpose
def test_float_to_float16_rounds_to_nearest_even_from_double_directly():
    a = np.array([1 + 2 ** -11 + 2 ** -40, 65519.0, 65520.0, 1e-8, -0.0, np.nan, 2 ** -25])
    assert_matches_numpy(T(a).astype(ms.float16), a.astype(np.float16))
    assert_matches_numpy(T(a.astype(np.float32)).astype(ms.float16), a.astype(np.float32).astype(np.float16))


@pytest.mark.parametrize("dtype", NEW_NP, ids=str)
def test_creation_functions_make_every_dtype(dtype):
    md = MS_OF_NP[dtype]
    assert_matches_numpy(ops.zeros((2, 3), md), np.zeros((2, 3), dtype))
    assert_matches_numpy(ops.ones((2,), md), np.ones((2,), dtype))
    assert_matches_numpy(ops.full((3,), 7, dtype=md), np.full((3,), 7, dtype))
    assert_matches_numpy(ops.arange(0, 10, 3, dtype=md), np.arange(0, 10, 3, dtype=dtype))
    assert_matches_numpy(ops.eye(3, 4, dtype=md), np.eye(3, 4, dtype=dtype))
    assert_matches_numpy(ops.zeros_like(T(np.ones(3, dtype))), np.zeros(3, dtype))
    if dtype.kind == "f":
        assert_matches_numpy(ops.linspace(0.0, 1.0, 5, dtype=md), np.linspace(0, 1, 5, dtype=dtype))


@pytest.mark.parametrize("md", [ms.float16, ms.bfloat16])
def test_random_draws_half_floats_in_range(md):
    u = ops.uniform((1000,), -2.0, 2.0, seed=3, dtype=md)
    assert u.dtype == md
    v = u.astype(ms.float32).asnumpy()
    assert v.min() >= -2.0 and v.max() < 2.0 and abs(v.mean()) < 0.2
    n = ops.normal((1000,), 1.0, 0.5, seed=4, dtype=md).astype(ms.float32).asnumpy()
    assert abs(n.mean() - 1.0) < 0.1 and abs(n.std() - 0.5) < 0.1
    # The same draw as float64, rounded.
    # The same draw as float64, rounded; a value that rounds up to the excluded upper bound
    # is the lower bound instead (the interval stays half-open).
    f = ops.uniform((1000,), -2.0, 2.0, seed=3, dtype=ms.float64)
    expected = f.astype(md).astype(ms.float32).asnumpy()
    expected[expected == 2.0] = -2.0
    np.testing.assert_array_equal(v, expected)


@pytest.mark.parametrize("md", [ms.int8, ms.uint8, ms.int16])
def test_random_of_integer_dtype_raises_type_error_naming_dtype(md):
    with pytest.raises(TypeError, match=f"uniform: unsupported dtype {md}"):
        ops.uniform((2,), 0.0, 1.0, dtype=md)


# ---- indexing, shape ops, where, concat -----------------------------------------------------------

@pytest.mark.parametrize("dtype", NEW_NP, ids=str)
def test_views_and_shape_ops_keep_the_dtype(rng, dtype):
    a = random_array(rng, (3, 4), dtype)
    t = T(a)
    assert_matches_numpy(t[1:, ::2], a[1:, ::2])
    assert_matches_numpy(t[-1], a[-1])
    assert_matches_numpy(t.transpose(1, 0).reshape(2, 6), a.T.reshape(2, 6))
    assert_matches_numpy(ops.concat((t, t), 1), np.concatenate((a, a), 1))
    assert_matches_numpy(ops.stack((t, t)), np.stack((a, a)))
    assert_matches_numpy(ops.broadcast_to(t[0], (2, 4)), np.broadcast_to(a[0], (2, 4)))
    assert_matches_numpy(ops.where(t > 1, t, t[0]), np.where(a > 1, a, a[0]))
    assert_matches_numpy(ops.argmax(t, 1), np.argmax(a, 1))


# ---- layer ops --------------------------------------------------------------------------------------

def rounded(x, md):
    """x rounded to md (float16 / bfloat16) and widened to float32: exact inputs for the
    float32 references, which pijit's half-float layer ops compute with."""
    return T(x).astype(md).astype(ms.float32).asnumpy()


@pytest.mark.parametrize("md", [ms.float16, ms.bfloat16])
def test_conv_pool_and_norms_of_half_floats_compute_in_float32(rng, md):
    # Tolerance: one rounding of a float32 result, 2**-11 (float16) or 2**-8 (bfloat16).
    tol = dict(rtol=1e-3, atol=1e-3) if md == ms.float16 else dict(rtol=8e-3, atol=8e-3)
    x = rounded(rng.standard_normal((2, 3, 6, 6)).astype(np.float32), md)
    w = rounded(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), md)
    b = rounded(rng.standard_normal(4).astype(np.float32), md)
    X, W, B = (T(v).astype(md) for v in (x, w, b))

    def check(got, expected):
        assert got.dtype == md and got.shape == expected.shape
        np.testing.assert_allclose(got.astype(ms.float32).asnumpy(), expected, **tol)

    check(ops.conv2d(X, W, B, pad_mode="same"), ref.conv2d(x, w, b, pad_mode="same"))
    check(ops.max_pool2d(X, 2), ref.pool2d(x, "max", 2))
    check(ops.avg_pool2d(X, 3, 1), ref.pool2d(x, "avg", 3, 1))
    gamma, beta = rounded(np.linspace(0.5, 1.5, 6, dtype=np.float32), md), rounded(np.zeros(6, np.float32), md)
    check(ops.layer_norm(X, (6,), T(gamma).astype(md), T(beta).astype(md)),
          ref.layer_norm(x, (6,), gamma, beta))
    mean, var = rounded(np.full(3, 0.1, np.float32), md), rounded(np.full(3, 2.0, np.float32), md)
    g3, b3 = rounded(np.ones(3, np.float32), md), rounded(np.zeros(3, np.float32), md)
    check(ops.batch_norm(X, *(T(v).astype(md) for v in (mean, var, g3, b3)), eps=1e-3),
          ref.batch_norm(x, mean, var, g3, b3, eps=1e-3))
    check(ops.softmax(X, 1), np.exp(x) / np.exp(x).sum(1, keepdims=True))
    check(X.mean((2, 3)), x.mean((2, 3)))


def test_batch_norm_training_updates_half_float_running_statistics(rng):
    x = rng.standard_normal((4, 2, 3, 3)).astype(np.float16)
    rm, rv = T(np.zeros(2, np.float16)), T(np.ones(2, np.float16))
    ops.batch_norm(T(x), rm, rv, T(np.ones(2, np.float16)), T(np.zeros(2, np.float16)),
                   training=True, momentum=0.5)
    assert rm.dtype == ms.float16
    xf = x.astype(np.float32)
    np.testing.assert_allclose(rm.asnumpy(), 0.5 * xf.mean((0, 2, 3)), rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("md", [ms.int8, ms.uint8, ms.int16])
@pytest.mark.parametrize("op, call", [
    ("conv2d", lambda x: ops.conv2d(x, x)), ("max_pool2d", lambda x: ops.max_pool2d(x, 2)),
    ("avg_pool2d", lambda x: ops.avg_pool2d(x, 2)),
    ("layer_norm", lambda x: ops.layer_norm(x, (2,))),
    ("batch_norm", lambda x: ops.batch_norm(x, x[0, :, 0, 0], x[0, :, 0, 0], x[0, :, 0, 0],
                                            x[0, :, 0, 0]))])
def test_layer_ops_of_integers_raise_type_error_naming_op_and_dtype(md, op, call):
    x = ops.ones((2, 2, 2, 2), md)
    with pytest.raises(TypeError, match=f"{op}: unsupported dtype {md}"):
        call(x)
