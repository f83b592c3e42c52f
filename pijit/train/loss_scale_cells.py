"""Loss scaling inside the training step (MindSpore's mindspore.nn.wrap.loss_scale):
TrainOneStepWithLossScaleCell and the Cells that update its scale, DynamicLossScaleUpdateCell
and FixedLossScaleUpdateCell.

With float16 (or bfloat16) activations, small gradients underflow to zero. The loss is
multiplied by a large scale before the backward pass and the gradients divided by it
afterwards. When a gradient overflows to inf or NaN the step's update is dropped and a dynamic
scale shrinks; after `scale_window` good steps it grows again.

Everything is written with ops on Parameters (the scale, the step counters) and ops.select
instead of Python branches on tensor values, so a training step that calls these Cells
compiles into one graph under pijit.jit, and the scale a step leaves is the one the next step
reads."""
import numbers

import numpy as np

from pijit import ops
from pijit._arg_checks import check_positive_int
from pijit._tensor import Parameter, Tensor, bool_, float16, float32, float64, bfloat16
from pijit.nn.cell import Cell
from pijit.nn.wrap import TrainOneStepCell
from pijit import _autodiff

__all__ = ["DynamicLossScaleUpdateCell", "FixedLossScaleUpdateCell",
           "TrainOneStepWithLossScaleCell", "all_finite"]

_FLOAT_DTYPES = (float16, bfloat16, float32, float64)
_FLOAT32_MAX = float(np.finfo(np.float32).max)
_FLOAT64_MAX = float(np.finfo(np.float64).max)


def _float_max(dtype):
    """The largest finite value of a floating dtype (written as comparisons, which capture
    folds, rather than a dict lookup, which it does not)."""
    if dtype == float16:
        return 65504.0
    if dtype == bfloat16:
        return 3.3895313892515355e38
    if dtype == float32:
        return _FLOAT32_MAX
    return _FLOAT64_MAX


def _is_finite(x):
    """Whether every element of `x` is finite: |x| <= max is False for inf and NaN, which
    makes finiteness one comparison (pijit has no isfinite op)."""
    if x.dtype not in _FLOAT_DTYPES:  # integers and bools are always finite
        return ops.ones((), bool_)
    return (ops.abs(x) <= _float_max(x.dtype)).all()


def all_finite(inputs, status=None):
    """A scalar bool Tensor: whether every element of every Tensor in `inputs` (a Tensor, or a
    tuple or list of them) is finite (no inf, no NaN). `status` is accepted for MindSpore's
    signature (Ascend's overflow status) and ignored."""
    if isinstance(inputs, Tensor):
        inputs = (inputs,)
    if not isinstance(inputs, (tuple, list)) or not inputs:
        raise TypeError(f"all_finite: 'inputs' must be a Tensor or a non-empty tuple or list of "
                        f"Tensors, got {type(inputs).__name__}")
    flags = [_is_finite(x) for x in inputs]
    return ops.stack(flags).all()


