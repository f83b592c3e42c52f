"""Dataset sinking: DatasetHelper, connect_network_with_dataset, data_sink, nn.GetNextSingleOp
and ops.GetNext. Every sunk run is compared with the same network called on the dataset's rows
in a plain loop."""
import numpy as np
import pytest

import pijit as ms
from pijit import dataset as ds
from pijit import nn, ops


@pytest.fixture(autouse=True)
def _pynative():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def _rows_dataset(rows=64, batch=16, seed=0):
    rng = np.random.default_rng(seed)
    data = {"x": rng.standard_normal((rows, 10)).astype(np.float32),
            "y": rng.integers(0, 5, rows).astype(np.int32)}
    return ds.NumpySlicesDataset(data=data, shuffle=False).batch(batch)


def _loss_net():
    ms.set_seed(3)
    return nn.WithLossCell(nn.Dense(10, 5),
                           nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"))


class _Features(nn.Cell):
    def construct(self, x, y):
        return x


def _plain_rows(dataset, epochs):
    return [tuple(row) for _ in range(epochs)
            for row in dataset.create_tuple_iterator(num_epochs=1)]


def test_data_sink_example_prints_two_twice():
    data = {"x": np.ones((1,), dtype=np.int32), "y": np.ones((1,), dtype=np.int32)}
    sink_process = ms.data_sink(lambda x, y: x + y, ds.NumpySlicesDataset(data=data), sink_size=1)
    for _ in range(2):
        out = sink_process()
        assert out.dtype == ms.int32 and int(out.asnumpy()) == 2


def test_data_sink_runs_sink_size_steps_cycling_the_dataset():
    dataset = _rows_dataset(rows=48, batch=16)  # 3 batches, cycled without end
    seen = []

    def step(x, y):
        seen.append(float(x.asnumpy()[0, 0]))
        return x.sum()

    process = ms.data_sink(step, dataset, sink_size=2)
    results = [float(process().asnumpy()) for _ in range(4)]  # 8 steps: 2 passes and 2 rows
    rows = _plain_rows(dataset, 3)[:8]
    assert seen == [float(x.asnumpy()[0, 0]) for x, _ in rows]
    # Each call returns its last step's result.
    assert results == pytest.approx([float(rows[i][0].asnumpy().sum()) for i in (1, 3, 5, 7)],
                                    rel=1e-6)


def test_data_sink_with_jit_config_trains_as_the_plain_loop():
    dataset = _rows_dataset()

    def train_losses(sunk):
        net = _loss_net()
        step = nn.TrainOneStepCell(net, nn.Momentum(net.trainable_params(), 0.1, 0.9))
        if sunk:
            process = ms.data_sink(step, dataset, sink_size=1, jit_config=ms.JitConfig())
            losses = [float(process().asnumpy()) for _ in range(8)]
        else:
            losses = [float(step(x, y).asnumpy()) for x, y in _plain_rows(dataset, 2)]
        return losses, net.trainable_params()[0].asnumpy()

    sunk_losses, sunk_weight = train_losses(True)
    plain_losses, plain_weight = train_losses(False)
    np.testing.assert_allclose(sunk_losses, plain_losses, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sunk_weight, plain_weight, rtol=1e-5, atol=1e-6)
    assert sunk_losses[-1] < sunk_losses[0]


def test_data_sink_input_signature_is_checked():
    dataset = _rows_dataset()
    good = [ms.Tensor(np.zeros((16, 10), np.float32)), ms.Tensor(np.zeros((16,), np.int32))]
    process = ms.data_sink(lambda x, y: x.sum(), dataset, input_signature=good)
    assert process().shape == ()
    wrong_dtype = [good[0], ms.Tensor(np.zeros((16,), np.float32))]
    with pytest.raises(TypeError, match="input 1 is Int32"):
        ms.data_sink(lambda x, y: x.sum(), dataset, input_signature=wrong_dtype)()
    wrong_shape = [ms.Tensor(np.zeros((8, 10), np.float32)), good[1]]
    with pytest.raises(TypeError, match="input_signature says Float32\\[8, 10\\]"):
        ms.data_sink(lambda x, y: x.sum(), dataset, input_signature=wrong_shape)()


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(sink_size=0), ValueError, "'sink_size' must be a positive int"),
    (dict(sink_size=True), ValueError, "'sink_size' must be a positive int"),
    (dict(jit_config={"jit_level": "O1"}), TypeError, "'jit_config' must be a JitConfig"),
    (dict(input_signature=3), TypeError, "'input_signature' must be a Tensor"),
])
def test_data_sink_rejects_bad_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        ms.data_sink(lambda x, y: x, _rows_dataset(), **kwargs)


