"""Activation cells; each construct is one or a few pijit ops."""
import math

from pijit import ops
from pijit._numbers import plain
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


class LeakyReLU(Cell):
    """x where x > 0, else alpha * x."""

    def __init__(self, alpha=0.2):
        super().__init__()
        self.alpha = float(plain(alpha))

    def construct(self, x):
        return ops.leaky_relu(x, self.alpha)

    def extend_repr(self):
        return f"alpha={self.alpha}"


class ReLU6(Cell):
    """min(max(x, 0), 6)."""

    def construct(self, x):
        return ops.relu6(x)


class HSwish(Cell):
    """x * relu6(x + 3) / 6."""

    def construct(self, x):
        return ops.hardswish(x)


class HSigmoid(Cell):
    """relu6(x + 3) / 6."""

    def construct(self, x):
        return ops.hardsigmoid(x)


from pijit.nn.layers import activation_more as _more  # noqa: E402 - after the classes above

# MindSpore's get_activation names.
_ACTIVATIONS = {"relu": ReLU, "sigmoid": Sigmoid, "tanh": Tanh, "gelu": GELU,
                "softmax": Softmax, "logsoftmax": LogSoftmax, "leakyrelu": LeakyReLU,
                "relu6": ReLU6, "hswish": HSwish, "hsigmoid": HSigmoid, "elu": _more.ELU,
                "fast_gelu": _more.FastGelu, "prelu": _more.PReLU, "logsigmoid": _more.LogSigmoid,
                "softsign": _more.Softsign, "silu": _more.SiLU, "mish": _more.Mish,
                "selu": _more.SeLU, "celu": _more.CELU, "hardtanh": _more.Hardtanh,
                "tanhshrink": _more.Tanhshrink, "softshrink": _more.SoftShrink,
                "hshrink": _more.HShrink}


def get_activation(name):
    """The activation Cell named `name` (a key of _ACTIVATIONS: 'relu', 'sigmoid', 'gelu',
    'elu', 'silu', ...); None for None."""
    if name is None:
        return None
    cls = _ACTIVATIONS.get(name.lower()) if isinstance(name, str) else None
    if cls is None:
        raise ValueError(f"get_activation: unknown activation {name!r}; expected one of "
                         f"{sorted(_ACTIVATIONS)}")
    return cls()
