"""pijit.Tensor: the native tensor type, with printing in the style MindSpore uses."""
import numpy as np

from pijit import _C

Tensor = _C.Tensor
dtype = _C.dtype
_DTYPES = (dtype.bool, dtype.i8, dtype.i16, dtype.i32, dtype.i64, dtype.u8, dtype.u16, dtype.u32,
           dtype.u64, dtype.f16, dtype.bf16, dtype.f32, dtype.f64, dtype.c64, dtype.c128)
(bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16, float32,
 float64, complex64, complex128) = _DTYPES
_PYTYPES = {bool: bool_, int: int64, float: float32, complex: complex128}


def dtype_to_nptype(type_):
    """The NumPy scalar type of a pijit dtype."""
    if not isinstance(type_, dtype):
        raise TypeError(f"dtype_to_nptype: expected a pijit dtype, got {type(type_).__name__}")
    return type_.to_numpy().type


def pytype_to_dtype(obj):
    """The pijit dtype of a Python type (bool, int, float, complex), a NumPy dtype or a pijit
    dtype."""
    if isinstance(obj, dtype):
        return obj
    if obj in _PYTYPES:
        return _PYTYPES[obj]
    try:
        kind = np.dtype(obj)
    except TypeError:
        raise TypeError(f"pytype_to_dtype: {obj!r} is not a type pijit has a dtype for") from None
    for d in _DTYPES:
        if d.to_numpy() == kind:
            return d
    raise TypeError(f"pytype_to_dtype: pijit has no dtype for NumPy's {kind}")


def dtype_to_pytype(type_):
    """The Python type (bool, int, float or complex) of a pijit dtype's values."""
    if type_ in (complex64, complex128):
        return complex
    return bool if type_ == bool_ else float if "f" in type_.name.lower() else int



def _printable(t):
    # bfloat16 values are exact in float32, and print without ml_dtypes that way.
    return t.astype(float32).asnumpy() if t.dtype == bfloat16 else t.asnumpy()


def _str(self):
    return str(_printable(self))


def _repr(self):
    body = np.array2string(_printable(self), separator=", ", prefix="Tensor(")
    shape = "[" + ", ".join(str(d) for d in self.shape) + "]"
    return f"Tensor(shape={shape}, dtype={self.dtype}, value={body})"


def _iter(self):
    # Not a generator function: a 0-d tensor fails at iter(), as in NumPy.
    if self.ndim == 0:
        raise TypeError("iteration over a 0-d tensor")
    return (self[i] for i in range(self.shape[0]))


_native_init_unguarded = Tensor.__init__


def _native_init(self, input_data, dtype):
    try:
        _native_init_unguarded(self, input_data, dtype)
    except BaseException:
        # A construction that failed leaves an object without its native part, which a
        # traceback printer or debugger showing `self` would trip on: make it an empty tensor
        # before the error goes on.
        _native_init_unguarded(self, np.zeros(0, np.float32), None)
        raise


def _init(self, input_data=None, dtype=None, shape=None, init=None, internal=False,
          const_arg=False, device=None):
    """Tensor(input_data, dtype), or MindSpore's other forms: Tensor(shape=..., dtype=...,
    init=Initializer) fills a tensor by `init`; a shape with None (or shape=None without data)
    makes a placeholder for Cell.set_inputs: its sizes are unknown until a call gives them."""
    if input_data is None and (shape is not None or init is not None or dtype is not None):
        from pijit._numbers import plain
        shape = plain(shape)
        if isinstance(shape, int):
            shape = (shape,)
        if dtype is None:
            raise TypeError("Tensor: dtype must be given with shape and no input_data")
        if shape is None or any(d is None for d in shape):
            if init is not None:
                raise ValueError("Tensor: a placeholder (a shape with None) takes no init")
            _native_init(self, np.zeros([1 if d is None else d for d in shape or ()]), dtype)
            self._placeholder_shape = None if shape is None else tuple(shape)
            return
        if init is None:
            raise ValueError(f"Tensor: a static shape {tuple(shape)} needs input_data or init")
        from pijit.common.initializer import initializer
        _native_init(self, initializer(init, tuple(shape), dtype), dtype)
        return
    _native_init(self, input_data, dtype)
    if device is not None:
        self._move_in_place(_device_name(device))


