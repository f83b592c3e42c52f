"""Model: training, evaluation and prediction of a network with MindSpore's high-level API
(mindspore.train.Model).

    model = Model(net, loss_fn=nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                  optimizer=nn.Momentum(net.trainable_params(), 0.01, 0.9),
                  metrics={"accuracy", "loss"})
    model.train(10, train_dataset, callbacks=[LossMonitor()])
    model.eval(valid_dataset)        # {"accuracy": 0.97, "loss": 0.08}

The training network is nn.TrainOneStepCell(nn.WithLossCell(network, loss_fn), optimizer), as in
MindSpore. Each training step, evaluation step and prediction runs through pijit.jit: one step is
one compiled graph (forward, backward and the optimizer's update), compiled on the first step
and again only for new input shapes (a last, smaller batch). Each Model compiles its own
functions, so models never share graphs; `train_step_function` (and `eval_step_function`,
`predict_function`) is the compiled function, for pijit.get_code_extra.

Mixed precision: amp_level "O1", "O2" or "O3" builds the training network with
pijit.amp.build_train_network (O2: float16 with BatchNorm and the loss in float32 and a
DynamicLossScaleManager by default; see pijit.amp), with the `loss_scale_manager` and
`keep_batchnorm_fp32` keyword arguments overriding the level's. With O2 and O3 the evaluation
network casts the outputs to float32 before the metrics.

Datasets are pijit.dataset datasets (anything with create_tuple_iterator and
get_dataset_size). Dataset sinking is a device feature: dataset_sink_mode=True runs as False,
as MindSpore does on CPU."""
import copy
import types

from pijit import ops
from pijit._arg_checks import check_bool, check_int
from pijit._tensor import Tensor, bfloat16, float16, float32
from pijit.jit import jit
from pijit.nn.cell import Cell
from pijit.nn.wrap import TrainOneStepCell, WithLossCell
from pijit.train.callback import Callback, ProgressBar, RunContext, TimeMonitor
from pijit.train.callback import _CallbackManager, _InternalCallbackParam
from pijit.train.callback import __all__ as _internal_callback_names
from pijit.train.metrics import Loss, get_metric_fn, get_metrics

__all__ = ["Model"]

_AMP_LEVELS = ("O0", "O1", "O2", "O3", "auto")
_LOW_FLOATS = (float16, bfloat16)
_KWARGS = ("loss_scale_manager", "keep_batchnorm_fp32", "boost_config_dict", "acc_level")


class _WithEvalCell(Cell):
    """(loss, outputs, label) of the network on (data, label): what Model's metrics read
    (MindSpore's nn.WithEvalCell). With add_cast_fp32, the outputs and the label are cast to
    float32 first (a network in float16)."""

    def __init__(self, network, loss_fn, add_cast_fp32=False):
        super().__init__(auto_prefix=False)
        self._network = network
        self._loss_fn = loss_fn
        self.add_cast_fp32 = add_cast_fp32

    def construct(self, data, label):
        outputs = self._network(data)
        if self.add_cast_fp32:
            outputs = ops.cast(outputs, float32) if isinstance(outputs, Tensor) else outputs
            if isinstance(label, Tensor) and label.dtype in _LOW_FLOATS:
                label = ops.cast(label, float32)
        return self._loss_fn(outputs, label), outputs, label


def _compiled_call(cell, name):
    """pijit.jit of a function calling `cell`. The function gets a code object of its own:
    pijit keys its graphs and statistics by code object, and a shared one would make every
    Model guard against (and count) every other Model's graphs."""
    def call_cell(*inputs):
        return cell(*inputs)
    code = call_cell.__code__.replace(co_name=name)
    function = types.FunctionType(code, call_cell.__globals__, name, None, call_cell.__closure__)
    return jit(function, capture_mode="bytecode")


def _check_dataset(function, name, dataset):
    if not (hasattr(dataset, "create_tuple_iterator") and hasattr(dataset, "get_dataset_size")):
        raise TypeError(f"For '{function}', '{name}' must be a dataset (pijit.dataset: "
                        f"NumpySlicesDataset, GeneratorDataset, ...), got {type(dataset).__name__}")
    size = dataset.get_dataset_size()
    if size == 0:
        raise ValueError(f"For '{function}', '{name}' has no data (get_dataset_size() is 0)")
    if size < 0:
        raise ValueError(f"For '{function}', '{name}' is endless (repeat() without a count), so "
                         f"an epoch would never end; give repeat a count")
    return size


