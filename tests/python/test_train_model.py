"""pijit.train.Model with MindSpore's workflow: train/eval/fit/predict on a small classifier,
each training step one compiled graph, the callbacks (LossMonitor's output, ModelCheckpoint's
files, EarlyStopping, ...) and every metric against a NumPy reference."""
import os
import re

import numpy as np
import pytest

import pijit as ms
import pijit.dataset as ds
from pijit import nn
from pijit.train import (F1, MAE, MSE, Accuracy, Callback, CheckpointConfig, EarlyStopping,
                         History, LambdaCallback, LearningRateScheduler, Loss, LossMonitor,
                         Metric, Model, ModelCheckpoint, Precision, Recall, TimeMonitor,
                         Top1CategoricalAccuracy, Top5CategoricalAccuracy,
                         TopKCategoricalAccuracy, get_metric_fn, load_checkpoint, names)

CLASSES = 3


def blobs(samples=240, seed=0):
    """Three well separated Gaussian blobs in 4 dimensions: (float32 [n, 4], int32 [n])."""
    rng = np.random.default_rng(seed)
    centers = np.array([[3, 0, 0, 0], [0, 3, 0, 0], [0, 0, 3, 0]], np.float32)
    labels = rng.integers(0, CLASSES, samples).astype(np.int32)
    points = centers[labels] + 0.6 * rng.standard_normal((samples, 4)).astype(np.float32)
    return points.astype(np.float32), labels


def dataset(points, labels, batch=32, drop_remainder=False):
    return ds.NumpySlicesDataset({"x": points, "y": labels}, shuffle=False).batch(
        batch, drop_remainder=drop_remainder)


def classifier(seed=0):
    ms.set_seed(seed)
    return nn.SequentialCell(nn.Dense(4, 16), nn.ReLU(), nn.Dense(16, CLASSES))


def model_for(net, metrics=None, learning_rate=0.05):
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    return Model(net, loss, nn.Momentum(net.trainable_params(), learning_rate, 0.9),
                 metrics=metrics)


def numpy_cross_entropy(logits, labels):
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return float(-log_probs[np.arange(len(labels)), labels].mean())


class Recorder(Callback):
    """Records each stage called, with the epoch and step it saw, and each step's loss."""

    def __init__(self):
        self.events, self.losses = [], []

    def _record(self, stage, run_context):
        args = run_context.original_args()
        self.events.append((stage, args.get("cur_epoch_num"), args.get("cur_step_num")))

    def on_train_begin(self, run_context):
        self._record("train_begin", run_context)

    def on_train_epoch_begin(self, run_context):
        self._record("epoch_begin", run_context)

    def step_begin(self, run_context):  # the older stage name is called too
        self._record("step_begin", run_context)

    def on_train_step_end(self, run_context):
        self._record("step_end", run_context)
        self.losses.append(float(run_context.original_args().net_outputs.asnumpy()))

    def on_train_epoch_end(self, run_context):
        self._record("epoch_end", run_context)

    def on_train_end(self, run_context):
        self._record("train_end", run_context)


# ---- training ------------------------------------------------------------------------------------

def test_train_lowers_the_loss_and_eval_reports_accuracy_and_loss():
    points, labels = blobs()
    net = classifier()
    model = model_for(net, metrics={"accuracy", "loss"})
    before = model.eval(dataset(points, labels))
    recorder = Recorder()
    model.train(8, dataset(points, labels), callbacks=recorder)
    after = model.eval(dataset(points, labels))
    assert set(after) == {"accuracy", "loss"}
    assert after["loss"] < before["loss"] / 3
    assert after["accuracy"] >= 0.95
    assert np.mean(recorder.losses[-8:]) < np.mean(recorder.losses[:8]) / 3
    # The evaluation agrees with NumPy on the network's own outputs.
    logits = net(ms.Tensor(points)).asnumpy()
    assert after["accuracy"] == pytest.approx(np.mean(logits.argmax(axis=1) == labels))
    batch_losses = [numpy_cross_entropy(logits[i:i + 32], labels[i:i + 32])
                    for i in range(0, len(labels), 32)]
    assert after["loss"] == pytest.approx(np.mean(batch_losses), rel=1e-4)