_CANONICAL_DEVICES = {"CPU": "CPU", "cpu": "CPU", "GPU": "GPU", "gpu": "GPU", "cuda": "GPU", "CUDA": "GPU"}


def _device_name(device):
    if not isinstance(device, str):
        raise TypeError(f"device must be a string (\"CPU\" or \"GPU\"), got {type(device).__name__}")
    return device.split(":")[0]  # "GPU:0": pijit uses GPU 0


def _move_to(self, to, blocking=True):
    """A copy of this tensor on device `to` ("CPU" or "GPU"), or this tensor if it is there
    already (MindSpore's Tensor.move_to). `blocking` is accepted for compatibility: copies to
    the host always complete before the call returns."""
    name = _device_name(to)
    if _CANONICAL_DEVICES.get(name) == self.device:
        return self
    return self._moved_to(name)


def _to(self, target=None, dtype=None):
    """t.to(dtype) casts (MindSpore); t.to("GPU") / t.to("CPU") moves; t.to("GPU", dtype)
    does both."""
    out = self
    if isinstance(target, str):
        out = out.move_to(target)
    elif target is not None:
        dtype = target
    return out if dtype is None else out.astype(dtype)


Tensor.__init__ = _init
Tensor.move_to = _move_to
Tensor.__str__ = _str
Tensor.__repr__ = _repr
Tensor.__iter__ = _iter
Tensor.tolist = lambda self: self.asnumpy().tolist()
Tensor.T = property(lambda self: self.transpose())
Tensor.__module__ = "pijit"


def _owned_array(data):
    """A fresh NumPy array holding `data`'s values (a Parameter owns its storage, so that
    updating it in place never writes into memory the caller still holds)."""
    if isinstance(data, Tensor):
        return np.array(data.asnumpy(), copy=True, order="C")
    if isinstance(data, np.ndarray):
        return np.array(data, copy=True, order="C")
    return np.array(Tensor(data).asnumpy(), copy=True, order="C")


class Parameter(Tensor):
    """A Tensor that a Cell trains: it has a name and a requires_grad flag. It owns a copy of
    `default_input` (a Tensor, NumPy array, number or list). In-place updates (set_data,
    ops.assign, BatchNorm's moving statistics) are seen by every later call, captured or not:
    captured graphs read parameters from the Cell on each call."""

    def __init__(self, default_input, name=None, requires_grad=True, layerwise_parallel=False,
                 parallel_optimizer=True):
        super().__init__(_owned_array(default_input))
        self.name = name
        self.requires_grad = requires_grad

    @property
    def data(self):
        return self

    def set_data(self, data):
        """Writes `data` (broadcast to this parameter's shape and converted to its dtype) into
        this parameter in place; returns self."""
        from pijit import ops
        if isinstance(data, (Tensor, np.ndarray)) and tuple(np.shape(data)) != self.shape:
            raise ValueError(f"Parameter.set_data: {self.name!r} has shape {self.shape}, "
                             f"got data of shape {tuple(np.shape(data))}")
        ops.assign(self, data if isinstance(data, (Tensor, int, float)) else Tensor(data))
        return self

    def clone(self, prefix="", init="same"):
        """A new parameter with a copy of this one's data, named prefix.name."""
        name = f"{prefix}.{self.name}" if prefix else self.name
        if init != "same":
            from pijit.common.initializer import initializer
            data = initializer(init, self.shape, self.dtype)
        else:
            data = self
        return Parameter(data, name=name, requires_grad=self.requires_grad)

    def __repr__(self):
        return f"Parameter (name={self.name}, shape={self.shape}, dtype={self.dtype}, " \
               f"requires_grad={self.requires_grad})"


class ParameterTuple(tuple):
    """A tuple of Parameters (an optimizer's or a gradient's parameter list)."""

    def __new__(cls, iterable):
        items = tuple(iterable)
        for p in items:
            if not isinstance(p, Parameter):
                raise TypeError(f"ParameterTuple: items must be Parameters, got {type(p).__name__}")
        return super().__new__(cls, items)

    def clone(self, prefix, init="same"):
        return ParameterTuple(p.clone(prefix, init) for p in self)
