"""nn ops on CUDA tensors beyond the op table's samples (tests/cuda/test_ops_cuda.py): the
variants and errors of the nn families whose array code runs on the device (conv, pooling,
norms, losses, embedding(_bag), pad, upsample, the fused recurrent cells, attention, one_hot).
Each runs the same call on the CPU and on the device and compares values, gradients and
exceptions (float64, tight tolerances)."""

import numpy as np
import pytest

import nbgrad
import nbgrad.nn.functional as F
from nbgrad.ops.nn import rnn

TOL = dict(rtol=1e-10, atol=1e-12)


def _run(fn, arrays, grad=True, nograd=()):
    """fn(*tensors) on both devices (float tensors require grad unless their position is in
    ``nograd``), outputs and gradients compared; returns them per device as numpy arrays."""
    res = []
    rng = np.random.default_rng(7)
    ws = None
    for dev in ("cpu", "cuda"):
        ts = []
        for i, a in enumerate(arrays):
            t = nbgrad.tensor(a).to(dev)
            if grad and i not in nograd and t.dtype.is_floating_point:
                t.requires_grad_()
            ts.append(t)
        out = fn(*ts)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        outs = [o for o in outs if isinstance(o, nbgrad.Tensor)]
        if ws is None:
            ws = [rng.standard_normal(tuple(o.shape)) for o in outs]
        got = [o.detach().cpu().numpy() for o in outs]
        leaves = [t for t in ts if t.requires_grad]
        diff = [(o, w) for o, w in zip(outs, ws) if o.requires_grad]
        if leaves and diff:
            loss = sum((o * nbgrad.tensor(w).to(dev)).sum() for o, w in diff)
            gs = nbgrad.autograd.grad(loss, leaves, allow_unused=True)
            got += [None if g is None else g.cpu().numpy() for g in gs]
        res.append(got)
    for a, b in zip(*res):
        assert (a is None) == (b is None)
        if a is not None:
            assert a.shape == b.shape
            np.testing.assert_allclose(b, a, equal_nan=True, **TOL)
    return res


def _raises_same(fn, arrays):
    errs = []
    for dev in ("cpu", "cuda"):
        ts = [nbgrad.tensor(a).to(dev) for a in arrays]
        with pytest.raises(Exception) as info:
            fn(*ts)
        errs.append(info.value)
    assert type(errs[0]) is type(errs[1]), errs
    assert str(errs[0]) == str(errs[1])


rng = np.random.default_rng(0)


def randn(*s):
    return rng.standard_normal(s)


def test_conv_variants_stride_padding_groups_dilation():
    x, w, b = randn(2, 4, 7, 6), randn(6, 2, 3, 2), randn(6)
    _run(
        lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1, dilation=(1, 2), groups=2), [x, w, b]
    )
    _run(lambda x, w: F.conv2d(x, w, padding="same"), [x, randn(3, 4, 3, 3)])
    _run(lambda x, w, b: F.conv1d(x, w, b, stride=2), [randn(2, 3, 9), randn(4, 3, 3), randn(4)])
    _run(
        lambda x, w, b: F.conv_transpose2d(
            x, w, b, stride=2, padding=1, output_padding=1, groups=2
        ),
        [randn(2, 4, 3, 3), randn(4, 3, 3, 3), randn(6)],
    )


def test_conv_bias_gradient_alone():
    # only the bias takes a gradient: the CUDA path sums the rows on the device
    x, w, b = randn(2, 3, 5, 5), randn(4, 3, 3, 3), randn(4)

    def f(x, w, b):
        return F.conv2d(x.detach(), w.detach(), b)

    _run(f, [x, w, b])


def test_conv_mixed_devices_raise():
    x = nbgrad.tensor(randn(1, 2, 4, 4)).cuda()
    w = nbgrad.tensor(randn(3, 2, 3, 3))
    with pytest.raises(RuntimeError, match="same device"):
        F.conv2d(x, w)


def test_pooling_variants():
    x = randn(2, 3, 7, 8)
    _run(lambda x: F.max_pool2d(x, 3, stride=2, padding=1, dilation=1, ceil_mode=True), [x])
    _run(lambda x: F.max_pool2d(x, 2), [x])  # the 2x2 fast path
    _run(lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False), [x])
    _run(lambda x: F.avg_pool2d(x, 2, divisor_override=3), [x])
    _run(lambda x: F.adaptive_avg_pool2d(x, (3, 5)), [x])


