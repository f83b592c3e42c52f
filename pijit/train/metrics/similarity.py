"""CosineSimilarity (MindSpore's mindspore.train): the pairwise similarity matrix of the rows
of one input matrix."""
import numpy as np

from pijit.train.metrics._args import check_bool, check_choice, require_update
from pijit.train.metrics.metric import Metric, rearrange_inputs

__all__ = ["CosineSimilarity"]


class CosineSimilarity(Metric):
    """The [N, N] matrix of row similarities of an [N, D] input: dot products, or ('cosine')
    dot products of the rows scaled to unit length. zero_diagonal sets each row's similarity to
    itself to 0; reduction 'sum' or 'mean' reduces the matrix along its last axis. Each update
    replaces the previous input, as in MindSpore."""

    def __init__(self, similarity="cosine", reduction="none", zero_diagonal=True):
        super().__init__()
        self.similarity = check_choice("CosineSimilarity", "similarity", similarity,
                                       ("dot", "cosine"))
        self.reduction = check_choice("CosineSimilarity", "reduction", reduction,
                                      ("none", "sum", "mean"))
        self.zero_diagonal = check_bool("CosineSimilarity", "zero_diagonal", zero_diagonal)
        self.clear()

    def clear(self):
        self.sqr_mtx_res = None
        self._is_update = False

    @rearrange_inputs
    def update(self, inputs):
        data = self._convert_data(inputs)
        if data.ndim != 2:
            raise ValueError(f"For 'CosineSimilarity.update', the input must be a matrix "
                             f"[N, D], got shape {data.shape}")
        data = data.astype(np.float64) if data.dtype == bool else data
        if self.similarity == "cosine":
            norms = np.linalg.norm(data, ord=2, axis=1, keepdims=True)
            with np.errstate(invalid="ignore", divide="ignore"):
                data = data / norms
        self.sqr_mtx_res = data @ data.T
        self._is_update = True

    def eval(self):
        """The similarity matrix [N, N], or its row sums or means [N], as an ndarray."""
        require_update("CosineSimilarity", self._is_update)
        result = self.sqr_mtx_res.copy()
        if self.zero_diagonal:
            np.fill_diagonal(result, 0)
        if self.reduction == "mean":
            return result.mean(axis=-1)
        if self.reduction == "sum":
            return result.sum(axis=-1)
        return result
