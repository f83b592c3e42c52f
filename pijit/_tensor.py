"""pijit.Tensor: the native tensor type, with printing in the style MindSpore uses."""
import numpy as np

from pijit import _C

Tensor = _C.Tensor
dtype = _C.dtype
bool_ = dtype.bool
int32 = dtype.i32
int64 = dtype.i64
float32 = dtype.f32
float64 = dtype.f64


def _str(self):
    return str(self.asnumpy())


def _repr(self):
    body = np.array2string(self.asnumpy(), separator=", ", prefix="Tensor(")
    shape = "[" + ", ".join(str(d) for d in self.shape) + "]"
    return f"Tensor(shape={shape}, dtype={self.dtype}, value={body})"


def _iter(self):
    # Not a generator function: a 0-d tensor fails at iter(), as in NumPy.
    if self.ndim == 0:
        raise TypeError("iteration over a 0-d tensor")
    return (self[i] for i in range(self.shape[0]))


Tensor.__str__ = _str
Tensor.__repr__ = _repr
Tensor.__iter__ = _iter
Tensor.tolist = lambda self: self.asnumpy().tolist()
Tensor.T = property(lambda self: self.transpose())
Tensor.__module__ = "pijit"


class Parameter(Tensor):
    """A Tensor that a Cell trains: it has a name and a requires_grad flag."""

    def __init__(self, default_input, name=None, requires_grad=True):
        super().__init__(default_input)
        self.name = name
        self.requires_grad = requires_grad

    def __repr__(self):
        return f"Parameter (name={self.name}, shape={self.shape}, dtype={self.dtype}, " \
               f"requires_grad={self.requires_grad})"


class ParameterTuple(tuple):
    """A tuple of Parameters: the weights GradOperation(get_by_list=True) differentiates."""

    def __new__(cls, iterable=()):
        items = tuple(iterable)
        for p in items:
            if not isinstance(p, Parameter):
                raise TypeError(f"ParameterTuple: expected Parameters, got {type(p).__name__}")
        return super().__new__(cls, items)
