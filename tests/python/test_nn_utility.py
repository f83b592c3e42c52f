"""The Cells of pijit/nn/layers/utility.py and the WithEvalCell / WithGradCell wrappers
against NumPy references written here, each Cell run eagerly and in GRAPH_MODE-style jit
(one graph), gradients against central differences, and the metrics nn re-exports."""
import numpy as np
import pytest

import pijit as ms
from pijit import nn
from mint_testutil import T, check_against_numpy, same

R = np.random.default_rng(137)
X4 = R.normal(size=(2, 3, 4, 5))
M = R.normal(size=(3, 4))

# (id, the Cell, its call's arguments, the NumPy reference of them, differentiable)
CASES = [
    ("ZeroPad2d", nn.ZeroPad2d((1, 0, 2, 1)), [X4],
     lambda x: np.pad(x, ((0, 0), (0, 0), (2, 1), (1, 0))), True),
    ("ConstantPad1d", nn.ConstantPad1d(2, 3.5), [M],
     lambda x: np.pad(x, ((0, 0), (2, 2)), constant_values=3.5), True),
    ("ConstantPad2d", nn.ConstantPad2d((0, 1, 1, 0), -1.0), [X4],
     lambda x: np.pad(x, ((0, 0), (0, 0), (1, 0), (0, 1)), constant_values=-1.0), True),
    ("ConstantPad3d", nn.ConstantPad3d(1, 0.5), [X4],
     lambda x: np.pad(x, ((0, 0), (1, 1), (1, 1), (1, 1)), constant_values=0.5), True),
    ("ReflectionPad1d", nn.ReflectionPad1d((2, 1)), [M],
     lambda x: np.pad(x, ((0, 0), (2, 1)), "reflect"), True),
    ("ReflectionPad2d", nn.ReflectionPad2d(1), [X4],
     lambda x: np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), "reflect"), True),
    ("Roll", nn.Roll(2, 1), [M], lambda x: np.roll(x, 2, 1), True),
    ("Tril", nn.Tril(), [M], np.tril, True),
    ("Triu", nn.Triu(), [M], np.triu, True),
    ("MatrixDiag", nn.MatrixDiag(), [M], lambda x: np.stack([np.diag(r) for r in x]), True),
    ("MatrixDiagPart", nn.MatrixDiagPart(), [X4], lambda x: np.einsum("abii->abi", x[..., :4]),
     True),
    ("MatrixSetDiag", nn.MatrixSetDiag(), [M, M[:, 0]],
     lambda x, d: np.where(np.eye(3, 4) > 0, d[:, None], x), True),
    ("Norm", nn.Norm(axis=1, keep_dims=True), [M],
     lambda x: np.linalg.norm(x, axis=1, keepdims=True), True),
    ("Norm_all", nn.Norm(), [M], np.linalg.norm, True),
    ("Moments", nn.Moments(axis=(0, 2), keep_dims=True), [X4],
     lambda x: (x.mean((0, 2), keepdims=True), x.var((0, 2), keepdims=True)), False),
    ("ClipByNorm", lambda x: nn.ClipByNorm(axis=1)(x, T(np.array(1.0))), [M],
     lambda x: x * 1.0 / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1.0), True),
    ("L1Regularizer", nn.L1Regularizer(0.5), [M], lambda x: 0.5 * np.abs(x).sum(), True),
    ("ImageGradients", nn.ImageGradients(), [X4],
     lambda x: (np.concatenate([np.diff(x, axis=2), np.zeros((2, 3, 1, 5))], 2),
                np.concatenate([np.diff(x, axis=3), np.zeros((2, 3, 4, 1))], 3)), False),
    ("CentralCrop", nn.CentralCrop(0.5), [X4], lambda x: x[..., 1:3, 1:4], True),
    ("LRN", nn.LRN(1, 1.0, 0.5, 0.75), [X4],
     lambda x: x / (1.0 + 0.5 * np.stack([(x[:, max(0, c - 1):c + 2] ** 2).sum(1)
                                          for c in range(3)], 1)) ** 0.75, True),
    ("CosineEmbeddingLoss", lambda a, b: nn.CosineEmbeddingLoss(0.1)(a, b, LABELS), [M, M[::-1]],
     lambda a, b: np.where(np.array([1, -1, 1]) == 1, 1 - _cos(a, b),
                           np.maximum(_cos(a, b) - 0.1, 0)).mean(), True),
    ("RMSELoss", lambda a, b: nn.RMSELoss()(a, b), [M, M * 0.5],
     lambda a, b: np.sqrt(((a - b) ** 2).mean()), True),
    ("TimeDistributed", nn.TimeDistributed(nn.Dense(5, 2, weight_init="ones", bias_init="zeros"),
                                           time_axis=1), [X4[:, :, 0]],
     lambda x: np.repeat(x.sum(-1, keepdims=True), 2, -1), True),
]
LABELS = T(np.array([1, -1, 1]))


