"""Layer ops (conv2d, max_pool2d, avg_pool2d, batch_norm, layer_norm, one_hot, assign)
against NumPy references, their errors, and their capture by @pijit.jit(mode="PIJit")."""
import numpy as np
import pytest

import pijit as ms
from pijit import ops
import nn_reference as ref
from pijit_testutil import assert_same_result

T = ms.Tensor
TOL = {np.float32: dict(rtol=1e-4, atol=1e-5), np.float64: dict(rtol=1e-10, atol=1e-12)}


def close(got, expected):
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert got.asnumpy().dtype == expected.dtype
    np.testing.assert_allclose(got.asnumpy(), expected, **TOL[expected.dtype.type])


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def rand(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


# ---- conv2d -----------------------------------------------------------------------------------

CONV_CASES = [
    # x shape, w shape, kwargs
    ((1, 1, 5, 5), (1, 1, 3, 3), {}),
    ((2, 3, 8, 7), (4, 3, 3, 3), dict(stride=2)),
    ((2, 3, 8, 8), (4, 3, 3, 3), dict(pad_mode="same")),
    ((1, 2, 9, 6), (3, 2, 4, 3), dict(pad_mode="same", stride=(2, 3))),
    ((2, 3, 6, 6), (5, 3, 3, 3), dict(pad_mode="pad", padding=1)),
    ((1, 2, 7, 7), (2, 2, 3, 2), dict(pad_mode="pad", padding=(1, 2, 0, 1), stride=2)),
    ((1, 2, 9, 9), (3, 2, 3, 3), dict(dilation=2)),
    ((1, 2, 9, 9), (3, 2, 3, 3), dict(pad_mode="same", dilation=(2, 1))),
    ((2, 4, 6, 6), (6, 2, 3, 3), dict(groups=2, pad_mode="pad", padding=1)),
    ((1, 4, 5, 5), (4, 1, 3, 3), dict(groups=4)),
    ((3, 1, 32, 32), (6, 1, 5, 5), {}),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs, ws, kw", CONV_CASES)
@pytest.mark.parametrize("bias", [False, True])
def test_conv2d_matches_numpy(rng, dtype, xs, ws, kw, bias):
    x, w = rand(rng, xs, dtype), rand(rng, ws, dtype)
    b = rand(rng, (ws[0],), dtype) if bias else None
    got = ops.conv2d(T(x), T(w), T(b) if bias else None, **kw)
    close(got, ref.conv2d(x, w, b, **kw))


def test_conv2d_of_a_transposed_input_reads_its_strides(rng):
    x = rand(rng, (6, 6, 3, 2), np.float32)
    w = rand(rng, (4, 3, 3, 3), np.float32)
    got = ops.conv2d(T(x).transpose(3, 2, 0, 1), T(w), pad_mode="same")
    close(got, ref.conv2d(x.transpose(3, 2, 0, 1), w, pad_mode="same"))


def test_conv2d_primitive_takes_mindspore_attributes(rng):
    x, w = rand(rng, (1, 3, 7, 7), np.float32), rand(rng, (2, 3, 3, 3), np.float32)
    prim = ops.Conv2D(out_channel=2, kernel_size=3, pad_mode="pad", pad=1, stride=2)
    close(prim(T(x), T(w)), ref.conv2d(x, w, stride=2, pad_mode="pad", padding=1))


@pytest.mark.parametrize("call, message", [
    (lambda x, w: ops.conv2d(x, T(np.ones((4, 2, 3, 3), np.float32))), "3 channels but weight (4, 2, 3, 3)"),
    (lambda x, w: ops.conv2d(x[0], w), "4-D input"),
    (lambda x, w: ops.conv2d(x, w, T(np.ones(3, np.float32))), "bias of shape (3,)"),
    (lambda x, w: ops.conv2d(x, w, groups=2), "groups (2)"),
    (lambda x, w: ops.conv2d(x, T(np.ones((4, 3, 9, 9), np.float32))), "larger than the padded input"),
    (lambda x, w: ops.conv2d(x, w, pad_mode="full"), "pad_mode must be"),
    (lambda x, w: ops.conv2d(x, w, pad_mode="same", padding=1), "padding must be 0"),
    (lambda x, w: ops.conv2d(x, w, stride=0), "must be positive"),
])
def test_conv2d_bad_shapes_are_value_errors_naming_op_and_shapes(call, message):
    x, w = T(np.ones((2, 3, 6, 6), np.float32)), T(np.ones((4, 3, 3, 3), np.float32))
    with pytest.raises(ValueError, match="conv2d") as e:
        call(x, w)
    assert message in str(e.value)


def test_conv2d_dtype_errors_are_type_errors():
    with pytest.raises(TypeError, match="conv2d: unsupported dtype Int64"):
        ops.conv2d(T(np.ones((1, 1, 3, 3), np.int64)), T(np.ones((1, 1, 3, 3), np.int64)))
    with pytest.raises(TypeError, match="weight has dtype Float64"):
        ops.conv2d(T(np.ones((1, 1, 3, 3), np.float32)), T(np.ones((1, 1, 3, 3))))


# ---- pooling ----------------------------------------------------------------------------------

POOL_CASES = [
    ((1, 1, 4, 4), dict(kernel_size=2)),
    ((2, 3, 7, 6), dict(kernel_size=3, stride=2)),
    ((2, 3, 7, 7), dict(kernel_size=3, stride=2, padding=1)),
    ((1, 2, 8, 5), dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0))),
    ((1, 2, 7, 7), dict(kernel_size=2, stride=2, ceil_mode=True)),
    ((1, 2, 8, 8), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ((1, 2, 7, 9), dict(kernel_size=3, stride=2, pad_mode="same")),
    ((2, 1, 6, 6), dict(kernel_size=2, stride=1, pad_mode="valid")),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs, kw", POOL_CASES)
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool2d_matches_numpy(rng, dtype, xs, kw, kind):
    x = rand(rng, xs, dtype)
    kw = dict(kw)
    if kind == "avg" and "stride" not in kw:
        kw["stride"] = kw["kernel_size"]  # avg_pool2d's stride defaults to 1
    fn = ops.max_pool2d if kind == "max" else ops.avg_pool2d
    close(fn(T(x), **kw), ref.pool2d(x, kind, **kw))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_avg_pool2d_can_leave_padding_out_of_the_divisor(rng, dtype):
    x = rand(rng, (1, 2, 6, 6), dtype)
    kw = dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)
    close(ops.avg_pool2d(T(x), **kw), ref.pool2d(x, "avg", **kw))


def test_max_pool2d_dilation(rng):
    x = rand(rng, (1, 2, 9, 9), np.float32)
    close(ops.max_pool2d(T(x), 3, 1, dilation=2), ref.pool2d(x, "max", 3, 1, dilation=2))


def test_max_pool2d_stride_defaults_to_kernel_and_avg_pool2d_to_one(rng):
    x = rand(rng, (1, 1, 6, 6), np.float32)
    assert ops.max_pool2d(T(x), 2).shape == (1, 1, 3, 3)
    assert ops.avg_pool2d(T(x), 2).shape == (1, 1, 5, 5)


@pytest.mark.parametrize("pad_mode", ["valid", "same", "SAME"])
def test_pool_primitives_follow_pad_mode(rng, pad_mode):
    x = rand(rng, (2, 3, 7, 7), np.float32)
    mode = pad_mode.lower()
    close(ops.MaxPool(3, 2, pad_mode)(T(x)), ref.pool2d(x, "max", 3, 2, pad_mode=mode))
    close(ops.AvgPool(3, 2, pad_mode)(T(x)), ref.pool2d(x, "avg", 3, 2, pad_mode=mode))


@pytest.mark.parametrize("call, message", [
    (lambda x: ops.max_pool2d(x, 7), "larger than the padded input"),
    (lambda x: ops.avg_pool2d(x[0], 2), "4-D input"),
    (lambda x: ops.max_pool2d(x, 2, padding=2), "at most half of the kernel size"),
    (lambda x: ops.max_pool2d(x, 0), "must be positive"),
])
def test_pool_bad_shapes_are_value_errors(call, message):
    x = T(np.ones((1, 2, 5, 5), np.float32))
    with pytest.raises(ValueError, match="pool2d") as e:
        call(x)
    assert message in str(e.value)


# ---- normalisation ----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5, 5), (1, 2, 3), (3, 4, 2, 2, 2)])
def test_batch_norm_inference_matches_numpy(rng, dtype, shape):
    c = shape[1]
    x = rand(rng, shape, dtype)
    mean, gamma, beta = (rand(rng, (c,), dtype) for _ in range(3))
    var = (rng.random(c) + 0.5).astype(dtype)
    got = ops.batch_norm(T(x), T(mean), T(var), T(gamma), T(beta), eps=1e-3)
    close(got, ref.batch_norm(x, mean, var, gamma, beta, eps=1e-3))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batch_norm_training_uses_batch_statistics_and_updates_running_ones(rng, dtype):
    x = rand(rng, (4, 3, 5, 5), dtype)
    mean0, var0 = rand(rng, (3,), dtype), (rng.random(3) + 0.5).astype(dtype)
    gamma, beta = rand(rng, (3,), dtype), rand(rng, (3,), dtype)
    rm, rv = T(mean0.copy()), T(var0.copy())
    got = ops.batch_norm(T(x), rm, rv, T(gamma), T(beta), training=True, momentum=0.2)
    bm, bv = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
    close(got, ref.batch_norm(x, bm, bv, gamma, beta))
    close(rm, (0.8 * mean0 + 0.2 * bm).astype(dtype))
    close(rv, (0.8 * var0 + 0.2 * x.var(axis=(0, 2, 3), ddof=1)).astype(dtype))


def test_batch_norm_errors_name_the_operand_and_shapes():
    x = T(np.ones((2, 3, 4, 4), np.float32))
    ok, bad = T(np.ones(3, np.float32)), T(np.ones(4, np.float32))
    with pytest.raises(ValueError, match=r"batch_norm: variance of shape \(4,\) does not match input \(2, 3, 4, 4\)"):
        ops.batch_norm(x, ok, bad, ok, ok)
    with pytest.raises(TypeError, match="weight \\(gamma\\) has dtype Float64"):
        ops.batch_norm(x, ok, ok, T(np.ones(3)), ok)
    with pytest.raises(ValueError, match="more than one value per channel"):
        ops.batch_norm(T(np.ones((1, 3), np.float32)), ok, ok, ok, ok, training=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, normalized", [((4, 6), (6,)), ((2, 3, 5), (5,)),
                                               ((2, 3, 4, 4), (3, 4, 4)), ((3, 2, 4), (2, 4))])
