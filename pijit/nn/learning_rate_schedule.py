"""Learning-rate schedules (MindSpore's mindspore.nn.learning_rate_schedule): Cells whose
construct(global_step) (a float32 scalar Tensor) gives the learning rate of a step as a
float32 scalar Tensor. An
optimizer given one calls it with its step counter on every update, so the schedule is part
of a compiled training step like the rest of the update.

    ExponentialDecayLR   lr * decay_rate ** p
    NaturalExpDecayLR    lr * exp(-decay_rate * p)
    InverseDecayLR       lr / (1 + decay_rate * p)
    CosineDecayLR        min_lr + (max_lr - min_lr) * (1 + cos(pi * min(step, decay_steps) / decay_steps)) / 2
    PolynomialDecayLR    (lr - end_lr) * (1 - min(step, decay_steps) / decay_steps) ** power + end_lr
    WarmUpLR             lr * min(step, warmup_steps) / warmup_steps

with p = step / decay_steps, floored when is_stair."""
import math
import numbers

from pijit._numbers import plain

from pijit import ops
from pijit.nn.cell import Cell
from pijit.nn._checks import positive_int

__all__ = ["LearningRateSchedule", "ExponentialDecayLR", "NaturalExpDecayLR", "InverseDecayLR",
           "CosineDecayLR", "PolynomialDecayLR", "WarmUpLR"]


def _real(cls, name, v, positive=False):
    v = plain(v)
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{cls}: {name} must be a float, got {type(v).__name__}")
    v = float(v)
    if v < 0 or (positive and v == 0):
        raise ValueError(f"{cls}: {name} must be {'> 0' if positive else '>= 0'}, got {v}")
    return v


class LearningRateSchedule(Cell):
    """Base class: construct(global_step) returns the learning rate (a scalar Tensor)."""

    def construct(self, global_step):
        raise NotImplementedError(f"{type(self).__name__} must define construct(global_step)")


class _DecayLR(LearningRateSchedule):
    def __init__(self, learning_rate, decay_rate, decay_steps, is_stair=False):
        super().__init__()
        cls = type(self).__name__
        self.learning_rate = _real(cls, "learning_rate", learning_rate)
        self.decay_rate = _real(cls, "decay_rate", decay_rate)
        self.decay_steps = positive_int(cls, "decay_steps", decay_steps)
        if not isinstance(is_stair, bool):
            raise TypeError(f"{cls}: is_stair must be a bool, got {type(is_stair).__name__}")
        self.is_stair = is_stair

    def _p(self, global_step):
        step = global_step
        if self.is_stair:
            return ops.floor_divide(step, float(self.decay_steps))
        return step / float(self.decay_steps)


class ExponentialDecayLR(_DecayLR):
    def construct(self, global_step):
        return self.learning_rate * ops.pow(self.decay_rate, self._p(global_step))


class NaturalExpDecayLR(_DecayLR):
    def construct(self, global_step):
        return self.learning_rate * ops.exp(self._p(global_step) * -self.decay_rate)


class InverseDecayLR(_DecayLR):
    def construct(self, global_step):
        return self.learning_rate / (self._p(global_step) * self.decay_rate + 1.0)


class CosineDecayLR(LearningRateSchedule):
    def __init__(self, min_lr, max_lr, decay_steps):
        super().__init__()
        self.min_lr = _real("CosineDecayLR", "min_lr", min_lr)
        self.max_lr = _real("CosineDecayLR", "max_lr", max_lr)
        if self.min_lr >= self.max_lr:
            raise ValueError(f"CosineDecayLR: min_lr ({self.min_lr}) must be below max_lr "
                             f"({self.max_lr})")
        self.decay_steps = positive_int("CosineDecayLR", "decay_steps", decay_steps)

    def construct(self, global_step):
        step = ops.minimum(global_step, float(self.decay_steps))
        cos = ops.cos(step * (math.pi / self.decay_steps))
        return (cos + 1.0) * (0.5 * (self.max_lr - self.min_lr)) + self.min_lr


class PolynomialDecayLR(LearningRateSchedule):
    def __init__(self, learning_rate, end_learning_rate, decay_steps, power,
                 update_decay_steps=False):
        super().__init__()
        cls = "PolynomialDecayLR"
        self.learning_rate = _real(cls, "learning_rate", learning_rate, positive=True)
        self.end_learning_rate = _real(cls, "end_learning_rate", end_learning_rate)
        self.decay_steps = positive_int(cls, "decay_steps", decay_steps)
        self.power = _real(cls, "power", power, positive=True)
        if update_decay_steps:
            raise NotImplementedError("PolynomialDecayLR: update_decay_steps=True is not "
                                      "supported")

    def construct(self, global_step):
        step = ops.minimum(global_step, float(self.decay_steps))
        frac = ops.pow(1.0 - step / float(self.decay_steps), self.power)
        return frac * (self.learning_rate - self.end_learning_rate) + self.end_learning_rate


class WarmUpLR(LearningRateSchedule):
    def __init__(self, learning_rate, warmup_steps):
        super().__init__()
        self.learning_rate = _real("WarmUpLR", "learning_rate", learning_rate)
        self.warmup_steps = positive_int("WarmUpLR", "warmup_steps", warmup_steps)

    def construct(self, global_step):
        step = ops.minimum(global_step, float(self.warmup_steps))
        return step * (self.learning_rate / self.warmup_steps)
