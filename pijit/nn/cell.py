"""Cell: the base class of networks, with parameter and sub-cell registration; CellList and
SequentialCell. In GRAPH_MODE a Cell's construct is compiled as one graph."""
import warnings
from collections import OrderedDict

from pijit import _C
from pijit import _autodiff
from pijit._tensor import Parameter
from pijit.context import GRAPH_MODE, get_context
from pijit.jit_config import settings_of
from pijit.nn import _inputs


class Cell:
    """Base class of networks. Subclasses define `construct(*inputs)`.

    Parameters and Cells assigned as attributes are registered (in assignment order). With
    auto_prefix (the default), a Cell assigned as attribute `name` prefixes the names of its
    parameters with "name.", so nested parameters are named by their path ("conv1.weight").

    Attributes stay plain instance attributes (Cell defines no __getattr__), which is what
    lets capture read them and inline sub-cells' construct into one graph."""

    def __init__(self, auto_prefix=True, flags=None):
        d = self.__dict__
        d["_params"] = OrderedDict()
        d["_cells"] = OrderedDict()
        d["training"] = False
        d["requires_grad"] = False
        d["_auto_prefix"] = auto_prefix

    def _registry(self):
        d = self.__dict__
        if "_params" not in d:  # a subclass that did not call Cell.__init__
            Cell.__init__(self)
        return d["_params"], d["_cells"]

    def __setattr__(self, name, value):
        params, cells = self._registry()
        params.pop(name, None)
        cells.pop(name, None)
        if isinstance(value, Parameter):
            if value.name is None:
                value.name = name
            params[name] = value
        elif isinstance(value, Cell):
            if self.__dict__["_auto_prefix"]:
                value.update_parameters_name(name + ".")
            cells[name] = value
        self.__dict__[name] = value

    def __delattr__(self, name):
        params, cells = self._registry()
        params.pop(name, None)
        cells.pop(name, None)
        object.__delattr__(self, name)

    def construct(self, *inputs):
        raise NotImplementedError(f"{type(self).__name__} must define construct()")

    def __call__(self, *args, **kwargs):
        if _C._tape_recording():
            if _autodiff.has_bprop(self):
                return _autodiff.call_with_bprop(self, args, kwargs)  # a custom gradient
        if get_context("mode") == GRAPH_MODE and not getattr(type(self), "_pijit_eager", False):
            cls = type(self)
            inputs = self.__dict__.get("_pijit_inputs")
            dims = ()
            if inputs is not None:
                _inputs.check_inputs(self, inputs, args)
                dims = _inputs.dynamic_dims(inputs, args)
            # One compiled construct per set of symbolic input sizes (set_inputs); the one
            # without is also _pijit_graph_construct.
            compiled_by_dims = cls.__dict__.get("_pijit_graph_constructs")
            construct = getattr(cls.construct, "__wrapped__", cls.construct)  # @jit classes too
            if compiled_by_dims is None or compiled_by_dims[0] is not construct:
                compiled_by_dims = (construct, {})
                setattr(cls, "_pijit_graph_constructs", compiled_by_dims)
            # set_jit_config(JitConfig(jit_level="O0")): this instance's graphs unoptimised.
            optimize = self.__dict__.get("_jit_config_dict", {}).get("jit_level") != "O0"
            compiled = compiled_by_dims[1].get((dims, optimize))
            if compiled is None:
                compiled = _C.JitFunction(construct, fullgraph=True, dynamic_dims=dims,
                                          optimize=optimize)
                compiled_by_dims[1][(dims, optimize)] = compiled
                if not dims and optimize:
                    setattr(cls, "_pijit_graph_construct", compiled)
            try:
                return compiled(self, *args, **kwargs)
            except _C.GraphBreakError as e:
                if "pijit._autodiff" not in str(e):
                    raise
                # Gradients are taken on the eager tape: a construct that calls a gradient
                # transform (GradOperation, grad, value_and_grad) runs eagerly, and the Cells
                # it calls are still compiled.
                setattr(cls, "_pijit_eager", True)
        return self.construct(*args, **kwargs)

    def set_inputs(self, *inputs):
        """Declares the inputs construct is compiled for in GRAPH_MODE: placeholders
        (Tensor(shape=[None, 3], dtype=...)) make their None sizes symbolic from the first
        compile; a call whose tensors do not match a placeholder's dtype or known sizes
        raises a ValueError naming the input."""
        object.__setattr__(self, "_pijit_inputs", tuple(inputs))

    def get_inputs(self):
        return self.__dict__.get("_pijit_inputs")

    def set_jit_config(self, jit_config):
        """The JitConfig this cell's construct compiles with in GRAPH_MODE (its jit_level:
        "O0" runs the graph as captured). As in MindSpore, only the first setting counts; a
        later one is ignored with a warning."""
        settings = dict(settings_of(jit_config))
        if "_jit_config_dict" in self.__dict__:
            warnings.warn("Cell.set_jit_config: a cell's jit config can be set once; this "
                          "setting is ignored", RuntimeWarning, stacklevel=2)
            return
        object.__setattr__(self, "_jit_config_dict", settings)

    # ---- registration ----

    def insert_param_to_cell(self, param_name, param, check_name=True):
        if check_name and "." in param_name:
            raise KeyError(f"insert_param_to_cell: parameter name {param_name!r} contains '.'")
        if not isinstance(param, Parameter):
            raise TypeError(f"insert_param_to_cell: expected a Parameter, got {type(param).__name__}")
        setattr(self, param_name, param)

    def insert_child_to_cell(self, child_name, child_cell):
        if not isinstance(child_cell, Cell):
            raise TypeError(f"insert_child_to_cell: expected a Cell, got {type(child_cell).__name__}")
        setattr(self, child_name, child_cell)

    def update_parameters_name(self, prefix="", recurse=True):
        """Prefixes the name of every parameter of this cell (and of its sub-cells)."""
        for p in self.get_parameters(expand=recurse):
            p.name = prefix + (p.name or "")

    # ---- traversal ----

    def cells_and_names(self, cells=None, name_prefix=""):
        """(name, cell) for this cell and every sub-cell, depth first, each cell once."""
        seen = set() if cells is None else cells
        if id(self) in seen:
            return
        seen.add(id(self))
        yield name_prefix, self
        for name, cell in self._registry()[1].items():
            yield from cell.cells_and_names(seen, f"{name_prefix}.{name}" if name_prefix else name)

    def cells(self):
        return iter(self._registry()[1].values())

    def name_cells(self):
        return OrderedDict(self._registry()[1])

    def parameters_and_names(self, name_prefix="", expand=True):
        """(attribute path, parameter) for every parameter, each once."""
        seen = set()
        for cell_name, cell in self.cells_and_names(name_prefix=name_prefix):
            for name, p in cell._registry()[0].items():
                if id(p) not in seen:
                    seen.add(id(p))
                    yield (f"{cell_name}.{name}" if cell_name else name), p
            if not expand:
                break

    def get_parameters(self, expand=True):
        for _, p in self.parameters_and_names(expand=expand):
            yield p

    def parameters_dict(self, recurse=True):
        return OrderedDict((p.name, p) for p in self.get_parameters(expand=recurse))

    def trainable_params(self, recurse=True):
        return [p for p in self.get_parameters(expand=recurse) if p.requires_grad]

    def untrainable_params(self, recurse=True):
        return [p for p in self.get_parameters(expand=recurse) if not p.requires_grad]

    def init_parameters_data(self, auto_parallel_mode=False):
        """Parameters are initialised when created; kept for MindSpore code that calls it."""
        return {}

    # ---- modes ----

    def set_train(self, mode=True):
        """Training (True) or evaluation (False) mode for this cell and all its sub-cells."""
        for _, cell in self.cells_and_names():
            cell.__dict__["training"] = bool(mode)
        return self

    def set_grad(self, requires_grad=True):
        self.__dict__["requires_grad"] = requires_grad
        return self

    # ---- printing ----

    def extend_repr(self):
        """The cell's own attributes, shown between < and > by repr."""
        return ""

    def __repr__(self):
        extra = self.extend_repr()
        info = type(self).__name__ + "<"
        cells = self._registry()[1]
        if not cells:
            return info + extra + ">"
        sub = "\n"
        if extra:
            sub += extra + "\n"
        for name, cell in cells.items():
            sub += f"({name}): {cell!r}\n"
        return info + sub.replace("\n", "\n  ") + ">"