@pytest.mark.parametrize("affine", [(True, True), (False, False), (True, False)])
def test_layer_norm_matches_numpy(rng, dtype, shape, normalized, affine):
    x = rand(rng, shape, dtype)
    gamma = rand(rng, normalized, dtype) if affine[0] else None
    beta = rand(rng, normalized, dtype) if affine[1] else None
    got = ops.layer_norm(T(x), normalized, None if gamma is None else T(gamma),
                         None if beta is None else T(beta), eps=1e-4)
    close(got, ref.layer_norm(x, normalized, gamma, beta, eps=1e-4))


def test_layer_norm_errors():
    x = T(np.ones((2, 3, 4), np.float32))
    with pytest.raises(ValueError, match=r"layer_norm: normalized_shape \(3,\) must .* input \(2, 3, 4\)"):
        ops.layer_norm(x, (3,))
    with pytest.raises(ValueError, match=r"weight \(gamma\) of shape \(3,\)"):
        ops.layer_norm(x, 4, T(np.ones(3, np.float32)))


# ---- one_hot and assign -----------------------------------------------------------------------

def test_one_hot_matches_numpy():
    idx = np.array([[0, 2], [1, 5]], np.int32)
    got = ops.one_hot(T(idx), 3, 1.0, 0.0)
    np.testing.assert_array_equal(got.asnumpy(), (np.arange(3) == idx[..., None]).astype(np.float32))
    got0 = ops.one_hot(T(idx), 3, 5, -1, axis=0, dtype=ms.int64)
    np.testing.assert_array_equal(got0.asnumpy(), np.where(np.arange(3)[:, None, None] == idx, 5, -1))


