"""pijit.dataset additions: MnistDataset and Cifar10Dataset on tiny files written here in the
publishers' formats, split, num_parallel_workers (same rows as without workers, errors raised
in the caller with their traceback, never a hang), RandomCrop and RandomHorizontalFlip
against NumPy, and shuffling anew each epoch and each repeat round."""
import os
import struct
import threading
import time
import traceback

import numpy as np
import pytest

import pijit as ms
import pijit.dataset as ds
from pijit.dataset import transforms, vision


def rows(dataset, **kwargs):
    return [tuple(np.asarray(c) for c in row)
            for row in dataset.create_tuple_iterator(output_numpy=True, num_epochs=1, **kwargs)]


def finishes_within(seconds, function):
    """Runs function() in a thread; fails the test if it has not returned after `seconds`.
    Returns what it returned, or raises what it raised."""
    outcome = {}

    def run():
        try:
            outcome["value"] = function()
        except BaseException as error:  # handed to the test thread
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s: the pipeline hangs"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


# ---- MNIST ---------------------------------------------------------------------------------------

def write_idx(path, array):
    """An idx file: magic (0, 0, type 0x08 = uint8, number of dimensions), the sizes as
    big-endian int32, the bytes."""
    with open(path, "wb") as f:
        f.write(struct.pack(">BBBB", 0, 0, 8, array.ndim))
        f.write(struct.pack(f">{array.ndim}i", *array.shape))
        f.write(array.astype(np.uint8).tobytes())


def mnist_folder(folder, train=6, test=4, size=28, seed=0):
    rng = np.random.default_rng(seed)
    data = {}
    for part, count, prefix in (("train", train, "train"), ("test", test, "t10k")):
        images = rng.integers(0, 256, (count, size, size), dtype=np.uint8)
        labels = rng.integers(0, 10, count, dtype=np.uint8)
        write_idx(os.path.join(folder, f"{prefix}-images-idx3-ubyte"), images)
        write_idx(os.path.join(folder, f"{prefix}-labels-idx1-ubyte"), labels)
        data[part] = (images, labels)
    return data


def test_mnist_reads_images_and_labels_in_order(tmp_path):
    data = mnist_folder(str(tmp_path))
    for usage in ("train", "test"):
        dataset = ds.MnistDataset(str(tmp_path), usage=usage, shuffle=False)
        assert dataset.get_col_names() == ["image", "label"]
        assert dataset.get_dataset_size() == len(data[usage][0])
        got = rows(dataset)
        for (image, label), want_image, want_label in zip(got, *data[usage]):
            assert image.shape == (28, 28, 1) and image.dtype == np.uint8
            assert label.shape == () and label.dtype == np.uint32
            np.testing.assert_array_equal(image[:, :, 0], want_image)
            assert int(label) == int(want_label)
    both = rows(ds.MnistDataset(str(tmp_path), shuffle=False))  # None: all, train first
    assert len(both) == 10
    np.testing.assert_array_equal(both[6][0][:, :, 0], data["test"][0][0])
    assert len(rows(ds.MnistDataset(str(tmp_path), usage="all", num_samples=3))) == 3


def test_mnist_shuffles_by_default_and_trains_through_a_pipeline(tmp_path):
    data = mnist_folder(str(tmp_path), train=12)
    dataset = ds.MnistDataset(str(tmp_path), usage="train")
    labels = [int(label) for _, label in rows(dataset)]
    assert sorted(labels) == sorted(int(v) for v in data["train"][1])
    pipeline = dataset.map(transforms.TypeCast(ms.int32), input_columns="label") \
        .map([vision.Rescale(1 / 255, 0), vision.HWC2CHW()], input_columns="image").batch(4)
    images, labels = next(iter(pipeline.create_tuple_iterator()))
    assert images.shape == (4, 1, 28, 28) and images.dtype == ms.float32
    assert labels.dtype == ms.int32


