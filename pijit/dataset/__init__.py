"""Data pipelines (MindSpore's mindspore.dataset): sources of Python data and the operations
that batch, shuffle, transform and repeat them, iterated as pijit Tensors.

    import pijit.dataset as ds
    data = ds.NumpySlicesDataset({"x": images, "y": labels}, shuffle=True)
    data = data.map(ds.transforms.TypeCast(pijit.int32), input_columns="y").batch(32)
    for x, y in data.create_tuple_iterator():
        ...
"""
from pijit.dataset import config, transforms, vision
from pijit.dataset.datasets import Dataset
from pijit.dataset.iterators import DictIterator, TupleIterator
from pijit.dataset.sources import GeneratorDataset, NumpySlicesDataset

__all__ = ["Dataset", "NumpySlicesDataset", "GeneratorDataset", "TupleIterator", "DictIterator",
           "config", "transforms", "vision"]
