"""The callbacks that watch or steer a run: LossMonitor, TimeMonitor, History, LambdaCallback,
LearningRateScheduler and EarlyStopping (MindSpore's mindspore.train callbacks of those names)."""
import logging
import math
import time

import numpy as np

from pijit._arg_checks import check_bool, check_int
from pijit._tensor import Parameter, Tensor
from pijit.train.callback._callback import Callback, handle_loss

__all__ = ["LossMonitor", "TimeMonitor", "History", "LambdaCallback", "LearningRateScheduler",
           "EarlyStopping"]

logger = logging.getLogger("pijit.train")


class LossMonitor(Callback):
    """Prints the loss every `per_print_times` steps (never when 0), as MindSpore does:

        epoch: 1 step: 2, loss is 0.6931471824645996

    and stops the run with a ValueError when the loss is NaN or infinite. Used by Model.fit, it
    also prints the evaluation results at the end of the epochs that evaluate."""

    def __init__(self, per_print_times=1):
        super().__init__()
        self._per_print_times = check_int("LossMonitor: 'per_print_times'", per_print_times, 0)
        self._last_print_time = 0

    def step_end(self, run_context):
        cb_params = run_context.original_args()
        epoch = cb_params.get("cur_epoch_num", 1)
        loss = handle_loss(cb_params.get("net_outputs"))
        step_in_epoch = (cb_params["cur_step_num"] - 1) % cb_params["batch_num"] + 1
        if isinstance(loss, float) and (math.isnan(loss) or math.isinf(loss)):
            raise ValueError(f"In epoch: {epoch} step: {step_in_epoch}, loss is NAN or INF, "
                             f"training process cannot continue, terminating training.")
        if self._per_print_times == 0:
            return
        if cb_params["cur_step_num"] <= self._last_print_time:  # a new run began
            self._last_print_time = 0
        if cb_params["cur_step_num"] - self._last_print_time >= self._per_print_times:
            self._last_print_time = cb_params["cur_step_num"]
            print(f"epoch: {epoch} step: {step_in_epoch}, loss is {loss}", flush=True)

    def on_train_epoch_end(self, run_context):
        cb_params = run_context.original_args()
        metrics = cb_params.get("metrics")
        if metrics:
            print(f"Eval result: epoch {cb_params['cur_epoch_num']}, metrics: {metrics}",
                  flush=True)


class TimeMonitor(Callback):
    """Prints each epoch's time and time per step:

        Train epoch time: 12.345 ms, per step time: 1.234 ms

    The step count is the run's batch_num, or `data_size` when that is unknown. With
    `data_time`, it also prints the mean time spent fetching each step's data."""

    def __init__(self, data_size=None, data_time=False):
        super().__init__()
        if data_size is not None:
            check_int("TimeMonitor: 'data_size'", data_size, 0)
        self.data_size = data_size
        self.data_time = check_bool("TimeMonitor: 'data_time'", data_time)
        self.epoch_time = time.time()
        self.data_time_sum = 0.0
        self.data_time_start = 0.0

    def on_train_step_begin(self, run_context):
        if self.data_time:
            self.data_time_sum += time.time() - self.data_time_start

    def on_train_step_end(self, run_context):
        if self.data_time:
            self.data_time_start = time.time()

    def epoch_begin(self, run_context):
        self.epoch_time = time.time()
        self.data_time_sum = 0.0
        self.data_time_start = time.time()

    def epoch_end(self, run_context):
        epoch_ms = (time.time() - self.epoch_time) * 1000
        cb_params = run_context.original_args()
        steps = cb_params.get("batch_num")
        if not isinstance(steps, int) or steps <= 0:
            steps = self.data_size
        if not isinstance(steps, int) or steps <= 0:
            raise ValueError("TimeMonitor: the number of steps per epoch is unknown; give "
                             "data_size")
        line = (f"{cb_params.get('mode', '').title()} epoch time: {epoch_ms:5.3f} ms, "
                f"per step time: {epoch_ms / steps:5.3f} ms")
        if self.data_time:
            line += f" (data time: {self.data_time_sum * 1000 / steps:5.3f} ms)"
        print(line, flush=True)


