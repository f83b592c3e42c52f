"""nn.GraphCell: a Cell that runs a graph loaded by pijit.load (see pijit/train/graph_export.py)."""
from pijit import _C
from pijit._tensor import Parameter, Tensor
from pijit.nn.cell import Cell

__all__ = ["GraphCell"]


class GraphCell(Cell):
    """GraphCell(graph, params_init=None, obf_random_seed=None): calls run the loaded graph on
    the inputs (of the exported example's dtypes and shapes) with the cell's parameters, which
    start as the exported values under their exported names; `params_init` (a dict name ->
    Tensor or Parameter) replaces some of them."""

    def __init__(self, graph, params_init=None, obf_random_seed=None):
        super().__init__()
        from pijit.train.graph_export import Graph
        if not isinstance(graph, Graph):
            raise TypeError(f"GraphCell: graph must be what pijit.load returns, got "
                            f"{type(graph).__name__}")
        if obf_random_seed is not None:
            raise ValueError("GraphCell: obf_random_seed is for obfuscated models, which pijit "
                             "does not write; leave it None")
        if params_init is not None and not isinstance(params_init, dict):
            raise TypeError(f"GraphCell: params_init must be a dict, got "
                            f"{type(params_init).__name__}")
        self.__dict__["_graph"] = graph
        registry = self._registry()[0]
        order = []
        for name, value, requires_grad in graph.parameters:
            registry[name] = Parameter(Tensor(value), name=name, requires_grad=requires_grad)
            order.append(name)
        self.__dict__["_parameter_order"] = order
        for name, value in (params_init or {}).items():
            self._replace(name, value)

    def _replace(self, name, value):
        registry = self._registry()[0]
        if name not in registry:
            raise ValueError(f"GraphCell: params_init names {name!r}, which the graph has not "
                             f"(it has {sorted(registry)})")
        if not isinstance(value, Tensor):
            raise TypeError(f"GraphCell: params_init[{name!r}] must be a Tensor, got "
                            f"{type(value).__name__}")
        old = registry[name]
        if tuple(value.shape) != tuple(old.shape) or value.dtype != old.dtype:
            raise ValueError(f"GraphCell: params_init[{name!r}] is {value.dtype}{list(value.shape)}, "
                             f"the graph's parameter {old.dtype}{list(old.shape)}")
        old.set_data(Tensor(value))

    def __call__(self, *inputs):
        # The loaded graph is one compiled unit: a gradient tape would not see inside it.
        if _C._tape_recording():
            raise NotImplementedError("GraphCell: a loaded graph runs as one unit and is not "
                                      "differentiated; differentiate the network it came from")
        return self.construct(*inputs)

    def construct(self, *inputs):
        graph = self.__dict__["_graph"]
        specs = graph.input_specs
        if len(inputs) != len(specs):
            raise TypeError(f"GraphCell: the graph takes {len(specs)} inputs, got {len(inputs)}")
        for i, (x, (dtype, shape)) in enumerate(zip(inputs, specs)):
            if not isinstance(x, Tensor):
                raise TypeError(f"GraphCell: input {i} must be a Tensor, got {type(x).__name__}")
            if x.dtype != dtype or tuple(x.shape) != shape:
                raise ValueError(f"GraphCell: input {i} must be {dtype}{list(shape)} as exported, "
                                 f"got {x.dtype}{list(x.shape)}")
        registry = self._registry()[0]
        return graph.run(inputs, [registry[n] for n in self.__dict__["_parameter_order"]])