def test_assign_writes_in_place_and_returns_the_variable():
    v = ms.Parameter(T(np.zeros(3, np.float32)), name="v")
    r = ops.assign(v, T(np.array([1.0, 2.0, 3.0], np.float32)))
    np.testing.assert_array_equal(v.asnumpy(), [1, 2, 3])
    np.testing.assert_array_equal(r.asnumpy(), [1, 2, 3])
    ops.assign(v, 7.0)
    np.testing.assert_array_equal(v.asnumpy(), [7, 7, 7])
    with pytest.raises(ValueError, match="assign"):
        ops.assign(v, T(np.zeros(4, np.float32)))


# ---- capture ----------------------------------------------------------------------------------

# Primitives are made outside the captured functions (as a Cell's __init__ does).
PRIMITIVES = {"CONV": ops.Conv2D(4, 3, pad_mode="same"),
              "MAXPOOL": ops.MaxPool(kernel_size=3, strides=2, pad_mode="same"),
              "AVGPOOL": ops.AvgPool(kernel_size=2, strides=2)}


def _function(expr, params):
    namespace = {}
    exec(f"def f({params}):\n    return {expr}\n", {"ops": ops, "ms": ms, **PRIMITIVES}, namespace)
    return namespace["f"]


CAPTURE_CASES = {
    "conv2d": ("ops.conv2d(x, w, ops.concat((b, b[:1])), stride=2, pad_mode='pad', padding=1)", "x, w, b"),
    "conv2d_same_relu": ("ops.relu(ops.conv2d(x, w, pad_mode='same')) + 1.0", "x, w, b"),
    "conv2d_primitive": ("CONV(x, w)", "x, w, b"),
    "max_pool2d": ("ops.max_pool2d(x, 2, 2)", "x, w, b"),
    "avg_pool2d": ("ops.avg_pool2d(x, 3, 1, 1, count_include_pad=False)", "x, w, b"),
    "max_pool_primitive": ("MAXPOOL(x)", "x, w, b"),
    "avg_pool_primitive": ("AVGPOOL(x)", "x, w, b"),
    "batch_norm": ("ops.batch_norm(x, b, b * b + 1.0, b, b, eps=1e-3)", "x, w, b"),
    "layer_norm": ("ops.layer_norm(x, (6, 6), eps=1e-6)", "x, w, b"),
    "layer_norm_affine": ("ops.layer_norm(x, 6, b[:1].broadcast_to((6,)), b[1:2].broadcast_to((6,)))", "x, w, b"),
    "one_hot": ("ops.one_hot(ops.argmax(x, 1), 3)", "x, w, b"),
    "dropout_eval": ("ops.dropout(x, 0.5, training=False)", "x, w, b"),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(CAPTURE_CASES))