def test_batch_norm_running_buffers_and_eval():
    x = randn(4, 3, 5)
    outs = []
    for dev in ("cpu", "cuda"):
        rm = nbgrad.zeros(3, dtype=nbgrad.float64, device=dev)
        rv = nbgrad.ones(3, dtype=nbgrad.float64, device=dev)
        xt = nbgrad.tensor(x).to(dev)
        y = F.batch_norm(xt, rm, rv, training=True, momentum=0.3)
        z = F.batch_norm(xt, rm, rv, training=False)
        outs.append([a.cpu().numpy() for a in (y, z, rm, rv)])
    for a, b in zip(*outs):
        np.testing.assert_allclose(b, a, **TOL)
    xt = nbgrad.tensor(x).cuda()
    with pytest.raises(RuntimeError, match="same device"):
        F.batch_norm(xt, nbgrad.zeros(3, dtype=nbgrad.float64), None, training=True)


def test_norms_with_and_without_affine():
    x = randn(3, 4, 5)
    _run(lambda x, w, b: F.layer_norm(x, (5,), w, b), [x, randn(5), randn(5)])
    _run(lambda x: F.layer_norm(x, (4, 5)), [x])
    _run(lambda x, w, b: F.group_norm(x, 2, w, b), [x, randn(4), randn(4)])
    _run(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), [x, randn(4), randn(4)])


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_losses_reductions(reduction):
    x, t = randn(3, 4), randn(3, 4)
    p, q = 1 / (1 + np.exp(-x)), rng.uniform(0, 1, (3, 4))
    _run(lambda x, t: F.mse_loss(x, t, reduction=reduction), [x, t])
    _run(lambda x, t: F.smooth_l1_loss(x, t, reduction=reduction, beta=0.5), [x, t])
    _run(lambda x, t: F.huber_loss(x, t, reduction=reduction, delta=0.7), [x, t])
    _run(
        lambda p, q, w: F.binary_cross_entropy(p, q, w, reduction=reduction),
        [p, q, randn(4)],
        nograd=(2,),
    )
    _run(
        lambda x, q, w, pw: F.binary_cross_entropy_with_logits(
            x, q, w, pos_weight=pw, reduction=reduction
        ),
        [x, q, randn(3, 1), rng.uniform(0.5, 2, 4)],
        nograd=(2, 3),
    )


def test_empty_mean_loss_is_nan():
    for dev in ("cpu", "cuda"):
        x = nbgrad.zeros(0, 3, dtype=nbgrad.float64, device=dev)
        assert np.isnan(F.mse_loss(x, x).cpu().item())


def test_bce_input_range_error():
    bad = np.array([[0.2, 1.5], [0.1, 0.3]])
    _raises_same(lambda x, t: F.binary_cross_entropy(x, t), [bad, np.full((2, 2), 0.5)])
    nan = np.array([0.2, np.nan])
    _raises_same(lambda x, t: F.binary_cross_entropy(x, t), [nan, np.full(2, 0.5)])


def test_embedding_padding_freq_and_range():
    idx, w = np.array([[0, 2, 2], [3, 2, 1]]), randn(5, 3)
    _run(lambda i, w: F.embedding(i, w, padding_idx=2), [idx, w], nograd=(0,))
    _run(lambda i, w: F.embedding(i, w, scale_grad_by_freq=True), [idx, w], nograd=(0,))
    _raises_same(lambda i, w: F.embedding(i, w), [np.array([0, 5]), w])


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, float("inf")])
def test_embedding_max_norm_renormalises_in_place(norm_type):
    idx, w = np.array([[0, 2, 2], [3, 2, 0]]), randn(5, 3) * 2
    got = []
    for dev in ("cpu", "cuda"):
        wt = nbgrad.tensor(w).to(dev)
        out = F.embedding(nbgrad.tensor(idx).to(dev), wt, max_norm=1.5, norm_type=norm_type)
        got.append((out.cpu().numpy(), wt.cpu().numpy(), wt._version))
    np.testing.assert_allclose(got[1][0], got[0][0], **TOL)
    np.testing.assert_allclose(got[1][1], got[0][1], **TOL)
    assert got[1][2] == got[0][2]
    _raises_same(lambda i, w: F.embedding(i, w, max_norm=1.0), [np.array([1, 7, -9]), w])
    _raises_same(lambda i, w: F.embedding(i, w, max_norm=1.0), [np.array([1, 7, 6]), w])


