"""Datasets read from the standard files of MNIST and CIFAR-10 in a local folder (MindSpore's
mindspore.dataset.MnistDataset and Cifar10Dataset). Nothing is downloaded: the folder holds
the files as their publishers distribute them (uncompressed).

    MnistDataset     train-images-idx3-ubyte, train-labels-idx1-ubyte,
                     t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte
                     columns "image" (uint8, 28 x 28 x 1) and "label" (uint32)
    Cifar10Dataset   data_batch_1.bin ... data_batch_5.bin, test_batch.bin
                     columns "image" (uint8, 32 x 32 x 3, HWC) and "label" (uint32)

usage picks "train", "test" or "all" (None: all, train first). Like MindSpore, labels are
uint32; map a transforms.TypeCast(pijit.int32) over "label" for a loss. The files are mapped
into memory, not read whole: a row is read when the pipeline reaches it. Shuffled unless
shuffle=False."""
import os

import numpy as np

from pijit.dataset.sources import _check_common, _IndexedSource

__all__ = ["MnistDataset", "Cifar10Dataset"]

_USAGES = (None, "train", "test", "all")


def _check_folder(function, dataset_dir, usage):
    if not isinstance(dataset_dir, (str, os.PathLike)):
        raise TypeError(f"{function}: 'dataset_dir' must be a str, got "
                        f"{type(dataset_dir).__name__}")
    dataset_dir = os.fspath(dataset_dir)
    if not os.path.isdir(dataset_dir):
        raise ValueError(f"{function}: 'dataset_dir' {dataset_dir!r} is not a folder")
    if usage not in _USAGES:
        raise ValueError(f"{function}: 'usage' must be 'train', 'test', 'all' or None, got "
                         f"{usage!r}")
    return dataset_dir


def _check_parallel(function, num_parallel_workers):
    if num_parallel_workers is not None and (isinstance(num_parallel_workers, bool)
                                             or not isinstance(num_parallel_workers, int)
                                             or num_parallel_workers < 1):
        raise ValueError(f"{function}: 'num_parallel_workers' must be None or an int >= 1, got "
                         f"{num_parallel_workers!r}")


def _parts(usage):
    """The parts ("train", "test") that `usage` reads, in order."""
    return ("train", "test") if usage in (None, "all") else (usage,)


class _ImageLabelFiles(_IndexedSource):
    """A dataset of (image, label) rows held in consecutive parts (files or file pairs);
    _ends holds each part's cumulative row count."""
    _ends = None

    @staticmethod
    def _check_args(function, dataset_dir, usage, num_samples, num_parallel_workers, shuffle,
                    sampler, num_shards, shard_id):
        """The checked arguments' folder."""
        folder = _check_folder(function, dataset_dir, usage)
        _check_common(function, num_samples, shuffle, sampler, num_shards, shard_id)
        _check_parallel(function, num_parallel_workers)
        return folder

    def _start(self, shuffle, num_samples, num_shards, shard_id):
        """Starts the source of all the parts' rows, once _ends is set."""
        super().__init__(int(self._ends[-1]), shuffle is not False, num_samples, num_shards,
                         shard_id)

    def get_col_names(self):
        return ["image", "label"]

    def _locate(self, index):
        """(part, row within that part) of the row at `index`."""
        part = int(np.searchsorted(self._ends, index, side="right"))
        return part, index - (int(self._ends[part - 1]) if part else 0)


# ---- MNIST ---------------------------------------------------------------------------------------

_IDX_IMAGES, _IDX_LABELS = 2051, 2049  # the idx magic numbers: uint8 data, 3 or 1 dimensions
_MNIST_FILES = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
                "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}


def _mnist_path(folder, name):
    # Some copies name the files with a dot before "idx" (train-images.idx3-ubyte).
    for candidate in (name, name.replace("-idx", ".idx")):
        path = os.path.join(folder, candidate)
        if os.path.isfile(path):
            return path
    hint = " (decompress the .gz file first)" if os.path.isfile(
        os.path.join(folder, name + ".gz")) else ""
    raise ValueError(f"MnistDataset: {name} is missing from {folder}{hint}")


