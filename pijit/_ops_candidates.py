"""Random choices read on the host: candidate sampling for sampled softmax and negative sampling
(uniform_candidate_sampler, log_uniform_candidate_sampler, their primitives,
ComputeAccidentalHits) and choice_with_mask (RandomChoiceWithMask).

The draws come from pijit's generator (pijit.set_seed, or the op's own seed), read on the host:
with unique=True the classes are drawn until num_sampled distinct ones are found, and the number
of draws that took enters the expected counts as it does in MindSpore (and TensorFlow, whose
kernels MindSpore's follow): with p a class's probability under one draw, a class's expected
count is num_sampled * p for sampling with replacement and 1 - (1 - p)^tries for unique
sampling."""
import math

import numpy as np

from pijit import _C
from pijit._tensor import Tensor, bool_, float32, int32, int64
from pijit.mint._checks import check_bool, check_tensor, raise_error
from pijit.ops import Primitive

_ops = _C.ops

_DRAW_BATCH = 256


def _check_int(fname, name, value, low):
    if isinstance(value, bool) or not isinstance(value, int):
        raise_error(TypeError, f"{fname}: {name} must be an int, got {type(value).__name__}")
    if value < low:
        raise_error(ValueError, f"{fname}: {name} must be at least {low}, got {value}")


def _check_sampler(fname, true_classes, num_true, num_sampled, unique, range_max, seed,
                   remove_accidental_hits):
    check_tensor(fname, "true_classes", true_classes)
    _check_int(fname, "num_true", num_true, 1)
    _check_int(fname, "num_sampled", num_sampled, 1)
    _check_int(fname, "range_max", range_max, 1)
    _check_int(fname, "seed", seed, 0)
    check_bool(fname, "unique", unique)
    check_bool(fname, "remove_accidental_hits", remove_accidental_hits)
    if true_classes.dtype not in (int32, int64):
        raise_error(TypeError, f"{fname}: true_classes must be Int32 or Int64, got "
                               f"{true_classes.dtype}")
    if true_classes.ndim != 2 or true_classes.shape[1] != num_true:
        raise_error(ValueError, f"{fname}: true_classes must be (batch_size, num_true="
                                f"{num_true}), got {tuple(true_classes.shape)}")
    classes = true_classes.asnumpy()
    if classes.size and (classes.min() < 0 or classes.max() >= range_max):
        raise_error(ValueError, f"{fname}: true_classes must lie in [0, {range_max}), got "
                                f"values from {classes.min()} to {classes.max()}")
    excluded = set(classes.reshape(-1).tolist()) if remove_accidental_hits else set()
    if unique and num_sampled > range_max - len(excluded):
        raise_error(ValueError, f"{fname}: with unique=True num_sampled ({num_sampled}) must "
                                f"not exceed the {range_max - len(excluded)} classes that can "
                                f"be drawn")
    return classes, excluded


def _draw(to_class, num_sampled, unique, excluded, seed):
    """num_sampled classes (each to_class(u) for a uniform u) and the number of draws made."""
    picked, seen, tries, batch = [], set(), 0, 0
    while len(picked) < num_sampled:
        # A seeded draw repeats for the same seed, so each further batch gets its own seed
        # derived from the op's; without one the global generator advances by itself.
        kwargs = {"seed": (seed * 1000003 + batch) % (2 ** 31 - 1) or 1} if seed else {}
        u = _ops.uniform((_DRAW_BATCH,), 0.0, 1.0, dtype=float32, **kwargs).asnumpy()
        batch += 1
        for value in to_class(u.astype(np.float64)).tolist():
            if len(picked) == num_sampled:
                break
            tries += 1
            if value in excluded or (unique and value in seen):
                continue
            seen.add(value)
            picked.append(value)
    return np.array(picked, dtype=np.int64), tries


def _expected(p, num_sampled, unique, tries):
    if unique:
        return -np.expm1(tries * np.log1p(-np.minimum(p, 1.0 - 1e-12)))
    return num_sampled * p


def _sample(fname, probability, to_class, true_classes, num_true, num_sampled, unique,
            range_max, seed, remove_accidental_hits):
    classes, excluded = _check_sampler(fname, true_classes, num_true, num_sampled, unique,
                                       range_max, seed, remove_accidental_hits)
    sampled, tries = _draw(to_class, num_sampled, unique, excluded, seed)
    true_count = _expected(probability(classes.astype(np.float64)), num_sampled, unique, tries)
    sampled_count = _expected(probability(sampled.astype(np.float64)), num_sampled, unique,
                              tries)
    return (Tensor(sampled.astype(classes.dtype)), Tensor(true_count.astype(np.float32)),
            Tensor(sampled_count.astype(np.float32)))


def uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max, seed=0,
                              remove_accidental_hits=False):
    """(sampled_candidates (num_sampled,), true_expected_count (batch, num_true),
    sampled_expected_count (num_sampled,)): classes drawn uniformly from [0, range_max), without
    repeats when unique, none equal to a true class when remove_accidental_hits."""
    return _sample("uniform_candidate_sampler",
                   lambda c: np.full(c.shape, 1.0 / range_max),
                   lambda u: np.minimum((u * range_max).astype(np.int64), range_max - 1),
                   true_classes, num_true, num_sampled, unique, range_max, seed,
                   remove_accidental_hits)


