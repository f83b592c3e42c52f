"""User-defined operators: ops.Custom with func_type="pyfunc", the kernel-registration helpers
that custom-operator code calls (CustomRegOp, AiCPURegOp, TBERegOp, DataType, op_info_register,
custom_info_register, kernel), and the PrimitiveWithInfer / PrimitiveWithCheck base classes with
prim_attr_register.

A "pyfunc" Custom runs its Python function on NumPy copies of the inputs (on the host: a captured
graph breaks at the call) and checks the result against out_shape and out_dtype. With a bprop
its gradient is that function of (inputs, out, dout), recorded on the tape like a Cell's bprop.
The other func_types compile kernels for MindSpore's own backends (AKG, TBE, AOT libraries,
Julia); pijit refuses them with an error naming the type rather than running something else."""
import functools
import inspect

import numpy as np

from pijit import _C, _autodiff
from pijit._tensor import Tensor
from pijit.dtype import dtype_to_nptype
from pijit.mint._checks import raise_error
from pijit.nn.cell import Cell
from pijit.ops import Primitive


def _resolve(spec, inputs, what):
    """out_shape / out_dtype: a value, or a function of the inputs' shapes / dtypes."""
    if callable(spec) and not isinstance(spec, type) and not hasattr(spec, "to_numpy"):
        return spec(*[tuple(t.shape) if isinstance(t, Tensor) else () for t in inputs]) \
            if what == "shape" else \
            spec(*[t.dtype if isinstance(t, Tensor) else None for t in inputs])
    return spec


def _as_output(fname, value, shape, dtype):
    array = np.asarray(value)
    if dtype is not None:
        array = array.astype(dtype_to_nptype(dtype), copy=False)
    if shape is not None and tuple(array.shape) != tuple(shape):
        raise_error(ValueError, f"{fname}: the function returned shape {tuple(array.shape)}, "
                                f"out_shape says {tuple(shape)}")
    return Tensor(np.ascontiguousarray(array))


class _PyFuncCell(Cell):
    """Runs the Python function of a Custom op on NumPy copies of its inputs."""

    def __init__(self, op):
        super().__init__()
        self.op = op

    def construct(self, *inputs):
        op = self.op
        arrays = [t.asnumpy() if isinstance(t, Tensor) else t for t in inputs]
        result = op.func(*arrays)
        shape = _resolve(op.out_shape, inputs, "shape")
        dtype = _resolve(op.out_dtype, inputs, "dtype")
        name = f"Custom({getattr(op.func, '__name__', 'func')})"
        if isinstance(result, (tuple, list)):
            shapes = shape if shape is not None else [None] * len(result)
            dtypes = dtype if isinstance(dtype, (tuple, list)) else [dtype] * len(result)
            if len(shapes) != len(result) or len(dtypes) != len(result):
                raise_error(ValueError, f"{name}: the function returned {len(result)} outputs; "
                                        f"out_shape and out_dtype must describe each")
            return tuple(_as_output(name, r, s, d) for r, s, d in zip(result, shapes, dtypes))
        return _as_output(name, result, shape, dtype)


class _PyFuncCellWithBprop(_PyFuncCell):
    def bprop(self, *args):
        return self.op.bprop(*args)


_FUNC_TYPES = ("hybrid", "akg", "tbe", "aot", "pyfunc", "julia", "aicpu")


