"""mindspore.ops.communication (MindSpore 2.9 and later; comm_func's successor): process groups
and collectives in torch.distributed's style, on pijit's MPI backend.

As in MindSpore, the collectives work in place by default: all_reduce(t) leaves the reduction
in `t` and returns None, or a CommHandle with async_op=True (the tensor holds the result once
its wait() has returned). set_comm_ops_inplace(False) makes them return (result, handle)
instead and leave their arguments alone. Groups are named by strings; None is the world.
Without mpirun the world is this one process."""
import pickle

import numpy as np

from pijit import _C
from pijit._tensor import Tensor
from pijit.communication import comm_func, management
from pijit.communication.comm_func import CommHandle, ReduceOp

__all__ = ["ReduceOp", "CommHandle", "is_available", "is_initialized", "init_process_group",
           "destroy_process_group", "get_rank", "get_world_size", "new_group", "get_backend",
           "get_global_rank", "get_group_rank", "get_process_group_ranks", "all_reduce",
           "all_gather_into_tensor", "all_gather", "reduce_scatter_tensor", "reduce_scatter",
           "reduce", "broadcast", "barrier", "send", "recv", "isend", "irecv",
           "all_gather_object", "broadcast_object_list", "set_comm_ops_inplace"]

_INPLACE_FUNCS = ("all_reduce", "all_gather_into_tensor", "all_gather", "reduce_scatter_tensor",
                  "reduce_scatter", "reduce", "broadcast", "recv", "irecv")
_inplace = {name: True for name in _INPLACE_FUNCS}
_REDUCE_OPS = ("sum", "prod", "min", "max", "avg")
_new_groups = [0]  # how many groups new_group has named


def set_comm_ops_inplace(is_enable, func_list=None):
    """Whether the collectives in `func_list` (all of them when None) write their result into
    their tensor arguments (the default) or return it."""
    if not isinstance(is_enable, bool):
        raise TypeError(f"For 'set_comm_ops_inplace', the argument 'is_enable' must be type of "
                        f"bool, but got 'is_enable' type : {type(is_enable)}.")
    if func_list is None:
        func_list = _INPLACE_FUNCS
    if not isinstance(func_list, (list, tuple)):
        raise TypeError(f"Expected list or tuple, but got {type(func_list)}.")
    for name in func_list:
        if name not in _inplace:
            raise ValueError(f"The function name in `func_list` must be correct, but got {name}.")
        _inplace[name] = is_enable


def _group(group):
    if group is None:
        return management.GlobalComm.WORLD_COMM_GROUP
    if not isinstance(group, str):
        raise TypeError(f"The argument 'group' must be type of string, but got 'group' type : "
                        f"{type(group)}.")
    return group


def _check_async(async_op):
    if not isinstance(async_op, bool):
        raise TypeError(f"The argument 'async_op' must be a bool, but got {type(async_op)}.")


def _tensor(fn, name, value):
    if not isinstance(value, Tensor):
        raise TypeError(f"For {fn}, the input {name} must be tensor, got {type(value).__name__}")
    return value


def _finish(fn, result, async_op, targets=()):
    """MindSpore's results: in place, the result written into `targets` (a tensor, or one per
    piece of the result) and the handle returned; otherwise (result, handle)."""
    handle = CommHandle() if async_op else None
    if not _inplace.get(fn, False):
        return result, handle
    if isinstance(targets, Tensor):
        _write(targets, result)
    else:
        for target, piece in zip(targets, result):
            _write(target, piece)
    return handle


def _write(target, value):
    from pijit import ops
    if tuple(target.shape) != tuple(value.shape):
        raise ValueError(f"the output tensor has shape {tuple(target.shape)}, the result "
                         f"{tuple(value.shape)}")
    ops.assign(target, value if value.dtype == target.dtype else value.astype(target.dtype))


# ---- process groups --------------------------------------------------------------------------

def is_available():
    """Whether collectives can run: always (MPI under mpirun, else a world of one)."""
    return True


def is_initialized():
    return management.GlobalComm.INITED