def test_each_training_step_is_one_compiled_graph():
    points, labels = blobs(samples=96)
    model = model_for(classifier())
    model.train(2, dataset(points, labels, batch=32, drop_remainder=True))
    stats = ms.get_code_extra(model.train_step_function)
    assert stats["call_count"] == 6 and stats["compile_count"] == 1
    assert stats["graph_count"] == 1 and stats["cache_hits"] == 5
    assert stats["break_count"] == 0 and stats["eager_count"] == 0
    graph = stats["all_graphs"][0]
    assert "log_softmax" in graph and "assign" in graph  # forward, loss and update in one graph
    # A last, smaller batch compiles once more; a second model keeps statistics of its own.
    other = model_for(classifier())
    other.train(1, dataset(points[:80], labels[:80], batch=32))
    other_stats = ms.get_code_extra(other.train_step_function)
    assert other_stats["call_count"] == 3 and other_stats["compile_count"] == 2
    assert ms.get_code_extra(model.train_step_function)["call_count"] == 6


def test_model_training_matches_an_eager_train_one_step_cell():
    points, labels = blobs(samples=64)
    model_net, eager_net = classifier(4), classifier(4)
    recorder = Recorder()
    model_for(model_net).train(2, dataset(points, labels, batch=16), callbacks=recorder)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    step = nn.TrainOneStepCell(nn.WithLossCell(eager_net, loss),
                               nn.Momentum(eager_net.trainable_params(), 0.05, 0.9))
    step.set_train()
    eager_losses = [float(step(ms.Tensor(points[i:i + 16]), ms.Tensor(labels[i:i + 16])).asnumpy())
                    for _ in range(2) for i in range(0, 64, 16)]
    np.testing.assert_allclose(recorder.losses, eager_losses, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(model_net[0].weight.asnumpy(), eager_net[0].weight.asnumpy(),
                               rtol=1e-4, atol=1e-6)


def test_callback_stages_run_in_order_with_the_epoch_and_step():
    points, labels = blobs(samples=40)
    recorder = Recorder()
    model = model_for(classifier())
    model.train(3, dataset(points, labels, batch=20), callbacks=[recorder], initial_epoch=1)
    assert recorder.events == [
        ("train_begin", None, 0),
        ("epoch_begin", 2, 0), ("step_begin", 2, 1), ("step_end", 2, 1),
        ("step_begin", 2, 2), ("step_end", 2, 2), ("epoch_end", 2, 2),
        ("epoch_begin", 3, 2), ("step_begin", 3, 3), ("step_end", 3, 3),
        ("step_begin", 3, 4), ("step_end", 3, 4), ("epoch_end", 3, 4),
        ("train_end", 3, 4)]


def test_request_stop_ends_training_after_that_step():
    points, labels = blobs(samples=100)
    stopper = LambdaCallback(on_train_step_end=lambda run_context: (
        run_context.request_stop() if run_context.original_args().cur_step_num == 3 else None))
    recorder = Recorder()
    model_for(classifier()).train(5, dataset(points, labels, batch=10),
                                  callbacks=[recorder, stopper])
    assert len(recorder.losses) == 3 and recorder.events[-1] == ("train_end", 1, 3)


def test_a_network_that_computes_its_own_loss_trains_without_loss_fn():
    points, labels = blobs(samples=64)
    net = classifier()
    with_loss = nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True,
                                                                      reduction="mean"))
    model = Model(with_loss, optimizer=nn.Momentum(net.trainable_params(), 0.05, 0.9))
    recorder = Recorder()
    model.train(4, dataset(points, labels, batch=16), callbacks=recorder)
    assert recorder.losses[-1] < recorder.losses[0]


def test_predict_runs_the_network_compiled():
    points, _ = blobs(samples=8)
    net = classifier()
    model = Model(net)
    out = model.predict(ms.Tensor(points))
    np.testing.assert_allclose(out.asnumpy(), net(ms.Tensor(points)).asnumpy(), rtol=1e-5)
    assert ms.get_code_extra(model.predict_function)["call_count"] == 1
    with pytest.raises(TypeError, match="Model.predict.*got dict"):
        model.predict({"x": 1})


