"""pijit.numpy: MindSpore's mindspore.numpy, the NumPy-style API over tensors.

    import pijit.numpy as mnp
    x = mnp.linspace(0.0, 1.0, 5)
    y = mnp.sum(mnp.exp(x) * mnp.arange(5))

Every function is composed of pijit's ops, so it runs eagerly on the autodiff tape and
pijit.jit captures it like any op; constant index patterns (triangles, diagonals, repeats,
Toeplitz matrices) are computed by constexpr helpers at capture time. Signatures and result
dtypes follow mindspore.numpy: Python ints are Int32 and floats Float32, an integer meeting
a float takes the float's dtype, and the float functions of integers give Float32.

bincount and unique size their results by the data, which they read on the host: a captured
graph breaks where they are called. Left out: where / nonzero with a condition alone."""
from pijit._tensor import (bfloat16, bool_, float16, float32, float64, int8, int16, int32,
                           int64, uint8, uint16, uint32, uint64)
from pijit.numpy.creation import (arange, array, asarray, asfarray, bartlett, blackman, copy,
                                  diag, diag_indices, diagflat, diagonal, empty, empty_like, eye,
                                  full, full_like, geomspace, hamming, hanning, identity, indices,
                                  ix_, linspace, logspace, meshgrid, mgrid, ogrid, ones,
                                  ones_like, rand, randint, randn, trace, tri, tril, tril_indices,
                                  tril_indices_from, triu, triu_indices, triu_indices_from,
                                  vander, zeros, zeros_like)
from pijit.numpy.dtypes import (NINF, PINF, dtype_tuple, e, float_, inf, int_, nan,
                                numeric_types, pi, promote_types, result_type)
from pijit.numpy.indexing import (apply_along_axis, apply_over_axes, choose, pad, piecewise,
                                  ravel_multi_index, select, take, take_along_axis,
                                  unravel_index, where)
from pijit.numpy.linalg import (cross, dot, inner, kron, matmul, matrix_power, multi_dot, norm,
                                outer, tensordot, vdot)
from pijit.numpy.logic import (all, allclose, any, array_equal, array_equiv, equal, greater,
                               greater_equal, in1d, isclose, isfinite, isin, isinf, isnan,
                               isneginf, isposinf, isscalar, less, less_equal, logical_and,
                               logical_not, logical_or, logical_xor, not_equal, sometrue)
from pijit.numpy.math_ops import (abs, absolute, add, arccos, arccosh, arcsin, arcsinh, arctan,
                                  arctan2, arctanh, around, bitwise_and, bitwise_not, bitwise_or,
                                  bitwise_xor, cbrt, ceil, clip, copysign, cos, cosh, deg2rad,
                                  divide, divmod, exp, exp2, expm1, fabs, fix, float_power, floor,
                                  floor_divide, fmax, fmin, fmod, gcd, heaviside, hypot, invert,
                                  lcm, log, log1p, log2, log10, logaddexp, logaddexp2, maximum,
                                  minimum, mod, multiply, negative, positive, power, rad2deg,
                                  radians, reciprocal, remainder, rint, round, sign, signbit, sin,
                                  sinh, sqrt, square, subtract, tan, tanh, true_divide, trunc)
from pijit.numpy.polynomials import (convolve, correlate, polyadd, polyder, polyint, polymul,
                                     polysub, polyval)
from pijit.numpy.reductions import (amax, amin, argmax, argmin, average, count_nonzero, cumprod,
                                    cumsum, diff, ediff1d, gradient, mean, nancumsum, nanmax,
                                    nanmean, nanmin, nanstd, nansum, nanvar, ptp, std, sum, trapz,
                                    var)
from pijit.numpy.shapes import (append, array_split, array_str, atleast_1d, atleast_2d,
                                atleast_3d, broadcast_arrays, broadcast_to, column_stack,
                                concatenate, dsplit, dstack, expand_dims, flip, fliplr, flipud,
                                hsplit, hstack, moveaxis, ravel, repeat, reshape, roll, rollaxis,
                                rot90, size, split, squeeze, stack, swapaxes, tile, transpose,
                                vsplit, vstack)