def test_data_sink_rejects_a_non_callable_and_a_non_dataset():
    with pytest.raises(TypeError, match="'fn' must be callable"):
        ms.data_sink(3, _rows_dataset())
    with pytest.raises(TypeError, match="'dataset' must be a pijit.dataset dataset"):
        ms.data_sink(lambda: 0, [1, 2])


def test_dataset_helper_without_sink_yields_the_rows():
    dataset = _rows_dataset()
    helper = ms.DatasetHelper(dataset, dataset_sink_mode=False, epoch_num=2)
    rows = _plain_rows(dataset, 2)
    got = [row for _ in range(2) for row in helper]
    assert len(got) == len(rows) == 8
    for (x, y), (rx, ry) in zip(got, rows):
        np.testing.assert_array_equal(x.asnumpy(), rx.asnumpy())
        np.testing.assert_array_equal(y.asnumpy(), ry.asnumpy())
    assert helper.sink_size() == 4
    with pytest.raises(RuntimeError, match="only in dataset sink mode"):
        helper.stop_send()


def test_dataset_helper_types_shapes_and_sink_sizes():
    dataset = _rows_dataset()
    helper = ms.DatasetHelper(dataset)
    types, shapes = helper.types_shapes()
    assert types == [ms.float32, ms.int32] and shapes == [(16, 10), (16,)]
    assert helper.sink_size() == 4 and list(helper) == [()] * 4
    assert ms.DatasetHelper(dataset, sink_size=3).sink_size() == 3


@pytest.mark.parametrize("kwargs, error", [
    (dict(dataset_sink_mode=1), TypeError), (dict(sink_size=0), ValueError),
    (dict(sink_size=-2), ValueError), (dict(epoch_num=0), ValueError)])
def test_dataset_helper_rejects_bad_arguments(kwargs, error):
    with pytest.raises(error, match="DatasetHelper"):
        ms.DatasetHelper(_rows_dataset(), **kwargs)


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE])
def test_connected_network_sees_every_row_in_order(mode):
    ms.set_context(mode=mode)
    dataset = _rows_dataset()
    net = _loss_net()
    helper = ms.DatasetHelper(dataset, dataset_sink_mode=True, epoch_num=2)
    connected = ms.connect_network_with_dataset(net, helper)
    sunk = [float(connected().asnumpy()) for _ in range(2) for _ in helper]
    plain = [float(net(x, y).asnumpy()) for x, y in _plain_rows(dataset, 2)]
    np.testing.assert_allclose(sunk, plain, rtol=1e-6)
    with pytest.raises(RuntimeError, match="is empty"):
        connected()


def test_sink_size_epochs_run_over_dataset_passes():
    dataset = _rows_dataset(rows=32, batch=16)  # 2 batches; epochs of 3 steps take 3 passes
    helper = ms.DatasetHelper(dataset, sink_size=3, epoch_num=2)
    connected = ms.connect_network_with_dataset(_Features(), helper)
    firsts = [float(connected()[0, 0].asnumpy()) for _ in range(2) for _ in helper]
    rows = _plain_rows(dataset, 3)
    assert firsts == [float(x.asnumpy()[0, 0]) for x, _ in rows]


def test_connect_network_with_dataset_rejects():
    dataset = _rows_dataset()
    with pytest.raises(RuntimeError, match="dataset sink mode"):
        ms.connect_network_with_dataset(_loss_net(),
                                        ms.DatasetHelper(dataset, dataset_sink_mode=False))
    with pytest.raises(TypeError, match="'network' must be a Cell"):
        ms.connect_network_with_dataset(lambda x: x, ms.DatasetHelper(dataset))
    with pytest.raises(TypeError, match="'dataset_helper' must be a DatasetHelper"):
        ms.connect_network_with_dataset(_loss_net(), dataset)


