"""Callback, the hooks Model calls while training and evaluating; RunContext, what they receive;
and the manager that calls a list of them in order (MindSpore's mindspore.train.callback)."""
from contextlib import ExitStack

import numpy as np

from pijit._tensor import Tensor

__all__ = ["Callback", "RunContext"]

_STAGES = ("begin", "epoch_begin", "step_begin", "step_end", "epoch_end", "end")


class Callback:
    """Base class of callbacks. Model calls on_train_begin, on_train_epoch_begin,
    on_train_step_begin, on_train_step_end, on_train_epoch_end and on_train_end while training,
    and the on_eval_* methods while evaluating, each with a RunContext. By default each one
    calls the older stage method of the same stage (on_train_step_end and on_eval_step_end call
    step_end, ...), so a callback may define either. A callback is also a context manager,
    entered for the whole run."""

    def __enter__(self):
        return self

    def __exit__(self, *err):
        return None

    def begin(self, run_context):
        """Before the run (training or evaluation)."""

    def epoch_begin(self, run_context):
        """Before each epoch."""

    def epoch_end(self, run_context):
        """After each epoch."""

    def step_begin(self, run_context):
        """Before each step."""

    def step_end(self, run_context):
        """After each step."""

    def end(self, run_context):
        """After the run."""

    def on_train_begin(self, run_context):
        self.begin(run_context)

    def on_train_epoch_begin(self, run_context):
        self.epoch_begin(run_context)

    def on_train_epoch_end(self, run_context):
        self.epoch_end(run_context)

    def on_train_step_begin(self, run_context):
        self.step_begin(run_context)

    def on_train_step_end(self, run_context):
        self.step_end(run_context)

    def on_train_end(self, run_context):
        self.end(run_context)

    def on_eval_begin(self, run_context):
        self.begin(run_context)

    def on_eval_epoch_begin(self, run_context):
        self.epoch_begin(run_context)

    def on_eval_epoch_end(self, run_context):
        self.epoch_end(run_context)

    def on_eval_step_begin(self, run_context):
        self.step_begin(run_context)

    def on_eval_step_end(self, run_context):
        self.step_end(run_context)

    def on_eval_end(self, run_context):
        self.end(run_context)


def _calling_each(method):
    def call_each(self, run_context):
        for callback in self._callbacks:
            getattr(callback, method)(run_context)
    call_each.__name__ = method
    call_each.__doc__ = f"Calls {method} of each callback, in order."
    return call_each


class CallbackManager(Callback):
    """Calls each of `callbacks` (None, a Callback or a list of them) in order. Entering it
    enters every callback's context."""

    def __init__(self, callbacks):
        self._callbacks, self._stack = [], None
        if isinstance(callbacks, Callback):
            self._callbacks.append(callbacks)
        elif isinstance(callbacks, (list, tuple)):
            for callback in callbacks:
                if not isinstance(callback, Callback):
                    raise TypeError(f"callbacks must be Callbacks, got {type(callback).__name__}")
                self._callbacks.append(callback)
        elif callbacks is not None:
            raise TypeError(f"callbacks must be a Callback or a list of Callbacks, got "
                            f"{type(callbacks).__name__}")

    def __enter__(self):
        if self._stack is None:
            self._stack = ExitStack().__enter__()
            entered = []
            for callback in self._callbacks:
                target = self._stack.enter_context(callback)
                entered.append(target if isinstance(target, Callback) else callback)
            self._callbacks = entered
        return self

    def __exit__(self, *err):
        stack, self._stack = self._stack, None
        return stack.__exit__(*err) if stack is not None else None


for _stage in _STAGES + tuple(f"on_{mode}_{stage}" for mode in ("train", "eval")
                              for stage in _STAGES):
    setattr(CallbackManager, _stage, _calling_each(_stage))
del _stage


class InternalCallbackParam(dict):
    """The information Model shares with callbacks: a dict whose keys are also attributes
    (cb_params.cur_step_num is cb_params["cur_step_num"])."""

    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None

    def __setattr__(self, key, value):
        self[key] = value


class RunContext:
    """What each callback receives: original_args() is the dict of the run's information
    (cur_epoch_num, cur_step_num, batch_num, net_outputs, train_network, optimizer, metrics,
    ...); request_stop() asks Model to stop after the current step."""

    def __init__(self, original_args):
        if not isinstance(original_args, dict):
            raise TypeError(f"RunContext: 'original_args' must be a dict, got "
                            f"{type(original_args).__name__}")
        self._original_args = original_args
        self._stop_requested = False

    def original_args(self):
        return self._original_args

    def request_stop(self):
        self._stop_requested = True

    def get_stop_requested(self):
        return self._stop_requested


def handle_loss(outputs):
    """The loss in a network's outputs as a float: the mean of the output Tensor, or of the
    first element of a tuple or list of outputs. Anything else comes back unchanged."""
    if isinstance(outputs, (tuple, list)) and outputs and isinstance(outputs[0], Tensor):
        outputs = outputs[0]
    if isinstance(outputs, Tensor):
        values = outputs.asnumpy()
        if values.dtype.kind not in "biuf":  # bfloat16 (ml_dtypes): averaged as float32
            values = values.astype(np.float32)
        return float(np.mean(values))
    return outputs
