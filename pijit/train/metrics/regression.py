"""MAE, MSE and Loss, as MindSpore computes them: MAE and MSE sum the errors of every element
and divide by the number of samples (the first axis), not of elements."""
import numpy as np

from pijit.train.metrics.metric import TotalOverCount, rearrange_inputs

__all__ = ["MAE", "MSE", "Loss"]


class _ErrorSum(TotalOverCount):
    def _errors(self, difference):
        raise NotImplementedError

    @rearrange_inputs
    def update(self, *inputs):
        y_pred, y = self._scores_and_labels(inputs, one_hot_labels=False)
        if y.size != y_pred.size:
            raise ValueError(f"For '{type(self).__name__}.update', y_pred {y_pred.shape} and y "
                             f"{y.shape} must have the same number of elements")
        difference = y.reshape(y_pred.shape).astype(np.float64) - y_pred.astype(np.float64)
        self._total += float(self._errors(difference).sum())
        self._count += y.shape[0] if y.ndim else 1


class MAE(_ErrorSum):
    """Sum of |y_pred - y| over every element, divided by the number of samples."""

    def _errors(self, difference):
        return np.abs(difference)


class MSE(_ErrorSum):
    """Sum of (y_pred - y)^2 over every element, divided by the number of samples."""

    def _errors(self, difference):
        return difference ** 2


class Loss(TotalOverCount):
    """The mean, over update calls, of each call's loss (a scalar, or the mean of a 1-D loss)."""

    @rearrange_inputs
    def update(self, *inputs):
        self._check_input_count(inputs, 1)
        loss = self._convert_data(inputs[0])
        if loss.ndim == 0:
            loss = loss.reshape(1)
        if loss.ndim != 1:
            raise ValueError(f"For 'Loss.update', the loss must be a scalar or 1-D, got "
                             f"{loss.ndim} dimensions")
        self._total += float(loss.astype(np.float64).mean())
        self._count += 1
