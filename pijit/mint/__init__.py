"""pijit.mint: MindSpore's mindspore.mint, the torch-style namespace (`input`, `other`,
`dim`, `keepdim`; max/min/sort/topk give (values, indices)).

    from pijit import mint
    values, indices = mint.max(x, dim=1, keepdim=True)
    y = mint.nn.functional.gelu(mint.matmul(x, w), approximate="tanh")

Every function is composed of pijit's ops, so it runs eagerly on the autodiff tape and
pijit.jit captures it like any op, except nonzero and unique, whose output shapes depend on
the data: they read the input on the host, so a captured graph breaks where they are called."""
from pijit import _C
from pijit.mint import linalg, nn, optim
from pijit.mint._creation import (arange, eye, normal, ones, ones_like, rand, rand_like, zeros,
                                  zeros_like)
from pijit.mint._elementwise import (add, arctan2, atan2, clamp, div, divide, erfinv, isclose,
                                     isfinite, mul, neg, negative, pow, silu, sub, where)
from pijit.mint._reduce import all, any, argmax, cumsum, max, mean, min, prod, sum
from pijit.mint._shape import (bmm, broadcast_to, cat, flip, gather, index_select, matmul,
                               narrow, permute, repeat_interleave, scatter_add, split, stack,
                               tile)
from pijit.mint._sort import searchsorted, sort, topk
from pijit.mint._dynamic_shape import nonzero, unique

_ops = _C.ops

# The native ops already take mint's arguments (input/other, dim/keepdim aliases).
abs = _ops.abs  # noqa: A001 - mint's names
ceil = _ops.ceil
cos = _ops.cos
eq = _ops.equal
erf = _ops.erf
exp = _ops.exp
floor = _ops.floor
greater = gt = _ops.greater
greater_equal = _ops.greater_equal
le = less_equal = _ops.less_equal
less = lt = _ops.less
log = _ops.log
logical_and = _ops.logical_and
logical_not = _ops.logical_not
logical_or = _ops.logical_or
maximum = _ops.maximum
minimum = _ops.minimum
ne = _ops.not_equal
reciprocal = _ops.reciprocal
rsqrt = _ops.rsqrt
sigmoid = _ops.sigmoid
sin = _ops.sin
sqrt = _ops.sqrt
square = _ops.square
tanh = _ops.tanh
inverse = linalg.inv

__all__ = [
    "linalg", "nn", "optim",
    "arange", "eye", "normal", "ones", "ones_like", "rand", "rand_like", "zeros", "zeros_like",
    "abs", "add", "arctan2", "atan2", "ceil", "clamp", "cos", "div", "divide", "eq", "erf",
    "erfinv", "exp", "floor", "greater", "greater_equal", "gt", "isclose", "isfinite", "le",
    "less", "less_equal", "log", "logical_and", "logical_not", "logical_or", "lt", "maximum",
    "minimum", "mul", "ne", "neg", "negative", "pow", "reciprocal", "rsqrt", "sigmoid", "silu",
    "sin", "sqrt", "square", "sub", "tanh", "where",
    "all", "any", "argmax", "cumsum", "max", "mean", "min", "prod", "sum",
    "bmm", "broadcast_to", "cat", "flip", "gather", "index_select", "inverse", "matmul",
    "narrow", "permute", "repeat_interleave", "scatter_add", "split", "stack", "tile",
    "searchsorted", "sort", "topk", "nonzero", "unique",
]
