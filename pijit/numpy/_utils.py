"""Helpers shared by pijit.numpy's modules: argument errors that are raised in captured code
too, MindSpore's dtype rules (Python ints are Int32, Python floats Float32, an integer meeting
a float takes the float's dtype) and the conversion of array-likes to tensors.

Errors go through `raise_error`, a constexpr: captured code calls it at compile time, so a
bad argument raises its own ValueError or TypeError under pijit.jit as it does eagerly (a
`raise` statement in captured code would stop the graph instead).

Sequences are iterated as tuples (a caller's list is converted first): capture records each
list that a loop iterates by the address of its storage and refuses later changes to any
container built at that address, so a loop over a temporary list can make a list or dict
built afterwards unchangeable (an append or item store then stops the graph)."""
import sys

import numpy as onp

from pijit import _C
from pijit._numbers import plain as _plain
from pijit._tensor import (bfloat16, bool_, float16, float32, float64, int8, int16, int32,
                           int64, uint8, uint16, uint32, uint64)
from pijit.ops import constexpr

Tensor = _C.Tensor
DType = _C.dtype
native = _C.ops

FLOAT_DTYPES = (float16, bfloat16, float32, float64)
INT_DTYPES = (uint8, int8, int16, int32, int64, uint16, uint32, uint64)
WIDE_UNSIGNED = ("u16", "u32", "u64")
NUMBER_TYPES = (bool, int, float)

# Dtype tables are keyed by the dtype's name: captured code reads `dtype.name` and looks up
# strings, where a lookup keyed by the dtype object itself would stop the graph (and a
# constexpr may not return a dtype).
_BY_NAME = {d.name: d for d in (bool_, uint8, int8, int16, int32, int64, float16, bfloat16,
                                float32, float64, uint16, uint32, uint64)}
# Kind (bool < integer < float) and width of each dtype, for MindSpore's promotion rule.
_KIND = {"bool": (0, 1), "u8": (1, 8), "i8": (1, 8), "i16": (1, 16), "i32": (1, 32),
         "i64": (1, 64), "f16": (2, 16), "bf16": (2, 16), "f32": (2, 32), "f64": (2, 64),
         "u16": (1, 16), "u32": (1, 32), "u64": (1, 64)}
_NAMES = {"bool": "bool", "bool_": "bool", "int8": "i8", "int16": "i16", "int32": "i32",
          "int64": "i64", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
          "float16": "f16", "bfloat16": "bf16",
          "float32": "f32", "float64": "f64", "half": "f16", "single": "f32", "double": "f64",
          # MindSpore maps NumPy's platform int and float to 32 bits.
          "int": "i32", "int_": "i32", "float": "f32", "float_": "f32"}
_PYTYPES = {bool: bool_, int: int32, float: float32}


@constexpr
def raise_error(exc_type, message):
    raise exc_type(message)


def plain(value):
    """`value` with NumPy scalars as the Python numbers they hold (pijit._numbers.plain); a
    list is read as a tuple, since plain loops over it (see the module docstring)."""
    if isinstance(value, list):
        value = tuple(value)
    return _plain(value)


def is_float(dtype):
    return dtype in FLOAT_DTYPES


def is_number(x):
    """A Python or NumPy scalar number (bool included)."""
    return isinstance(x, NUMBER_TYPES) or isinstance(x, (onp.number, onp.bool_))


def number_dtype(value):
    """MindSpore's dtype of a Python number: Bool, Int32 or Float32."""
    value = plain(value)
    return bool_ if isinstance(value, bool) else int32 if isinstance(value, int) else float32


@constexpr
def _dtype_name(fname, dtype):
    """The pijit name ('f32', ...) of a dtype given as a name, a Python type or a NumPy
    dtype."""
    if isinstance(dtype, str) and dtype in _NAMES:
        return _NAMES[dtype]
    if dtype in _PYTYPES:
        return _PYTYPES[dtype].name
    try:
        name = onp.dtype(dtype).name
    except TypeError:
        name = None
    if name in _NAMES:
        return _NAMES[name]
    raise TypeError(f"{fname}: dtype must be a pijit dtype, a NumPy dtype or one of "
                    f"{sorted(_NAMES)}, got {dtype!r}")


def check_dtype(fname, dtype):
    """`dtype` as a pijit dtype: a pijit dtype, a name ('float32', 'int'), a Python type
    (int -> Int32, float -> Float32, as MindSpore) or a NumPy dtype."""
    if isinstance(dtype, DType):
        return dtype
    return _BY_NAME[_dtype_name(fname, dtype)]