def test_layer_op_is_captured_once_and_matches_eager(rng, dtype, name):
    expr, params = CAPTURE_CASES[name]
    f = _function(expr, params)
    x = T(rand(rng, (2, 3, 6, 6), dtype))
    w = T(rand(rng, (4, 3, 3, 3), dtype))
    b = T(rand(rng, (3,), dtype))
    eager = f(x, w, b)
    jitted = ms.jit(f, mode="PIJit")
    for _ in range(2):
        got = jitted(x, w, b)
        if name == "batch_norm":
            # Compiled graphs apply it as its affine map (graph/passes/batch_norm_affine.h),
            # the scale rounded once: within rounding of the output's magnitude.
            want = eager.asnumpy()
            rel = 1e-5 if dtype == np.float32 else 1e-12
            assert got.dtype == eager.dtype and got.shape == eager.shape
            np.testing.assert_allclose(got.asnumpy(), want, rtol=rel, atol=rel * np.abs(want).max())
        else:
            assert_same_result(got, eager)
    stats = ms.get_code_extra(jitted)
    assert stats["compile_count"] == 1, stats
    assert stats["reasons"] == [], stats["reasons"]


def test_dropout_in_training_draws_like_eager():
    f = _function("ops.dropout(x, 0.25)", "x")
    x = T(np.ones((4, 50), np.float32))
    ms.set_seed(5)
    eager = [f(x) for _ in range(2)]
    jitted = ms.jit(f, mode="PIJit")
    ms.set_seed(5)
    captured = [jitted(x) for _ in range(2)]
    for a, b in zip(eager, captured):
        assert_same_result(a, b)
    kept = eager[0].asnumpy()
    assert set(np.unique(kept)) <= {0.0, np.float32(1 / 0.75)}
    assert 0.5 < (kept > 0).mean() < 0.95
    assert ms.get_code_extra(jitted)["compile_count"] == 1


