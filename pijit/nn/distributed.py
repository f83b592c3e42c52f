"""nn.DistributedGradReducer: the gradients of a data-parallel step all-reduced over the
ranks of a communication group (pijit.communication, MPI), and divided by the degree when
`mean`. Gradients are reduced in buckets (parallel_context.py: comm_fusion,
all_reduce_fusion_config), so a network's many small gradients cost few collectives, and in a
jitted step the first buckets are all-reduced while the backward pass still runs. In a world of one process the gradients come back as
they are, in plain Python, so a jitted step that uses the reducer stays one graph."""
from pijit import ops, parallel_context
from pijit._tensor import Tensor
from pijit.communication import comm_func, management
from pijit.nn.cell import Cell

__all__ = ["DistributedGradReducer"]


def broadcast_parameters(parameters, group="hccl_world_group"):
    """Gives every rank rank 0's values of `parameters` (set_auto_parallel_context's
    parameter_broadcast: replicas that were initialised differently start equal)."""
    for p in parameters:
        p.set_data(comm_func.broadcast(p, 0, group))


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
        size = management.group_size_or_one(group, "DistributedGradReducer")
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


def _bucket_plan(grads):
    """Lists of gradient indices, one per all-reduce, in the order they are issued: from the
    last parameter to the first (the order in which a backward pass produces them), one dtype
    per bucket, split where the auto-parallel context says (parallel_context.py)."""
    mode, config = parallel_context._gradient_buckets()
    if mode == "index":
        bounds = [0] + [b for b in config if b < len(grads)] + [len(grads)]
        ranges = [list(range(lo, hi)) for lo, hi in zip(bounds, bounds[1:]) if hi > lo]
    else:
        ranges = [list(range(len(grads)))]
    cap = config * 1024 * 1024 if mode == "size" else float("inf")
    buckets = []
    for indices in reversed(ranges):
        filling = []  # (dtype, indices, bytes) of the bucket being filled, one per dtype
        for i in reversed(indices):
            k = next((k for k, e in enumerate(filling) if e[0] == grads[i].dtype), len(filling))
            dtype, members, size = filling[k] if k < len(filling) else (grads[i].dtype, [], 0)
            entry = (dtype, members + [i], size + grads[i].nbytes)
            if entry[2] >= cap:
                buckets.append(entry[1])
                filling = filling[:k] + filling[k + 1:]
            elif k < len(filling):
                filling[k] = entry
            else:
                filling.append(entry)
        buckets.extend(e[1] for e in filling)
    return buckets


def _all_reduce_in_buckets(grads, group, divisor):
    """One all-reduce per bucket (_bucket_plan) over its gradients flattened and concatenated,
    then split back (and divided by `divisor`). Captured in a jitted step, these are all_reduce
    nodes of its graph, each started as soon as its gradients are computed
    (graph/passes/collective_schedule.h)."""
    out = [None] * len(grads)
    for indices in _bucket_plan(grads):
        flat = ops.concat([grads[i].reshape(-1) for i in indices]) if len(indices) > 1 \
            else grads[indices[0]].reshape(-1)
        reduced, _ = comm_func.all_reduce(flat, comm_func.ReduceOp.SUM, group)
        if divisor != 1:
            reduced = reduced / divisor
        start = 0
        for i in indices:
            n = grads[i].size
            out[i] = reduced[start:start + n].reshape(grads[i].shape)
            start += n
    return tuple(out)
