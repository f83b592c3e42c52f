"""Checks of the integer arguments of layers and schedules. Each accepts a Python int or what
`plain` turns into one (a 0-d Tensor, a NumPy integer) and raises a ValueError that names the
owner (the layer or schedule) and the argument."""
from pijit._numbers import plain


def positive_int(owner, what, value):
    """`value` as an int > 0."""
    value = plain(value)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{owner}: {what} must be a positive int, got {value!r}")
    return value


def int_at_least(owner, what, value, minimum):
    """`value` as an int >= minimum; a one-element tuple or list stands for its element (the
    form the 2-D layers take, which the 1-D ones accept too)."""
    value = plain(value)
    if isinstance(value, (tuple, list)) and len(value) == 1:
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{owner}: {what} must be an int >= {minimum}, got {value!r}")
    return value