def test_mnist_errors_name_the_file(tmp_path):
    folder = str(tmp_path)
    with pytest.raises(ValueError, match="MnistDataset: train-images-idx3-ubyte is missing"):
        ds.MnistDataset(folder, usage="train")
    mnist_folder(folder)
    with pytest.raises(ValueError, match="MnistDataset: 'usage' must be 'train', 'test', 'all'"):
        ds.MnistDataset(folder, usage="valid")
    with pytest.raises(ValueError, match="is not a folder"):
        ds.MnistDataset(os.path.join(folder, "nowhere"))
    path = os.path.join(folder, "train-images-idx3-ubyte")
    data = open(path, "rb").read()
    open(path, "wb").write(data[:-10])
    with pytest.raises(ValueError, match="train-images-idx3-ubyte has .* bytes, but its header "
                                         r"\(6, 28, 28\) needs .*truncated"):
        ds.MnistDataset(folder, usage="train")
    open(path, "wb").write(b"\0\0\x08\x01" + data[4:])
    with pytest.raises(ValueError, match="magic number 2049, expected 2051"):
        ds.MnistDataset(folder, usage="train")
    write_idx(path, np.zeros((5, 28, 28), np.uint8))
    with pytest.raises(ValueError, match="holds 5 images but .* 6 labels"):
        ds.MnistDataset(folder, usage="train")
    os.remove(path)
    write_idx(os.path.join(folder, "train-images.idx3-ubyte"), np.zeros((6, 28, 28), np.uint8))
    assert ds.MnistDataset(folder, usage="train").get_dataset_size() == 6  # the dotted name


# ---- CIFAR-10 ------------------------------------------------------------------------------------

def cifar_folder(folder, per_batch=3, seed=0):
    rng = np.random.default_rng(seed)
    data = {"train": [], "test": []}
    names = [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]
    for name in names:
        labels = rng.integers(0, 10, per_batch, dtype=np.uint8)
        planes = rng.integers(0, 256, (per_batch, 3, 32, 32), dtype=np.uint8)
        records = np.concatenate([labels[:, None], planes.reshape(per_batch, -1)], axis=1)
        records.tofile(os.path.join(folder, name))
        part = "test" if name.startswith("test") else "train"
        data[part] += [(p.transpose(1, 2, 0), int(lab)) for p, lab in zip(planes, labels)]
    return data


def test_cifar10_reads_hwc_images_and_labels_in_file_order(tmp_path):
    data = cifar_folder(str(tmp_path))
    for usage, count in (("train", 15), ("test", 3), ("all", 18)):
        got = rows(ds.Cifar10Dataset(str(tmp_path), usage=usage, shuffle=False))
        want = data["train"] + data["test"] if usage == "all" else data[usage]
        assert len(got) == count
        for (image, label), (want_image, want_label) in zip(got, want):
            assert image.shape == (32, 32, 3) and image.dtype == np.uint8
            assert label.dtype == np.uint32 and int(label) == want_label
            np.testing.assert_array_equal(image, want_image)


def test_cifar10_errors(tmp_path):
    folder = str(tmp_path)
    cifar_folder(folder)
    os.remove(os.path.join(folder, "data_batch_3.bin"))
    with pytest.raises(ValueError, match=r"\['data_batch_3.bin'\] are missing"):
        ds.Cifar10Dataset(folder, usage="train")
    assert ds.Cifar10Dataset(folder, usage="test").get_dataset_size() == 3
    path = os.path.join(folder, "test_batch.bin")
    open(path, "ab").write(b"\0" * 10)
    with pytest.raises(ValueError, match="test_batch.bin has 9229 bytes, not a whole number of "
                                         "3073-byte records"):
        ds.Cifar10Dataset(folder, usage="test")
    record = np.zeros(3073, np.uint8)
    record[0] = 12
    record.tofile(path)
    with pytest.raises(ValueError, match="test_batch.bin holds the label 12"):
        ds.Cifar10Dataset(folder, usage="test")


# ---- split ---------------------------------------------------------------------------------------

def numbered(n, shuffle=False):
    return ds.NumpySlicesDataset({"x": np.arange(n)}, shuffle=shuffle)


def values(dataset, **kwargs):
    return [int(row[0]) for row in rows(dataset, **kwargs)]