# ---- callbacks -----------------------------------------------------------------------------------

def test_loss_monitor_prints_mindspore_lines(capsys):
    points, labels = blobs(samples=60)
    recorder = Recorder()
    model_for(classifier()).train(2, dataset(points, labels, batch=20),
                                  callbacks=[recorder, LossMonitor(per_print_times=2)])
    lines = capsys.readouterr().out.strip().splitlines()
    # Every second step of the run (3 steps per epoch), numbered within its epoch.
    expected = [(1, 2, recorder.losses[1]), (2, 1, recorder.losses[3]),
                (2, 3, recorder.losses[5])]
    assert len(lines) == 3
    for line, (epoch, step, loss) in zip(lines, expected):
        match = re.fullmatch(r"epoch: (\d+) step: (\d+), loss is (\S+)", line)
        assert match, line
        assert (int(match[1]), int(match[2])) == (epoch, step)
        assert float(match[3]) == pytest.approx(loss, rel=1e-6)


def test_loss_monitor_stops_on_nan_and_checks_its_argument():
    points, labels = blobs(samples=20)
    points[0, 0] = np.nan
    with pytest.raises(ValueError, match="In epoch: 1 step: 1, loss is NAN or INF"):
        model_for(classifier()).train(1, dataset(points, labels, batch=10),
                                      callbacks=LossMonitor())
    with pytest.raises(ValueError, match="LossMonitor: 'per_print_times' must be >= 0"):
        LossMonitor(-1)
    with pytest.raises(TypeError, match="LossMonitor: 'per_print_times' must be an int"):
        LossMonitor(1.5)


def test_time_monitor_history_and_lambda_callback(capsys):
    points, labels = blobs(samples=40)
    history, ends = History(), []
    callbacks = [TimeMonitor(), history,
                 LambdaCallback(on_train_epoch_end=lambda rc: ends.append(
                     rc.original_args().cur_epoch_num))]
    recorder = Recorder()
    model_for(classifier()).train(3, dataset(points, labels, batch=20),
                                  callbacks=callbacks + [recorder])
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 3
    assert all(re.fullmatch(r"Train epoch time: \d+\.\d{3} ms, per step time: \d+\.\d{3} ms", l)
               for l in lines)
    assert history.epoch == {"epoch": [1, 2, 3]} and ends == [1, 2, 3]
    np.testing.assert_allclose(history.history["net_output"], recorder.losses[1::2], rtol=1e-6)


def test_model_checkpoint_writes_files_that_load_back_and_keeps_the_newest(tmp_path):
    points, labels = blobs(samples=80)
    net = classifier()
    config = CheckpointConfig(save_checkpoint_steps=2, keep_checkpoint_max=3,
                              append_info=["epoch_num", "step_num"])
    checkpoint = ModelCheckpoint(prefix="clf", directory=str(tmp_path / "ckpt"), config=config)
    model_for(net).train(3, dataset(points, labels, batch=20), callbacks=checkpoint)
    # 12 steps, saved at 2, 4, ..., 12 (numbered per epoch); the 3 newest are kept.
    files = sorted(os.listdir(tmp_path / "ckpt"))
    assert files == ["clf-2_4.ckpt", "clf-3_2.ckpt", "clf-3_4.ckpt"]
    assert checkpoint.latest_ckpt_file_name == str(tmp_path / "ckpt" / "clf-3_4.ckpt")
    final = load_checkpoint(checkpoint.latest_ckpt_file_name)
    for _, p in net.parameters_and_names():
        np.testing.assert_array_equal(final[p.name].asnumpy(), p.asnumpy())
    assert "moments.0.weight" in final and int(final["step_num"].asnumpy()) == 12
    assert int(final["epoch_num"].asnumpy()) == 3
    # A second run in the same directory takes a new prefix and leaves the first run's files.
    again = ModelCheckpoint(prefix="clf", directory=str(tmp_path / "ckpt"),
                            config=CheckpointConfig(save_checkpoint_steps=100))
    model_for(classifier()).train(1, dataset(points, labels, batch=20), callbacks=again)
    assert sorted(os.listdir(tmp_path / "ckpt")) == sorted(files + ["clf_1-1_4.ckpt"])


