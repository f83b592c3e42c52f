"""Activation cells; each construct is one or a few pijit ops."""
import math

from pijit import ops
from pijit.nn.cell import Cell


class ReLU(Cell):
    """max(x, 0)."""

    def construct(self, x):
        return ops.relu(x)


class Sigmoid(Cell):
    """1 / (1 + exp(-x))."""

    def construct(self, x):
        return ops.sigmoid(x)


class Tanh(Cell):
    def construct(self, x):
        return ops.tanh(x)


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


class GELU(Cell):
    """x * Phi(x); approximate=True (MindSpore's default) uses the tanh form
    0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x ** 3)))."""

    def __init__(self, approximate=True):
        super().__init__()
        self.approximate = approximate

    def construct(self, x):
        if self.approximate:
            inner = (x + 0.044715 * x * x * x) * _SQRT_2_OVER_PI
            return 0.5 * x * (ops.tanh(inner) + 1.0)
        return ops.gelu(x)

    def extend_repr(self):
        return f"approximate={self.approximate}"


class Softmax(Cell):
    """softmax along `axis`."""

    def __init__(self, axis=-1):
        super().__init__()
        self.axis = axis

    def construct(self, x):
        return ops.softmax(x, self.axis)

    def extend_repr(self):
        return f"axis={self.axis}"


class LogSoftmax(Softmax):
    def construct(self, x):
        return ops.log_softmax(x, self.axis)


_ACTIVATIONS = {"relu": ReLU, "sigmoid": Sigmoid, "tanh": Tanh, "gelu": GELU,
                "softmax": Softmax, "logsoftmax": LogSoftmax}


def get_activation(name):
    """The activation Cell named `name` ('relu', 'sigmoid', 'tanh', 'gelu', 'softmax',
    'logsoftmax'); None for None."""
    if name is None:
        return None
    cls = _ACTIVATIONS.get(name.lower()) if isinstance(name, str) else None
    if cls is None:
        raise ValueError(f"get_activation: unknown activation {name!r}; expected one of "
                         f"{sorted(_ACTIVATIONS)}")
    return cls()
