"""Language metrics (MindSpore's mindspore.train): BleuScore of translations against references,
and Perplexity of predicted word probabilities."""
import math
from collections import Counter

import numpy as np

from pijit.train.metrics._args import (check_bool, check_input_count, check_int,
                                       require_update)
from pijit.train.metrics.metric import Metric, TotalOverCount, rearrange_inputs

__all__ = ["BleuScore", "Perplexity"]


def _ngram_counts(words, max_n):
    """How often each n-gram (a tuple of 1 to max_n words) occurs in `words`."""
    counts = Counter()
    for n in range(1, max_n + 1):
        for start in range(len(words) - n + 1):
            counts[tuple(words[start:start + n])] += 1
    return counts


class BleuScore(Metric):
    """The corpus BLEU score: the geometric mean of the clipped n-gram precisions for n = 1 to
    n_gram, times the brevity penalty exp(1 - r / c) when the candidates' length c is not above
    the length r of the closest references. As in MindSpore, the score is 0 when some n has no
    matching n-gram, with or without `smooth` (which adds 1 to every precision's numerator and
    denominator)."""

    def __init__(self, n_gram=4, smooth=False):
        super().__init__()
        self.n_gram = check_int("BleuScore", "n_gram", n_gram, low=1, high=4)
        self.smooth = check_bool("BleuScore", "smooth", smooth)
        self.clear()

    def clear(self):
        self._numerator = np.zeros(self.n_gram)
        self._denominator = np.zeros(self.n_gram)
        self._candidate_len = 0.0
        self._reference_len = 0.0
        self._is_update = False

    @staticmethod
    def _check_corpus(candidate_corpus, reference_corpus):
        for name, corpus in (("candidate_corpus", candidate_corpus),
                             ("reference_corpus", reference_corpus)):
            if isinstance(corpus, str) or not hasattr(corpus, "__len__"):
                raise TypeError(f"For 'BleuScore.update', '{name}' must be a list, got "
                                f"{type(corpus).__name__}")
        if len(candidate_corpus) != len(reference_corpus):
            raise ValueError(f"For 'BleuScore.update', 'candidate_corpus' and 'reference_corpus' "
                             f"must have the same length, got {len(candidate_corpus)} and "
                             f"{len(reference_corpus)}")
        for references in reference_corpus:
            if isinstance(references, str) or len(references) == 0 or \
                    any(isinstance(reference, str) for reference in references):
                raise ValueError("For 'BleuScore.update', each entry of 'reference_corpus' must "
                                 "be a non-empty list of references, each a list of words")

    @rearrange_inputs
    def update(self, *inputs):
        check_input_count("BleuScore", inputs, ("candidate_corpus", "reference_corpus"))
        candidate_corpus, reference_corpus = inputs
        self._check_corpus(candidate_corpus, reference_corpus)
        for candidate, references in zip(candidate_corpus, reference_corpus):
            self._candidate_len += len(candidate)
            # The reference length closest to the candidate's, the first one on a tie.
            self._reference_len += min((len(ref) for ref in references),
                                       key=lambda length: abs(len(candidate) - length))
            candidate_counts = _ngram_counts(candidate, self.n_gram)
            reference_counts = Counter()
            for reference in references:
                reference_counts |= _ngram_counts(reference, self.n_gram)
            for ngram, count in (candidate_counts & reference_counts).items():
                self._numerator[len(ngram) - 1] += count
            for ngram, count in candidate_counts.items():
                self._denominator[len(ngram) - 1] += count
        self._is_update = True

    def eval(self):
        """The BLEU score, a numpy.float64 (a 0-d ndarray 0.0 when some n-gram order has no
        match, as MindSpore returns)."""
        require_update("BleuScore", self._is_update)
        if self._numerator.min() == 0.0:
            return np.array(0.0)
        if self.smooth:
            precisions = (self._numerator + 1.0) / (self._denominator + 1.0)
        else:
            precisions = self._numerator / self._denominator
        geometric_mean = np.exp(np.mean(np.log(precisions)))
        if self._candidate_len > self._reference_len:
            brevity_penalty = 1.0
        else:
            brevity_penalty = np.exp(1.0 - self._reference_len / self._candidate_len)
        return np.float64(brevity_penalty * geometric_mean)


class Perplexity(TotalOverCount):
    """exp of the mean negative log probability that the predictions give the labels.

    Update takes preds [..., C] (probabilities over C classes) and labels with one entry per
    row of preds; labels equal to `ignore_label` are left out. Probabilities are floored at
    1e-10 before the log."""

    def __init__(self, ignore_label=None):
        super().__init__()
        self.ignore_label = None if ignore_label is None else \
            check_int("Perplexity", "ignore_label", ignore_label)

    @rearrange_inputs
    def update(self, *inputs):
        check_input_count("Perplexity", inputs, ("predicted value", "label"))
        preds, labels = self._convert_data(inputs[0]), self._convert_data(inputs[1])
        if preds.ndim == 0 or labels.size * preds.shape[-1] != preds.size:
            raise RuntimeError(f"For 'Perplexity.update', the labels must have one entry per row "
                               f"of the predicted value, got predicted value shape "
                               f"{preds.shape} and label shape {labels.shape}")
        preds = preds.reshape(-1, preds.shape[-1])
        labels = labels.reshape(-1)
        class_indices = labels.astype(np.int64)
        kept = np.ones(labels.shape, bool) if self.ignore_label is None else \
            labels != self.ignore_label
        if np.any(kept & ((class_indices < 0) | (class_indices >= preds.shape[1]))):
            raise ValueError(f"For 'Perplexity.update', the labels must be class indices in "
                             f"[0, {preds.shape[1]}), got values from {labels.min()} to "
                             f"{labels.max()}")
        rows = np.flatnonzero(kept)
        probabilities = preds[rows, class_indices[rows]].astype(np.float64)
        self._total -= float(np.sum(np.log(np.maximum(1e-10, probabilities))))
        self._count += int(rows.size)

    def eval(self):
        """The perplexity, a float."""
        if self._count == 0:
            raise RuntimeError("The 'Perplexity' can not be calculated, because the number of "
                               "samples is 0; call update (with labels that are not all "
                               "ignored) before eval")
        return math.exp(self._total / self._count)
