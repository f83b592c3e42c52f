"""Collective communication for data-parallel training, with MindSpore's
mindspore.communication names (management.py, comm_func.py) on Open MPI, and its successor
mindspore.ops.communication (process_group.py, importable as pijit.ops.communication)."""
import sys

from pijit.communication import comm_func, process_group
from pijit.communication.management import (GlobalComm, HCCL_WORLD_COMM_GROUP,
                                            MCCL_WORLD_COMM_GROUP, NCCL_WORLD_COMM_GROUP,
                                            create_group, destroy_group, get_comm_name,
                                            get_group_rank_from_world_rank, get_group_size,
                                            get_local_rank, get_local_rank_size,
                                            get_process_group_ranks, get_rank,
                                            get_world_rank_from_group_rank, init, release)

__all__ = ["GlobalComm", "init", "release", "get_rank", "get_group_size",
           "get_world_rank_from_group_rank", "get_group_rank_from_world_rank", "create_group",
           "get_comm_name", "HCCL_WORLD_COMM_GROUP", "NCCL_WORLD_COMM_GROUP",
           "MCCL_WORLD_COMM_GROUP", "get_local_rank", "get_local_rank_size", "destroy_group",
           "get_process_group_ranks", "comm_func"]

# mindspore.ops.communication's place: `import pijit.ops.communication` and `from pijit.ops
# import communication` find it here, and pijit.ops (being imported when this runs) gets the
# attribute.
sys.modules.setdefault("pijit.ops.communication", process_group)
if "pijit.ops" in sys.modules:
    sys.modules["pijit.ops"].communication = process_group
