"""Evaluation metrics (MindSpore's mindspore.train.metrics), and the names Model's `metrics`
takes: Model(..., metrics={"accuracy", "loss"}) builds one metric per name."""
from pijit.train.metrics.classification import (F1, Accuracy, Fbeta, Precision, Recall,
                                                Top1CategoricalAccuracy, Top5CategoricalAccuracy,
                                                TopKCategoricalAccuracy)
from pijit.train.metrics.confusion import ConfusionMatrix, ConfusionMatrixMetric
from pijit.train.metrics.curves import ROC, auc
from pijit.train.metrics.metric import Metric, rearrange_inputs
from pijit.train.metrics.occlusion import OcclusionSensitivity
from pijit.train.metrics.regression import MAE, MSE, Loss
from pijit.train.metrics.segmentation import (Dice, HausdorffDistance, MeanSurfaceDistance,
                                              RootMeanSquareDistance)
from pijit.train.metrics.similarity import CosineSimilarity
from pijit.train.metrics.text import BleuScore, Perplexity

__all__ = ["names", "get_metric_fn", "Metric", "rearrange_inputs", "Accuracy", "MAE", "MSE",
           "Precision", "Recall", "Fbeta", "F1", "TopKCategoricalAccuracy",
           "Top1CategoricalAccuracy", "Top5CategoricalAccuracy", "Loss", "BleuScore",
           "ConfusionMatrix", "ConfusionMatrixMetric", "CosineSimilarity", "Dice",
           "HausdorffDistance", "MeanSurfaceDistance", "OcclusionSensitivity", "Perplexity", "ROC",
           "RootMeanSquareDistance", "auc"]

# MindSpore's names for its metrics, those pijit has.
_FACTORY = {
    "accuracy": Accuracy,
    "acc": Accuracy,
    "precision": Precision,
    "recall": Recall,
    "F1": F1,
    "topk": TopKCategoricalAccuracy,
    "top_1_accuracy": Top1CategoricalAccuracy,
    "top_5_accuracy": Top5CategoricalAccuracy,
    "mae": MAE,
    "mse": MSE,
    "loss": Loss,
    "dice": Dice,
    "roc": ROC,
    "auc": auc,
    "bleu_score": BleuScore,
    "cosine_similarity": CosineSimilarity,
    "occlusion_sensitivity": OcclusionSensitivity,
    "hausdorff_distance": HausdorffDistance,
    "mean_surface_distance": MeanSurfaceDistance,
    "root_mean_square_distance": RootMeanSquareDistance,
    "perplexity": Perplexity,
    "confusion_matrix": ConfusionMatrix,
    "confusion_matrix_metric": ConfusionMatrixMetric,
}


def names():
    """The metric names get_metric_fn and Model's `metrics` accept, sorted."""
    return sorted(_FACTORY)


def get_metric_fn(name, *args, **kwargs):
    """A new metric of the given name (see names()), made with args and kwargs."""
    if name not in _FACTORY:
        raise KeyError(f"For 'get_metric_fn', unsupported metric {name!r}; the supported names "
                       f"are {names()}")
    return _FACTORY[name](*args, **kwargs)


def get_metrics(metrics):
    """{name: Metric} from Model's `metrics`: None, a set of names, or a dict name -> Metric."""
    if metrics is None:
        return None
    if isinstance(metrics, dict):
        for name, metric in metrics.items():
            if not isinstance(name, str) or not isinstance(metric, Metric):
                raise TypeError(f"For 'Model', a dict of metrics maps str names to Metrics, got "
                                f"{type(name).__name__} -> {type(metric).__name__}")
        return metrics
    if isinstance(metrics, set):
        return {name: get_metric_fn(name) for name in sorted(metrics)}
    raise TypeError(f"For 'Model', 'metrics' must be None, a set of metric names or a dict of "
                    f"Metrics, got {type(metrics).__name__}")
