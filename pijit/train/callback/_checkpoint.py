"""ModelCheckpoint, the callback that saves checkpoints while training, and CheckpointConfig,
its policy (MindSpore's mindspore.train callbacks of those names).

Files are named "<prefix>-<epoch>_<step in epoch>.ckpt" in the directory. When the directory
already holds checkpoints with the prefix, the prefix becomes "<prefix>_1" (then "_2", ...),
so that one run never deletes another's files."""
import os
import time

from pijit._tensor import Tensor
from pijit.nn.cell import Cell
from pijit.train.callback._callback import Callback
from pijit.train.serialization import save_checkpoint

__all__ = ["CheckpointConfig", "ModelCheckpoint"]

_APPEND_INFO_NAMES = ("epoch_num", "step_num")


def _optional_non_negative_int(name, value):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"CheckpointConfig: '{name}' must be an int, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"CheckpointConfig: '{name}' must be >= 0, got {value}")
    return value


def _bool(name, value):
    if not isinstance(value, bool):
        raise TypeError(f"CheckpointConfig: '{name}' must be a bool, got {type(value).__name__}")
    return value


class CheckpointConfig:
    """When ModelCheckpoint saves and how many files it keeps.

    save_checkpoint_steps        save every that many steps (default 1); when set, the seconds
                                 policy is ignored.
    save_checkpoint_seconds      save when that many seconds have passed since the last save.
    keep_checkpoint_max          keep at most that many files (default 5), deleting the oldest.
    keep_checkpoint_per_n_minutes  without keep_checkpoint_max: keep one file per n minutes.
    saved_network                the Cell to save instead of the training network.
    append_info                  ["epoch_num", "step_num", {name: value}]: saved with each file.

    integrated_save, async_save, enc_key, enc_mode and exception_save are accepted as in
    MindSpore; encryption is not supported."""

    def __init__(self, save_checkpoint_steps=1, save_checkpoint_seconds=0, keep_checkpoint_max=5,
                 keep_checkpoint_per_n_minutes=0, integrated_save=True, async_save=False,
                 saved_network=None, append_info=None, enc_key=None, enc_mode="AES-GCM",
                 exception_save=False, **kwargs):
        steps = _optional_non_negative_int("save_checkpoint_steps", save_checkpoint_steps)
        seconds = _optional_non_negative_int("save_checkpoint_seconds", save_checkpoint_seconds)
        keep_max = _optional_non_negative_int("keep_checkpoint_max", keep_checkpoint_max)
        per_minutes = _optional_non_negative_int("keep_checkpoint_per_n_minutes",
                                                 keep_checkpoint_per_n_minutes)
        if not (steps or seconds or keep_max or per_minutes):
            raise ValueError("CheckpointConfig: 'save_checkpoint_steps', "
                             "'save_checkpoint_seconds', 'keep_checkpoint_max' and "
                             "'keep_checkpoint_per_n_minutes' can't all be None or 0")
        if saved_network is not None and not isinstance(saved_network, Cell):
            raise TypeError(f"CheckpointConfig: 'saved_network' must be a Cell or None, got "
                            f"{type(saved_network).__name__}")
        if enc_key is not None:
            raise NotImplementedError("CheckpointConfig: encrypted checkpoints (enc_key) are not "
                                      "supported")
        self._save_checkpoint_steps = steps
        self._save_checkpoint_seconds = None if steps else seconds
        self._keep_checkpoint_max = keep_max
        self._keep_checkpoint_per_n_minutes = None if keep_max else per_minutes
        if not keep_max and not per_minutes:
            self._keep_checkpoint_max = 1
        self._integrated_save = _bool("integrated_save", integrated_save)
        self._async_save = _bool("async_save", async_save)
        self.exception_save = _bool("exception_save", exception_save)
        self._saved_network = saved_network
        self._append_dict = self._append_info_dict(append_info)
        self._enc_key = enc_key
        self._enc_mode = enc_mode

    save_checkpoint_steps = property(lambda self: self._save_checkpoint_steps)
    save_checkpoint_seconds = property(lambda self: self._save_checkpoint_seconds)
    keep_checkpoint_max = property(lambda self: self._keep_checkpoint_max)
    keep_checkpoint_per_n_minutes = property(lambda self: self._keep_checkpoint_per_n_minutes)
    integrated_save = property(lambda self: self._integrated_save)
    async_save = property(lambda self: self._async_save)
    saved_network = property(lambda self: self._saved_network)
    append_dict = property(lambda self: self._append_dict)
    enc_key = property(lambda self: self._enc_key)
    enc_mode = property(lambda self: self._enc_mode)

    def get_checkpoint_policy(self):
        return {"save_checkpoint_steps": self.save_checkpoint_steps,
                "save_checkpoint_seconds": self.save_checkpoint_seconds,
                "keep_checkpoint_max": self.keep_checkpoint_max,
                "keep_checkpoint_per_n_minutes": self.keep_checkpoint_per_n_minutes,
                "saved_network": self.saved_network}

    @staticmethod
    def _append_info_dict(append_info):
        if append_info is None or append_info == []:
            return None
        if not isinstance(append_info, list):
            raise TypeError(f"CheckpointConfig: 'append_info' must be a list, got "
                            f"{type(append_info).__name__}")
        info = {name: 0 for name in _APPEND_INFO_NAMES if name in append_info}
        dicts = [element for element in append_info if isinstance(element, dict)]
        for element in append_info:
            if isinstance(element, str) and element not in _APPEND_INFO_NAMES:
                raise ValueError(f"CheckpointConfig: the strs in 'append_info' must be in "
                                 f"{list(_APPEND_INFO_NAMES)}, got {element!r}")
            if not isinstance(element, (str, dict)):
                raise TypeError(f"CheckpointConfig: 'append_info' holds strs and one dict, got "
                                f"{type(element).__name__}")
        if len(dicts) > 1:
            raise TypeError(f"CheckpointConfig: 'append_info' may hold one dict, got {len(dicts)}")
        for key, value in (dicts[0] if dicts else {}).items():
            if not isinstance(key, str) or not isinstance(value, (int, float, bool, str, Tensor)):
                raise TypeError(f"CheckpointConfig: the dict in 'append_info' maps str keys to "
                                f"int, float, bool, str or Tensor values, got "
                                f"{type(key).__name__} -> {type(value).__name__}")
            info[key] = value
        return info


