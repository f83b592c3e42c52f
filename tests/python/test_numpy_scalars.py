"""NumPy scalars and 0-d arrays are taken as the numbers they hold wherever pijit takes a
Python number, as MindSpore and NumPy take them: initializer parameters, layer sizes, shapes,
axes, fill values and ops' scalar arguments, eagerly and inside captured code. As tensor
operands they stay 0-d tensors of their own dtype."""
import numpy as np
import pytest

import pijit as ms
from pijit import nn, ops
from pijit.common.initializer import (Constant, HeNormal, HeUniform, Normal, Uniform,
                                      XavierUniform, initializer)

NP_INTS = [np.int64, np.int32, np.int16, np.uint8, lambda v: np.array(v)]
NP_FLOATS = [np.float64, np.float32, lambda v: np.array(v)]


def X():
    return ms.Tensor(np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5)


@pytest.mark.parametrize("make", NP_FLOATS, ids=["float64", "float32", "0-d array"])
def test_initializers_take_numpy_floats(make):
    ms.set_seed(3)
    want = initializer(Normal(sigma=0.5, mean=0.25), (64, 32), ms.float32).asnumpy()
    ms.set_seed(3)
    got = initializer(Normal(sigma=make(0.5), mean=make(0.25)), (64, 32), ms.float32).asnumpy()
    np.testing.assert_array_equal(got, want)
    for init in (Uniform(scale=make(0.5)), XavierUniform(gain=make(2.0)),
                 HeNormal(negative_slope=make(0.0)), HeUniform(negative_slope=make(0.1))):
        ms.set_seed(5)
        a = init((8, 4), ms.float32).asnumpy()
        plain = type(init)(**{k: float(v) for k, v in init._kwargs.items()
                              if not isinstance(v, str)})
        ms.set_seed(5)
        np.testing.assert_array_equal(a, plain((8, 4), ms.float32).asnumpy())
    c = initializer(Constant(make(1.5)), [2, 3], ms.float32)
    np.testing.assert_array_equal(c.asnumpy(), np.full((2, 3), 1.5, np.float32))
    assert initializer(make(2.0), (3,), ms.float32).asnumpy().tolist() == [2.0, 2.0, 2.0]


def test_efficientnet_style_initializer_builds():
    # mindcv's EfficientNet: Normal(sigma=np.sqrt(2.0 / fan_out)) with fan_out an int.
    fan_out = 3 * 3 * 32
    w = initializer(Normal(sigma=np.sqrt(2.0 / fan_out)), (32, 16, 3, 3), ms.float32)
    assert w.shape == (32, 16, 3, 3)
    assert abs(float(w.asnumpy().std()) - np.sqrt(2.0 / fan_out)) < 0.01


@pytest.mark.parametrize("make", NP_INTS, ids=["int64", "int32", "int16", "uint8", "0-d array"])
def test_layer_sizes_take_numpy_ints(make):
    ms.set_seed(1)
    d = nn.Dense(make(3), make(4))
    assert d.weight.shape == (4, 3) and isinstance(d.in_channels, int)
    c = nn.Conv2d(make(2), make(4), make(3), stride=make(1), pad_mode="pad", padding=make(1),
                  group=make(2))
    assert c.weight.shape == (4, 1, 3, 3) and c.kernel_size == (3, 3)
    c2 = nn.Conv2d(2, 4, (make(3), make(2)), stride=(make(2), 1))
    assert c2.weight.shape == (4, 2, 3, 2) and c2.stride == (2, 1)
    bn = nn.BatchNorm2d(make(4), momentum=np.float32(0.9), eps=np.float64(1e-3))
    assert bn.gamma.shape == (4,) and isinstance(bn.eps, float)
    ln = nn.LayerNorm((make(3),))
    assert ln.gamma.shape == (3,)
    emb = nn.Embedding(make(10), make(3), padding_idx=make(0))
    assert emb.embedding_table.shape == (10, 3)
    assert nn.MaxPool2d(kernel_size=make(2), stride=make(2)).kernel_size == (2, 2)
    assert nn.AvgPool2d(kernel_size=make(3), stride=make(1)).stride == (1, 1)
    assert abs(nn.Dropout(p=np.float32(0.25)).p - 0.25) < 1e-7


def test_a_dense_layer_with_numpy_sizes_computes_as_with_python_ones():
    ms.set_seed(9)
    a = nn.Dense(np.int64(3), np.int64(2))
    ms.set_seed(9)
    b = nn.Dense(3, 2)
    x = X()
    np.testing.assert_array_equal(a(x).asnumpy(), b(x).asnumpy())


