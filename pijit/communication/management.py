"""MindSpore's mindspore.communication management API on pijit's MPI collectives
(kernels/comm): a process started by `mpirun -n N python train.py` joins a world of N ranks at
init(); any other process is a world of one rank, where every collective returns its input,
so the same script runs unchanged without mpirun.

Groups are named as in MindSpore: the world is GlobalComm.WORLD_COMM_GROUP (any of the
"hccl_world_group", "nccl_world_group" and "mccl_world_group" names means it), and
create_group(name, rank_ids) makes a sub-group every rank of the world must create."""
import atexit
import sys

from pijit import _C

__all__ = ["GlobalComm", "init", "release", "get_rank", "get_group_size", "get_local_rank",
           "get_local_rank_size", "get_world_rank_from_group_rank",
           "get_group_rank_from_world_rank", "create_group", "destroy_group", "get_comm_name",
           "get_process_group_ranks", "HCCL_WORLD_COMM_GROUP", "NCCL_WORLD_COMM_GROUP",
           "MCCL_WORLD_COMM_GROUP"]

HCCL_WORLD_COMM_GROUP = "hccl_world_group"
NCCL_WORLD_COMM_GROUP = "nccl_world_group"
MCCL_WORLD_COMM_GROUP = "mccl_world_group"
_WORLD_NAMES = (HCCL_WORLD_COMM_GROUP, NCCL_WORLD_COMM_GROUP, MCCL_WORLD_COMM_GROUP)
_BACKENDS = ("hccl", "nccl", "mccl", "mpi")


class GlobalComm:
    """The world's communication state: BACKEND (the library in use: "mpi" under mpirun, else
    None), WORLD_COMM_GROUP (the world's group name) and INITED."""
    BACKEND = None
    WORLD_COMM_GROUP = HCCL_WORLD_COMM_GROUP
    INITED = False


_groups = {}  # group name -> native group index (the world is 0)
# native group index -> its world ranks, in the group's order. Plain Python data, so captured
# code reads it (under guards) instead of calling into _C.
_group_ranks = {}
_previous_hook = [None]


def _abort_on_uncaught(kind, value, tb):
    """An exception no one catches on one rank ends the whole job at once (MPI_Abort), naming
    the rank, instead of leaving the other ranks waiting in their next collective."""
    _previous_hook[0](kind, value, tb)
    sys.stderr.write(f"pijit.communication: rank {_C.comm.world_rank()} of "
                     f"{_C.comm.world_size()} failed with {kind.__name__}; aborting the job\n")
    sys.stderr.flush()
    _C.comm.abort(1)


def init(backend_name=None):
    """Joins the job: under mpirun the world of its processes (Open MPI), otherwise a world of
    one. `backend_name` may be None or one of MindSpore's names ("hccl", "nccl", "mccl"),
    which all mean pijit's MPI backend on the CPU."""
    if backend_name is not None:
        if not isinstance(backend_name, str):
            raise TypeError(f"For 'init', the argument 'backend_name' must be a string, but got "
                            f"the type : {type(backend_name).__name__}")
        if backend_name not in _BACKENDS:
            raise RuntimeError(f"For 'init', the argument 'backend_name' must be one of "
                               f"{', '.join(repr(b) for b in _BACKENDS)}, but got "
                               f"'backend_name' : {backend_name}")
    joining = not GlobalComm.INITED
    _C.comm.init()
    _group_ranks[0] = tuple(range(_C.comm.world_size()))
    GlobalComm.INITED = True
    GlobalComm.BACKEND = "mpi" if _C.comm.world_size() > 1 else None
    if _C.comm.world_size() > 1 and sys.excepthook is not _abort_on_uncaught:
        _previous_hook[0] = sys.excepthook
        sys.excepthook = _abort_on_uncaught
    if joining and _C.comm.world_size() > 1:
        _share_dataset_entropy()  # once: a later init() must not restart the shared seeds
    if backend_name in ("nccl", "mccl"):
        GlobalComm.WORLD_COMM_GROUP = {"nccl": NCCL_WORLD_COMM_GROUP, "mccl": MCCL_WORLD_COMM_GROUP}[backend_name]


def _share_dataset_entropy():
    """Every rank takes rank 0's random entropy for the dataset pipeline's unseeded shuffles
    (pijit.dataset.config), so that `num_shards`/`shard_id` split one shuffled order."""
    import numpy as np

    from pijit._tensor import Tensor
    from pijit.communication.comm_func import broadcast
    from pijit.dataset import config
    mine = np.array([np.random.SeedSequence().entropy % (1 << 62)], np.int64)
    config._share_job_entropy(int(broadcast(Tensor(mine), 0).asnumpy()[0]))


def _initialized():
    return _C.comm.initialized()


