"""The summary operators (eager and inside ms.jit, recording the same values, with one graph)
and SummaryCollector in Model.train (the loss at the steps MindSpore picks, equal to the losses
the training returned), with their errors."""
import os

import numpy as np
import pytest

import pijit as ms
import pijit.dataset as ds
from pijit import nn, ops
from pijit.train import Callback, Model, SummaryCollector
from pijit.train.callback._summary_collector import tensor_collect_steps
from pijit.train.summary import SummaryRecord, read_summary


class Summarised(nn.Cell):
    """Records a scalar, a tensor, a histogram and an image of its work, and updates a
    parameter in place after recording it."""

    def __init__(self):
        super().__init__()
        self.counter = ms.Parameter(ms.Tensor(np.zeros(3, np.float32)), name="counter")
        self.scalar, self.tensor = ops.ScalarSummary(), ops.TensorSummary()
        self.histogram, self.image = ops.HistogramSummary(), ops.ImageSummary()

    def construct(self, x):
        y = x * 2 + 1
        self.scalar("mean", y.mean())
        self.tensor("counter", self.counter)
        self.histogram("y", y)
        self.image("picture", ops.sigmoid(y).reshape(1, 1, 2, 6))
        ops.assign(self.counter, self.counter + 1)
        return y.sum()


def summary_values(path):
    """[(step, {tag: value})] of a summary file, each value as plain Python data."""
    result = []
    for event in read_summary(path)[1:]:
        values = {}
        for value in event.summary.value:
            kind = value.WhichOneof("value")
            if kind == "scalar_value":
                values[value.tag] = value.scalar_value
            elif kind == "tensor":
                values[value.tag] = (list(value.tensor.dims), list(value.tensor.float_data))
            elif kind == "histogram":
                values[value.tag] = [(b.left, b.width, b.count) for b in value.histogram.buckets]
            else:
                values[value.tag] = value.image.encoded_image
        result.append((event.step, values))
    return result


def run_and_record(directory, compiled):
    pytest.importorskip("PIL")
    net = Summarised()
    step = ms.jit(net.construct) if compiled else net
    outputs = []
    rng = np.random.default_rng(0)
    with SummaryRecord(directory) as record:
        for i in range(3):
            outputs.append(float(step(ms.Tensor(rng.standard_normal(12).astype(np.float32)))
                                 .asnumpy()))
            record.record(i + 1)
        path = record.log_dir
    return outputs, summary_values(path), step


def test_summary_operators_record_the_same_eagerly_and_compiled(tmp_path):
    eager_out, eager, _ = run_and_record(str(tmp_path / "eager"), compiled=False)
    jit_out, compiled, step = run_and_record(str(tmp_path / "jit"), compiled=True)
    assert jit_out == pytest.approx(eager_out, rel=1e-6)
    assert [s for s, _ in compiled] == [s for s, _ in eager] == [1, 2, 3]
    for (_, a), (_, b) in zip(eager, compiled):
        assert set(a) == {"mean", "counter", "y", "picture"} == set(b)
        assert a["mean"] == pytest.approx(b["mean"], rel=1e-6)
        assert a["counter"] == b["counter"] and a["picture"] == b["picture"]
        np.testing.assert_allclose(np.array(a["y"], dtype=float), np.array(b["y"], dtype=float),
                                   rtol=1e-6)
    # The value at the operator, before the in-place update that follows it.
    assert [values["counter"] for _, values in eager] == [([3], [float(i)] * 3) for i in range(3)]
    rng = np.random.default_rng(0)
    first = rng.standard_normal(12).astype(np.float32) * 2 + 1
    assert eager[0][1]["mean"] == pytest.approx(float(first.mean()), rel=1e-6)
    explained = ms.explain(step, ms.Tensor(np.zeros(12, np.float32)))
    assert explained.graph_count == 1 and explained.graph_break_count == 0


def test_eval_mode_skips_operator_values(tmp_path):
    net = Summarised()
    with SummaryRecord(str(tmp_path)) as record:
        record.set_mode("eval")
        net(ms.Tensor(np.ones(12, np.float32)))
        record.add_value("scalar", "kept", ms.Tensor(np.float32(4)))
        record.record(1)
        path = record.log_dir
    assert summary_values(path) == [(1, {"kept": 4.0})]


