"""Element-wise math in mindspore.numpy's names and signatures: arithmetic, powers,
exponentials and logarithms, trigonometry, rounding, and the functions built from them
(arctan2, hypot, logaddexp, copysign, heaviside, gcd, ...). Each takes MindSpore's optional
`dtype`, the dtype of the result.

Dtypes follow MindSpore where it differs from NumPy: an integer tensor meeting a float one
(or a Python float) computes in the float's dtype (Int32 with Float32 gives Float32; NumPy:
Float64), and the float functions (exp, sin, sqrt, true division, ...) of integers and bools
give Float32 (NumPy: Float64)."""
import math

from pijit._tensor import (bool_, float32, float64, int8, int16, int32, int64, uint8, uint16,
                           uint32, uint64)
from pijit.numpy._utils import (Tensor, binary_function, broadcast_shapes, cast_to, check_int,
                                is_float, native, operands, raise_error, to_float, to_tensor,
                                with_dtype)
from pijit.ops import constexpr


def _float_function(name, op, doc):
    def function(x, dtype=None):
        return with_dtype(name, op(to_float(name, x)), dtype)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc + " Integers and bools compute in Float32."
    return function


exp = _float_function("exp", native.exp, "e ** x, element-wise.")
exp2 = _float_function("exp2", native.exp2, "2 ** x, element-wise.")
expm1 = _float_function("expm1", native.expm1, "exp(x) - 1, accurate for small x.")
log = _float_function("log", native.log, "The natural logarithm, element-wise.")
log2 = _float_function("log2", native.log2, "The base-2 logarithm, element-wise.")
log10 = _float_function("log10", native.log10, "The base-10 logarithm, element-wise.")
log1p = _float_function("log1p", native.log1p, "log(1 + x), accurate for small x.")
sqrt = _float_function("sqrt", native.sqrt, "The non-negative square root, element-wise.")
sin = _float_function("sin", native.sin, "The sine, element-wise.")
cos = _float_function("cos", native.cos, "The cosine, element-wise.")
tan = _float_function("tan", native.tan, "The tangent, element-wise.")
arcsin = _float_function("arcsin", native.asin, "The inverse sine, element-wise.")
arccos = _float_function("arccos", native.acos, "The inverse cosine, element-wise.")
arctan = _float_function("arctan", native.atan, "The inverse tangent, element-wise.")
sinh = _float_function("sinh", native.sinh, "The hyperbolic sine, element-wise.")
cosh = _float_function("cosh", native.cosh, "The hyperbolic cosine, element-wise.")
tanh = _float_function("tanh", native.tanh, "The hyperbolic tangent, element-wise.")
arcsinh = _float_function("arcsinh", native.asinh, "The inverse hyperbolic sine.")
arccosh = _float_function("arccosh", native.acosh, "The inverse hyperbolic cosine.")
arctanh = _float_function("arctanh", native.atanh, "The inverse hyperbolic tangent.")


def cbrt(x, dtype=None):
    """The real cube root, element-wise. Integers compute in Float32."""
    x = to_float("cbrt", x)
    root = native.pow(native.abs(x), 1.0 / 3.0)
    return with_dtype("cbrt", native.where(native.less(x, 0.0), native.neg(root), root), dtype)


def deg2rad(x, dtype=None):
    """Degrees to radians, element-wise."""
    return with_dtype("deg2rad", to_float("deg2rad", x) * (math.pi / 180.0), dtype)


def rad2deg(x, dtype=None):
    """Radians to degrees, element-wise."""
    return with_dtype("rad2deg", to_float("rad2deg", x) * (180.0 / math.pi), dtype)


radians = deg2rad


# ---- arithmetic ----------------------------------------------------------------------------------

add = binary_function("add", native.add, "x1 + x2, element-wise with broadcasting.")
subtract = binary_function("subtract", native.sub, "x1 - x2, element-wise with broadcasting.")
multiply = binary_function("multiply", native.mul, "x1 * x2, element-wise with broadcasting.")