def _cos(a, b):
    return (a * b).sum(1) / np.sqrt((a * a).sum(1) * (b * b).sum(1))


@pytest.mark.parametrize("name, cell, inputs, reference, differentiable", CASES,
                         ids=[c[0] for c in CASES])
def test_against_numpy_jitted_and_gradient(name, cell, inputs, reference, differentiable):
    check_against_numpy(cell, reference, inputs, differentiable)


def test_one_hot_range_and_rrelu():
    same(nn.OneHot(depth=4)(T(np.array([0, 3, 1]))), np.eye(4, dtype=np.float32)[[0, 3, 1]])
    same(nn.OneHot(axis=0, depth=3, on_value=2.0, off_value=-1.0, dtype=ms.float64)(
        T(np.array([2, 0]))), np.where(np.eye(3)[[2, 0]].T > 0, 2.0, -1.0))
    same(nn.Range(5)(), np.arange(5))
    same(nn.Range(1, 2, 0.25)(), np.arange(1, 2, 0.25, dtype=np.float32))
    layer = nn.RReLU(0.1, 0.3)
    x = R.normal(size=2000)
    slopes = layer(T(x)).asnumpy()[x < 0] / x[x < 0]
    assert slopes.min() >= 0.1 - 1e-12 and slopes.max() <= 0.3 + 1e-12
    layer.set_train(False)
    same(layer(T(x)), np.where(x >= 0, x, 0.2 * x))
    with pytest.raises(ValueError, match="padding"):
        nn.ConstantPad2d((1, 2, 3), 0.0)
    with pytest.raises(ValueError, match="delta"):
        nn.Range(0, 5, 0)
    with pytest.raises(ValueError, match="central_fraction"):
        nn.CentralCrop(0.0)


def test_eval_and_grad_wrappers():
    net = nn.Dense(3, 2, weight_init="ones", bias_init="zeros")
    # Dense's parameters are Float32: the data is too, and the references are computed in
    # float64 from the same values.
    x, y = R.normal(size=(4, 3)).astype(np.float32), R.normal(size=(4, 2)).astype(np.float32)
    loss, outputs, label = nn.WithEvalCell(net, nn.MSELoss())(T(x), T(y))
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    out = xd @ np.ones((3, 2))
    same((loss, outputs, label), (((out - yd) ** 2).mean(), out, yd), dtype=np.float32,
         rtol=1e-5)
    grads = nn.WithGradCell(net, nn.MSELoss())(T(x), T(y))
    same(grads[0], 2 * (out - yd).T @ xd / out.size, dtype=np.float32, rtol=1e-5, atol=1e-6)
    same(grads[1], 2 * (out - yd).sum(0) / out.size, dtype=np.float32, rtol=1e-5, atol=1e-6)
    plain = nn.WithGradCell(net)(T(x))  # seeded with ones
    same(plain[0], np.ones((2, 4)) @ xd, dtype=np.float32, rtol=1e-5)


def test_metrics_are_reexported():
    from pijit.train import metrics
    for name in ("Accuracy", "F1", "MAE", "MSE", "Precision", "Recall", "TopKCategoricalAccuracy"):
        assert getattr(nn, name) is getattr(metrics, name)
    accuracy = nn.Accuracy()
    accuracy.update(T(np.array([[0.9, 0.1], [0.2, 0.8]])), T(np.array([0, 0])))
    assert accuracy.eval() == 0.5
