"""More activation cells (MindSpore's nn.ELU, SeLU, CELU, SiLU, Mish, FastGelu, Softsign,
Tanhshrink, Hardtanh, LogSigmoid, Softmin, SoftShrink, HShrink, Threshold, GLU, PReLU), each a
thin Cell over its pijit.ops function."""
from pijit import ops
from pijit._numbers import plain
from pijit._tensor import Parameter, Tensor, float32
from pijit.nn.cell import Cell


def _cell(name, fn, doc, **params):
    """A Cell class whose construct is fn(x, *params in order); params are (default) pairs
    stored as attributes and shown by repr."""
    names = tuple(params)

    def __init__(self, *args, **kwargs):
        Cell.__init__(self)
        if len(args) > len(names):
            raise TypeError(f"{name}() takes at most {len(names)} arguments, got {len(args)}")
        values = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names or k in values:
                raise TypeError(f"{name}() got an unexpected or repeated argument {k!r}")
            values[k] = v
        for k in names:
            setattr(self, k, plain(values.get(k, params[k])))
        if "axis" not in names:  # the function checks its numbers now, not at the first call
            fn(Tensor([0.5, -0.5], float32), *(getattr(self, k) for k in names))

    def construct(self, x):
        return fn(x, *(getattr(self, k) for k in names))

    def extend_repr(self):
        return ", ".join(f"{k}={getattr(self, k)}" for k in names)

    return type(name, (Cell,), {"__init__": __init__, "construct": construct,
                                "extend_repr": extend_repr, "__doc__": doc,
                                "__module__": __name__, "__qualname__": name})


ELU = _cell("ELU", ops.elu, "x where x > 0, else alpha * (exp(x) - 1).", alpha=1.0)
CELU = _cell("CELU", ops.celu, "max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).", alpha=1.0)
SeLU = _cell("SeLU", ops.selu, "scale * elu(x, alpha) with SELU's constants.")
SiLU = _cell("SiLU", ops.silu, "x * sigmoid(x).")
Mish = _cell("Mish", ops.mish, "x * tanh(softplus(x)).")
FastGelu = _cell("FastGelu", ops.fast_gelu, "x * sigmoid(1.702 x).")
Softsign = _cell("Softsign", ops.softsign, "x / (1 + |x|).")
Tanhshrink = _cell("Tanhshrink", ops.tanhshrink, "x - tanh(x).")
Hardtanh = _cell("Hardtanh", ops.hardtanh, "x clipped to [min_val, max_val].", min_val=-1.0,
                 max_val=1.0)
LogSigmoid = _cell("LogSigmoid", ops.logsigmoid, "log(sigmoid(x)).")
Softmin = _cell("Softmin", ops.softmin, "softmax(-x) along axis.", axis=-1)
SoftShrink = _cell("SoftShrink", ops.softshrink, "x shrunk toward 0 by lambd.", lambd=0.5)
HShrink = _cell("HShrink", ops.hardshrink, "x where |x| > lambd, else 0.", lambd=0.5)
Threshold = _cell("Threshold", ops.threshold, "x where x > threshold, else value.",
                  threshold=0.0, value=0.0)
GLU = _cell("GLU", ops.glu, "a * sigmoid(b) of the halves of x along axis.", axis=-1)


class PReLU(Cell):
    """x where x > 0, else w * x with learned slopes w: one (channel=1) or one per channel
    (axis 1), initialised to w (MindSpore's nn.PReLU)."""

    def __init__(self, channel=1, w=0.25):
        super().__init__()
        channel = plain(channel)
        if isinstance(channel, bool) or not isinstance(channel, int) or channel <= 0:
            raise ValueError(f"PReLU: channel must be a positive int, got {channel!r}")
        w = plain(w)
        if isinstance(w, (int, float)) and not isinstance(w, bool):
            w = ops.full((channel,), float(w), dtype=float32)
        elif isinstance(w, Tensor):
            if tuple(w.shape) not in ((channel,), (1,)):
                raise ValueError(f"PReLU: w must have shape ({channel},), got {tuple(w.shape)}")
        else:
            raise TypeError(f"PReLU: w must be a number or a Tensor, got {type(w).__name__}")
        self.channel = channel
        self.w = Parameter(w, name="w")

    def construct(self, x):
        return ops.prelu(x, self.w)

    def extend_repr(self):
        return f"channel={self.channel}"


__all__ = ["ELU", "CELU", "SeLU", "SiLU", "Mish", "FastGelu", "Softsign", "Tanhshrink",
           "Hardtanh", "LogSigmoid", "Softmin", "SoftShrink", "HShrink", "Threshold", "GLU",
           "PReLU"]
