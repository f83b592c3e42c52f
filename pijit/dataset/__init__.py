"""Data pipelines (MindSpore's mindspore.dataset): sources of Python data and of MNIST and
CIFAR-10 files, and the operations that batch, shuffle, transform, repeat and split them,
iterated as pijit Tensors.

    import pijit.dataset as ds
    data = ds.NumpySlicesDataset({"x": images, "y": labels}, shuffle=True)
    data = data.map(ds.transforms.TypeCast(pijit.int32), input_columns="y").batch(32)
    for x, y in data.create_tuple_iterator():
        ...
"""
from pijit.dataset import config, transforms, vision
from pijit.dataset.datasets import Dataset
from pijit.dataset.iterators import DictIterator, TupleIterator
from pijit.dataset.readers import Cifar10Dataset, MnistDataset
from pijit.dataset.sources import GeneratorDataset, NumpySlicesDataset

__all__ = ["Dataset", "NumpySlicesDataset", "GeneratorDataset", "MnistDataset",
           "Cifar10Dataset", "TupleIterator", "DictIterator", "config", "transforms", "vision"]