from pijit.numpy.statistics import (bincount, corrcoef, cov, digitize, histogram, histogram2d,
                                    histogram_bin_edges, histogramdd, interp, searchsorted,
                                    unique, unwrap)

max = amax  # noqa: A001 - NumPy's names
min = amin  # noqa: A001

__all__ = [
    # dtypes and constants
    "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
    "bfloat16", "float32", "float64", "int_", "float_", "inf", "PINF", "NINF", "nan", "pi", "e",
    "numeric_types", "dtype_tuple", "promote_types", "result_type",
    # creation
    "array", "asarray", "asfarray", "copy", "zeros", "ones", "empty", "full", "zeros_like",
    "ones_like", "empty_like", "full_like", "arange", "linspace", "logspace", "geomspace", "eye",
    "identity", "tri", "tril", "triu", "diagonal", "trace", "diag", "diagflat", "vander",
    "meshgrid", "mgrid", "ogrid", "indices", "ix_", "diag_indices", "tril_indices",
    "triu_indices", "tril_indices_from", "triu_indices_from", "bartlett", "blackman", "hamming",
    "hanning", "rand", "randn", "randint",
    # element-wise math
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "cbrt", "sin", "cos", "tan",
    "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
    "arctanh", "deg2rad", "rad2deg", "radians", "add", "subtract", "multiply", "divide",
    "true_divide", "floor_divide", "remainder", "mod", "fmod", "divmod", "power", "float_power",
    "negative", "positive", "absolute", "abs", "fabs", "sign", "square", "reciprocal",
    "maximum", "minimum", "fmax", "fmin", "clip", "hypot", "signbit", "copysign", "heaviside",
    "logaddexp", "logaddexp2", "floor", "ceil", "trunc", "fix", "rint", "around", "round",
    "bitwise_and", "bitwise_or", "bitwise_xor", "invert", "bitwise_not", "gcd", "lcm",
    # products and norms
    "matmul", "dot", "vdot", "inner", "outer", "tensordot", "cross", "kron", "multi_dot",
    "matrix_power", "norm",
    # reductions and statistics
    "sum", "mean", "amax", "amin", "max", "min", "ptp", "argmax", "argmin", "var", "std",
    "average", "count_nonzero", "nansum", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin",
    "cumsum", "cumprod", "nancumsum", "diff", "ediff1d", "trapz", "gradient", "searchsorted",
    "digitize", "interp", "histogram_bin_edges", "histogram", "histogramdd", "histogram2d",
    "cov", "corrcoef", "unwrap", "bincount", "unique",
    # polynomials and convolution
    "convolve", "correlate", "polyadd", "polysub", "polymul", "polyval", "polyder", "polyint",
    # shapes
    "reshape", "ravel", "transpose", "swapaxes", "moveaxis", "rollaxis", "expand_dims",
    "squeeze", "concatenate", "stack", "atleast_1d", "atleast_2d", "atleast_3d", "hstack",
    "vstack", "dstack", "column_stack", "append", "split", "array_split", "hsplit", "vsplit",
    "dsplit", "tile", "repeat", "flip", "fliplr", "flipud", "roll", "rot90", "broadcast_to",
    "broadcast_arrays", "size", "array_str",
    # selection and indexing
    "where", "select", "choose", "piecewise", "take", "take_along_axis", "unravel_index",
    "ravel_multi_index", "apply_along_axis", "apply_over_axes", "pad",
    # comparison and logic
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
    "logical_or", "logical_xor", "logical_not", "isnan", "isinf", "isposinf", "isneginf",
    "isfinite", "isclose", "allclose", "array_equal", "array_equiv", "in1d", "isin", "all",
    "any", "sometrue", "isscalar",
]
