"""Checks of the arguments of layers, wrappers and schedules; the errors name the owner (the
layer, wrapper or schedule) and the argument. The integer checks accept a Python int or what
`plain` turns into one (a 0-d Tensor, a NumPy integer) and raise a ValueError."""
from pijit._numbers import plain


def instance_of(owner, what, value, cls):
    """`value`, which must be an instance of `cls` (else a TypeError)."""
    if not isinstance(value, cls):
        article = "an" if cls.__name__[0] in "AEIOU" else "a"
        raise TypeError(f"{owner}: {what} must be {article} {cls.__name__}, got "
                        f"{type(value).__name__}")
    return value


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
