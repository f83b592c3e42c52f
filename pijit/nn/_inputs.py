"""Cell.set_inputs: the inputs a Cell's compiled construct is declared for. A placeholder
(Tensor(shape=[None, 3], dtype=...), or shape=None for any rank) fixes its dtype and its
known sizes; its None sizes are symbolic from the first compile, so one graph serves every
size that matches."""
from pijit._tensor import Tensor


def placeholder_shape(t):
    """A placeholder's declared shape (None entries unknown; None itself: any rank), or the
    shape of a tensor given as an input."""
    return t.__dict__.get("_placeholder_shape", tuple(t.shape)) if hasattr(t, "__dict__") \
        else tuple(t.shape)


def check_inputs(cell, inputs, args):
    """Raises a ValueError naming the input when `args` do not match what set_inputs gave."""
    name = type(cell).__name__
    if len(args) != len(inputs):
        raise ValueError(f"{name}: set_inputs declared {len(inputs)} inputs, the call gives "
                         f"{len(args)}")
    for i, (want, got) in enumerate(zip(inputs, args)):
        if not isinstance(want, Tensor):
            continue
        if not isinstance(got, Tensor):
            raise ValueError(f"{name}: input {i} must be a Tensor (set_inputs), got "
                             f"{type(got).__name__}")
        shape = placeholder_shape(want)
        if got.dtype != want.dtype:
            raise ValueError(f"{name}: input {i} is {got.dtype}, set_inputs declared "
                             f"{want.dtype}")
        if shape is not None and (len(shape) != got.ndim or any(
                d is not None and d != g for d, g in zip(shape, got.shape))):
            raise ValueError(f"{name}: input {i} has shape {tuple(got.shape)}, which does not "
                             f"match {_text(shape)} given to set_inputs")


def dynamic_dims(inputs, args):
    """(argument index of construct, counting self, dimension) of every unknown size."""
    dims = []
    for i, (want, got) in enumerate(zip(inputs, args)):
        if not isinstance(want, Tensor):
            continue
        shape = placeholder_shape(want)
        unknown = range(got.ndim) if shape is None else [d for d, s in enumerate(shape) if s is None]
        dims += [(i + 1, d) for d in unknown]
    return tuple(dims)


def _text(shape):
    return "(" + ", ".join("None" if d is None else str(d) for d in shape) + \
        ("," if len(shape) == 1 else "") + ")"
