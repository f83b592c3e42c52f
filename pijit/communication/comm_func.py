"""MindSpore's functional collectives (mindspore.communication.comm_func) on pijit's MPI
backend. Each takes and returns host Tensors; `group` is a group name (management.py). The
collectives are ops: inside a jitted function they are nodes of its graph, with MindSpore's
gradients (all_reduce: sum, max, min; all_gather; reduce_scatter: sum; broadcast). As in
MindSpore 2.x, all_reduce, all_gather_into_tensor and reduce_scatter_tensor return (tensor,
CommHandle or None); broadcast and recv return the tensor. The
ranks' arguments are compared before each collective: a dtype, shape, op or root that differs
between ranks is a ValueError on every rank naming what each passed. A rank that does not join
within the timeout (PIJIT_COMM_TIMEOUT, 300 s) makes the others raise TimeoutError."""
from pijit import _C
from pijit._tensor import Tensor
from pijit.communication.management import GlobalComm, _group_index, _group_ranks

__all__ = ["ReduceOp", "CommHandle", "all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor",
           "broadcast", "barrier", "send", "recv"]


class ReduceOp:
    """The reductions of all_reduce and reduce_scatter (MindSpore's names)."""
    SUM = "sum"
    MAX = "max"
    MIN = "min"
    PROD = "prod"


_OPS = (ReduceOp.SUM, ReduceOp.MAX, ReduceOp.MIN, ReduceOp.PROD)
# The native code of each reduction (graph/graph.h kAllReduceOpNames' order).
_OP_CODES = {ReduceOp.SUM: 0, ReduceOp.MAX: 1, ReduceOp.MIN: 2, ReduceOp.PROD: 3}


def _tensor(fn, tensor):
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{fn}: tensor must be a Tensor, got {type(tensor).__name__}")
    return tensor


def _op(fn, op):
    if op not in _OPS:
        raise TypeError(f"{fn}: op must be one of ReduceOp.SUM, MAX, MIN, PROD, got {op!r}")
    return op


class CommHandle:
    """A collective started with async_op=True: its output tensor holds the result once wait()
    has returned. wait() raises what the collective failed with (a TimeoutError when the
    other ranks did not join in time)."""

    def __init__(self, work=None):
        self._work = work

    def wait(self):
        if self._work is not None:
            self._work.wait()
            self._work = None

    def is_completed(self):
        return self._work is None or self._work.done()


def _handle(async_op):
    """MindSpore's second result: a (completed) CommHandle with async_op, else None."""
    if not isinstance(async_op, bool):
        raise TypeError(f"async_op must be a bool, got {type(async_op).__name__}")
    return CommHandle() if async_op else None


def all_reduce(tensor, op=ReduceOp.SUM, group=GlobalComm.WORLD_COMM_GROUP, async_op=False):
    """(the reduction of every rank's `tensor`, None), as MindSpore returns it; every rank
    passes the same dtype and shape. In a jitted function it is a node of the graph. With
    async_op=True the second item is a CommHandle: the reduction runs on the communication
    thread, and the tensor holds it once the handle's wait() returns."""
    code = _OP_CODES[_op("all_reduce", op)] + len(_OPS) * _group_index(group, "all_reduce")
    if _handle(async_op) is not None:
        out, work = _C.comm.all_reduce_start(_tensor("all_reduce", tensor), code)
        return out, CommHandle(work)
    return _C.ops._all_reduce(_tensor("all_reduce", tensor), code), None


def all_gather_into_tensor(tensor, group=GlobalComm.WORLD_COMM_GROUP, async_op=False):
    """(every rank's `tensor` concatenated along axis 0 in rank order, None); with async_op the
    second item is a CommHandle (the gather has completed when this returns)."""
    handle = _handle(async_op)
    return _C.ops._all_gather(_tensor("all_gather_into_tensor", tensor),
                              _group_index(group, "all_gather_into_tensor")), handle


def reduce_scatter_tensor(tensor, op=ReduceOp.SUM, group=GlobalComm.WORLD_COMM_GROUP,
                          async_op=False):
    """(this rank's block, axis 0 split in group-size parts, of the reduction of `tensor`,
    None); with async_op a completed CommHandle instead of None."""
    handle = _handle(async_op)
    code = _OP_CODES[_op("reduce_scatter_tensor", op)] + \
        len(_OPS) * _group_index(group, "reduce_scatter_tensor")
    return _C.ops._reduce_scatter(_tensor("reduce_scatter_tensor", tensor), code), handle


# broadcast's code: the root's rank in the group plus this times the group's index (graph.h).
_BROADCAST_ROOTS = 1 << 24


def broadcast(tensor, src=0, group=GlobalComm.WORLD_COMM_GROUP):
    """World rank `src`'s `tensor`, on every rank of `group` (src must be one of them)."""
    if isinstance(src, bool) or not isinstance(src, int):
        raise TypeError(f"broadcast: src must be an int, got {type(src).__name__}")
    index = _group_index(group, "broadcast")
    ranks = _group_ranks[index]
    root = next((i for i, rank in enumerate(ranks) if rank == src), None)
    if root is None:
        raise ValueError(f"broadcast: src {src} is not a rank of group {group!r} (ranks "
                         f"{list(ranks)})")
    return _C.ops._broadcast(_tensor("broadcast", tensor), root + _BROADCAST_ROOTS * index)


def barrier(group=GlobalComm.WORLD_COMM_GROUP):
    """Returns when every rank of `group` has called it."""
    _C.comm.barrier(_group_index(group, "barrier"))


def send(tensor, dst=0, group=GlobalComm.WORLD_COMM_GROUP, tag=0):
    """Sends `tensor` to rank `dst` of `group`."""
    _C.comm.send(_tensor("send", tensor), dst, tag, _group_index(group, "send"))


def recv(tensor, src=0, group=GlobalComm.WORLD_COMM_GROUP, tag=0):
    """Receives from rank `src` a tensor of `tensor`'s dtype and shape, and returns it."""
    return _C.comm.receive(_tensor("recv", tensor), src, tag, _group_index(group, "recv"))