def test_checkpoint_config_and_model_checkpoint_arguments():
    config = CheckpointConfig(save_checkpoint_steps=0, save_checkpoint_seconds=10,
                              keep_checkpoint_max=0, keep_checkpoint_per_n_minutes=2)
    assert config.get_checkpoint_policy()["save_checkpoint_seconds"] == 10
    assert CheckpointConfig(keep_checkpoint_max=4).keep_checkpoint_per_n_minutes is None
    with pytest.raises(ValueError, match="CheckpointConfig.*can't all be None or 0"):
        CheckpointConfig(0, 0, 0, 0)
    with pytest.raises(ValueError, match="CheckpointConfig: 'keep_checkpoint_max' must be >= 0"):
        CheckpointConfig(keep_checkpoint_max=-1)
    with pytest.raises(ValueError, match="CheckpointConfig: the strs in 'append_info'"):
        CheckpointConfig(append_info=["loss"])
    with pytest.raises(ValueError, match="ModelCheckpoint: 'prefix' must be a str without '/'"):
        ModelCheckpoint(prefix="a/b")
    with pytest.raises(TypeError, match="ModelCheckpoint: 'config' must be a CheckpointConfig"):
        ModelCheckpoint(config={})


def test_early_stopping_stops_when_the_loss_stops_improving():
    points, labels = blobs(samples=40)
    history = History()
    # The first epoch always improves on the initial best (infinity); after it, only an
    # improvement by more than 100 would count, and none does: two more epochs, then the stop.
    stopper = EarlyStopping(monitor="loss", min_delta=100.0, patience=2)
    model_for(classifier()).train(10, dataset(points, labels, batch=20),
                                  callbacks=[history, stopper])
    assert history.epoch == {"epoch": [1, 2, 3]} and stopper.stopped_epoch == 3
    assert stopper.best == pytest.approx(history.history["net_output"][0])
    patient = EarlyStopping(monitor="loss", patience=3)
    model_for(classifier()).train(4, dataset(points, labels, batch=20), callbacks=patient)
    assert patient.stopped_epoch == 0  # the loss improved every epoch
    with pytest.raises(ValueError, match="EarlyStopping: mode must be 'auto', 'min' or 'max'"):
        EarlyStopping(mode="up")
    with pytest.raises(ValueError, match="EarlyStopping: 'patience' must be >= 0"):
        EarlyStopping(patience=-1)


def test_early_stopping_on_a_metric_restores_the_best_weights():
    points, labels = blobs(samples=60)
    net = classifier()
    model = model_for(net, metrics={"acc"}, learning_rate=0.5)
    snapshots, accuracies = [], []
    keep = LambdaCallback(on_train_epoch_end=lambda rc: (
        snapshots.append(net[0].weight.asnumpy().copy()),
        accuracies.append(rc.original_args().eval_results["acc"])))
    # After the first epoch, accuracy would have to grow by 2 (impossible) to improve: the
    # training stops after two more epochs and the first epoch's weights come back.
    stopper = EarlyStopping(monitor="acc", min_delta=2.0, patience=2, restore_best_weights=True)
    model.fit(6, dataset(points, labels, batch=20), dataset(points, labels),
              callbacks=[keep, stopper])
    assert stopper.stopped_epoch == 3 and len(snapshots) == 3
    assert stopper.best == pytest.approx(accuracies[0])
    assert not np.array_equal(snapshots[0], snapshots[-1])
    np.testing.assert_array_equal(net[0].weight.asnumpy(), snapshots[0])


def test_learning_rate_scheduler_changes_the_optimizer_rate():
    points, labels = blobs(samples=40)
    net = classifier()
    optimizer = nn.Momentum(net.trainable_params(), 0.1, 0.9)
    model = Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                  optimizer)
    seen = []
    halve = LearningRateScheduler(lambda lr, step: seen.append((step, lr)) or lr * 0.5)
    model.train(2, dataset(points, labels, batch=10), callbacks=halve)
    rates = [lr for _, lr in seen]
    np.testing.assert_allclose(rates, [0.1 * 0.5 ** i for i in range(8)], rtol=1e-6)
    assert [step for step, _ in seen] == list(range(1, 9))
    assert float(optimizer.learning_rate.asnumpy()) == pytest.approx(0.1 * 0.5 ** 8)
    scheduled = Model(net, nn.MSELoss(), nn.SGD(net.trainable_params(), [0.1, 0.01]))
    with pytest.raises(TypeError, match="LearningRateScheduler: .*learning_rate is one number"):
        scheduled.train(1, dataset(points, labels.astype(np.float32).reshape(-1, 1), batch=10),
                        callbacks=halve)


