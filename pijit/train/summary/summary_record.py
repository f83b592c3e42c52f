"""SummaryRecord (MindSpore's mindspore.SummaryRecord): writes scalars, tensors, histograms and
images, added by add_value or produced by the summary operators, to a summary file that
MindInsight reads."""
import atexit
import os
import platform
import re
import time
from urllib.parse import quote

import numpy as np

from pijit import _primitives_summary
from pijit._tensor import Tensor
from pijit.train.summary._event_file import EventFileWriter
from pijit.train.summary._summary_proto import event_class
from pijit.train.summary._summary_values import PLUGINS, check_value, fill_value

__all__ = ["SummaryRecord"]

_FILE_NAME_PART = re.compile(r"^[A-Za-z0-9_.\-]*$")
# What MindSpore records but pijit does not: asked for, they raise a clear error.
_UNSUPPORTED_PLUGINS = ("graph", "train_lineage", "eval_lineage", "dataset_graph",
                        "custom_lineage_data", "LANDSCAPE")
_EXPORT_FORMATS = {"tensor_format": ("npy", None)}


def _rank():
    """The process's rank in a data-parallel run, 0 otherwise: part of the file name."""
    try:
        from pijit import communication
        return communication.get_rank() if communication.get_group_size() > 1 else 0
    except Exception:  # no MPI, or communication not initialised: a world of one
        return 0


def event_file_name(prefix, suffix, seconds):
    """MindSpore's summary file name: prefix + ".out.events.summary." + seconds + "." + rank +
    "." + host name + suffix."""
    return f"{prefix}.out.events.summary.{seconds}.{_rank()}.{platform.node()}{suffix}"


def check_export_options(export_options, who):
    """`export_options` checked: None, or a dict whose key 'tensor_format' is 'npy' or None."""
    if export_options is None:
        return None
    if not isinstance(export_options, dict):
        raise TypeError(f"For '{who}', 'export_options' must be a dict or None, got "
                        f"{type(export_options).__name__}")
    for key, value in export_options.items():
        if key not in _EXPORT_FORMATS:
            raise ValueError(f"For '{who}', the key {key!r} of 'export_options' is not supported; "
                             f"expected one of {list(_EXPORT_FORMATS)}")
        if value not in _EXPORT_FORMATS[key]:
            raise ValueError(f"For '{who}', export_options[{key!r}] must be one of "
                             f"{list(_EXPORT_FORMATS[key])}, got {value!r}")
    return dict(export_options)