def _check_scale(owner, name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{owner}: '{name}' must be a float or int, got {type(value).__name__}")
    if not value >= 1.0 or value == float("inf"):
        raise ValueError(f"{owner}: '{name}' must be finite and >= 1, got {value}")
    return float(value)


class DynamicLossScaleUpdateCell(Cell):
    """Updates a loss scale Parameter after each step (MindSpore's nn.DynamicLossScaleUpdateCell):
    on overflow the scale becomes max(scale / scale_factor, 1); after `scale_window` steps
    without overflow since the last overflow (or the last increase) it becomes
    scale * scale_factor. construct(loss_scale, overflow) assigns the new scale to `loss_scale`
    and returns `overflow`."""

    def __init__(self, loss_scale_value, scale_factor, scale_window):
        super().__init__()
        owner = "DynamicLossScaleUpdateCell"
        self.loss_scale_value = _check_scale(owner, "loss_scale_value", loss_scale_value)
        if isinstance(scale_factor, bool) or not isinstance(scale_factor, numbers.Real) or \
                not scale_factor > 0:
            raise ValueError(f"{owner}: 'scale_factor' must be a number > 0, got {scale_factor!r}")
        self.scale_factor = float(scale_factor)
        self.scale_window = check_positive_int(f"{owner}: 'scale_window'", scale_window)
        self.cur_iter = Parameter(np.array(1, np.int32), name="current_iterator_step",
                                  requires_grad=False)
        self.last_overflow_iter = Parameter(np.array(0, np.int32),
                                            name="last_overflow_iterator_step",
                                            requires_grad=False)

    def get_loss_scale(self):
        """The initial loss scale."""
        return self.loss_scale_value

    def construct(self, loss_scale, overflow):
        decreased = ops.maximum(loss_scale / self.scale_factor, 1.0)
        after_overflow = ops.select(overflow, decreased, loss_scale)
        should_increase = (self.cur_iter - self.last_overflow_iter) >= self.scale_window
        restart_window = ops.logical_or(overflow, should_increase)
        ops.assign(self.last_overflow_iter,
                   ops.select(restart_window, self.cur_iter, self.last_overflow_iter))
        increase = ops.logical_and(should_increase, ops.logical_not(overflow))
        ops.assign(loss_scale, ops.select(increase, after_overflow * self.scale_factor,
                                          after_overflow))
        ops.assign(self.cur_iter, self.cur_iter + 1)
        return overflow

    def extend_repr(self):
        return (f"loss_scale_value={self.loss_scale_value}, scale_factor={self.scale_factor}, "
                f"scale_window={self.scale_window}")


class FixedLossScaleUpdateCell(Cell):
    """A loss scale that never changes (MindSpore's nn.FixedLossScaleUpdateCell):
    construct(loss_scale, overflow) returns `overflow`, so an overflowing step is still
    dropped."""

    def __init__(self, loss_scale_value):
        super().__init__()
        self.loss_scale_value = _check_scale("FixedLossScaleUpdateCell", "loss_scale_value",
                                             loss_scale_value)

    def get_loss_scale(self):
        return self.loss_scale_value

    def construct(self, _, overflow):
        return overflow


def _snapshot(param):
    """A copy of `param`'s value that a later ops.assign to it does not change (the graph
    simplifier keeps a value computed from a variable written in place a value of its own)."""
    return param * 1


class TrainOneStepWithLossScaleCell(TrainOneStepCell):
    """One training step with loss scaling (MindSpore's nn.TrainOneStepWithLossScaleCell).
    The gradients are taken with the sensitivity `scale_sense` (the loss scale), divided by it,
    and checked: when one is inf or NaN (overflow) the optimizer's update is undone, so the
    parameters and the optimizer's state stay as they were. `scale_sense` is a Cell that
    updates the scale (DynamicLossScaleUpdateCell, FixedLossScaleUpdateCell) or a Tensor of
    shape () or (1,), a fixed scale changed with set_sense_scale.

    construct(*inputs) returns (loss, overflow, loss scale used by this step)."""

    def __init__(self, network, optimizer, scale_sense):
        super().__init__(network, optimizer, sens=1.0)
        if isinstance(scale_sense, Cell):
            if not hasattr(scale_sense, "get_loss_scale"):
                raise TypeError(f"TrainOneStepWithLossScaleCell: a Cell 'scale_sense' must be a "
                                f"loss scale update Cell (with get_loss_scale), got "
                                f"{type(scale_sense).__name__}")
            self.loss_scaling_manager = scale_sense
            value = np.array(scale_sense.get_loss_scale(), np.float32)
        elif isinstance(scale_sense, Tensor):
            if tuple(scale_sense.shape) not in ((), (1,)):
                raise ValueError(f"TrainOneStepWithLossScaleCell: the shape of 'scale_sense' must "
                                 f"be (1,) or (), got {tuple(scale_sense.shape)}")
            self.loss_scaling_manager = None
            value = scale_sense.asnumpy().astype(np.float32)
        else:
            raise TypeError(f"TrainOneStepWithLossScaleCell: 'scale_sense' must be a Cell or a "
                            f"Tensor, got {type(scale_sense).__name__}")
        self.scale_sense = Parameter(value, name="scale_sense", requires_grad=False)
        # Everything the optimizer may assign: its parameters and its own state.
        seen, guarded = set(), []
        for p in list(optimizer.parameters) + list(optimizer.get_parameters()):
            if id(p) not in seen:
                seen.add(id(p))
                guarded.append(p)
        self.__dict__["_guarded"] = tuple(guarded)

    def set_sense_scale(self, sens):
        """Sets the loss scale to `sens`, a Tensor shaped like the current one."""
        if not isinstance(sens, Tensor):
            raise TypeError(f"TrainOneStepWithLossScaleCell.set_sense_scale: 'sens' must be a "
                            f"Tensor, got {type(sens).__name__}")
        self.scale_sense.set_data(Tensor(sens.asnumpy().astype(np.float32)
                                         .reshape(self.scale_sense.shape)))

    def construct(self, *inputs):
        scaling_sens = self.scale_sense
        used = _snapshot(scaling_sens)  # the update cell assigns the next step's scale
        sens = used.reshape(())
        loss, _, grads = _autodiff.vjp(self.network, inputs, (), self.weights, sens)
        inverse = 1.0 / sens
        grads = tuple([g * ops.cast(inverse, g.dtype) for g in grads])
        cond = ops.logical_not(all_finite(grads))
        overflow = cond
        if self.loss_scaling_manager is not None:
            overflow = self.loss_scaling_manager(self.scale_sense, cond)
        before = tuple([_snapshot(p) for p in self._guarded])
        self.optimizer(grads)
        for p, old in zip(self._guarded, before):
            ops.assign(p, ops.select(overflow, old, p))
        return loss, cond, used
