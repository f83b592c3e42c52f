"""The host-side queues of sunk datasets and ops.GetNext, which takes a step's row from one.

A DatasetHelper in sink mode (pijit/train/dataset_sink.py) sends its dataset to a named queue:
a pass-limited iterator over the dataset's rows, registered under the queue's name. GetNext
takes the next row from the queue it names, as a network whose data is sunk does at each step
in MindSpore (there, from a queue in device memory)."""
import itertools

import numpy as np

from pijit import _tensor
from pijit._tensor import Tensor
from pijit.ops import Primitive

__all__ = ["GetNext"]

_queues = {}  # queue name -> _TransferDataset sending to it
_queue_numbers = itertools.count()


def _row_types_shapes(row):
    """The dtypes and shapes of a row's columns, read from the tensors themselves (a copy of
    their data per step would cost what the step's input does)."""
    types, shapes = [], []
    for value in row:
        if not isinstance(value, Tensor):
            value = np.asarray(value)
        types.append(value.dtype if isinstance(value, Tensor) else
                     _tensor.pytype_to_dtype(value.dtype))
        shapes.append(tuple(value.shape))
    return types, shapes


class _TransferDataset:
    """The sending side of a sunk dataset: a named queue over `num_epochs` passes of the
    dataset's rows (-1: without end). MindSpore keeps it as `dataset.__transfer_dataset__`."""

    def __init__(self, dataset, num_epochs):
        self.dataset = dataset
        self.queue_name = f"pijit_dataset_queue_{next(_queue_numbers)}"
        self._num_epochs = num_epochs
        self._iterator = None
        self._sending = False
        self._peeked = None

    def send(self, num_epochs=None):
        """Starts sending (again, from the first row) to the queue."""
        if num_epochs is not None:
            self._num_epochs = num_epochs
        self._iterator = self._rows(self._num_epochs)
        self._peeked = None
        self._sending = True
        _queues[self.queue_name] = self

    def _rows(self, num_epochs):
        iterator = self.dataset.create_tuple_iterator(num_epochs=num_epochs)
        while True:
            had_row = False
            for row in iterator:  # one epoch
                had_row = True
                yield tuple(row)
            if not had_row:
                return

    def stop_send(self):
        self._sending = False

    def continue_send(self):
        self._sending = True

    def release(self):
        """Stops sending and removes the queue."""
        self._sending = False
        self._iterator = None
        self._peeked = None
        _queues.pop(self.queue_name, None)

    def peek(self):
        if self._peeked is None:
            self._peeked = self._next_row()
        return self._peeked

    def pop(self):
        row = self._peeked if self._peeked is not None else self._next_row()
        self._peeked = None
        return row

    def _next_row(self):
        if self._iterator is None:
            raise RuntimeError(f"GetNext: the dataset of queue '{self.queue_name}' has been "
                               f"released")
        if not self._sending:
            raise RuntimeError(f"GetNext: sending to queue '{self.queue_name}' is stopped "
                               f"(stop_send); call continue_send() first")
        try:
            return next(self._iterator)
        except StopIteration:
            raise RuntimeError(f"GetNext: queue '{self.queue_name}' is empty: every epoch "
                               f"sent has been taken") from None


def _queue(name):
    queue = _queues.get(name)
    if queue is None:
        raise RuntimeError(f"GetNext: no dataset is being sent to queue '{name}'")
    return queue


class GetNext(Primitive):
    """GetNext(types, shapes, output_num, shared_name)(): the next row of the dataset sent to
    queue `shared_name`, as a tuple of `output_num` Tensors of the given dtypes and shapes (a
    dimension of -1 matches any size). A row that does not match raises RuntimeError."""

    def __init__(self, types, shapes, output_num, shared_name):
        types, shapes = list(types), [tuple(s) for s in shapes]
        if not all(isinstance(t, _tensor.dtype) for t in types):
            raise TypeError(f"GetNext: 'types' must be a list of pijit dtypes, got {types!r}")
        if not all(isinstance(d, int) and not isinstance(d, bool) for s in shapes for d in s):
            raise TypeError(f"GetNext: 'shapes' must be a list of tuples of ints, got {shapes!r}")
        if isinstance(output_num, bool) or not isinstance(output_num, int) or \
                output_num != len(types) or output_num != len(shapes):
            raise ValueError(f"GetNext: 'output_num' ({output_num!r}) must equal the number of "
                             f"types ({len(types)}) and of shapes ({len(shapes)})")
        if not isinstance(shared_name, str):
            raise TypeError(f"GetNext: 'shared_name' must be a str, got "
                            f"{type(shared_name).__name__}")
        super().__init__(types=types, shapes=shapes, output_num=output_num,
                         shared_name=shared_name)

    def __call__(self):
        row = _queue(self.shared_name).pop()
        if len(row) != self.output_num:
            raise RuntimeError(f"GetNext: queue '{self.shared_name}' gave a row of {len(row)} "
                               f"columns, expected {self.output_num}")
        types, shapes = _row_types_shapes(row)
        for i, (got_type, got_shape) in enumerate(zip(types, shapes)):
            want_shape = self.shapes[i]
            if got_type != self.types[i] or len(got_shape) != len(want_shape) or any(
                    w not in (-1, g) for w, g in zip(want_shape, got_shape)):
                raise RuntimeError(
                    f"GetNext: column {i} of queue '{self.shared_name}' is {got_type}{list(got_shape)}"
                    f", expected {self.types[i]}{list(want_shape)} (a last, smaller batch? batch "
                    f"with drop_remainder=True)")
        return tuple(v if isinstance(v, Tensor) else Tensor(np.asarray(v)) for v in row)