def test_summary_operator_errors():
    with pytest.raises(TypeError, match="non-empty string"):
        ops.ScalarSummary()("", ms.Tensor(np.float32(1)))
    with pytest.raises(TypeError, match="must be a Tensor"):
        ops.TensorSummary()("x", [1.0, 2.0])
    with pytest.raises(ValueError, match="exactly one element"):
        ops.ScalarSummary()("x", ms.Tensor(np.zeros((2, 2), np.float32)))
    with pytest.raises(ValueError, match="at least one dimension"):
        ops.HistogramSummary()("x", ms.Tensor(np.float32(1)))
    with pytest.raises(ValueError, match="rank 4"):
        ops.ImageSummary()("x", ms.Tensor(np.zeros((3, 4, 4), np.float32)))


# ---- SummaryCollector in Model.train --------------------------------------------------------


class LossRecorder(Callback):
    def __init__(self):
        self.losses = []

    def on_train_step_end(self, run_context):
        self.losses.append(float(run_context.original_args().net_outputs.asnumpy()))


class Classifier(nn.Cell):
    def __init__(self):
        super().__init__()
        self.hidden, self.out = nn.Dense(4, 8), nn.Dense(8, 3)
        self.summary = ops.ScalarSummary()

    def construct(self, x):
        h = ops.relu(self.hidden(x))
        self.summary("hidden_mean", h.mean())
        return self.out(h)


def train(directory, collector_kwargs, epochs=2, samples=120, batch=10, fit=False):
    rng = np.random.default_rng(0)
    points = rng.standard_normal((samples, 4)).astype(np.float32)
    labels = rng.integers(0, 3, samples).astype(np.int32)
    data = ds.NumpySlicesDataset({"x": points, "y": labels}, shuffle=False).batch(batch)
    ms.set_seed(0)
    net = Classifier()
    model = Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                  nn.Momentum(net.trainable_params(), 0.05, 0.9), metrics={"loss"})
    losses = LossRecorder()
    collector = SummaryCollector(directory, **collector_kwargs)
    if fit:  # an evaluation after each epoch
        model.fit(epochs, data, data, callbacks=[collector, losses])
    else:
        model.train(epochs, data, callbacks=[collector, losses])
    files = os.listdir(directory)
    assert len(files) == 1
    return losses.losses, summary_values(os.path.join(directory, files[0])), net


def test_collector_records_the_training_losses(tmp_path):
    with pytest.warns(RuntimeWarning, match="not an image batch"):
        losses, records, net = train(str(tmp_path), {"collect_freq": 5})
    assert len(losses) == 24
    # The first step, then every collect_freq steps.
    assert [step for step, _ in records] == [1, 5, 10, 15, 20]
    for step, values in records:
        assert values["loss/auto"] == pytest.approx(losses[step - 1], rel=1e-6)
        assert values["learning_rate/auto"] == pytest.approx(0.05)
        assert "hidden_mean" in values
        assert {"hidden.weight/auto", "hidden.bias/auto", "out.weight/auto",
                "out.bias/auto"} <= set(values)
    # The histogram of the last record is that of the weights after that step's update.
    assert sum(count for _, _, count in records[-1][1]["out.bias/auto"]) == 3


def test_collector_keeps_recording_after_an_evaluation_in_fit(tmp_path):
    specified = {"collect_metric": True}
    losses, records, _ = train(str(tmp_path), {"collect_freq": 6, "keep_default_action": False,
                                               "collect_specified_data": specified}, fit=True)
    assert [step for step, _ in records] == [1, 6, 12, 18, 24]
    for step, values in records:
        assert set(values) == {"loss/auto", "learning_rate/auto", "hidden_mean"}
        assert values["loss/auto"] == pytest.approx(losses[step - 1], rel=1e-6)


