"""MindSpore's `mindspore.common` names: initializers."""
from pijit.common import initializer

__all__ = ["initializer"]
