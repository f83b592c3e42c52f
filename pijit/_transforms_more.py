"""More of mindspore's top-level functional API: jvp, get_grad and lazy_inline."""

__all__ = []