def test_collector_used_without_a_with_after_an_evaluation(tmp_path):
    collector = SummaryCollector(str(tmp_path), collect_freq=4, keep_default_action=False,
                                 collect_specified_data={"collect_metric": True})
    cb_params = {"mode": "train", "list_callback": [collector], "epoch_num": 1, "batch_num": 4,
                 "net_outputs": ms.Tensor(np.float32(2.5)), "optimizer": None,
                 "dataset_sink_mode": False}
    run_context = ms.train.RunContext(ms.train.callback._InternalCallbackParam(cb_params))
    collector.on_train_begin(run_context)
    for step in range(1, 5):
        ops.ScalarSummary()("op", ms.Tensor(np.float32(step)))
        run_context.original_args().cur_step_num = step
        collector.on_train_step_end(run_context)
        if step == 2:  # an evaluation between steps begins the callback in 'eval' mode
            evaluation = ms.train.callback._InternalCallbackParam({**cb_params, "mode": "eval"})
            collector.on_eval_begin(ms.train.RunContext(evaluation))
            collector.on_eval_end(ms.train.RunContext(evaluation))
    collector.on_train_end(run_context)
    (path,) = [os.path.join(tmp_path, name) for name in os.listdir(tmp_path)]
    assert summary_values(path) == [(1, {"loss/auto": 2.5, "op": 1.0}),
                                    (4, {"loss/auto": 2.5, "op": 4.0})]
    assert not os.stat(path).st_mode & 0o222  # closed


def test_collector_specified_data(tmp_path):
    specified = {"collect_metric": True, "histogram_regular": "^out\\.weight"}
    losses, records, _ = train(str(tmp_path / "a"), {"collect_freq": 12,
                                                      "collect_specified_data": specified,
                                                      "keep_default_action": False})
    assert [step for step, _ in records] == [1, 12, 24]
    assert set(records[0][1]) == {"loss/auto", "learning_rate/auto", "out.weight/auto",
                                  "hidden_mean"}
    losses, records, _ = train(str(tmp_path / "b"), {
        "collect_freq": 12, "collect_specified_data": {"collect_metric": False},
        "keep_default_action": False})
    assert set(records[0][1]) == {"hidden_mean"}


def test_tensor_collect_steps_follow_mindspore():
    # MindSpore's documented example: collect_freq=10, 600 steps: tensors at 20 steps and
    # the other data at 61; 20 steps: both at 3.
    assert len(tensor_collect_steps(600, 10, None)) == 20
    assert len(range(0, 601, 10)) == 61
    assert list(tensor_collect_steps(20, 10, None)) == [0, 10, 20]
    assert list(tensor_collect_steps(20, 10, 4)) == [0, 4, 8, 12, 16, 20]


def test_collector_argument_errors(tmp_path):
    directory = str(tmp_path)
    with pytest.raises(ValueError, match="collect_freq"):
        SummaryCollector(directory, collect_freq=0)
    with pytest.raises(TypeError, match="collect_freq"):
        SummaryCollector(directory, collect_freq=True)
    with pytest.raises(ValueError, match="not supported"):
        SummaryCollector(directory, collect_specified_data={"collect_loss": True})
    with pytest.raises(TypeError, match="collect_metric"):
        SummaryCollector(directory, collect_specified_data={"collect_metric": 1})
    with pytest.raises(ValueError, match="regular expression"):
        SummaryCollector(directory, collect_specified_data={"histogram_regular": "("})
    with pytest.raises(TypeError, match="keep_default_action"):
        SummaryCollector(directory, keep_default_action="yes")
    with pytest.raises(TypeError, match="custom_lineage_data"):
        SummaryCollector(directory, custom_lineage_data={"a": [1]})
    with pytest.raises(ValueError, match="export_options"):
        SummaryCollector(directory, export_options={"image_format": "png"})
    with pytest.raises(ValueError, match="more than one SummaryCollector"):
        rng = np.random.default_rng(0)
        data = ds.NumpySlicesDataset({"x": rng.standard_normal((4, 4)).astype(np.float32),
                                      "y": np.zeros(4, np.int32)}, shuffle=False).batch(2)
        net = Classifier()
        model = Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                      nn.Momentum(net.trainable_params(), 0.05, 0.9))
        model.train(1, data, callbacks=[SummaryCollector(directory + "/a"),
                                        SummaryCollector(directory + "/b")])
