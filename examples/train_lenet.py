"""Trains LeNet-5 on a synthetic, learnable dataset, eagerly (PyNative) and with the training
step under pijit.jit(mode="PIJit"), from the same initial weights, and prints the loss per
epoch of both runs.

The dataset: 10 classes, each a fixed random 1x32x32 template; a sample is its class's template
plus Gaussian noise. Everything is seeded, so the two runs see the same batches in the same
order and their losses agree to float rounding.

    PYTHONPATH=. python examples/train_lenet.py [--epochs 5] [--samples 512] [--batch 32]
"""
import argparse
import time

import numpy as np

import pijit as ms
import pijit.nn as nn
from pijit.common.initializer import Normal


class LeNet5(nn.Cell):
    """The LeNet-5 of MindSpore's documentation (shared/seeds/001), for 32 x 32 inputs; with
    `padding` 2 the first convolution pads its input, and the network takes 28 x 28 ones."""

    def __init__(self, num_class=10, num_channel=1, padding=0):
        super(LeNet5, self).__init__()
        if padding:
            self.conv1 = nn.Conv2d(num_channel, 6, 5, pad_mode='pad', padding=padding)
        else:
            self.conv1 = nn.Conv2d(num_channel, 6, 5, pad_mode='valid')
        self.conv2 = nn.Conv2d(6, 16, 5, pad_mode='valid')
        self.fc1 = nn.Dense(16 * 5 * 5, 120, weight_init=Normal(0.02))
        self.fc2 = nn.Dense(120, 84, weight_init=Normal(0.02))
        self.fc3 = nn.Dense(84, num_class, weight_init=Normal(0.02))
        self.relu = nn.ReLU()
        self.max_pool2d = nn.MaxPool2d(kernel_size=2, stride=2)
        self.flatten = nn.Flatten()

    def construct(self, x):
        x = self.max_pool2d(self.relu(self.conv1(x)))
        x = self.max_pool2d(self.relu(self.conv2(x)))
        x = self.flatten(x)
        x = self.relu(self.fc1(x))
        x = self.relu(self.fc2(x))
        return self.fc3(x)


def make_dataset(samples=512, num_class=10, noise=0.5, seed=0):
    """(images float32 [samples, 1, 32, 32], labels int32 [samples])."""
    rng = np.random.default_rng(seed)
    templates = rng.standard_normal((num_class, 1, 32, 32)).astype(np.float32)
    labels = rng.integers(0, num_class, samples).astype(np.int32)
    images = templates[labels] + noise * rng.standard_normal((samples, 1, 32, 32)).astype(np.float32)
    return images.astype(np.float32), labels


def batches(images, labels, batch, epoch, seed=0):
    """The batches of one epoch, shuffled by (seed, epoch); a short last batch is dropped."""
    order = np.random.default_rng((seed, epoch)).permutation(len(labels))
    for i in range(0, len(order) - batch + 1, batch):
        idx = order[i:i + batch]
        yield ms.Tensor(images[idx]), ms.Tensor(labels[idx])


def build(initial=None, learning_rate=0.002):
    """A LeNet-5 (with `initial` weights, a {name: array} dict, when given), its loss, Adam
    optimizer and TrainOneStepCell. (Momentum(0.1, 0.9), the seed's optimizer, also learns
    but stays on the ln(10) plateau of LeNet's small initial weights for ~18 epochs.)"""
    ms.set_seed(0)
    net = LeNet5()
    if initial is not None:
        for name, p in net.parameters_and_names():
            p.set_data(ms.Tensor(initial[name]))
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction='mean')
    optimizer = nn.Adam(net.trainable_params(), learning_rate)
    train_net = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), optimizer)
    train_net.set_train()
    return net, train_net


def snapshot(net):
    return {name: p.asnumpy().copy() for name, p in net.parameters_and_names()}


def train(mode, initial, images, labels, epochs, batch, max_steps=None, log=print):
    """Trains from `initial` weights; returns the mean loss of each epoch (the loss of each
    step when max_steps is given, stopping after that many steps)."""
    net, train_net = build(initial)
    if mode == "eager":
        step = train_net
    else:
        def train_step(x, y):
            return train_net(x, y)
        step = ms.jit(train_step, mode="PIJit")
    history, every_step = [], []
    for epoch in range(epochs):
        start, losses = time.perf_counter(), []
        for x, y in batches(images, labels, batch, epoch):
            losses.append(float(step(x, y).asnumpy()))
            every_step.append(losses[-1])
            if max_steps is not None and len(every_step) == max_steps:
                return every_step
        history.append(float(np.mean(losses)))
        log(f"{mode:>6} epoch {epoch + 1}: loss {history[-1]:.6f} "
            f"({len(losses)} steps, {time.perf_counter() - start:.2f} s)")
    return history


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--samples", type=int, default=512)
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()
    ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")
    images, labels = make_dataset(args.samples)
    initial = snapshot(build()[0])
    eager = train("eager", initial, images, labels, args.epochs, args.batch)
    jitted = train("PIJit", initial, images, labels, args.epochs, args.batch)
    print("epoch  eager loss  PIJit loss")
    for i, (a, b) in enumerate(zip(eager, jitted)):
        print(f"{i + 1:>5}  {a:10.6f}  {b:10.6f}")
    assert eager[-1] < eager[0] and jitted[-1] < jitted[0], "the loss did not fall"
    np.testing.assert_allclose(jitted, eager, rtol=1e-4, atol=1e-5)
    print("losses fell and both runs agree")


if __name__ == "__main__":
    main()