class SummaryRecord:
    """Records summary values into `log_dir`, in a file named
    `<file_prefix>.out.events.summary.<seconds>.<rank>.<host><file_suffix>`, created at the
    first record that has something to write.

    add_value(plugin, name, value) keeps a value ('scalar', 'tensor', 'image' or 'histogram',
    a Tensor) for the next record(step), which writes it, with the values the summary operators
    produced since, as one event of that step. Use it as a context manager, or call close().

    max_file_size (bytes) caps the file: a record that would pass it is dropped with a warning
    and the file gets no more. export_options={'tensor_format': 'npy'} also saves each tensor
    value as `<log_dir>/export_<seconds>/tensor/<tag>_<step>.npy`. `network` and
    `raise_exception` are accepted for MindSpore's signature: pijit writes no graph events, and
    its writing errors always raise."""

    def __init__(self, log_dir, file_prefix="events", file_suffix="_MS", network=None,
                 max_file_size=None, raise_exception=False, export_options=None):
        self._closed = True  # until constructed, so that close() from atexit does nothing
        if not isinstance(log_dir, (str, os.PathLike)) or not str(log_dir):
            raise TypeError(f"For 'SummaryRecord', 'log_dir' must be a non-empty path, got "
                            f"{log_dir!r}")
        for what, part in (("file_prefix", file_prefix), ("file_suffix", file_suffix)):
            if not isinstance(part, str) or not _FILE_NAME_PART.match(part):
                raise ValueError(f"For 'SummaryRecord', '{what}' must be a string of letters, "
                                 f"digits, '_', '.' and '-', got {part!r}")
        if max_file_size is not None and (isinstance(max_file_size, bool)
                                          or not isinstance(max_file_size, int)):
            raise TypeError(f"For 'SummaryRecord', 'max_file_size' must be an int or None, got "
                            f"{type(max_file_size).__name__}")
        if max_file_size is not None and max_file_size <= 0:
            raise ValueError(f"For 'SummaryRecord', 'max_file_size' must be positive, got "
                             f"{max_file_size}")
        if not isinstance(raise_exception, bool):
            raise TypeError(f"For 'SummaryRecord', 'raise_exception' must be a bool, got "
                            f"{type(raise_exception).__name__}")
        from pijit.nn import Cell
        if network is not None and not isinstance(network, Cell):
            raise TypeError(f"For 'SummaryRecord', 'network' must be a Cell or None, got "
                            f"{type(network).__name__}")
        self._export_options = check_export_options(export_options, "SummaryRecord")
        log_dir = os.path.realpath(os.fspath(log_dir))
        os.makedirs(log_dir, exist_ok=True)
        seconds = int(time.time())
        self._path = os.path.join(log_dir, event_file_name(file_prefix, file_suffix, seconds))
        self._export_dir = os.path.join(log_dir, f"export_{seconds}")
        self._writer = EventFileWriter(self._path, max_file_size)
        self.network = network
        self._mode, self._pending = "train", {}
        self._closed = False
        _primitives_summary.take_pending_values()  # values from before this record: not ours
        atexit.register(self.close)

    def __enter__(self):
        if self._closed:
            raise ValueError("SummaryRecord has been closed")
        return self

    def __exit__(self, *err):
        self.close()

    @property
    def log_dir(self):
        """The full path of the summary file."""
        return self._path

    def set_mode(self, mode):
        """'train' (the default) or 'eval'; in 'eval' mode record() skips the values of the
        summary operators."""
        if mode not in ("train", "eval"):
            raise ValueError(f"For 'SummaryRecord.set_mode', 'mode' must be 'train' or 'eval', "
                             f"got {mode!r}")
        self._mode = mode

    def _check_open(self, what):
        if self._closed:
            raise ValueError(f"For 'SummaryRecord.{what}', the SummaryRecord has been closed")

    def add_value(self, plugin, name, value):
        """Keeps Tensor `value` as `plugin` ('scalar', 'tensor', 'image' or 'histogram') under
        tag `name` for the next record(); a name added twice keeps the newest value."""
        self._check_open("add_value")
        if plugin in _UNSUPPORTED_PLUGINS:
            raise ValueError(f"For 'SummaryRecord.add_value', pijit does not record the "
                             f"{plugin!r} plugin; supported: {list(PLUGINS)}")
        if plugin not in PLUGINS:
            raise ValueError(f"For 'SummaryRecord.add_value', no such plugin {plugin!r}; "
                             f"supported: {list(PLUGINS)}")
        if not isinstance(name, str) or not name:
            raise ValueError(f"For 'SummaryRecord.add_value', {name!r} is not a valid tag name")
        if not isinstance(value, Tensor):
            raise TypeError(f"For 'SummaryRecord.add_value', the value must be a Tensor, got "
                            f"{type(value).__name__}")
        values = np.array(value.asnumpy(), copy=True)
        if values.dtype.kind not in "biufc" and plugin != "tensor":
            values = values.astype(np.float32)  # bfloat16 (ml_dtypes): recorded as float32
        check_value(plugin, values, "SummaryRecord")
        self._pending.setdefault(plugin, {})[name] = values

    def record(self, step, train_network=None, plugin_filter=None):
        """Writes the values added since the last record, and (in 'train' mode) those of the
        summary operators, as one event of `step`; plugin_filter(plugin) -> bool, when given,
        picks the plugins written (the others are dropped). Returns True."""
        if isinstance(step, bool) or not isinstance(step, int):
            raise TypeError(f"For 'SummaryRecord.record', 'step' must be an int, got "
                            f"{type(step).__name__}")
        from pijit.nn import Cell
        if train_network is not None and not isinstance(train_network, Cell):
            raise TypeError(f"For 'SummaryRecord.record', 'train_network' must be a Cell or "
                            f"None, got {type(train_network).__name__}")
        if plugin_filter is not None and not callable(plugin_filter):
            raise TypeError("For 'SummaryRecord.record', 'plugin_filter' must be callable or None")
        self._check_open("record")
        if self._mode == "train":
            self._add_operator_values()
        pending, self._pending = self._pending, {}
        if plugin_filter is not None:
            pending = {plugin: values for plugin, values in pending.items() if plugin_filter(plugin)}
        self._export(pending, step)
        event = event_class()(wall_time=time.time(), step=step)
        for plugin, values in pending.items():
            for tag, array in values.items():
                fill_value(event.summary.value.add(tag=tag), plugin, array)
        if event.summary.value:
            self._writer.write_event(event)
        return True

    def _add_operator_values(self):
        for key, value in _primitives_summary.take_pending_values().items():
            name, _, plugin = key[:-1].rpartition("[:")
            self.add_value(plugin.lower(), name, value)

    def _export(self, pending, step):
        if not self._export_options or self._export_options.get("tensor_format") != "npy":
            return
        directory = os.path.join(self._export_dir, "tensor")
        for tag, array in pending.get("tensor", {}).items():
            os.makedirs(directory, exist_ok=True)
            np.save(os.path.join(directory, f"{quote(tag, safe='')}_{step}.npy"), array)

    def flush(self):
        """Writes what is buffered to the file."""
        self._check_open("flush")
        self._writer.flush()

    def close(self):
        """Flushes and closes the file (it becomes read-only, as MindSpore leaves it); later
        calls do nothing."""
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self.close)
        self._writer.close()
