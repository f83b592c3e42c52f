"""The datasets that read Python data: NumpySlicesDataset (arrays, lists, tuples, dicts) and
GeneratorDataset (a random-access object, an iterable or a generator function), with
MindSpore's shuffle defaults: a random-access source is shuffled unless shuffle=False; an
iterable one is read in order and cannot be shuffled (use .shuffle(buffer_size))."""
import types

import numpy as np

from pijit.dataset.datasets import Dataset, check_column_names, rng_for
from pijit.dataset.parallel import check_workers, ordered_map, prefetched

__all__ = ["NumpySlicesDataset", "GeneratorDataset"]


def _column_names(function, names):
    if names is None:
        return None
    return check_column_names(function, "column_names", names, "a str or a non-empty list of strs")


def _check_common(function, num_samples, shuffle, sampler, num_shards, shard_id):
    if num_samples is not None and (isinstance(num_samples, bool)
                                    or not isinstance(num_samples, int) or num_samples < 0):
        raise ValueError(f"{function}: 'num_samples' must be None or an int >= 0, got "
                         f"{num_samples!r}")
    if shuffle is not None and not isinstance(shuffle, bool):
        raise TypeError(f"{function}: 'shuffle' must be a bool or None, got "
                        f"{type(shuffle).__name__}")
    if sampler is not None:
        raise NotImplementedError(f"{function}: samplers are not supported; use shuffle and "
                                  f"num_shards/shard_id")
    if (num_shards is None) != (shard_id is None):
        raise ValueError(f"{function}: 'num_shards' and 'shard_id' must be given together")
    if num_shards is not None:
        for name, value in (("num_shards", num_shards), ("shard_id", shard_id)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{function}: '{name}' must be an int, got {type(value).__name__}")
        if num_shards < 1 or not 0 <= shard_id < num_shards:
            raise ValueError(f"{function}: 'shard_id' must be in [0, num_shards) and num_shards "
                             f">= 1, got num_shards={num_shards}, shard_id={shard_id}")


def _shard(indices, num_shards, shard_id):
    """Shard `shard_id` of `num_shards` of a pass's row indices, as MindSpore's distributed
    sampler takes them: every num_shards-th row from the shard's own, wrapping around so that
    every shard has ceil(rows / num_shards) rows (all shards take the same number of steps).
    Shuffled passes shuffle with the same seed on every shard before sharding."""
    n = len(indices)
    if n == 0 or num_shards == 1:
        return indices
    per_shard = -(-n // num_shards)
    return indices[(shard_id + num_shards * np.arange(per_shard)) % n]


def _as_row(item, column_count, function):
    """One source item as a row: a tuple or list is one value per column; anything else is the
    one column's value."""
    if isinstance(item, dict):
        raise TypeError(f"{function}: the source yielded a dict; yield a tuple with one value "
                        f"per column")
    values = tuple(item) if isinstance(item, (tuple, list)) else (item,)
    if len(values) != column_count:
        raise RuntimeError(f"{function}: the source yielded {len(values)} columns, but "
                           f"column_names names {column_count}")
    return tuple(v.asnumpy() if hasattr(v, "asnumpy") else np.asarray(v) for v in values)


class _IndexedSource(Dataset):
    """A source read by index, in order or (shuffle) in a random permutation per pass."""

    def __init__(self, length, shuffle, num_samples, num_shards=None, shard_id=None):
        super().__init__()
        self._length = length
        self._shuffle = shuffle
        self._num_samples = num_samples
        self._num_shards = num_shards or 1
        self._shard_id = shard_id or 0

    def _item(self, index):
        raise NotImplementedError

    def _indices(self, key):
        indices = rng_for(key, self._depth).permutation(self._length) if self._shuffle \
            else np.arange(self._length)
        indices = _shard(indices, self._num_shards, self._shard_id)
        return indices[:self._num_samples] if self._num_samples else indices

    def _rows(self, key):
        for index in self._indices(key):
            yield self._item(int(index))

    @property
    def indexable(self):
        """Whether rows can be read by position (split then reads only its rows)."""
        return True

    def _item_at(self, position):
        """The row at `position` of an unshuffled pass (what split reads by position)."""
        return self._item(position)

    def _count(self):
        rows = -(-self._length // self._num_shards) if self._length else 0
        return min(rows, self._num_samples) if self._num_samples else rows


class NumpySlicesDataset(_IndexedSource):
    """Rows sliced from Python data along its first axis: a list or NumPy array is one column;
    a tuple holds one column per element; a dict maps column names to columns. Columns are
    named `column_names`, the dict's keys, or column_0, column_1, .... Shuffled unless
    shuffle=False."""

    def __init__(self, data, column_names=None, num_samples=None, num_parallel_workers=1,
                 shuffle=None, sampler=None, num_shards=None, shard_id=None):
        _check_common("NumpySlicesDataset", num_samples, shuffle, sampler, num_shards, shard_id)
        names = _column_names("NumpySlicesDataset", column_names)
        if isinstance(data, dict):
            if not data:
                raise ValueError("NumpySlicesDataset: 'data' is an empty dict")
            default_names = [str(k) for k in data]
            columns = [np.asarray(list(v) if not isinstance(v, np.ndarray) else v)
                       for v in data.values()]
        elif isinstance(data, tuple):
            columns = [np.asarray(c.asnumpy() if hasattr(c, "asnumpy") else c) for c in data]
            default_names = None
        elif isinstance(data, (list, np.ndarray)) or hasattr(data, "asnumpy"):
            columns = [np.asarray(data.asnumpy() if hasattr(data, "asnumpy") else data)]
            default_names = None
        else:
            raise TypeError(f"NumpySlicesDataset: 'data' must be a list, tuple, dict or NumPy "
                            f"array, got {type(data).__name__}")
        if any(c.ndim == 0 for c in columns):
            raise ValueError("NumpySlicesDataset: each column must have a first axis to slice "
                             "along; got a scalar")
        lengths = [len(c) for c in columns]
        if len(set(lengths)) > 1:
            raise ValueError(f"NumpySlicesDataset: the columns have different lengths {lengths}")
        if names is None:
            names = default_names or [f"column_{i}" for i in range(len(columns))]
        if len(names) != len(columns):
            raise ValueError(f"NumpySlicesDataset: 'column_names' names {len(names)} columns, "
                             f"but the data has {len(columns)}")
        super().__init__(lengths[0], shuffle is not False, num_samples, num_shards, shard_id)
        self._columns = columns
        self._names = names

    def get_col_names(self):
        return list(self._names)

    def _item(self, index):
        return tuple(np.asarray(c[index]) for c in self._columns)

    @property
    def gathers_batches(self):
        """Whether batch may read a whole batch with one gather per column (the columns are
        arrays of fixed-size elements)."""
        return all(c.dtype != object for c in self._columns)

    def _batches(self, key, batch_size, drop_remainder):
        """The batches of one pass, each column gathered at the batch's indices at once: the
        rows, order and values of batching this pass's rows one by one, at a fraction of the
        cost."""
        indices = self._indices(key)
        for start in range(0, len(indices), batch_size):
            chunk = indices[start:start + batch_size]
            if len(chunk) < batch_size and drop_remainder:
                return
            yield tuple(c[chunk] for c in self._columns)


class _ReplayedGenerator:
    """A generator object, iterable again: the items of the first pass are kept and replayed,
    as MindSpore does for a generator object given as source."""

    def __init__(self, generator):
        self._generator = generator
        self._seen = []

    def __iter__(self):
        yield from self._seen
        for item in self._generator:
            self._seen.append(item)
            yield item


class GeneratorDataset(_IndexedSource):
    """Rows from Python: `source` is random-access (__getitem__ and __len__: read by index,
    shuffled unless shuffle=False), an iterable (read in order; iter(source) is taken for each
    pass), or a callable returning an iterator (called for each pass). Each item is a tuple
    with one value per column of `column_names` (a lone value for one column). `column_types`
    (pijit dtypes) casts the columns.

    With num_parallel_workers > 1 the source is read ahead in background threads: a
    random-access source by that many threads each reading rows by index, an iterable one by
    one thread (it must be read in order). Rows come in the same order as without workers;
    an exception in the source is raised in the iterating thread with the source's
    traceback. Threads are used, not processes (python_multiprocessing is ignored)."""

    def __init__(self, source, column_names=None, column_types=None, schema=None,
                 num_samples=None, num_parallel_workers=1, shuffle=None, sampler=None,
                 num_shards=None, shard_id=None, python_multiprocessing=True, max_rowsize=None):
        _check_common("GeneratorDataset", num_samples, shuffle, sampler, num_shards, shard_id)
        self.num_parallel_workers = check_workers("GeneratorDataset", num_parallel_workers)
        names = _column_names("GeneratorDataset", column_names)
        if names is None:
            raise ValueError("GeneratorDataset: 'column_names' is required (schema is not "
                             "supported)")
        if isinstance(source, types.GeneratorType):
            source = _ReplayedGenerator(source)
        elif isinstance(source, zip):  # a zip is iterable once
            source = list(source)
        self._random_access = hasattr(source, "__getitem__") and hasattr(source, "__len__")
        if not self._random_access:
            if not (callable(source) or hasattr(source, "__iter__")):
                raise TypeError(f"GeneratorDataset: 'source' must be random-access, iterable or "
                                f"callable, got {type(source).__name__}")
            if shuffle:
                raise ValueError("GeneratorDataset: shuffle=True needs a random-access source "
                                 "(with __getitem__ and __len__); use .shuffle(buffer_size)")
        if num_shards is not None and not self._random_access:
            raise ValueError("GeneratorDataset: sharding (num_shards, shard_id) needs a "
                             "random-access source (with __getitem__ and __len__)")
        length = len(source) if self._random_access else None
        super().__init__(length, self._random_access and shuffle is not False, num_samples,
                         num_shards, shard_id)
        self._source = source
        self._names = names
        self._types = self._column_numpy_types(column_types, len(names))

    @staticmethod
    def _column_numpy_types(column_types, count):
        if column_types is None:
            return None
        if not isinstance(column_types, (list, tuple)) or len(column_types) != count:
            raise ValueError(f"GeneratorDataset: 'column_types' must list one dtype per column "
                             f"({count}), got {column_types!r}")
        return [t.to_numpy() if hasattr(t, "to_numpy") else np.dtype(t) for t in column_types]

    def get_col_names(self):
        return list(self._names)

    def _typed(self, row):
        if self._types is None:
            return row
        return tuple(np.asarray(v).astype(t) for v, t in zip(row, self._types))

    def _item(self, index):
        return self._typed(_as_row(self._source[index], len(self._names), "GeneratorDataset"))

    @property
    def indexable(self):
        return self._random_access

    def _rows(self, key):
        workers = self.num_parallel_workers
        if self._random_access:
            if workers == 1:
                yield from super()._rows(key)
            else:
                yield from ordered_map((int(i) for i in self._indices(key)), self._item, workers,
                                       "GeneratorDataset")
            return
        rows = self._iterable_rows()
        yield from (rows if workers == 1 else prefetched(rows, "GeneratorDataset"))

    def _iterable_rows(self):
        items = self._source() if callable(self._source) and \
            not hasattr(self._source, "__iter__") else iter(self._source)
        for count, item in enumerate(items):
            if self._num_samples and count >= self._num_samples:
                return
            yield self._typed(_as_row(item, len(self._names), "GeneratorDataset"))

    def _count(self):
        if self._random_access:
            return super()._count()
        return sum(1 for _ in self._iterable_rows())  # an iterable's length is known by reading it
