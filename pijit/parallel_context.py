"""MindSpore's auto-parallel context for data-parallel training: set_auto_parallel_context,
get_auto_parallel_context, reset_auto_parallel_context and ParallelMode. pijit runs the
STAND_ALONE and DATA_PARALLEL modes (each rank a full copy of the network, gradients
all-reduced over pijit.communication); the model-splitting modes raise a ValueError."""

__all__ = ["ParallelMode", "set_auto_parallel_context", "get_auto_parallel_context",
           "reset_auto_parallel_context"]


class ParallelMode:
    """MindSpore's parallel modes (names as MindSpore spells them)."""
    STAND_ALONE = "stand_alone"
    DATA_PARALLEL = "data_parallel"
    HYBRID_PARALLEL = "hybrid_parallel"
    SEMI_AUTO_PARALLEL = "semi_auto_parallel"
    AUTO_PARALLEL = "auto_parallel"


_SUPPORTED_MODES = (ParallelMode.STAND_ALONE, ParallelMode.DATA_PARALLEL)
_ALL_MODES = _SUPPORTED_MODES + (ParallelMode.HYBRID_PARALLEL, ParallelMode.SEMI_AUTO_PARALLEL,
                                 ParallelMode.AUTO_PARALLEL)
_DEFAULTS = {"parallel_mode": ParallelMode.STAND_ALONE, "gradients_mean": False,
             "device_num": 1, "global_rank": 0, "parameter_broadcast": False,
             "all_reduce_fusion_config": [], "comm_fusion": {}}
# The gradient buckets' size when nothing else is set (comm_fusion's "size" mode): small enough
# that a network of a few megabytes has several buckets, the first all-reduced while the
# backward pass still runs (MindSpore's default, 64 MB, suits accelerators' bandwidth).
DEFAULT_BUCKET_MB = 4
_context = dict(_DEFAULTS)
# Keys MindSpore accepts that change nothing in data-parallel training on CPUs.
_ACCEPTED_IGNORED = ("gradient_fp32_sync", "loss_repeated_mean", "enable_parallel_optimizer",
                     "search_mode", "strategy_ckpt_config",
                     "dataset_strategy", "full_batch", "auto_parallel_search_mode")


def set_auto_parallel_context(**kwargs):
    """Sets parallel_mode (ParallelMode.STAND_ALONE or DATA_PARALLEL), gradients_mean (divide
    the all-reduced gradients by the number of ranks), device_num (the data-parallel degree;
    1..the world's size), global_rank, parameter_broadcast (TrainOneStepCell gives every
    rank rank 0's parameters when it is made), and how gradients are bucketed
    for their all-reduce: all_reduce_fusion_config (parameter indices where buckets split) or
    comm_fusion={"allreduce": {"mode": "size", "config": MB}} ("index" mode: split indices;
    "auto" and the default: DEFAULT_BUCKET_MB; {"openstate": False}: no buckets)."""
    for key, value in kwargs.items():
        if key == "parallel_mode":
            if value not in _ALL_MODES:
                raise ValueError(f"set_auto_parallel_context: parallel_mode must be one of "
                                 f"{_ALL_MODES}, got {value!r}")
            if value not in _SUPPORTED_MODES:
                raise ValueError(f"set_auto_parallel_context: parallel_mode {value!r} splits the "
                                 f"model across devices, which pijit does not do; it runs "
                                 f"{_SUPPORTED_MODES}")
        elif key in ("gradients_mean", "parameter_broadcast"):
            if not isinstance(value, bool):
                raise TypeError(f"set_auto_parallel_context: {key} must be a bool, got "
                                f"{type(value).__name__}")
        elif key in ("device_num", "global_rank"):
            if isinstance(value, bool) or not isinstance(value, int) or value < (1 if key == "device_num" else 0):
                raise ValueError(f"set_auto_parallel_context: {key} must be an int >= "
                                 f"{1 if key == 'device_num' else 0}, got {value!r}")
        elif key == "all_reduce_fusion_config":
            _check_fusion_indices("all_reduce_fusion_config", value)
        elif key == "comm_fusion":
            _check_comm_fusion(value)
        elif key not in _ACCEPTED_IGNORED:
            raise ValueError(f"set_auto_parallel_context: unknown key {key!r}; pijit knows "
                             f"{sorted(set(_DEFAULTS) | set(_ACCEPTED_IGNORED))}")
        _context[key] = value


def _check_fusion_indices(name, value):
    if not isinstance(value, (list, tuple)) or any(
            isinstance(i, bool) or not isinstance(i, int) or i <= 0 for i in value) \
            or list(value) != sorted(set(value)):
        raise ValueError(f"set_auto_parallel_context: {name} must be increasing positive "
                         f"parameter indices (where gradient buckets split), got {value!r}")


def _check_comm_fusion(value):
    if not isinstance(value, dict):
        raise TypeError(f"set_auto_parallel_context: comm_fusion must be a dict, got "
                        f"{type(value).__name__}")
    for kind, config in value.items():
        if kind == "openstate":
            if not isinstance(config, bool):
                raise TypeError("set_auto_parallel_context: comm_fusion['openstate'] must be a bool")
            continue
        if kind not in ("allreduce", "allgather", "reducescatter"):
            raise ValueError(f"set_auto_parallel_context: comm_fusion has no key {kind!r}; it "
                             f"takes 'openstate', 'allreduce', 'allgather', 'reducescatter'")
        if not isinstance(config, dict) or config.get("mode", "auto") not in ("auto", "size", "index"):
            raise ValueError(f"set_auto_parallel_context: comm_fusion[{kind!r}] must be a dict "
                             f"with 'mode' 'auto', 'size' or 'index', got {config!r}")
        mode, arg = config.get("mode", "auto"), config.get("config")
        if mode == "size" and (isinstance(arg, bool) or not isinstance(arg, (int, float)) or arg <= 0):
            raise ValueError(f"set_auto_parallel_context: comm_fusion[{kind!r}] in 'size' mode "
                             f"needs 'config', a bucket size in MB > 0, got {arg!r}")
        if mode == "index":
            _check_fusion_indices(f"comm_fusion[{kind!r}]['config']", arg)


def _gradient_buckets():
    """How the gradient all-reduce is split: ("size", megabytes) or ("index", split indices)."""
    fusion = _context["comm_fusion"]
    if fusion.get("openstate", True) is False:
        return "size", 0  # fusion off: one all-reduce per gradient
    config = fusion.get("allreduce")
    if config is not None and config.get("mode", "auto") == "index":
        return "index", list(config["config"])
    if config is not None and config.get("mode") == "size":
        return "size", config["config"]
    if _context["all_reduce_fusion_config"]:
        return "index", list(_context["all_reduce_fusion_config"])
    return "size", DEFAULT_BUCKET_MB


def get_auto_parallel_context(key):
    if key not in _context and key not in _ACCEPTED_IGNORED:
        raise ValueError(f"get_auto_parallel_context: unknown key {key!r}")
    return _context.get(key)


def reset_auto_parallel_context():
    _context.clear()
    _context.update(_DEFAULTS)


def _data_parallel():
    """(whether gradients are all-reduced, gradients_mean, degree) for the cells that train."""
    if _context["parallel_mode"] != ParallelMode.DATA_PARALLEL:
        return False, False, 1
    from pijit import communication
    if not communication.GlobalComm.INITED:
        raise RuntimeError("parallel_mode DATA_PARALLEL needs pijit.communication.init() first")
    return True, _context["gradients_mean"], communication.get_group_size()
