"""Networks (MindSpore's mindspore.nn): Cell and its containers, layers, losses, optimizers
and training wrappers. Every layer's construct is made of pijit ops, so a network's construct
is captured as one graph (GRAPH_MODE, @jit)."""
from pijit._tensor import Parameter, ParameterTuple
from pijit.nn.cell import Cell, CellList, SequentialCell
from pijit.nn.cell_dict import CellDict
from pijit.nn.layers import *  # noqa: F401,F403
from pijit.nn.layers import __all__ as _layers
from pijit.nn.loss import L1Loss, LossBase, MSELoss, SoftmaxCrossEntropyWithLogits
from pijit.nn.losses_extra import *  # noqa: F401,F403
from pijit.nn.losses_extra import __all__ as _losses_extra
from pijit.nn.optim import SGD, Adam, Momentum, Optimizer
from pijit.nn.optim_more import *  # noqa: F401,F403
from pijit.nn.optim_more import __all__ as _optim_more
from pijit.nn.learning_rate_schedule import *  # noqa: F401,F403
from pijit.nn.learning_rate_schedule import __all__ as _schedules
from pijit.nn.wrap import (ForwardValueAndGrad, TrainOneStepCell, WithEvalCell, WithGradCell,
                           WithLossCell)
from pijit.nn.dynamic_lr import *  # noqa: F401,F403
from pijit.nn.dynamic_lr import __all__ as _dynamic_lr
from pijit.nn.losses_more import *  # noqa: F401,F403
from pijit.nn.losses_more import __all__ as _losses_more
from pijit.nn.optim_extra import *  # noqa: F401,F403
from pijit.nn.optim_extra import __all__ as _optim_extra
from pijit.nn.optim_thor import thor
from pijit.nn.wrap_more import *  # noqa: F401,F403
from pijit.nn.wrap_more import __all__ as _wrap_more

__all__ = ["Cell", "CellList", "CellDict", "SequentialCell", "Parameter", "ParameterTuple", "LossBase",
           "MSELoss", "L1Loss", "SoftmaxCrossEntropyWithLogits", "Optimizer", "SGD", "Momentum",
           "Adam", "WithLossCell", "TrainOneStepCell", "ForwardValueAndGrad", "WithEvalCell",
           "WithGradCell", *_layers, *_schedules,
           *_losses_extra, *_dynamic_lr, *_optim_more, *_losses_more,
           *_optim_extra, *_wrap_more, "thor"]

# MindSpore's loss-scaling training cells live in mindspore.nn; pijit keeps them with the
# training workflow (they import pijit.nn themselves, hence last).
from pijit.train.loss_scale_cells import (DynamicLossScaleUpdateCell,  # noqa: E402
                                          FixedLossScaleUpdateCell, TrainOneStepWithLossScaleCell)

from pijit.train.dataset_sink import GetNextSingleOp  # noqa: E402
from pijit.nn.graph_cell import GraphCell  # noqa: E402

__all__ += ["GetNextSingleOp", "GraphCell", "DynamicLossScaleUpdateCell", "FixedLossScaleUpdateCell",
            "TrainOneStepWithLossScaleCell"]

# MindSpore's nn also offers the metrics, which pijit keeps with the training workflow.
from pijit.train.metrics import *  # noqa: E402,F401,F403
from pijit.train.metrics import __all__ as _metrics  # noqa: E402

__all__ += _metrics