def log_uniform_candidate_sampler(true_classes, num_true=1, num_sampled=5, unique=True,
                                  range_max=5, seed=0):
    """As uniform_candidate_sampler, drawn from the log-uniform (Zipfian) distribution
    P(c) = (log(c + 2) - log(c + 1)) / log(range_max + 1), which favours small class ids
    (classes sorted by decreasing frequency)."""
    log_range = math.log(range_max + 1)
    return _sample("log_uniform_candidate_sampler",
                   lambda c: (np.log(c + 2) - np.log(c + 1)) / log_range,
                   lambda u: np.minimum(np.floor(np.exp(u * log_range)).astype(np.int64) - 1,
                                        range_max - 1),
                   true_classes, num_true, num_sampled, unique, range_max, seed, False)


class UniformCandidateSampler(Primitive):
    """UniformCandidateSampler(num_true, num_sampled, unique, range_max, seed=0,
    remove_accidental_hits=False)(true_classes): as ops.uniform_candidate_sampler."""

    def __init__(self, num_true, num_sampled, unique, range_max, seed=0,
                 remove_accidental_hits=False):
        super().__init__(num_true=num_true, num_sampled=num_sampled, unique=unique,
                         range_max=range_max, seed=seed,
                         remove_accidental_hits=remove_accidental_hits)

    def __call__(self, true_classes):
        return uniform_candidate_sampler(true_classes, self.num_true, self.num_sampled,
                                         self.unique, self.range_max, self.seed,
                                         self.remove_accidental_hits)


class LogUniformCandidateSampler(Primitive):
    """LogUniformCandidateSampler(num_true=1, num_sampled=5, unique=True, range_max=5,
    seed=0)(true_classes): as ops.log_uniform_candidate_sampler."""

    def __init__(self, num_true=1, num_sampled=5, unique=True, range_max=5, seed=0):
        super().__init__(num_true=num_true, num_sampled=num_sampled, unique=unique,
                         range_max=range_max, seed=seed)

    def __call__(self, true_classes):
        return log_uniform_candidate_sampler(true_classes, self.num_true, self.num_sampled,
                                             self.unique, self.range_max, self.seed)


class ComputeAccidentalHits(Primitive):
    """ComputeAccidentalHits(num_true=1)(true_classes, sampled_candidates): where a sampled
    candidate equals one of a row's true classes, (indices: the row, ids: the candidate's
    position, weights: -FLOAT32_MAX), so that adding the weights to those logits removes
    the hits from a sampled softmax."""

    def __init__(self, num_true=1):
        _check_int("ComputeAccidentalHits", "num_true", num_true, 1)
        super().__init__(num_true=num_true)

    def __call__(self, true_classes, sampled_candidates):
        fname = "ComputeAccidentalHits"
        check_tensor(fname, "true_classes", true_classes)
        check_tensor(fname, "sampled_candidates", sampled_candidates)
        if true_classes.ndim != 2 or true_classes.shape[1] != self.num_true:
            raise_error(ValueError, f"{fname}: true_classes must be (batch_size, num_true="
                                    f"{self.num_true}), got {tuple(true_classes.shape)}")
        if sampled_candidates.ndim != 1:
            raise_error(ValueError, f"{fname}: sampled_candidates must be 1-D, got "
                                    f"{tuple(sampled_candidates.shape)}")
        classes, sampled = true_classes.asnumpy(), sampled_candidates.asnumpy()
        rows, ids = np.nonzero((classes[:, :, None] == sampled[None, None, :]).any(axis=1))
        weights = np.full(rows.shape, -np.finfo(np.float32).max, dtype=np.float32)
        return (Tensor(rows.astype(np.int32)), Tensor(ids.astype(classes.dtype)),
                Tensor(weights))


def choice_with_mask(input_x, count=256, seed=0, seed2=0):
    """(index (count, rank) Int32, mask (count,) Bool): the coordinates of up to `count` True
    elements of the Bool input_x, chosen at random without repeats and in random order; when
    it has fewer, the rest of index is zeros and their mask False."""
    fname = "choice_with_mask"
    check_tensor(fname, "input_x", input_x)
    _check_int(fname, "count", count, 1)
    _check_int(fname, "seed", seed, 0)
    _check_int(fname, "seed2", seed2, 0)
    if input_x.dtype != bool_:
        raise_error(TypeError, f"{fname}: input_x must be a Bool Tensor, got {input_x.dtype}")
    if not 1 <= input_x.ndim <= 5:
        raise_error(ValueError, f"{fname}: input_x must have 1 to 5 dimensions, got "
                                f"{input_x.ndim}")
    found = np.argwhere(input_x.asnumpy())
    index = np.zeros((count, input_x.ndim), dtype=np.int32)
    mask = np.zeros((count,), dtype=np.bool_)
    if len(found):
        mixed = seed * 1000003 + seed2
        kwargs = {"seed": mixed % (2 ** 31 - 1) or 1} if mixed else {}
        keys = _ops.uniform((len(found),), 0.0, 1.0, dtype=float32, **kwargs).asnumpy()
        chosen = found[np.argsort(keys, kind="stable")[:count]]
        index[:len(chosen)] = chosen
        mask[:len(chosen)] = True
    return Tensor(index), Tensor(mask)


class RandomChoiceWithMask(Primitive):
    """RandomChoiceWithMask(count=256, seed=0, seed2=0)(input_x): as ops.choice_with_mask."""

    def __init__(self, count=256, seed=0, seed2=0):
        super().__init__(count=count, seed=seed, seed2=seed2)

    def __call__(self, input_x):
        return choice_with_mask(input_x, self.count, self.seed, self.seed2)


__all__ = ["ComputeAccidentalHits", "RandomChoiceWithMask", "choice_with_mask", "LogUniformCandidateSampler", "UniformCandidateSampler",
           "log_uniform_candidate_sampler", "uniform_candidate_sampler"]