# Capture inlines `construct` where a Cell is called.
_C._register_cell_call(Cell.__dict__["__call__"])


class _CellSequence(Cell):
    """Cells registered under their index ("0", "1", ...); `_cell_seq` mirrors them as a tuple
    (capture iterates plain tuples)."""

    def __init__(self, auto_prefix=True):
        super().__init__(auto_prefix)
        self.__dict__["_cell_seq"] = ()

    def _sync(self):
        self.__dict__["_cell_seq"] = tuple(self._registry()[1].values())

    def _add(self, name, cell):
        if not isinstance(cell, Cell):
            raise TypeError(f"{type(self).__name__}: items must be Cells, got {type(cell).__name__}")
        if self.__dict__["_auto_prefix"]:
            cell.update_parameters_name(f"{name}.")
        self._registry()[1][name] = cell
        self._sync()

    def _reindex(self, cells):
        self._registry()[1].clear()
        for i, cell in enumerate(cells):
            self._registry()[1][str(i)] = cell
        self._sync()

    def __len__(self):
        return len(self._registry()[1])

    def __iter__(self):
        return iter(self._cell_seq)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return type(self)(list(self._cell_seq[index]))
        return self._cell_seq[index]

    def __setitem__(self, index, cell):
        if not isinstance(cell, Cell):
            raise TypeError(f"{type(self).__name__}: items must be Cells, got {type(cell).__name__}")
        cells = list(self._cell_seq)
        cells[index] = cell
        self._reindex(cells)

    def __delitem__(self, index):
        cells = list(self._cell_seq)
        del cells[index]
        self._reindex(cells)

    def append(self, cell):
        self._add(str(len(self)), cell)
        return self

    def extend(self, cells):
        for cell in cells:
            self.append(cell)
        return self

    def insert(self, index, cell):
        cells = list(self._cell_seq)
        cells.insert(index, cell)
        self._reindex(cells)


class CellList(_CellSequence):
    """A list of Cells, registered as sub-cells under their index. A loop over it inside
    construct is captured (its __iter__ is inlined)."""

    def __init__(self, *args, **kwargs):
        auto_prefix = kwargs.pop("auto_prefix", True)
        super().__init__(auto_prefix)
        if args:
            self.extend(args[0])

    def construct(self, *inputs):
        raise NotImplementedError("CellList is a container and is not callable")


class SequentialCell(_CellSequence):
    """Runs its cells in order: SequentialCell(cell1, cell2), SequentialCell([cells]) or
    SequentialCell(OrderedDict(name=cell))."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, cell in args[0].items():
                self._add(name, cell)
        elif len(args) == 1 and isinstance(args[0], list):
            self.extend(args[0])
        else:
            self.extend(args)

    def construct(self, input_data):
        for cell in self._cell_seq:
            input_data = cell(input_data)
        return input_data
