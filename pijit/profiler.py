"""mindspore.Profiler over pijit's own op timing: between start() and stop() every node of a
compiled graph and every eager op is timed on the host (the CUDA backend waits for each node, so
its time is the node's own), grouped by kind (op, result dtype and shape). analyse() writes the
tables MindSpore's CPU profiler writes, cpu_op_type_info_<rank>.csv and
cpu_op_detail_info_<rank>.csv, under <output_path>/profiler; op_analyse(op_name) returns one op's
rows as JSON.

What differs from MindSpore: there is no device timeline, memory, communication or framework
trace (the keyword arguments that ask for them are accepted and recorded, and
profile_memory=True or profile_communication=True say so with a warning); ops are named by kind,
not by their place in the network; a CUDA graph recorded before the profiler started replays
as one launch whose nodes are not timed one by one."""
import csv
import json
import os
import warnings

from pijit import _C

__all__ = ["Profiler"]

_active = []


def _rows():
    """(side, op, kind, milliseconds, count) per recorded kind, largest first."""
    rows = []
    for kind, ms, count in _C._node_profile():
        side = "eager" if kind.startswith("eager ") else "graph"
        if side == "eager":
            kind = kind[len("eager "):]
        op = kind.split(" ", 1)[0]
        rows.append((side, op, kind, ms, count))
    return rows


class Profiler:
    """Profiler(output_path="./data", start_profile=True, **options): records op times from
    construction (or from start() when start_profile=False) until stop() or analyse()."""

    def __init__(self, output_path="./data", start_profile=True, **options):
        if not isinstance(output_path, str) or not output_path:
            raise TypeError(f"Profiler: output_path must be a non-empty str, got {output_path!r}")
        if not isinstance(start_profile, bool):
            raise TypeError(f"Profiler: start_profile must be a bool, got "
                            f"{type(start_profile).__name__}")
        for option in ("profile_memory", "profile_communication"):
            if options.get(option):
                warnings.warn(f"Profiler: {option}=True records nothing in pijit: it times ops "
                              f"only", stacklevel=2)
        self._output_path = os.path.abspath(output_path)
        self._options = dict(options)
        self._metadata = {}
        self._running = False
        self._rows = None
        self.rank_id = 0
        if start_profile:
            self.start()

    def start(self):
        """Forgets earlier times and starts recording."""
        if self._running:
            warnings.warn("Profiler.start: already recording", stacklevel=2)
            return
        if _active:
            raise RuntimeError("Profiler.start: another Profiler is recording; stop it first")
        _C._reset_op_profile()
        _C._set_op_profiling(True)
        _active.append(self)
        self._running = True
        self._rows = None

    def stop(self):
        """Stops recording and keeps what was recorded for analyse() and op_analyse()."""
        if not self._running:
            raise RuntimeError("Profiler.stop: the profiler is not recording (call start() "
                               "first)")
        self._rows = _rows()
        _C._set_op_profiling(bool(os.environ.get("PIJIT_PROFILE")))
        _active.remove(self)
        self._running = False

    def _recorded(self):
        if self._running:
            self.stop()
        if self._rows is None:
            raise RuntimeError("Profiler: nothing was recorded (start() was never called)")
        return self._rows

    def add_metadata(self, key, value):
        """Records (key, value) with the results (written by analyse() to profiler_info.json)."""
        if not isinstance(key, str):
            raise TypeError(f"Profiler.add_metadata: key must be a str, got {type(key).__name__}")
        self._metadata[key] = str(value)

    def add_metadata_json(self, key, value):
        """As add_metadata, with value a JSON string."""
        self._metadata[key] = json.loads(value)

    def analyse(self, offline_path=None, pretty=False, step_list=None, mode="sync"):
        """Stops recording if needed and writes the op tables under <output_path>/profiler."""
        rows = self._recorded()
        folder = os.path.join(offline_path or self._output_path, "profiler")
        os.makedirs(folder, exist_ok=True)
        total = sum(r[3] for r in rows) or 1.0
        with open(os.path.join(folder, f"cpu_op_detail_info_{self.rank_id}.csv"), "w",
                  newline="") as f:
            out = csv.writer(f)
            out.writerow(["op_side", "op_type", "op_name", "op_occurrences", "op_total_time(us)",
                          "op_avg_time(us)", "total_percentage"])
            for side, op, kind, ms, count in rows:
                out.writerow([side, op, kind, count, f"{ms * 1e3:.3f}", f"{ms * 1e3 / count:.3f}",
                              f"{100 * ms / total:.2f}"])
        by_type = {}
        for _, op, _, ms, count in rows:
            entry = by_type.setdefault(op, [0, 0.0])
            entry[0] += count
            entry[1] += ms
        with open(os.path.join(folder, f"cpu_op_type_info_{self.rank_id}.csv"), "w",
                  newline="") as f:
            out = csv.writer(f)
            out.writerow(["op_type", "type_occurrences", "total_compute_time", "avg_time(ms)",
                          "percent"])
            for op, (count, ms) in sorted(by_type.items(), key=lambda kv: -kv[1][1]):
                out.writerow([op, count, f"{ms:.6f}", f"{ms / count:.6f}",
                              f"{100 * ms / total:.2f}"])
        with open(os.path.join(folder, "profiler_info.json"), "w") as f:
            json.dump({"options": {k: str(v) for k, v in self._options.items()},
                       "metadata": self._metadata, "total_ms": total if rows else 0.0}, f,
                      indent=2 if pretty else None)

    def op_analyse(self, op_name, device_id=None):
        """The recorded kinds of op `op_name` (a name or a list of names) as a JSON string:
        {name: {"op_info": [{"op_side", "op_kind", "count", "total_ms", "avg_ms"}, ...]}}."""
        names = [op_name] if isinstance(op_name, str) else list(op_name)
        if not names or not all(isinstance(n, str) for n in names):
            raise TypeError(f"Profiler.op_analyse: op_name must be a str or a list of them, got "
                            f"{op_name!r}")
        rows = self._recorded()
        result = {}
        for name in names:
            result[name] = {"op_info": [
                {"op_side": side, "op_kind": kind, "count": count, "total_ms": ms,
                 "avg_ms": ms / count} for side, op, kind, ms, count in rows if op == name]}
        return json.dumps(result)

    @staticmethod
    def offline_analyse(path, pretty=False, step_list=None, data_simplification=True):
        """pijit keeps no raw profiling data on disk to analyse later: analyse() writes the
        tables directly."""
        raise NotImplementedError("Profiler.offline_analyse: pijit writes its tables when "
                                  "analyse() is called; there is no raw data to analyse later")

    def __enter__(self):
        if not self._running:
            self.start()
        return self

    def __exit__(self, *exc):
        if self._running:
            self.stop()
        return False