def promote(d1, d2):
    """MindSpore's result dtype of two tensor dtypes: the higher kind wins (an integer meeting
    Float16 gives Float16, where NumPy widens to Float64), then the wider; UInt8 with Int8
    gives Int16, and Float16 with BFloat16 gives Float32. UInt16, UInt32 and UInt64 meet no
    other integer type (a TypeError, as the tensor ops raise)."""
    if d1 == d2:
        return d1
    (k1, w1), (k2, w2) = _KIND[d1.name], _KIND[d2.name]
    if k1 != k2:
        return d1 if k1 > k2 else d2
    if k1 == 1 and (d1.name in WIDE_UNSIGNED or d2.name in WIDE_UNSIGNED):
        raise_error(TypeError, f"promote_types: {d1} and {d2} cannot be mixed; uint16, uint32 "
                               "and uint64 combine only with themselves, Bool and floating-point "
                               "types")
    if w1 == w2:  # uint8/int8, float16/bfloat16
        return int16 if k1 == 1 else float32
    return d1 if w1 > w2 else d2


def cast_to(x, dtype):
    return x if x.dtype == dtype else x.astype(dtype)


def with_dtype(fname, out, dtype):
    """`out` converted to the `dtype` argument of a function, when one was given."""
    if dtype is None:
        return out
    return cast_to(out, check_dtype(fname, dtype))


# ---- array-likes ---------------------------------------------------------------------------------

@constexpr
def scalar_tensor(value):
    """A 0-d tensor of a Python number: Bool, Int32 or Float32 (MindSpore's scalar dtypes)."""
    value = plain(value)
    return Tensor(value, _PYTYPES[type(value)])


@constexpr
def constant_tensor(fname, data, dtype):
    """A tensor of nested lists or tuples of numbers. NumPy decides the dtype, with MindSpore's
    narrowing of Int64 to Int32 and Float64 to Float32."""
    try:
        a = onp.asarray(data)
    except ValueError:
        a = onp.asarray(data, dtype=object)
    if a.dtype == object:
        raise ValueError(f"{fname}: the nested sequences have different lengths (a ragged "
                         f"array): {data!r}")
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{fname}: cannot make a tensor of {a.dtype} values: {data!r}")
    if dtype is None:
        dtype = {"b": bool_, "f": float32}.get(a.dtype.kind, int32)
        if a.dtype.kind == "u":  # unsigned data keeps its dtype
            dtype = _BY_NAME["u" + str(8 * a.dtype.itemsize)]
    if a.size == 0 and a.dtype.kind == "f" and dtype in INT_DTYPES:
        a = a.astype(onp.int64)  # NumPy makes [] Float64; an integer dtype was asked for
    return Tensor(a, dtype)


def holds_tensor(seq):
    for item in tuple(seq):
        if isinstance(item, Tensor):
            return True
        if isinstance(item, (list, tuple)) and holds_tensor(item):
            return True
    return False


def stack_sequence(fname, seq):
    """A tensor of a list or tuple that holds tensors (and numbers, or more such lists)."""
    parts = tuple(to_tensor(fname, item) for item in tuple(seq))
    dtype = parts[0].dtype
    for part in parts[1:]:
        dtype = promote(dtype, part.dtype)
    for part in parts[1:]:
        if part.shape != parts[0].shape:
            raise_error(ValueError, f"{fname}: the nested sequences have different shapes "
                                    f"({parts[0].shape} and {part.shape}): a ragged array")
    return native.stack(tuple(cast_to(p, dtype) for p in parts), 0)


def to_tensor(fname, x, dtype=None):
    """An array-like (Tensor, number, nested list or tuple, NumPy array) as a tensor, of
    `dtype` when given. Numbers and lists of numbers become constants of a captured graph."""
    if isinstance(x, Tensor):
        return x if dtype is None else cast_to(x, dtype)
    if is_number(x):
        t = scalar_tensor(x)
        return t if dtype is None else cast_to(t, dtype)
    if isinstance(x, (list, tuple)):
        if holds_tensor(x):
            t = stack_sequence(fname, x)
            return t if dtype is None else cast_to(t, dtype)
        return constant_tensor(fname, x, dtype)
    if isinstance(x, onp.ndarray):
        # An ndarray keeps its dtype, as in MindSpore.
        if x.dtype.kind not in "biuf":
            raise_error(TypeError, f"{fname}: pijit has no dtype for NumPy's {x.dtype}")
        t = Tensor(onp.ascontiguousarray(x))
        return t if dtype is None else cast_to(t, dtype)
    raise_error(TypeError, f"{fname}: expected a Tensor, a number, a list, a tuple or a NumPy "
                           f"array, got {type(x).__name__}")


def to_float(fname, x):
    """`x` as a tensor of a float dtype: integers and bools become Float32 (MindSpore computes
    their float functions in Float32, where NumPy gives Float64)."""
    x = to_tensor(fname, x)
    return x if is_float(x.dtype) else x.astype(float32)


