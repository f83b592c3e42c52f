"""mint.nn: torch-style layers (Dropout, Fold, Unfold, BCEWithLogitsLoss) over
mint.nn.functional; mint.nn.functional holds the functions."""
from pijit.mint.nn import functional
from pijit.mint.nn.layers import BCEWithLogitsLoss, Dropout, Fold, Unfold

__all__ = ["functional", "BCEWithLogitsLoss", "Dropout", "Fold", "Unfold"]
