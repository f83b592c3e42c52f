"""More of MindSpore's Tensor methods, each the ops function of its name with the tensor as
its first argument (x.addmm(a, b) is ops.addmm(x, a, b)), plus the dtype casts (x.float(),
x.long(), ...) and sizes (x.numel(), x.nbytes). Being Python over pijit's ops, captured code
inlines them like the functions."""
from pijit import _C
from pijit import _ops_activation
from pijit import _ops_composed
from pijit import _ops_array_extra as _array
from pijit import _ops_dynamic_shape as _dynamic
from pijit import _ops_complex as _complex
from pijit import _ops_image as _image
from pijit import _ops_math_more as _math_more
from pijit import _ops_math_extra as _math
from pijit import _ops_misc_extra as _misc
from pijit import _ops_nd as _nd
from pijit import _ops_sample as _sample
from pijit import _ops_sparse as _sparse
from pijit import _ops_svd as _svd
from pijit._primitives_extra import place_rows
from pijit._tensor import bool_, float16, float32, float64, int16, int32, int64, uint8
from pijit.mint import _reduce as _mint_reduce
from pijit.mint._checks import check_int, raise_error
from pijit.mint import _sort as _mint_sort
from pijit.numpy import indexing as _np_indexing
from pijit.numpy import reductions as _np_reductions
from pijit.numpy import shapes as _np_shapes

Tensor = _C.Tensor
_ops = _C.ops

# Methods that are the ops function of the same name, the tensor first, by the module that
# has the function.
_SAME_NAME_BY_MODULE = {
    _math: """
        absolute addbmm addcdiv addcmul addmm addmv addr adjoint arccos arccosh arcsin arcsinh
        arctan arctan2 arctanh atan2 baddbmm bmm copysign cross cumprod deg2rad det divide erfc
        erfinv ger heaviside hypot inv invert is_floating_point isclose lcm ldexp lerp logaddexp
        logaddexp2 logit logsumexp multiply positive rad2deg subtract trace true_divide xdivy xlogy
    """,
    _array: """
        bernoulli cummax cummin diag diagonal expand flip fliplr flipud fold gather_elements
        index_fill masked_fill median narrow ravel repeat_interleave reverse roll rot90 triu unbind
        unfold unsorted_segment_max unsorted_segment_min unsorted_segment_prod
    """,
    _ops_activation: "hardshrink",
    _np_indexing: "choose",
    _nd: "gather_nd",
    _complex: "angle conj is_complex",
    _misc: "cholesky cholesky_inverse index_add norm renorm reverse_sequence",
    _math_more: "igamma igammac",
    _image: "col2im",
    _sample: "i0 random_categorical",
    _svd: "svd",  # LAPACK's on the host, as the dynamic-shape ops below
    # Their result sizes depend on the values: they read the tensor on the host.
    _dynamic: "masked_select nonzero unique_consecutive unique_with_pad",
}

# Methods that call an ops function of another name.
_RENAMED = {
    "soft_shrink": _ops_activation.softshrink, "ge": _ops.greater_equal, "gt": _ops.greater,
    "le": _ops.less_equal, "negative": _ops.neg, "scatter_add": _nd.tensor_scatter_add,
    "scatter_sub": _nd.tensor_scatter_sub, "scatter_mul": _nd.tensor_scatter_mul,
    "scatter_div": _nd.tensor_scatter_div, "scatter_max": _nd.tensor_scatter_max,
    "scatter_min": _nd.tensor_scatter_min,
}
_OPS_METHODS = {name: getattr(module, name)
                for module, names in _SAME_NAME_BY_MODULE.items() for name in names.split()}
_OPS_METHODS.update(_RENAMED)


def _method(fn):
    # A Python function (not the builtin itself), so it binds the tensor as `self`.
    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)

    method.__name__ = getattr(fn, "__name__", "method")
    method.__doc__ = fn.__doc__
    return method


def cumsum(self, axis=None, dtype=None):
    """Running sums along axis (of the flattened tensor when None)."""
    x = self if dtype is None else self.astype(dtype)
    return _np_reductions.cumsum(x, axis)


def expand_as(self, other):
    """self broadcast to other's shape."""
    return _ops.broadcast_to(self, other.shape)


def reshape_as(self, other):
    return _ops.reshape(self, other.shape)