def test_embedding_bag_modes():
    idx, off, w = np.array([4, 1, 2, 0, 4, 3, 1]), np.array([0, 2, 2, 5]), randn(5, 3)
    for kw in (
        dict(mode="sum"),
        dict(mode="mean", padding_idx=4),
        dict(mode="max"),
        dict(mode="sum", scale_grad_by_freq=True),
        dict(mode="mean", scale_grad_by_freq=True),
    ):
        _run(lambda i, w, o: F.embedding_bag(i, w, o, **kw), [idx, w, off], nograd=(0, 2))
    _run(
        lambda i, w, o: F.embedding_bag(i, w, o, mode="max", include_last_offset=True),
        [idx, w, np.array([0, 3, 3, 7])],
        nograd=(0, 2),
    )
    _run(
        lambda i, w, p: F.embedding_bag(i, w, mode="sum", per_sample_weights=p),
        [np.array([[0, 2, 2], [3, 1, 0]]), randn(4, 2), randn(2, 3)],
        nograd=(0,),
    )


@pytest.mark.parametrize(
    "off", [[1, 3], [0, 9], [0, 4, 2], [0, -1]], ids=["first", "last", "decreasing", "negative"]
)
def test_embedding_bag_offset_errors(off):
    idx, w = np.array([0, 1, 2, 3, 1]), randn(4, 2)
    _raises_same(lambda i, w, o: F.embedding_bag(i, w, o), [idx, w, np.array(off)])


def test_embedding_bag_index_error():
    _raises_same(
        lambda i, w, o: F.embedding_bag(i, w, o),
        [np.array([0, 7, 1]), randn(4, 2), np.array([0, 2])],
    )


def test_pad_modes():
    x = randn(2, 3, 4, 5)
    _run(lambda x: F.pad(x, (1, 2, 0, 1), value=0.5), [x])
    _run(lambda x: F.pad(x, (-1, 2)), [x])
    for mode in ("reflect", "replicate", "circular"):
        _run(lambda x: F.pad(x, (2, 1, 1, 3), mode=mode), [x])


def test_upsample_modes():
    x = randn(2, 2, 3, 4)
    _run(lambda x: F.interpolate(x, size=(5, 7), mode="nearest"), [x])
    _run(lambda x: F.interpolate(x, scale_factor=2, mode="nearest-exact"), [x])
    _run(lambda x: F.interpolate(x, size=(5, 9), mode="bilinear", align_corners=True), [x])
    _run(lambda x: F.interpolate(x, size=7, mode="linear"), [randn(2, 3, 4)])


def test_fused_cells():
    B, H = 3, 4
    _run(rnn.fused_lstm_cell, [randn(B, 4 * H), randn(B, 4 * H), randn(B, H)])
    _run(rnn.fused_gru_cell, [randn(B, 3 * H), randn(B, 3 * H), randn(B, H)])
    _run(rnn.fused_rnn_tanh_cell, [randn(B, H), randn(B, H)])
    _run(rnn.fused_rnn_relu_cell, [randn(B, H), randn(B, H)])


def test_fused_attention_masks():
    q, k, v = randn(1, 2, 3, 4), randn(1, 2, 5, 4), randn(1, 2, 5, 4)
    _run(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), [q, k, v])
    m = randn(3, 5)
    _run(
        lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m.detach()),
        [q, k, v, m],
    )
    keep = rng.uniform(size=(1, 1, 3, 5)) > 0.3
    keep[..., 0] = True
    _run(
        lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
        [q, k, v, keep],
        nograd=(3,),
    )


def test_one_hot():
    a = np.array([[0, 3], [2, 1]])
    for n in (-1, 6):
        _run(lambda a: F.one_hot(a, n), [a], grad=False)
    _raises_same(lambda a: F.one_hot(a, 3), [a])
    _raises_same(lambda a: F.one_hot(a), [np.array([1, -1])])
