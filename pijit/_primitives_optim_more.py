"""More optimizer primitives of mindspore.ops: SGD, LARSUpdate, ApplyAdagradDA and the sparse
(row-indexed) optimizer updates."""

__all__ = []
