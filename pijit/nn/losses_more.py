"""More losses of mindspore.nn: dice, focal and sampled softmax losses."""

__all__ = []