def _require_init(fn):
    # A plain attribute (not a call into _C): captured code reads it under a guard.
    if not GlobalComm.INITED:
        raise RuntimeError(f"{fn}: communication is not initialized; call "
                           f"pijit.communication.init() first")


def _group_index(group, fn):
    """The native index of a group name (the world's names are group 0)."""
    _require_init(fn)
    if not isinstance(group, str):
        raise TypeError(f"{fn}: group must be a str, got {type(group).__name__}")
    if group in _WORLD_NAMES or group == GlobalComm.WORLD_COMM_GROUP:
        return 0
    if group not in _groups:
        raise ValueError(f"{fn}: no communication group named {group!r}; create it with "
                         f"create_group (groups: {sorted(_groups)})")
    return _groups[group]


def release():
    """Leaves the job (MPI_Finalize); also done at exit."""
    if _C.comm.initialized():
        _C.comm.finalize()
    GlobalComm.INITED = False


def get_rank(group=GlobalComm.WORLD_COMM_GROUP):
    """This process's rank in `group`."""
    return _C.comm.group_rank(_group_index(group, "get_rank"))


def get_group_size(group=GlobalComm.WORLD_COMM_GROUP):
    """The number of ranks in `group`."""
    return _C.comm.group_size(_group_index(group, "get_group_size"))


def get_local_rank(group=GlobalComm.WORLD_COMM_GROUP):
    """This process's rank among the world's processes on its machine."""
    _group_index(group, "get_local_rank")
    return _C.comm.local_rank()


def get_local_rank_size(group=GlobalComm.WORLD_COMM_GROUP):
    """The number of the world's processes on this machine."""
    _group_index(group, "get_local_rank_size")
    return _C.comm.local_size()


def get_world_rank_from_group_rank(group, group_rank_id):
    """The world rank of rank `group_rank_id` of `group`."""
    _check_rank("get_world_rank_from_group_rank", "group_rank_id", group_rank_id)
    return _C.comm.world_rank_of(_group_index(group, "get_world_rank_from_group_rank"), group_rank_id)


def get_group_rank_from_world_rank(world_rank_id, group):
    """The rank in `group` of world rank `world_rank_id`."""
    _check_rank("get_group_rank_from_world_rank", "world_rank_id", world_rank_id)
    ranks = get_process_group_ranks(group)
    if world_rank_id not in ranks:
        raise ValueError(f"get_group_rank_from_world_rank: world rank {world_rank_id} is not in "
                         f"group {group!r} (ranks {ranks})")
    return ranks.index(world_rank_id)


def get_process_group_ranks(group=GlobalComm.WORLD_COMM_GROUP):
    """The world ranks of `group`, in the group's order."""
    return list(_group_ranks[_group_index(group, "get_process_group_ranks")])


def group_size_or_one(group, fn):
    """The number of ranks in `group`; 1 for the world before init() (a process that trains
    alone). Any other group must exist. Not in MindSpore's API: pijit's layers use it."""
    if not isinstance(group, str):
        raise TypeError(f"{fn}: group must be a str, got {type(group).__name__}")
    if not GlobalComm.INITED and (group in _WORLD_NAMES or group == GlobalComm.WORLD_COMM_GROUP):
        return 1
    return len(_group_ranks[_group_index(group, fn)])


def get_comm_name(group=GlobalComm.WORLD_COMM_GROUP):
    """The communicator's name: the group's name."""
    _group_index(group, "get_comm_name")
    return group


def _check_rank(fn, name, value):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{fn}: {name} must be an int, got {type(value).__name__}")


def create_group(group, rank_ids, options=None):
    """Makes group `group` of the world ranks `rank_ids` (every rank of the world calls it,
    with the same arguments, as MPI requires)."""
    _require_init("create_group")
    if not isinstance(group, str) or not group:
        raise TypeError(f"create_group: group must be a non-empty str, got {group!r}")
    if group in _WORLD_NAMES or group in _groups:
        raise ValueError(f"create_group: group {group!r} exists already")
    if not isinstance(rank_ids, (list, tuple)) or not rank_ids:
        raise TypeError(f"create_group: rank_ids must be a non-empty list of ints, got {rank_ids!r}")
    for r in rank_ids:
        _check_rank("create_group", "rank_ids", r)
    _groups[group] = _C.comm.create_group(list(rank_ids))
    _group_ranks[_groups[group]] = tuple(rank_ids)


def destroy_group(group):
    """Frees group `group` (not the world)."""
    index = _group_index(group, "destroy_group")
    if index == 0:
        raise ValueError("destroy_group: the world group cannot be destroyed")
    _C.comm.destroy_group(index)
    del _groups[group]
    del _group_ranks[index]


atexit.register(release)
