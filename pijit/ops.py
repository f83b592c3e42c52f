"""Tensor operations: functions (ops.add, ops.matmul, ...) and MindSpore-style primitive
classes (ops.Add(), ops.MatMul(), ...). The functions are native builtins that capture
recognises; a primitive names the builtin it calls with its attributes as keywords."""
from pijit import _C

add = _C.ops.add
sub = _C.ops.sub
mul = _C.ops.mul
div = _C.ops.div
matmul = _C.ops.matmul
neg = _C.ops.neg
exp = _C.ops.exp
log = _C.ops.log
relu = _C.ops.relu
sum = _C.ops.sum  # noqa: A001 - MindSpore's name
mean = _C.ops.mean
reshape = _C.ops.reshape
transpose = _C.ops.transpose
reduce_sum = sum
reduce_mean = mean


class Primitive:
    """A stateless operator object: `ops.Add()(x, y)`.

    `_pijit_op` is the builtin it calls; `_pijit_kwargs()` gives its attributes as keyword
    arguments of that builtin (None when they cannot be expressed that way)."""
    _pijit_op = None

    def __init__(self, **attrs):
        object.__setattr__(self, "_attrs", dict(attrs))

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} attributes are fixed at construction")

    def __getattr__(self, name):
        try:
            return self.__dict__["_attrs"][name]
        except KeyError:
            raise AttributeError(name) from None

    def _pijit_kwargs(self):
        return {}

    def __call__(self, *args, **kwargs):
        return type(self)._pijit_op(*args, **kwargs, **self._pijit_kwargs())

    def __repr__(self):
        attrs = ", ".join(f"{k}={v!r}" for k, v in self._attrs.items())
        return f"{type(self).__name__}({attrs})"


def _primitive(name, fn, doc):
    return type(name, (Primitive,), {"_pijit_op": staticmethod(fn), "__doc__": doc,
                                     "__module__": __name__})


Add = _primitive("Add", add, "x + y with broadcasting.")
Sub = _primitive("Sub", sub, "x - y with broadcasting.")
Mul = _primitive("Mul", mul, "x * y with broadcasting.")
Div = _primitive("Div", div, "x / y (true division) with broadcasting.")
Neg = _primitive("Neg", neg, "-x.")
Exp = _primitive("Exp", exp, "e ** x.")
Log = _primitive("Log", log, "natural logarithm.")
ReLU = _primitive("ReLU", relu, "max(x, 0).")


class MatMul(Primitive):
    """Matrix product; transpose_a/transpose_b transpose the last two axes first."""
    _pijit_op = staticmethod(matmul)

    def __init__(self, transpose_a=False, transpose_b=False):
        super().__init__(transpose_a=transpose_a, transpose_b=transpose_b)

    def _pijit_kwargs(self):
        return None if (self.transpose_a or self.transpose_b) else {}

    def __call__(self, x, y):
        if self.transpose_a:
            x = transpose(x, *_swap_last(x.ndim))
        if self.transpose_b:
            y = transpose(y, *_swap_last(y.ndim))
        return matmul(x, y)


def _swap_last(ndim):
    perm = list(range(ndim))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    return perm


class _Reduce(Primitive):
    def __init__(self, keep_dims=False):
        super().__init__(keep_dims=keep_dims)

    def _pijit_kwargs(self):
        return {"keepdims": bool(self.keep_dims)}

    def __call__(self, x, axis=()):
        return type(self)._pijit_op(x, axis, keepdims=bool(self.keep_dims))


class ReduceSum(_Reduce):
    """Sum over `axis` (all axes when empty)."""
    _pijit_op = staticmethod(sum)


class ReduceMean(_Reduce):
    """Mean over `axis` (all axes when empty)."""
    _pijit_op = staticmethod(mean)


class Reshape(Primitive):
    """Reshape(x, shape)."""
    _pijit_op = staticmethod(reshape)


class Transpose(Primitive):
    """Transpose(x, perm)."""
    _pijit_op = staticmethod(transpose)
