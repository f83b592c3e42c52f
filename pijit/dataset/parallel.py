"""Background work for the pipeline's num_parallel_workers: rows computed by worker threads
ahead of the consumer, delivered in order.

Two shapes of work:
- ordered_map(items, function, workers): function(item) for each item of an iterator, run by
  a pool of threads, at most `prefetch` results ahead of the consumer. The consumer reads
  `items` itself, so a source that must be read in order stays in order. Used by map and by
  random-access GeneratorDatasets (function reads one index).
- prefetched(iterator): one background thread reading an iterator ahead into a bounded queue
  (an iterable GeneratorDataset, read in order).

Errors: an exception raised in a worker is raised again in the consumer, with the worker's
traceback and a note saying where it ran, in place of the row it should have produced. The
consumer waits on the queue with a timeout and checks that the reader thread is alive, so a
dead worker never leaves it waiting. Closing the consumer early (take, a break) cancels the
queued work and stops the reader thread."""
import collections
import concurrent.futures
import queue
import threading

from pijit.dataset import config

__all__ = ["ordered_map", "prefetched", "check_workers"]

_POLL_SECONDS = 0.1


def check_workers(function, value):
    """`num_parallel_workers` as an int >= 1 (None: 1, the calling thread)."""
    if value is None:
        return 1
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{function}: 'num_parallel_workers' must be an int or None, got "
                        f"{type(value).__name__}")
    if not 1 <= value <= 65535:
        raise ValueError(f"{function}: 'num_parallel_workers' must be in [1, 65535], got {value}")
    return value


def _with_note(error, where):
    if hasattr(error, "add_note"):
        error.add_note(f"(raised in a dataset worker thread: {where})")
    return error


def ordered_map(items, function, workers, where):
    """function(item) for each item, computed by `workers` threads, yielded in item order.
    `where` names the pipeline node in errors."""
    prefetch = max(workers, min(config.get_prefetch_size(), 4 * workers))
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers,
                                                 thread_name_prefix="pijit-dataset")
    pending = collections.deque()
    try:
        for item in items:
            pending.append(pool.submit(function, item))
            if len(pending) >= prefetch:
                yield _result(pending.popleft(), where)
        while pending:
            yield _result(pending.popleft(), where)
    finally:
        for future in pending:
            future.cancel()
        pool.shutdown(wait=False, cancel_futures=True)


def _result(future, where):
    try:
        return future.result()
    except Exception as error:
        raise _with_note(error, where) from None


_DONE = object()


class _Failure:
    def __init__(self, error):
        self.error = error


def _read_ahead(iterator, buffer, stop):
    """The reader thread: puts each item (then _DONE, or the error) into `buffer`, giving up
    when `stop` is set."""
    def put(value):
        while not stop.is_set():
            try:
                buffer.put(value, timeout=_POLL_SECONDS)
                return True
            except queue.Full:
                continue
        return False

    try:
        for item in iterator:
            if not put(item):
                return
        put(_DONE)
    except BaseException as error:  # delivered to the consumer, never lost with the thread
        put(_Failure(error))


def prefetched(iterator, where, size=None):
    """The items of `iterator`, read ahead by one background thread into a queue of `size`
    items (the pipeline's prefetch size by default)."""
    size = size or config.get_prefetch_size()
    buffer = queue.Queue(maxsize=max(1, size))
    stop = threading.Event()
    reader = threading.Thread(target=_read_ahead, args=(iterator, buffer, stop), daemon=True,
                              name="pijit-dataset-reader")
    reader.start()
    try:
        while True:
            try:
                item = buffer.get(timeout=_POLL_SECONDS)
            except queue.Empty:
                if not reader.is_alive() and buffer.empty():
                    raise RuntimeError(f"{where}: the dataset reader thread ended without "
                                       f"finishing or reporting an error") from None
                continue
            if item is _DONE:
                return
            if isinstance(item, _Failure):
                raise _with_note(item.error, where) from None
            yield item
    finally:
        stop.set()