def init_process_group(backend="hccl", init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, pg_options=None, device_id=None):
    """Joins the job (communication.init). `world_size` and `rank`, when given, must be what
    mpirun started; `timeout` (a datetime.timedelta or seconds) bounds every collective's wait."""
    management.init(None if backend in (None, "mpi") else backend)
    if world_size not in (-1, None) and world_size != _C.comm.world_size():
        raise ValueError(f"init_process_group: world_size {world_size}, but the job has "
                         f"{_C.comm.world_size()} processes")
    if rank not in (-1, None) and rank != _C.comm.world_rank():
        raise ValueError(f"init_process_group: rank {rank}, but this process is rank "
                         f"{_C.comm.world_rank()}")
    if timeout is not None:
        seconds = timeout.total_seconds() if hasattr(timeout, "total_seconds") else float(timeout)
        _C.comm.set_timeout(seconds)


def destroy_process_group(group=None):
    """Frees `group`, or with None leaves the job."""
    if group is None or group in management._WORLD_NAMES:
        management.release()
    else:
        management.destroy_group(group)


def get_rank(group=None):
    return management.get_rank(_group(group))


def get_world_size(group=None):
    return management.get_group_size(_group(group))


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization=False, group_desc=None):
    """A new group of the world ranks `ranks` (every rank when None), named `group_desc` or
    automatically; every rank of the world must call it, in the same order. Returns its name."""
    ranks = list(range(_C.comm.world_size())) if ranks is None else list(ranks)
    _new_groups[0] += 1
    name = group_desc if group_desc is not None else f"pijit_group_{_new_groups[0]}"
    management.create_group(name, ranks)
    return name


def get_backend(group=None):
    _group(group)
    return "mpi"


def get_global_rank(group, group_rank):
    return management.get_world_rank_from_group_rank(_group(group), group_rank)


def get_group_rank(group, global_rank):
    return management.get_group_rank_from_world_rank(global_rank, _group(group))


def get_process_group_ranks(group=None):
    return management.get_process_group_ranks(_group(group))


# ---- collectives -----------------------------------------------------------------------------

def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """The reduction ("sum", "prod", "min", "max" or "avg") of every rank's `tensor`."""
    _tensor("all_reduce", "tensor", tensor)
    if op not in _REDUCE_OPS:
        raise TypeError("For all_reduce, the input op value must be one of sum, prod, min, max, avg")
    _check_async(async_op)
    group = _group(group)
    result, handle = comm_func.all_reduce(tensor, "sum" if op == "avg" else op, group, async_op)
    if op == "avg":
        if handle is not None:
            handle.wait()
        result = result / management.get_group_size(group)
    if not _inplace["all_reduce"]:
        return result, handle
    if handle is None or op == "avg":
        _write(tensor, result)
        return CommHandle() if async_op else None
    return _InPlaceHandle(handle, tensor, result)


class _InPlaceHandle(CommHandle):
    """An in-place all-reduce under way: wait() also writes the result into the tensor."""

    def __init__(self, handle, target, result):
        super().__init__()
        self._handle, self._target, self._result = handle, target, result

    def wait(self):
        if self._handle is not None:
            self._handle.wait()
            _write(self._target, self._result)
            self._handle = None

    def is_completed(self):
        return self._handle is None or self._handle.is_completed()


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Every rank's `input_tensor` concatenated along axis 0 (into `output_tensor`)."""
    _tensor("all_gather_into_tensor", "input_tensor", input_tensor)
    _check_async(async_op)
    result, _ = comm_func.all_gather_into_tensor(input_tensor, _group(group))
    return _finish("all_gather_into_tensor", result, async_op, output_tensor)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Every rank's `tensor`, one per rank, into `tensor_list`."""
    _tensor("all_gather", "tensor", tensor)
    _check_async(async_op)
    group = _group(group)
    n = management.get_group_size(group)
    if not isinstance(tensor_list, list) or len(tensor_list) != n:
        raise TypeError(f"For all_gather, tensor_list must be a list of {n} tensors (one per "
                        f"rank of the group)")
    gathered, _ = comm_func.all_gather_into_tensor(tensor.reshape((1,) + tuple(tensor.shape)), group)
    return _finish("all_gather", [gathered[k] for k in range(n)], async_op, tensor_list)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):  # noqa: A002
    """This rank's block (axis 0 split in group-size parts) of the reduction of `input`."""
    _tensor("reduce_scatter_tensor", "input", input)
    _check_async(async_op)
    result, _ = comm_func.reduce_scatter_tensor(input, op, _group(group))
    return _finish("reduce_scatter_tensor", result, async_op, output)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """The reduction over the ranks of their `input_list[rank]` (into `output`)."""
    _check_async(async_op)
    if not isinstance(input_list, (list, tuple)) or not input_list:
        raise TypeError("For reduce_scatter, input_list must be a non-empty list of tensors")
    from pijit import ops
    stacked = ops.stack([_tensor("reduce_scatter", "input_list", t) for t in input_list])
    result, _ = comm_func.reduce_scatter_tensor(stacked, op, _group(group))
    return _finish("reduce_scatter", result[0], async_op, output)


