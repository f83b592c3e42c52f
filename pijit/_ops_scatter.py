"""MindSpore's scatter family on Parameters (ops.scatter_add, ops.scatter_nd_add, ...,
and their primitives ScatterAdd(), ScatterNdAdd(), ...) and the TensorScatter*/ScatterNd/
GatherNd primitives: the update is the matching tensor_scatter_* of pijit/_ops_nd.py,
written back into the Parameter with ops.assign, which captured code records like any
assignment. scatter_* index axis 0 (indices of any shape, updates of indices.shape +
x.shape[1:]); scatter_nd_* take index tuples in the last axis of indices."""
from pijit import _C
from pijit import _ops_nd
from pijit._tensor import Parameter
from pijit.mint._checks import check_tensor, raise_error
from pijit.ops import Primitive, _composed

_ops = _C.ops

_NDS = {"add": _ops_nd.tensor_scatter_add, "sub": _ops_nd.tensor_scatter_sub,
        "mul": _ops_nd.tensor_scatter_mul, "div": _ops_nd.tensor_scatter_div,
        "max": _ops_nd.tensor_scatter_max, "min": _ops_nd.tensor_scatter_min,
        "update": _ops_nd.tensor_scatter_update}


def _write(fname, input_x, value):
    """value written into the Parameter input_x in place; input_x returned."""
    if not isinstance(input_x, Parameter):
        raise_error(TypeError, f"{fname}: input_x must be a Parameter, got "
                               f"{type(input_x).__name__}")
    _ops.assign(input_x, value)
    return input_x


def _named(function, name, doc):
    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    return function


def _rows_function(kind, doc=None):
    """ops.scatter_<kind>(input_x, indices, updates): updates of the rows input_x[indices]."""
    name = f"scatter_{kind}"

    def scatter(input_x, indices, updates):
        check_tensor(name, "indices", indices)
        return _write(name, input_x, _NDS[kind](input_x, _ops.unsqueeze(indices, -1), updates))
    return _named(scatter, name, doc)


def _nd_function(kind, doc=None, locking=False):
    """ops.scatter_nd_<kind>(input_x, indices, updates, use_locking=locking): updates at the
    index tuples. use_locking has no effect (updates run in order)."""
    name = f"scatter_nd_{kind}"

    def scatter_nd(input_x, indices, updates, use_locking=locking):
        return _write(name, input_x, _NDS[kind](input_x, indices, updates))
    return _named(scatter_nd, name, doc)


def _scatter_functions(kind, rows_doc=None, nd_doc=None, nd_locking=False):
    """ops.scatter_<kind> and ops.scatter_nd_<kind>."""
    return _rows_function(kind, rows_doc), _nd_function(kind, nd_doc, nd_locking)


scatter_add, scatter_nd_add = _scatter_functions(
    "add", "input_x[indices[i]] += updates[i] in the Parameter input_x (repeats accumulate).",
    "input_x[indices[..., :]] += updates in the Parameter input_x.")
scatter_sub, scatter_nd_sub = _scatter_functions("sub")
scatter_mul, scatter_nd_mul = _scatter_functions("mul")
scatter_div, scatter_nd_div = _scatter_functions("div")
scatter_max, scatter_nd_max = _scatter_functions("max")
scatter_min, scatter_nd_min = _scatter_functions("min")
scatter_update, scatter_nd_update = _scatter_functions(
    "update", "input_x[indices[i]] = updates[i] in the Parameter input_x (distinct indices).",
    nd_locking=True)


# ---- primitives ----------------------------------------------------------------------------------

def _locking_primitive(name, fn, doc):
    """A primitive with MindSpore's use_locking attribute (no effect: updates run in order)."""

    def __init__(self, use_locking=False):
        Primitive.__init__(self, use_locking=use_locking)

    def __call__(self, input_x, indices, updates):
        return fn(input_x, indices, updates)

    return type(name, (Primitive,), {"__init__": __init__, "__call__": __call__,
                                     "__doc__": doc, "__module__": "pijit.ops"})


def _rows_primitive(name, fn, update):
    return _locking_primitive(name, fn, f"Parameter rows {update}.")


