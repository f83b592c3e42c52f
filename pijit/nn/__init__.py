"""Networks (MindSpore's mindspore.nn): Cell and its containers, layers and losses. Every
layer's construct is made of pijit ops, so a network's construct is captured as one graph
(GRAPH_MODE, @jit)."""
from pijit._tensor import Parameter, ParameterTuple
from pijit.nn.cell import Cell, CellList, SequentialCell
from pijit.nn.layers import *  # noqa: F401,F403
from pijit.nn.layers import __all__ as _layers
from pijit.nn.loss import L1Loss, LossBase, MSELoss, SoftmaxCrossEntropyWithLogits

__all__ = ["Cell", "CellList", "SequentialCell", "Parameter", "ParameterTuple", "LossBase",
           "MSELoss", "L1Loss", "SoftmaxCrossEntropyWithLogits", *_layers]