class Custom(Primitive):
    """Custom(func, out_shape=None, out_dtype=None, func_type="hybrid", bprop=None,
    reg_info=None)(*inputs). pijit runs func_type="pyfunc": func takes and returns NumPy arrays
    (a tuple of them for several outputs); out_shape and out_dtype (values, or functions of the
    inputs' shapes and dtypes) check and cast the result; bprop(*inputs, out, dout) returns
    one gradient per input."""

    def __init__(self, func, out_shape=None, out_dtype=None, func_type="hybrid", bprop=None,
                 reg_info=None):
        if func_type not in _FUNC_TYPES:
            raise_error(ValueError, f"Custom: func_type must be one of {_FUNC_TYPES}, got "
                                    f"{func_type!r}")
        if func_type != "pyfunc":
            raise_error(NotImplementedError,
                        f"Custom: func_type={func_type!r} builds a kernel for MindSpore's own "
                        f"compilers; pijit runs func_type='pyfunc' (a Python function over "
                        f"NumPy arrays) and pijit ops composed in Python")
        if not callable(func):
            raise_error(TypeError, f"Custom: func must be callable, got {type(func).__name__}")
        if bprop is not None and not callable(bprop):
            raise_error(TypeError, f"Custom: bprop must be callable, got {type(bprop).__name__}")
        super().__init__(func=func, out_shape=out_shape, out_dtype=out_dtype,
                         func_type=func_type, bprop=bprop, reg_info=reg_info)
        cell = _PyFuncCellWithBprop(self) if bprop is not None else _PyFuncCell(self)
        object.__setattr__(self, "_cell", cell)

    def __call__(self, *inputs):
        if self.bprop is not None and _autodiff_active():
            return _autodiff.call_with_bprop(self._cell, inputs, {})
        return self._cell.construct(*inputs)


def _autodiff_active():
    return _C._active_tape() is not None


# ---- kernel registration (kept for code that registers Custom kernels) ---------------------


class DataType:
    """MindSpore's (dtype, format) pairs used in kernel registration, as tuples of names."""
    None_None = ("", "")
    BOOL_Default = ("bool", "DefaultFormat")
    I8_Default, I16_Default = ("int8", "DefaultFormat"), ("int16", "DefaultFormat")
    I32_Default, I64_Default = ("int32", "DefaultFormat"), ("int64", "DefaultFormat")
    U8_Default, U16_Default = ("uint8", "DefaultFormat"), ("uint16", "DefaultFormat")
    U32_Default, U64_Default = ("uint32", "DefaultFormat"), ("uint64", "DefaultFormat")
    F16_Default, F32_Default = ("float16", "DefaultFormat"), ("float32", "DefaultFormat")
    F64_Default, BF16_Default = ("float64", "DefaultFormat"), ("bfloat16", "DefaultFormat")
    C64_Default, C128_Default = ("complex64", "DefaultFormat"), ("complex128", "DefaultFormat")


class _RegOp:
    """A builder of a kernel's registration record (inputs, outputs, attributes, dtype/format
    rows); get_op_info() returns it as a dict. pijit keeps the record but selects no kernel by
    it: a pyfunc Custom runs its function directly."""

    def __init__(self, op_name=""):
        self.op_name = op_name
        self.inputs, self.outputs, self.attrs, self.dtype_formats = [], [], [], []
        self.fields = {}

    def input(self, index=None, name=None, param_type=None, **kwargs):
        self.inputs.append(dict(index=index, name=name, param_type=param_type, **kwargs))
        return self

    def output(self, index=None, name=None, param_type=None, **kwargs):
        self.outputs.append(dict(index=index, name=name, param_type=param_type, **kwargs))
        return self

    def attr(self, name=None, param_type=None, value_type=None, default_value=None, **kwargs):
        self.attrs.append(dict(name=name, param_type=param_type, value_type=value_type,
                               default_value=default_value, **kwargs))
        return self

    def dtype_format(self, *args):
        self.dtype_formats.append(tuple(args))
        return self

    def target(self, target=None):
        self.fields["target"] = target
        return self

    def __getattr__(self, name):  # fusion_type, async_flag, kernel_name, ...: recorded
        if name.startswith("_"):
            raise AttributeError(name)

        def setter(value=None, *args, **kwargs):
            self.fields[name] = value
            return self
        return setter

    def get_op_info(self):
        return dict(op_name=self.op_name, inputs=self.inputs, outputs=self.outputs,
                    attrs=self.attrs, dtype_format=self.dtype_formats, **self.fields)


class CustomRegOp(_RegOp):
    """Registration record of a Custom kernel (see _RegOp)."""


class AiCPURegOp(_RegOp):
    """Registration record of an AiCPU kernel (see _RegOp)."""


class TBERegOp(_RegOp):
    """Registration record of a TBE kernel (see _RegOp)."""


def _registering(info):
    def decorate(fn):
        try:
            fn.reg_info = info.get_op_info() if isinstance(info, _RegOp) else info
        except AttributeError:  # builtins and bound methods take no attributes
            pass
        return fn
    return decorate