class History(Callback):
    """Records, at the end of each epoch, the epoch number in `epoch` ({"epoch": [1, 2, ...]})
    and in `history` the network output ("net_output": the loss, or the mean output, or the
    first output's mean) and, in Model.fit, each evaluation metric."""

    def __init__(self):
        super().__init__()
        self.history = {}
        self.epoch = None

    def begin(self, run_context):
        self.epoch = {"epoch": []}

    def epoch_end(self, run_context):
        cb_params = run_context.original_args()
        self.epoch["epoch"].append(cb_params.get("cur_epoch_num", 1))
        output = cb_params.get("net_outputs")
        if isinstance(output, (tuple, list)) and output and isinstance(output[0], Tensor):
            output = output[0]
        if isinstance(output, Tensor):
            output = handle_loss(output)
        record = {"net_output": output}
        record.update(cb_params.get("metrics") or {})
        for key, value in record.items():
            self.history.setdefault(key, []).append(value)


class LambdaCallback(Callback):
    """A callback made of functions: each given on_train_* / on_eval_* function is called with
    the RunContext at that stage."""

    _HOOKS = ("on_train_epoch_begin", "on_train_epoch_end", "on_train_step_begin",
              "on_train_step_end", "on_train_begin", "on_train_end", "on_eval_epoch_begin",
              "on_eval_epoch_end", "on_eval_step_begin", "on_eval_step_end", "on_eval_begin",
              "on_eval_end")

    def __init__(self, on_train_epoch_begin=None, on_train_epoch_end=None,
                 on_train_step_begin=None, on_train_step_end=None, on_train_begin=None,
                 on_train_end=None, on_eval_epoch_begin=None, on_eval_epoch_end=None,
                 on_eval_step_begin=None, on_eval_step_end=None, on_eval_begin=None,
                 on_eval_end=None):
        super().__init__()
        given = dict(locals())
        for hook in self._HOOKS:
            function = given[hook]
            if function is not None and not callable(function):
                raise TypeError(f"LambdaCallback: '{hook}' must be callable, got "
                                f"{type(function).__name__}")
            setattr(self, hook, function if function is not None else (lambda run_context: None))


class LearningRateScheduler(Callback):
    """After each training step, sets the optimizer's learning rate to
    learning_rate_function(current rate, cur_step_num) when that differs from the current one.
    The optimizer's learning rate must be a single number (not a list or a schedule)."""

    def __init__(self, learning_rate_function):
        super().__init__()
        if not callable(learning_rate_function):
            raise TypeError(f"LearningRateScheduler: 'learning_rate_function' must be callable, "
                            f"got {type(learning_rate_function).__name__}")
        self.learning_rate_function = learning_rate_function

    def step_end(self, run_context):
        cb_params = run_context.original_args()
        optimizer = cb_params.get("optimizer")
        rate = getattr(optimizer, "learning_rate", None)
        if not isinstance(rate, Parameter) or rate.size != 1:
            raise TypeError("LearningRateScheduler: the Model needs an optimizer whose "
                            "learning_rate is one number (not a list or a schedule)")
        current = float(rate.asnumpy().reshape(()))
        new = self.learning_rate_function(current, cb_params["cur_step_num"])
        if not math.isclose(current, new, rel_tol=1e-10):
            rate.set_data(Tensor(np.full(rate.shape, new, np.float32)))
            logger.info("At step %d, learning_rate change to %s", cb_params["cur_step_num"], new)


# Metrics that are better when smaller, for EarlyStopping's mode="auto".
_SMALLER_IS_BETTER = ("hausdorff_distance", "mae", "mse", "loss", "perplexity",
                      "mean_surface_distance", "root_mean_square_distance", "eval_loss")


