"""The iterators of a dataset (MindSpore's create_tuple_iterator and create_dict_iterator).

An iterator runs up to `num_epochs` epochs (-1: without limit). Each epoch ends with
StopIteration, and the next call starts the next epoch, so one iterator serves a training
loop:

    iterator = dataset.create_tuple_iterator(num_epochs=2)
    for epoch in range(2):
        for data, label in iterator:
            ...
"""
import numpy as np

from pijit._tensor import Tensor
from pijit.dataset import config

__all__ = ["TupleIterator", "DictIterator"]

# The NumPy kinds a pijit Tensor holds (bool, int, uint8, float); other columns (strings,
# wide unsigned ints) are given as NumPy arrays.
_TENSOR_DTYPES = {np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64,
                                        np.uint8, np.float16, np.float32, np.float64)}


def _to_output(value, output_numpy):
    array = np.asarray(value)
    if output_numpy:
        return array
    if array.dtype in _TENSOR_DTYPES or array.dtype.name == "bfloat16":
        return Tensor(array if array.flags.c_contiguous else array.copy())
    return array


class _Iterator:
    def __init__(self, dataset, columns, num_epochs, output_numpy):
        if isinstance(num_epochs, bool) or not isinstance(num_epochs, int) or \
                not (num_epochs == -1 or num_epochs >= 1):
            raise ValueError(f"create_iterator: 'num_epochs' must be -1 or a positive int, got "
                             f"{num_epochs!r}")
        if not isinstance(output_numpy, bool):
            raise TypeError(f"create_iterator: 'output_numpy' must be a bool, got "
                            f"{type(output_numpy).__name__}")
        names = dataset.get_col_names()
        if columns is None:
            columns = names
        elif isinstance(columns, str):
            columns = [columns]
        missing = [c for c in columns if c not in names]
        if missing:
            raise ValueError(f"create_tuple_iterator: {missing} are not columns of the dataset "
                             f"{names}")
        self._dataset = dataset
        self._names = list(columns)
        self._positions = [names.index(c) for c in columns]
        self._num_epochs = num_epochs
        self._output_numpy = output_numpy
        self._seed = config.pipeline_seed()
        self._epoch = 0
        self._rows = None

    def __iter__(self):
        return self

    def __next__(self):
        if self._rows is None:
            if self._num_epochs != -1 and self._epoch >= self._num_epochs:
                raise StopIteration
            self._rows = self._dataset._rows((self._seed, self._epoch))
        try:
            row = next(self._rows)
        except StopIteration:
            self._rows = None
            self._epoch += 1
            raise
        return self._output([_to_output(row[i], self._output_numpy) for i in self._positions])

    def get_next(self):
        """The next row (of this epoch)."""
        return next(self)

    def stop(self):
        """Ends the iteration: later calls raise StopIteration."""
        self._rows = None
        self._num_epochs = 0

    def _output(self, values):
        raise NotImplementedError


class TupleIterator(_Iterator):
    """Yields each row as a list of the column values."""

    def _output(self, values):
        return values


class DictIterator(_Iterator):
    """Yields each row as a dict column name -> value."""

    def _output(self, values):
        return dict(zip(self._names, values))
