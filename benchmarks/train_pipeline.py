"""What Model.train and the dataset pipeline cost on top of the compiled training step:
steps/s of Model.train over a pijit.dataset pipeline (NumpySlicesDataset -> shuffle ->
batch, and a variant with per-row map transforms) against the bare jitted TrainOneStepCell
called in a Python loop over the same batches, already made into Tensors (and, to tell the
pipeline's share from Model's, the bare step in a loop over the pipeline). Same network (the
LeNet-5 of examples/train_mnist_like.py, 28x28 inputs), same optimizer, same batch size.

Each measurement is one epoch; the runs are interleaved and repeated, and the medians are
printed with the ratio Model.train / bare step (1.0: no overhead; the target is >= 0.9).

    PYTHONPATH=. python benchmarks/train_pipeline.py [--repeat 7] [--samples 2048] [--batch 32]
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

import pijit as ms
import pijit.dataset as ds
from pijit import nn
from pijit.dataset import transforms, vision
from pijit.train import Model

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from train_mnist_like import LeNet5  # noqa: E402


def images_and_labels(samples, seed=0):
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, (samples, 28, 28, 1), dtype=np.uint8)
    labels = rng.integers(0, 10, samples).astype(np.int32)
    return images, labels


def batched_pipeline(images, labels, batch):
    """Rows already in the network's format: the pipeline only shuffles and batches."""
    floats = (images.astype(np.float32) / 255).transpose(0, 3, 1, 2)
    data = ds.NumpySlicesDataset({"image": floats, "label": labels}, shuffle=True)
    return data.batch(batch, drop_remainder=True)


def mapped_pipeline(images, labels, batch):
    """uint8 HWC rows, converted per row by map as an MNIST pipeline does."""
    data = ds.NumpySlicesDataset({"image": images, "label": labels}, shuffle=True)
    data = data.map([vision.Rescale(1.0 / 255, 0.0), vision.HWC2CHW()], input_columns="image")
    data = data.map(transforms.TypeCast(ms.int32), input_columns="label")
    return data.batch(batch, drop_remainder=True)


def time_epoch(run, steps):
    start = time.perf_counter()
    run()
    return steps / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--samples", type=int, default=2048)
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()
    ms.set_seed(0)
    ds.config.set_seed(0)
    images, labels = images_and_labels(args.samples)
    net = LeNet5()
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    optimizer = nn.Momentum(net.trainable_params(), 0.01, 0.9)
    model = Model(net, loss_fn, optimizer)
    pipelines = {"batch": batched_pipeline(images, labels, args.batch),
                 "map+batch": mapped_pipeline(images, labels, args.batch)}
    steps = pipelines["batch"].get_dataset_size()
    # The bare loop: the same train network Model built, compiled the same way, over the
    # batches of one epoch of the pipeline, made into Tensors beforehand.
    batches = [tuple(row) for row in pipelines["batch"].create_tuple_iterator(num_epochs=1)]
    train_network = model.train_network

    @ms.jit
    def bare_step(x, y):
        return train_network(x, y)

    def bare_epoch():
        for x, y in batches:
            bare_step(x, y)

    def bare_over_pipeline():
        for x, y in pipelines["batch"].create_tuple_iterator(num_epochs=1):
            bare_step(x, y)

    # The hand-written loop over the pipeline separates the pipeline's cost (fresh batches
    # each step) from Model.train's own (callbacks, bookkeeping).
    runs = {"bare jitted step": bare_epoch, "bare step over pipeline": bare_over_pipeline}
    for name, data in pipelines.items():
        runs[f"Model.train ({name})"] = (lambda data=data: model.train(1, data))
    for run in runs.values():  # compile, warm the caches
        run()
    results = {name: [] for name in runs}
    for _ in range(args.repeat):
        for name, run in runs.items():
            results[name].append(time_epoch(run, steps))
    bare = statistics.median(results["bare jitted step"])
    print(f"LeNet-5, batch {args.batch}, {steps} steps per epoch, median of {args.repeat} "
          f"epochs each")
    for name, values in results.items():
        median = statistics.median(values)
        overhead_us = (1 / median - 1 / bare) * 1e6
        print(f"{name:26s} {median:8.1f} steps/s  ratio {median / bare:5.3f}  "
              f"overhead {overhead_us:7.1f} us/step  (min {min(values):.1f}, "
              f"max {max(values):.1f})")


if __name__ == "__main__":
    main()
