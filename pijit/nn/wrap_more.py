"""More training wrappers of mindspore.nn: micro-batches and gradient reduction."""

__all__ = []
