"""Automatic mixed precision (MindSpore's mindspore.amp): networks that compute in float16 or
bfloat16 while their parameters stay float32, loss scalers, and the training network built
for a level.

    from pijit import amp
    net = amp.auto_mixed_precision(net, "O2")                # or dtype=pijit.bfloat16
    train_net = amp.build_train_network(net, optimizer, loss_fn, level="O2")

Levels:
    O0   unchanged.
    O1   the white-listed layers (Dense, Conv2d, Conv2dTranspose, RNN/GRU/LSTM cells) and
         primitives held as Cell attributes (ops.MatMul, BatchMatMul, Conv2D, ReLU) compute in
         the low dtype: their float inputs and their own parameters are cast to it, their
         outputs back to float32.
    O2   every Cell computes in the low dtype but the black-listed ones (BatchNorm1d/2d,
         LayerNorm), which compute in float32 and give the low dtype back; the network's
         outputs, and so the loss, are float32.
    O3   every Cell computes in the low dtype; the outputs are cast to float32. BatchNorm
         layers are the exception: pijit's batch_norm needs its float32 running statistics
         and its input in one dtype, so they compute in float32, as in O2.

How: as MindSpore's Cell.to_float and its cast cells do, each converted Cell casts its float
inputs on entry. Its construct runs on a view of the Cell: an object sharing the Cell's
attribute dict, whose class (a subclass of the Cell's) reads each trainable float parameter
as a cast of it. The parameters themselves, what `cell.weight` gives outside construct and
what optimizers and checkpoints see, stay float32 masters; their gradients flow back through
the casts as float32. Parameters that are not trainable (BatchNorm's moving statistics) are
not cast, so the ops.assign that update them still reach them. The casts are ops like any
other, so a converted network compiles into one graph under pijit.jit.

Functional ops called inside a construct (ops.matmul(...)) are not white-listed in O1: only
Cells and primitives held as attributes are seen, as with MindSpore's O1 outside its rewrite
of the source."""
import inspect
import numbers

import numpy as np

from pijit import nn, ops
from pijit._tensor import Parameter, Tensor, bfloat16, float16, float32, float64
from pijit.nn.cell import Cell
from pijit.nn.optim import Optimizer
from pijit.nn.wrap import TrainOneStepCell, WithLossCell
from pijit.train.loss_scale_cells import TrainOneStepWithLossScaleCell, all_finite
from pijit.train.loss_scale_manager import (DynamicLossScaleManager, FixedLossScaleManager,
                                            LossScaleManager)

__all__ = ["auto_mixed_precision", "build_train_network", "custom_mixed_precision",
           "get_white_list", "get_black_list", "LossScaler", "StaticLossScaler",
           "DynamicLossScaler", "all_finite", "init_status", "LossScaleManager",
           "FixedLossScaleManager", "DynamicLossScaleManager"]

_LEVELS = ("O0", "O1", "O2", "O3", "auto")
_LOW_DTYPES = (float16, bfloat16)
_FLOAT_DTYPES = (float16, bfloat16, float32, float64)


def _existing(module, names):
    return [getattr(module, n) for n in names if hasattr(module, n)]


_WHITE_LIST = _existing(nn, ["Conv1d", "Conv2d", "Conv3d", "Conv1dTranspose", "Conv2dTranspose",
                             "Conv3dTranspose", "Dense", "LSTMCell", "RNNCell", "GRUCell"]) + \
    _existing(ops, ["Conv2D", "Conv3D", "Conv2DTranspose", "Conv3DTranspose", "MatMul",
                    "BatchMatMul", "PReLU", "ReLU", "Ger"])
