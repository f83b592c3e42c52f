"""The structured trace: what the JIT did, as JSON lines (docs/trace.md gives the schema).

    with pijit.trace("traces"):      # or PIJIT_TRACE=traces python script.py
        train()

writes `traces/pijit-trace-<pid>.jsonl`: a `trace_start` record, then one record per event of
the compile path (each capture with its graph, guards, break and compile time per phase, each
recompile with the guard that rejected the call, the recompile limit, eager fallbacks), then
`trace_end`. Cache hits write nothing, so a traced program's steady state costs what an
untraced one does. The file stops growing at `max_bytes` (PIJIT_TRACE_MAX_MB, default 64 MiB)
with a `trace_truncated` record saying so.
"""
import atexit
import contextlib
import json
import os
import sys
import threading
import time

from pijit import _C

SCHEMA_VERSION = 1
DEFAULT_MAX_BYTES = 64 << 20


def _default_max_bytes():
    raw = os.environ.get("PIJIT_TRACE_MAX_MB")
    if raw is None:
        return DEFAULT_MAX_BYTES
    try:
        mb = float(raw)
    except ValueError:
        raise ValueError(f"PIJIT_TRACE_MAX_MB must be a number of MiB, got {raw!r}") from None
    if mb <= 0:
        raise ValueError(f"PIJIT_TRACE_MAX_MB must be positive, got {raw!r}")
    return int(mb * (1 << 20))


class _Writer:
    """Appends one JSON object per line to the process's trace file; the sink the runtime
    calls with each event's dict."""

    def __init__(self, directory, max_bytes):
        if not isinstance(directory, (str, os.PathLike)):
            raise TypeError(f"pijit.trace: directory must be a path, got {type(directory).__name__}")
        if not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or max_bytes <= 0:
            raise ValueError(f"pijit.trace: max_bytes must be a positive int, got {max_bytes!r}")
        os.makedirs(directory, exist_ok=True)
        self.path = os.path.join(os.fspath(directory), f"pijit-trace-{os.getpid()}.jsonl")
        self.max_bytes = max_bytes
        self.file = open(self.path, "a", encoding="utf-8")
        self.written = 0
        self.seq = 0
        self.truncated = False
        self.functions = set()  # (function, file, line) of the events written
        self.t0 = time.perf_counter()
        self.lock = threading.Lock()
        self._write({"event": "trace_start", "schema": SCHEMA_VERSION, "pid": os.getpid(),
                     "python": sys.version.split()[0], "argv": list(sys.argv),
                     "unix_time": time.time()}, force=True)

    def _write(self, record, force=False):
        record = {"seq": self.seq, "t": round(time.perf_counter() - self.t0, 6), **record}
        line = json.dumps(record, ensure_ascii=False, default=repr) + "\n"
        size = len(line.encode("utf-8"))
        if not force and self.written + size > self.max_bytes:
            if not self.truncated:
                self.truncated = True
                note = {"seq": self.seq, "t": record["t"], "event": "trace_truncated",
                        "max_bytes": self.max_bytes,
                        "note": "the trace reached its size cap; later events were dropped"}
                self.file.write(json.dumps(note) + "\n")
                self.file.flush()
                self.seq += 1
            return
        self.file.write(line)
        self.file.flush()
        self.written += size
        self.seq += 1

    def __call__(self, record):
        with self.lock:
            if not self.file.closed:
                if "function" in record:
                    self.functions.add((record["function"], record["file"], record["line"]))
                self._write(record)

    def close(self):
        with self.lock:
            if not self.file.closed:
                seen = self.functions
                stats = [d for d in _C._traced_function_stats()
                         if (d["function"], d["file"], d["line"]) in seen]
                stats.sort(key=lambda d: (d["file"], d["line"], d["function"]))
                self._write({"event": "function_stats", "functions": stats})
                rows = _C._node_profile()  # empty unless PIJIT_PROFILE is set
                if rows:
                    self._write({"event": "node_profile", "note": "process totals so far",
                                 "nodes": [{"node": n, "ms": round(ms, 4), "runs": c}
                                           for n, ms, c in rows]})
                self._write({"event": "trace_end"}, force=True)
                self.file.close()


_active = []  # the writers of enclosing trace() blocks; the innermost is the sink


def _install():
    _C._set_trace_sink(_active[-1] if _active else None)


@contextlib.contextmanager
def trace(directory, max_bytes=None):
    """Writes the structured trace of the code run inside the block to
    `directory/pijit-trace-<pid>.jsonl` (appended to; one `trace_start` per block). Yields
    the file's path."""
    writer = _Writer(directory, _default_max_bytes() if max_bytes is None else max_bytes)
    _active.append(writer)
    _install()
    try:
        yield writer.path
    finally:
        _active.remove(writer)
        _install()
        writer.close()


def read_trace(path):
    """The records of a trace file, as dicts (a truncated last line is left out)."""
    records = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                break  # a process killed while writing leaves a partial line
    return records


def _start_from_environment():
    directory = os.environ.get("PIJIT_TRACE")
    if not directory:
        return
    block = trace(directory)
    block.__enter__()
    atexit.register(block.__exit__, None, None, None)