def test_split_sizes_follow_mindspores_rounding():
    assert [d.get_dataset_size() for d in numbered(10).split([0.33, 0.33, 0.34])] == [4, 3, 3]
    # round(2.5) and round(2.5) are 2 (round half to even): 1 row short, added to the first.
    assert [d.get_dataset_size() for d in numbered(5).split([0.5, 0.5])] == [3, 2]
    # 0.45 * 11 = 4.95 -> 5, 0.55 * 11 = 6.05 -> 6: exact.
    assert [d.get_dataset_size() for d in numbered(11).split([0.45, 0.55])] == [5, 6]
    # round(3.5) is 4 twice: 8 rows for 7, one taken from the first split.
    assert [d.get_dataset_size() for d in numbered(7).split([0.5, 0.5])] == [3, 4]


def test_split_consecutive_and_random():
    first, second = numbered(10).split([3, 7], randomize=False)
    assert values(first) == [0, 1, 2] and values(second) == list(range(3, 10))
    ds.config.set_seed(7)
    parts = numbered(20).split([0.25, 0.25, 0.5])
    taken = [values(p) for p in parts]
    assert sorted(sum(taken, [])) == list(range(20))  # disjoint, and every row once
    assert [len(t) for t in taken] == [5, 5, 10]
    assert taken[2] != sorted(taken[2])  # random subsets, read in random order
    iterator = parts[2].create_tuple_iterator(output_numpy=True, num_epochs=2)
    epoch1 = [int(r[0]) for r in iterator]
    epoch2 = [int(r[0]) for r in iterator]
    assert sorted(epoch1) == sorted(epoch2) == sorted(taken[2]) and epoch1 != epoch2
    ds.config.set_seed(7)
    assert [values(p) for p in numbered(20).split([0.25, 0.25, 0.5])] == taken  # reproducible


def test_split_of_a_pipeline_filters_its_rows():
    squared = numbered(12).map(lambda x: x * x)
    parts = squared.split([4, 8])
    got = [values(p) for p in parts]
    assert sorted(got[0] + got[1]) == [i * i for i in range(12)]
    assert got[0] == sorted(got[0])  # a pipeline is read in its own order


def test_split_errors():
    with pytest.raises(RuntimeError, match="split: the sizes \\[3, 3\\] add up to 6, but the "
                                           "dataset has 10 rows"):
        numbered(10).split([3, 3])
    with pytest.raises(ValueError, match="split: float sizes must be in \\(0, 1\\] and add up"):
        numbered(10).split([0.5, 0.6])
    with pytest.raises(RuntimeError, match="give an empty split"):
        numbered(3).split([0.9, 0.1])
    with pytest.raises(TypeError, match="split: 'sizes' must be all ints or all floats"):
        numbered(10).split([5, 0.5])
    with pytest.raises(RuntimeError, match="split: the dataset is endless"):
        numbered(3).repeat().split([1, 2])


# ---- workers -------------------------------------------------------------------------------------

class SlowSource:
    """Random access, 50 ms a row (sleeping, so threads overlap)."""

    def __init__(self, n, fail_at=None):
        self.n, self.fail_at = n, fail_at

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        time.sleep(0.05)
        if index == self.fail_at:
            raise KeyError(f"row {index} is broken")
        return np.array([index], np.int64), np.array(index * 10, np.int64)


def test_generator_workers_read_ahead_in_parallel_and_keep_the_order():
    sequential = ds.GeneratorDataset(SlowSource(16), ["x", "y"], shuffle=False)
    parallel = ds.GeneratorDataset(SlowSource(16), ["x", "y"], shuffle=False,
                                   num_parallel_workers=4)
    start = time.perf_counter()
    want = [(int(x[0]), int(y)) for x, y in rows(sequential)]
    sequential_time = time.perf_counter() - start
    start = time.perf_counter()
    got = finishes_within(30, lambda: [(int(x[0]), int(y)) for x, y in rows(parallel)])
    parallel_time = time.perf_counter() - start
    assert got == want == [(i, 10 * i) for i in range(16)]
    assert parallel_time < sequential_time / 2, (parallel_time, sequential_time)
    ds.config.set_seed(3)
    shuffled = rows(ds.GeneratorDataset(SlowSource(8), ["x", "y"], num_parallel_workers=3))
    ds.config.set_seed(3)
    assert [int(y) for _, y in rows(ds.GeneratorDataset(SlowSource(8), ["x", "y"]))] == \
        [int(y) for _, y in shuffled] != [10 * i for i in range(8)]


