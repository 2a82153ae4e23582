"""``TransformerEncoderLayer`` and ``TransformerEncoder`` (``torch.nn.modules.transformer``):
PyTorch's modules, parameters and forward, over ``MultiheadAttention`` (whose attention runs in
the fused Numba kernel, NOTE [attention paths] in ops/nn/attention.py).

PyTorch has inference fast paths (``_transformer_encoder_layer_fwd``, nested tensors) that
compute the same values as the regular forward, with one visible difference that nbgrad
reproduces: in ``TransformerEncoder`` under no-grad evaluation with a left-aligned
``src_key_padding_mask`` (``enable_nested_tensor``), the padded positions come out as zeros
(before the final ``norm``)."""

import copy
import warnings

import numpy as np

from ..._tensor import Tensor
from ...creation import full as _full
from ...grad_mode import is_grad_enabled
from ...ops.shape import triu as _triu
from .. import functional as F
from .activation import GELU, MultiheadAttention, ReLU
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm

__all__ = ["TransformerEncoder", "TransformerEncoderLayer"]


def _generate_square_subsequent_mask(sz, device=None, dtype=None):
    """The (sz, sz) causal mask: -inf above the diagonal, 0 elsewhere."""
    return _triu(_full((sz, sz), float("-inf"), dtype=dtype, device=device), diagonal=1)


def _get_seq_len(src, batch_first):
    if src.dim() == 2:
        return src.size(0)
    return src.size(1 if batch_first else 0)


def _get_clones(module, N):
    return ModuleList([copy.deepcopy(module) for _ in range(N)])


def _get_activation_fn(activation):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _detect_is_causal_mask(mask, is_causal=None, size=None):
    """``is_causal`` when given; otherwise whether ``mask`` equals the causal mask of ``size``
    (PyTorch's rule)."""
    make_causal = is_causal is True
    if is_causal is None and mask is not None:
        sz = size if size is not None else mask.size(-2)
        causal = _generate_square_subsequent_mask(sz, dtype=mask.dtype)
        if tuple(mask.size()) == tuple(causal.size()):
            make_causal = bool((mask == causal).all())
        else:
            make_causal = False
    return make_causal


def _grad_needed(tensors):
    return is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with a residual connection, dropout and
    layer norm (after the block, or before it with ``norm_first``)."""

    __constants__ = ["norm_first"]

    def __init__(
        self,
        d_model,
        nhead,
        dim_feedforward=2048,
        dropout=0.1,
        activation=F.relu,
        layer_norm_eps=1e-5,
        batch_first=False,
        norm_first=False,
        bias=True,
        device=None,
        dtype=None,
    ):
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.self_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **factory_kwargs
        )
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory_kwargs)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory_kwargs)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory_kwargs)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory_kwargs)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if isinstance(activation, str):
            activation = _get_activation_fn(activation)
        if activation is F.relu or isinstance(activation, ReLU):
            self.activation_relu_or_gelu = 1
        elif activation is F.gelu or isinstance(activation, GELU):
            self.activation_relu_or_gelu = 2
        else:
            self.activation_relu_or_gelu = 0
        self.activation = activation

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "activation"):
            self.activation = F.relu

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        src_key_padding_mask = F._canonical_mask(
            src_key_padding_mask,
            "src_key_padding_mask",
            F._none_or_dtype(src_mask),
            "src_mask",
            src.dtype,
        )
        src_mask = F._canonical_mask(src_mask, "src_mask", None, "", src.dtype, False)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        x = self.self_attn(
            x,
            x,
            x,
            attn_mask=attn_mask,
            key_padding_mask=key_padding_mask,
            need_weights=False,
            is_causal=is_causal,
        )[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


def _why_not_sparsity_fast_path(encoder_layer):
    """PyTorch's reason for not using nested tensors with this layer ('' when it would)."""
    enc = "encoder_layer"
    if not isinstance(encoder_layer, TransformerEncoderLayer):
        return f"{enc} was not TransformerEncoderLayer"
    if encoder_layer.norm_first:
        return f"{enc}.norm_first was True"
    if not encoder_layer.self_attn.batch_first:
        return (
            f"{enc}.self_attn.batch_first was not True"
            + "(use batch_first for better inference performance)"
        )
    if not encoder_layer.self_attn._qkv_same_embed_dim:
        return f"{enc}.self_attn._qkv_same_embed_dim was not True"
    if encoder_layer.self_attn.in_proj_bias is None:
        return f"{enc}.self_attn was passed bias=False"
    if not encoder_layer.activation_relu_or_gelu:
        return f"{enc}.activation_relu_or_gelu was not True"
    if encoder_layer.norm1.eps != encoder_layer.norm2.eps:
        return f"{enc}.norm1.eps was not equal to {enc}.norm2.eps"
    if encoder_layer.self_attn.num_heads % 2 == 1:
        return f"{enc}.self_attn.num_heads is odd"
    return ""