def _slices_primitive(name, fn, update):
    return _locking_primitive(name, fn, f"Parameter slices {update}.")


def _tensor_scatter(name, kind, result):
    return _composed(name, _NDS[kind], f"input_x {result} at the index tuples.")


ScatterAdd = _rows_primitive("ScatterAdd", scatter_add, "+= updates")
ScatterSub = _rows_primitive("ScatterSub", scatter_sub, "-= updates")
ScatterMul = _rows_primitive("ScatterMul", scatter_mul, "*= updates")
ScatterDiv = _rows_primitive("ScatterDiv", scatter_div, "/= updates")
ScatterMax = _rows_primitive("ScatterMax", scatter_max, "= max(rows, updates)")
ScatterMin = _rows_primitive("ScatterMin", scatter_min, "= min(rows, updates)")
ScatterUpdate = _rows_primitive("ScatterUpdate", scatter_update, "= updates")
ScatterNdAdd = _slices_primitive("ScatterNdAdd", scatter_nd_add, "+= updates")
ScatterNdSub = _slices_primitive("ScatterNdSub", scatter_nd_sub, "-= updates")
ScatterNdMul = _slices_primitive("ScatterNdMul", scatter_nd_mul, "*= updates")
ScatterNdDiv = _slices_primitive("ScatterNdDiv", scatter_nd_div, "/= updates")
ScatterNdMax = _slices_primitive("ScatterNdMax", scatter_nd_max, "= max(slices, updates)")
ScatterNdMin = _slices_primitive("ScatterNdMin", scatter_nd_min, "= min(slices, updates)")
ScatterNdUpdate = _slices_primitive("ScatterNdUpdate", scatter_nd_update, "= updates")
ScatterNonAliasingAdd = _composed("ScatterNonAliasingAdd", scatter_nd_add,
                                  "Parameter slices += updates.")
TensorScatterAdd = _tensor_scatter("TensorScatterAdd", "add", "with updates added")
TensorScatterSub = _tensor_scatter("TensorScatterSub", "sub", "with updates subtracted")
TensorScatterMul = _tensor_scatter("TensorScatterMul", "mul", "multiplied by updates")
TensorScatterDiv = _tensor_scatter("TensorScatterDiv", "div", "divided by updates")
TensorScatterMax = _tensor_scatter("TensorScatterMax", "max", "raised to updates")
TensorScatterMin = _tensor_scatter("TensorScatterMin", "min", "lowered to updates")
TensorScatterUpdate = _tensor_scatter("TensorScatterUpdate", "update", "with updates")
ScatterNd = _composed("ScatterNd", _ops_nd.scatter_nd, "ScatterNd()(indices, updates, shape).")
GatherNd = _composed("GatherNd", _ops_nd.gather_nd, "GatherNd()(input_x, indices).")


class Einsum(Primitive):
    """Einsum(equation)(operands): ops.einsum(equation, *operands)."""

    def __init__(self, equation):
        if not isinstance(equation, str):
            raise TypeError(f"Einsum: equation must be a str, got {type(equation).__name__}")
        super().__init__(equation=equation)

    def __call__(self, operands):
        return _ops_nd.einsum(self.equation, *tuple(operands))


__all__ = ["scatter_add", "scatter_div", "scatter_max", "scatter_min", "scatter_mul",
           "scatter_nd_add", "scatter_nd_div", "scatter_nd_max", "scatter_nd_min",
           "scatter_nd_mul", "scatter_nd_sub", "scatter_nd_update", "scatter_sub",
           "scatter_update", "ScatterAdd", "ScatterSub", "ScatterMul", "ScatterDiv",
           "ScatterMax", "ScatterMin", "ScatterUpdate", "ScatterNdAdd", "ScatterNdSub",
           "ScatterNdMul", "ScatterNdDiv", "ScatterNdMax", "ScatterNdMin", "ScatterNdUpdate",
           "ScatterNonAliasingAdd", "TensorScatterAdd", "TensorScatterSub", "TensorScatterMul",
           "TensorScatterDiv", "TensorScatterMax", "TensorScatterMin", "TensorScatterUpdate",
           "ScatterNd", "GatherNd", "Einsum"]