def reduce(tensor, dst, op=ReduceOp.SUM, group=None, async_op=False):
    """The reduction of every rank's `tensor`, written into rank `dst`'s (a world rank)."""
    _tensor("reduce", "tensor", tensor)
    _check_async(async_op)
    group = _group(group)
    result, _ = comm_func.all_reduce(tensor, op, group)
    if not _inplace["reduce"]:
        return result, (CommHandle() if async_op else None)
    if management.get_process_group_ranks(group)[management.get_rank(group)] == dst:
        _write(tensor, result)
    return CommHandle() if async_op else None


def broadcast(tensor, src, group=None, async_op=False):
    """World rank `src`'s `tensor`, on every rank of the group."""
    _tensor("broadcast", "tensor", tensor)
    _check_async(async_op)
    result = comm_func.broadcast(tensor, src, _group(group))
    return _finish("broadcast", result, async_op, tensor)


def barrier(group=None, async_op=False, device_ids=None):
    _check_async(async_op)
    comm_func.barrier(_group(group))
    return CommHandle() if async_op else None


def send(tensor, dst=0, group=None, tag=0):
    """Sends `tensor` to rank `dst` of the group."""
    comm_func.send(_tensor("send", "tensor", tensor), dst, _group(group), tag)


def recv(tensor, src=0, group=None, tag=0):
    """Receives a tensor of `tensor`'s dtype and shape from rank `src`: into `tensor` (returns
    0), or returned when not in place."""
    result = comm_func.recv(_tensor("recv", "tensor", tensor), src, _group(group), tag)
    if not _inplace["recv"]:
        return result
    _write(tensor, result)
    return 0


def isend(tensor, dst=0, group=None, tag=0):
    """send, returning a (completed) CommHandle: the message has left when this returns."""
    send(tensor, dst, group, tag)
    return CommHandle()


def irecv(tensor, src=0, group=None, tag=0):
    """recv, with a (completed) CommHandle: in place the handle, otherwise (tensor, handle)."""
    result = recv(tensor, src, group, tag)
    return CommHandle() if _inplace["irecv"] else (result, CommHandle())


# ---- Python objects ----------------------------------------------------------------------------

def _object_bytes(obj):
    return np.frombuffer(pickle.dumps(obj), np.uint8)


def all_gather_object(object_list, obj, group=None):
    """Every rank's `obj` (any picklable object) into `object_list`, in rank order."""
    group = _group(group)
    n = management.get_group_size(group)
    if not isinstance(object_list, list) or len(object_list) != n:
        raise TypeError(f"For all_gather_object, object_list must be a list of {n} items")
    data = _object_bytes(obj)
    sizes, _ = comm_func.all_gather_into_tensor(Tensor(np.array([data.size], np.int64)), group)
    sizes = sizes.asnumpy()
    padded = np.zeros(int(sizes.max()), np.uint8)
    padded[:data.size] = data
    gathered, _ = comm_func.all_gather_into_tensor(Tensor(padded), group)
    rows = gathered.asnumpy().reshape(n, -1)
    for k in range(n):
        object_list[k] = pickle.loads(rows[k, :sizes[k]].tobytes())


def broadcast_object_list(object_list, src=0, group=None, device=None):
    """World rank `src`'s `object_list` items (picklable objects), on every rank."""
    group = _group(group)
    if not isinstance(object_list, list):
        raise TypeError("For broadcast_object_list, object_list must be a list")
    data = _object_bytes(list(object_list))
    size = comm_func.broadcast(Tensor(np.array([data.size], np.int64)), src, group)
    padded = np.zeros(int(size.asnumpy()[0]), np.uint8)
    padded[:min(data.size, padded.size)] = data[:padded.size]
    items = pickle.loads(comm_func.broadcast(Tensor(padded), src, group).asnumpy().tobytes())
    object_list[:] = items
