"""Loss Cells with MindSpore 2.x's `mindspore.nn` constructors: CrossEntropyLoss, NLLLoss,
BCELoss, BCEWithLogitsLoss, SmoothL1Loss, HuberLoss, KLDivLoss, SoftMarginLoss and
MarginRankingLoss. Each construct calls the function of pijit/_ops_loss.py with the settings
given at construction, which are checked there and then so that a bad one fails where the
Cell is made rather than at its first call."""
from pijit import _ops_loss as F
from pijit.nn.loss import LossBase

__all__ = ["CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "SmoothL1Loss",
           "HuberLoss", "KLDivLoss", "SoftMarginLoss", "MarginRankingLoss"]


def _optional_float_tensor(cls, name, value):
    if value is not None:
        F._check_float_tensor(cls, name, value)
    return value


class CrossEntropyLoss(LossBase):
    """ops.cross_entropy(logits, labels, weight, ignore_index, reduction, label_smoothing):
    labels are class indices (an integer dtype) or class probabilities (logits' shape)."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__(reduction)
        name = type(self).__name__
        self.weight = _optional_float_tensor(name, "weight", weight)
        self.ignore_index = F._check_ignore_index(name, ignore_index)
        self.label_smoothing = F._check_label_smoothing(name, label_smoothing)

    def construct(self, logits, labels):
        return F.cross_entropy(logits, labels, self.weight, self.ignore_index, self.reduction,
                               self.label_smoothing)

    def extend_repr(self):
        return (f"ignore_index={self.ignore_index}, reduction={self.reduction}, "
                f"label_smoothing={self.label_smoothing}")


class NLLLoss(LossBase):
    """ops.nll_loss(logits, labels, weight, ignore_index, reduction): logits are
    log-probabilities over axis 1, labels integer class indices."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean"):
        super().__init__(reduction)
        name = type(self).__name__
        self.weight = _optional_float_tensor(name, "weight", weight)
        self.ignore_index = F._check_ignore_index(name, ignore_index)

    def construct(self, logits, labels):
        return F.nll_loss(logits, labels, self.weight, self.ignore_index, self.reduction)

    def extend_repr(self):
        return f"ignore_index={self.ignore_index}, reduction={self.reduction}"


class BCELoss(LossBase):
    """ops.binary_cross_entropy(logits, labels, weight, reduction): logits are
    probabilities; weight rescales each element."""

    def __init__(self, weight=None, reduction="mean"):
        super().__init__(reduction)
        self.weight = _optional_float_tensor(type(self).__name__, "weight", weight)

    def construct(self, logits, labels):
        return F.binary_cross_entropy(logits, labels, self.weight, self.reduction)


class BCEWithLogitsLoss(LossBase):
    """ops.binary_cross_entropy_with_logits(logits, labels, weight, pos_weight, reduction):
    sigmoid and binary cross entropy in one numerically stable step. MindSpore puts
    reduction first here."""

    def __init__(self, reduction="mean", weight=None, pos_weight=None):
        super().__init__(reduction)
        name = type(self).__name__
        self.weight = _optional_float_tensor(name, "weight", weight)
        self.pos_weight = _optional_float_tensor(name, "pos_weight", pos_weight)

    def construct(self, logits, labels):
        return F.binary_cross_entropy_with_logits(logits, labels, self.weight, self.pos_weight,
                                                  self.reduction)


class SmoothL1Loss(LossBase):
    """ops.smooth_l1_loss(logits, labels, beta, reduction): quadratic below beta, linear
    above. Unreduced ('none') by default, as MindSpore's."""

    def __init__(self, beta=1.0, reduction="none"):
        super().__init__(reduction)
        self.beta = F._check_positive(type(self).__name__, "beta", beta)

    def construct(self, logits, labels):
        return F.smooth_l1_loss(logits, labels, self.beta, self.reduction)

    def extend_repr(self):
        return f"beta={self.beta}, reduction={self.reduction}"


class HuberLoss(LossBase):
    """ops.huber_loss(logits, labels, reduction, delta): quadratic below delta, linear (of
    slope delta) above."""

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction)
        self.delta = F._check_positive(type(self).__name__, "delta", delta)

    def construct(self, logits, labels):
        return F.huber_loss(logits, labels, self.reduction, self.delta)

    def extend_repr(self):
        return f"reduction={self.reduction}, delta={self.delta}"


class KLDivLoss(LossBase):
    """ops.kl_div(logits, labels, reduction): logits are log-probabilities; reduction may
    also be 'batchmean', the sum divided by the batch size."""

    def __init__(self, reduction="mean"):
        F._check_reduction(type(self).__name__, reduction, F._KL_REDUCTIONS)
        # LossBase knows only 'mean', 'sum' and 'none'; kl_div applies the reduction itself.
        super().__init__("none")
        self.reduction = reduction

    def construct(self, logits, labels):
        return F.kl_div(logits, labels, self.reduction)


class SoftMarginLoss(LossBase):
    """ops.soft_margin_loss(logits, labels, reduction): log(1 + exp(-labels * logits)) for
    labels of 1 or -1."""

    def construct(self, logits, labels):
        return F.soft_margin_loss(logits, labels, self.reduction)


class MarginRankingLoss(LossBase):
    """ops.margin_ranking_loss(input1, input2, target, margin, reduction):
    max(0, -target * (input1 - input2) + margin)."""

    def __init__(self, margin=0.0, reduction="mean"):
        super().__init__(reduction)
        self.margin = F._check_number(type(self).__name__, "margin", margin)

    def construct(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, self.margin, self.reduction)

    def extend_repr(self):
        return f"margin={self.margin}, reduction={self.reduction}"
