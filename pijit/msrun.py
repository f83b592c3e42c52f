"""MindSpore's `msrun` launcher on Open MPI: starts a data-parallel job's processes with mpirun.

    python -m pijit.msrun --worker_num=2 --local_worker_num=2 train.py [script arguments]
    python -m pijit.msrun --worker_num=4 --local_worker_num=2 --hosts=node1,node2 train.py

MindSpore's msrun runs on every machine and meets the others at --master_addr; mpirun starts
every machine's processes from one of them, so a job of several machines names them with
--hosts (pijit's option: each runs --local_worker_num processes, and the machines must reach
each other by ssh, as mpirun needs). The script calls pijit.communication.init() as under
msrun. --log_dir keeps each rank's output apart, as mpirun names it
(<log_dir>/1/rank.<rank>/stdout and stderr), and --cluster_time_out sets how long a collective waits for the other ranks (PIJIT_COMM_TIMEOUT).
msrun's rendezvous options (--master_addr, --master_port, --node_rank, --join,
--bind_core, --sim_level, ...) are accepted and not needed: mpirun does the rendezvous."""
import argparse
import os
import shutil
import subprocess
import sys

_IGNORED = ("master_addr", "master_port", "node_rank", "join", "bind_core", "sim_level",
            "sim_rank_id", "rank_table_file", "worker_log_name", "tail_worker_log")


def _parser():
    p = argparse.ArgumentParser(prog="python -m pijit.msrun", description=__doc__.split("\n")[0])
    p.add_argument("--worker_num", type=int, default=8, help="processes in the job")
    p.add_argument("--local_worker_num", type=int, default=8, help="processes on each machine")
    p.add_argument("--hosts", default=None,
                   help="comma-separated machines of a job of several (mpirun starts them all)")
    p.add_argument("--log_dir", default=None, help="folder for each rank's output")
    p.add_argument("--cluster_time_out", type=int, default=None,
                   help="seconds a collective waits for the other ranks")
    for name in _IGNORED:
        p.add_argument(f"--{name}", default=None, help=argparse.SUPPRESS)
    p.add_argument("task_script", help="the training script")
    p.add_argument("task_script_args", nargs=argparse.REMAINDER)
    return p


def command(args, mpirun="mpirun"):
    """The mpirun command line for parsed `args` (ValueError where they do not fit together)."""
    if args.worker_num < 1 or args.local_worker_num < 1:
        raise ValueError(f"msrun: --worker_num and --local_worker_num must be >= 1, got "
                         f"{args.worker_num} and {args.local_worker_num}")
    cmd = [mpirun]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    if args.hosts:
        hosts = [h for h in args.hosts.split(",") if h]
        if len(hosts) * args.local_worker_num != args.worker_num:
            raise ValueError(f"msrun: {len(hosts)} hosts of {args.local_worker_num} workers make "
                             f"{len(hosts) * args.local_worker_num}, not --worker_num "
                             f"{args.worker_num}")
        cmd += ["-H", ",".join(f"{h}:{args.local_worker_num}" for h in hosts)]
    elif args.worker_num != args.local_worker_num:
        raise ValueError(f"msrun: --worker_num {args.worker_num} is more than this machine's "
                         f"--local_worker_num {args.local_worker_num}; name the machines with "
                         f"--hosts=host1,host2,... (mpirun starts them all)")
    if args.local_worker_num > (os.cpu_count() or 1):
        cmd.append("--oversubscribe")
    if args.log_dir:
        cmd += ["--output-filename", os.path.abspath(args.log_dir)]
    if args.cluster_time_out:
        cmd += ["-x", f"PIJIT_COMM_TIMEOUT={args.cluster_time_out}"]
    cmd += ["-n", str(args.worker_num), sys.executable, args.task_script, *args.task_script_args]
    return cmd


def main(argv=None):
    args = _parser().parse_args(argv)
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        sys.exit("msrun: Open MPI's mpirun is not installed (Debian: apt-get install openmpi-bin "
                 "libopenmpi-dev; scripts/setup_deps.sh does it)")
    try:
        cmd = command(args, mpirun)
    except ValueError as e:
        sys.exit(str(e))
    return subprocess.call(cmd)


if __name__ == "__main__":
    sys.exit(main())
