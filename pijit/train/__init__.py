"""High-level training (MindSpore's mindspore.train): Model, callbacks, metrics and
checkpoints in MindSpore's .ckpt format.

    from pijit.train import Model, LossMonitor, ModelCheckpoint, CheckpointConfig
    model = Model(net, loss_fn, optimizer, metrics={"accuracy"})
    model.train(5, dataset, callbacks=[LossMonitor(), ModelCheckpoint("net", "ckpt")])
"""
from pijit.train import callback, metrics, summary
from pijit.train.callback import *  # noqa: F401,F403
from pijit.train.metrics import *  # noqa: F401,F403
from pijit.train.loss_scale_manager import (DynamicLossScaleManager, FixedLossScaleManager,
                                            LossScaleManager)
from pijit.train.model import Model
from pijit.train.dataset_sink import DatasetHelper, connect_network_with_dataset, data_sink
from pijit.train.graph_export import export, load
from pijit.train.serialization import load_checkpoint, load_param_into_net, save_checkpoint
from pijit.train import train_thor
from pijit.train.summary import SummaryRecord

__all__ = ["Model", "export", "load", "DatasetHelper", "connect_network_with_dataset", "data_sink", "save_checkpoint", "load_checkpoint", "load_param_into_net",
           "LossScaleManager", "FixedLossScaleManager", "DynamicLossScaleManager", "SummaryRecord"]
__all__.extend(callback.__all__)
__all__.extend(metrics.__all__)
