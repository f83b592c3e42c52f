"""Networks: Cell runs `construct`; in GRAPH_MODE construct is compiled as one graph."""
from pijit import _C
from pijit import _autodiff
from pijit._tensor import Parameter
from pijit.context import GRAPH_MODE, get_context
from pijit.jit import jit


class Cell:
    """Base class of networks. Subclasses define `construct(*inputs)`."""

    def __init__(self, auto_prefix=True):
        self.__dict__["_params"] = {}
        self.__dict__["training"] = False

    def __setattr__(self, name, value):
        if isinstance(value, Parameter):
            self.__dict__.setdefault("_params", {})[name] = value
            if value.name is None:
                value.name = name
        self.__dict__[name] = value

    def construct(self, *inputs):
        raise NotImplementedError(f"{type(self).__name__} must define construct()")

    def __call__(self, *args, **kwargs):
        if _C._tape_recording() and _autodiff.has_bprop(self):
            return _autodiff.call_with_bprop(self, args, kwargs)  # a custom gradient
        if get_context("mode") == GRAPH_MODE:
            cls = type(self)
            compiled = cls.__dict__.get("_pijit_graph_construct")
            if compiled is None or compiled.__wrapped__ is not cls.construct:
                compiled = jit(cls.construct, mode="PSJit")
                setattr(cls, "_pijit_graph_construct", compiled)
            return compiled(self, *args, **kwargs)
        return self.construct(*args, **kwargs)

    def get_parameters(self):
        for value in self.__dict__.values():
            if isinstance(value, Cell):
                yield from value.get_parameters()
        yield from self.__dict__.get("_params", {}).values()

    def trainable_params(self):
        return [p for p in self.get_parameters() if p.requires_grad]

    def set_train(self, mode=True):
        self.__dict__["training"] = mode
        return self


# Capture inlines `construct` where a Cell is called.
_C._register_cell_call(Cell.__dict__["__call__"])