class EarlyStopping(Callback):
    """Stops training when `monitor` stops improving. At the end of each epoch, `monitor`
    ("loss": the training loss; in Model.fit also "eval_loss" or a metric name) improves when it
    beats the best value so far by more than `min_delta` (smaller for mode "min", larger for
    "max"; "auto" picks by the name). Once `patience` epochs have passed without improvement
    (counted as MindSpore counts: with patience 0 the first epoch already stops), it requests the
    stop, and with `restore_best_weights` loads the weights of the best epoch back. A value
    that improves but does not beat `baseline` does not reset the wait."""

    def __init__(self, monitor="eval_loss", min_delta=0, patience=0, verbose=False, mode="auto",
                 baseline=None, restore_best_weights=False):
        super().__init__()
        if not isinstance(monitor, str):
            raise TypeError(f"EarlyStopping: 'monitor' must be a str, got {type(monitor).__name__}")
        if isinstance(min_delta, bool) or not isinstance(min_delta, (int, float)):
            raise TypeError(f"EarlyStopping: 'min_delta' must be a number, got "
                            f"{type(min_delta).__name__}")
        if mode not in ("auto", "min", "max"):
            raise ValueError(f"EarlyStopping: mode must be 'auto', 'min' or 'max', got {mode!r}")
        if baseline is not None and (isinstance(baseline, bool)
                                     or not isinstance(baseline, (int, float))):
            raise TypeError(f"EarlyStopping: 'baseline' must be a number or None, got "
                            f"{type(baseline).__name__}")
        self.monitor = monitor
        self.min_delta = abs(min_delta)
        self.patience = check_int("EarlyStopping: 'patience'", patience, 0)
        self.verbose = check_bool("EarlyStopping: 'verbose'", verbose)
        self.mode = mode
        self.baseline = baseline
        self.restore_best_weights = check_bool("EarlyStopping: 'restore_best_weights'",
                                               restore_best_weights)
        self._minimize = mode == "min" or (mode == "auto" and monitor in _SMALLER_IS_BETTER)
        self.on_train_begin(None)

    def _improves(self, value, reference):
        if self._minimize:
            return value < reference - self.min_delta
        return value > reference + self.min_delta

    def on_train_begin(self, run_context):
        self.wait = 0
        self.stopped_epoch = 0
        self.best = np.inf if self._minimize else -np.inf
        self.best_weights = None

    def on_train_epoch_end(self, run_context):
        cb_params = run_context.original_args()
        current = self._monitor_value(cb_params)
        if current is None:
            return
        network = cb_params["train_network"]
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = _snapshot(network)
        self.wait += 1
        if self._improves(current, self.best):
            self.best = current
            if self.restore_best_weights:
                self.best_weights = _snapshot(network)
            if self.baseline is None or self._improves(current, self.baseline):
                self.wait = 0
        if self.wait >= self.patience:
            self.stopped_epoch = cb_params.get("cur_epoch_num", 0)
            run_context.request_stop()
            if self.restore_best_weights and self.best_weights is not None:
                if self.verbose:
                    print("Restoring model weights from the end of the best epoch.")
                from pijit.train.serialization import load_param_into_net
                load_param_into_net(network, self.best_weights)

    def on_train_end(self, run_context):
        if self.stopped_epoch > 0 and self.verbose:
            print(f"Epoch {self.stopped_epoch:05d}: early stopping")

    def _monitor_value(self, cb_params):
        candidates = {}
        if self.monitor == "loss":
            value = handle_loss(cb_params.get("net_outputs"))
        else:
            candidates = cb_params.get("eval_results") or {}
            value = candidates.get(self.monitor)
        if value is None:
            logger.warning("EarlyStopping is conditioned on %s, which is not available. "
                           "Available choices are: %s", self.monitor,
                           sorted({"loss", *candidates}))
            return None
        value = np.asarray(value)
        if value.shape != ():
            raise ValueError(f"EarlyStopping: the monitored value must be a scalar, got shape "
                             f"{value.shape} for {self.monitor!r}")
        return float(value)


def _snapshot(network):
    """Copies of a network's parameters, by name (what load_param_into_net takes)."""
    return {p.name: Parameter(p.asnumpy().copy(), name=p.name)
            for _, p in network.parameters_and_names()}
