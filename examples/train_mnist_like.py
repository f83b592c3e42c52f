"""Trains LeNet-5 with pijit.train.Model on an MNIST-like dataset that this script makes:
seven-segment digits 0-9, drawn at random positions and stroke widths with noise, 28x28,
written as MNIST's idx files and read back with pijit.dataset.MnistDataset, as the real
MNIST would be. Prints the test accuracy after each epoch (it rises), evaluates the final
network with Model.eval, then loads the last checkpoint ModelCheckpoint wrote into a fresh
LeNet-5 and checks that it predicts exactly what the trained one does.

    PYTHONPATH=. python examples/train_mnist_like.py [--epochs 8] [--train 3000] [--test 400]

Everything is seeded: the same run prints the same numbers."""
import argparse
import os
import struct
import tempfile
import time

import numpy as np

import pijit as ms
import pijit.dataset as ds
from pijit import nn
from pijit.dataset import transforms, vision
from pijit.train import (Callback, CheckpointConfig, LossMonitor, Model, ModelCheckpoint,
                         load_checkpoint, load_param_into_net)

import train_lenet

# Segments of a seven-segment display as (top, left, bottom, right) in a 20 x 12 box:
# a top, b top right, c bottom right, d bottom, e bottom left, f top left, g middle.
SEGMENTS = {"a": (0, 0, 2, 12), "b": (0, 10, 10, 12), "c": (10, 10, 20, 12),
            "d": (18, 0, 20, 12), "e": (10, 0, 20, 2), "f": (0, 0, 10, 2), "g": (9, 0, 11, 12)}
DIGITS = ["abcdef", "bc", "abged", "abgcd", "fgbc", "afgcd", "afgedc", "abc", "abcdefg",
          "abcdfg"]


def render(digit, rng):
    """One 28 x 28 uint8 image of `digit`: its segments scaled, thickened and shifted at
    random, blurred a little, with noise."""
    image = np.zeros((28, 28), np.float32)
    scale_y, scale_x = rng.uniform(0.85, 1.1), rng.uniform(0.8, 1.2)
    top = int(rng.integers(1, 28 - round(20 * scale_y)))
    left = int(rng.integers(2, 28 - round(12 * scale_x) - 1))
    extra = int(rng.integers(0, 2))  # a thicker stroke
    for segment in DIGITS[digit]:
        t, l, b, r = SEGMENTS[segment]
        t, b = top + round(t * scale_y), top + round(b * scale_y) + extra
        l, r = left + round(l * scale_x), left + round(r * scale_x) + extra
        image[t:b, l:r] = rng.uniform(0.7, 1.0)
    image = (image + np.roll(image, 1, 0) + np.roll(image, 1, 1)) / 3  # soften the edges
    image += rng.normal(0.0, 0.15, image.shape)
    return (np.clip(image, 0, 1) * 255).astype(np.uint8)


def write_idx(path, array):
    with open(path, "wb") as f:
        f.write(struct.pack(">BBBB", 0, 0, 8, array.ndim))
        f.write(struct.pack(f">{array.ndim}i", *array.shape))
        f.write(array.tobytes())


def make_mnist_like(folder, train, test, seed=0):
    """Writes the four MNIST idx files of `train` and `test` rendered digits into `folder`."""
    rng = np.random.default_rng(seed)
    for prefix, count in (("train", train), ("t10k", test)):
        labels = rng.integers(0, 10, count).astype(np.uint8)
        images = np.stack([render(int(d), rng) for d in labels])
        write_idx(os.path.join(folder, f"{prefix}-images-idx3-ubyte"), images)
        write_idx(os.path.join(folder, f"{prefix}-labels-idx1-ubyte"), labels)


def pipeline(folder, usage, batch, shuffle):
    """MnistDataset -> float images in [0, 1], NCHW -> int32 labels -> batches."""
    data = ds.MnistDataset(folder, usage=usage, shuffle=shuffle)
    data = data.map([vision.Rescale(1.0 / 255, 0.0), vision.HWC2CHW()], input_columns="image")
    data = data.map(transforms.TypeCast(ms.int32), input_columns="label")
    return data.batch(batch, drop_remainder=usage == "train")


class LeNet5(train_lenet.LeNet5):
    """LeNet-5 for 28 x 28 inputs: the first convolution pads by 2, as the original did."""

    def __init__(self, num_class=10):
        super().__init__(num_class, padding=2)


class AccuracyPrinter(Callback):
    """Prints the evaluation that Model.fit ran at the end of each epoch."""

    def on_train_epoch_end(self, run_context):
        cb_params = run_context.original_args()
        metrics = cb_params.get("metrics") or {}
        if "accuracy" in metrics:
            print(f"epoch {cb_params.cur_epoch_num}: test accuracy {metrics['accuracy']:.4f}",
                  flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--train", type=int, default=3000)
    parser.add_argument("--test", type=int, default=400)
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()
    start = time.perf_counter()
    ms.set_seed(0)
    ds.config.set_seed(0)
    with tempfile.TemporaryDirectory() as folder:
        make_mnist_like(folder, args.train, args.test)
        train_data = pipeline(folder, "train", args.batch, shuffle=True)
        test_data = pipeline(folder, "test", 100, shuffle=False)
        net = LeNet5()
        loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        optimizer = nn.Adam(net.trainable_params(), learning_rate=0.003)
        model = Model(net, loss_fn, optimizer, metrics={"accuracy", "loss"})
        print(f"before training: test accuracy {model.eval(test_data)['accuracy']:.4f}")
        checkpoints = ModelCheckpoint("lenet", os.path.join(folder, "ckpt"),
                                      CheckpointConfig(save_checkpoint_steps=25,
                                                       keep_checkpoint_max=2))
        steps = train_data.get_dataset_size()
        model.fit(args.epochs, train_data, test_data,
                  callbacks=[LossMonitor(per_print_times=steps), checkpoints, AccuracyPrinter()])
        final = model.eval(test_data)
        print(f"final: test accuracy {final['accuracy']:.4f}, loss {final['loss']:.4f}")

        path = checkpoints.latest_ckpt_file_name
        fresh = LeNet5()
        not_loaded, _ = load_param_into_net(fresh, load_checkpoint(path))
        images = next(iter(test_data.create_tuple_iterator()))[0]
        trained_out = model.predict(images).asnumpy()
        fresh.set_train(False)
        reloaded_out = fresh(images).asnumpy()
        same = not not_loaded and np.array_equal(trained_out, reloaded_out)
        print(f"reloaded {os.path.basename(path)} into a fresh LeNet-5: predictions equal: "
              f"{same}")
    print(f"total time {time.perf_counter() - start:.1f} s")
    if not same:
        raise SystemExit("the reloaded network predicts differently")


if __name__ == "__main__":
    main()
