"""Dataset sinking (MindSpore's mindspore.DatasetHelper, connect_network_with_dataset,
data_sink, nn.GetNextSingleOp and ops.GetNext).

In MindSpore a sunk dataset is sent to a named queue on the device, and the network takes each
step's batch from that queue itself (a GetNext op at the start of its graph) instead of being
called with it. pijit's tensors live in host memory, so its queue is a named host-side queue
over the dataset's iterator: sending registers the queue, GetNext takes the next row from it,
checks it against the types and shapes the queue was declared with, and returns it as Tensors.
The code written for MindSpore's sink mode runs unchanged and sees the same rows in the same
order as a loop over the dataset would.

    helper = ms.DatasetHelper(dataset, dataset_sink_mode=True)
    net_with_data = ms.connect_network_with_dataset(train_net, helper)
    for _ in helper:                 # one epoch: a step per batch
        loss = net_with_data()       # takes its batch from the queue

    step = ms.data_sink(train_step, dataset, sink_size=4)
    loss = step()                    # four steps over the next four batches; the last loss

The queue reads the dataset on the caller's thread when a step asks for a row (MindSpore
prefetches up to 100 batches on a thread of its own); the rows and their order are the same.
"""
from pijit._arg_checks import check_bool
from pijit._primitives_queue import GetNext, _TransferDataset, _row_types_shapes
from pijit._tensor import Tensor
from pijit.nn.cell import Cell

__all__ = ["DatasetHelper", "GetNextSingleOp", "connect_network_with_dataset", "data_sink"]

def _check_dataset(function, dataset):
    if not (hasattr(dataset, "create_tuple_iterator") and hasattr(dataset, "get_dataset_size")):
        raise TypeError(f"{function}: 'dataset' must be a pijit.dataset dataset, got "
                        f"{type(dataset).__name__}")


def _check_count(function, name, value, allow_minus_one):
    if isinstance(value, bool) or not isinstance(value, int) or \
            not (value > 0 or (allow_minus_one and value == -1)):
        allowed = "-1 or a positive int" if allow_minus_one else "a positive int"
        raise ValueError(f"{function}: '{name}' must be {allowed}, got {value!r}")
    return value


class _SinkIterator:
    """What iterating a DatasetHelper yields: in sink mode an empty tuple per step (the network
    takes its data from the queue), otherwise each row."""

    def __init__(self, helper):
        self.dataset = helper._dataset
        self._helper = helper

    def __iter__(self):
        helper = self._helper
        if not helper._sink_mode:
            yield from (tuple(row) for row in helper._host_iterator)
            return
        if not helper._sent:
            helper._transfer.send()
            helper._sent = True
        for _ in range(helper.sink_size()):
            yield ()


