"""Exporting a network's computation to a file and loading it back (MindSpore's
mindspore.export, mindspore.load and nn.GraphCell).

    ms.export(net, ms.Tensor(x), file_name="lenet", file_format="MINDIR")   # lenet.mindir
    graph = ms.load("lenet.mindir")
    net2 = nn.GraphCell(graph)
    net2(ms.Tensor(x))      # what net(x) gave, without the network's Python code

export runs the network once on the example inputs under a gradient tape that records every
op (runtime/tape.h, RecordEverything): the graph computes the outputs from the inputs and
the network's parameters, whose values the file keeps. The graph is exact for inputs of the
example's shapes and dtypes whenever the network's Python code took no decision from tensor
values: a call that read a value computed from the inputs into Python (a branch on a tensor,
a size taken from the data, asnumpy) is refused, as are Cells with their own bprop (their
construct is not recorded). The file is pijit's, a zip archive holding the graph
(graph/serialize.h) and the parameters, not MindSpore's protobuf MindIR: MindSpore cannot
read it, nor pijit MindSpore's.
"""
import json
import os
import zipfile

import numpy as np

from pijit import _C
from pijit import _tensor
from pijit._tensor import Tensor, bfloat16, float32

__all__ = ["export", "load", "Graph"]

_FORMAT = "pijit-graph"
_VERSION = 1
_SUFFIX = {"MINDIR": ".mindir"}


def _tensor_bytes(t):
    values = (t.astype(float32) if t.dtype == bfloat16 else t).asnumpy()
    return np.ascontiguousarray(values).tobytes()


def _tensor_of(data, dtype, shape):
    """The Tensor of dtype `dtype` (pijit's) and `shape` held in `data` (_tensor_bytes)."""
    wide = float32 if dtype == bfloat16 else dtype
    array = np.frombuffer(data, dtype=wide.to_numpy()).reshape(shape).copy()
    t = Tensor(array)
    return t.astype(bfloat16) if dtype == bfloat16 else t


def _file_name(file_name, file_format):
    if not isinstance(file_name, str) or not file_name:
        raise TypeError(f"export: file_name must be a non-empty str, got {file_name!r}")
    if not isinstance(file_format, str) or file_format.upper() not in ("MINDIR", "AIR", "ONNX"):
        raise ValueError(f"export: file_format must be 'MINDIR', 'AIR' or 'ONNX', got "
                         f"{file_format!r}")
    if file_format.upper() != "MINDIR":
        raise ValueError(f"export: pijit writes its graphs in the MINDIR slot only (file_format="
                         f"'MINDIR'); {file_format.upper()} files are for Ascend's and ONNX's tools")
    suffix = _SUFFIX["MINDIR"]
    return file_name if file_name.endswith(suffix) else file_name + suffix


def _traced_graph(net, inputs, parameters):
    """The graph-file bytes of net(*inputs), with the inputs then the parameters as its params;
    and whether the network returned one tensor (else a tuple)."""
    tape = _C._Tape()
    tape.record_everything()
    for x in inputs:
        tape.watch(x)
    for p in parameters:
        tape.watch(p)
    tape.start()
    try:
        out = net(*inputs)
    finally:
        tape.stop()
    single = isinstance(out, Tensor)
    outputs = [out] if single else out
    if not isinstance(outputs, (tuple, list)) or not outputs or \
            not all(isinstance(o, Tensor) for o in outputs):
        raise TypeError(f"export: the network must return a Tensor or a tuple of Tensors, got "
                        f"{type(out).__name__}")
    return tape.forward_graph(list(outputs)), single, len(outputs)


