"""Cell registration and traversal, Parameter/ParameterTuple, and the initializers."""
import math

import numpy as np
import pytest

import pijit as ms
from pijit import nn, ops
from pijit.common import initializer as init
from pijit.common.initializer import (HeNormal, HeUniform, Normal, One, Uniform, XavierUniform,
                                      Zero, initializer)

T = ms.Tensor


@pytest.fixture(autouse=True)
def pynative_after():
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


class Block(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(3, 3)
        self.bn = nn.BatchNorm2d(3)
        self.scale = ms.Parameter(T(np.ones(3, np.float32)))

    def construct(self, x):
        return self.fc(x) * self.scale


class Outer(nn.Cell):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.head = nn.Dense(3, 2)

    def construct(self, x):
        return self.head(self.block(x))


def test_nested_parameters_are_named_by_their_path():
    # A cell's own parameters come before its sub-cells' (MindSpore's order).
    net = Outer()
    names = [n for n, _ in net.parameters_and_names()]
    assert names == ["block.scale", "block.fc.weight", "block.fc.bias", "block.bn.moving_mean",
                     "block.bn.moving_variance", "block.bn.gamma", "block.bn.beta",
                     "head.weight", "head.bias"]
    assert [p.name for p in net.get_parameters()] == [
        "block.scale", "block.fc.weight", "block.fc.bias", "block.bn.moving_mean", "block.bn.moving_variance",
        "block.bn.gamma", "block.bn.beta", "head.weight", "head.bias"]


def test_trainable_params_leave_out_moving_statistics():
    net = Outer()
    trainable = [p.name for p in net.trainable_params()]
    assert "block.bn.moving_mean" not in trainable and "block.bn.gamma" in trainable
    assert len(trainable) == 7
    assert [p.name for p in net.untrainable_params()] == ["block.bn.moving_mean", "block.bn.moving_variance"]


def test_auto_prefix_false_keeps_child_names():
    class Wrap(nn.Cell):
        def __init__(self, net):
            super().__init__(auto_prefix=False)
            self.network = net
            self.weights = ms.ParameterTuple(net.trainable_params())

        def construct(self, x):
            return self.network(x)

    net = Outer()
    wrap = Wrap(net)
    assert [p.name for p in wrap.get_parameters()][:2] == ["block.scale", "block.fc.weight"]
    assert isinstance(wrap.weights, ms.ParameterTuple) and len(wrap.weights) == 7
    assert list(wrap.cells()) == [net]


def test_cells_set_train_and_repr():
    net = Outer()
    assert [type(c).__name__ for c in net.cells()] == ["Block", "Dense"]
    assert [n for n, _ in net.cells_and_names()] == ["", "block", "block.fc", "block.bn", "head"]
    assert net.set_train() is net
    assert all(c.training for _, c in net.cells_and_names())
    net.set_train(False)
    assert not any(c.training for _, c in net.cells_and_names())
    text = repr(net)
    assert text.startswith("Outer<\n  (block): Block<\n    (fc): Dense<input_channels=3, output_channels=3")
    assert "(head): Dense<input_channels=3, output_channels=2, has_bias=True>" in text
    assert repr(nn.ReLU()) == "ReLU<>"


def test_reassigning_or_deleting_an_attribute_updates_registration():
    net = nn.Dense(2, 2)
    net.bias = None
    assert [n for n, _ in net.parameters_and_names()] == ["weight"]
    net.extra = ms.Parameter(T(np.zeros(2, np.float32)))
    del net.extra
    assert [n for n, _ in net.parameters_and_names()] == ["weight"]


def test_cell_list_registers_cells_by_index():
    layers = nn.CellList([nn.Dense(2, 2), nn.ReLU()])
    layers.append(nn.Dense(2, 1))
    assert len(layers) == 3 and isinstance(layers[1], nn.ReLU)
    assert [n for n, _ in layers.parameters_and_names()] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    with pytest.raises(TypeError, match="items must be Cells"):
        layers.append(3)


def test_parameter_owns_a_copy_and_set_data_is_seen_by_compiled_calls():
    src = np.arange(3, dtype=np.float32)
    p = ms.Parameter(src, name="p")
    p.set_data(T(np.full(3, 5.0, np.float32)))
    assert src.tolist() == [0, 1, 2]
    assert p.asnumpy().tolist() == [5, 5, 5]

    class AddP(nn.Cell):
        def __init__(self):
            super().__init__()
            self.p = p

        def construct(self, x):
            return x + self.p

    net = AddP()
    ms.set_context(mode=ms.GRAPH_MODE)
    x = T(np.zeros(3, np.float32))
    assert net(x).asnumpy().tolist() == [5, 5, 5]
    p.set_data(T(np.array([1.0, 2.0, 3.0], np.float32)))
    assert net(x).asnumpy().tolist() == [1, 2, 3]
    assert ms.get_code_extra(AddP.construct)["compile_count"] == 1
    with pytest.raises(ValueError, match="has shape"):
        p.set_data(T(np.zeros(4, np.float32)))
    assert p.clone(prefix="c").name == "c.p"


def test_parameter_tuple_only_holds_parameters():
    with pytest.raises(TypeError, match="must be Parameters"):
        ms.ParameterTuple([T(np.ones(1))])


# ---- initializers -----------------------------------------------------------------------------

def test_initializers_are_reproducible_with_set_seed():
    ms.set_seed(42)
    a = initializer(Normal(0.2), (50, 40))
    ms.set_seed(42)
    b = initializer("normal", (50, 40))
    ms.set_seed(42)
    c = initializer(Normal(0.2), (50, 40))
    np.testing.assert_array_equal(a.asnumpy(), c.asnumpy())
    assert not np.array_equal(a.asnumpy(), b.asnumpy())  # sigma 0.01 vs 0.2


@pytest.mark.parametrize("ini, shape, check", [
    (Uniform(0.3), (400, 50), lambda v, s: np.abs(v).max() <= 0.3 and v.std() > 0.15),
    (XavierUniform(), (300, 200), lambda v, s: np.abs(v).max() <= math.sqrt(6 / 500) + 1e-7),
    (HeUniform(), (100, 60, 3, 3), lambda v, s: np.abs(v).max() <= math.sqrt(6 / 540) + 1e-7),
    (HeNormal(mode="fan_out"), (200, 100, 3, 3), lambda v, s: abs(v.std() - math.sqrt(2 / 1800)) < 2e-3),
    (Normal(0.5, 1.0), (300, 300), lambda v, s: abs(v.mean() - 1) < 0.01 and abs(v.std() - 0.5) < 0.01),
    (Zero(), (3, 2), lambda v, s: (v == 0).all()),
    (One(), (3,), lambda v, s: (v == 1).all()),
    ("ones", (2, 2), lambda v, s: (v == 1).all()),
    ("xavier_uniform", (10, 10), lambda v, s: np.abs(v).max() <= math.sqrt(6 / 20)),
    (2.5, (2,), lambda v, s: (v == 2.5).all()),
])
def test_initializer_distributions(ini, shape, check):
    ms.set_seed(1)
    t = initializer(ini, shape, ms.float32)
    assert t.shape == shape and t.dtype == ms.float32
    assert check(t.asnumpy(), shape)


def test_initializer_errors_and_module_path():
    assert init.Normal is Normal
    with pytest.raises(ValueError, match="unknown initializer"):
        initializer("gaussian", (2,))
    with pytest.raises(ValueError, match="does not match the shape"):
        initializer(T(np.ones(3, np.float32)), (4,))
    assert initializer(T(np.ones(3, np.float32)), (3,)).shape == (3,)