def _read_idx(path, magic, dims):
    """The uint8 array of an idx file whose header is `magic` and `dims` big-endian int32
    sizes, mapped from the file."""
    header = 4 * (1 + dims)
    size = os.path.getsize(path)
    if size < header:
        raise ValueError(f"MnistDataset: {path} is not an idx file: {size} bytes, shorter than "
                         f"its header")
    with open(path, "rb") as f:
        values = np.frombuffer(f.read(header), ">i4")
    if values[0] != magic:
        raise ValueError(f"MnistDataset: {path} has the magic number {values[0]}, expected "
                         f"{magic} (an idx file of {'images' if dims == 3 else 'labels'})")
    shape = tuple(int(v) for v in values[1:])
    expected = header + int(np.prod(shape))
    if size != expected:
        raise ValueError(f"MnistDataset: {path} has {size} bytes, but its header {shape} needs "
                         f"{expected}: the file is truncated or damaged")
    if shape[0] == 0:
        return np.zeros(shape, np.uint8)
    return np.memmap(path, np.uint8, "r", offset=header, shape=shape)


class MnistDataset(_ImageLabelFiles):
    """MNIST's idx files in `dataset_dir` (see the module's description): columns "image"
    (uint8, H x W x 1) and "label" (uint32)."""

    def __init__(self, dataset_dir, usage=None, num_samples=None, num_parallel_workers=None,
                 shuffle=None, sampler=None, num_shards=None, shard_id=None, cache=None):
        folder = self._check_args("MnistDataset", dataset_dir, usage, num_samples,
                                  num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        images, labels = [], []
        for part in _parts(usage):
            image_path, label_path = (_mnist_path(folder, n) for n in _MNIST_FILES[part])
            part_images = _read_idx(image_path, _IDX_IMAGES, 3)
            part_labels = _read_idx(label_path, _IDX_LABELS, 1)
            if len(part_images) != len(part_labels):
                raise ValueError(f"MnistDataset: {image_path} holds {len(part_images)} images "
                                 f"but {label_path} {len(part_labels)} labels")
            images.append(part_images)
            labels.append(part_labels)
        self._images, self._labels = images, labels
        self._ends = np.cumsum([len(p) for p in images])
        self._start(shuffle, num_samples, num_shards, shard_id)

    def _item(self, index):
        part, offset = self._locate(index)
        image = np.array(self._images[part][offset], np.uint8)[:, :, None]
        return image, np.array(self._labels[part][offset], np.uint32)


# ---- CIFAR-10 ------------------------------------------------------------------------------------

_CIFAR_RECORD = 1 + 3 * 32 * 32  # a label byte, then the red, green and blue 32 x 32 planes
_CIFAR_FILES = {"train": [f"data_batch_{i}.bin" for i in range(1, 6)],
                "test": ["test_batch.bin"]}


def _read_cifar_batch(path):
    size = os.path.getsize(path)
    if size == 0 or size % _CIFAR_RECORD:
        raise ValueError(f"Cifar10Dataset: {path} has {size} bytes, not a whole number of "
                         f"{_CIFAR_RECORD}-byte records: the file is truncated or not a "
                         f"CIFAR-10 binary batch")
    return np.memmap(path, np.uint8, "r", shape=(size // _CIFAR_RECORD, _CIFAR_RECORD))


class Cifar10Dataset(_ImageLabelFiles):
    """CIFAR-10's binary batches in `dataset_dir` (see the module's description): columns
    "image" (uint8, 32 x 32 x 3) and "label" (uint32, 0..9). A missing batch file is an
    error; the batches present are read in their numbered order."""

    def __init__(self, dataset_dir, usage=None, num_samples=None, num_parallel_workers=None,
                 shuffle=None, sampler=None, num_shards=None, shard_id=None, cache=None):
        folder = self._check_args("Cifar10Dataset", dataset_dir, usage, num_samples,
                                  num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        names = []
        for part in _parts(usage):
            names += _CIFAR_FILES[part]
        missing = [n for n in names if not os.path.isfile(os.path.join(folder, n))]
        if missing:
            raise ValueError(f"Cifar10Dataset: {missing} are missing from {folder}")
        self._batches = [_read_cifar_batch(os.path.join(folder, n)) for n in names]
        self._ends = np.cumsum([len(b) for b in self._batches])
        labels = np.concatenate([b[:, 0] for b in self._batches])
        if labels.max(initial=0) > 9:
            bad = names[int(np.searchsorted(self._ends, int(np.argmax(labels > 9)),
                                            side="right"))]
            raise ValueError(f"Cifar10Dataset: {os.path.join(folder, bad)} holds the label "
                             f"{int(labels.max())}; CIFAR-10 labels are 0 to 9")
        self._start(shuffle, num_samples, num_shards, shard_id)

    def _item(self, index):
        batch, offset = self._locate(index)
        record = self._batches[batch][offset]
        image = np.ascontiguousarray(np.asarray(record[1:]).reshape(3, 32, 32).transpose(1, 2, 0))
        return image, np.array(record[0], np.uint32)