class TransformerEncoder(Module):
    """``num_layers`` deep copies of ``encoder_layer`` applied in turn, then ``norm`` if given."""

    __constants__ = ["norm"]

    def __init__(
        self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True, mask_check=True
    ):
        super().__init__()
        self.layers = _get_clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check
        why_not = _why_not_sparsity_fast_path(encoder_layer)
        if enable_nested_tensor and why_not:
            warnings.warn(
                f"enable_nested_tensor is True, but self.use_nested_tensor is False because "
                f"{why_not}",
                stacklevel=2,
            )
            self.use_nested_tensor = False

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        src_key_padding_mask = F._canonical_mask(
            src_key_padding_mask,
            "src_key_padding_mask",
            F._none_or_dtype(mask),
            "mask",
            src.dtype,
        )
        mask = F._canonical_mask(mask, "mask", None, "", src.dtype, False)
        first = self.layers[0]
        batch_first = first.self_attn.batch_first
        padded = self._nested_padding(src, mask, src_key_padding_mask)
        seq_len = _get_seq_len(src, batch_first)
        is_causal = _detect_is_causal_mask(mask, is_causal, seq_len)
        output = src
        for mod in self.layers:
            output = mod(
                output,
                src_mask=mask,
                is_causal=is_causal,
                src_key_padding_mask=src_key_padding_mask,
            )
        if padded is not None:  # PyTorch's nested-tensor path returns zeros there
            output = output.masked_fill(padded, 0.0)
        if self.norm is not None:
            output = self.norm(output)
        return output

    def _nested_padding(self, src, mask, src_key_padding_mask):
        """Where PyTorch would run the layers on nested tensors (evaluation without grad, a
        left-aligned padding mask, ...), the (N, S, 1) bool positions that come out as zeros;
        else None.  The other positions have the values of the regular path."""
        first = self.layers[0]
        if (
            not getattr(self, "use_nested_tensor", False)
            or first.training
            or src.dim() != 3
            or src_key_padding_mask is None
            or mask is not None
        ):
            return None
        valid = src_key_padding_mask._data == 0  # PyTorch: mask.logical_not()
        if getattr(self, "mask_check", True):
            n = valid.sum(1)
            left = np.arange(valid.shape[1])[None, :] < n[:, None]
            if not np.array_equal(valid, left):
                return None
        sa = first.self_attn
        args = (
            src,
            sa.in_proj_weight,
            sa.in_proj_bias,
            sa.out_proj.weight,
            sa.out_proj.bias,
            first.norm1.weight,
            first.norm1.bias,
            first.norm2.weight,
            first.norm2.bias,
            first.linear1.weight,
            first.linear1.bias,
            first.linear2.weight,
            first.linear2.bias,
        )
        if _grad_needed(args):
            return None
        return Tensor._make(np.ascontiguousarray(~valid[:, :, None]))
