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
from pijit.ops import Primitive

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


def _scatter_nd(kind, input_x, indices, updates):
    return _write(f"scatter_nd_{kind}", input_x, _NDS[kind](input_x, indices, updates))


def _scatter_rows(kind, input_x, indices, updates):
    check_tensor(f"scatter_{kind}", "indices", indices)
    return _write(f"scatter_{kind}", input_x,
                  _NDS[kind](input_x, _ops.unsqueeze(indices, -1), updates))


def scatter_add(input_x, indices, updates):
    """input_x[indices[i]] += updates[i] in the Parameter input_x (repeats accumulate)."""
    return _scatter_rows("add", input_x, indices, updates)


def scatter_sub(input_x, indices, updates):
    return _scatter_rows("sub", input_x, indices, updates)


def scatter_mul(input_x, indices, updates):
    return _scatter_rows("mul", input_x, indices, updates)


def scatter_div(input_x, indices, updates):
    return _scatter_rows("div", input_x, indices, updates)


def scatter_max(input_x, indices, updates):
    return _scatter_rows("max", input_x, indices, updates)


def scatter_min(input_x, indices, updates):
    return _scatter_rows("min", input_x, indices, updates)


def scatter_update(input_x, indices, updates):
    """input_x[indices[i]] = updates[i] in the Parameter input_x (distinct indices)."""
    return _scatter_rows("update", input_x, indices, updates)


def scatter_nd_add(input_x, indices, updates, use_locking=False):
    """input_x[indices[..., :]] += updates in the Parameter input_x."""
    return _scatter_nd("add", input_x, indices, updates)


def scatter_nd_sub(input_x, indices, updates, use_locking=False):
    return _scatter_nd("sub", input_x, indices, updates)


def scatter_nd_mul(input_x, indices, updates, use_locking=False):
    return _scatter_nd("mul", input_x, indices, updates)


def scatter_nd_div(input_x, indices, updates, use_locking=False):
    return _scatter_nd("div", input_x, indices, updates)


def scatter_nd_max(input_x, indices, updates, use_locking=False):
    return _scatter_nd("max", input_x, indices, updates)


def scatter_nd_min(input_x, indices, updates, use_locking=False):
    return _scatter_nd("min", input_x, indices, updates)


def scatter_nd_update(input_x, indices, updates, use_locking=True):
    return _scatter_nd("update", input_x, indices, updates)


# ---- primitives ----------------------------------------------------------------------------------

def _locking_primitive(name, fn, doc):
    """A primitive with MindSpore's use_locking attribute (no effect: updates run in order)."""

    def __init__(self, use_locking=False):
        Primitive.__init__(self, use_locking=use_locking)

    def __call__(self, input_x, indices, updates):
        return fn(input_x, indices, updates)

    return type(name, (Primitive,), {"__init__": __init__, "__call__": __call__,
                                     "__doc__": doc, "__module__": "pijit.ops"})


def _plain_primitive(name, fn, doc):
    return type(name, (Primitive,), {"__call__": lambda self, *args: fn(*args), "__doc__": doc,
                                     "__module__": "pijit.ops"})


ScatterAdd = _locking_primitive("ScatterAdd", scatter_add, "Parameter rows += updates.")
ScatterSub = _locking_primitive("ScatterSub", scatter_sub, "Parameter rows -= updates.")
ScatterMul = _locking_primitive("ScatterMul", scatter_mul, "Parameter rows *= updates.")
ScatterDiv = _locking_primitive("ScatterDiv", scatter_div, "Parameter rows /= updates.")
ScatterMax = _locking_primitive("ScatterMax", scatter_max, "Parameter rows = max(rows, updates).")
ScatterMin = _locking_primitive("ScatterMin", scatter_min, "Parameter rows = min(rows, updates).")
ScatterUpdate = _locking_primitive("ScatterUpdate", scatter_update, "Parameter rows = updates.")
ScatterNdAdd = _locking_primitive("ScatterNdAdd", scatter_nd_add, "Parameter slices += updates.")
ScatterNdSub = _locking_primitive("ScatterNdSub", scatter_nd_sub, "Parameter slices -= updates.")
ScatterNdMul = _locking_primitive("ScatterNdMul", scatter_nd_mul, "Parameter slices *= updates.")
ScatterNdDiv = _locking_primitive("ScatterNdDiv", scatter_nd_div, "Parameter slices /= updates.")
ScatterNdMax = _locking_primitive("ScatterNdMax", scatter_nd_max,
                                  "Parameter slices = max(slices, updates).")
ScatterNdMin = _locking_primitive("ScatterNdMin", scatter_nd_min,
                                  "Parameter slices = min(slices, updates).")
ScatterNdUpdate = _locking_primitive("ScatterNdUpdate", scatter_nd_update,
                                     "Parameter slices = updates.")
ScatterNonAliasingAdd = _plain_primitive("ScatterNonAliasingAdd", scatter_nd_add,
                                         "Parameter slices += updates.")
TensorScatterAdd = _plain_primitive("TensorScatterAdd", _ops_nd.tensor_scatter_add,
                                    "input_x with updates added at the index tuples.")
TensorScatterSub = _plain_primitive("TensorScatterSub", _ops_nd.tensor_scatter_sub,
                                    "input_x with updates subtracted at the index tuples.")
TensorScatterMul = _plain_primitive("TensorScatterMul", _ops_nd.tensor_scatter_mul,
                                    "input_x multiplied by updates at the index tuples.")
TensorScatterDiv = _plain_primitive("TensorScatterDiv", _ops_nd.tensor_scatter_div,
                                    "input_x divided by updates at the index tuples.")
TensorScatterMax = _plain_primitive("TensorScatterMax", _ops_nd.tensor_scatter_max,
                                    "input_x raised to updates at the index tuples.")
TensorScatterMin = _plain_primitive("TensorScatterMin", _ops_nd.tensor_scatter_min,
                                    "input_x lowered to updates at the index tuples.")
TensorScatterUpdate = _plain_primitive("TensorScatterUpdate", _ops_nd.tensor_scatter_update,
                                       "input_x with updates at the index tuples.")
ScatterNd = _plain_primitive("ScatterNd", _ops_nd.scatter_nd,
                             "ScatterNd()(indices, updates, shape).")
GatherNd = _plain_primitive("GatherNd", _ops_nd.gather_nd, "GatherNd()(input_x, indices).")


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
