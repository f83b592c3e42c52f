"""More training wrappers of mindspore.nn: micro-batches, pipeline stages and AdaSum.

The AdaSum cells combine the updates of several processes pairwise; pijit runs them in a world
of one, where AdaSum of one update is that update. Asking for more than one process raises a
ValueError rather than silently training without the combination. DistributedGradReducer,
which does reduce over processes, is in distributed.py."""
from pijit._tensor import Tensor
from pijit.nn._checks import instance_of
from pijit.nn.cell import Cell
from pijit.nn.distributed import DistributedGradReducer  # noqa: F401 (re-exported)
from pijit.nn.optim import Optimizer

__all__ = ["MicroBatchInterleaved", "PipelineCell", "DistributedGradReducer",
           "AdaSumByGradWrapCell", "AdaSumByDeltaWeightWrapCell"]

# The names MindSpore gives the world group on each backend: in a single process all of them
# are the group of that one process.
_WORLD_GROUPS = ("hccl_world_group", "nccl_world_group", "mccl_world_group")


def _check_count(cls, name, value):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{cls}: {name} must be an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{cls}: {name} must be at least 1, got {value}")
    return value


def _micro_batch(cls, inputs, index, parts):
    """The index-th of `parts` contiguous slices of each Tensor input along its first axis
    (rows [index * n // parts, (index + 1) * n // parts), so uneven batches lose no row);
    other inputs pass unchanged."""
    sliced = []
    for x in inputs:
        if isinstance(x, Tensor):
            if x.ndim == 0:
                raise ValueError(f"{cls}: a 0-d Tensor input has no batch axis to split")
            rows = x.shape[0]
            if rows < parts:
                raise ValueError(f"{cls}: a batch of {rows} rows cannot be split into {parts} "
                                 f"micro-batches")
            x = x[index * rows // parts:(index + 1) * rows // parts]
        sliced.append(x)
    return tuple(sliced)


def _accumulate(total, output):
    """total + output, element by element for tuple outputs."""
    if total is None:
        return output
    if isinstance(output, (tuple, list)):
        return type(output)([_accumulate(t, o) for t, o in zip(total, output)])
    return total + output


def _micro_batch_sum(cls, network, inputs, parts):
    """The sum of network's outputs over the `parts` micro-batches of `inputs`."""
    total = None
    for i in range(parts):
        total = _accumulate(total, network(*_micro_batch(cls, inputs, i, parts)))
    return total


class MicroBatchInterleaved(Cell):
    """Splits every input along its batch axis into `interleave_num` parts, runs `network` on
    each and returns the sum of the outputs (MindSpore overlaps the parts' computation and
    communication; on one process the result is the same sum)."""

    def __init__(self, network, interleave_num=2):
        super().__init__(auto_prefix=False)
        self.network = instance_of("MicroBatchInterleaved", "network", network, Cell)
        self.interleave_num = _check_count("MicroBatchInterleaved", "interleave_num",
                                           interleave_num)

    def construct(self, *inputs):
        return _micro_batch_sum("MicroBatchInterleaved", self.network, inputs, self.interleave_num)


class PipelineCell(Cell):
    """Pipeline-parallel training's wrapper: splits every input along its batch axis into
    `micro_size` micro-batches, runs `network` (usually a WithLossCell) on each and returns
    the sum of their outputs, so the gradients accumulate over the micro-batches. With one
    pipeline stage, all pijit runs, this is the whole behaviour; a stage_config or
    segment_config placing cells on other stages needs a pipeline-parallel world."""

    def __init__(self, network, micro_size, stage_config=None, segment_config=None):
        super().__init__(auto_prefix=False)
        self.network = instance_of("PipelineCell", "network", network, Cell)
        self.micro_size = _check_count("PipelineCell", "micro_size", micro_size)
        for name, config in (("stage_config", stage_config), ("segment_config",
                                                               segment_config)):
            if config is not None:
                raise ValueError(f"PipelineCell: {name} assigns cells to pipeline stages, "
                                 f"which needs several processes; pijit runs one stage")

    def construct(self, *inputs):
        return _micro_batch_sum("PipelineCell", self.network, inputs, self.micro_size)


def _check_world(cls, group):
    if group is not None and group not in _WORLD_GROUPS:
        raise ValueError(f"{cls}: the communication group {group!r} needs several processes; "
                         f"pijit has only the world group of one process")


class _SingleProcessAdaSum(Cell):
    """AdaSum combines the updates of several processes pairwise; the combination of a single
    process's update is that update, so the optimizer runs unchanged."""

    def __init__(self, optimizer):
        super().__init__(auto_prefix=False)
        self.optimizer = instance_of(type(self).__name__, "optimizer", optimizer, Optimizer)
        self.__dict__["parameters"] = optimizer.parameters

    def construct(self, grads):
        return self.optimizer(grads)


class AdaSumByGradWrapCell(_SingleProcessAdaSum):
    """AdaSum over the gradients, before `optimizer` steps: with one process, `optimizer`
    applied to the gradients as they are."""


class AdaSumByDeltaWeightWrapCell(_SingleProcessAdaSum):
    """AdaSum over the weight changes `optimizer` makes: with one process, the change
    `optimizer` makes."""
