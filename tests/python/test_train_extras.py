"""Training extras: the learning-rate list helpers (nn.dynamic_lr) against MindSpore's
documented values and their formulas, a list as an optimizer's learning rate inside the
jitted step against a NumPy SGD loop, Model.train against a hand-written loop over the same
batches, and ProgressBar on a terminal and off one."""
import io
import math
import re
import sys

import numpy as np
import pytest

import pijit as ms
import pijit.dataset as ds
from pijit import nn
from pijit.nn import dynamic_lr
from pijit.train import LossMonitor, Model, ProgressBar

# ---- the list helpers ----------------------------------------------------------------------------


def test_the_examples_of_mindspores_documentation():
    assert dynamic_lr.piecewise_constant_lr([2, 5, 10], [0.1, 0.05, 0.01]) == \
        [0.1, 0.1, 0.05, 0.05, 0.05, 0.01, 0.01, 0.01, 0.01, 0.01]
    np.testing.assert_allclose(dynamic_lr.exponential_decay_lr(0.1, 0.9, 6, 2, 1),
                               [0.1, 0.1, 0.09, 0.09, 0.081, 0.081], rtol=1e-12)
    np.testing.assert_allclose(dynamic_lr.natural_exp_decay_lr(0.1, 0.9, 6, 2, 2, True),
                               [0.1, 0.1, 0.1, 0.1, 0.016529888822158657, 0.016529888822158657],
                               rtol=1e-12)
    np.testing.assert_allclose(dynamic_lr.inverse_decay_lr(0.1, 0.5, 6, 1, 1, True),
                               [0.1, 0.1 / 1.5, 0.05, 0.04, 0.1 / 3, 0.1 / 3.5], rtol=1e-12)
    np.testing.assert_allclose(dynamic_lr.cosine_decay_lr(0.01, 0.1, 6, 2, 2),
                               [0.1, 0.1, 0.055, 0.055, 0.01, 0.01], rtol=1e-12)
    np.testing.assert_allclose(dynamic_lr.polynomial_decay_lr(0.1, 0.01, 6, 2, 2, 0.5),
                               [0.1, 0.1, 0.07363961030678928, 0.07363961030678928, 0.01, 0.01],
                               rtol=1e-12)
    assert dynamic_lr.warmup_lr(0.1, 6, 2, 2) == [0.0, 0.0, 0.05, 0.05, 0.1, 0.1]