def test_get_next_single_op_as_mindspore_documents_it():
    images = np.random.default_rng(1).integers(0, 255, (10, 28, 28, 1)).astype(np.uint8)
    dataset = ds.NumpySlicesDataset({"image": images, "label": np.arange(10).astype(np.int32)},
                                    shuffle=False)
    helper = ms.DatasetHelper(dataset, dataset_sink_mode=True)
    list(helper)  # the first epoch's iteration starts sending
    queue_name = helper.iter.dataset.__transfer_dataset__.queue_name
    get_next = nn.GetNextSingleOp(*helper.types_shapes(), queue_name)
    for i in range(3):
        data, label = get_next()
        result = ops.ReLU()(data.astype(ms.float32))
        assert result.shape == (28, 28, 1) and int(label.asnumpy()) == i
        np.testing.assert_array_equal(result.asnumpy(), images[i].astype(np.float32))
    assert helper.get_data_info() == ([ms.uint8, ms.int32], [(28, 28, 1), ()])
    assert int(get_next()[1].asnumpy()) == 3  # the row get_data_info looked at


def test_get_next_checks_the_rows_it_takes():
    dataset = _rows_dataset(rows=40, batch=16)  # a last batch of 8
    helper = ms.DatasetHelper(dataset)
    list(helper)
    name = helper.iter.dataset.__transfer_dataset__.queue_name
    strict = ops.GetNext([ms.float32, ms.int32], [(16, 10), (16,)], 2, name)
    strict(), strict()
    with pytest.raises(RuntimeError, match=r"column 0 .* is Float32\[8, 10\], expected "
                                           r"Float32\[16, 10\]"):
        strict()
    helper.release()
    with pytest.raises(RuntimeError, match="no dataset is being sent"):
        strict()


def test_get_next_accepts_any_size_where_the_shape_says_minus_one():
    dataset = _rows_dataset(rows=40, batch=16)
    helper = ms.DatasetHelper(dataset)
    list(helper)
    name = helper.iter.dataset.__transfer_dataset__.queue_name
    loose = ops.GetNext([ms.float32, ms.int32], [(-1, 10), (-1,)], 2, name)
    assert [loose()[1].shape for _ in range(3)] == [(16,), (16,), (8,)]


def test_stop_and_continue_send():
    helper = ms.DatasetHelper(_rows_dataset())
    connected = ms.connect_network_with_dataset(_Features(), helper)
    list(helper)
    helper.stop_send()
    with pytest.raises(RuntimeError, match="stopped"):
        connected()
    helper.continue_send()
    assert connected().shape == (16, 10)


@pytest.mark.parametrize("args, error, message", [
    (([ms.float32], [(2,)], 2, "q"), ValueError, "'output_num'"),
    (([np.float32], [(2,)], 1, "q"), TypeError, "'types' must be a list of pijit dtypes"),
    (([ms.float32], [(2.0,)], 1, "q"), TypeError, "'shapes'"),
    (([ms.float32], [(2,)], 1, 7), TypeError, "'shared_name' must be a str")])
def test_get_next_rejects_bad_arguments(args, error, message):
    with pytest.raises(error, match=message):
        ops.GetNext(*args)


def test_get_next_inside_a_jitted_function_takes_a_row_per_call():
    dataset = _rows_dataset()
    helper = ms.DatasetHelper(dataset, epoch_num=2)
    list(helper)
    get_next = nn.GetNextSingleOp(*helper.types_shapes(),
                                  helper.iter.dataset.__transfer_dataset__.queue_name)

    @ms.jit(capture_mode="bytecode")
    def scaled(k):
        x, _ = get_next()
        return x * k

    k = ms.Tensor(np.float32(2.0))
    got = [scaled(k).asnumpy() for _ in range(8)]
    for out, (x, _) in zip(got, _plain_rows(dataset, 2)):
        np.testing.assert_array_equal(out, x.asnumpy() * 2)