def test_captured_training_batch_norm_updates_running_stats_like_eager(rng):
    f = _function("ops.batch_norm(x, m, v, g, b, training=True, momentum=0.3)", "x, m, v, g, b")
    x = T(rand(rng, (4, 3, 2, 2), np.float32))
    g, b = T(rand(rng, (3,), np.float32)), T(rand(rng, (3,), np.float32))
    m0, v0 = rand(rng, (3,), np.float32), (rng.random(3) + 1).astype(np.float32)
    me, ve = T(m0.copy()), T(v0.copy())
    mj, vj = T(m0.copy()), T(v0.copy())
    jitted = ms.jit(f, mode="PIJit")
    for _ in range(3):
        assert_same_result(jitted(x, mj, vj, g, b), f(x, me, ve, g, b))
        assert_same_result(mj, me)
        assert_same_result(vj, ve)
    assert not np.allclose(mj.asnumpy(), m0)
    assert ms.get_code_extra(jitted)["compile_count"] == 1


def test_captured_layer_op_errors_match_eager_errors():
    f = _function("ops.conv2d(x, w)", "x, w")
    x, w = T(np.ones((1, 3, 5, 5), np.float32)), T(np.ones((2, 4, 3, 3), np.float32))
    with pytest.raises(ValueError) as eager:
        f(x, w)
    with pytest.raises(ValueError) as jitted:
        ms.jit(f, mode="PIJit")(x, w)
    assert str(eager.value) == str(jitted.value)


@pytest.mark.parametrize("copy, is_view", [
    (lambda p: p * 1.0, False), (lambda p: 1.0 * p, False), (lambda p: p / 1.0, False),
    (lambda p: p + (-0.0), False), (lambda p: p.reshape(p.shape), True),
    (lambda p: ops.transpose(ops.transpose(p, (1, 0)), (1, 0)), True),
])
def test_a_value_computed_from_a_variable_reads_as_eagerly_after_the_variable_is_assigned(
        copy, is_view):
    def run(jitted):
        p = ms.Parameter(ms.Tensor(np.ones((2, 3), np.float32)), name="p")

        def f(x):
            before = copy(p)  # an identity the graph simplifier would fold to the variable
            ops.assign(p, x)
            return before

        fn = f
        if jitted:
            fn = ms.jit(f)
            ms.reset(fn)
        got = fn(ms.Tensor(np.full((2, 3), 5.0, np.float32))).asnumpy()
        np.testing.assert_array_equal(p.asnumpy(), np.full((2, 3), 5.0))
        return got

    eager = run(False)
    # Arithmetic makes a new tensor; a reshape or transpose is a view of the variable.
    np.testing.assert_array_equal(eager, np.full((2, 3), 5.0 if is_view else 1.0))
    np.testing.assert_array_equal(run(True), eager)