def test_an_iterable_source_is_prefetched_by_a_thread_in_order():
    def generate():
        for i in range(50):
            yield np.array(i),

    dataset = ds.GeneratorDataset(generate, ["x"], num_parallel_workers=2)
    assert finishes_within(30, lambda: values(dataset)) == list(range(50))
    assert finishes_within(30, lambda: values(dataset.take(3))) == [0, 1, 2]


def test_map_workers_give_the_rows_of_sequential_map():
    source = numbered(40)

    def slow_square(x):
        time.sleep(0.002)
        return x * x

    want = values(source.map(slow_square))
    got = finishes_within(30, lambda: values(source.map(slow_square, num_parallel_workers=4)))
    assert got == want == [i * i for i in range(40)]


@pytest.mark.parametrize("where", ["map", "random_access", "iterable"])
def test_a_worker_error_is_raised_in_the_caller_with_its_traceback(where):
    def broken_transform(x):
        if int(x) == 7:
            raise ValueError("cannot transform row 7")
        return x

    def broken_generator():
        for i in range(20):
            if i == 7:
                raise ValueError("the generator failed at row 7")
            yield np.array(i),

    dataset = {
        "map": numbered(20).map(broken_transform, num_parallel_workers=3),
        "random_access": ds.GeneratorDataset(SlowSource(12, fail_at=7), ["x", "y"],
                                             shuffle=False, num_parallel_workers=3),
        "iterable": ds.GeneratorDataset(broken_generator, ["x"], num_parallel_workers=2),
    }[where]
    with pytest.raises((ValueError, KeyError), match="row 7") as caught:
        finishes_within(30, lambda: values(dataset))
    text = "".join(traceback.format_exception(caught.value))
    function = {"map": "broken_transform", "random_access": "__getitem__",
                "iterable": "broken_generator"}[where]
    assert f"in {function}" in text  # the worker's own frames
    assert "dataset worker thread" in text


def test_workers_argument_errors():
    with pytest.raises(ValueError, match="map: 'num_parallel_workers' must be in \\[1, 65535\\]"):
        numbered(3).map(lambda x: x, num_parallel_workers=0)
    with pytest.raises(TypeError, match="GeneratorDataset: 'num_parallel_workers' must be an "
                                        "int"):
        ds.GeneratorDataset(SlowSource(2), ["x", "y"], num_parallel_workers=2.0)


# ---- random augmentations ------------------------------------------------------------------------

def test_random_crop_is_a_window_of_the_padded_image():
    image = np.arange(5 * 6 * 3, dtype=np.uint8).reshape(5, 6, 3)
    crop = vision.RandomCrop((3, 4), padding=(1, 2, 1, 0))  # left, top, right, bottom
    padded = np.pad(image, [(2, 0), (1, 1), (0, 0)])
    seen = set()
    for _ in range(600):  # 25 positions: all drawn unless a 1e-9 chance
        out = crop(image)
        assert out.shape == (3, 4, 3)
        windows = [(t, l) for t in range(padded.shape[0] - 2) for l in range(padded.shape[1] - 3)
                   if np.array_equal(padded[t:t + 3, l:l + 4], out)]
        assert windows, "not a window of the padded image"
        seen.update(windows)
    assert len(seen) == (7 - 3 + 1) * (8 - 4 + 1)  # every position is drawn


@pytest.mark.parametrize("mode,numpy_mode", [(vision.Border.EDGE, "edge"),
                                             (vision.Border.REFLECT, "reflect"),
                                             (vision.Border.SYMMETRIC, "symmetric")])
def test_random_crop_padding_modes_match_numpy(mode, numpy_mode):
    image = np.random.default_rng(0).integers(0, 256, (4, 4), dtype=np.uint8)
    out = vision.RandomCrop(8, padding=2, padding_mode=mode)(image)
    np.testing.assert_array_equal(out, np.pad(image, 2, mode=numpy_mode))


