"""Callbacks for Model.train, Model.eval and Model.fit (MindSpore's mindspore.train.callback)."""
from pijit.train.callback._callback import Callback, RunContext
from pijit.train.callback._callback import CallbackManager as _CallbackManager  # noqa: F401
from pijit.train.callback._callback import (  # noqa: F401
    InternalCallbackParam as _InternalCallbackParam)
from pijit.train.callback._checkpoint import CheckpointConfig, ModelCheckpoint
from pijit.train.callback._monitors import (EarlyStopping, History, LambdaCallback,
                                            LearningRateScheduler, LossMonitor, TimeMonitor)
from pijit.train.callback._progress import ProgressBar
from pijit.train.callback._summary_collector import SummaryCollector

__all__ = ["Callback", "RunContext", "LossMonitor", "TimeMonitor", "ModelCheckpoint",
           "CheckpointConfig", "LearningRateScheduler", "History", "LambdaCallback",
           "EarlyStopping", "ProgressBar", "SummaryCollector"]