def export(net, *inputs, file_name, file_format, **kwargs):
    """Writes net's computation on inputs like `inputs` (Tensors) and its parameters' values to
    `file_name` (".mindir" added when missing); see the module docstring."""
    from pijit.nn.cell import Cell
    if not isinstance(net, Cell) and not callable(net):
        raise TypeError(f"export: net must be a Cell or a function, got {type(net).__name__}")
    path = _file_name(file_name, file_format)
    if not inputs or not all(isinstance(x, Tensor) for x in inputs):
        raise TypeError(f"export: the inputs must be one or more Tensors, got "
                        f"{[type(x).__name__ for x in inputs]}")
    # The same object twice would be one graph param: give each position its own.
    seen, copies = set(), []
    for x in inputs:
        copies.append(Tensor(x) if id(x) in seen else x)
        seen.add(id(x))
    named = []
    if isinstance(net, Cell):
        unique = {}
        for name, p in net.parameters_and_names():
            unique.setdefault(id(p), (name, p))
        named = list(unique.values())
    data, single, output_count = _traced_graph(net, copies, [p for _, p in named])
    manifest = {
        "format": _FORMAT, "version": _VERSION, "single_output": single,
        "output_count": output_count,
        "inputs": [{"dtype": x.dtype.name, "shape": list(x.shape)} for x in copies],
        "parameters": [{"name": name, "dtype": p.dtype.name, "shape": list(p.shape),
                        "requires_grad": bool(getattr(p, "requires_grad", True))}
                       for name, p in named],
    }
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("manifest.json", json.dumps(manifest))
        archive.writestr("graph.bin", data)
        for i, (_, p) in enumerate(named):
            archive.writestr(f"parameters/{i}.bin", _tensor_bytes(p))
    return path


def _dtype_named(name):
    for dtype in _tensor._DTYPES:
        if dtype.name == name:
            return dtype
    raise ValueError(f"load: the file names a dtype pijit lacks: {name!r}")


class Graph:
    """A graph read by pijit.load: the compiled computation, the example inputs' dtypes and
    shapes, and the parameters' names and values as exported. nn.GraphCell runs it."""

    def __init__(self, compiled, manifest, parameters):
        self._compiled = compiled
        self.input_specs = [(_dtype_named(s["dtype"]), tuple(s["shape"]))
                            for s in manifest["inputs"]]
        self.parameters = parameters  # [(name, Tensor, requires_grad)], in graph order
        self.single_output = manifest["single_output"]
        self.output_count = manifest["output_count"]

    def run(self, inputs, parameters):
        outputs = self._compiled.run(list(inputs) + list(parameters))
        return outputs[0] if self.single_output else tuple(outputs)

    def __repr__(self):
        return (f"Graph(inputs={[(str(d), s) for d, s in self.input_specs]}, "
                f"parameters={len(self.parameters)}, outputs={self.output_count})")

    @property
    def text(self):
        """The graph in pijit's IR text (graph/graph.h)."""
        return self._compiled.text


def load(file_name, **kwargs):
    """The Graph in `file_name` (written by pijit.export)."""
    if not isinstance(file_name, str):
        raise TypeError(f"load: file_name must be a str, got {type(file_name).__name__}")
    if not os.path.isfile(file_name):
        raise ValueError(f"load: no file {file_name!r}")
    try:
        with zipfile.ZipFile(file_name) as archive:
            manifest = json.loads(archive.read("manifest.json"))
            if manifest.get("format") != _FORMAT or manifest.get("version") != _VERSION:
                raise ValueError(f"load: {file_name!r} is not a pijit graph file of version "
                                 f"{_VERSION}")
            data = archive.read("graph.bin")
            parameters = []
            for i, spec in enumerate(manifest["parameters"]):
                value = _tensor_of(archive.read(f"parameters/{i}.bin"), _dtype_named(spec["dtype"]),
                                   tuple(spec["shape"]))
                parameters.append((spec["name"], value, spec["requires_grad"]))
    except (zipfile.BadZipFile, KeyError, json.JSONDecodeError) as e:
        raise ValueError(f"load: {file_name!r} is not a pijit graph file ({e}); MindSpore's "
                         f"MindIR files cannot be read") from None
    compiled = _C._GraphFile(data)
    return Graph(compiled, manifest, parameters)