def divide(x1, x2, dtype=None):
    """x1 / x2 (true division), element-wise. Integers divide in Float32."""
    a, b = operands("divide", x1, x2)
    if not is_float(_dtype_of(a, b)):
        a, b = _as_float32(a), _as_float32(b)
    return with_dtype("divide", native.div(a, b), dtype)


true_divide = divide


def _dtype_of(a, b):
    return a.dtype if isinstance(a, Tensor) else b.dtype


def _as_float32(v):
    return v.astype(float32) if isinstance(v, Tensor) else float(v)


floor_divide = binary_function("floor_divide", native.floor_divide,
                               "The floor of x1 / x2, element-wise (Python's //).")
remainder = binary_function("remainder", native.remainder,
                            "x1 - floor(x1 / x2) * x2, which has the sign of x2 (Python's %).")


mod = remainder


def fmod(x1, x2, dtype=None):
    """The C remainder x1 - trunc(x1 / x2) * x2, which has the sign of x1."""
    a, b = _tensor_operands("fmod", x1, x2)
    r = native.remainder(a, b)
    # The floor remainder differs from the truncated one by x2 where it is non-zero and the
    # signs of x1 and x2 differ.
    nonzero = native.not_equal(r, 0)
    differ = native.not_equal(native.less(a, 0), native.less(b, 0))
    return with_dtype("fmod", native.where(native.logical_and(nonzero, differ), r - b, r), dtype)


def divmod(x1, x2, dtype=None):  # noqa: A001 - NumPy's name
    """(floor_divide(x1, x2), remainder(x1, x2))."""
    return floor_divide(x1, x2, dtype), remainder(x1, x2, dtype)


power = binary_function("power", native.pow, "x1 ** x2, element-wise; integers to negative "
                                             "integer powers raise ValueError.")


def float_power(x1, x2, dtype=None):
    """x1 ** x2 computed in floats: Float64 when an input is Float64, else Float32 (MindSpore's
    choice; NumPy always uses Float64)."""
    a, b = to_tensor("float_power", x1), to_tensor("float_power", x2)
    wide = float64 if float64 in (a.dtype, b.dtype) else float32
    return with_dtype("float_power", native.pow(cast_to(a, wide), cast_to(b, wide)), dtype)


def negative(x, dtype=None):
    """-x, element-wise."""
    return with_dtype("negative", native.neg(to_tensor("negative", x)), dtype)


def positive(a, dtype=None):
    """+a: a copy of a's values."""
    a = to_tensor("positive", a)
    return with_dtype("positive", native.concat([native.reshape(a, (-1,))], 0).reshape(a.shape),
                      dtype)


def absolute(x, dtype=None):
    """|x|, element-wise."""
    return with_dtype("absolute", native.abs(to_tensor("absolute", x)), dtype)


abs = absolute  # noqa: A001 - NumPy's name
fabs = absolute


def sign(x, dtype=None):
    """-1, 0 or 1 by the sign of x (NaN stays NaN)."""
    x = to_tensor("sign", x)
    if x.dtype == bool_:
        raise_error(TypeError, "sign: not defined for bool tensors")
    return with_dtype("sign", native.sign(x), dtype)


def square(x, dtype=None):
    """x * x, element-wise."""
    x = to_tensor("square", x)
    return with_dtype("square", native.mul(x, x) if x.dtype == bool_ else native.square(x), dtype)


def reciprocal(x, dtype=None):
    """1 / x, element-wise. Integers give integers, as Python's truncating 1 / x would:
    1 and -1 map to themselves, other values to 0."""
    x = to_tensor("reciprocal", x)
    if is_float(x.dtype):
        return with_dtype("reciprocal", native.reciprocal(x), dtype)
    unit = native.equal(native.abs(x), 1)
    return with_dtype("reciprocal", native.where(unit, x, native.zeros((), x.dtype)), dtype)


maximum = binary_function("maximum", native.maximum,
                          "The larger of x1 and x2, element-wise; NaN wins.")
