"""MindSpore's collective primitives (ops.AllReduce, AllGather, ReduceScatter, Broadcast,
Barrier, Send, Receive) and ops.ReduceOp, on pijit.communication's MPI backend. Inside a
jitted function the first four are nodes of the graph (pijit.communication.comm_func); the
others run at a graph break."""
import numpy as np

from pijit._primitives_more import _primitive
from pijit._tensor import Tensor, dtype_to_nptype
from pijit.communication import comm_func
from pijit.communication.comm_func import ReduceOp
from pijit.communication.management import GlobalComm, get_group_size, get_rank
from pijit import ops as _pijit_ops
from pijit.ops import constexpr

__all__ = ["ReduceOp", "AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Barrier", "Send",
           "Receive", "AlltoAll"]


def _check(name, values):
    group = values.get("group")
    if not isinstance(group, str):
        raise TypeError(f"{name}: group must be a str, got {type(group).__name__}")
    if "op" in values and values["op"] not in (ReduceOp.SUM, ReduceOp.MAX, ReduceOp.MIN,
                                               ReduceOp.PROD):
        raise TypeError(f"{name}: op must be one of ReduceOp.SUM, MAX, MIN, PROD, got "
                        f"{values['op']!r}")
    for key in ("root_rank", "sr_tag", "dest_rank", "src_rank"):
        if key in values and (isinstance(values[key], bool) or not isinstance(values[key], int)):
            raise TypeError(f"{name}: {key} must be an int, got {type(values[key]).__name__}")
    if "shape" in values and (not isinstance(values["shape"], (tuple, list)) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in values["shape"])):
        raise TypeError(f"{name}: shape must be a tuple of ints >= 0, got {values['shape']!r}")


def _broadcast(self, input_x):
    if not isinstance(input_x, tuple) or not all(isinstance(t, Tensor) for t in input_x):
        raise TypeError(f"Broadcast: input_x must be a tuple of Tensors, got "
                        f"{type(input_x).__name__}")
    return tuple(comm_func.broadcast(t, self.root_rank, self.group) for t in input_x)


def _receive(self):
    if self.dtype is None:
        raise TypeError("Receive: dtype must be a pijit dtype (ms.float32, ...), got None")
    like = Tensor(np.zeros(tuple(self.shape), dtype_to_nptype(self.dtype)))
    return comm_func.recv(like, self.src_rank, self.group, self.sr_tag)


@constexpr
def _all_to_all_layout(group, split_count, split_dim, concat_dim, shape):
    """(group size, this rank, split axis, concat axis, block length) of an AlltoAll, checked;
    a compile-time constant of captured code."""
    for name, value in (("split_count", split_count), ("split_dim", split_dim),
                        ("concat_dim", concat_dim)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"AlltoAll: {name} must be an int, got {value!r}")
    n, rank = get_group_size(group), get_rank(group)
    if split_count != n:
        raise ValueError(f"AlltoAll: split_count ({split_count}) must equal the group's size "
                         f"({n})")
    split_dim, concat_dim = split_dim % len(shape), concat_dim % len(shape)
    if shape[split_dim] % n:
        raise ValueError(f"AlltoAll: x's axis {split_dim} ({shape[split_dim]}) is not a "
                         f"multiple of split_count ({n})")
    return n, rank, split_dim, concat_dim, shape[split_dim] // n


def _all_to_all(self, x):
    """Block j of x along split_dim goes to rank j; the blocks received are concatenated
    along concat_dim in rank order. Built on the all-gather (every rank gathers every rank's
    x and keeps its own block of each): a graph node with a gradient, at split_count times
    the traffic of a point-to-point exchange."""
    n, rank, split_dim, concat_dim, block = _all_to_all_layout(
        self.group, self.split_count, self.split_dim, self.concat_dim, tuple(x.shape))
    gathered = comm_func.all_gather_into_tensor(_pijit_ops.unsqueeze(x, 0), self.group)[0]
    mine = [_pijit_ops.narrow(gathered[i], split_dim, rank * block, block) for i in range(n)]
    return _pijit_ops.concat(mine, concat_dim)


def _send(self, x):
    comm_func.send(x, self.dest_rank, self.group, self.sr_tag)
    return x


AllReduce = _primitive(
    "AllReduce", {"op": ReduceOp.SUM, "group": GlobalComm.WORLD_COMM_GROUP},
    lambda self, x: comm_func.all_reduce(x, self.op, self.group)[0],
    "AllReduce(op=ReduceOp.SUM, group)(x): the reduction of every rank's x.", _check)
AllGather = _primitive(
    "AllGather", {"group": GlobalComm.WORLD_COMM_GROUP},
    lambda self, x: comm_func.all_gather_into_tensor(x, self.group)[0],
    "AllGather(group)(x): every rank's x concatenated along axis 0, in rank order.", _check)
ReduceScatter = _primitive(
    "ReduceScatter", {"op": ReduceOp.SUM, "group": GlobalComm.WORLD_COMM_GROUP},
    lambda self, x: comm_func.reduce_scatter_tensor(x, self.op, self.group)[0],
    "ReduceScatter(op=ReduceOp.SUM, group)(x): this rank's block of the reduction.", _check)
Broadcast = _primitive(
    "Broadcast", {"root_rank": 0, "group": GlobalComm.WORLD_COMM_GROUP}, _broadcast,
    "Broadcast(root_rank, group)(input_x): rank root_rank's tensors (a tuple), on every rank.",
    _check)
Barrier = _primitive(
    "Barrier", {"group": GlobalComm.WORLD_COMM_GROUP},
    lambda self: comm_func.barrier(self.group),
    "Barrier(group)(): returns when every rank of the group has called it.", _check)
Send = _primitive(
    "Send", {"sr_tag": 0, "dest_rank": 0, "group": GlobalComm.WORLD_COMM_GROUP,
             "group_back": GlobalComm.WORLD_COMM_GROUP}, _send,
    "Send(sr_tag, dest_rank, group)(x): sends x to rank dest_rank of the group (returns x).",
    _check)
AlltoAll = _primitive(
    "AlltoAll", {"split_count": 1, "split_dim": 0, "concat_dim": 0,
                 "group": GlobalComm.WORLD_COMM_GROUP}, _all_to_all,
    "AlltoAll(split_count, split_dim, concat_dim, group)(x): block j of x along split_dim "
    "to rank j, the received blocks concatenated along concat_dim in rank order.", _check)
Receive = _primitive(
    "Receive", {"sr_tag": 0, "src_rank": 0, "shape": (), "dtype": None,
                "group": GlobalComm.WORLD_COMM_GROUP, "group_back": GlobalComm.WORLD_COMM_GROUP},
    _receive,
    "Receive(sr_tag, src_rank, shape, dtype, group)(): the tensor rank src_rank sent with "
    "sr_tag.", _check)
