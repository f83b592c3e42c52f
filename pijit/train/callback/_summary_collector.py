"""SummaryCollector (MindSpore's mindspore.train.SummaryCollector): a callback that records the
loss, the learning rate, parameter histograms, input images and the summary operators' values
of a Model.train run into a summary file."""
import re
import warnings

import numpy as np

from pijit._tensor import Tensor
from pijit.train.callback._callback import Callback

__all__ = ["SummaryCollector"]

_DEFAULT_SPECIFIED_DATA = {
    "collect_metric": True, "collect_graph": True, "collect_train_lineage": True,
    "collect_eval_lineage": True, "collect_input_data": True, "collect_dataset_graph": True,
    "histogram_regular": None, "collect_landscape": None}
_BOOL_ITEMS = tuple(key for key, value in _DEFAULT_SPECIFIED_DATA.items() if value is True)
# Histograms of this many of the optimizer's parameters when 'histogram_regular' is None.
_DEFAULT_HISTOGRAM_COUNT = 5
# TensorSummary values are recorded at about this many steps when collect_tensor_freq is None.
_DEFAULT_TENSOR_RECORDS = 20


def _check_positive_int(name, value, allow_none=False):
    if allow_none and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"For 'SummaryCollector', '{name}' must be an int, got "
                        f"{type(value).__name__}")
    if value <= 0:
        raise ValueError(f"For 'SummaryCollector', '{name}' must be greater than 0, got {value}")


def _specified_data(specified, keep_default_action):
    """collect_specified_data checked and merged with the defaults as keep_default_action says."""
    if not isinstance(keep_default_action, bool):
        raise TypeError(f"For 'SummaryCollector', 'keep_default_action' must be a bool, got "
                        f"{type(keep_default_action).__name__}")
    if specified is None:
        return dict(_DEFAULT_SPECIFIED_DATA) if keep_default_action else {}
    if not isinstance(specified, dict):
        raise TypeError(f"For 'SummaryCollector', 'collect_specified_data' must be a dict or "
                        f"None, got {type(specified).__name__}")
    unknown = set(specified) - set(_DEFAULT_SPECIFIED_DATA)
    if unknown:
        raise ValueError(f"For 'SummaryCollector', the keys {sorted(map(str, unknown))} of "
                         f"'collect_specified_data' are not supported; expected some of "
                         f"{list(_DEFAULT_SPECIFIED_DATA)}")
    for key in _BOOL_ITEMS:
        if key in specified and not isinstance(specified[key], bool):
            raise TypeError(f"For 'SummaryCollector', collect_specified_data[{key!r}] must be a "
                            f"bool, got {type(specified[key]).__name__}")
    regular = specified.get("histogram_regular")
    if regular is not None:
        if not isinstance(regular, str):
            raise TypeError(f"For 'SummaryCollector', 'histogram_regular' must be a str or None, "
                            f"got {type(regular).__name__}")
        try:
            re.compile(regular)
        except re.error as error:
            raise ValueError(f"For 'SummaryCollector', 'histogram_regular' is not a valid "
                             f"regular expression: {error}") from None
    landscape = specified.get("collect_landscape")
    if landscape is not None and not isinstance(landscape, dict):
        raise TypeError(f"For 'SummaryCollector', 'collect_landscape' must be a dict or None, "
                        f"got {type(landscape).__name__}")
    if landscape:
        warnings.warn("SummaryCollector: pijit does not collect the loss landscape; "
                      "'collect_landscape' is ignored", RuntimeWarning, stacklevel=3)
    return {**_DEFAULT_SPECIFIED_DATA, **specified} if keep_default_action else dict(specified)


def _check_custom_lineage_data(data):
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise TypeError(f"For 'SummaryCollector', 'custom_lineage_data' must be a dict or None, "
                        f"got {type(data).__name__}")
    for key, value in data.items():
        if not isinstance(key, str) or isinstance(value, bool) or \
                not isinstance(value, (int, float, str)):
            raise TypeError(f"For 'SummaryCollector', 'custom_lineage_data' must map str to "
                            f"int, float or str, got {key!r}: {type(value).__name__}")
    return dict(data)


