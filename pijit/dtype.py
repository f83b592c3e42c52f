"""pijit's dtypes as a namespace, as MindSpore's `mindspore.dtype` module
(`from pijit import dtype as mstype; mstype.float32`), with its conversions. `Type` is the
type of every dtype. A module, so that captured code reads `mstype.float32` like any global."""
from pijit._tensor import (bfloat16, bool_, complex64, complex128, dtype_to_nptype, dtype_to_pytype, float16,  # noqa: F401
                           float32, float64, int8, int16, int32, int64, pytype_to_dtype, uint8,
                           uint16, uint32, uint64)
from pijit._tensor import dtype as Type  # noqa: F401

half, single, double = float16, float32, float64

__all__ = ["Type", "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
           "uint64", "float16", "bfloat16", "complex64", "complex128",
           "float32", "float64", "half", "single", "double", "dtype_to_nptype",
           "dtype_to_pytype", "pytype_to_dtype"]