def test_random_crop_fill_and_pad_if_needed():
    image = np.full((2, 3, 3), 9, np.uint8)
    out = vision.RandomCrop((2, 5), padding=1, fill_value=(1, 2, 3))(image)
    assert out.shape == (2, 5, 3)
    grown = vision.RandomCrop((6, 3), pad_if_needed=True, fill_value=4)(image[:, :, 0])
    assert grown.shape == (6, 3) and (grown == 9).sum() == 6 and (grown == 4).sum() == 12
    with pytest.raises(ValueError, match="RandomCrop: the crop size \\(6, 3\\) is bigger than "
                                         "the image \\(2, 3\\)"):
        vision.RandomCrop((6, 3))(image)
    with pytest.raises(ValueError, match="RandomCrop: 'size' must be a positive int"):
        vision.RandomCrop(0)
    with pytest.raises(ValueError, match="RandomCrop: 'padding' must be an int >= 0"):
        vision.RandomCrop(2, padding=(1, 2, 3))
    with pytest.raises(ValueError, match="RandomCrop: 'padding_mode' must be a Border"):
        vision.RandomCrop(2, padding_mode="wrap")


def test_random_horizontal_flip():
    image = np.arange(12, dtype=np.uint8).reshape(3, 4)
    np.testing.assert_array_equal(vision.RandomHorizontalFlip(1.0)(image), image[:, ::-1])
    np.testing.assert_array_equal(vision.RandomHorizontalFlip(0.0)(image), image)
    flip = vision.RandomHorizontalFlip()
    flipped = sum(np.array_equal(flip(image), image[:, ::-1]) for _ in range(400))
    assert 150 < flipped < 250
    with pytest.raises(ValueError, match="RandomHorizontalFlip: 'prob' must be in \\[0, 1\\]"):
        vision.RandomHorizontalFlip(1.5)


def augmented(workers, epochs=2):
    images = np.random.default_rng(1).integers(0, 256, (16, 6, 6, 1), dtype=np.uint8)
    dataset = ds.NumpySlicesDataset({"image": images}, shuffle=False).map(
        [vision.RandomCrop(4, padding=1), vision.RandomHorizontalFlip()],
        num_parallel_workers=workers)
    iterator = dataset.create_tuple_iterator(output_numpy=True, num_epochs=epochs)
    return [np.stack([row[0] for row in iterator]) for _ in range(epochs)]


def test_augmentations_are_seeded_new_each_epoch_and_independent_of_workers():
    ds.config.set_seed(11)
    first = augmented(workers=1)
    ds.config.set_seed(11)
    again = augmented(workers=1)
    ds.config.set_seed(11)
    threaded = augmented(workers=4)
    for a, b, c in zip(first, again, threaded):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)
    assert not np.array_equal(first[0], first[1])  # a new augmentation each epoch
    ds.config.set_seed(12)
    assert not np.array_equal(augmented(workers=1)[0], first[0])


# ---- shuffling with repeat -----------------------------------------------------------------------

@pytest.mark.parametrize("build", [
    lambda: ds.NumpySlicesDataset({"x": np.arange(30)}, shuffle=True).repeat(3),
    lambda: numbered(30).shuffle(30).repeat(3),
], ids=["shuffled_source", "shuffle_op"])
def test_each_repeat_round_and_each_epoch_has_a_new_order(build):
    ds.config.set_seed(5)
    iterator = build().create_tuple_iterator(output_numpy=True, num_epochs=2)
    epochs = [[int(r[0]) for r in iterator] for _ in range(2)]
    rounds = [epoch[i * 30:(i + 1) * 30] for epoch in epochs for i in range(3)]
    assert all(sorted(r) == list(range(30)) for r in rounds)
    assert len({tuple(r) for r in rounds}) == 6  # six rounds, six orders
    ds.config.set_seed(5)
    iterator = build().create_tuple_iterator(output_numpy=True, num_epochs=2)
    assert [[int(r[0]) for r in iterator] for _ in range(2)] == epochs