def _prefix_not_taken(directory, prefix):
    """`prefix`, or prefix_N with N one more than the largest suffix of a checkpoint file in
    `directory` that already uses the prefix."""
    suffix = 0
    for filename in os.listdir(directory):
        if not filename.endswith(".ckpt") or filename.endswith("_breakpoint.ckpt"):
            continue
        if not filename.startswith(prefix) or len(filename) <= len(prefix) \
                or filename[len(prefix)].isalpha():
            continue
        rest = filename[len(prefix):]
        dash = rest.find("-")
        if dash == 0:
            suffix = max(suffix, 1)
        elif dash > 0 and rest[1:dash].isdigit():
            suffix = max(suffix, int(rest[1:dash]) + 1)
    return f"{prefix}_{suffix}" if suffix else prefix


class _CheckpointFiles:
    """The checkpoint files of one prefix in a directory, oldest first."""

    def __init__(self, directory, prefix):
        self.directory, self.prefix = directory, prefix
        self._saved_order = []  # the files this run wrote, to order files with equal mtimes

    def listing(self):
        files = []
        for filename in os.listdir(self.directory):
            middle = filename[len(self.prefix):-len(".ckpt")]
            if filename.endswith(".ckpt") and filename.startswith(self.prefix + "-") \
                    and not any(c.isalpha() for c in middle):
                files.append(os.path.join(self.directory, filename))

        def age(path):
            order = self._saved_order.index(path) if path in self._saved_order else -1
            return os.stat(path).st_mtime_ns, order
        return sorted(files, key=age)

    def saved(self, path):
        if path in self._saved_order:
            self._saved_order.remove(path)
        self._saved_order.append(path)

    def remove(self, path):
        try:
            os.remove(path)
        except OSError:
            pass
        if path in self._saved_order:
            self._saved_order.remove(path)

    def keep_one_per_minutes(self, minutes, now):
        """Of the files written in the last `minutes`, keeps only the oldest."""
        recent = [f for f in self.listing() if now - os.path.getmtime(f) < 60 * minutes]
        for path in recent[1:]:
            self.remove(path)


