"""Losses: MSELoss, L1Loss and SoftmaxCrossEntropyWithLogits."""
from pijit import ops
from pijit.nn.cell import Cell

_REDUCTIONS = ("mean", "sum", "none")


class LossBase(Cell):
    """A loss with reduction 'mean', 'sum' or 'none' over every element."""

    def __init__(self, reduction="mean"):
        super().__init__()
        if reduction not in _REDUCTIONS:
            raise ValueError(f"{type(self).__name__}: reduction must be one of {_REDUCTIONS}, "
                             f"got {reduction!r}")
        self.reduction = reduction

    def get_loss(self, x):
        if self.reduction == "mean":
            return ops.mean(x)
        if self.reduction == "sum":
            return ops.sum(x)
        return x

    def extend_repr(self):
        return f"reduction={self.reduction}"


class MSELoss(LossBase):
    """(logits - labels) ** 2, reduced."""

    def construct(self, logits, labels):
        diff = logits - labels
        return self.get_loss(diff * diff)


class L1Loss(LossBase):
    """|logits - labels|, reduced."""

    def construct(self, logits, labels):
        return self.get_loss(ops.abs(logits - labels))


class SoftmaxCrossEntropyWithLogits(LossBase):
    """-sum(labels * log_softmax(logits), -1) per example, then reduced (default 'none').
    sparse=True takes integer class indices as labels. log_softmax keeps it stable for large
    logits."""

    def __init__(self, sparse=False, reduction="none"):
        super().__init__(reduction)
        self.sparse = sparse

    def construct(self, logits, labels):
        if self.sparse:
            labels = ops.one_hot(labels, logits.shape[-1], 1.0, 0.0, dtype=logits.dtype)
        loss = -ops.sum(labels * ops.log_softmax(logits, -1), -1)
        return self.get_loss(loss)

    def extend_repr(self):
        return f"sparse={self.sparse}, reduction={self.reduction}"
