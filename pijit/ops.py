"""Tensor operations: functions (ops.add, ops.matmul, ...) and MindSpore-style primitive
classes (ops.Add(), ops.MatMul(), ...). The functions are native builtins that capture
recognises; a primitive names the builtin it calls with its attributes as keywords."""
from pijit import _C
from pijit._autodiff import GradOperation, grad, value_and_grad  # noqa: F401

# ops.range (set at the end) is MindSpore's; this module's own loops use the builtin.
_builtin_range = range

# Every function declared in interop/pyops.def, as the native builtin capture recognises.
_FUNCTIONS = {name: fn for name, fn in vars(_C.ops).items() if callable(fn)}
globals().update(_FUNCTIONS)
sum = _C.ops.sum  # noqa: A001 - MindSpore's name (listed for readers; set by the line above)
max = _C.ops.max  # noqa: A001
min = _C.ops.min  # noqa: A001
abs = _C.ops.abs  # noqa: A001
pow = _C.ops.pow  # noqa: A001
all = _C.ops.all  # noqa: A001
any = _C.ops.any  # noqa: A001

# Aliases (MindSpore and NumPy spellings): the same builtins, so they capture alike.
reduce_sum = sum
reduce_mean = mean
amax = max
amin = min
cat = concat
floor_mod = remainder
mod = remainder
eq = equal
ne = not_equal
lt = less
le = less_equal
gt = greater
ge = greater_equal
select = where
clip_by_value = clip
negative = neg
def constexpr(fn=None, get_instance=True, reuse_result=True, check=True):
    """MindSpore's @constexpr: `fn` computes from constants (shapes, numbers, strings, dtypes)
    and may use any Python, NumPy included. Captured code calls it at compile time and uses
    its result as a constant of the graph, guarded by its arguments; called with a tensor of
    the graph it breaks the graph there. Eagerly it is a plain call. With get_instance=False
    the decorated name must be called once more first (`f()(args)`), as in MindSpore."""
    del reuse_result, check  # results are always reused while the guards hold

    def mark(f):
        if not callable(f) or not hasattr(f, "__code__"):
            raise TypeError(f"constexpr: expected a Python function, got {type(f).__name__}")
        f.__pijit_constexpr__ = True
        return f if get_instance else (lambda: f)

    return mark if fn is None else mark(fn)


def take(input, indices, axis=None):  # noqa: A002 - NumPy's name
    """NumPy's take: the elements of `input` at `indices` along `axis` (of the flattened input
    when axis is None)."""
    if axis is None:
        input = input.reshape(-1)  # noqa: A001
        axis = 0
    return gather(input, indices, axis)  # noqa: F821 - set from _C.ops above


_C.Tensor.take = take


def _restore_primitive(cls, state):
    obj = cls.__new__(cls)
    obj.__dict__.update(state)
    return obj


