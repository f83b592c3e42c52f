"""MindSpore's collective primitives (ops.AllReduce, AllGather, ReduceScatter, Broadcast) and
ops.ReduceOp, on pijit.communication's MPI backend. Called inside a jitted function they run
at a graph break (the collective itself is not part of a captured graph)."""
from pijit._primitives_more import _primitive
from pijit._tensor import Tensor
from pijit.communication import comm_func
from pijit.communication.comm_func import ReduceOp
from pijit.communication.management import GlobalComm

__all__ = ["ReduceOp", "AllReduce", "AllGather", "ReduceScatter", "Broadcast"]


def _check(name, values):
    group = values.get("group")
    if not isinstance(group, str):
        raise TypeError(f"{name}: group must be a str, got {type(group).__name__}")
    if "op" in values and values["op"] not in (ReduceOp.SUM, ReduceOp.MAX, ReduceOp.MIN,
                                               ReduceOp.PROD):
        raise TypeError(f"{name}: op must be one of ReduceOp.SUM, MAX, MIN, PROD, got "
                        f"{values['op']!r}")
    if "root_rank" in values and (isinstance(values["root_rank"], bool)
                                  or not isinstance(values["root_rank"], int)):
        raise TypeError(f"{name}: root_rank must be an int, got "
                        f"{type(values['root_rank']).__name__}")


def _broadcast(self, input_x):
    if not isinstance(input_x, tuple) or not all(isinstance(t, Tensor) for t in input_x):
        raise TypeError(f"Broadcast: input_x must be a tuple of Tensors, got "
                        f"{type(input_x).__name__}")
    return tuple(comm_func.broadcast(t, self.root_rank, self.group) for t in input_x)


AllReduce = _primitive(
    "AllReduce", {"op": ReduceOp.SUM, "group": GlobalComm.WORLD_COMM_GROUP},
    lambda self, x: comm_func.all_reduce(x, self.op, self.group),
    "AllReduce(op=ReduceOp.SUM, group)(x): the reduction of every rank's x.", _check)
AllGather = _primitive(
    "AllGather", {"group": GlobalComm.WORLD_COMM_GROUP},
    lambda self, x: comm_func.all_gather_into_tensor(x, self.group),
    "AllGather(group)(x): every rank's x concatenated along axis 0, in rank order.", _check)
ReduceScatter = _primitive(
    "ReduceScatter", {"op": ReduceOp.SUM, "group": GlobalComm.WORLD_COMM_GROUP},
    lambda self, x: comm_func.reduce_scatter_tensor(x, self.op, self.group),
    "ReduceScatter(op=ReduceOp.SUM, group)(x): this rank's block of the reduction.", _check)
Broadcast = _primitive(
    "Broadcast", {"root_rank": 0, "group": GlobalComm.WORLD_COMM_GROUP}, _broadcast,
    "Broadcast(root_rank, group)(input_x): rank root_rank's tensors (a tuple), on every rank.",
    _check)