def test_a_custom_eval_network_feeds_every_metric_all_its_outputs():
    points, labels = blobs(samples=30)
    net = classifier()

    class Outputs(nn.Cell):
        def __init__(self):
            super().__init__()
            self.net = net

        def construct(self, x, y):
            return self.net(x), y

    model = Model(net, eval_network=Outputs(), metrics={"acc", "top_5_accuracy"})
    result = model.eval(dataset(points, labels, batch=10))
    logits = net(ms.Tensor(points)).asnumpy()
    assert result["acc"] == pytest.approx(np.mean(logits.argmax(axis=1) == labels))
    assert result["top_5_accuracy"] == 1.0  # 3 classes: always among the top 5


def test_fit_evaluates_at_the_requested_epochs(capsys):
    points, labels = blobs(samples=60)
    history = History()
    model = model_for(classifier(), metrics={"accuracy", "loss"})
    model.fit(4, dataset(points, labels, batch=20), dataset(points, labels, batch=30),
              valid_frequency=2, callbacks=[history, LossMonitor(per_print_times=0)])
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split(",")[0] for line in lines] == ["Eval result: epoch 2",
                                                      "Eval result: epoch 4"]
    assert "'accuracy'" in lines[0] and "'loss'" in lines[0]
    assert len(history.history["accuracy"]) == 2 and len(history.history["net_output"]) == 4
    seen_metrics = []
    model.fit(2, dataset(points, labels, batch=20), dataset(points, labels), valid_frequency=[2],
              callbacks=LambdaCallback(on_train_epoch_end=lambda rc: seen_metrics.append(
                  rc.original_args().get("eval_results"))))
    assert seen_metrics[0] is None and set(seen_metrics[1]) == {"accuracy", "loss", "eval_loss"}
    assert seen_metrics[1]["eval_loss"] == pytest.approx(seen_metrics[1]["loss"])


# ---- argument checks -----------------------------------------------------------------------------

def test_model_argument_errors():
    net = classifier()
    points, labels = blobs(samples=20)
    data = dataset(points, labels)
    with pytest.raises(TypeError, match="Model.*'network' must be a Cell, got function"):
        Model(lambda x: x)
    with pytest.raises(ValueError, match="Model.*'metrics' need an 'eval_network', or a "
                                         "'loss_fn'"):
        Model(net, metrics={"accuracy"})
    with pytest.raises(KeyError, match="unsupported metric 'accuracy_score'"):
        Model(net, nn.MSELoss(), metrics={"accuracy_score"})
    with pytest.raises(TypeError, match="Model.*'metrics' must be None, a set"):
        Model(net, nn.MSELoss(), metrics=["accuracy"])
    with pytest.raises(ValueError, match="Model.*keyword arguments may be"):
        Model(net, speed="fast")
    with pytest.raises(ValueError, match="Model.*mixed precision .* needs an optimizer"):
        Model(net, nn.MSELoss(), amp_level="O2")
    with pytest.raises(ValueError, match="Model.*level 'auto' chooses by device"):
        Model(net, nn.MSELoss(), nn.SGD(net.trainable_params()), amp_level="auto")
    with pytest.raises(TypeError, match="Model.*'loss_scale_manager' must be a LossScaleManager"):
        Model(net, nn.MSELoss(), nn.SGD(net.trainable_params()), loss_scale_manager=128.0)
    with pytest.raises(ValueError, match="Model.*'loss_scale_manager' needs an optimizer"):
        Model(net, nn.MSELoss(), loss_scale_manager=ms.FixedLossScaleManager())
    with pytest.raises(ValueError, match="Model.*'amp_level' must be one of"):
        Model(net, amp_level="O9")
    model = model_for(net)
    with pytest.raises(ValueError, match="Model.eval.*'metrics' can not be None or empty"):
        model.eval(data)
    with pytest.raises(ValueError, match="Model.train.*'epoch' must be >= 1, got 0"):
        model.train(0, data)
    with pytest.raises(ValueError, match="Model.train.*bigger than 'initial_epoch'"):
        model.train(2, data, initial_epoch=2)
    with pytest.raises(TypeError, match="Model.train.*'train_dataset' must be a dataset.*list"):
        model.train(1, [(points, labels)])
    with pytest.raises(ValueError, match="Model.train.*'train_dataset' is endless"):
        model.train(1, data.repeat())
    with pytest.raises(ValueError, match="Model.train.*'train_dataset' has no data"):
        model.train(1, data.take(0))
    with pytest.raises(TypeError, match="callbacks must be a Callback or a list of Callbacks"):
        model.train(1, data, callbacks="LossMonitor")
    with pytest.raises(TypeError, match="callbacks must be Callbacks, got int"):
        model.train(1, data, callbacks=[1])
    with pytest.raises(ValueError, match="Model.fit.*'valid_dataset' needs the Model's 'metrics'"):
        model.fit(1, data, data)
    three_columns = ds.NumpySlicesDataset((points, labels, labels), shuffle=False).batch(10)
    with pytest.raises(ValueError, match="should return two elements \\(data, label\\), but "
                                         "got 3"):
        model.train(1, three_columns)


