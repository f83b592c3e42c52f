"""Argument checks shared by the metrics, with messages that name the metric and the argument
(metrics run eagerly in NumPy, so these are plain Python checks)."""
import numbers

__all__ = []


def check_bool(metric, name, value):
    if not isinstance(value, bool):
        raise TypeError(f"For '{metric}', '{name}' must be a bool, got {type(value).__name__}")
    return value


def check_int(metric, name, value, low=None, high=None):
    """An int (not a bool) in [low, high] where those are given."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"For '{metric}', '{name}' must be an int, got {type(value).__name__}")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"at least {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"For '{metric}', '{name}' must be {bounds}, got {value}")
    return value


def check_real(metric, name, value, positive=False):
    """A real number (int or float, not a bool) as a float; with positive, greater than 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"For '{metric}', '{name}' must be a float, got {type(value).__name__}")
    if positive and not value > 0:
        raise ValueError(f"For '{metric}', '{name}' must be greater than 0, got {value}")
    return float(value)


def check_choice(metric, name, value, choices):
    if not isinstance(value, str):
        raise TypeError(f"For '{metric}', '{name}' must be a str, got {type(value).__name__}")
    if value not in choices:
        raise ValueError(f"For '{metric}', '{name}' must be one of {list(choices)}, got "
                         f"{value!r}")
    return value


def require_update(metric, updated):
    """A RuntimeError from eval when no update came since clear."""
    if not updated:
        raise RuntimeError(f"For '{metric}.eval', call 'update' before 'eval': there is no data "
                           f"since the last clear")


def check_input_count(metric, inputs, names):
    """The inputs of update, one per name, else a ValueError that lists them."""
    if len(inputs) != len(names):
        raise ValueError(f"For '{metric}.update', it needs {len(names)} inputs "
                         f"({', '.join(names)}), but got {len(inputs)}")
    return inputs
