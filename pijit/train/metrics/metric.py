"""Metric, the base class of evaluation metrics: clear() resets, update(*inputs) accumulates a
batch, eval() gives the result (MindSpore's mindspore.train.Metric). Inputs are Tensors, lists
or NumPy arrays; metrics compute in NumPy."""
import functools
from abc import ABCMeta, abstractmethod

import numpy as np

from pijit._tensor import Tensor

__all__ = ["Metric", "rearrange_inputs"]

_EVAL_TYPES = ("classification", "multilabel")


def rearrange_inputs(func):
    """Decorates a Metric's update so that it receives inputs[i] for each i of the metric's
    `indexes` (set_indexes) instead of all inputs in order."""
    @functools.wraps(func)
    def wrapper(self, *inputs):
        indexes = self.indexes
        return func(self, *(inputs if not indexes else [inputs[i] for i in indexes]))
    return wrapper


class Metric(metaclass=ABCMeta):
    """Base class of metrics. Subclasses define clear, update and eval."""

    def __init__(self):
        self._indexes = None

    def _convert_data(self, data):
        """`data` (a Tensor, list or NumPy array) as a NumPy array."""
        if isinstance(data, Tensor):
            data = data.asnumpy()
            return data.astype(np.float32) if data.dtype.kind not in "biuf" else data
        if isinstance(data, list):
            return np.array(data)
        if isinstance(data, np.ndarray):
            return data
        raise TypeError(f"For '{type(self).__name__}', the inputs must be Tensors, lists or "
                        f"numpy.ndarrays, got {type(data).__name__}")

    @property
    def indexes(self):
        return getattr(self, "_indexes", None)

    def set_indexes(self, indexes):
        """Makes update use inputs[i] for i in `indexes` (a list of ints); returns self."""
        if not isinstance(indexes, list) or not all(isinstance(i, int) and not isinstance(i, bool)
                                                    for i in indexes):
            raise ValueError(f"For 'set_indexes', 'indexes' must be a list of ints, got "
                             f"{indexes!r}")
        self._indexes = indexes
        return self

    def __call__(self, *inputs):
        """The metric of `inputs` alone: clear, update, eval."""
        self.clear()
        self.update(*inputs)
        return self.eval()

    @abstractmethod
    def clear(self):
        """Resets the accumulated state."""

    @abstractmethod
    def update(self, *inputs):
        """Accumulates one batch."""

    @abstractmethod
    def eval(self):
        """The metric of everything accumulated since clear."""

    def _check_input_count(self, inputs, count):
        if len(inputs) != count:
            what = "1 input (loss)" if count == 1 else \
                f"{count} inputs (predicted value, true value)"
            raise ValueError(f"For '{type(self).__name__}.update', it needs {what}, but got "
                             f"{len(inputs)}")

    def _scores_and_labels(self, inputs, one_hot_labels=True):
        """(y_pred, y) of a two-input update as arrays; with one_hot_labels, a one-hot y
        ([N, C], as y_pred) becomes class indices."""
        self._check_input_count(inputs, 2)
        y_pred, y = self._convert_data(inputs[0]), self._convert_data(inputs[1])
        if one_hot_labels and y_pred.ndim == y.ndim and is_one_hot(y):
            y = y.argmax(axis=1)
        return y_pred, y

    def _note_class_count(self, y_pred):
        """Sets self._class_num from the first batch's y_pred and checks it on the next ones."""
        if self._class_num == 0:
            self._class_num = y_pred.shape[1]
        elif y_pred.shape[1] != self._class_num:
            raise ValueError(f"For '{type(self).__name__}.update', class number not match: an "
                             f"earlier batch had {self._class_num} classes, this one "
                             f"{y_pred.shape[1]}")

    def _check_not_empty(self, empty):
        if empty:
            raise RuntimeError(f"The '{type(self).__name__}' can not be calculated, because the "
                               f"number of samples is 0; call update before eval")


class TotalOverCount(Metric):
    """A metric that adds up a total (self._total) and a count (self._count) over the updates
    since clear; eval gives total / count as an np.float64."""

    def __init__(self):
        super().__init__()
        self.clear()

    def clear(self):
        self._total = 0.0
        self._count = 0

    def eval(self):
        self._check_not_empty(self._count == 0)
        return np.float64(self._total) / self._count


class EvaluationBase(Metric):
    """A metric of eval_type 'classification' (y_pred [N, C, ...] scores, y [N, ...] class
    indices or one-hot [N, C]) or 'multilabel' (y_pred and y both 0/1 of the same shape)."""

    def __init__(self, eval_type):
        super().__init__()
        if eval_type not in _EVAL_TYPES:
            raise TypeError(f"The argument 'eval_type' must be one of {_EVAL_TYPES}, got "
                            f"{eval_type!r}")
        self._type = eval_type

    def _check_shape(self, y_pred, y):
        name = type(self).__name__
        if self._type == "classification":
            if y_pred.ndim != y.ndim + 1 or y.shape != (y_pred.shape[0],) + y_pred.shape[2:]:
                raise ValueError(f"For '{name}' (classification), y must have y_pred's shape "
                                 f"without axis 1; got y_pred {y_pred.shape} and y {y.shape}")
        elif y_pred.shape != y.shape:
            raise ValueError(f"For '{name}' ({self._type}), y_pred and y must have the same "
                             f"shape, got {y_pred.shape} and {y.shape}")

    def _check_value(self, y_pred, y):
        if self._type == "multilabel" and not (np.all((y_pred == 0) | (y_pred == 1))
                                               and np.all((y == 0) | (y == 1))):
            raise ValueError(f"For '{type(self).__name__}' (multilabel), every element of y_pred "
                             f"and y must be 0 or 1")

    def _prepared(self, inputs):
        """(y_pred, y) as arrays, a one-hot y turned to class indices, checked; the class count
        set on the first batch and checked on the next ones."""
        y_pred, y = self._scores_and_labels(inputs, self._type == "classification")
        self._check_shape(y_pred, y)
        self._check_value(y_pred, y)
        self._note_class_count(y_pred)
        return y_pred, y


def is_one_hot(data):
    """Whether `data` ([N, C, ...]) holds one-hot rows along axis 1."""
    if data.ndim < 2 or not np.all((data == 0) | (data == 1)):
        return False
    return bool(np.all(data.sum(axis=1) == 1))


def one_hot_rows(class_indices, class_num, metric):
    """[N] class indices as [N, class_num] one-hot rows; a ValueError when an index is out of
    range."""
    class_indices = np.asarray(class_indices).reshape(-1).astype(np.int64)
    if class_indices.size and (class_indices.max() >= class_num or class_indices.min() < 0):
        raise ValueError(f"For '{metric}.update', the true values hold class "
                         f"{int(class_indices.max())}, but the predictions have {class_num} "
                         f"classes")
    return np.eye(class_num)[class_indices]