class Primitive(_C.PrimitiveBase):
    """A stateless operator object: `ops.Add()(x, y)`.

    `_pijit_op` is the builtin it calls; `_pijit_kwargs()` gives its attributes as keyword
    arguments of that builtin. Calling an instance goes straight to the builtin (the native
    base, pijit/csrc/primitive_py.cc); a subclass that computes differently defines
    __call__."""
    _pijit_op = None

    def __init__(self, **attrs):
        # Plain instance attributes (no __getattr__), which captured code reads like any other.
        object.__setattr__(self, "_attrs", dict(attrs))
        for name, value in attrs.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} attributes are fixed at construction")

    def _pijit_kwargs(self):
        return {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        _C._primitive_fast_call(cls)

    def __reduce__(self):
        # The native base holds fields of its own, which the default reduction refuses.
        return _restore_primitive, (type(self), dict(self.__dict__))

    def __repr__(self):
        attrs = ", ".join(f"{k}={v!r}" for k, v in self._attrs.items())
        return f"{type(self).__name__}({attrs})"


def _primitive(name, fn, doc, base=Primitive, **class_attrs):
    """A primitive class calling the builtin `fn`; `base` supplies its attributes and keyword
    arguments, `class_attrs` its class-level settings (such as _default_axis)."""
    return type(name, (base,), {"_pijit_op": staticmethod(fn), "__doc__": doc,
                                "__module__": __name__, **class_attrs})


class _Reduce(Primitive):
    def __init__(self, keep_dims=False):
        super().__init__(keep_dims=keep_dims)

    def _pijit_kwargs(self):
        return {"keepdims": bool(self.keep_dims)}

    def __call__(self, x, axis=()):
        return type(self)._pijit_op(x, axis, keepdims=bool(self.keep_dims))


def _reduce(name, fn, quantity):
    return _primitive(name, fn, f"{quantity} over `axis` (all axes when empty).", _Reduce)


Add = _primitive("Add", add, "x + y with broadcasting.")
Sub = _primitive("Sub", sub, "x - y with broadcasting.")
Mul = _primitive("Mul", mul, "x * y with broadcasting.")
Div = _primitive("Div", div, "x / y (true division) with broadcasting.")
Neg = _primitive("Neg", neg, "-x.")
Exp = _primitive("Exp", exp, "e ** x.")
Log = _primitive("Log", log, "natural logarithm.")
ReLU = _primitive("ReLU", relu, "max(x, 0).")
Pow = _primitive("Pow", pow, "x ** y with broadcasting.")
Maximum = _primitive("Maximum", maximum, "Elementwise maximum (NaN propagates).")
Minimum = _primitive("Minimum", minimum, "Elementwise minimum (NaN propagates).")
FloorDiv = _primitive("FloorDiv", floor_divide, "Floor division x // y.")
FloorMod = _primitive("FloorMod", remainder, "x % y with the sign of y.")
Equal = _primitive("Equal", equal, "x == y, elementwise, as Bool.")
NotEqual = _primitive("NotEqual", not_equal, "x != y, elementwise, as Bool.")
Less = _primitive("Less", less, "x < y, elementwise, as Bool.")
LessEqual = _primitive("LessEqual", less_equal, "x <= y, elementwise, as Bool.")
Greater = _primitive("Greater", greater, "x > y, elementwise, as Bool.")
GreaterEqual = _primitive("GreaterEqual", greater_equal, "x >= y, elementwise, as Bool.")
LogicalAnd = _primitive("LogicalAnd", logical_and, "x and y, elementwise, as Bool.")
LogicalOr = _primitive("LogicalOr", logical_or, "x or y, elementwise, as Bool.")
LogicalNot = _primitive("LogicalNot", logical_not, "not x, elementwise, as Bool.")
Select = _primitive("Select", where, "Select()(cond, x, y): x where cond, else y.")
Abs = _primitive("Abs", abs, "|x|.")
Sign = _primitive("Sign", sign, "-1, 0 or 1 by the sign of x.")
Square = _primitive("Square", square, "x * x.")
Sqrt = _primitive("Sqrt", sqrt, "square root.")
Rsqrt = _primitive("Rsqrt", rsqrt, "1 / sqrt(x).")
Sin = _primitive("Sin", sin, "sine.")
Cos = _primitive("Cos", cos, "cosine.")
Tanh = _primitive("Tanh", tanh, "hyperbolic tangent.")
Sigmoid = _primitive("Sigmoid", sigmoid, "1 / (1 + exp(-x)).")
GeLU = _primitive("GeLU", gelu, "x * Phi(x) (erf form).")
Softplus = _primitive("Softplus", softplus, "log(1 + exp(x)).")
Erf = _primitive("Erf", erf, "the error function.")
ZerosLike = _primitive("ZerosLike", zeros_like, "zeros with the shape and dtype of x.")
OnesLike = _primitive("OnesLike", ones_like, "ones with the shape and dtype of x.")
ReduceSum = _reduce("ReduceSum", sum, quantity="Sum")
ReduceMean = _reduce("ReduceMean", mean, quantity="Mean")
ReduceMax = _reduce("ReduceMax", max, quantity="Maximum")
ReduceMin = _reduce("ReduceMin", min, quantity="Minimum")
ReduceProd = _reduce("ReduceProd", prod, quantity="Product")
ReduceAll = _reduce("ReduceAll", all, quantity="Logical and")
ReduceAny = _reduce("ReduceAny", any, quantity="Logical or")
Reshape = _primitive("Reshape", reshape, "Reshape(x, shape).")
Transpose = _primitive("Transpose", transpose, "Transpose(x, perm).")


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
    return tuple(_builtin_range(ndim - 2)) + (ndim - 1, ndim - 2)


class _AxisPrimitive(Primitive):
    """A primitive whose one attribute is the `axis` keyword of its function."""
    _default_axis = 0

    def __init__(self, axis=None):
        super().__init__(axis=self._default_axis if axis is None else axis)

    def _pijit_kwargs(self):
        return {"axis": self.axis}


Softmax = _primitive("Softmax", softmax, "Softmax(axis=-1)(x).", _AxisPrimitive,
                     _default_axis=-1)
LogSoftmax = _primitive("LogSoftmax", log_softmax, "LogSoftmax(axis=-1)(x).", _AxisPrimitive,
                        _default_axis=-1)


class Argmax(Primitive):
    """Argmax(axis=-1, output_type=int32)(x): indices of the maxima along axis, of
    output_type (MindSpore's default is Int32)."""
    _pijit_op = staticmethod(argmax)

    def __init__(self, axis=-1, output_type=_C.dtype.i32):
        if output_type not in (_C.dtype.i32, _C.dtype.i64):
            raise TypeError(f"{type(self).__name__}: output_type must be int32 or int64, got "
                            f"{output_type!r}")
        super().__init__(axis=axis, output_type=output_type)

    def _pijit_kwargs(self):
        return None  # the cast to output_type follows the builtin

    def __call__(self, x):
        return argmax(x, self.axis).astype(self.output_type)


class Argmin(Argmax):
    """Argmin(axis=-1, output_type=int32)(x): indices of the minima along axis, of
    output_type (MindSpore's default is Int32)."""
    _pijit_op = staticmethod(argmin)

    def __call__(self, x):
        return argmin(x, self.axis).astype(self.output_type)


Concat = _primitive("Concat", concat, "Concat(axis=0)(tensors).", _AxisPrimitive)
Stack = _primitive("Stack", stack, "Stack(axis=0)(tensors).", _AxisPrimitive)


class Squeeze(_AxisPrimitive):
    """Squeeze(axis=())(x): removes the given size-1 axes (every one when empty)."""
    _pijit_op = staticmethod(squeeze)

    def __init__(self, axis=()):
        Primitive.__init__(self, axis=axis)  # the axis as given: None is no default here


ExpandDims = _primitive("ExpandDims", expand_dims, "ExpandDims()(x, axis).")


class BroadcastTo(Primitive):
    """BroadcastTo(shape)(x); -1 keeps the input's size."""
    _pijit_op = staticmethod(broadcast_to)

    def __init__(self, shape):
        super().__init__(shape=tuple(shape))

    def _pijit_kwargs(self):
        return None  # the shape is positional in broadcast_to

    def __call__(self, x):
        return broadcast_to(x, self.shape)


class Flatten(Primitive):
    """Flatten()(x): keeps axis 0 and flattens the rest, (N, ...) -> (N, X)."""
    _pijit_op = staticmethod(flatten)

    def _pijit_kwargs(self):
        return {"start_dim": 1}


Zeros = _primitive("Zeros", zeros, "Zeros()(shape, dtype).")
Ones = _primitive("Ones", ones, "Ones()(shape, dtype).")


class Fill(Primitive):
    """Fill()(dtype, shape, value)."""
    _pijit_op = staticmethod(full)

    def _pijit_kwargs(self):
        return None  # the argument order differs from full's

    def __call__(self, dtype, shape, value):
        return full(shape, value, dtype=dtype)


Eye = _primitive("Eye", eye, "Eye()(n, m, dtype).")


class StandardNormal(Primitive):
    """StandardNormal(seed=0, seed2=0)(shape): N(0, 1) samples; seed 0 uses the global
    generator (pijit.set_seed)."""
    _pijit_op = staticmethod(randn)

    def __init__(self, seed=0, seed2=0):
        super().__init__(seed=seed, seed2=seed2)

    def _pijit_kwargs(self):
        return {"seed": self.seed} if self.seed else {}


class UniformReal(StandardNormal):
    """UniformReal(seed=0, seed2=0)(shape): samples from [0, 1)."""
    _pijit_op = staticmethod(rand)


# ---- neural-network layers ------------------------------------------------------------------

def dropout(input, p=0.5, training=True, seed=None):  # noqa: A002 - MindSpore's name
    """Zeroes each element with probability `p` and scales the rest by 1 / (1 - p); the
    identity when not training. Draws from the global generator (pijit.set_seed) unless a
    seed is given. Made of pijit ops, so it is captured like them."""
    if not training or p == 0:
        return input
    if p == 1:
        return zeros_like(input)
    keep = 1.0 - p
    mask = less(uniform(input.shape, 0.0, 1.0, seed=seed, dtype=input.dtype), keep)
    return where(mask, input / keep, 0.0)


class Conv2D(Primitive):
    """Conv2D(out_channel, kernel_size, mode=1, pad_mode="valid", pad=0, stride=1, dilation=1,
    group=1, data_format="NCHW")(x, weight): 2-D convolution of NCHW data, without bias."""
    _pijit_op = staticmethod(conv2d)

    def __init__(self, out_channel, kernel_size, mode=1, pad_mode="valid", pad=0, stride=1,
                 dilation=1, group=1, data_format="NCHW"):
        if data_format != "NCHW":
            raise ValueError(f"Conv2D: only data_format='NCHW' is supported, got {data_format!r}")
        super().__init__(out_channel=out_channel, kernel_size=kernel_size, mode=mode,
                         pad_mode=pad_mode, pad=pad, stride=stride, dilation=dilation,
                         group=group, data_format=data_format)

    def _pijit_kwargs(self):
        return {"stride": self.stride, "pad_mode": self.pad_mode, "padding": self.pad,
                "dilation": self.dilation, "groups": self.group}


class _Pool(Primitive):
    def __init__(self, kernel_size=1, strides=1, pad_mode="valid", data_format="NCHW"):
        if data_format != "NCHW":
            raise ValueError(f"{type(self).__name__}: only data_format='NCHW' is supported, "
                             f"got {data_format!r}")
        super().__init__(kernel_size=kernel_size, strides=strides, pad_mode=pad_mode,
                         data_format=data_format)

    def _pijit_kwargs(self):
        return {"kernel_size": self.kernel_size, "stride": self.strides,
                "pad_mode": self.pad_mode}


MaxPool = _primitive(
    "MaxPool", max_pool2d,
    'MaxPool(kernel_size=1, strides=1, pad_mode="valid", data_format="NCHW")(x): max pooling '
    "over H and W of NCHW data.", _Pool)
AvgPool = _primitive(
    "AvgPool", avg_pool2d,
    'AvgPool(kernel_size=1, strides=1, pad_mode="valid", data_format="NCHW")(x): average '
    "pooling over H and W of NCHW data ('same' padding is left out of the divisor).", _Pool)


class OneHot(_AxisPrimitive):
    """OneHot(axis=-1)(indices, depth, on_value, off_value); the values may be Python numbers
    or scalar Tensors (the output then takes on_value's dtype)."""
    _pijit_op = staticmethod(one_hot)

    def __init__(self, axis=-1):
        Primitive.__init__(self, axis=axis)  # the axis as given: None is no default here

    def _pijit_kwargs(self):
        return None  # __call__ picks the form by the values' types

    def __call__(self, indices, depth, on_value, off_value):
        # one_hot here is pijit._ops_signatures' (set at the end of this module).
        return one_hot(indices, depth, on_value, off_value, self.axis)


Assign = _primitive("Assign", assign, "Assign()(variable, value): writes value into variable "
                    "in place and returns it.")


# ---- composed of the native ops (pijit/_ops_composed.py) ---------------------------------------
from pijit._ops_composed import (addn, cast, contiguous, depend, fill, hardsigmoid,  # noqa: E402
                                 hardswish, isfinite, isinf, isnan, leaky_relu, pad, permute,
                                 relu6, shape, split, strided_slice, swapaxes, tensor_slice, tile,
                                 unstack)

from pijit._ops_activation import (celu, elu, fast_gelu, glu, hardshrink, hardtanh,  # noqa: E402
                                   logsigmoid, mish, prelu, selu, silu, softmin, softshrink,
                                   softsign, tanhshrink, threshold)

from pijit._ops_loss import *  # noqa: E402,F401,F403 - cross_entropy, nll_loss, kl_div, ...
from pijit._ops_resize import (adaptive_avg_pool1d, adaptive_avg_pool2d,  # noqa: E402
                               adaptive_max_pool1d, adaptive_max_pool2d, interpolate,
                               pixel_shuffle, pixel_unshuffle)

hard_swish = hardswish
hard_sigmoid = hardsigmoid
upsample = interpolate
_C.Tensor.tile = tile
_C.Tensor.isnan = isnan
_C.Tensor.isinf = isinf
_C.Tensor.isfinite = isfinite
_C.Tensor.swapaxes = swapaxes
_C.Tensor.permute = permute
_C.Tensor.contiguous = contiguous
from pijit._tensor import _to as _tensor_to  # noqa: E402
_C.Tensor.to = _tensor_to


class Split(Primitive):
    """Split(axis=0, output_num=1)(x): output_num equal pieces of x along axis."""

    def __init__(self, axis=0, output_num=1):
        super().__init__(axis=axis, output_num=output_num)

    def __call__(self, x):
        n = x.shape[self.axis]
        if self.output_num <= 0 or n % self.output_num:
            raise ValueError(f"Split: axis {self.axis} of size {n} does not split into "
                             f"{self.output_num} equal pieces")
        return split(x, n // self.output_num, self.axis)


class Unstack(Primitive):
    """Unstack(axis=0)(x): the slices of x along axis."""

    def __init__(self, axis=0):
        super().__init__(axis=axis)

    def __call__(self, x):
        return unstack(x, self.axis)


class StridedSlice(Primitive):
    """StridedSlice(begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask)(x,
    begin, end, strides)."""

    def __init__(self, begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0,
                 shrink_axis_mask=0):
        super().__init__(begin_mask=begin_mask, end_mask=end_mask, ellipsis_mask=ellipsis_mask,
                         new_axis_mask=new_axis_mask, shrink_axis_mask=shrink_axis_mask)

    def __call__(self, x, begin, end, strides):
        return strided_slice(x, begin, end, strides, self.begin_mask, self.end_mask,
                             self.ellipsis_mask, self.new_axis_mask, self.shrink_axis_mask)


class Pad(Primitive):
    """Pad(paddings)(x): zeros around x, paddings[i] = (before, after) for axis i."""

    def __init__(self, paddings):
        super().__init__(paddings=paddings)

    def __call__(self, x):
        return pad(x, self.paddings)


class Gather(Primitive):
    """Gather()(params, indices, axis): params' slices at indices along axis."""

    def __init__(self, batch_dims=0):
        if batch_dims != 0:
            raise NotImplementedError("Gather: batch_dims other than 0 is not supported")
        super().__init__(batch_dims=batch_dims)

    def __call__(self, params, indices, axis):
        return gather(params, indices, axis)


class BatchMatMul(MatMul):
    """Batched matrix product over the leading axes; transpose_a/transpose_b transpose the
    last two axes first."""


class LeakyReLU(Primitive):
    def __init__(self, alpha=0.2):
        super().__init__(alpha=alpha)

    def __call__(self, x):
        return leaky_relu(x, self.alpha)


def _composed(name, fn, doc):
    """A primitive without attributes whose call is fn(*args), for a Python function composed
    of the builtins (the native call path takes builtins only)."""
    return type(name, (Primitive,), {"__call__": lambda self, *args: fn(*args), "__doc__": doc,
                                     "__module__": __name__})


Tile = _composed("Tile", tile, "Tile()(x, multiples): x repeated along each axis.")
Cast = _composed("Cast", cast, "Cast()(x, dtype): x converted to dtype.")
Shape = _composed("Shape", shape, "Shape()(x): x's shape, a tuple.")
Depend = _composed("Depend", depend, "Depend()(value, expr): value.")
ReLU6 = _composed("ReLU6", relu6, "min(max(x, 0), 6).")
HSwish = _composed("HSwish", hardswish, "x * relu6(x + 3) / 6.")
HSigmoid = _composed("HSigmoid", hardsigmoid, "relu6(x + 3) / 6.")
IsNan = _composed("IsNan", isnan, "IsNan()(x): True where x is NaN.")
IsInf = _composed("IsInf", isinf, "IsInf()(x): True where x is +inf or -inf.")
IsFinite = _composed("IsFinite", isfinite, "IsFinite()(x): True where x is finite.")


class Slice(Primitive):
    """Slice()(x, begin, size): x[begin[i]:begin[i] + size[i]] per axis (size -1: to the end)."""

    def __call__(self, x, begin, size):
        return tensor_slice(x, begin, size)


AddN = _composed("AddN", addn, "AddN()(tensors): their sum.")
TensorAdd = Add  # MindSpore's older name
slice = tensor_slice  # noqa: A001 - MindSpore's name (after every use of the builtin above)


def dense(input, weight, bias=None):  # noqa: A002 - MindSpore's name
    """input @ weight.T (+ bias): a fully connected layer's function."""
    out = matmul(input, transpose(weight, _swap_last(weight.ndim)))
    return out if bias is None else out + bias


class DType(Primitive):
    """DType()(x): x's dtype."""

    def __call__(self, x):
        return x.dtype


class AssignAdd(Primitive):
    """AssignAdd()(variable, value): variable += value in place; returns variable."""

    def __call__(self, variable, value):
        return assign(variable, variable + value)


class AssignSub(Primitive):
    """AssignSub()(variable, value): variable -= value in place; returns variable."""

    def __call__(self, variable, value):
        return assign(variable, variable - value)


class Print(Primitive):
    """Print()(*values): prints them, as print does."""

    def __call__(self, *values):
        print(*values)


def _assign_value(self, value):
    """Tensor.assign_value(value): writes value into this tensor in place; returns it."""
    assign(self, value)
    return self


_C.Tensor.assign_value = _assign_value


# Last: these build on pijit.mint, whose layers import pijit.nn, which needs the names above.
from pijit._ops_math_extra import *  # noqa: E402,F401,F403 - addmm, lerp, logsumexp, det, ...
from pijit._ops_array_extra import *  # noqa: E402,F401,F403 - roll, topk, masked_fill, ...
from pijit._ops_nd import *  # noqa: E402,F401,F403 - einsum, gather_nd, tensor_scatter_add, ...
from pijit._ops_sample import *  # noqa: E402,F401,F403 - multinomial, shuffle, hann_window, ...
from pijit._ops_nn_more import *  # noqa: E402,F401,F403 - triplet_margin_loss, lrn, iou, ...
from pijit._ops_misc_extra import *  # noqa: E402,F401,F403 - slogdet, cholesky, norm, ...
from pijit._ops_conv3d import *  # noqa: E402,F401,F403 - conv3d, max_pool3d, avg_pool3d
from pijit._ops_special import *  # noqa: E402,F401,F403 - stop_gradient, gumbel_softmax, ...
from pijit._ops_misc_extra import range_of as range  # noqa: E402,A001 - MindSpore's name
from pijit._primitives_extra import *  # noqa: E402,F401,F403 - Floor, CumSum, Median, ...
from pijit._primitives_more import *  # noqa: E402,F401,F403 - Multinomial, LRN, NLLLoss, ...
from pijit._ops_complex import *  # noqa: E402,F401,F403 - real, imag, conj, Complex, Polar, ...
from pijit._primitives_optim import *  # noqa: E402,F401,F403 - ApplyMomentum, Adam, ...
from pijit._ops_scatter import *  # noqa: E402,F401,F403 - scatter_add, ScatterNdAdd, Einsum, ...
from pijit._ops_dynamic_shape import *  # noqa: E402,F401,F403 - nonzero, unique, ...
from pijit._ops_image import *  # noqa: E402,F401,F403 - crop_and_resize, ResizeBilinearV2, ...
from pijit._ops_math_more import *  # noqa: E402,F401,F403 - bessel_j0, matrix_exp, ...
from pijit._primitives_functional import *  # noqa: E402,F401,F403 - HyperMap, Partial, ...
from pijit._primitives_optim_more import *  # noqa: E402,F401,F403 - SGD, SparseApplyFtrl, ...
from pijit._primitives_comm import *  # noqa: E402,F401,F403 - AllReduce, AllGather, ReduceOp, ...
from pijit._ops_svd import *  # noqa: E402,F401,F403 - svd, pinv, Svd
from pijit._ops_linalg_more import *  # noqa: E402,F401,F403 - Qr, Lstsq, LuSolve, ...
from pijit._ops_sparse import *  # noqa: E402,F401,F403 - coo_*, csr_*, csr_mm, ...
from pijit._primitives_sparse import *  # noqa: E402,F401,F403 - SparseToDense, Coalesce, ...
from pijit import _tensor_methods_extra  # noqa: E402

_tensor_methods_extra.install()  # x.addmm(...), x.cumsum(...), x.float(), ...
from pijit._primitives_lstm import *  # noqa: E402,F401,F403 - LSTM
from pijit._primitives_queue import *  # noqa: E402,F401,F403 - GetNext
# MindSpore 2.x argument forms over the builtins above (Tensor scalars, extra keywords).
from pijit._ops_signatures import *  # noqa: E402,F401,F403 - one_hot, flatten, pad, ...
from pijit._ops_taylor import *  # noqa: E402,F401,F403 - jet, derivative
from pijit._ops_candidates import *  # noqa: E402,F401,F403 - uniform_candidate_sampler, ...
from pijit._ops_ctc_decode import *  # noqa: E402,F401,F403 - ctc_greedy_decoder, CTCGreedyDecoder
from pijit._ops_fractional_pool import *  # noqa: E402,F401,F403 - fractional_max_pool2d, ...
from pijit._ops_deformable_conv import *  # noqa: E402,F401,F403 - deformable_conv2d
from pijit._ops_detection import *  # noqa: E402,F401,F403 - NMSWithMask, ROIAlign, ...
from pijit._ops_custom import *  # noqa: E402,F401,F403 - Custom, CustomRegOp, PrimitiveWithInfer, ...
from pijit._primitives_numeric import *  # noqa: E402,F401,F403 - Eig, Betainc, FloatStatus, ...
from pijit._primitives_sequence import *  # noqa: E402,F401,F403 - EditDistance, NoRepeatNGram
from pijit._primitives_dynamic_rnn import *  # noqa: E402,F401,F403 - DynamicRNN, DynamicGRUV2
from pijit._primitives_rnnt import *  # noqa: E402,F401,F403 - RNNTLoss
from pijit._primitives_summary import *  # noqa: E402,F401,F403 - ScalarSummary, ImageSummary, ...
