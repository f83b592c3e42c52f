"""Loss scale managers (MindSpore's mindspore.train.loss_scale_manager, also mindspore.amp's):
what Model and amp.build_train_network read to set up loss scaling.

    model = Model(net, loss_fn, optimizer, amp_level="O2",
                  loss_scale_manager=DynamicLossScaleManager(2 ** 12, 2, 1000))

get_update_cell() gives the Cell that updates the scale inside the compiled training step
(TrainOneStepWithLossScaleCell calls it); update_loss_scale(overflow) is the same rule in
Python, for loops that manage the scale themselves."""
import numbers

from pijit._arg_checks import check_bool
from pijit.train.loss_scale_cells import DynamicLossScaleUpdateCell, FixedLossScaleUpdateCell

__all__ = ["LossScaleManager", "FixedLossScaleManager", "DynamicLossScaleManager"]


class LossScaleManager:
    """Base class: get_loss_scale(), update_loss_scale(overflow) and get_update_cell()."""

    def get_loss_scale(self):
        """The current loss scale."""
        raise NotImplementedError(f"{type(self).__name__} must define get_loss_scale")

    def update_loss_scale(self, overflow):
        """Updates the loss scale after a step that did (True) or did not overflow."""
        raise NotImplementedError(f"{type(self).__name__} must define update_loss_scale")

    def get_update_cell(self):
        """The Cell that updates the scale inside the training step, or None."""
        raise NotImplementedError(f"{type(self).__name__} must define get_update_cell")


def _check_scale(owner, name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{owner}: '{name}' must be a float or int, got {type(value).__name__}")
    if not value >= 1:
        raise ValueError(f"{owner}: '{name}' must be >= 1, got {value}")
    return value


class FixedLossScaleManager(LossScaleManager):
    """A constant loss scale. With drop_overflow_update (the default) a step whose gradients
    overflow is dropped (the update cell is a FixedLossScaleUpdateCell); without it the step
    is a plain TrainOneStepCell with the loss scale as sensitivity, and the optimizer's
    `loss_scale` must be set to the same value to divide the gradients back."""

    def __init__(self, loss_scale=128.0, drop_overflow_update=True):
        self._loss_scale = _check_scale("FixedLossScaleManager", "loss_scale", loss_scale)
        self._drop_overflow_update = check_bool("FixedLossScaleManager: 'drop_overflow_update'",
                                                drop_overflow_update)

    def get_loss_scale(self):
        return self._loss_scale

    def get_drop_overflow_update(self):
        """Whether a step whose gradients overflow is dropped."""
        return self._drop_overflow_update

    def update_loss_scale(self, overflow):
        """The scale is fixed: nothing changes."""

    def get_update_cell(self):
        if not self._drop_overflow_update:
            return None
        return FixedLossScaleUpdateCell(self._loss_scale)


class DynamicLossScaleManager(LossScaleManager):
    """A loss scale that adapts: divided by `scale_factor` (but not below 1) after each step
    that overflows, multiplied by it after `scale_window` steps in a row without overflow."""

    def __init__(self, init_loss_scale=2 ** 24, scale_factor=2, scale_window=2000):
        owner = "DynamicLossScaleManager"
        self.loss_scale = _check_scale(owner, "init_loss_scale", init_loss_scale)
        if isinstance(scale_window, bool) or not isinstance(scale_window, int) or \
                scale_window <= 0:
            raise ValueError(f"{owner}: 'scale_window' must be a positive int, got "
                             f"{scale_window!r}")
        if isinstance(scale_factor, bool) or not isinstance(scale_factor, numbers.Real) or \
                not scale_factor > 0:
            raise ValueError(f"{owner}: 'scale_factor' must be a number > 0, got "
                             f"{scale_factor!r}")
        self.scale_window = scale_window
        self.scale_factor = scale_factor
        self.increase_ratio = scale_factor
        self.decrease_ratio = 1 / scale_factor
        self.cur_iter = 1
        self.last_overflow_iter = 0
        self.bad_step_max = 1000
        self.bad_step = 0

    def get_loss_scale(self):
        return self.loss_scale

    def update_loss_scale(self, overflow):
        """The rule DynamicLossScaleUpdateCell applies in the step, in Python. Raises a
        RuntimeError after more than 1000 overflowing steps in a row."""
        if overflow:
            self.loss_scale = max(self.loss_scale * self.decrease_ratio, 1)
            self.last_overflow_iter = self.cur_iter
            self.bad_step += 1
        else:
            if (self.cur_iter - self.last_overflow_iter) % self.scale_window == 0:
                self.loss_scale *= self.increase_ratio
            self.bad_step = 0
        if self.bad_step > self.bad_step_max:
            raise RuntimeError(f"DynamicLossScaleManager: {self.bad_step} steps in a row "
                               f"overflowed, more than the {self.bad_step_max} allowed")
        self.cur_iter += 1

    def get_drop_overflow_update(self):
        """Always True: an overflowing step is dropped."""
        return True

    def get_update_cell(self):
        return DynamicLossScaleUpdateCell(self.loss_scale, self.scale_factor, self.scale_window)
