"""General data transforms for Dataset.map (MindSpore's mindspore.dataset.transforms). Each
transform is a callable on NumPy arrays (pijit Tensors are accepted too)."""
import numpy as np

__all__ = ["TypeCast", "Compose"]


def _array(value):
    return value.asnumpy() if hasattr(value, "asnumpy") else np.asarray(value)


class TypeCast:
    """Casts the column to `data_type` (a pijit dtype, such as pijit.int32, or a NumPy
    dtype)."""

    def __init__(self, data_type):
        try:
            self.data_type = np.dtype(data_type.to_numpy() if hasattr(data_type, "to_numpy")
                                      else data_type)
        except TypeError:
            raise TypeError(f"TypeCast: 'data_type' must be a pijit or NumPy dtype, got "
                            f"{data_type!r}") from None

    def __call__(self, data):
        return _array(data).astype(self.data_type)


class Compose:
    """Applies `transforms` (a non-empty list of callables) in turn, the output of each (a
    tuple is several columns) the input of the next."""

    def __init__(self, transforms):
        if not isinstance(transforms, (list, tuple)) or not transforms or \
                not all(callable(t) for t in transforms):
            raise TypeError(f"Compose: 'transforms' must be a non-empty list of callables, got "
                            f"{transforms!r}")
        self.transforms = list(transforms)

    def __call__(self, *columns):
        for transform in self.transforms:
            result = transform(*columns)
            columns = result if isinstance(result, tuple) else (result,)
        return columns if len(columns) > 1 else columns[0]
