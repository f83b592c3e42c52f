"""Dataset, the base of every dataset, and the pipeline operations built on it: batch, shuffle,
map, repeat, take, skip, project and rename (MindSpore's mindspore.dataset.Dataset).

A dataset is a chain of nodes, each reading the rows of the one before. A row is a tuple of
NumPy arrays, one per column. Nothing runs until iteration: create_tuple_iterator and
create_dict_iterator (or a for loop) pull rows through the chain, and give Tensors (or NumPy
arrays with output_numpy=True).

Randomness is reproducible: each pass over a node gets a key (the iterator's seed, the epoch,
the repeat round...), and a shuffle draws from a generator seeded by that key and the node's
depth in the chain. After dataset.config.set_seed(n) the same pipeline gives the same orders
on every run; each epoch and each repeat round still shuffles anew."""
import itertools

import numpy as np

from pijit.dataset import _rng
from pijit.dataset.parallel import check_workers, ordered_map

__all__ = ["Dataset"]

_INT32_MAX = 2147483647


def _check_int(function, name, value, low, high=_INT32_MAX):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{function}: '{name}' must be an int, got {type(value).__name__}")
    if not low <= value <= high:
        raise ValueError(f"{function}: '{name}' must be in [{low}, {high}], got {value}")
    return value


def _column_list(function, name, columns):
    """`columns` (a str or a list of strs) as a list of strs."""
    if isinstance(columns, str):
        return [columns]
    return check_column_names(function, name, columns, "a non-empty str or list of strs")


