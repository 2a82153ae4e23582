"""Registry entries for the structured ops behind ``nbgrad.nn.functional`` (conv, pooling, norms,
losses, ...), implemented in nn/functional.py with Numba kernels in kernels/cpu/.  Their
elementwise activations are lines in ops/pointwise.py."""
from ..ops.registry import OpDef, register

# structured ops: (registry name, Node name of the usual result)
STRUCTURED = [
    ("linear", "AddmmBackward0"),
    ("conv1d", "ConvolutionBackward0"),
    ("conv2d", "ConvolutionBackward0"),
    ("max_pool2d", "MaxPool2DWithIndicesBackward0"),
    ("avg_pool2d", "AvgPool2DBackward0"),
    ("embedding", "EmbeddingBackward0"),
    ("layer_norm", "NativeLayerNormBackward0"),
    ("batch_norm", "NativeBatchNormBackward0"),
    ("mse_loss", "MseLossBackward0"),
    ("cross_entropy", "NllLossBackward0"),
    ("nll_loss", "NllLossBackward0"),
    ("binary_cross_entropy", "BinaryCrossEntropyBackward0"),
    ("binary_cross_entropy_with_logits", "BinaryCrossEntropyWithLogitsBackward0"),
    ("pad", "ConstantPadNdBackward0"),
    ("pad.reflect", "ReflectionPad2DBackward0"),
    ("pad.replicate", "ReplicationPad2DBackward0"),
    ("pad.circular", "torch::autograd::CopySlices"),
]
for _name, _node in STRUCTURED:
    register(OpDef(_name, "nn", node=_node))
