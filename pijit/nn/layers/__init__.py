"""The layer Cells of pijit.nn."""
from pijit.nn.layers.activation import GELU, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh, get_activation
from pijit.nn.layers.basic import Dense, Dropout, Embedding, Flatten
from pijit.nn.layers.conv import Conv2d
from pijit.nn.layers.normalization import BatchNorm2d, LayerNorm
from pijit.nn.layers.pooling import AvgPool2d, MaxPool2d

__all__ = ["GELU", "LogSoftmax", "ReLU", "Sigmoid", "Softmax", "Tanh", "get_activation", "Dense",
           "Dropout", "Embedding", "Flatten", "Conv2d", "BatchNorm2d", "LayerNorm", "AvgPool2d",
           "MaxPool2d"]