minimum = binary_function("minimum", native.minimum,
                          "The smaller of x1 and x2, element-wise; NaN wins.")


def _nan_loses(op, a, b):
    """op(a, b), except that where one of a and b is NaN the other one is taken."""
    m = native.where(native.not_equal(a, a), b, op(a, b))
    return native.where(native.not_equal(b, b), a, m)


def fmax(x1, x2, dtype=None):
    """The larger of x1 and x2, element-wise; a NaN loses to a number."""
    a, b = _tensor_operands("fmax", x1, x2)
    return with_dtype("fmax", _nan_loses(native.maximum, a, b), dtype)


def fmin(x1, x2, dtype=None):
    """The smaller of x1 and x2, element-wise; a NaN loses to a number."""
    a, b = _tensor_operands("fmin", x1, x2)
    return with_dtype("fmin", _nan_loses(native.minimum, a, b), dtype)


def clip(x, xmin, xmax, dtype=None):
    """x limited to [xmin, xmax] (either bound may be None, not both)."""
    if xmin is None and xmax is None:
        raise_error(ValueError, "clip: one of xmin and xmax must be given")
    x = to_tensor("clip", x)
    if xmin is not None:
        x = maximum(x, xmin)
    if xmax is not None:
        x = minimum(x, xmax)
    return with_dtype("clip", x, dtype)


def hypot(x1, x2, dtype=None):
    """sqrt(x1 ** 2 + x2 ** 2), element-wise, without overflow for large legs (an infinite
    leg gives inf, NaN or not). Integers compute in Float32."""
    a, b = _tensor_operands("hypot", x1, x2, floats=True)
    a, b = native.abs(a), native.abs(b)
    hi, lo = native.maximum(a, b), native.minimum(a, b)
    ratio = lo / native.where(native.equal(hi, 0.0), native.ones((), hi.dtype), hi)
    out = hi * native.sqrt(ratio * ratio + 1.0)
    infinite = native.logical_or(_is_inf(a), _is_inf(b))
    return with_dtype("hypot", native.where(infinite, native.full((), float("inf"),
                                                                  dtype=out.dtype), out), dtype)


def arctan2(x1, x2, dtype=None):
    """The angle of the point (x2, x1) in (-pi, pi], element-wise, with NumPy's quadrants
    (the sign of a zero x1 chooses between pi and -pi)."""
    y, x = _broadcast_pair("arctan2", *_tensor_operands("arctan2", x1, x2, floats=True))
    zero = native.zeros((), x.dtype)
    safe_x = native.where(native.equal(x, zero), native.ones((), x.dtype), x)
    base = native.atan(y / safe_x)
    negative_y = signbit(y)
    left = native.where(negative_y, base - math.pi, base + math.pi)
    on_axis = native.where(negative_y, native.full((), -math.pi / 2, dtype=x.dtype),
                           native.full((), math.pi / 2, dtype=x.dtype))
    on_axis = native.where(native.equal(y, zero), _zero_angle(y, x, negative_y), on_axis)
    out = native.where(native.greater(x, zero), base,
                       native.where(native.less(x, zero), left, on_axis))
    both_inf = native.logical_and(_is_inf(x), _is_inf(y))
    corner = native.where(native.greater(x, zero), native.full((), 0.25 * math.pi, dtype=x.dtype),
                          native.full((), 0.75 * math.pi, dtype=x.dtype))
    out = native.where(both_inf, native.where(negative_y, native.neg(corner), corner), out)
    either_nan = native.logical_or(native.not_equal(x, x), native.not_equal(y, y))
    return with_dtype("arctan2", native.where(either_nan, x + y, out), dtype)


def _zero_angle(y, x, negative_y):
    # arctan2(+-0, x) for x == 0: +-0 when x is +0, +-pi when x is -0.
    angle = native.where(signbit(x), native.full((), math.pi, dtype=x.dtype),
                         native.zeros((), x.dtype))
    return native.where(negative_y, native.neg(angle), angle)


def _is_inf(x):
    return native.equal(native.abs(x), float("inf"))


