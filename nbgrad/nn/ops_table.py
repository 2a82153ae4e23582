"""Registry entries for the ops behind ``nbgrad.nn.functional``.

Elementwise activations are one line each, exactly like ops/pointwise.py (formula + partial
derivative + Node name; kernels, fused backward, create_graph backward and forward-mode AD are
derived).  Structured ops (conv, pooling, norms, losses, ...) are implemented in
nn/functional.py with Numba kernels in kernels/cpu/{conv,pool,norm,loss}.py; they are listed here
so the registry (and the op-table tests) know them.
"""
from ..autograd.batching import batched
from ..ops.formula import pointwise_vjp, vjp_of
from ..ops.registry import OpDef, register

SQRT1_2 = "0.7071067811865476"      # 1 / sqrt(2)
INV_SQRT_2PI = "0.3989422804014327"  # 1 / sqrt(2 pi)
K_BETA = "0.7978845608028654"        # sqrt(2 / pi)
K_KAPPA = "0.044715"


def _pw(name, formula, partials, node, args=("x",), **kw):
    op = OpDef(name, "pointwise", formula=formula, partials=partials, node=node, args=args, **kw)
    op.vjp = vjp_of(op)
    return register(op)


_INNER = "%s * (x + %s * x * x * x)" % (K_BETA, K_KAPPA)  # tanh-GELU's inner argument

#    name          formula / d/dx                                                node
_pw("gelu",       "0.5 * x * (1 + erf(x * %s))" % SQRT1_2,
                  ("0.5 * (1 + erf(x * %s)) + x * %s * exp(-0.5 * x * x)" % (SQRT1_2, INV_SQRT_2PI),),
                  "GeluBackward0", rule="float")
_pw("gelu.tanh",  "0.5 * x * (1 + tanh(%s))" % _INNER,
                  ("0.5 * (1 + tanh(%s)) + 0.5 * x * (1 - tanh(%s) * tanh(%s)) * %s * (1 + 3 * %s * x * x)"
                   % (_INNER, _INNER, _INNER, K_BETA, K_KAPPA),),
                  "GeluBackward0", rule="float")
_pw("silu",       "x * sigmoid(x)",
                  ("sigmoid(x) * (1 + x * (1 - sigmoid(x)))",),                  "SiluBackward0", rule="float")
_pw("softplus",   "where(x * beta > threshold, x, log1p(exp(x * beta)) / beta)",
                  ("where(x * beta > threshold, 1, sigmoid(x * beta))",),        "SoftplusBackward0",
    attrs=("beta", "threshold"), rule="float")
_leaky = _pw("leaky_relu", "where(x > 0, x, x * slope)",
                  ("where(x > 0, 1, slope)",),                                   "LeakyReluBackward0",
    attrs=("slope",), kinks=(0.0,))


@batched
def _leaky_relu_vjp(node, grads):
    """Fused kernel when no graph is built; otherwise g * (a constant of x's dtype): the generic
    evaluation of ``where(x > 0, 1, slope)`` would make a default-dtype (float32) tensor."""
    from ..grad_mode import STATE
    if not STATE.enabled:
        return pointwise_vjp(_leaky, node, grads)
    import numpy as np
    from .._tensor import Tensor
    x = node.unpack("x")
    (slope,), _ = node.attrs
    return (grads[0] * Tensor._make(np.where(x._data > 0, 1.0, slope).astype(x._data.dtype)),)


_leaky.vjp = _leaky_relu_vjp

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
    register(OpDef(_name, "structured", node=_node, method=False, inplace=False))