_BLACK_LIST = _existing(nn, ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LayerNorm"])
# Kept in float32 at every level: pijit's batch_norm keeps the running statistics in the
# input's dtype, and the statistics are float32 Parameters that the layer assigns.
_BATCH_NORMS = _existing(nn, ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"])


def get_white_list():
    """A copy of the O1 white list: the Cell and primitive classes that compute in the low
    dtype."""
    return list(_WHITE_LIST)


def get_black_list():
    """A copy of the O2 black list: the Cell classes kept in float32."""
    return list(_BLACK_LIST)


# ---- casts (called from captured code: plain functions over Tensors and tuples) -------------

def _cast_float(value, dtype):
    if isinstance(value, Tensor) and value.dtype in _FLOAT_DTYPES and value.dtype != dtype:
        return ops.cast(value, dtype)
    return value


def _cast_inputs(values, dtype):
    return tuple([_cast_float(v, dtype) for v in values])


def _cast_outputs(value, dtype):
    """`value` (a Tensor, or a tuple or list of Tensors and of tuples of Tensors) with its
    float Tensors cast to `dtype`."""
    if isinstance(value, (tuple, list)):
        return tuple([_cast_inputs(v, dtype) if isinstance(v, (tuple, list))
                      else _cast_float(v, dtype) for v in value])
    return _cast_float(value, dtype)


class _CastedPrimitive:
    """A white-listed primitive (O1) computing in `dtype`: float inputs cast to it, float
    outputs cast back to float32. Its __call__ is Python, so capture inlines it."""

    def __init__(self, primitive, dtype):
        self.primitive = primitive
        self.dtype = dtype

    def __call__(self, *args):
        return _cast_outputs(self.primitive(*_cast_inputs(args, self.dtype)), float32)


def _outputs_to32(self, positional, keywords):
    """construct of _OutputTo32: the backbone's outputs with float Tensors cast to float32."""
    if keywords:
        outputs = self._backbone(*positional, **keywords)
    else:
        outputs = self._backbone(*positional)
    return _cast_outputs(outputs, float32)


class _OutputTo32(Cell):
    """The network with its float outputs cast to float32 (O2, O3). Its construct takes the
    arguments of the network's construct (made per network class, see _mirrored)."""

    def __new__(cls, backbone):
        if cls is _OutputTo32:
            cls = _output_class(type(backbone))
        return super().__new__(cls)

    def __init__(self, backbone):
        super().__init__(auto_prefix=False)
        self._backbone = backbone


# ---- converting a Cell -----------------------------------------------------------------------

def _run_converted(self, positional, keywords):
    """construct of a converted Cell: casts the float inputs, runs the original construct on
    the view (which reads parameters cast), casts the float outputs."""
    compute = self._amp_compute_dtype
    if compute is not None:
        positional = _cast_inputs(positional, compute)
    base = type(self)._amp_base_construct
    if keywords:
        if compute is not None:
            keywords = {key: _cast_float(value, compute) for key, value in keywords.items()}
        outputs = base(self._amp_view, *positional, **keywords)
    else:
        outputs = base(self._amp_view, *positional)
    if self._amp_output_dtype is None:
        return outputs
    return _cast_outputs(outputs, self._amp_output_dtype)


def _mirrored(construct, name, core):
    """A function with the signature of `construct` (defaults included) calling
    core(self, positional arguments, keyword-only arguments). Made from source for each
    class: capture compiles a construct with **kwargs only when the original has them, and
    keys compiled graphs by code object, so each class gets its own."""
    parameters = list(inspect.signature(construct).parameters.values())
    defaults, declared, positional, keywords = [], [], [], []
    rest, extra = "()", None
    for i, p in enumerate(parameters):
        default = ""
        if p.default is not inspect.Parameter.empty:
            defaults.append(p.default)
            default = f"=_pijit_defaults[{len(defaults) - 1}]"
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            declared.append(f"*{p.name}")
            rest = p.name
        elif p.kind is inspect.Parameter.VAR_KEYWORD:
            declared.append(f"**{p.name}")
            extra = p.name
        elif p.kind is inspect.Parameter.KEYWORD_ONLY:
            if not any(d.startswith("*") for d in declared):
                declared.append("*")
            declared.append(p.name + default)
            keywords.append(f"{p.name!r}: {p.name}")
        else:
            declared.append(p.name + default)
            if i:
                positional.append(p.name)
        if p.kind is inspect.Parameter.POSITIONAL_ONLY and \
                parameters[i + 1:] and parameters[i + 1].kind is not p.kind:
            declared.append("/")
    keyword_dict = "{" + ", ".join(keywords) + "}"
    if extra:
        keyword_dict = f"dict({keyword_dict}, **{extra})"
    source = (f"def {name}({', '.join(declared)}):\n"
              f"    return _pijit_core({parameters[0].name}, "
              f"({''.join(a + ', ' for a in positional)}) + tuple({rest}), {keyword_dict})\n")
    namespace = {"_pijit_core": core, "_pijit_defaults": tuple(defaults)}
    exec(source, namespace)
    return namespace[name]


def _master_key(name):
    return "_amp_master_" + name


def _cast_attribute_getter(name):
    """A property getter reading parameter `name` (kept under _master_key(name) too) through
    a cast to the compute dtype. Made from source so the key is a constant of the code:
    capture inlines property getters but tracks neither closures nor __dict__."""
    namespace = {"_cast_float": _cast_float}
    exec(f"def get(self):\n"
         f"    return _cast_float(getattr(self, {_master_key(name)!r}), "
         f"self._amp_compute_dtype)\n", namespace)
    return namespace["get"]


def _primitive_getter(name):
    namespace = {}
    exec(f"def get(self):\n    return getattr(self, {('_amp_casted_' + name)!r})\n",
         namespace)
    return namespace["get"]


def _converted_setattr(self, name, value):
    """Cell.__setattr__, keeping what the view reads in step when a cast parameter or a
    white-listed primitive is replaced."""
    Cell.__setattr__(self, name, value)
    d = self.__dict__
    if _master_key(name) in d:
        d[_master_key(name)] = value
    casted = d.get("_amp_casted_" + name)
    if casted is not None:
        d["_amp_casted_" + name] = _CastedPrimitive(value, casted.dtype)


_view_classes = {}
_converted_classes = {}


def _view_class(cls, cast_names, primitive_names):
    key = (cls, cast_names, primitive_names)
    if key not in _view_classes:
        namespace = {name: property(_cast_attribute_getter(name)) for name in cast_names}
        namespace.update({name: property(_primitive_getter(name)) for name in primitive_names})
        namespace["__module__"] = cls.__module__
        _view_classes[key] = type(cls.__name__, (cls,), namespace)
    return _view_classes[key]


def _converted_class(cls):
    if cls not in _converted_classes:
        construct = _mirrored(cls.construct, "construct", _run_converted)
        _converted_classes[cls] = type(cls.__name__, (cls,), {
            "construct": construct, "_amp_base_construct": cls.construct,
            "__setattr__": _converted_setattr, "__module__": cls.__module__})
    return _converted_classes[cls]


_output_classes = {}


def _output_class(backbone_cls):
    """The _OutputTo32 subclass whose construct takes `backbone_cls`'s arguments."""
    if backbone_cls not in _output_classes:
        construct = _mirrored(backbone_cls.construct, "construct", _outputs_to32)
        _output_classes[backbone_cls] = type("_OutputTo32", (_OutputTo32,),
                                             {"construct": construct})
    return _output_classes[backbone_cls]


def _is_converted(cell):
    return "_amp_view" in cell.__dict__


def _convert(cell, compute_dtype, output_dtype, primitive_dtype=None):
    """Converts `cell` in place: float inputs cast to `compute_dtype` (None: not cast), its own
    trainable float parameters read as `compute_dtype`, float outputs cast to `output_dtype`
    (None: not cast), and white-listed primitive attributes computing in `primitive_dtype`."""
    if _is_converted(cell):
        raise ValueError(f"auto_mixed_precision: {type(cell).__name__} is already converted to "
                         f"mixed precision; convert a network once (use level 'O0' to train an "
                         f"already converted network)")
    d = cell.__dict__
    cast_names = ()
    if compute_dtype is not None:
        cast_names = tuple(name for name, p in cell._registry()[0].items()
                           if p.requires_grad and p.dtype in _FLOAT_DTYPES
                           and p.dtype != compute_dtype and d.get(name) is p)
    primitive_names = ()
    if primitive_dtype is not None:
        primitive_names = tuple(name for name, value in d.items()
                                if type(value) in _WHITE_LIST and not isinstance(value, Cell))
        for name in primitive_names:
            d["_amp_casted_" + name] = _CastedPrimitive(d[name], primitive_dtype)
    for name in cast_names:
        d[_master_key(name)] = d[name]
    original = type(cell)
    view = object.__new__(_view_class(original, cast_names, primitive_names))
    object.__setattr__(view, "__dict__", d)  # one dict: the view sees every later change
    d["_amp_view"] = view
    d["_amp_compute_dtype"] = compute_dtype
    d["_amp_output_dtype"] = output_dtype
    object.__setattr__(cell, "__class__", _converted_class(original))


def _check_dtype(function, dtype):
    if dtype not in _LOW_DTYPES:
        raise ValueError(f"For '{function}', 'dtype' must be pijit.float16 or pijit.bfloat16, "
                         f"got {dtype!r}")


def _check_network(function, network):
    if not isinstance(network, Cell):
        raise TypeError(f"For '{function}', 'network' must be a Cell, got "
                        f"{type(network).__name__}")


def _convert_white_list(cell, white_list, dtype):
    """O1: converts the white-listed Cells under `cell` (not descending into them) and the
    Cells holding white-listed primitives."""
    for _, child in list(cell._registry()[1].items()):
        if isinstance(child, tuple(c for c in white_list if issubclass(c, Cell))):
            if not _is_converted(child):
                _convert(child, dtype, float32)
        else:
            _convert_white_list(child, white_list, dtype)
    primitive_types = tuple(c for c in white_list if not issubclass(c, Cell))
    if any(type(v) in primitive_types for v in cell.__dict__.values()) and \
            not _is_converted(cell) and not isinstance(cell, tuple(white_list)):
        _convert(cell, None, None, dtype)


def _convert_all(cell, dtype, black_list, seen):
    """O2 (with a black list) and O3 (without): every Cell computes in `dtype`, the
    black-listed ones in float32 with `dtype` outputs."""
    if id(cell) in seen:
        return
    seen.add(id(cell))
    if isinstance(cell, tuple(black_list)):
        _convert(cell, float32, dtype)
        return
    for child in list(cell._registry()[1].values()):
        _convert_all(child, dtype, black_list, seen)
    _convert(cell, dtype, None)


def _check_not_converted(function, network):
    for _, cell in network.cells_and_names():
        if _is_converted(cell):
            raise ValueError(f"For '{function}', the network is already converted to mixed "
                             f"precision; convert it once (use level 'O0' afterwards)")


def auto_mixed_precision(network, amp_level="O0", dtype=float16):
    """`network` converted to mixed precision at `amp_level` ("O0", "O1", "O2", "O3"; see the
    module's description), computing in `dtype` (pijit.float16 or pijit.bfloat16). The Cells
    are converted in place; O2 and O3 return a wrapper casting the outputs to float32, which
    shares the network's parameters and names."""
    _check_network("auto_mixed_precision", network)
    if amp_level not in ("O0", "O1", "O2", "O3"):
        raise ValueError(f"For 'auto_mixed_precision', 'amp_level' must be 'O0', 'O1', 'O2' or "
                         f"'O3', got {amp_level!r}")
    _check_dtype("auto_mixed_precision", dtype)
    if amp_level == "O0":
        return network
    _check_not_converted("auto_mixed_precision", network)
    if amp_level == "O1":
        _convert_white_list(network, _WHITE_LIST, dtype)
        if isinstance(network, tuple(c for c in _WHITE_LIST if issubclass(c, Cell))):
            _convert(network, dtype, float32)
        return network
    _convert_all(network, dtype, _BLACK_LIST if amp_level == "O2" else _BATCH_NORMS, set())
    return _OutputTo32(network)


def custom_mixed_precision(network, *, white_list=None, black_list=None, dtype=float16):
    """Mixed precision with your own list: `white_list` (Cell and primitive classes) converts
    as O1 does with it; `black_list` (Cell classes) as O2 does with it. Give exactly one."""
    _check_network("custom_mixed_precision", network)
    _check_dtype("custom_mixed_precision", dtype)
    if (white_list is None) == (black_list is None):
        raise ValueError("For 'custom_mixed_precision', give exactly one of 'white_list' and "
                         "'black_list'")
    given = white_list if white_list is not None else black_list
    if not isinstance(given, list) or not all(isinstance(c, type) for c in given):
        raise TypeError(f"For 'custom_mixed_precision', the list must be a list of classes, got "
                        f"{given!r}")
    if black_list is not None and not all(issubclass(c, Cell) for c in black_list):
        raise TypeError("For 'custom_mixed_precision', 'black_list' must hold Cell classes")
    _check_not_converted("custom_mixed_precision", network)
    if white_list is not None:
        _convert_white_list(network, white_list, dtype)
        return network
    _convert_all(network, dtype, list(black_list) + _BATCH_NORMS, set())
    return _OutputTo32(network)


# ---- loss scalers ----------------------------------------------------------------------------

def _check_scale_value(owner, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{owner}: 'scale_value' must be a float or int, got "
                        f"{type(value).__name__}")
    if not 1.0 <= value < float("inf"):
        raise ValueError(f"{owner}: 'scale_value' must be finite and >= 1, got {value}")
    return Parameter(np.array(value, np.float32), name="scale_value", requires_grad=False)


def _scaled(inputs, factor):
    """inputs (a Tensor, or a tuple or list of them) times `factor` in each one's dtype."""
    if isinstance(inputs, (tuple, list)):
        return tuple([x * ops.cast(factor, x.dtype) for x in inputs])
    return inputs * ops.cast(factor, inputs.dtype)


class LossScaler:
    """Base class of loss scalers for hand-written training steps: scale(loss) before taking
    gradients, unscale(grads) after, adjust(all_finite(grads)) to update the scale. The scale
    is the float32 Parameter `scale_value`, changed with ops, so a pijit.jit step that calls
    these methods compiles to one graph and each call sees the scale the last one left."""

    def scale(self, inputs):
        """`inputs` (the loss, or a tuple of Tensors) times the scale."""
        return _scaled(inputs, self.scale_value)

    def unscale(self, inputs):
        """`inputs` (the gradients, or one Tensor) divided by the scale."""
        return _scaled(inputs, 1.0 / self.scale_value)

    def adjust(self, grads_finite):
        """Updates the scale after a step whose gradients were (True) or were not finite."""
        raise NotImplementedError(f"{type(self).__name__} must define adjust")


class StaticLossScaler(LossScaler):
    """A fixed scale: adjust changes nothing and returns False."""

    def __init__(self, scale_value):
        self.scale_value = _check_scale_value("StaticLossScaler", scale_value)

    def adjust(self, grads_finite):
        return False


class DynamicLossScaler(LossScaler):
    """A scale that adapts (MindSpore's amp.DynamicLossScaler): when the gradients are not
    finite it becomes max(scale / scale_factor, 1) and the count of good steps restarts;
    after `scale_window` finite steps in a row it becomes scale * scale_factor (kept when
    that would overflow float32). The count is the int32 Parameter `counter`."""

    def __init__(self, scale_value, scale_factor, scale_window):
        owner = "DynamicLossScaler"
        self.scale_value = _check_scale_value(owner, scale_value)
        for name, value in (("scale_factor", scale_factor), ("scale_window", scale_window)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{owner}: '{name}' must be an int, got {type(value).__name__}")
            if value <= 0:
                raise ValueError(f"{owner}: '{name}' must be > 0, got {value}")
        self.scale_factor = scale_factor
        self.scale_window = scale_window
        self.counter = Parameter(np.array(0, np.int32), name="counter", requires_grad=False)

    def adjust(self, grads_finite):
        scale = self.scale_value
        grown = scale * float(self.scale_factor)
        grown = ops.select(all_finite(grown), grown, scale)
        window_done = self.counter == (self.scale_window - 1)
        new_scale = ops.select(grads_finite, ops.select(window_done, grown, scale),
                               ops.maximum(scale / float(self.scale_factor), 1.0))
        ops.assign(self.scale_value, new_scale)
        counter = ((self.counter + 1) % self.scale_window) * ops.cast(grads_finite,
                                                                     self.counter.dtype)
        ops.assign(self.counter, counter)
        return True


def init_status():
    """MindSpore's overflow status Tensor (used on Ascend); eight float32 zeros here, where
    all_finite needs no status."""
    return Tensor(np.zeros(8, np.float32))


# ---- training networks -----------------------------------------------------------------------

_CONFIG = {
    "O0": {"keep_batchnorm_fp32": False, "cast_model_type": float32,
           "loss_scale_manager": None},
    "O1": {"keep_batchnorm_fp32": False, "cast_model_type": float32,
           "loss_scale_manager": None},
    "O2": {"keep_batchnorm_fp32": True, "cast_model_type": float16,
           "loss_scale_manager": "dynamic"},
    "O3": {"keep_batchnorm_fp32": False, "cast_model_type": float16,
           "loss_scale_manager": None},
}
_BUILD_KWARGS = ("cast_model_type", "keep_batchnorm_fp32", "loss_scale_manager")


class _WithLossCellFloat32(Cell):
    """loss_fn(network(data) in float32, label in float32): the loss of a low-precision
    network computed in float32."""

    def __init__(self, backbone, loss_fn):
        super().__init__(auto_prefix=False)
        self._backbone = backbone
        self._loss_fn = loss_fn

    def construct(self, data, label):
        out = _cast_outputs(self._backbone(data), float32)
        return self._loss_fn(out, _cast_float(label, float32))

    @property
    def backbone_network(self):
        return self._backbone


def check_level(function, level, boost_level="O0"):
    """The level to use: 'auto' picks by device as MindSpore does, O2 where graphs run on the
    GPU (set_context(device_target="GPU")); on the CPU MindSpore has no automatic choice, nor
    has pijit."""
    if not isinstance(level, str) or level not in _LEVELS:
        raise ValueError(f"For '{function}', the amp level must be one of {list(_LEVELS)}, got "
                         f"{level!r}")
    if boost_level not in ("O0", "O1", "O2"):
        raise ValueError(f"For '{function}', 'boost_level' must be 'O0', 'O1' or 'O2', got "
                         f"{boost_level!r}")
    if level == "auto":
        from pijit.context import get_context
        if get_context("device_target") == "GPU":
            return "O2"
        raise ValueError(f"For '{function}', level 'auto' chooses by device (O2 on GPU, O3 on "
                         f"Ascend) and graphs run on the CPU here: give 'O0', 'O1', 'O2' or 'O3'")
    return level


def _build_config(level, kwargs):
    for key in kwargs:
        if key not in _BUILD_KWARGS:
            raise ValueError(f"For 'build_train_network', the keyword arguments may be "
                             f"{list(_BUILD_KWARGS)}, got {key!r}")
    config = dict(_CONFIG[level], **kwargs)
    if config["loss_scale_manager"] == "dynamic":
        config["loss_scale_manager"] = DynamicLossScaleManager()
    if config["cast_model_type"] not in (float16, bfloat16, float32):
        raise ValueError(f"For 'build_train_network', 'cast_model_type' must be pijit.float16, "
                         f"pijit.bfloat16 or pijit.float32, got {config['cast_model_type']!r}")
    if not isinstance(config["keep_batchnorm_fp32"], bool):
        raise TypeError(f"For 'build_train_network', 'keep_batchnorm_fp32' must be a bool, got "
                        f"{type(config['keep_batchnorm_fp32']).__name__}")
    manager = config["loss_scale_manager"]
    if manager is not None and not isinstance(manager, LossScaleManager):
        raise TypeError(f"For 'build_train_network', 'loss_scale_manager' must be a "
                        f"LossScaleManager or None, got {type(manager).__name__}")
    return config


def build_train_network(network, optimizer, loss_fn=None, level="O0", boost_level="O0",
                        **kwargs):
    """The training Cell for `network` at mixed-precision `level` (MindSpore's
    amp.build_train_network): O0 and O1 as auto_mixed_precision; O2 the network in float16
    with BatchNorm/LayerNorm in float32, the loss in float32 and a DynamicLossScaleManager;
    O3 everything in float16 without loss scaling. Keyword arguments override the level's
    settings: cast_model_type (pijit.float16, pijit.bfloat16 or pijit.float32),
    keep_batchnorm_fp32 (bool), loss_scale_manager (a LossScaleManager or None).

    Returns a TrainOneStepWithLossScaleCell when the loss scale manager has an update cell
    (it drops the steps whose gradients overflow), otherwise a TrainOneStepCell whose
    sensitivity is the manager's fixed scale (1 without a manager)."""
    _check_network("build_train_network", network)
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"For 'build_train_network', 'optimizer' must be an Optimizer, got "
                        f"{type(optimizer).__name__}")
    if loss_fn is not None and not isinstance(loss_fn, Cell):
        raise TypeError(f"For 'build_train_network', 'loss_fn' must be a Cell or None, got "
                        f"{type(loss_fn).__name__}")
    level = check_level("build_train_network", level, boost_level)
    config = _build_config(level, kwargs)
    cast_type = config["cast_model_type"]
    if cast_type in _LOW_DTYPES:
        _check_not_converted("build_train_network", network)
        _convert_all(network, cast_type,
                     _BLACK_LIST if config["keep_batchnorm_fp32"] else _BATCH_NORMS, set())
    elif level in ("O0", "O1"):
        network = auto_mixed_precision(network, level)
    if loss_fn is not None:
        network = _WithLossCellFloat32(network, loss_fn) if cast_type in _LOW_DTYPES \
            else WithLossCell(network, loss_fn)
    manager = config["loss_scale_manager"]
    if manager is not None:
        update_cell = manager.get_update_cell()
        if update_cell is not None:
            return TrainOneStepWithLossScaleCell(network, optimizer,
                                                 scale_sense=update_cell).set_train()
        return TrainOneStepCell(network, optimizer, sens=manager.get_loss_scale()).set_train()
    return TrainOneStepCell(network, optimizer).set_train()
