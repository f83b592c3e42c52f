"""Sequence primitives: EditDistance (Levenshtein distances between sparse sequences) and
NoRepeatNGram (the n-gram blocking of beam search). The sequences are read on the host; for
NoRepeatNGram only the positions to block are, and the log-probabilities are masked by pijit
ops, so gradients reach them."""
import numpy as np

from pijit import _C
from pijit._tensor import Tensor, float16, float32, float64, int32, int64
from pijit.dtype import dtype_to_nptype
from pijit.mint._checks import check_bool, check_tensor, raise_error
from pijit.ops import Primitive

_ops = _C.ops


def _levenshtein(a, b):
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def _sequences(fname, which, indices, values, shape):
    """{batch position: the values in order of their last index}, and the dense shape."""
    idx = indices.asnumpy()
    vals = values.asnumpy()
    dims = shape.asnumpy()
    if idx.ndim != 2 or vals.ndim != 1 or dims.ndim != 1 or idx.shape != (len(vals), len(dims)):
        raise_error(ValueError, f"{fname}: {which}_indices must be (n, rank), {which}_values "
                                f"(n,) and {which}_shape (rank,), got {idx.shape}, "
                                f"{vals.shape}, {dims.shape}")
    if len(dims) < 2:
        raise_error(ValueError, f"{fname}: {which}_shape must have rank at least 2, got "
                                f"{len(dims)}")
    if len(idx) and ((idx < 0).any() or (idx >= dims).any()):
        raise_error(ValueError, f"{fname}: an index of {which}_indices is outside "
                                f"{which}_shape {dims.tolist()}")
    groups = {}
    for row, value in sorted(zip(map(tuple, idx.tolist()), vals.tolist())):
        groups.setdefault(row[:-1], []).append(value)
    return groups, dims


class EditDistance(Primitive):
    """EditDistance(normalize=True)(hypothesis_indices, hypothesis_values, hypothesis_shape,
    truth_indices, truth_values, truth_shape): the Levenshtein distance between the sparse
    sequences at each position of the leading axes (the larger of the two shapes there),
    divided by the truth's length when normalize (infinity for an empty truth and a non-empty
    hypothesis, as MindSpore and TensorFlow). Float32."""

    def __init__(self, normalize=True):
        check_bool("EditDistance", "normalize", normalize)
        super().__init__(normalize=normalize)

    def __call__(self, hypothesis_indices, hypothesis_values, hypothesis_shape, truth_indices,
                 truth_values, truth_shape):
        fname = "EditDistance"
        for name, t in (("hypothesis_indices", hypothesis_indices),
                        ("hypothesis_values", hypothesis_values),
                        ("hypothesis_shape", hypothesis_shape), ("truth_indices", truth_indices),
                        ("truth_values", truth_values), ("truth_shape", truth_shape)):
            check_tensor(fname, name, t)
        if hypothesis_values.dtype != truth_values.dtype:
            raise_error(TypeError, f"{fname}: hypothesis_values and truth_values must share a "
                                   f"dtype, got {hypothesis_values.dtype} and "
                                   f"{truth_values.dtype}")
        hyp, hyp_dims = _sequences(fname, "hypothesis", hypothesis_indices, hypothesis_values,
                                   hypothesis_shape)
        truth, truth_dims = _sequences(fname, "truth", truth_indices, truth_values, truth_shape)
        if len(hyp_dims) != len(truth_dims):
            raise_error(ValueError, f"{fname}: hypothesis and truth must have one rank, got "
                                    f"{len(hyp_dims)} and {len(truth_dims)}")
        out_shape = tuple(int(d) for d in np.maximum(hyp_dims[:-1], truth_dims[:-1]))
        out = np.zeros(out_shape, np.float32)
        for position in np.ndindex(*out_shape):
            h, t = hyp.get(position, []), truth.get(position, [])
            distance = _levenshtein(h, t)
            if self.normalize:
                distance = distance / len(t) if t else (np.inf if h else 0.0)
            out[position] = distance
        return Tensor(out)


class NoRepeatNGram(Primitive):
    """NoRepeatNGram(ngram_size=1)(state_seq (batch, beam, length) Int32, log_probs
    (batch, beam, vocab)): log_probs with -FLOAT_MAX at every token that would complete an
    n-gram already present in its sequence (the sequence's last ngram_size - 1 tokens followed
    by that token occur earlier)."""

    def __init__(self, ngram_size=1):
        if isinstance(ngram_size, bool) or not isinstance(ngram_size, int) or ngram_size < 1:
            raise_error(ValueError, f"NoRepeatNGram: ngram_size must be a positive int, got "
                                    f"{ngram_size!r}")
        super().__init__(ngram_size=ngram_size)

    def __call__(self, state_seq, log_probs):
        fname = "NoRepeatNGram"
        check_tensor(fname, "state_seq", state_seq)
        check_tensor(fname, "log_probs", log_probs)
        if state_seq.dtype not in (int32, int64) or \
                log_probs.dtype not in (float16, float32, float64):
            raise_error(TypeError, f"{fname}: state_seq must be Int32 and log_probs float, got "
                                   f"{state_seq.dtype} and {log_probs.dtype}")
        if state_seq.ndim != 3 or log_probs.ndim != 3 or \
                tuple(state_seq.shape[:2]) != tuple(log_probs.shape[:2]):
            raise_error(ValueError, f"{fname}: state_seq (batch, beam, length) and log_probs "
                                    f"(batch, beam, vocab) must agree, got "
                                    f"{tuple(state_seq.shape)} and {tuple(log_probs.shape)}")
        seqs = state_seq.asnumpy()
        vocab = log_probs.shape[2]
        n = self.ngram_size
        blocked = np.zeros(tuple(log_probs.shape), dtype=np.bool_)
        for b, beam in np.ndindex(*seqs.shape[:2]):
            seq = seqs[b, beam].tolist()
            if len(seq) < n:
                continue
            prefix = seq[len(seq) - n + 1:] if n > 1 else []
            for start in range(len(seq) - n + 1):
                if seq[start:start + n - 1] == prefix and 0 <= seq[start + n - 1] < vocab:
                    blocked[b, beam, seq[start + n - 1]] = True
        lowest = float(np.finfo(dtype_to_nptype(log_probs.dtype)).min)
        return _ops.where(Tensor(blocked), _ops.full_like(log_probs, lowest), log_probs)


__all__ = ["EditDistance", "NoRepeatNGram"]