def check_column_names(function, name, columns, expected):
    """`columns`, a str or a non-empty list or tuple of distinct non-empty strs, as a list of
    strs. `expected` words what the TypeError says the argument must be."""
    names = [columns] if isinstance(columns, str) else columns
    if not isinstance(names, (list, tuple)) or not names or \
            not all(isinstance(c, str) and c for c in names):
        raise TypeError(f"{function}: '{name}' must be {expected}, got {columns!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"{function}: '{name}' names a column twice: {list(names)}")
    return list(names)


def rng_for(key, depth):
    """The random generator of one pass (`key`) over the node at `depth`."""
    return np.random.default_rng(np.random.SeedSequence([*key, depth]))


class Dataset:
    """Base class: the pipeline operations, the iterators and the dataset's sizes. Subclasses
    define _rows(key), a generator of the rows of one pass, and get_col_names()."""

    def __init__(self, children=()):
        self.children = list(children)
        self._depth = 1 + max((c._depth for c in self.children), default=-1)
        self._size = None

    # ---- what subclasses define ----

    def _rows(self, key):
        raise NotImplementedError(f"{type(self).__name__} must define _rows")

    def get_col_names(self):
        """The column names, in row order."""
        return self.children[0].get_col_names()

    def _count(self):
        return self.children[0].get_dataset_size()

    # ---- sizes ----

    def get_dataset_size(self):
        """The number of rows one epoch yields (of batches, after batch); -1 when infinite."""
        if self._size is None:
            self._size = self._count()
        return self._size

    def get_batch_size(self):
        """The batch size of the last batch operation, 1 without one."""
        return self.children[0].get_batch_size() if self.children else 1

    def get_repeat_count(self):
        """The count of the last repeat operation, 1 without one."""
        return self.children[0].get_repeat_count() if self.children else 1

    def output_shapes(self):
        """The shape of each column of the first row."""
        return [list(np.shape(c)) for c in self._first_row()]

    def output_types(self):
        """The NumPy dtype of each column of the first row."""
        return [np.asarray(c).dtype for c in self._first_row()]

    def _first_row(self):
        for row in self._rows((0, 0)):
            return row
        raise RuntimeError(f"{type(self).__name__}: the dataset is empty")

    def reset(self):
        """Kept for MindSpore code that calls it; each iterator starts its own passes."""

    # ---- iteration ----

    def create_tuple_iterator(self, columns=None, num_epochs=-1, output_numpy=False,
                              do_copy=True):
        """An iterator yielding each row as a list of Tensors (NumPy arrays with output_numpy)
        for `num_epochs` epochs (-1: unlimited); each `for` loop over it runs one epoch."""
        from pijit.dataset.iterators import TupleIterator
        return TupleIterator(self, columns, num_epochs, output_numpy)

    def create_dict_iterator(self, num_epochs=-1, output_numpy=False, do_copy=True):
        """As create_tuple_iterator, each row a dict column name -> value."""
        from pijit.dataset.iterators import DictIterator
        return DictIterator(self, None, num_epochs, output_numpy)

    def __iter__(self):
        return iter(self.create_tuple_iterator(num_epochs=1))

    # ---- pipeline operations ----

    def batch(self, batch_size, drop_remainder=False, num_parallel_workers=None, **kwargs):
        """Stacks each `batch_size` consecutive rows into one row (each column gains a leading
        axis); a last, smaller batch is kept unless `drop_remainder`."""
        return BatchDataset(self, batch_size, drop_remainder, kwargs)

    def shuffle(self, buffer_size):
        """Shuffles the rows through a buffer of `buffer_size` rows: each output row is drawn at
        random from the buffer, which the next input row refills. A buffer as large as the
        dataset shuffles it uniformly."""
        return ShuffleDataset(self, buffer_size)

    def map(self, operations, input_columns=None, output_columns=None, num_parallel_workers=None,
            python_multiprocessing=False, cache=None, callbacks=None, **kwargs):
        """Applies `operations` (a callable or a list of them, applied in turn) to the
        `input_columns` of each row (default: the first column), each operation receiving the
        columns as NumPy arrays and returning an array or a tuple of arrays. The results become
        `output_columns` (default: the input columns), placed where the first input column
        was. With num_parallel_workers > 1, rows are mapped by that many threads ahead of the
        consumer (in order; an error in a worker is raised here with its traceback). Random
        transforms draw from a generator per row, so the results do not depend on the number
        of workers."""
        return MapDataset(self, operations, input_columns, output_columns, num_parallel_workers)

    def repeat(self, count=None):
        """The dataset `count` times over (None or -1: endlessly)."""
        return RepeatDataset(self, count)

    def take(self, count=-1):
        """The first `count` rows (-1: all)."""
        return TakeDataset(self, count)

    def skip(self, count):
        """All rows but the first `count`."""
        return SkipDataset(self, count)

    def project(self, columns):
        """Only `columns`, in that order."""
        return ProjectDataset(self, columns)

    def rename(self, input_columns, output_columns):
        """The columns `input_columns` renamed to `output_columns`."""
        return RenameDataset(self, input_columns, output_columns)

    def split(self, sizes, randomize=True):
        """Splits the dataset into non-overlapping datasets of `sizes` rows: ints summing to
        the dataset's size, or floats in (0, 1] summing to 1, each split then round(f * size)
        rows (the rounding difference is added to the first split, or taken from the first
        split large enough to keep a row). With `randomize`, the rows of each split are a
        random subset, drawn once here from the pipeline seed, and a random-access source's
        splits are read in a new random order each epoch; otherwise the splits are
        consecutive runs of rows."""
        from pijit.dataset.config import pipeline_seed
        if not isinstance(randomize, bool):
            raise TypeError(f"split: 'randomize' must be a bool, got {type(randomize).__name__}")
        total = self.get_dataset_size()
        if total < 0:
            raise RuntimeError("split: the dataset is endless (repeat() without a count); "
                               "split needs its size")
        counts = _split_sizes(sizes, total)
        order = np.random.default_rng(pipeline_seed()).permutation(total) if randomize \
            else np.arange(total)
        starts = np.cumsum([0] + counts)
        return tuple(SplitDataset(self, np.sort(order[a:b]) if randomize else order[a:b],
                                  randomize) for a, b in zip(starts[:-1], starts[1:]))


def _split_sizes(sizes, total):
    """split's `sizes` as row counts (see Dataset.split)."""
    if not isinstance(sizes, (list, tuple)) or not sizes:
        raise TypeError(f"split: 'sizes' must be a non-empty list of ints or of floats, got "
                        f"{sizes!r}")
    if all(isinstance(v, int) and not isinstance(v, bool) for v in sizes):
        if any(v <= 0 for v in sizes):
            raise ValueError(f"split: every size must be > 0, got {list(sizes)}")
        if sum(sizes) != total:
            raise RuntimeError(f"split: the sizes {list(sizes)} add up to {sum(sizes)}, but the "
                               f"dataset has {total} rows")
        return list(sizes)
    if not all(isinstance(v, float) for v in sizes):
        raise TypeError(f"split: 'sizes' must be all ints or all floats, got {list(sizes)}")
    if not all(0.0 < v <= 1.0 for v in sizes) or abs(sum(sizes) - 1.0) > 1e-9:
        raise ValueError(f"split: float sizes must be in (0, 1] and add up to 1, got "
                         f"{list(sizes)}")
    counts = [int(round(v * total)) for v in sizes]
    if any(c == 0 for c in counts):
        raise RuntimeError(f"split: the sizes {list(sizes)} of {total} rows give an empty split "
                           f"{counts}")
    difference = total - sum(counts)
    if difference > 0:
        counts[0] += difference
    elif difference < 0:
        large = next((i for i, c in enumerate(counts) if c + difference >= 1), None)
        if large is None:
            raise RuntimeError(f"split: cannot make the sizes {counts} add up to {total}")
        counts[large] += difference
    return counts


class SplitDataset(Dataset):
    """The rows of `child` at `positions` (positions within one pass). A random-access source
    (read by index) is read at those indices, in a new random order each pass when
    `reshuffle`; any other dataset is read whole and filtered, in its own order."""

    def __init__(self, child, positions, reshuffle):
        super().__init__([child])
        self._positions = np.asarray(positions, np.int64)
        self._reshuffle = reshuffle

    def _count(self):
        return len(self._positions)

    def _rows(self, key):
        child = self.children[0]
        if getattr(child, "indexable", False):
            positions = self._positions
            if self._reshuffle:
                positions = rng_for(key, self._depth).permutation(positions)
            for position in positions:
                yield child._item_at(int(position))
            return
        wanted = set(self._positions.tolist())
        for position, row in enumerate(child._rows(key)):
            if position in wanted:
                yield row


def _stack_column(values, name):
    try:
        return np.stack(values)
    except ValueError:
        shapes = sorted({tuple(np.shape(v)) for v in values})
        raise RuntimeError(f"batch: the rows of column {name!r} have different shapes {shapes} "
                           f"and cannot be stacked into one batch") from None


class BatchDataset(Dataset):
    def __init__(self, child, batch_size, drop_remainder, kwargs):
        super().__init__([child])
        if callable(batch_size) and not isinstance(batch_size, int):
            raise NotImplementedError("batch: a callable batch_size is not supported")
        self.batch_size = _check_int("batch", "batch_size", batch_size, 1)
        if not isinstance(drop_remainder, bool):
            raise TypeError(f"batch: 'drop_remainder' must be a bool, got "
                            f"{type(drop_remainder).__name__}")
        self.drop_remainder = drop_remainder
        unsupported = [k for k in ("per_batch_map", "input_columns", "output_columns",
                                   "pad_info") if kwargs.get(k) is not None]
        if unsupported:
            raise NotImplementedError(f"batch: {unsupported} are not supported")

    def _rows(self, key):
        child = self.children[0]
        if getattr(child, "gathers_batches", False):
            yield from child._batches(key, self.batch_size, self.drop_remainder)
            return
        names = self.get_col_names()
        rows = child._rows(key)
        while True:
            chunk = list(itertools.islice(rows, self.batch_size))
            if not chunk or (len(chunk) < self.batch_size and self.drop_remainder):
                return
            yield tuple(_stack_column([row[i] for row in chunk], names[i])
                        for i in range(len(chunk[0])))

    def _count(self):
        rows = self.children[0].get_dataset_size()
        if rows < 0:
            return rows
        return rows // self.batch_size if self.drop_remainder else -(-rows // self.batch_size)

    def get_batch_size(self):
        return self.batch_size


class ShuffleDataset(Dataset):
    def __init__(self, child, buffer_size):
        super().__init__([child])
        self.buffer_size = _check_int("shuffle", "buffer_size", buffer_size, 2)

    def _rows(self, key):
        rng = rng_for(key, self._depth)
        buffer = []
        for row in self.children[0]._rows(key):
            if len(buffer) < self.buffer_size:
                buffer.append(row)
                continue
            pick = int(rng.integers(len(buffer)))
            buffer[pick], row = row, buffer[pick]
            yield row
        while buffer:  # the input is exhausted: empty the buffer in random order
            yield buffer.pop(int(rng.integers(len(buffer))))


def _as_array(value):
    if hasattr(value, "asnumpy"):  # a pijit Tensor
        return value.asnumpy()
    return np.asarray(value)


class MapDataset(Dataset):
    def __init__(self, child, operations, input_columns, output_columns,
                 num_parallel_workers=None):
        super().__init__([child])
        self.num_parallel_workers = check_workers("map", num_parallel_workers)
        operations = list(operations) if isinstance(operations, (list, tuple)) else [operations]
        if not operations or not all(callable(op) for op in operations):
            raise TypeError(f"map: 'operations' must be a callable or a non-empty list of "
                            f"callables, got {operations!r}")
        self.operations = operations
        names = child.get_col_names()
        self.input_columns = _column_list("map", "input_columns",
                                          input_columns if input_columns is not None
                                          else names[:1])
        missing = [c for c in self.input_columns if c not in names]
        if missing:
            raise ValueError(f"map: input_columns {missing} are not columns of the dataset "
                             f"{names}")
        self.output_columns = self.input_columns if output_columns is None else \
            _column_list("map", "output_columns", output_columns)
        kept = [c for c in names if c not in self.input_columns]
        clash = [c for c in self.output_columns if c in kept]
        if clash:
            raise ValueError(f"map: output_columns {clash} are already columns of the dataset")
        # The outputs take the place of the first input column; the other columns keep order.
        first = names.index(self.input_columns[0])
        before = [c for c in names[:first] if c in kept]
        self._names = before + self.output_columns + [c for c in kept if c not in before]
        self._input_positions = [names.index(c) for c in self.input_columns]
        # Where each output column comes from: (True, j) the j-th result of the operations,
        # (False, i) the i-th column of the input row.
        self._sources = [(True, self.output_columns.index(c)) if c in self.output_columns
                         else (False, names.index(c)) for c in self._names]

    def get_col_names(self):
        return list(self._names)

    def _apply(self, values):
        for op in self.operations:
            result = op(*values)
            values = result if isinstance(result, tuple) else (result,)
        values = [v if type(v) is np.ndarray else _as_array(v) for v in values]
        if len(values) != len(self.output_columns):
            raise RuntimeError(f"map: the operations return {len(values)} columns, but "
                               f"output_columns names {len(self.output_columns)}: "
                               f"{self.output_columns}")
        return values

    def _map_row(self, key, position, row):
        previous = _rng.enter_row(key + (position,), self._depth)
        try:
            outputs = self._apply([row[i] for i in self._input_positions])
        finally:
            _rng.leave_row(previous)
        return tuple(outputs[i] if computed else row[i] for computed, i in self._sources)

    def _rows(self, key):
        rows = enumerate(self.children[0]._rows(key))
        if self.num_parallel_workers == 1:
            for position, row in rows:
                yield self._map_row(key, position, row)
            return
        yield from ordered_map(rows, lambda item: self._map_row(key, *item),
                               self.num_parallel_workers, "map")


class RepeatDataset(Dataset):
    def __init__(self, child, count):
        super().__init__([child])
        if count is None:
            count = -1
        if isinstance(count, bool) or not isinstance(count, int) or \
                not (count == -1 or 1 <= count <= _INT32_MAX):
            raise ValueError(f"repeat: 'count' must be -1 (endless), None or a positive int, got "
                             f"{count!r}")
        self.count = count

    def _rows(self, key):
        rounds = itertools.count() if self.count == -1 else range(self.count)
        for i in rounds:
            yield from self.children[0]._rows(key + (i,))

    def _count(self):
        rows = self.children[0].get_dataset_size()
        return -1 if self.count == -1 or rows < 0 else rows * self.count

    def get_repeat_count(self):
        return self.count


class TakeDataset(Dataset):
    def __init__(self, child, count):
        super().__init__([child])
        self.count = _check_int("take", "count", count, -1)

    def _rows(self, key):
        rows = self.children[0]._rows(key)
        yield from (rows if self.count == -1 else itertools.islice(rows, self.count))

    def _count(self):
        rows = self.children[0].get_dataset_size()
        if self.count == -1:
            return rows
        return self.count if rows < 0 else min(rows, self.count)


class SkipDataset(Dataset):
    def __init__(self, child, count):
        super().__init__([child])
        self.count = _check_int("skip", "count", count, 0)

    def _rows(self, key):
        yield from itertools.islice(self.children[0]._rows(key), self.count, None)

    def _count(self):
        rows = self.children[0].get_dataset_size()
        return rows if rows < 0 else max(rows - self.count, 0)


class ProjectDataset(Dataset):
    def __init__(self, child, columns):
        super().__init__([child])
        self.columns = _column_list("project", "columns", columns)
        names = child.get_col_names()
        missing = [c for c in self.columns if c not in names]
        if missing:
            raise ValueError(f"project: {missing} are not columns of the dataset {names}")
        self._positions = [names.index(c) for c in self.columns]

    def get_col_names(self):
        return list(self.columns)

    def _rows(self, key):
        for row in self.children[0]._rows(key):
            yield tuple(row[i] for i in self._positions)


class RenameDataset(Dataset):
    def __init__(self, child, input_columns, output_columns):
        super().__init__([child])
        old = _column_list("rename", "input_columns", input_columns)
        new = _column_list("rename", "output_columns", output_columns)
        names = child.get_col_names()
        if len(old) != len(new):
            raise ValueError(f"rename: input_columns and output_columns must have the same "
                             f"length, got {old} and {new}")
        missing = [c for c in old if c not in names]
        if missing:
            raise ValueError(f"rename: {missing} are not columns of the dataset {names}")
        mapping = dict(zip(old, new))
        self._names = [mapping.get(c, c) for c in names]
        if len(set(self._names)) != len(self._names):
            raise ValueError(f"rename: the new names {self._names} repeat a column name")

    def get_col_names(self):
        return list(self._names)

    def _rows(self, key):
        return self.children[0]._rows(key)
