"""Layers.  ``module.py`` holds the Module base and the hook protocol."""

from .activation import (
    ELU,
    GELU,
    GLU,
    Hardtanh,
    LeakyReLU,  # noqa: F401
    LogSoftmax,
    Mish,
    MultiheadAttention,
    PReLU,
    ReLU,
    ReLU6,
    Sigmoid,
    SiLU,
    Softmax,
    Softmax2d,
    Softplus,
    Tanh,
)
from .container import ModuleDict, ModuleList, Sequential  # noqa: F401
from .conv import Conv1d, Conv2d  # noqa: F401
from .distance import CosineSimilarity, PairwiseDistance  # noqa: F401
from .dropout import Dropout  # noqa: F401
from .flatten import Flatten, Unflatten  # noqa: F401
from .linear import Bilinear, Identity, Linear  # noqa: F401
from .loss import (
    BCELoss,  # noqa: F401
    BCEWithLogitsLoss,
    CosineEmbeddingLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MarginRankingLoss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from .module import Module  # noqa: F401
from .normalization import BatchNorm1d, BatchNorm2d, LayerNorm  # noqa: F401
from .pooling import AvgPool2d, MaxPool2d  # noqa: F401
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase  # noqa: F401
from .sparse import Embedding  # noqa: F401
from .transformer import TransformerEncoder, TransformerEncoderLayer  # noqa: F401

__all__ = [
    "Module",
    "Identity",
    "Linear",
    "Bilinear",
    "Conv1d",
    "Conv2d",
    "MaxPool2d",
    "AvgPool2d",
    "Dropout",
    "Embedding",
    "LayerNorm",
    "BatchNorm1d",
    "BatchNorm2d",
    "ReLU",
    "GELU",
    "Tanh",
    "Sigmoid",
    "Softplus",
    "SiLU",
    "LeakyReLU",
    "Softmax",
    "LogSoftmax",
    "MultiheadAttention",
    "TransformerEncoderLayer",
    "TransformerEncoder",
    "Flatten",
    "Sequential",
    "ModuleList",
    "ModuleDict",
    "MSELoss",
    "L1Loss",
    "CrossEntropyLoss",
    "NLLLoss",
    "BCELoss",
    "BCEWithLogitsLoss",
    "RNNBase",
    "RNN",
    "LSTM",
    "GRU",
    "RNNCellBase",
    "RNNCell",
    "LSTMCell",
    "GRUCell",
]
__all__ += [  # second tier
    "ELU",
    "GLU",
    "Hardtanh",
    "Mish",
    "PReLU",
    "ReLU6",
    "Softmax2d",
    "Unflatten",
    "SmoothL1Loss",
    "HuberLoss",
    "KLDivLoss",
    "CosineEmbeddingLoss",
    "MarginRankingLoss",
    "PairwiseDistance",
    "CosineSimilarity",
]

# second tier: normalisation, transposed convolution, adaptive pooling, upsampling, dropout2d
from .conv import ConvTranspose2d  # noqa: E402
from .dropout import Dropout2d  # noqa: E402
from .normalization import GroupNorm, InstanceNorm2d  # noqa: E402
from .pooling import AdaptiveAvgPool2d  # noqa: E402
from .upsampling import Upsample  # noqa: E402

__all__ += [
    "GroupNorm",
    "InstanceNorm2d",
    "ConvTranspose2d",
    "AdaptiveAvgPool2d",
    "Upsample",
    "Dropout2d",
]
