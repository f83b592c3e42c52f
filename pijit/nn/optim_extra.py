"""More optimizers of mindspore.nn (ASGD, Rprop, Lamb, LARS, AdamOffload)."""

__all__ = []
