"""pijit.export, pijit.load and nn.GraphCell: a loaded graph computes what the network did, on
the example input and on new inputs of its shapes; refusals are clear errors."""
import os

import numpy as np
import pytest

import pijit as ms
from pijit import nn, ops


class LeNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, pad_mode="valid")
        self.bn = nn.BatchNorm2d(6)
        self.conv2 = nn.Conv2d(6, 16, 5, pad_mode="valid")
        self.pool = nn.MaxPool2d(2, 2)
        self.relu = nn.ReLU()
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(16 * 4 * 4, 10)

    def construct(self, x):
        x = self.pool(self.relu(self.bn(self.conv1(x))))
        x = self.pool(self.relu(self.conv2(x)))
        return self.fc(self.flatten(x))


class TwoOutputs(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(8, 4)

    def construct(self, x, y):
        logits = self.dense(x) * y
        return ops.softmax(logits, -1), ops.argmax(logits, -1)


def _image(seed, batch=2):
    return ms.Tensor(np.random.default_rng(seed).standard_normal((batch, 1, 28, 28))
                     .astype(np.float32))


@pytest.fixture
def lenet():
    ms.set_seed(1)
    net = LeNet()
    net.set_train(False)
    return net


def test_loaded_graph_computes_what_the_network_does(tmp_path, lenet):
    path = ms.export(lenet, _image(0), file_name=str(tmp_path / "lenet"), file_format="MINDIR")
    assert path.endswith(".mindir") and os.path.isfile(path)
    graph_cell = nn.GraphCell(ms.load(path))
    for seed in (0, 1, 2):  # the example input and new ones
        np.testing.assert_allclose(graph_cell(_image(seed)).asnumpy(), lenet(_image(seed)).asnumpy(),
                                   rtol=1e-5, atol=1e-6)
    assert set(graph_cell.parameters_dict()) == set(lenet.parameters_dict())


def test_graph_cell_under_graph_mode_and_jit(tmp_path, lenet):
    path = ms.export(lenet, _image(0), file_name=str(tmp_path / "net.mindir"), file_format="MINDIR")
    graph_cell = nn.GraphCell(ms.load(path))
    want = lenet(_image(3)).asnumpy()
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        np.testing.assert_allclose(graph_cell(_image(3)).asnumpy(), want, rtol=1e-5, atol=1e-6)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    jitted = ms.jit(lambda x: graph_cell(x) * 2.0, capture_mode="bytecode")
    np.testing.assert_allclose(jitted(_image(3)).asnumpy(), want * 2.0, rtol=1e-5, atol=1e-6)


def test_two_outputs_with_an_integer_one(tmp_path):
    ms.set_seed(2)
    net = TwoOutputs()
    x = ms.Tensor(np.random.default_rng(4).standard_normal((3, 8)).astype(np.float32))
    y = ms.Tensor(np.float32(2.0))
    path = ms.export(net, x, y, file_name=str(tmp_path / "two"), file_format="MINDIR")
    cell = nn.GraphCell(ms.load(path))
    x2 = ms.Tensor(np.random.default_rng(5).standard_normal((3, 8)).astype(np.float32))
    y2 = ms.Tensor(np.float32(-1.0))
    got, want = cell(x2, y2), net(x2, y2)
    assert isinstance(got, tuple) and len(got) == 2
    np.testing.assert_allclose(got[0].asnumpy(), want[0].asnumpy(), rtol=1e-6)
    assert got[1].dtype == want[1].dtype
    np.testing.assert_array_equal(got[1].asnumpy(), want[1].asnumpy())


def test_params_init_replaces_parameters(tmp_path, lenet):
    path = ms.export(lenet, _image(0), file_name=str(tmp_path / "p"), file_format="MINDIR")
    zero_bias = ms.Tensor(np.full((10,), 0.5, np.float32))
    cell = nn.GraphCell(ms.load(path), params_init={"fc.bias": zero_bias})
    lenet.fc.bias.set_data(zero_bias)
    np.testing.assert_allclose(cell(_image(1)).asnumpy(), lenet(_image(1)).asnumpy(),
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="which the graph has not"):
        nn.GraphCell(ms.load(path), params_init={"nope": zero_bias})
    with pytest.raises(ValueError, match=r"Float32\[3\]"):
        nn.GraphCell(ms.load(path), params_init={"fc.bias": ms.Tensor(np.zeros(3, np.float32))})


def test_a_function_exports_too(tmp_path):
    w = ms.Tensor(np.arange(6, dtype=np.float64).reshape(2, 3))

    def f(x):
        return ops.matmul(x, w).sum(1) + 1.0

    x = ms.Tensor(np.ones((4, 2)))
    cell = nn.GraphCell(ms.load(ms.export(f, x, file_name=str(tmp_path / "f"),
                                          file_format="MINDIR")))
    x2 = ms.Tensor(np.random.default_rng(6).standard_normal((4, 2)))
    np.testing.assert_allclose(cell(x2).asnumpy(), f(x2).asnumpy())


def test_random_draws_stay_random(tmp_path):
    class Noisy(nn.Cell):
        def construct(self, x):
            return x + ops.uniform(x.shape, 0.0, 1.0)

    x = ms.Tensor(np.zeros((1000,), np.float32))
    cell = nn.GraphCell(ms.load(ms.export(Noisy(), x, file_name=str(tmp_path / "r"),
                                          file_format="MINDIR")))
    a, b = cell(x).asnumpy(), cell(x).asnumpy()
    assert not np.array_equal(a, b)  # drawn anew at each call, not frozen at export
    assert 0.4 < a.mean() < 0.6 and a.min() >= 0.0 and a.max() < 1.0


def test_a_branch_on_a_tensor_value_is_refused(tmp_path):
    class Branchy(nn.Cell):
        def construct(self, x):
            if x.sum() > 0:
                return x * 2.0
            return x - 1.0

    with pytest.raises(ValueError, match="read values computed from its inputs"):
        ms.export(Branchy(), ms.Tensor(np.ones(3, np.float32)), file_name=str(tmp_path / "b"),
                  file_format="MINDIR")


@pytest.mark.parametrize("read", [lambda t: np.asarray(t), lambda t: t.asnumpy(),
                                  lambda t: t.tolist(), lambda t: float(t.sum()),
                                  lambda t: t.sum().item(), lambda t: memoryview(t)])
def test_every_way_of_reading_values_into_python_is_seen(tmp_path, read):
    def f(x):
        y = x * 2.0
        read(y)
        return y

    with pytest.raises(ValueError, match="read values computed from its inputs"):
        ms.export(f, ms.Tensor(np.ones(3, np.float32)), file_name=str(tmp_path / "h"),
                  file_format="MINDIR")


def test_other_refusals(tmp_path):
    class WithBprop(nn.Cell):
        def construct(self, x):
            return x * 3.0

        def bprop(self, x, out, dout):
            return (dout,)

    x = ms.Tensor(np.ones(3, np.float32))
    with pytest.raises(ValueError, match="bprop"):
        ms.export(WithBprop(), x, file_name=str(tmp_path / "c"), file_format="MINDIR")
    with pytest.raises(ValueError, match="not computed from the inputs"):
        ms.export(lambda t: ms.Tensor(np.zeros(2, np.float32)), x,
                  file_name=str(tmp_path / "d"), file_format="MINDIR")
    with pytest.raises(TypeError, match="omplex(64)? tensors cannot be held in a graph file"):
        ms.export(lambda t: ops.Complex()(t, t) * 2, x, file_name=str(tmp_path / "z"),
                  file_format="MINDIR")
    with pytest.raises(ValueError, match="MINDIR"):
        ms.export(lambda t: t * 2, x, file_name=str(tmp_path / "e"), file_format="ONNX")
    with pytest.raises(TypeError, match="inputs must be"):
        ms.export(lambda t: t * 2, 3.0, file_name=str(tmp_path / "e"), file_format="MINDIR")


def test_graph_cell_checks_its_inputs_and_refuses_gradients(tmp_path, lenet):
    cell = nn.GraphCell(ms.load(ms.export(lenet, _image(0), file_name=str(tmp_path / "g"),
                                          file_format="MINDIR")))
    with pytest.raises(ValueError, match=r"Float32\[2, 1, 28, 28\]"):
        cell(_image(0, batch=3))
    with pytest.raises(TypeError, match="takes 1 inputs"):
        cell(_image(0), _image(1))
    with pytest.raises(NotImplementedError, match="not differentiated"):
        ms.grad(lambda x: cell(x).sum())(_image(0))
    with pytest.raises(TypeError, match="what pijit.load returns"):
        nn.GraphCell("lenet.mindir")
    with pytest.raises(ValueError, match="obf_random_seed"):
        nn.GraphCell(ms.load(str(tmp_path / "g.mindir")), obf_random_seed=3)


def test_load_rejects_what_is_not_a_pijit_graph(tmp_path):
    junk = tmp_path / "junk.mindir"
    junk.write_bytes(b"\x08\x01\x12\x04not a zip")
    with pytest.raises(ValueError, match="not a pijit graph file"):
        ms.load(str(junk))
    with pytest.raises(ValueError, match="no file"):
        ms.load(str(tmp_path / "missing.mindir"))
    # A graph file whose graph bytes are cut short: an error, not a crash.
    import zipfile
    good = ms.export(lambda t: t * 2.0, ms.Tensor(np.ones(2, np.float32)),
                     file_name=str(tmp_path / "ok"), file_format="MINDIR")
    with zipfile.ZipFile(good) as archive:
        parts = {n: archive.read(n) for n in archive.namelist()}
    cut = tmp_path / "cut.mindir"
    with zipfile.ZipFile(cut, "w") as archive:
        for name, data in parts.items():
            archive.writestr(name, data[:-5] if name == "graph.bin" else data)
    with pytest.raises(ValueError, match="graph file"):
        ms.load(str(cut))