def select(self, condition, y):
    """self where condition holds, else y."""
    return _ops.where(condition, self, y)


def split(self, split_size_or_sections, axis=0):
    """Pieces of split_size_or_sections elements (an int) or of the listed sizes."""
    return _ops_composed.split(self, split_size_or_sections, axis)


def repeat(self, repeats, axis=None):
    """Each element repeated `repeats` times along axis (of the flattened tensor when None)."""
    return _np_shapes.repeat(self, repeats, axis)


def ptp(self, axis=None, keepdims=False):
    """max - min over axis."""
    return _ops.max(self, axis, keepdims=keepdims) - _ops.min(self, axis, keepdims=keepdims)


def argmax_with_value(self, axis=0, keep_dims=False):
    """(Int64 index, value) of the maxima along axis."""
    values, index = _mint_reduce.max(self, axis, keep_dims)
    return index, values


def argmin_with_value(self, axis=0, keep_dims=False):
    """(Int64 index, value) of the minima along axis."""
    values, index = _mint_reduce.min(self, axis, keep_dims)
    return index, values


def top_k(self, k, sorted=True):  # noqa: A002 - MindSpore's name
    """(values, Int64 indices) of the k largest along the last axis."""
    return _mint_sort.topk(self, k, -1, True, sorted)


def searchsorted(self, v, side="left", sorter=None):
    """Where each of v would be inserted into this sorted 1-D tensor."""
    return _mint_sort.searchsorted(self, v, side=side, sorter=sorter)


def approximate_equal(self, other, tolerance=1e-5):
    return _ops.less(_ops.abs(self - other), tolerance)


def is_signed(self):
    """True for the signed dtypes (every float and integer but UInt8 and Bool)."""
    return self.dtype not in (uint8, bool_)


def fill(self, value):
    """A tensor of self's shape and dtype filled with value."""
    return _ops.full_like(self, value)


def copy(self):
    """A new tensor with self's values."""
    return self + _ops.zeros_like(self) if self.dtype != bool_ else _ops.logical_or(self, self)


def inplace_update(self, v, indices):
    """self with rows `indices` replaced by v's rows (a new tensor)."""
    moved, covered = place_rows("inplace_update", indices, self, v)
    return _ops.where(_ops.greater(covered, 0), moved, self)


def init_data(self, slice_index=None, shape=None, opt_shard_group=None):
    """self: pijit computes an initializer's values when the tensor is made."""
    return self


def to_tensor(self, slice_index=None, shape=None, opt_shard_group=None):
    """MindSpore's older name of init_data: self, whose values already exist."""
    return init_data(self, slice_index, shape, opt_shard_group)


def flush_from_cache(self):
    """Nothing to do: a pijit tensor's values always live in its own host (or device) memory,
    never in an embedding cache that would have to be written back."""
    return None


def set_const_arg(self, const_arg=True):
    """Marks self as a constant argument of jitted networks (MindSpore then compiles its values
    into the graph) and returns self. pijit passes such a tensor as a graph input like any
    other, so results are the same whether or not it is marked."""
    if not isinstance(const_arg, bool):
        raise_error(TypeError, f"Tensor.set_const_arg: const_arg must be a bool, got "
                               f"{type(const_arg).__name__}")
    self.const_arg = const_arg
    return self


def itemset(self, *args):
    """A new tensor equal to self but for one element: itemset(value) for a one-element tensor,
    itemset(index, value) with index a flat int or a tuple of ints (negative ones count from
    the end). value is cast to self's dtype, as MindSpore does (7.9 into Int32 is 7); self is
    unchanged."""
    if len(args) not in (1, 2):
        raise_error(TypeError, f"Tensor.itemset: expected (value) or (index, value), got "
                               f"{len(args)} arguments")
    flat = _ops.reshape(self, (-1,))
    if len(args) == 1:
        if self.size != 1:
            raise_error(ValueError, f"Tensor.itemset: one argument sets a one-element tensor; "
                                    f"this one has {self.size} elements: pass an index too")
        position = 0
    else:
        position = _flat_position(self.shape, args[0])
    value = args[-1]
    # Made in a dtype that holds the Python number exactly, then cast (a float through
    # float32 would round 9.7 before it reaches a Float64 tensor).
    exact = int64 if isinstance(value, int) and not isinstance(value, bool) else float64
    value = Tensor(value, exact).astype(self.dtype)
    hit = _ops.equal(_ops.arange(self.size), position)
    return _ops.reshape(_ops.where(hit, value, flat), self.shape)


