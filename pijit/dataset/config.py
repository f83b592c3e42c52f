"""Dataset pipeline settings (MindSpore's mindspore.dataset.config): the seed of shuffles and
random transforms, and the worker and prefetch settings. The pipeline runs in the calling
thread unless map or GeneratorDataset is given num_parallel_workers > 1 (the default number
here is kept for scripts that read it); the prefetch size bounds how many rows worker
threads compute ahead."""
import random

import numpy as np

__all__ = ["set_seed", "get_seed", "set_num_parallel_workers", "get_num_parallel_workers",
           "set_prefetch_size", "get_prefetch_size"]

_UINT32_MAX = 4294967295
_DEFAULT_SEED = 5489  # std::mt19937's default seed, which MindSpore reports before set_seed

_state = {"seed": None, "num_parallel_workers": 8, "prefetch_size": 16,
          # A data-parallel job's shared entropy (pijit.communication.init) and how many
          # pipeline seeds were drawn from it: without set_seed, every rank draws the same seeds
          # in the same order, so sharded shuffles split one order between the ranks.
          "job_entropy": None, "job_draws": 0}


def _check_int(function, name, value, low, high):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{function}: '{name}' must be an int, got {type(value).__name__}")
    if not low <= value <= high:
        raise ValueError(f"{function}: '{name}' must be in [{low}, {high}], got {value}")
    return value


def set_seed(seed):
    """Seeds the dataset pipeline's shuffles (and Python's random and numpy.random, as
    MindSpore does): after set_seed, the same pipeline yields the same order on every run."""
    _state["seed"] = _check_int("set_seed", "seed", seed, 0, _UINT32_MAX)
    random.seed(seed)
    np.random.seed(seed)


def get_seed():
    """The seed set by set_seed, or MindSpore's default 5489 when none was set."""
    return _DEFAULT_SEED if _state["seed"] is None else _state["seed"]


def pipeline_seed():
    """The seed a new iterator's shuffles start from: the set seed, or a fresh random one (each
    iterator then shuffles differently, as without a seed in MindSpore)."""
    if _state["seed"] is None and _state["job_entropy"] is not None:
        _state["job_draws"] += 1
        key = np.random.SeedSequence([_state["job_entropy"], _state["job_draws"]])
        return int(key.generate_state(1)[0])
    if _state["seed"] is None:
        return int(np.random.SeedSequence().entropy % (_UINT32_MAX + 1))
    return _state["seed"]


def _share_job_entropy(entropy):
    """Called by pijit.communication.init on every rank with rank 0's entropy."""
    _state["job_entropy"] = int(entropy)
    _state["job_draws"] = 0


def set_num_parallel_workers(num):
    _state["num_parallel_workers"] = _check_int("set_num_parallel_workers", "num", num, 1, 65535)


def get_num_parallel_workers():
    return _state["num_parallel_workers"]


def set_prefetch_size(size):
    _state["prefetch_size"] = _check_int("set_prefetch_size", "size", size, 1, 2147483647)


def get_prefetch_size():
    return _state["prefetch_size"]