def signbit(x, dtype=None):
    """True where the sign bit of x is set: negative numbers, -0.0 and NaNs with the bit."""
    x = to_tensor("signbit", x)
    if not is_float(x.dtype):
        return with_dtype("signbit", native.less(x, 0), dtype)
    # -0.0 is found through 1 / x = -inf.
    zero = native.equal(x, 0.0)
    neg_zero = native.logical_and(zero, native.less(native.reciprocal(native.where(
        zero, x, native.ones((), x.dtype))), 0.0))
    return with_dtype("signbit", native.logical_or(native.less(x, 0.0), neg_zero), dtype)


def copysign(x1, x2, dtype=None):
    """|x1| with the sign of x2, element-wise. Integers compute in Float32."""
    a, b = _tensor_operands("copysign", x1, x2, floats=True)
    magnitude = native.abs(a)
    return with_dtype("copysign", native.where(signbit(b), native.neg(magnitude), magnitude),
                      dtype)


def heaviside(x1, x2, dtype=None):
    """The step function: 0 where x1 < 0, x2 where x1 == 0, 1 where x1 > 0 (NaN stays)."""
    a, b = _broadcast_pair("heaviside", *_tensor_operands("heaviside", x1, x2))
    zero, one = native.zeros((), b.dtype), native.ones((), b.dtype)
    out = native.where(native.less(a, 0), zero, native.where(native.greater(a, 0), one, b))
    if is_float(a.dtype):
        out = native.where(native.not_equal(a, a), a.astype(b.dtype), out)
    return with_dtype("heaviside", out, dtype)


def _tensor_operands(name, x1, x2, floats=False):
    """x1 and x2 as tensors of one dtype (operands' rules; a number takes the tensor's dtype),
    of a float dtype when `floats`."""
    if floats:
        x1 = x1 if isinstance(x1, (int, float)) else to_float(name, x1)
        x2 = x2 if isinstance(x2, (int, float)) else to_float(name, x2)
    a, b = operands(name, x1, x2)
    if not isinstance(a, Tensor):
        a = native.full((), a, dtype=b.dtype)
    if not isinstance(b, Tensor):
        b = native.full((), b, dtype=a.dtype)
    if floats and not is_float(a.dtype):
        a, b = a.astype(float32), b.astype(float32)
    return a, b


def _broadcast_pair(name, a, b):
    shape = broadcast_shapes(name, a.shape, b.shape)
    return native.broadcast_to(a, shape), native.broadcast_to(b, shape)


def logaddexp(x1, x2, dtype=None):
    """log(exp(x1) + exp(x2)) without overflow."""
    a, b = _tensor_operands("logaddexp", x1, x2, floats=True)
    hi = native.maximum(a, b)
    out = hi + native.log1p(native.exp(native.neg(native.abs(a - b))))
    # Equal infinities make a - b NaN; their sum is that infinity.
    return with_dtype("logaddexp", native.where(native.equal(a, b), a + math.log(2.0), out),
                      dtype)


def logaddexp2(x1, x2, dtype=None):
    """log2(2 ** x1 + 2 ** x2) without overflow."""
    a, b = _tensor_operands("logaddexp2", x1, x2, floats=True)
    hi = native.maximum(a, b)
    out = hi + native.log1p(native.exp2(native.neg(native.abs(a - b)))) / math.log(2.0)
    return with_dtype("logaddexp2", native.where(native.equal(a, b), a + 1.0, out), dtype)


# ---- rounding ------------------------------------------------------------------------------------

def _rounding(name, op, x, dtype):
    x = to_tensor(name, x)
    if not is_float(x.dtype):
        return with_dtype(name, x, dtype)  # integers are their own floor (NumPy 2 keeps them)
    return with_dtype(name, op(x), dtype)


def _rounding_function(name, op, doc):
    def function(x, dtype=None):
        return _rounding(name, op, x, dtype)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    return function