def _flat_position(shape, index):
    """The row-major position of `index` (an int into the flattened tensor, or one int per
    axis) in a tensor of `shape`; out-of-range indices are an IndexError."""
    size = 1
    for n in shape:
        size *= n
    if isinstance(index, int) and not isinstance(index, bool):
        if not -size <= index < size:
            raise_error(IndexError, f"Tensor.itemset: index {index} is out of range for "
                                    f"{size} elements")
        return index % size
    if not isinstance(index, tuple) or len(index) != len(shape):
        raise_error(TypeError, f"Tensor.itemset: index must be an int or a tuple of {len(shape)} "
                               f"ints, got {index!r}")
    position = 0
    for axis, (i, n) in enumerate(zip(index, shape)):
        i = check_int("Tensor.itemset", f"index[{axis}]", i)
        if not -n <= i < n:
            raise_error(IndexError, f"Tensor.itemset: index {i} is out of range for axis "
                                    f"{axis} of length {n}")
        position = position * n + i % n
    return position


def resize(self, *new_shape):
    """A new tensor of new_shape (ints, or one tuple or list of them) holding self's elements
    in row-major order, cut short or followed by zeros (NumPy's ndarray.resize; MindSpore
    returns the new tensor and leaves self unchanged)."""
    if len(new_shape) == 1 and isinstance(new_shape[0], (tuple, list)):
        new_shape = tuple(new_shape[0])
    new_shape = tuple(check_int("Tensor.resize", "new_shape", n, low=0) for n in new_shape)
    size = 1
    for n in new_shape:
        size *= n
    flat = _ops.reshape(self, (-1,))
    if size <= self.size:
        flat = flat[:size]
    else:
        flat = _ops.concat((flat, _ops.zeros((size - self.size,), self.dtype)))
    return _ops.reshape(flat, new_shape)


def numel(self):
    return self.size


def ndimension(self):
    return self.ndim


def _cast_to(dtype, name):
    def cast(self):
        return self.astype(dtype)

    cast.__name__ = name
    cast.__doc__ = f"self as {dtype}."
    return cast


_OWN = {
    "to_coo": _sparse.tensor_to_coo, "to_csr": _sparse.tensor_to_csr,
    "cumsum": cumsum, "expand_as": expand_as, "reshape_as": reshape_as, "select": select,
    "split": split, "repeat": repeat, "ptp": ptp, "argmax_with_value": argmax_with_value,
    "argmin_with_value": argmin_with_value, "top_k": top_k, "searchsorted": searchsorted,
    "approximate_equal": approximate_equal, "is_signed": is_signed, "fill": fill,
    "copy": copy, "init_data": init_data, "to_tensor": to_tensor,
    "flush_from_cache": flush_from_cache, "set_const_arg": set_const_arg, "inplace_update": inplace_update,
    "itemset": itemset, "resize": resize, "numel": numel, "nelement": numel,
    "ndimension": ndimension,
    "bool": _cast_to(bool_, "bool"), "float": _cast_to(float32, "float"),
    "half": _cast_to(float16, "half"), "int": _cast_to(int32, "int"),
    "long": _cast_to(int64, "long"), "short": _cast_to(int16, "short"),
}


def install():
    """Sets the methods on pijit.Tensor, leaving any the extension already defines."""
    for name, fn in _OPS_METHODS.items():
        if not hasattr(Tensor, name):
            setattr(Tensor, name, _method(fn))
    for name, fn in _OWN.items():
        if not hasattr(Tensor, name):
            setattr(Tensor, name, fn)
    if not hasattr(Tensor, "itemsize"):
        Tensor.itemsize = property(lambda self: self.dtype.to_numpy().itemsize)
        Tensor.nbytes = property(lambda self: self.dtype.to_numpy().itemsize * self.size)
    if not hasattr(Tensor, "has_init"):
        Tensor.has_init = property(lambda self: False)  # values exist from construction on
    if not hasattr(Tensor, "from_numpy"):
        Tensor.from_numpy = staticmethod(lambda array: Tensor(array))
