"""The layer Cells of pijit.nn."""
from pijit.nn.layers.activation import (GELU, HSigmoid, HSwish, LeakyReLU, LogSoftmax, ReLU,
                                        ReLU6, Sigmoid, Softmax, Tanh, get_activation)
from pijit.nn.layers.activation_more import *  # noqa: F401,F403
from pijit.nn.layers.activation_more import __all__ as _more_activations
from pijit.nn.layers.basic import Dense, Dropout, Embedding, Flatten, Identity, Pad
from pijit.nn.layers.conv import Conv1d, Conv1dTranspose, Conv2d, Conv2dTranspose
from pijit.nn.layers.normalization import BatchNorm2d, LayerNorm
from pijit.nn.layers.normalization_more import *  # noqa: F401,F403
from pijit.nn.layers.normalization_more import __all__ as _more_norms
from pijit.nn.layers.pooling import AvgPool2d, MaxPool2d
from pijit.nn.layers.resize import *  # noqa: F401,F403
from pijit.nn.layers.resize import __all__ as _resize
from pijit.nn.layers.transformer import (MultiheadAttention, Transformer, TransformerDecoder,
                                         TransformerDecoderLayer, TransformerEncoder,
                                         TransformerEncoderLayer)
from pijit.nn.layers.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell
from pijit.nn.layers.utility import *  # noqa: F401,F403
from pijit.nn.layers.utility import __all__ as _utility
from pijit.nn.layers.extra import *  # noqa: F401,F403
from pijit.nn.layers.extra import __all__ as _extra
from pijit.nn.layers.image import *  # noqa: F401,F403
from pijit.nn.layers.image import __all__ as _image
from pijit.nn.layers.thor_layer import Conv2dThor, DenseThor, EmbeddingThor

__all__ = ["GELU", "LogSoftmax", "ReLU", "Sigmoid", "Softmax", "Tanh", "get_activation", "Dense",
           "LeakyReLU", "ReLU6", "HSwish", "HSigmoid", "Identity", "Pad",
           "Dropout", "Embedding", "Flatten", "Conv1d", "Conv1dTranspose", "Conv2d", "Conv2dTranspose", "BatchNorm2d", "LayerNorm", "AvgPool2d",
           "MaxPool2d", *_more_activations, *_more_norms, *_resize, "RNN", "GRU", "LSTM", "RNNCell", "GRUCell", "LSTMCell",
           "MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder",
           "TransformerDecoderLayer", "TransformerDecoder", "Transformer", *_utility, *_extra, *_image,
           "DenseThor", "Conv2dThor", "EmbeddingThor"]