class ModelCheckpoint(Callback):
    """Saves the training network's parameters (with the optimizer's state) during training, by
    `config` (a CheckpointConfig), in `directory` (default: the current directory, created if
    missing), as "<prefix>-<epoch>_<step>.ckpt"; and once more at the end of training when the
    last step was not saved."""

    def __init__(self, prefix="CKP", directory=None, config=None):
        super().__init__()
        if not isinstance(prefix, str) or "/" in prefix:
            raise ValueError(f"ModelCheckpoint: 'prefix' must be a str without '/', got "
                             f"{prefix!r}")
        if directory is not None and not isinstance(directory, str):
            raise ValueError(f"ModelCheckpoint: 'directory' must be a str, got "
                             f"{type(directory).__name__}")
        if config is None:
            config = CheckpointConfig()
        elif not isinstance(config, CheckpointConfig):
            raise TypeError(f"ModelCheckpoint: 'config' must be a CheckpointConfig, got "
                            f"{type(config).__name__}")
        self._config = config
        self._directory = os.path.realpath(directory if directory is not None else os.getcwd())
        os.makedirs(self._directory, exist_ok=True)
        self._prefix = _prefix_not_taken(self._directory, prefix)
        self._files = _CheckpointFiles(self._directory, self._prefix)
        self._append_dict = dict(config.append_dict or {})
        self._append_epoch_num = self._append_dict.get("epoch_num", 0)
        self._append_step_num = self._append_dict.get("step_num", 0)
        self._last_triggered_step = 0
        self._last_time = time.time()
        self._last_time_for_keep = time.time()
        self._latest_ckpt_file_name = ""

    @property
    def latest_ckpt_file_name(self):
        return self._latest_ckpt_file_name

    def on_train_begin(self, run_context):
        self._last_triggered_step = 0

    def step_end(self, run_context):
        self._save_ckpt(run_context.original_args())

    def end(self, run_context):
        self._save_ckpt(run_context.original_args(), force_to_save=True)

    def _should_save(self, cb_params, force_to_save):
        config = self._config
        if config.save_checkpoint_steps:
            due = self._last_triggered_step + config.save_checkpoint_steps
            return force_to_save or cb_params["cur_step_num"] >= due
        if config.save_checkpoint_seconds:
            now = time.time()
            if force_to_save or now - self._last_time > config.save_checkpoint_seconds:
                self._last_time = now
                return True
        return False

    def _save_ckpt(self, cb_params, force_to_save=False):
        if cb_params.get("mode", "train") != "train":
            return
        step = cb_params["cur_step_num"]
        if step == self._last_triggered_step or not self._should_save(cb_params, force_to_save):
            return
        if _is_data_parallel_rank_other_than_0():
            return  # data-parallel ranks hold the same weights: rank 0 writes them
        config = self._config
        files = self._files.listing()
        if config.keep_checkpoint_max and 0 < config.keep_checkpoint_max <= len(files):
            for path in files[:len(files) - config.keep_checkpoint_max + 1]:
                self._files.remove(path)
        elif config.keep_checkpoint_per_n_minutes:
            now = time.time()
            if now - self._last_time_for_keep < config.keep_checkpoint_per_n_minutes * 60:
                self._files.keep_one_per_minutes(config.keep_checkpoint_per_n_minutes, now)
        step_in_epoch = (step - 1) % cb_params["batch_num"] + 1
        path = os.path.join(self._directory,
                            f"{self._prefix}-{cb_params['cur_epoch_num']}_{step_in_epoch}.ckpt")
        self._last_time_for_keep = time.time()
        self._last_triggered_step = step
        if "epoch_num" in self._append_dict:
            self._append_dict["epoch_num"] = self._append_epoch_num + cb_params["cur_epoch_num"]
        if "step_num" in self._append_dict:
            self._append_dict["step_num"] = self._append_step_num + step
        network = config.saved_network if config.saved_network is not None \
            else cb_params["train_network"]
        save_checkpoint(network, path, config.integrated_save, config.async_save,
                        self._append_dict or None)
        self._files.saved(path)
        self._latest_ckpt_file_name = path


def _is_data_parallel_rank_other_than_0():
    from pijit import _C
    from pijit.parallel_context import ParallelMode, get_auto_parallel_context
    return (get_auto_parallel_context("parallel_mode") == ParallelMode.DATA_PARALLEL
            and _C.comm.initialized() and _C.comm.world_rank() != 0)