def tensor_collect_steps(total_steps, collect_freq, collect_tensor_freq):
    """The steps at which TensorSummary values are recorded, as MindSpore picks them: every
    collect_tensor_freq steps when given, else the collect_freq steps, thinned to about 20."""
    if collect_tensor_freq is not None:
        return range(0, total_steps + 1, collect_tensor_freq)
    if len(range(0, total_steps + 1, collect_freq)) <= _DEFAULT_TENSOR_RECORDS:
        return range(0, total_steps + 1, collect_freq)
    tensor_freq = total_steps // (_DEFAULT_TENSOR_RECORDS - 1)
    if tensor_freq > 1:
        return range(0, total_steps + 1, tensor_freq)[:_DEFAULT_TENSOR_RECORDS]
    return range(0, total_steps + 1)[:_DEFAULT_TENSOR_RECORDS + 1]


class SummaryCollector(Callback):
    """Records a training run into `summary_dir` (see SummaryRecord for the file): at the first
    step and then every `collect_freq` steps (epochs in dataset sink mode), the loss (the mean
    of the step's first output) as scalar 'loss/auto', the optimizer's learning rate as scalar
    'learning_rate/auto', histograms '<parameter>/auto' of the optimizer's parameters matching
    collect_specified_data['histogram_regular'] (the first five when None), the first input
    column as image 'input_data/auto' when it is an NCHW image batch, and the values of the
    summary operators; TensorSummary values only at the steps collect_tensor_freq picks. The
    file is closed when training ends.

    collect_specified_data's 'collect_graph', 'collect_train_lineage', 'collect_eval_lineage',
    'collect_dataset_graph' and 'collect_landscape', and custom_lineage_data, are checked as
    MindSpore checks them but record nothing: pijit writes no graph, lineage or landscape."""

    def __init__(self, summary_dir, collect_freq=10, collect_specified_data=None,
                 keep_default_action=True, custom_lineage_data=None, collect_tensor_freq=None,
                 max_file_size=None, export_options=None):
        from pijit.train.summary.summary_record import check_export_options

        super().__init__()
        if not isinstance(summary_dir, str) or not summary_dir:
            raise TypeError(f"For 'SummaryCollector', 'summary_dir' must be a non-empty str, "
                            f"got {summary_dir!r}")
        _check_positive_int("collect_freq", collect_freq)
        _check_positive_int("collect_tensor_freq", collect_tensor_freq, allow_none=True)
        _check_positive_int("max_file_size", max_file_size, allow_none=True)
        self._summary_dir = summary_dir
        self._collect_freq, self._collect_tensor_freq = collect_freq, collect_tensor_freq
        self._max_file_size = max_file_size
        self._export_options = check_export_options(export_options, "SummaryCollector")
        self._specified = _specified_data(collect_specified_data, keep_default_action)
        self._custom_lineage_data = _check_custom_lineage_data(custom_lineage_data)
        self._record, self._owns_record = None, False
        self._first_step, self._sink_mode, self._tensor_steps = True, False, range(0)

    def __enter__(self):
        self._open()
        return self

    def __exit__(self, *err):
        self._close()

    def _open(self):
        from pijit.train.summary.summary_record import SummaryRecord

        self._record = SummaryRecord(self._summary_dir, max_file_size=self._max_file_size,
                                     export_options=self._export_options)
        self._first_step = True

    def _close(self):
        if self._record is not None:
            self._record.close()
            self._record = None

    def begin(self, run_context):
        cb_params = run_context.original_args()
        collectors = [cb for cb in cb_params.get("list_callback", ())
                      if isinstance(cb, SummaryCollector)]
        if len(collectors) > 1:
            raise ValueError("There is more than one SummaryCollector in the callback list; "
                             "only one is allowed")
        if cb_params.get("mode") not in ("train", "eval"):
            raise ValueError(f"SummaryCollector supports Model.train and Model.eval, got mode "
                             f"{cb_params.get('mode')!r}")
        if self._record is None:  # used outside a `with`: open here, close at end
            self._open()
            self._owns_record = True
        self._record.set_mode(cb_params.mode)
        self._sink_mode = bool(cb_params.get("dataset_sink_mode", False))

    def step_end(self, run_context):
        cb_params = run_context.original_args()
        if cb_params.mode == "train" and not self._sink_mode:
            self._collect(cb_params, cb_params.cur_step_num)

    def epoch_end(self, run_context):
        cb_params = run_context.original_args()
        if cb_params.mode == "train" and self._sink_mode:
            self._collect(cb_params, cb_params.cur_epoch_num)
        self._record.flush()

    def end(self, run_context):
        self._record.flush()

    def on_train_end(self, run_context):
        self.end(run_context)
        if self._owns_record:  # not entered as a context: the run's end closes the file
            self._close()
            self._owns_record = False

    def _collect(self, cb_params, current):
        """Records at the first step, every collect_freq steps, and (TensorSummary values only)
        at the tensor steps, as MindSpore's collector does."""
        # A Model.eval run with this callback between trainings begins it in 'eval' mode.
        self._record.set_mode("train")
        if self._first_step:
            total = cb_params.epoch_num * (1 if self._sink_mode else cb_params.batch_num)
            self._tensor_steps = tensor_collect_steps(total, self._collect_freq,
                                                      self._collect_tensor_freq)
            self._first_step = False
            self._record_step(cb_params, None)
            self._record.flush()
            return
        at_freq, at_tensor = current % self._collect_freq == 0, current in self._tensor_steps
        if at_freq and at_tensor:
            self._record_step(cb_params, None)
        elif at_tensor:
            self._record_step(cb_params, lambda plugin: plugin == "tensor")
        elif at_freq:
            self._record_step(cb_params, lambda plugin: plugin != "tensor")

    def _record_step(self, cb_params, plugin_filter):
        self._collect_input_data(cb_params)
        self._collect_metric(cb_params)
        self._collect_histograms(cb_params)
        self._record.record(cb_params.cur_step_num, plugin_filter=plugin_filter)

    def _collect_input_data(self, cb_params):
        if not self._specified.get("collect_input_data"):
            return
        data = cb_params.get("train_dataset_element")
        if isinstance(data, (list, tuple)):
            data = data[0] if data else None
        try:
            if not isinstance(data, Tensor):
                raise TypeError("not a Tensor")
            self._record.add_value("image", "input_data/auto", data)
        except (TypeError, ValueError, ImportError) as error:
            warnings.warn(f"SummaryCollector: the first input column is not an image batch that "
                          f"can be recorded ({error}); input data is not collected",
                          RuntimeWarning, stacklevel=2)
            self._specified["collect_input_data"] = False

    def _collect_metric(self, cb_params):
        if not self._specified.get("collect_metric"):
            return
        loss = _loss(cb_params.get("net_outputs"))
        if loss is not None:
            self._record.add_value("scalar", "loss/auto", Tensor(np.float32(loss)))
        learning_rate = _learning_rate(cb_params.get("optimizer"))
        if learning_rate is not None:
            self._record.add_value("scalar", "learning_rate/auto",
                                   Tensor(np.float32(learning_rate)))

    def _collect_histograms(self, cb_params):
        if "histogram_regular" not in self._specified:
            return
        optimizer = cb_params.get("optimizer")
        parameters = list(getattr(optimizer, "parameters", None) or ())
        regular = self._specified["histogram_regular"]
        if regular is None:
            chosen = parameters[:_DEFAULT_HISTOGRAM_COUNT]
        else:
            chosen = [p for p in parameters if re.match(regular, p.name)]
        for parameter in chosen:
            self._record.add_value("histogram", parameter.name + "/auto", parameter)


def _loss(outputs):
    """The mean of the step's output, or of its first element; None if there is none."""
    if isinstance(outputs, (list, tuple)):
        outputs = outputs[0] if outputs else None
    if isinstance(outputs, Tensor):
        return float(np.mean(outputs.asnumpy().astype(np.float64)))
    if isinstance(outputs, (int, float)) and not isinstance(outputs, bool):
        return float(outputs)
    return None


def _learning_rate(optimizer):
    """The optimizer's current learning rate as a float, or None (no optimizer, or one learning
    rate a parameter group)."""
    get_lr = getattr(optimizer, "get_lr", None)
    if get_lr is None:
        return None
    try:
        rate = get_lr()
    except Exception:  # an optimizer whose get_lr needs a state the run does not have
        return None
    if isinstance(rate, Tensor):
        rate = rate.asnumpy()
    rate = np.asarray(rate)
    return float(rate.reshape(-1)[0]) if rate.size == 1 and rate.dtype.kind in "iuf" else None
