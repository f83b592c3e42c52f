"""mint.nn's layers: Cells whose construct calls mint.nn.functional, with torch's
constructor arguments."""
from pijit.mint._checks import check_choice
from pijit.mint.nn import functional as F
from pijit.nn.cell import Cell


class Dropout(Cell):
    """Zeroes each element with probability p and scales the rest by 1 / (1 - p) in training
    mode; the identity in evaluation mode."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must be a number in [0, 1], got {p!r}")
        self.p = float(p)

    def construct(self, input):  # noqa: A002 - mint's name
        return F.dropout(input, self.p, self.training)

    def extend_repr(self):
        return f"p={self.p}"


class Fold(Cell):
    """Columns (N, C * kh * kw, L) summed back into an (N, C, *output_size) image."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def construct(self, input):  # noqa: A002
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)


class Unfold(Cell):
    """An (N, C, H, W) image's sliding windows as columns (N, C * kh * kw, L)."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def construct(self, input):  # noqa: A002
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)


class BCEWithLogitsLoss(Cell):
    """binary_cross_entropy_with_logits(input, target) with a fixed weight, pos_weight and
    reduction."""

    def __init__(self, weight=None, reduction="mean", pos_weight=None):
        super().__init__()
        check_choice("BCEWithLogitsLoss", "reduction", reduction, ("none", "mean", "sum"))
        self.weight, self.pos_weight, self.reduction = weight, pos_weight, reduction

    def construct(self, input, target):  # noqa: A002
        return F.binary_cross_entropy_with_logits(input, target, self.weight, self.reduction,
                                                  self.pos_weight)