# ---- metrics -------------------------------------------------------------------------------------

def numpy_per_class(y_pred, y, classes):
    predicted = y_pred.argmax(axis=1)
    tp = np.array([np.sum((predicted == c) & (y == c)) for c in range(classes)], np.float64)
    predicted_count = np.array([np.sum(predicted == c) for c in range(classes)], np.float64)
    actual_count = np.array([np.sum(y == c) for c in range(classes)], np.float64)
    return tp, predicted_count, actual_count


def test_classification_metrics_match_numpy_over_several_batches():
    rng = np.random.default_rng(9)
    y_pred = rng.standard_normal((50, 6)).astype(np.float32)
    y = rng.integers(0, 6, 50)
    y[:5] = 5
    batches = [(ms.Tensor(y_pred[i:i + 20]), ms.Tensor(y[i:i + 20])) for i in range(0, 50, 20)]

    def run(metric, *eval_args):
        metric.clear()
        for p, t in batches:
            metric.update(p, t)
        return metric.eval(*eval_args)

    assert run(Accuracy()) == pytest.approx(np.mean(y_pred.argmax(axis=1) == y))
    ranks = np.argsort(-y_pred, axis=1, kind="stable")
    assert run(Top1CategoricalAccuracy()) == pytest.approx(np.mean(ranks[:, 0] == y))
    assert run(Top5CategoricalAccuracy()) == pytest.approx(
        np.mean([y[i] in ranks[i, :5] for i in range(50)]))
    assert run(TopKCategoricalAccuracy(3)) == pytest.approx(
        np.mean([y[i] in ranks[i, :3] for i in range(50)]))
    tp, predicted_count, actual_count = numpy_per_class(y_pred, y, 6)
    precision = np.divide(tp, predicted_count, out=np.zeros(6), where=predicted_count > 0)
    recall = np.divide(tp, actual_count, out=np.zeros(6), where=actual_count > 0)
    np.testing.assert_allclose(run(Precision()), precision)
    np.testing.assert_allclose(run(Recall()), recall)
    assert run(Precision(), True) == pytest.approx(precision.mean())
    f1 = np.divide(2 * tp, predicted_count + actual_count, out=np.zeros(6),
                   where=predicted_count + actual_count > 0)
    np.testing.assert_allclose(run(F1()), f1)
    assert run(F1(), True) == pytest.approx(f1.mean())
    # One-hot labels and lists give the same.
    one_hot = np.eye(6)[y]
    assert Accuracy()(y_pred, one_hot) == pytest.approx(np.mean(y_pred.argmax(axis=1) == y))
    assert Accuracy()(y_pred.tolist(), y.tolist()) == pytest.approx(
        np.mean(y_pred.argmax(axis=1) == y))