def test_bad_numpy_values_still_raise_clear_errors():
    with pytest.raises(ValueError, match="in_channels must be a positive int"):
        nn.Dense(np.float32(3.0), 2)
    with pytest.raises(ValueError, match="in_channels must be a positive int"):
        nn.Dense(np.int64(-1), 2)
    with pytest.raises(TypeError, match="axis must be an int or a tuple of ints, got float"):
        X().sum(axis=np.float64(0.0))
    with pytest.raises(TypeError, match="size must be an int or a tuple of ints"):
        ops.zeros((np.float32(2), 3))
    with pytest.raises(ValueError):
        nn.Dense(np.array([3, 4]), 2)  # not 0-d: not a number


def eager_and_jitted(fn, *args):
    want = fn(*args)
    jf = ms.jit(fn, mode="PIJit")
    ms.reset(jf)
    for _ in range(2):
        got = jf(*args)
        np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())
    return want


def test_axes_shapes_and_fill_values_take_numpy_numbers():
    x = X()
    xn = x.asnumpy()
    checks = [
        (lambda t: t.sum(axis=np.int64(0)), xn.sum(axis=0)),
        (lambda t: ops.sum(t, np.int32(1)), xn.sum(axis=1)),
        (lambda t: t.mean(axis=(np.int64(0), np.int32(1))), xn.mean()),
        (lambda t: ops.softmax(t, np.int64(-1)).sum(axis=-1), np.ones(2, np.float32)),
        (lambda t: t.argmax(axis=np.array(1)), xn.argmax(axis=1)),
        (lambda t: ops.concat((t, t), np.int64(0)), np.concatenate([xn, xn], 0)),
        (lambda t: ops.stack((t, t), np.int64(1)), np.stack([xn, xn], 1)),
        (lambda t: ops.expand_dims(t, np.int64(0)), xn[None]),
        (lambda t: t.reshape(np.int64(3), np.int64(2)), xn.reshape(3, 2)),
        (lambda t: ops.reshape(t, (np.int64(3), np.int32(2))), xn.reshape(3, 2)),
        (lambda t: ops.transpose(t, (np.int64(1), np.int64(0))), xn.T),
        (lambda t: ops.broadcast_to(t, (np.int64(2), np.int64(2), 3)), np.broadcast_to(xn, (2, 2, 3))),
        (lambda t: ops.flatten(t, start_dim=np.int64(0)), xn.reshape(-1)),
        (lambda t: t + ops.full((2, 3), np.float64(1.5)), xn + 1.5),
        (lambda t: t + ops.full((np.int64(2), 3), 1.5), xn + 1.5),
        (lambda t: t + ops.zeros((np.int64(2), np.int32(3))), xn),
        (lambda t: t[0] + ops.ones(np.int64(3)), xn[0] + 1),
        (lambda t: ops.clip(t, np.float32(-1.0), np.array(1.0)), np.clip(xn, -1, 1)),
        (lambda t: ops.ReduceSum(keep_dims=np.bool_(True))(t, np.int64(1)), xn.sum(1, keepdims=True)),
        (lambda t: t[0] * ops.arange(np.int64(0), np.int64(3)).astype(ms.float32), xn[0] * np.arange(3)),
    ]
    for fn, want in checks:
        got = eager_and_jitted(fn, x)
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6)


def test_numpy_scalars_captured_as_constants_and_globals():
    axis = np.int64(1)
    scale = np.float32(0.5)

    def f(t):
        return t.sum(axis=axis) * scale + ops.full((np.int64(2),), np.float64(2.0))

    got = eager_and_jitted(f, X())
    np.testing.assert_allclose(got.asnumpy(), X().asnumpy().sum(1) * 0.5 + 2.0, rtol=1e-6)


def test_numpy_scalar_operands_keep_their_dtype():
    x = ms.Tensor(np.ones(3, np.float32))
    # A NumPy float64 scalar is not weak: float32 * float64 is float64, as in NumPy.
    assert (x * np.float64(2.0)).dtype == ms.float64
    assert ops.mul(x, np.float64(2.0)).dtype == ms.float64
    # A Python float is weak.
    assert (x * 2.0).dtype == ms.float32


def test_grad_position_takes_numpy_ints():
    def f(a, b):
        return (a * b).sum()

    a, b = X(), X() + 1.0
    ga = ms.grad(f, grad_position=np.int64(1))(a, b)
    np.testing.assert_array_equal(ga.asnumpy(), a.asnumpy())
    gs = ms.grad(f, grad_position=(np.int32(0), np.int64(1)))(a, b)
    np.testing.assert_array_equal(gs[0].asnumpy(), b.asnumpy())
