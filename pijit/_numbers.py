"""NumPy scalars and 0-d arrays where pijit's Python layer takes a Python number (a layer's
size, an initializer's parameter, a learning rate): MindSpore and NumPy take them as the
numbers they hold (`nn.Dense(np.int64(3), 4)`, `Normal(sigma=np.sqrt(2.0 / n))`)."""
import numpy as np


def plain(value):
    """`value` with NumPy scalars and 0-d arrays of numbers, also as items of a tuple or list,
    replaced by the Python bool, int or float they hold; anything else is returned as is."""
    if isinstance(value, (np.number, np.bool_)):
        return value.item()
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "biuf":
        return value.item()
    if isinstance(value, (tuple, list)) and any(isinstance(v, (np.generic, np.ndarray))
                                                for v in value):
        return type(value)(plain(v) for v in value)
    return value