def op_info_register(op_info):
    """Decorator recording a kernel's registration info on the function and returning it."""
    return _registering(op_info)


def custom_info_register(*reg_info):
    """Decorator recording Custom kernels' registration info on the function (reg_info)."""
    return _registering(reg_info[0] if len(reg_info) == 1 else list(reg_info))


def kernel(fn=None, reg_info=None, compile_attrs=None):
    """MindSpore's decorator for hybrid kernels written in its DSL. pijit does not compile that
    DSL: the decorated function stays a Python function, usable as a pyfunc Custom's func."""
    def decorate(f):
        f.reg_info, f.compile_attrs = reg_info, compile_attrs
        return f
    return decorate if fn is None else decorate(fn)


def get_vm_impl_fn(prim):
    """The Python implementation of a primitive: the primitive itself (pijit primitives are
    callable on tensors)."""
    if not callable(prim):
        raise_error(TypeError, f"get_vm_impl_fn: expected a primitive, got {type(prim).__name__}")
    return prim


# ---- primitives defined in Python --------------------------------------------------------------


class _PythonPrimitive(Primitive):
    """Base of user primitives: attributes can be added (add_prim_attr, plain assignment) and
    calling computes infer_value, after the shape/dtype hooks (infer_* or check_*)."""

    def __init__(self, name=None):
        super().__init__()
        object.__setattr__(self, "name", name or type(self).__name__)
        object.__setattr__(self, "input_names", ())
        object.__setattr__(self, "output_names", ())

    __setattr__ = object.__setattr__

    def add_prim_attr(self, name, value):
        object.__setattr__(self, name, value)
        self._attrs[name] = value
        return self

    def init_prim_io_names(self, inputs, outputs):
        self.input_names, self.output_names = tuple(inputs), tuple(outputs)

    def _hooks(self, shapes, dtypes):
        raise NotImplementedError

    def __call__(self, *args):
        shapes = [tuple(a.shape) if isinstance(a, Tensor) else None for a in args]
        dtypes = [a.dtype if isinstance(a, Tensor) else type(a) for a in args]
        expected = self._hooks(shapes, dtypes)
        value = self.infer_value(*args) if hasattr(self, "infer_value") else None
        if value is None:
            raise_error(NotImplementedError,
                        f"{self.name}: a primitive defined in Python computes through "
                        f"infer_value, which returned None (or is missing); pijit has no kernel "
                        f"of that name. Define infer_value, or use ops.Custom")
        if expected is not None and isinstance(value, Tensor) and \
                tuple(value.shape) != tuple(expected):
            raise_error(ValueError, f"{self.name}: infer_value gave shape {tuple(value.shape)}, "
                                    f"infer_shape says {tuple(expected)}")
        return value


class PrimitiveWithInfer(_PythonPrimitive):
    """A primitive with infer_shape / infer_dtype (and infer_value, which computes it)."""

    def _hooks(self, shapes, dtypes):
        if hasattr(self, "infer_dtype"):
            self.infer_dtype(*dtypes)
        return self.infer_shape(*shapes) if hasattr(self, "infer_shape") else None


class PrimitiveWithCheck(_PythonPrimitive):
    """A primitive with check_shape / check_dtype (and infer_value, which computes it)."""

    def _hooks(self, shapes, dtypes):
        if hasattr(self, "check_shape"):
            self.check_shape(*shapes)
        if hasattr(self, "check_dtype"):
            self.check_dtype(*dtypes)
        return None


def prim_attr_register(fn):
    """Decorator of a primitive's __init__: records every argument (defaults included) as an
    attribute of the primitive before the body runs, as MindSpore's does."""
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapped(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        if not hasattr(self, "_attrs"):
            _PythonPrimitive.__init__(self)
        for name, value in list(bound.arguments.items())[1:]:
            self.add_prim_attr(name, value)
        return fn(self, *args, **kwargs)

    return wrapped


__all__ = ["AiCPURegOp", "Custom", "CustomRegOp", "DataType", "PrimitiveWithCheck",
           "PrimitiveWithInfer", "TBERegOp", "custom_info_register", "get_vm_impl_fn",
           "kernel", "op_info_register", "prim_attr_register"]
