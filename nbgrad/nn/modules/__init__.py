"""Layers.  ``module.py`` holds the Module base and the hook protocol."""
from .module import Module  # noqa: F401
from .linear import Identity, Linear, Bilinear  # noqa: F401
from .conv import Conv1d, Conv2d  # noqa: F401
from .pooling import MaxPool2d, AvgPool2d  # noqa: F401
from .dropout import Dropout  # noqa: F401
from .sparse import Embedding  # noqa: F401
from .normalization import LayerNorm, BatchNorm1d, BatchNorm2d  # noqa: F401
from .activation import (ReLU, GELU, Tanh, Sigmoid, Softplus, SiLU, LeakyReLU,  # noqa: F401
                         Softmax, LogSoftmax)
from .flatten import Flatten  # noqa: F401
from .container import Sequential, ModuleList, ModuleDict  # noqa: F401
from .loss import (MSELoss, L1Loss, CrossEntropyLoss, NLLLoss, BCELoss,  # noqa: F401
                   BCEWithLogitsLoss)

__all__ = ["Module", "Identity", "Linear", "Bilinear", "Conv1d", "Conv2d", "MaxPool2d",
           "AvgPool2d", "Dropout", "Embedding", "LayerNorm", "BatchNorm1d", "BatchNorm2d",
           "ReLU", "GELU", "Tanh", "Sigmoid", "Softplus", "SiLU", "LeakyReLU", "Softmax",
           "LogSoftmax", "Flatten", "Sequential", "ModuleList", "ModuleDict", "MSELoss",
           "L1Loss", "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss"]
