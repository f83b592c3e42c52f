"""mindspore.numpy's dtype names, constants and promotion functions. The names are pijit's
dtypes; int_ and float_ are Int32 and Float32 (MindSpore's choice of 32 bits, where NumPy's
are 64)."""
import math

from pijit._tensor import (bfloat16, bool_, float16, float32, float64, int8, int16, int32,
                           int64, uint8, uint16, uint32, uint64)
from pijit.numpy._utils import (Tensor, check_dtype, is_number, number_dtype, promote,
                                raise_error)

int_ = int32
float_ = float32
inf = PINF = float("inf")
NINF = float("-inf")
nan = float("nan")
pi = math.pi
e = math.e

numeric_types = ["int_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                 "float_", "float16", "float32", "float64", "bool_"]
dtype_tuple = (int_, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float_, float16,
               float32, float64, bool_, bfloat16)


def promote_types(type1, type2):
    """The dtype that both dtypes convert to safely, by MindSpore's rule (an integer with a
    float gives that float, where NumPy may widen further)."""
    return promote(check_dtype("promote_types", type1), check_dtype("promote_types", type2))


def _dtype_of(fname, value):
    if isinstance(value, Tensor):
        return value.dtype
    if is_number(value):
        return number_dtype(value)
    return check_dtype(fname, value)


def result_type(*arrays_and_dtypes):
    """The dtype of the result of an operation on the arguments (tensors, numbers, dtypes),
    by MindSpore's promotion rule; Python ints count as Int32 and floats as Float32."""
    fname = "result_type"
    if not arrays_and_dtypes:
        raise_error(ValueError, f"{fname}: at least one array or dtype is required")
    out = _dtype_of(fname, arrays_and_dtypes[0])
    for value in arrays_and_dtypes[1:]:
        out = promote(out, _dtype_of(fname, value))
    return out
