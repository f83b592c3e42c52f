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
             "device_num": 1, "global_rank": 0, "parameter_broadcast": False}
_context = dict(_DEFAULTS)
# Keys MindSpore accepts that change nothing in data-parallel training on CPUs.
_ACCEPTED_IGNORED = ("gradient_fp32_sync", "loss_repeated_mean", "enable_parallel_optimizer",
                     "all_reduce_fusion_config", "comm_fusion", "search_mode", "strategy_ckpt_config",
                     "dataset_strategy", "full_batch", "auto_parallel_search_mode")


def set_auto_parallel_context(**kwargs):
    """Sets parallel_mode (ParallelMode.STAND_ALONE or DATA_PARALLEL), gradients_mean (divide
    the all-reduced gradients by the number of ranks), device_num (the data-parallel degree;
    1..the world's size), global_rank and parameter_broadcast."""
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
        elif key not in _ACCEPTED_IGNORED:
            raise ValueError(f"set_auto_parallel_context: unknown key {key!r}; pijit knows "
                             f"{sorted(set(_DEFAULTS) | set(_ACCEPTED_IGNORED))}")
        _context[key] = value


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
