"""BatchNorm3d, BiDense, EmbeddingLookup, ParameterUpdate and PSNR (pijit/nn/layers/extra.py)
against NumPy references written here, eager and jitted as one graph, with gradients
against central differences where the layer is differentiable."""
import numpy as np
import pytest

import pijit as ms
from pijit import nn
from mint_testutil import T, grad_matches, jitted_matches, same

R = np.random.default_rng(149)


def test_batch_norm_3d_training_and_evaluation():
    x = R.normal(size=(2, 3, 2, 3, 4)).astype(np.float32)
    layer = nn.BatchNorm3d(3, momentum=0.8)
    out = layer(T(x)).asnumpy()  # evaluation: moving statistics 0 and 1
    np.testing.assert_allclose(out, x / np.sqrt(1 + 1e-5), rtol=1e-6)
    layer.set_train()
    out = layer(T(x)).asnumpy()
    mean, var = x.mean((0, 2, 3, 4)), x.var((0, 2, 3, 4))
    shape = (1, 3, 1, 1, 1)
    np.testing.assert_allclose(out, (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + 1e-5),
                               rtol=1e-4, atol=1e-5)
    count = x.size / 3
    np.testing.assert_allclose(layer.moving_mean.asnumpy(), 0.2 * mean, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(layer.moving_variance.asnumpy(),
                               0.8 + 0.2 * var * count / (count - 1), rtol=1e-5)
    with pytest.raises(ValueError, match="NCDHW"):
        nn.BatchNorm3d(3, data_format="NDHWC")


def test_bidense():
    layer = nn.BiDense(3, 4, 2, weight_init="normal", bias_init="normal", dtype=ms.float64)
    x1, x2 = R.normal(size=(5, 3)), R.normal(size=(5, 4))
    w, b = layer.weight.asnumpy(), layer.bias.asnumpy()
    want = np.einsum("bi,oij,bj->bo", x1, w, x2) + b
    same(layer(T(x1), T(x2)), want, rtol=1e-10)
    same(layer(T(x1[0]), T(x2[0])), want[0], rtol=1e-10)
    t2 = T(x2)
    grad_matches(lambda a: layer(a, t2), x1)
    jitted_matches(lambda a, c: layer(a, c), T(x1), T(x2))
    bound = 1 / np.sqrt(3)
    default = nn.BiDense(3, 4, 2)
    assert default.weight.shape == (2, 3, 4) and np.abs(default.weight.asnumpy()).max() <= bound
    with pytest.raises(ValueError, match="in1_channels"):
        nn.BiDense(0, 4, 2)


def test_embedding_lookup_and_max_norm():
    layer = nn.EmbeddingLookup(6, 3, param_init="normal")
    table = layer.embedding_table.asnumpy()
    ids = np.array([[0, 5], [2, 2]])
    same(layer(T(ids)), table[ids])
    clipped = nn.EmbeddingLookup(6, 3, param_init=T(np.arange(18.0).reshape(6, 3)), max_norm=5.0,
                                 dtype=ms.float64)
    rows = np.arange(18.0).reshape(6, 3)[ids]
    norms = np.linalg.norm(rows, axis=-1, keepdims=True)
    same(clipped(T(ids)), rows * np.minimum(5.0 / norms, 1.0), rtol=1e-12)
    jitted_matches(lambda i: clipped(i), T(ids))


def test_parameter_update_and_psnr():
    p = ms.Parameter(np.zeros(3), name="p")
    update = nn.ParameterUpdate(p)
    update(T(np.array([1.0, 2.0, 3.0])))
    same(p, np.array([1.0, 2.0, 3.0]))
    with pytest.raises(TypeError, match="Parameter"):
        nn.ParameterUpdate(T(np.zeros(3)))
    a, b = R.uniform(size=(2, 3, 4, 4)), R.uniform(size=(2, 3, 4, 4))
    mse = ((a - b) ** 2).mean((1, 2, 3))
    same(nn.PSNR(max_val=2.0)(T(a), T(b)), 10 * np.log10(4.0 / mse), rtol=1e-12)
    jitted_matches(lambda x, y: nn.PSNR()(x, y), T(a), T(b))