@pytest.mark.parametrize("step_per_epoch,decay_epoch", [(1, 1), (3, 2), (4, 5)])
def test_the_lists_follow_their_formulas(step_per_epoch, decay_epoch):
    total = 23
    epochs = [i // step_per_epoch for i in range(total)]
    assert dynamic_lr.exponential_decay_lr(0.2, 0.7, total, step_per_epoch, decay_epoch, True) \
        == pytest.approx([0.2 * 0.7 ** (e // decay_epoch) for e in epochs])
    assert dynamic_lr.natural_exp_decay_lr(0.2, 0.3, total, step_per_epoch, decay_epoch) \
        == pytest.approx([0.2 * math.exp(-0.3 * e) for e in epochs])
    assert dynamic_lr.inverse_decay_lr(0.2, 0.3, total, step_per_epoch, decay_epoch) \
        == pytest.approx([0.2 / (1 + 0.3 * e / decay_epoch) for e in epochs])
    cosine = dynamic_lr.cosine_decay_lr(0.0, 1.0, total, step_per_epoch, decay_epoch)
    assert cosine == pytest.approx(
        [0.5 * (1 + math.cos(math.pi * min(e, decay_epoch) / decay_epoch)) for e in epochs])
    assert cosine[-1] == pytest.approx(0.0, abs=1e-12) and cosine[0] == 1.0
    polynomial = dynamic_lr.polynomial_decay_lr(0.5, 0.1, total, step_per_epoch, decay_epoch,
                                                2.0, update_decay_epoch=True)
    decays = [decay_epoch * max(math.ceil(e / decay_epoch), 1) for e in epochs]
    assert polynomial == pytest.approx([0.4 * (1 - e / d) ** 2 + 0.1
                                        for e, d in zip(epochs, decays)])
    assert dynamic_lr.warmup_lr(0.3, total, step_per_epoch, decay_epoch) == pytest.approx(
        [0.3 * min(e, decay_epoch) / decay_epoch for e in epochs])


def test_list_helper_errors():
    with pytest.raises(ValueError, match="piecewise_constant_lr.*same, non-zero length"):
        dynamic_lr.piecewise_constant_lr([1, 2], [0.1])
    with pytest.raises(ValueError, match="piecewise_constant_lr.*must not decrease"):
        dynamic_lr.piecewise_constant_lr([3, 2], [0.1, 0.2])
    with pytest.raises(TypeError, match="exponential_decay_lr.*'learning_rate' must be a float"):
        dynamic_lr.exponential_decay_lr(1, 0.9, 6, 2, 1)
    with pytest.raises(ValueError, match="cosine_decay_lr.*'max_lr' must be greater than"):
        dynamic_lr.cosine_decay_lr(0.2, 0.1, 6, 2, 1)
    with pytest.raises(ValueError, match="warmup_lr.*'total_step' must be > 0"):
        dynamic_lr.warmup_lr(0.1, 0, 2, 1)
    with pytest.raises(TypeError, match="inverse_decay_lr.*'is_stair' must be a bool"):
        dynamic_lr.inverse_decay_lr(0.1, 0.5, 6, 1, 1, is_stair=1)


# ---- a list as the optimizer's learning rate, in the compiled step -------------------------------

def regression_data(samples=48, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((samples, 3)).astype(np.float32)
    y = (x @ np.array([[1.5], [-2.0], [0.5]], np.float32) + 0.3
         + 0.1 * rng.standard_normal((samples, 1))).astype(np.float32)
    return x, y


def numpy_sgd(w, b, batches, rates):
    """Plain SGD on the mean squared error of x @ w.T + b, one rate per step (the last one
    once the list is used up), in float64."""
    w, b = w.astype(np.float64), b.astype(np.float64)
    for step, (x, y) in enumerate(batches):
        error = x @ w.T + b - y
        grad_w = 2.0 * error.T @ x / error.size
        grad_b = 2.0 * error.sum(axis=0) / error.size
        rate = rates[min(step, len(rates) - 1)]
        w, b = w - rate * grad_w, b - rate * grad_b
    return w, b


def test_a_learning_rate_list_is_read_by_step_inside_one_compiled_graph():
    x, y = regression_data()
    data = ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(8)
    rates = dynamic_lr.piecewise_constant_lr([4, 9, 14], [0.1, 0.03, 0.01])
    ms.set_seed(1)
    net = nn.Dense(3, 1)
    w0, b0 = net.weight.asnumpy().copy(), net.bias.asnumpy().copy()
    optimizer = nn.SGD(net.trainable_params(), learning_rate=rates)
    assert isinstance(optimizer.learning_rate, ms.Parameter)
    assert tuple(optimizer.learning_rate.shape) == (14,)
    model = Model(net, nn.MSELoss(), optimizer)
    model.train(3, data)  # 18 steps: past the end of the list, whose last rate then holds
    stats = ms.get_code_extra(model.train_step_function)
    assert stats["call_count"] == 18 and stats["compile_count"] == 1  # the rate is not a constant
    batches = [(x[i:i + 8], y[i:i + 8]) for i in range(0, 48, 8)] * 3
    w, b = numpy_sgd(w0, b0, batches, rates)
    np.testing.assert_allclose(net.weight.asnumpy(), w, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(net.bias.asnumpy(), b, rtol=1e-4, atol=1e-5)
    # The list is data: new rates set into it are used by the same compiled step.
    optimizer.learning_rate.set_data(ms.Tensor(np.full(14, 0.2, np.float32)))
    model.train(1, data)
    w, b = numpy_sgd(w, b, batches[:6], [0.2])
    np.testing.assert_allclose(net.weight.asnumpy(), w, rtol=1e-4, atol=1e-5)
    assert ms.get_code_extra(model.train_step_function)["compile_count"] == 1


# ---- Model.train against a hand-written loop -----------------------------------------------------

def blobs(samples=96, seed=0):
    rng = np.random.default_rng(seed)
    centers = np.array([[3, 0, 0, 0], [0, 3, 0, 0], [0, 0, 3, 0]], np.float32)
    labels = rng.integers(0, 3, samples).astype(np.int32)
    points = centers[labels] + 0.6 * rng.standard_normal((samples, 4)).astype(np.float32)
    return points.astype(np.float32), labels


def classifier(seed):
    ms.set_seed(seed)
    return nn.SequentialCell(nn.Dense(4, 16), nn.ReLU(), nn.Dense(16, 3))


def test_model_train_gives_the_parameters_of_a_hand_written_loop():
    points, labels = blobs()
    data = ds.NumpySlicesDataset({"x": points, "y": labels}, shuffle=True).batch(16)
    rates = dynamic_lr.cosine_decay_lr(0.005, 0.1, 18, 6, 3)
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")

    net = classifier(seed=4)
    ds.config.set_seed(21)
    Model(net, loss_fn, nn.Momentum(net.trainable_params(), rates, 0.9)).train(3, data)

    hand = classifier(seed=4)
    optimizer = nn.Momentum(hand.trainable_params(), rates, 0.9)

    def forward(x, y):
        return loss_fn(hand(x), y)

    grad_fn = ms.value_and_grad(forward, None, optimizer.parameters)
    ds.config.set_seed(21)  # the same shuffled batches as Model's iterator
    iterator = data.create_tuple_iterator(num_epochs=3)
    steps = 0
    for _ in range(3):
        for x, y in iterator:
            _, grads = grad_fn(x, y)
            optimizer(grads)
            steps += 1
    assert steps == 18
    for (name, trained), (_, reference) in zip(net.parameters_and_names(),
                                                hand.parameters_and_names()):
        np.testing.assert_allclose(trained.asnumpy(), reference.asnumpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=name)
    untrained = classifier(seed=4)
    assert not np.allclose(untrained[0].weight.asnumpy(), hand[0].weight.asnumpy())


# ---- the progress bar ----------------------------------------------------------------------------

class Terminal(io.StringIO):
    def isatty(self):
        return True


class Pipe(io.StringIO):
    def isatty(self):
        return False


def train_with(callbacks, epochs=2):
    points, labels = blobs(samples=80)
    data = ds.NumpySlicesDataset({"x": points, "y": labels}, shuffle=False).batch(16)
    net = classifier(seed=0)
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    Model(net, loss_fn, nn.Momentum(net.trainable_params(), 0.05, 0.9)).train(
        epochs, data, callbacks=callbacks)


def test_the_progress_bar_is_drawn_on_a_terminal(monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    train_with([ProgressBar(width=10, refresh=0.0)])
    text = terminal.getvalue()
    lines = text.split("\n")
    assert len(lines) == 3 and lines[2] == ""  # one line per epoch
    for epoch, line in enumerate(lines[:2], start=1):
        frames = line.split("\r")[1:]
        assert len(frames) == 5  # redrawn at each of the 5 steps (refresh=0)
        assert frames[-1].startswith(f"epoch {epoch}/2 [##########] 5/5 loss: ")
        assert frames[0].startswith(f"epoch {epoch}/2 [##........] 1/5 loss: ")
    last = lines[1].split("\r")[-1]
    assert re.search(r"loss: \d+\.\d{4} \d+\.\d steps/s ETA 0:00:00$", last), last
    middle = lines[0].split("\r")[3]
    assert re.search(r"3/5 loss: \d+\.\d{4} \d+\.\d steps/s ETA \d:\d\d:\d\d$", middle), middle


def test_the_progress_bar_writes_nothing_when_stdout_is_not_a_terminal(monkeypatch):
    pipe = Pipe()
    monkeypatch.setattr(sys, "stdout", pipe)
    train_with([ProgressBar(refresh=0.0), LossMonitor(5)])
    text = pipe.getvalue()
    assert "\r" not in text and "steps/s" not in text
    assert text.splitlines() == [f"epoch: {e} step: 5, loss is {v}" for e, v in
                                 re.findall(r"epoch: (\d) step: 5, loss is (\S+)", text)]
    assert len(text.splitlines()) == 2  # LossMonitor's lines only


def test_training_shows_a_progress_bar_by_default_on_a_terminal_only(monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    train_with(None, epochs=1)
    last = terminal.getvalue().split("\r")[-1]
    assert last.startswith("epoch 1/1 [") and "5/5 loss: " in last, terminal.getvalue()
    pipe = Pipe()
    monkeypatch.setattr(sys, "stdout", pipe)
    train_with([LossMonitor(5)], epochs=1)
    assert "\r" not in pipe.getvalue() and "steps/s" not in pipe.getvalue()
    # A ProgressBar of one's own replaces the default: one bar, drawn with its width.
    terminal = Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    train_with([ProgressBar(width=4, refresh=0.0)], epochs=1)
    frames = terminal.getvalue().split("\r")[1:]
    assert len(frames) == 5 and all("[" in f and f.index("]") - f.index("[") == 5 for f in frames)


def test_the_progress_bar_refresh_limits_the_redraws():
    terminal = Terminal()
    train_with([ProgressBar(refresh=60.0, stream=terminal)], epochs=1)
    frames = terminal.getvalue().split("\r")[1:]
    assert len(frames) == 2  # the first step, then the epoch's last (always drawn)
    with pytest.raises(ValueError, match="ProgressBar: 'width' must be an int >= 1"):
        ProgressBar(width=0)
