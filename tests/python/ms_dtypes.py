"""MindSpore's dtype rules (torch's too), written down as a reference for the tests.

pijit follows MindSpore (and torch), not NumPy, when it picks the dtype of a result. The
functions here state those rules on NumPy dtypes, independently of pijit, so a test can ask
"which dtype must this op return?" and then compute the expected values with NumPy in that
dtype. bfloat16, which NumPy lacks, is `ml_dtypes.bfloat16` (as pijit's asnumpy gives it);
BFLOAT16 is None where ml_dtypes is not installed.
"""
import numpy as np

try:
    import ml_dtypes
    BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # an optional dependency: the bfloat16 rules are then not exercised
    BFLOAT16 = None

BOOL, UINT8, INT8, INT16, INT32, INT64, FLOAT16, FLOAT32, FLOAT64 = (
    np.dtype(d) for d in (np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64,
                          np.float16, np.float32, np.float64))
# The default float of MindSpore: what integers become in float functions, true division and
# with a Python float.
DEFAULT_FLOAT = FLOAT32
# Every dtype pijit has, in its enum order (the order of kPromote's rows in kernels/tensor.cc).
ALL_DTYPES = [BOOL, UINT8, INT8, INT16, INT32, INT64, FLOAT16] + (
    [BFLOAT16] if BFLOAT16 is not None else []) + [FLOAT32, FLOAT64]

_BOOL_CATEGORY, _INT_CATEGORY, _FLOAT_CATEGORY = 0, 1, 2


def category(dtype):
    """0 for bool, 1 for integers, 2 for floats (bfloat16 included, whose NumPy kind is 'V')."""
    dtype = np.dtype(dtype)
    if dtype == BOOL:
        return _BOOL_CATEGORY
    if dtype.kind in "iu":
        return _INT_CATEGORY
    if dtype.kind == "f" or dtype == BFLOAT16:
        return _FLOAT_CATEGORY
    raise TypeError(f"pijit has no dtype {dtype}")


def is_float(dtype):
    return category(dtype) == _FLOAT_CATEGORY


def _signed_int_of_size(itemsize):
    return np.dtype(f"int{8 * itemsize}")


def _promote_integers(a, b):
    """The wider integer wins. A signed and an unsigned integer meet at a signed one that holds
    both: uint8 + int8 -> int16, uint8 + int16 -> int16 (uint16, uint32 and uint64 mix with
    no other integer type: test_dtypes_wide_unsigned.py)."""
    if a.kind == b.kind:
        return a if a.itemsize >= b.itemsize else b
    signed, unsigned = (a, b) if a.kind == "i" else (b, a)
    return _signed_int_of_size(max(signed.itemsize, 2 * unsigned.itemsize))


def _promote_floats(a, b):
    """The wider float wins; float16 and bfloat16 (the same width, different ranges) meet at
    float32, which holds both exactly."""
    if a == b:
        return a
    if a.itemsize != b.itemsize:
        return a if a.itemsize > b.itemsize else b
    return FLOAT32


def result_dtype(a, b):
    """The dtype of a binary op (add, mul, maximum, where, concat, matmul, ...) on two tensors.

    Categories are ordered bool < integers < floats. Across categories the operand of the
    higher category decides, whatever the widths: int32 + float32 -> float32, int64 + float16
    -> float16, int16 + float16 -> float16, bool + anything -> the other dtype (NumPy instead
    widens the float to hold the integer: int32 + float32 -> float64). Within a category the
    wider type wins; uint8 + int8 -> int16; float16 + bfloat16 -> float32."""
    a, b = np.dtype(a), np.dtype(b)
    ca, cb = category(a), category(b)
    if ca != cb:
        return a if ca > cb else b
    if ca == _BOOL_CATEGORY:
        return BOOL
    if ca == _INT_CATEGORY:
        return _promote_integers(a, b)
    return _promote_floats(a, b)


def with_python_scalar(dtype, scalar):
    """The dtype of a binary op on a tensor of `dtype` and a Python scalar.

    Python scalars are "weak": they adapt to the tensor. A Python bool keeps the dtype; a
    Python int keeps it too, but a bool tensor becomes int64; a Python float keeps a float
    tensor's dtype and makes an integer or bool tensor float32 (NumPy: float64). Whether an
    int fits the tensor's range is a separate check (out-of-range ints raise OverflowError)."""
    dtype = np.dtype(dtype)
    if isinstance(scalar, bool):  # before int: bool is a subclass of int
        return dtype
    if isinstance(scalar, int):
        return INT64 if dtype == BOOL else dtype
    if isinstance(scalar, float):
        return dtype if is_float(dtype) else DEFAULT_FLOAT
    raise TypeError(f"not a Python scalar: {scalar!r}")


def float_function_dtype(dtype):
    """The dtype of exp, log, sqrt, sin, ..., sigmoid, softmax, log_softmax, of true division
    (of the operands' result_dtype) and of mean/var/std: a float keeps its dtype, an integer
    or bool computes in float32 whatever its width (NumPy picks the smallest float holding its
    values: int8 -> float16, int32 -> float64)."""
    dtype = np.dtype(dtype)
    return dtype if is_float(dtype) else DEFAULT_FLOAT


def true_division_dtype(a, b):
    """The dtype of a / b for two tensors: float_function_dtype of their result_dtype."""
    return float_function_dtype(result_dtype(a, b))


def reduction_dtype(name, dtype):
    """The dtype of a reduction of a tensor of `dtype`: sum and prod of integers or bools give
    int64 (floats keep theirs); mean, var and std follow float_function_dtype; max and min
    keep the dtype; all and any give bool."""
    dtype = np.dtype(dtype)
    if name in ("sum", "prod"):
        return dtype if is_float(dtype) else INT64
    if name in ("mean", "var", "std"):
        return float_function_dtype(dtype)
    if name in ("max", "min"):
        return dtype
    if name in ("all", "any"):
        return BOOL
    raise ValueError(f"unknown reduction {name!r}")


def computed_in(dtype, np_fn):
    """np_fn with its array arguments cast to `dtype` first, Python scalars passed as they are
    (NumPy keeps them weak too): NumPy's values of an op that computes in `dtype`, the
    reference for pijit's result once the dtype rules above say which dtype that is."""
    dtype = np.dtype(dtype)

    def run(*args):
        return np_fn(*(a.astype(dtype) if isinstance(a, np.ndarray) else a for a in args))
    return run