def operands(fname, x1, x2):
    """x1 and x2 ready for a pijit binary op, so that its result has MindSpore's dtype: tensors
    of different kinds meet in the higher one (Int32 with Float32 is Float32, where NumPy gives
    Float64); a Python number stays a weak scalar, except that a float number turns an integer
    or bool tensor into Float32, and an int number turns a bool tensor into Int32."""
    if is_number(x1) and is_number(x2):
        x1 = scalar_tensor(x1)
    if not is_number(x1):
        x1 = to_tensor(fname, x1)
    if not is_number(x2):
        x2 = to_tensor(fname, x2)
    if isinstance(x1, Tensor) and isinstance(x2, Tensor):
        dtype = promote(x1.dtype, x2.dtype)
        return cast_to(x1, dtype), cast_to(x2, dtype)
    if isinstance(x1, Tensor):
        return _with_number(x1, plain(x2)), plain(x2)
    return plain(x1), _with_number(x2, plain(x1))


def binary_function(name, op, doc, prepare=operands):
    """mindspore.numpy's `name(x1, x2, dtype=None)`: op(a, b) of the operands that
    prepare(name, x1, x2) gives (`operands`' dtype rule unless told), as `dtype` when given. The
    function is named after `name` and belongs to the calling module, like one defined there."""
    def function(x1, x2, dtype=None):
        a, b = prepare(name, x1, x2)
        return with_dtype(name, op(a, b), dtype)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    function.__module__ = sys._getframe(1).f_globals["__name__"]
    return function


def _with_number(t, number):
    if isinstance(number, float) and not is_float(t.dtype):
        return t.astype(float32)
    if isinstance(number, int) and not isinstance(number, bool) and t.dtype == bool_:
        return t.astype(int32)
    return t


# ---- axes and shapes -----------------------------------------------------------------------------

def check_int(fname, what, value):
    value = plain(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise_error(TypeError, f"{fname}: {what} must be an int, got {type(value).__name__}")
    return value


def check_axis(fname, axis, ndim):
    """`axis` as an int in [0, ndim)."""
    axis = check_int(fname, "axis", axis)
    if not -ndim <= axis < ndim:
        raise_error(ValueError, f"{fname}: axis {axis} is out of bounds for a tensor of "
                                f"dimension {ndim}")
    return axis % ndim


def check_axes(fname, axis, ndim):
    """`axis` (None, an int, or a tuple or list of ints) as a sorted tuple of distinct axes in
    [0, ndim); None is every axis."""
    axis = plain(axis)
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        axes = tuple(check_axis(fname, a, ndim) for a in tuple(axis))
        if len(set(axes)) != len(axes):
            raise_error(ValueError, f"{fname}: repeated axis in {tuple(axis)}")
        return tuple(sorted(axes))
    return (check_axis(fname, axis, ndim),)


def int_or_ints(fname, name, value):
    """`value` (an int, or a tuple or list of them) as a tuple; the items are not checked."""
    value = plain(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,)
    if not isinstance(value, (tuple, list)):
        raise_error(TypeError, f"{fname}: {name} must be an int or a tuple of ints, got "
                               f"{type(value).__name__}")
    return tuple(value)


def check_shape(fname, shape):
    """`shape` (an int or a sequence of ints) as a tuple of non-negative ints."""
    shape = tuple(plain(d) for d in int_or_ints(fname, "shape", shape))
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, int):
            raise_error(TypeError, f"{fname}: shape must hold ints, got {shape!r}")
        if d < 0:
            raise_error(ValueError, f"{fname}: negative dimensions are not allowed, got "
                                    f"{shape!r}")
    return shape


def broadcast_shapes(fname, *shapes):
    """The shape that NumPy broadcasting gives `shapes`."""
    ndim = max(len(s) for s in shapes) if shapes else 0
    out = []
    for i in range(ndim):
        size = 1
        for s in shapes:
            d = s[i - ndim + len(s)] if i - ndim + len(s) >= 0 else 1
            if d != 1:
                if size not in (1, d):
                    listed = " and ".join(str(tuple(x)) for x in shapes)
                    raise_error(ValueError, f"{fname}: shapes {listed} do not broadcast together")
                size = d
        out.append(size)
    return tuple(out)


def move_axis_last(x, axis):
    """x with `axis` (in [0, ndim)) moved to the end, and the permutation that undoes it."""
    ndim = x.ndim
    if axis == ndim - 1:
        return x, None
    perm = tuple(i for i in range(ndim) if i != axis) + (axis,)
    back = [0] * ndim
    for i, p in enumerate(perm):
        back[p] = i
    return native.transpose(x, perm), tuple(back)


def restore_axis(x, back):
    return x if back is None else native.transpose(x, back)
