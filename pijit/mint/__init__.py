"""pijit.mint: MindSpore's mindspore.mint, the torch-style namespace (`input`, `other`,
`dim`, `keepdim`; max/min/sort/topk give (values, indices)).

    from pijit import mint
    values, indices = mint.max(x, dim=1, keepdim=True)
    y = mint.nn.functional.gelu(mint.matmul(x, w), approximate="tanh")

Every function is composed of pijit's ops, so it runs eagerly on the autodiff tape and
pijit.jit captures it like any op, except nonzero and unique, whose output shapes depend on
the data: they read the input on the host, so a captured graph breaks where they are called."""
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

# The native ops already take mint's arguments (input/other, dim/keepdim aliases).
from pijit._C.ops import (abs, ceil, cos, equal as eq, erf, exp, floor,  # noqa: A004 - mint's names
                          greater, greater as gt, greater_equal, less, less as lt, less_equal,
                          less_equal as le, log, logical_and, logical_not, logical_or, maximum,
                          minimum, not_equal as ne, reciprocal, rsqrt, sigmoid, sin, sqrt,
                          square, tanh)

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
