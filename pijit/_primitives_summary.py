"""The summary operators ScalarSummary, TensorSummary, ImageSummary and HistogramSummary: each
call keeps (name, value) for the next SummaryRecord.record, which writes it under tag `name`
with the operator's plugin.

The values wait in one module-level dict keyed as MindSpore keys them, "name[:Scalar]",
"name[:Tensor]", ..., so a name recorded twice before a record keeps its newest value, as in
MindSpore. Storing into a dict is a side effect that pijit's capture keeps: inside an ms.jit
function the value becomes an extra output of the compiled graph and the store is replayed
after the graph runs, so the graph is not broken and the function's results are unchanged.
Eager and compiled calls record the same values.
"""
from pijit._tensor import Tensor
from pijit.ops import Primitive

__all__ = ["ScalarSummary", "TensorSummary", "ImageSummary", "HistogramSummary"]

# "name[:Plugin]" -> Tensor; drained by SummaryRecord.record.
_PENDING = {}


def take_pending_values():
    """The values the summary operators kept since the last call, {"name[:Plugin]": Tensor},
    and forgets them."""
    values = dict(_PENDING)
    _PENDING.clear()
    return values


def _check(op_name, plugin, name, value):
    # Only static facts (types, rank, size) are checked, so that capture keeps one graph.
    if not isinstance(name, str) or not name:
        raise TypeError(f"For '{op_name}', the name must be a non-empty string, got {name!r}")
    if not isinstance(value, Tensor):
        raise TypeError(f"For '{op_name}', the value must be a Tensor, got "
                        f"{type(value).__name__}")
    if plugin == "Scalar" and value.size != 1:
        raise ValueError(f"For '{op_name}', the value must hold exactly one element (rank 0 or "
                         f"shape [1]), got shape {tuple(value.shape)}")
    if plugin in ("Tensor", "Histogram") and value.ndim == 0:
        raise ValueError(f"For '{op_name}', the value must have at least one dimension, got a "
                         f"0-d tensor")
    if plugin == "Image" and value.ndim != 4:
        raise ValueError(f"For '{op_name}', the value must be an NCHW batch of rank 4, got rank "
                         f"{value.ndim}")


class _SummaryPrimitive(Primitive):
    _plugin = None

    def __call__(self, name, value):
        _check(type(self).__name__, self._plugin, name, value)
        # A copy: the value at this point of the network, not what an in-place update (the
        # optimizer's, later in the same step) leaves in it by the time record() reads it.
        _PENDING[name + "[:" + self._plugin + "]"] = value.copy()


class ScalarSummary(_SummaryPrimitive):
    """ScalarSummary()(name, value): records one-element tensor `value` as scalar `name` at the
    next SummaryRecord.record."""
    _plugin = "Scalar"


class TensorSummary(_SummaryPrimitive):
    """TensorSummary()(name, value): records tensor `value` (rank 1 or more) as tensor `name`
    at the next SummaryRecord.record."""
    _plugin = "Tensor"


class ImageSummary(_SummaryPrimitive):
    """ImageSummary()(name, value): records NCHW image batch `value` (1 or 3 channels) as image
    `name` at the next SummaryRecord.record."""
    _plugin = "Image"


class HistogramSummary(_SummaryPrimitive):
    """HistogramSummary()(name, value): records the histogram of tensor `value` (rank 1 or more)
    as histogram `name` at the next SummaryRecord.record."""
    _plugin = "Histogram"
