"""Whole networks: the seed's LeNet-5 (shared/seeds/001, MindSpore's r1.6 notebook on dynamic
and static graphs) runs eagerly, in GRAPH_MODE and under @jit with the same outputs."""
import numpy as np
import pytest

import pijit as ms
import pijit.nn as nn
from pijit_testutil import assert_close_result
import nn_reference as ref
from seed_lenet import LeNet5


@pytest.fixture(autouse=True)
def pynative_after():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def lenet_numpy(net, x):
    p = {name: t.asnumpy() for name, t in net.parameters_and_names()}
    relu = lambda v: np.maximum(v, 0)  # noqa: E731
    h = ref.pool2d(relu(ref.conv2d(x, p["conv1.weight"])), "max", 2, 2)
    h = ref.pool2d(relu(ref.conv2d(h, p["conv2.weight"])), "max", 2, 2)
    h = h.reshape(h.shape[0], -1)
    h = relu(h @ p["fc1.weight"].T + p["fc1.bias"])
    h = relu(h @ p["fc2.weight"].T + p["fc2.bias"])
    return h @ p["fc3.weight"].T + p["fc3.bias"]


def test_lenet5_gives_identical_outputs_in_both_modes():
    ms.set_seed(0)
    net = LeNet5()
    x = ms.Tensor(np.random.default_rng(0).standard_normal((32, 1, 32, 32)).astype(np.float32))
    eager = net(x)
    assert eager.shape == (32, 10)
    np.testing.assert_allclose(eager.asnumpy(), lenet_numpy(net, x.asnumpy()), rtol=1e-4, atol=1e-6)

    ms.reset(LeNet5.construct)
    ms.set_context(mode=ms.GRAPH_MODE)
    graph = [net(x), net(x)]
    stats = ms.get_code_extra(LeNet5.construct)
    assert stats["compile_count"] == 1 and stats["cache_hits"] == 1 and stats["reasons"] == []
    assert len(stats["graphs"]) == 1 and "conv2d" in stats["graphs"][0]
    for g in graph:
        assert_close_result(g, eager)

    ms.set_context(mode=ms.PYNATIVE_MODE)

    @ms.jit(mode="PIJit")
    def forward(net, x):
        return net(x)

    for _ in range(2):
        assert_close_result(forward(net, x), eager)
    assert ms.get_code_extra(forward)["compile_count"] == 1


def test_lenet5_seed_example_input_and_sparse_loss():
    """The seed's inputs: ones * 0.01 and labels 1; untrained, the mean loss is near ln 10."""
    ms.set_seed(1)
    net = LeNet5()
    criterion = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction='mean')
    input_data = ms.Tensor(np.ones([32, 1, 32, 32]).astype(np.float32) * 0.01)
    label = ms.Tensor(np.ones([32]).astype(np.int32))
    eager = criterion(net(input_data), label)

    class WithLoss(nn.Cell):
        def __init__(self, backbone, loss_fn):
            super().__init__(auto_prefix=False)
            self._backbone, self._loss_fn = backbone, loss_fn

        def construct(self, data, label):
            return self._loss_fn(self._backbone(data), label)

    ms.set_context(mode=ms.GRAPH_MODE)
    graph = WithLoss(net, criterion)(input_data, label)
    assert_close_result(graph, eager)
    np.testing.assert_allclose(eager.asnumpy(), np.log(10), rtol=1e-3)


def test_lenet5_parameters_follow_mindspore_naming():
    net = LeNet5()
    assert [n for n, _ in net.parameters_and_names()] == [
        "conv1.weight", "conv2.weight", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias",
        "fc3.weight", "fc3.bias"]
    assert all(p.requires_grad for p in net.trainable_params())
    assert net.fc1.weight.shape == (120, 400) and net.conv2.weight.shape == (16, 6, 5, 5)