def test_multilabel_metrics_match_numpy():
    rng = np.random.default_rng(4)
    y_pred = rng.integers(0, 2, (30, 4))
    y = rng.integers(0, 2, (30, 4))
    y[0] = y_pred[0]
    assert Accuracy("multilabel")(y_pred, y) == pytest.approx(np.mean(np.all(y_pred == y, 1)))
    # MindSpore's multilabel precision and recall are per sample, over its labels.
    tp = (y_pred * y).sum(axis=1)
    precision = Precision("multilabel")
    precision.update(y_pred, y)
    np.testing.assert_allclose(precision.eval(), np.divide(
        tp, y_pred.sum(1), out=np.zeros(30), where=y_pred.sum(1) > 0))
    recall = Recall("multilabel")
    recall.update(y_pred, y)
    np.testing.assert_allclose(recall.eval(), np.divide(tp, y.sum(1), out=np.zeros(30),
                                                        where=y.sum(1) > 0))
    with pytest.raises(ValueError, match="multilabel.*must be 0 or 1"):
        Accuracy("multilabel")(y_pred * 2, y)


def test_regression_metrics_and_loss_match_numpy():
    rng = np.random.default_rng(2)
    y_pred = rng.standard_normal((10, 3)).astype(np.float32)
    y = rng.standard_normal((10, 3)).astype(np.float32)
    mae, mse = MAE(), MSE()
    for metric in (mae, mse):
        metric.update(ms.Tensor(y_pred[:4]), ms.Tensor(y[:4]))
        metric.update(y_pred[4:], y[4:])
    diff = y_pred.astype(np.float64) - y
    assert mae.eval() == pytest.approx(np.abs(diff).sum() / 10)
    assert mse.eval() == pytest.approx((diff ** 2).sum() / 10)
    loss = Loss()
    loss.update(ms.Tensor(np.float32(0.5)))
    loss.update(np.array([1.0, 2.0, 3.0]))
    assert loss.eval() == pytest.approx((0.5 + 2.0) / 2)
    with pytest.raises(ValueError, match="Loss.update.*scalar or 1-D"):
        loss.update(np.ones((2, 2)))


def test_metric_names_indexes_and_errors():
    assert set(names()) >= {"accuracy", "acc", "loss", "mae", "mse", "precision", "recall", "F1",
                            "top_1_accuracy", "top_5_accuracy", "topk"}
    assert isinstance(get_metric_fn("acc"), Accuracy)
    assert get_metric_fn("topk", 2).k == 2
    # set_indexes picks and orders the inputs of update.
    picked = Accuracy().set_indexes([2, 0])
    picked.update(np.array([1, 0]), "ignored", np.array([[0.1, 0.9], [0.8, 0.2]]))
    assert picked.eval() == 1.0
    with pytest.raises(RuntimeError, match="'Accuracy' can not be calculated.*samples is 0"):
        Accuracy().eval()
    with pytest.raises(ValueError, match="Accuracy.update', it needs 2 inputs"):
        Accuracy().update(np.ones((2, 2)))
    with pytest.raises(TypeError, match="'eval_type' must be one of"):
        Accuracy("regression")
    with pytest.raises(ValueError, match="class number not match"):
        metric = Accuracy()
        metric.update(np.ones((2, 3)), np.array([0, 1]))
        metric.update(np.ones((2, 4)), np.array([0, 1]))
    with pytest.raises(ValueError, match="Precision.update'.*class 7.*3 classes"):
        Precision()(np.ones((2, 3)), np.array([0, 7]))
    with pytest.raises(TypeError, match="'TopKCategoricalAccuracy'.*'k' must be an int"):
        TopKCategoricalAccuracy(1.0)
    with pytest.raises(ValueError, match="'Fbeta'.*'beta' must be a number greater than 0"):
        F1.__mro__[1](0)
    with pytest.raises(TypeError, match="inputs must be Tensors, lists or numpy.ndarrays"):
        Accuracy()(np.ones((2, 2)), "labels")

    class Custom(Metric):
        def clear(self):
            self.total = 0

        def update(self, *inputs):
            self.total += len(inputs)

        def eval(self):
            return self.total

    assert Custom()(1, 2, 3) == 3
