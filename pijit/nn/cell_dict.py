"""CellDict: Cells under string keys, registered as sub-cells in insertion order (MindSpore's
nn.CellDict). Like CellList it is a container: it has no construct of its own."""
from collections import OrderedDict

from pijit.nn.cell import Cell


class CellDict(Cell):
    def __init__(self, *args, **kwargs):
        auto_prefix = kwargs.pop("auto_prefix", True)
        super().__init__(auto_prefix=auto_prefix)
        if args:
            self.update(args[0])

    def _check(self, key, cell):
        if not isinstance(key, str):
            raise TypeError(f"CellDict: keys must be str, got {type(key).__name__}")
        if not isinstance(cell, Cell):
            raise TypeError(f"CellDict: values must be Cells, got {type(cell).__name__}")
        if key in ("training", "construct") or key.startswith("_") or "." in key:
            raise KeyError(f"CellDict: {key!r} cannot name a cell")

    def __setitem__(self, key, cell):
        self._check(key, cell)
        setattr(self, key, cell)

    def __getitem__(self, key):
        return self._registry()[1][key]

    def __delitem__(self, key):
        delattr(self, key)

    def __contains__(self, key):
        return key in self._registry()[1]

    def __len__(self):
        return len(self._registry()[1])

    def __iter__(self):
        return iter(self._registry()[1])

    def keys(self):
        return self._registry()[1].keys()

    def values(self):
        return self._registry()[1].values()

    def items(self):
        return self._registry()[1].items()

    def update(self, cells):
        """Adds (key, cell) pairs from a dict (in its order), a CellDict or an iterable of pairs."""
        pairs = cells.items() if isinstance(cells, (dict, OrderedDict, CellDict)) else cells
        for key, cell in pairs:
            self[key] = cell

    def pop(self, key):
        cell = self[key]
        del self[key]
        return cell

    def clear(self):
        for key in list(self.keys()):
            del self[key]

    def construct(self, *inputs):
        raise NotImplementedError("CellDict is a container and is not callable")
