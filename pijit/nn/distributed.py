"""nn.DistributedGradReducer: the gradients of a data-parallel step all-reduced over the
ranks of a communication group (pijit.communication, MPI), and divided by the degree when
`mean`. Gradients are reduced in buckets, one all-reduce per dtype, so a network's many small
gradients cost one collective each step. In a world of one process the gradients come back as
they are, in plain Python, so a jitted step that uses the reducer stays one graph."""
from pijit import _C
from pijit import ops
from pijit._tensor import Tensor
from pijit.communication import comm_func, management
from pijit.nn.cell import Cell

__all__ = ["DistributedGradReducer"]


def _group_size(group):
    if group in management._WORLD_NAMES or group == management.GlobalComm.WORLD_COMM_GROUP:
        return _C.comm.world_size() if _C.comm.initialized() else 1
    if not _C.comm.initialized() or group not in management._groups:
        raise ValueError(f"DistributedGradReducer: the communication group {group!r} does not "
                         f"exist; create it with pijit.communication.create_group")
    return management.get_group_size(group)


class DistributedGradReducer(Cell):
    """All-reduces the gradients over `group` and, with `mean`, divides them by `degree` (the
    group's size). `mean` None takes the auto-parallel context's gradients_mean."""

    def __init__(self, parameters, mean=None, degree=None, fusion_type=1,
                 group="hccl_world_group"):
        super().__init__(auto_prefix=False)
        self.__dict__["parameters"] = tuple(parameters)
        if mean is None:
            from pijit.parallel_context import get_auto_parallel_context
            mean = get_auto_parallel_context("gradients_mean")
        if not isinstance(mean, bool):
            raise TypeError(f"DistributedGradReducer: mean must be a bool, got "
                            f"{type(mean).__name__}")
        if isinstance(fusion_type, bool) or not isinstance(fusion_type, int):
            raise TypeError(f"DistributedGradReducer: fusion_type must be an int, got "
                            f"{type(fusion_type).__name__}")
        if not isinstance(group, str):
            raise TypeError(f"DistributedGradReducer: group must be a str, got "
                            f"{type(group).__name__}")
        size = _group_size(group)
        if degree is None:
            degree = size
        if isinstance(degree, bool) or not isinstance(degree, int):
            raise TypeError(f"DistributedGradReducer: degree must be an int, got "
                            f"{type(degree).__name__}")
        if degree != size:
            raise ValueError(f"DistributedGradReducer: degree {degree} needs {degree} processes; "
                             f"the group {group!r} has {size}")
        self.mean = mean
        self.degree = degree
        self.fusion_type = fusion_type
        self.group = group

    def construct(self, grads):
        if not isinstance(grads, (tuple, list)):
            raise TypeError(f"DistributedGradReducer: grads must be a tuple of Tensors, got "
                            f"{type(grads).__name__}")
        if len(grads) != len(self.parameters):
            raise ValueError(f"DistributedGradReducer: {len(grads)} gradients for "
                             f"{len(self.parameters)} parameters")
        for g in grads:
            if not isinstance(g, Tensor):
                raise TypeError(f"DistributedGradReducer: gradients must be Tensors, got "
                                f"{type(g).__name__}")
        if self.degree == 1:
            return tuple(grads)  # the sum over one process, divided by 1
        return _all_reduce_in_buckets(tuple(grads), self.group, self.degree if self.mean else 1)


def _all_reduce_in_buckets(grads, group, divisor):
    """One all-reduce per dtype over the gradients flattened and concatenated, then split back
    (and divided by `divisor`). Captured in a jitted step, these are all_reduce nodes of its
    graph."""
    out = [None] * len(grads)
    dtypes = []
    for g in grads:
        if g.dtype not in dtypes:
            dtypes.append(g.dtype)
    for dtype in dtypes:
        indices = [i for i, g in enumerate(grads) if g.dtype == dtype]
        flat = ops.concat([grads[i].reshape(-1) for i in indices]) if len(indices) > 1 \
            else grads[indices[0]].reshape(-1)
        reduced = comm_func.all_reduce(flat, comm_func.ReduceOp.SUM, group)
        if divisor != 1:
            reduced = reduced / divisor
        start = 0
        for i in indices:
            n = grads[i].size
            out[i] = reduced[start:start + n].reshape(grads[i].shape)
            start += n
    return tuple(out)