def _as_tuple(element):
    return (element,) if isinstance(element, Tensor) else tuple(element)


def _callback_list(callbacks):
    if callbacks is None:
        return []
    if isinstance(callbacks, Callback):
        return [callbacks]
    if isinstance(callbacks, (list, tuple)):
        return list(callbacks)
    raise TypeError(f"callbacks must be a Callback or a list of Callbacks, got "
                    f"{type(callbacks).__name__}")


def _with_default_progress_bar(callbacks):
    """Training shows a progress bar by default: on a terminal it draws (steps, loss, steps/s,
    ETA); when stdout is not a terminal (a log file, a pipe, CI) it writes nothing. A
    ProgressBar among the callbacks replaces the default one."""
    if any(isinstance(cb, ProgressBar) for cb in callbacks):
        return callbacks
    return callbacks + [ProgressBar()]


class Model:
    """Training and inference for `network` (a Cell).

    loss_fn        the loss Cell; None when the network computes its own loss.
    optimizer      the optimizer Cell; None when the network updates its own weights.
    metrics        a set of metric names ({"accuracy", "loss"}; see pijit.train.names()) or a
                   dict name -> Metric, for eval and fit.
    eval_network   the Cell eval runs; by default (loss, outputs, label) of network and loss_fn.
    eval_indexes   with eval_network: the positions of loss, prediction and label in its
                   outputs (None: every metric gets all outputs).
    amp_level      mixed precision: "O0" (none), "O1", "O2" or "O3" (see pijit.amp); needs an
                   optimizer.
    loss_scale_manager  (keyword) a LossScaleManager (FixedLossScaleManager,
                   DynamicLossScaleManager) replacing the level's; needs an optimizer.
    keep_batchnorm_fp32 (keyword) a bool replacing the level's.
    """

    def __init__(self, network, loss_fn=None, optimizer=None, metrics=None, eval_network=None,
                 eval_indexes=None, amp_level="O0", boost_level="O0", **kwargs):
        if not isinstance(network, Cell):
            raise TypeError(f"For 'Model', 'network' must be a Cell, got {type(network).__name__}")
        for key in kwargs:
            if key not in _KWARGS:
                raise ValueError(f"For 'Model', the keyword arguments may be {list(_KWARGS)}, "
                                 f"got {key!r}")
        self._check_amp(amp_level, boost_level, optimizer, kwargs)
        for name, value in (("loss_fn", loss_fn), ("optimizer", optimizer),
                            ("eval_network", eval_network)):
            if value is not None and not isinstance(value, Cell):
                raise TypeError(f"For 'Model', '{name}' must be a Cell or None, got "
                                f"{type(value).__name__}")
        self._network = network
        self._loss_fn = loss_fn
        self._optimizer = optimizer
        self._amp_level = amp_level
        self._boost_level = boost_level
        # Only the amp settings given are passed on, so the level's defaults apply to the rest.
        self._amp_kwargs = {key: kwargs[key] for key in ("loss_scale_manager",
                                                         "keep_batchnorm_fp32") if key in kwargs}
        self._train_network = self._build_train_network()
        self._metric_fns = get_metrics(metrics)
        self._eval_network, self._eval_indexes = self._build_eval_network(eval_network,
                                                                          eval_indexes)
        self._predict_network = network
        self._compiled = {}
        self._backbone_is_train = None
        self._current_epoch_num = 0
        self._current_step_num = 0

    @staticmethod
    def _check_amp(amp_level, boost_level, optimizer, kwargs):
        from pijit.amp import check_level
        from pijit.train.loss_scale_manager import LossScaleManager
        if amp_level not in _AMP_LEVELS:
            raise ValueError(f"For 'Model', 'amp_level' must be one of {_AMP_LEVELS}, got "
                             f"{amp_level!r}")
        check_level("Model", amp_level, boost_level)
        if optimizer is None and amp_level != "O0":
            raise ValueError("For 'Model', mixed precision (amp_level other than 'O0') needs an "
                             "optimizer")
        manager = kwargs.get("loss_scale_manager")
        if manager is not None:
            if not isinstance(manager, LossScaleManager):
                raise TypeError(f"For 'Model', 'loss_scale_manager' must be a LossScaleManager "
                                f"(FixedLossScaleManager, DynamicLossScaleManager) or None, got "
                                f"{type(manager).__name__}")
            if optimizer is None:
                raise ValueError("For 'Model', a 'loss_scale_manager' needs an optimizer")
        if "keep_batchnorm_fp32" in kwargs and \
                not isinstance(kwargs["keep_batchnorm_fp32"], bool):
            raise TypeError(f"For 'Model', 'keep_batchnorm_fp32' must be a bool, got "
                            f"{type(kwargs['keep_batchnorm_fp32']).__name__}")

    def _build_train_network(self):
        network = self._network
        if self._optimizer is not None:
            if self._amp_level != "O0" or self._amp_kwargs:
                from pijit.amp import build_train_network
                return build_train_network(network, self._optimizer, self._loss_fn,
                                           level=self._amp_level, boost_level=self._boost_level,
                                           **self._amp_kwargs)
            if self._loss_fn is not None:
                network = WithLossCell(network, self._loss_fn)
            return TrainOneStepCell(network, self._optimizer)
        if self._loss_fn is not None:
            return WithLossCell(network, self._loss_fn)
        return network

    def _build_eval_network(self, eval_network, eval_indexes):
        if not self._metric_fns:
            return eval_network, eval_indexes
        if eval_network is not None:
            if eval_indexes is not None and not (isinstance(eval_indexes, list)
                                                 and len(eval_indexes) == 3):
                raise ValueError(f"For 'Model', 'eval_indexes' must be None or a list of 3 "
                                 f"positions (loss, prediction, label), got {eval_indexes!r}")
            return eval_network, eval_indexes
        if self._loss_fn is None:
            raise ValueError("For 'Model', 'metrics' need an 'eval_network', or a 'loss_fn' to "
                             "build one from the network")
        return _WithEvalCell(self._network, self._loss_fn,
                             add_cast_fp32=self._amp_level in ("O2", "O3")), [0, 1, 2]

    # ---- compiled steps ----

    def _compiled_function(self, cell, name):
        key = (id(cell), name)
        if key not in self._compiled:
            self._compiled[key] = (cell, _compiled_call(cell, name))
        return self._compiled[key][1]

    @property
    def train_step_function(self):
        """The compiled function one training step calls (train_network(*batch))."""
        return self._compiled_function(self._train_network, "train_step")

    @property
    def eval_step_function(self):
        """The compiled function one evaluation step calls (eval_network(*batch))."""
        return self._compiled_function(self._eval_network, "eval_step")

    @property
    def predict_function(self):
        """The compiled function predict calls (network(*inputs))."""
        return self._compiled_function(self._predict_network, "predict")

    @property
    def train_network(self):
        return self._train_network

    @property
    def eval_network(self):
        return self._eval_network

    @property
    def predict_network(self):
        return self._predict_network

    def _set_mode(self, network, is_train):
        if self._backbone_is_train is not is_train:
            network.set_train(is_train)
            self._backbone_is_train = is_train

    # ---- training ----

    def train(self, epoch, train_dataset, callbacks=None, dataset_sink_mode=False, sink_size=-1,
              initial_epoch=0):
        """Trains for epochs initial_epoch+1 .. epoch over `train_dataset`, calling `callbacks`.
        With a loss_fn, each dataset row is (data, label); without, the row is the network's
        inputs."""
        self._check_train_args("Model.train", epoch, train_dataset, dataset_sink_mode, sink_size,
                               initial_epoch)
        self._train(epoch, train_dataset, callbacks, initial_epoch, (None, 1))

    def fit(self, epoch, train_dataset, valid_dataset=None, valid_frequency=1, callbacks=None,
            dataset_sink_mode=False, valid_dataset_sink_mode=False, sink_size=-1,
            initial_epoch=0):
        """train, evaluating on `valid_dataset` after every `valid_frequency` epochs (an int) or
        after the epochs listed (a list); the callbacks see the results as cb_params.metrics
        and cb_params.eval_results (with "eval_loss")."""
        self._check_train_args("Model.fit", epoch, train_dataset, dataset_sink_mode, sink_size,
                               initial_epoch)
        check_bool("For 'Model.fit', 'valid_dataset_sink_mode'", valid_dataset_sink_mode)
        if isinstance(valid_frequency, bool) or not isinstance(valid_frequency, (int, list)):
            raise TypeError(f"For 'Model.fit', 'valid_frequency' must be an int or a list, got "
                            f"{type(valid_frequency).__name__}")
        if valid_dataset is not None:
            if not self._metric_fns:
                raise ValueError("For 'Model.fit', a 'valid_dataset' needs the Model's 'metrics'")
            _check_dataset("Model.fit", "valid_dataset", valid_dataset)
        self._train(epoch, train_dataset, callbacks, initial_epoch,
                    (valid_dataset, valid_frequency))

    @staticmethod
    def _check_train_args(function, epoch, dataset, dataset_sink_mode, sink_size, initial_epoch):
        check_int(f"For '{function}', 'epoch'", epoch, 1)
        check_int(f"For '{function}', 'initial_epoch'", initial_epoch, 0)
        if initial_epoch >= epoch:
            raise ValueError(f"For '{function}', 'epoch' must be bigger than 'initial_epoch', "
                             f"got epoch {epoch} and initial_epoch {initial_epoch}")
        check_bool(f"For '{function}', 'dataset_sink_mode'", dataset_sink_mode)
        if isinstance(sink_size, bool) or not isinstance(sink_size, int) or \
                (sink_size < -1 or sink_size == 0):
            raise ValueError(f"For '{function}', 'sink_size' must be -1 or positive, got "
                             f"{sink_size!r}")
        _check_dataset(function, "train_dataset", dataset)

    def _train(self, epoch, train_dataset, callbacks, initial_epoch, valid_info):
        cb_params = _InternalCallbackParam()
        cb_params.train_network = self._train_network
        cb_params.epoch_num = epoch - initial_epoch
        cb_params.batch_num = train_dataset.get_dataset_size()
        cb_params.mode = "train"
        cb_params.loss_fn = self._loss_fn
        cb_params.optimizer = self._optimizer
        cb_params.parallel_mode = "stand_alone"
        cb_params.device_number = 1
        cb_params.train_dataset = train_dataset
        cb_params.list_callback = _with_default_progress_bar(_callback_list(callbacks))
        cb_params.train_dataset_element = None
        cb_params.network = self._network
        cb_params.last_save_ckpt_step = None
        cb_params.latest_ckpt_file = None
        cb_params.net_outputs = None
        with _CallbackManager(cb_params.list_callback) as callback_manager:
            self._train_process(epoch, train_dataset, callback_manager, cb_params, initial_epoch,
                                valid_info)

    def _train_process(self, epoch, train_dataset, callbacks, cb_params, initial_epoch,
                       valid_info):
        step_function = self.train_step_function
        iterator = train_dataset.create_tuple_iterator(num_epochs=epoch - initial_epoch)
        cb_params.cur_step_num = 0
        cb_params.dataset_sink_mode = False
        run_context = RunContext(cb_params)
        callbacks.on_train_begin(run_context)
        for i in range(initial_epoch, epoch):
            cb_params.cur_epoch_num = i + 1
            self._current_epoch_num = i + 1
            self._current_step_num = 0
            callbacks.on_train_epoch_begin(run_context)
            for element in iterator:
                element = _as_tuple(element)
                if self._loss_fn is not None and len(element) != 2:
                    raise ValueError(f"When 'loss_fn' is not None, 'train_dataset' should return "
                                     f"two elements (data, label), but got {len(element)}")
                cb_params.cur_step_num += 1
                self._current_step_num = (cb_params.cur_step_num - 1) % cb_params.batch_num + 1
                cb_params.train_dataset_element = element
                callbacks.on_train_step_begin(run_context)
                self._set_mode(self._train_network, True)
                cb_params.net_outputs = step_function(*element)
                callbacks.on_train_step_end(run_context)
                if run_context.get_stop_requested():
                    break
            self._eval_during_train(valid_info, cb_params, callbacks)
            callbacks.on_train_epoch_end(run_context)
            cb_params.pop("metrics", None)
            cb_params.pop("eval_results", None)
            if run_context.get_stop_requested():
                break
        callbacks.on_train_end(run_context)

    def _eval_during_train(self, valid_info, cb_params, callbacks):
        valid_dataset, frequency = valid_info
        epoch = cb_params.cur_epoch_num
        if valid_dataset is None or not (epoch % frequency == 0 if isinstance(frequency, int)
                                         else epoch in frequency):
            return
        saved = {key: cb_params[key] for key in ("cur_step_num", "batch_num", "net_outputs",
                                                 "dataset_sink_mode")}
        # As MindSpore: of pijit's own callbacks only TimeMonitor also times the evaluation.
        eval_callbacks = [cb for cb in callbacks._callbacks
                          if type(cb).__name__ not in _internal_callback_names
                          or isinstance(cb, TimeMonitor)]
        cb_params.eval_network = self._eval_network
        cb_params.valid_dataset = valid_dataset
        cb_params.batch_num = valid_dataset.get_dataset_size()
        cb_params.mode = "eval"
        cb_params.cur_step_num = 0
        self._clear_metrics()
        with _CallbackManager(eval_callbacks) as manager:
            self._eval_process(valid_dataset, manager, cb_params, add_eval_loss=True)
        cb_params.mode = "train"
        cb_params.update(saved)

    # ---- evaluation ----

    def eval(self, valid_dataset, callbacks=None, dataset_sink_mode=False):
        """The Model's metrics over `valid_dataset`: {metric name: value}."""
        check_bool("For 'Model.eval', 'dataset_sink_mode'", dataset_sink_mode)
        if not self._metric_fns:
            raise ValueError("For 'Model.eval', the Model's 'metrics' can not be None or empty; "
                             "give Model metrics, e.g. metrics={'accuracy'}")
        _check_dataset("Model.eval", "valid_dataset", valid_dataset)
        cb_params = _InternalCallbackParam()
        cb_params.eval_network = self._eval_network
        cb_params.valid_dataset = valid_dataset
        cb_params.batch_num = valid_dataset.get_dataset_size()
        cb_params.mode = "eval"
        cb_params.cur_step_num = 0
        cb_params.list_callback = _with_default_progress_bar(_callback_list(callbacks))
        cb_params.network = self._network
        cb_params.net_outputs = None
        self._clear_metrics()
        with _CallbackManager(cb_params.list_callback) as manager:
            return self._eval_process(valid_dataset, manager, cb_params)

    def _eval_process(self, valid_dataset, callbacks, cb_params, add_eval_loss=False):
        step_function = self.eval_step_function
        run_context = RunContext(cb_params)
        cb_params.dataset_sink_mode = False
        eval_loss = get_metric_fn("loss") if add_eval_loss and self._eval_indexes else None
        callbacks.on_eval_begin(run_context)
        callbacks.on_eval_epoch_begin(run_context)
        for element in valid_dataset.create_tuple_iterator(num_epochs=1):
            element = _as_tuple(element)
            cb_params.cur_step_num += 1
            cb_params.eval_dataset_element = element
            callbacks.on_eval_step_begin(run_context)
            self._set_mode(self._eval_network, False)
            outputs = step_function(*element)
            cb_params.net_outputs = outputs
            callbacks.on_eval_step_end(run_context)
            self._update_metrics(outputs)
            if eval_loss is not None:
                eval_loss.update(outputs[self._eval_indexes[0]])
            if run_context.get_stop_requested():
                break
        callbacks.on_eval_epoch_end(run_context)
        metrics = {name: metric.eval() for name, metric in self._metric_fns.items()}
        cb_params.metrics = metrics
        if eval_loss is not None:
            cb_params.eval_results = dict(copy.deepcopy(metrics), eval_loss=eval_loss.eval())
        callbacks.on_eval_end(run_context)
        return metrics

    def _clear_metrics(self):
        for metric in self._metric_fns.values():
            metric.clear()

    def _update_metrics(self, outputs):
        outputs = _as_tuple(outputs) if isinstance(outputs, (Tensor, list, tuple)) else outputs
        if not isinstance(outputs, tuple):
            raise ValueError(f"The eval network's outputs should be a Tensor or a tuple, got "
                             f"{type(outputs).__name__}")
        if self._eval_indexes is not None and len(outputs) < 3:
            raise ValueError(f"With eval_indexes, the eval network must return at least 3 "
                             f"outputs (loss, prediction, label), got {len(outputs)}")
        for metric in self._metric_fns.values():
            if self._eval_indexes is None:
                metric.update(*outputs)
            elif isinstance(metric, Loss):
                metric.update(outputs[self._eval_indexes[0]])
            else:
                metric.update(outputs[self._eval_indexes[1]], outputs[self._eval_indexes[2]])

    # ---- prediction ----

    def predict(self, *predict_data):
        """The network's output on `predict_data` (in evaluation mode)."""
        for data in predict_data:
            if data is not None and not isinstance(data, (Tensor, int, float, str, list, tuple)):
                raise TypeError(f"For 'Model.predict', the inputs must be Tensors (or numbers, "
                                f"strs, lists, tuples), got {type(data).__name__}")
        self._set_mode(self._predict_network, False)
        return self.predict_function(*predict_data)
