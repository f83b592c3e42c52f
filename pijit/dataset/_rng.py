"""The random generator a random transform draws from.

Inside a pipeline, map gives each row its own generator, seeded by the pass (the iterator's
seed, the epoch, the repeat round), the node's depth and the row's position: a random
augmentation is then the same on every run after dataset.config.set_seed, differs from epoch
to epoch, and does not depend on how many worker threads run the map or in which order they
finish. The generator is made on the first draw, so rows without random transforms cost
nothing. Called outside a pipeline, a transform uses a generator of its own, seeded from the
pipeline seed when dataset.config.set_seed was called."""
import threading

import numpy as np

from pijit.dataset import config

__all__ = ["enter_row", "leave_row", "current", "own_generator"]

_local = threading.local()


def enter_row(key, depth):
    """Makes the generator of row `key` at node `depth` this thread's current one (while the
    row's transforms run); returns what leave_row restores."""
    previous = getattr(_local, "state", None)
    _local.state = [key, depth, None]
    return previous


def leave_row(previous):
    _local.state = previous


def own_generator():
    """A transform's own generator: from the pipeline seed when one was set, fresh otherwise."""
    return np.random.default_rng(config.pipeline_seed())


def current(fallback):
    """The row's generator inside a pipeline, `fallback` (the transform's own) outside."""
    state = getattr(_local, "state", None)
    if state is None:
        return fallback
    if state[2] is None:
        from pijit.dataset.datasets import rng_for
        state[2] = rng_for(state[0], state[1])
    return state[2]
