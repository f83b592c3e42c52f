"""Checks of plain Python arguments (bools and ints) for the eager, non-captured parts of the
API: optimizers' and callbacks' constructors, Model's methods, learning-rate lists. `subject`
names the argument at the start of the message, in the wording of the calling module
("Adam: use_nesterov", "For 'Model.fit', 'epoch'")."""


def check_bool(subject, value):
    if not isinstance(value, bool):
        raise TypeError(f"{subject} must be a bool, got {type(value).__name__}")
    return value


def check_int(subject, value, minimum):
    """An int (not a bool) >= minimum."""
    _check_int_type(subject, value)
    if value < minimum:
        raise ValueError(f"{subject} must be >= {minimum}, got {value}")
    return value


def check_positive_int(subject, value):
    """An int (not a bool) > 0."""
    _check_int_type(subject, value)
    if value <= 0:
        raise ValueError(f"{subject} must be > 0, got {value}")
    return value


def _check_int_type(subject, value):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{subject} must be an int, got {type(value).__name__}")