class DatasetHelper:
    """DatasetHelper(dataset, dataset_sink_mode=True, sink_size=-1, epoch_num=1): iterating it
    gives one epoch. In sink mode (see the module docstring) each step yields () and the network
    connected with connect_network_with_dataset takes its row from the queue; an epoch is
    `sink_size` steps (-1: the dataset's size). Otherwise it yields the rows."""

    def __init__(self, dataset, dataset_sink_mode=True, sink_size=-1, epoch_num=1):
        _check_dataset("DatasetHelper", dataset)
        self._sink_mode = check_bool("DatasetHelper: 'dataset_sink_mode'", dataset_sink_mode)
        self._sink_size = _check_count("DatasetHelper", "sink_size", sink_size, True)
        self._epoch_num = _check_count("DatasetHelper", "epoch_num", epoch_num, False)
        self._dataset = dataset
        self._sent = False
        if self._sink_mode:
            # An epoch of sink_size steps need not end where the dataset's epochs do: the
            # queue runs over as many of the dataset's passes as the epochs take.
            steps = self.sink_size() * epoch_num
            passes = max(1, -(-steps // max(1, dataset.get_dataset_size())))
            self._transfer = _TransferDataset(dataset, passes)
            dataset.__transfer_dataset__ = self._transfer
        else:
            self._host_iterator = dataset.create_tuple_iterator(num_epochs=epoch_num)
        self.iter = _SinkIterator(self)

    def __iter__(self):
        return iter(self.iter)

    def sink_size(self):
        """The steps of one epoch: sink_size, or the dataset's size when it is -1."""
        return self._dataset.get_dataset_size() if self._sink_size == -1 else self._sink_size

    def types_shapes(self):
        """The dtypes and shapes of the dataset's columns (those of its first row)."""
        row = next(iter(self._dataset.create_tuple_iterator(num_epochs=1)))
        return _row_types_shapes(row)

    def get_data_info(self):
        """The dtypes and shapes of the next row the network will take (sink mode)."""
        self._require_sink("get_data_info")
        if not self._sent:
            self._transfer.send()
            self._sent = True
        return _row_types_shapes(self._transfer.peek())

    def stop_send(self):
        self._require_sink("stop_send")
        self._transfer.stop_send()

    def continue_send(self):
        self._require_sink("continue_send")
        self._transfer.continue_send()

    def release(self):
        self._require_sink("release")
        self._transfer.release()

    def _require_sink(self, method):
        if not self._sink_mode:
            raise RuntimeError(f"DatasetHelper.{method}: only in dataset sink mode")


class GetNextSingleOp(Cell):
    """GetNextSingleOp(dataset_types, dataset_shapes, queue_name)(): the next row of the dataset
    sent to `queue_name`, as a tuple of Tensors (see ops.GetNext)."""

    def __init__(self, dataset_types, dataset_shapes, queue_name):
        super().__init__()
        self.get_next = GetNext(dataset_types, dataset_shapes, len(dataset_types), queue_name)

    def __call__(self, *args, **kwargs):
        # Taking a row is an effect on the queue that every call repeats: never compiled into
        # a graph (GRAPH_MODE would run a construct of no tensor inputs once per guard set).
        return self.get_next()

    def construct(self):
        return self.get_next()


class _DataWrapper(Cell):
    """`network` fed from a dataset's queue: each call takes the next row and runs the network
    on it (arguments given to the call are not used, as in MindSpore)."""

    def __init__(self, network, dataset_types, dataset_shapes, queue_name):
        super().__init__(auto_prefix=False)
        self.network = network
        self.get_next = GetNextSingleOp(dataset_types, dataset_shapes, queue_name)

    def __call__(self, *args, **kwargs):
        # The row is taken outside the network's compiled graph (see GetNextSingleOp); the
        # network itself is called as a Cell, compiled in GRAPH_MODE.
        return self.network(*self.get_next())

    def construct(self, *args):
        return self.network(*self.get_next())


def connect_network_with_dataset(network, dataset_helper):
    """A Cell that runs `network` on the next row of `dataset_helper`'s queue at each call
    (sink mode only: RuntimeError otherwise)."""
    if not isinstance(network, Cell):
        raise TypeError(f"connect_network_with_dataset: 'network' must be a Cell, got "
                        f"{type(network).__name__}")
    if not isinstance(dataset_helper, DatasetHelper):
        raise TypeError(f"connect_network_with_dataset: 'dataset_helper' must be a "
                        f"DatasetHelper, got {type(dataset_helper).__name__}")
    if not dataset_helper._sink_mode:
        raise RuntimeError("connect_network_with_dataset: the DatasetHelper must be in dataset "
                           "sink mode (dataset_sink_mode=True)")
    types, shapes = dataset_helper.types_shapes()
    return _DataWrapper(network, types, shapes, dataset_helper._transfer.queue_name)


def _check_signature(signature, row):
    signature = list(signature) if isinstance(signature, (list, tuple)) else [signature]
    if len(signature) != len(row):
        raise TypeError(f"data_sink: input_signature has {len(signature)} tensors, the dataset's "
                        f"rows {len(row)} columns")
    for i, (want, got) in enumerate(zip(signature, row)):
        if not isinstance(want, Tensor):
            raise TypeError(f"data_sink: input_signature[{i}] must be a Tensor, got "
                            f"{type(want).__name__}")
        got_type, got_shape = (t[0] for t in _row_types_shapes([got]))
        want_shape = tuple(want.shape)
        if got_type != want.dtype or len(got_shape) != len(want_shape) or any(
                w not in (-1, g) for w, g in zip(want_shape, got_shape)):
            raise TypeError(f"data_sink: input {i} is {got_type}{list(got_shape)}, "
                            f"input_signature says {want.dtype}{list(want_shape)}")


def data_sink(fn, dataset, sink_size=1, jit_config=None, input_signature=None):
    """A function of no arguments that runs `fn` on the next `sink_size` rows of `dataset` and
    returns the last call's result. The dataset is repeated without end. With `jit_config` fn
    is compiled (pijit.jit with those settings); without, it runs as written."""
    if not callable(fn):
        raise TypeError(f"data_sink: 'fn' must be callable, got {type(fn).__name__}")
    _check_dataset("data_sink", dataset)
    _check_count("data_sink", "sink_size", sink_size, False)
    from pijit.jit_config import JitConfig
    if jit_config is not None and not isinstance(jit_config, JitConfig):
        raise TypeError(f"data_sink: 'jit_config' must be a JitConfig or None, got "
                        f"{type(jit_config).__name__}")
    if input_signature is not None and not isinstance(input_signature, (Tensor, list, tuple)):
        raise TypeError(f"data_sink: 'input_signature' must be a Tensor or a list or tuple of "
                        f"Tensors, got {type(input_signature).__name__}")
    if jit_config is not None:
        from pijit.jit import jit
        fn = jit(fn, jit_config=jit_config)
    transfer = _TransferDataset(dataset, -1)
    transfer.send()

    def sink_process(*args, **kwargs):
        result = None
        for _ in range(sink_size):
            row = transfer.pop()
            if input_signature is not None:
                _check_signature(input_signature, row)
            result = fn(*row)
        return result

    sink_process.__name__ = getattr(fn, "__name__", "sink_process")
    return sink_process