floor = _rounding_function("floor", native.floor, "The largest integer <= x, element-wise.")
ceil = _rounding_function("ceil", native.ceil, "The smallest integer >= x, element-wise.")
trunc = _rounding_function("trunc", native.trunc, "x rounded toward zero, element-wise.")


def fix(x):
    """x rounded toward zero, element-wise."""
    return _rounding("fix", native.trunc, x, None)


def rint(x, dtype=None):
    """x rounded to the nearest integer (halves to even). Integers give Float32."""
    return with_dtype("rint", native.round(to_float("rint", x)), dtype)


def around(a, decimals=0):
    """a rounded to `decimals` decimal places (halves to even); negative decimals round to
    tens, hundreds, ... Integers stay integers."""
    a = to_tensor("around", a)
    decimals = check_int("around", "decimals", decimals)
    if not is_float(a.dtype):
        if decimals >= 0:
            return a
        scale = 10 ** (-decimals)
        return (native.round(a.astype(float64) / scale) * scale).astype(a.dtype)
    if decimals == 0:
        return native.round(a)
    scale = 10.0 ** decimals
    return native.round(a * scale) / scale


round = around  # noqa: A001 - NumPy's name


# ---- bits and integers ---------------------------------------------------------------------------

def _integer_operands(name, x1, x2):
    a, b = _tensor_operands(name, x1, x2)
    if is_float(a.dtype) or is_float(b.dtype):
        raise_error(TypeError, f"{name}: expected integer or bool inputs, got {a.dtype} and "
                               f"{b.dtype}")
    return a, b


def _bitwise(name, op, symbol):
    return binary_function(name, op, f"x1 {symbol} x2 of integers or bools, element-wise.",
                           _integer_operands)


bitwise_and = _bitwise("bitwise_and", native.bitwise_and, "&")
bitwise_or = _bitwise("bitwise_or", native.bitwise_or, "|")
bitwise_xor = _bitwise("bitwise_xor", native.bitwise_xor, "^")


def invert(x, dtype=None):
    """~x of integers or bools (logical not for bools), element-wise."""
    x = to_tensor("invert", x)
    if is_float(x.dtype):
        raise_error(TypeError, f"invert: expected an integer or bool input, got {x.dtype}")
    return with_dtype("invert", native.bitwise_not(x), dtype)


bitwise_not = invert

# Euclid's algorithm needs at most this many steps for the integers of each width (the
# worst case is consecutive Fibonacci numbers).
_EUCLID_STEPS = {bool_: 2, uint8: 13, int8: 12, int16: 24, int32: 47, int64: 93, uint16: 25,
                 uint32: 48, uint64: 94}


@constexpr
def _euclid_steps(dtype):
    return _EUCLID_STEPS[dtype]


def _gcd(a, b):
    a, b = native.abs(a), native.abs(b)
    zero, one = native.zeros((), a.dtype), native.ones((), a.dtype)
    for _ in range(_euclid_steps(a.dtype)):
        done = native.equal(b, zero)
        r = native.remainder(a, native.where(done, one, b))
        a, b = native.where(done, a, b), native.where(done, zero, r)
    return a


def gcd(x1, x2, dtype=None):
    """The greatest common divisor of |x1| and |x2|, element-wise (gcd(0, 0) = 0)."""
    a, b = _broadcast_pair("gcd", *_integer_operands("gcd", x1, x2))
    if a.dtype == bool_:
        a, b = a.astype(int32), b.astype(int32)
    return with_dtype("gcd", _gcd(a, b), dtype)


def lcm(x1, x2, dtype=None):
    """The least common multiple of |x1| and |x2|, element-wise (0 when either is 0)."""
    a, b = _broadcast_pair("lcm", *_integer_operands("lcm", x1, x2))
    if a.dtype == bool_:
        a, b = a.astype(int32), b.astype(int32)
    g = _gcd(a, b)
    zero = native.equal(g, 0)
    out = native.abs(native.floor_divide(a, native.where(zero, native.ones((), g.dtype), g)) * b)
    return with_dtype("lcm", native.where(zero, native.zeros((), g.dtype), out), dtype)
