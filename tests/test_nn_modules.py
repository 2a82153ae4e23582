"""nn layers, containers and losses against PyTorch: construction, parameter/buffer names and
shapes, state dicts, reprs, train/eval, nn.init statistics, nn.utils clipping and conversion,
and (with nn.functional present) forward/backward values."""

import math
import re
import types
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import nbgrad
import nbgrad.nn.init as init
import nbgrad.nn.utils as nn_utils
from nbgrad.nn.modules import (
    activation,
    container,
    conv,
    dropout,
    flatten,
    linear,
    loss,
    normalization,
    pooling,
    sparse,
)

try:  # the oracle is optional: its absence skips oracle tests, never fails them
    import torch

    HAS_TORCH = True
except Exception:  # pragma: no cover
    torch = None
    HAS_TORCH = False

try:
    import nbgrad.nn.functional  # noqa: F401

    HAS_F = True
except Exception:  # pragma: no cover
    HAS_F = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch (the oracle) is not installed")
needs_F = pytest.mark.skipif(not HAS_F, reason="nbgrad.nn.functional not available yet")


def _nn_namespace():
    """``nbgrad.nn`` once the package exports the layers; until then the same classes
    gathered from their modules."""
    if hasattr(nbgrad.nn, "Sequential") and hasattr(nbgrad.nn, "BCEWithLogitsLoss"):
        return nbgrad.nn
    ns = {"Module": nbgrad.nn.Module, "Parameter": nbgrad.nn.Parameter}
    for mod in (
        activation,
        container,
        conv,
        dropout,
        flatten,
        linear,
        loss,
        normalization,
        pooling,
        sparse,
    ):
        ns.update({name: getattr(mod, name) for name in mod.__all__})
    return types.SimpleNamespace(**ns)


nn = _nn_namespace()
NB = types.SimpleNamespace(
    nn=nn,
    tensor=nbgrad.tensor,
    ones=nbgrad.ones,
    zeros=nbgrad.zeros,
    float64=nbgrad.float64,
    manual_seed=nbgrad.manual_seed,
)


def _torch_ns():
    return types.SimpleNamespace(
        nn=torch.nn,
        tensor=torch.tensor,
        ones=torch.ones,
        zeros=torch.zeros,
        float64=torch.float64,
        manual_seed=torch.manual_seed,
    )


def _dt(d):
    return str(d).replace("nbgrad.", "torch.")


def _to_nb_state(sd):
    """A torch state dict as nbgrad tensors (same keys, values, dtypes)."""
    return OrderedDict((k, nbgrad.tensor(_np(v))) for k, v in sd.items())


def _np(t):
    return t.detach().numpy()


# -- constructions, compared with PyTorch -------------------------------------------------------

LAYERS = {
    "linear": lambda T: T.nn.Linear(3, 4),
    "linear-nobias": lambda T: T.nn.Linear(3, 4, bias=False),
    "linear-f64": lambda T: T.nn.Linear(3, 4, dtype=T.float64),
    "bilinear": lambda T: T.nn.Bilinear(2, 3, 4),
    "identity": lambda T: T.nn.Identity(3, foo=1),
    "conv1d": lambda T: T.nn.Conv1d(2, 4, 3),
    "conv1d-opts": lambda T: T.nn.Conv1d(2, 4, 3, stride=2, padding=1, dilation=2, bias=False),
    "conv2d": lambda T: T.nn.Conv2d(3, 6, (3, 5), stride=2, padding=1, groups=3),
    "conv2d-same-reflect": lambda T: T.nn.Conv2d(2, 4, 3, padding="same", padding_mode="reflect"),
    "conv2d-valid": lambda T: T.nn.Conv2d(2, 4, 2, padding="valid", bias=False),
    "maxpool2d": lambda T: T.nn.MaxPool2d(2),
    "maxpool2d-opts": lambda T: T.nn.MaxPool2d((3, 2), stride=1, padding=1, ceil_mode=True),
    "avgpool2d": lambda T: T.nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False),
    "dropout": lambda T: T.nn.Dropout(0.2),
    "dropout-default": lambda T: T.nn.Dropout(),
    "embedding": lambda T: T.nn.Embedding(10, 3),
    "embedding-pad": lambda T: T.nn.Embedding(10, 3, padding_idx=-1),
    "embedding-opts": lambda T: T.nn.Embedding(
        10, 3, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True
    ),
    "layernorm": lambda T: T.nn.LayerNorm([4, 5]),
    "layernorm-noaffine": lambda T: T.nn.LayerNorm(4, elementwise_affine=False),
    "layernorm-nobias": lambda T: T.nn.LayerNorm(4, eps=1e-3, bias=False),
    "batchnorm1d": lambda T: T.nn.BatchNorm1d(3),
    "batchnorm2d-noaffine": lambda T: T.nn.BatchNorm2d(4, affine=False),
    "batchnorm2d-notrack": lambda T: T.nn.BatchNorm2d(4, momentum=None, track_running_stats=False),
    "batchnorm1d-nobias": lambda T: T.nn.BatchNorm1d(3, eps=1e-3, bias=False),
    "relu": lambda T: T.nn.ReLU(),
    "relu-inplace": lambda T: T.nn.ReLU(inplace=True),
    "gelu": lambda T: T.nn.GELU(),
    "gelu-tanh": lambda T: T.nn.GELU("tanh"),
    "tanh": lambda T: T.nn.Tanh(),
    "sigmoid": lambda T: T.nn.Sigmoid(),
    "softplus": lambda T: T.nn.Softplus(beta=2, threshold=10),
    "silu": lambda T: T.nn.SiLU(),
    "silu-inplace": lambda T: T.nn.SiLU(inplace=True),
    "leakyrelu": lambda T: T.nn.LeakyReLU(),
    "leakyrelu-opts": lambda T: T.nn.LeakyReLU(0.2, inplace=True),
    "softmax": lambda T: T.nn.Softmax(dim=1),
    "softmax-none": lambda T: T.nn.Softmax(),
    "logsoftmax": lambda T: T.nn.LogSoftmax(dim=-1),
    # second tier: activations, losses, distances
    "elu": lambda T: T.nn.ELU(),
    "elu-opts": lambda T: T.nn.ELU(0.5, inplace=True),
    "mish": lambda T: T.nn.Mish(),
    "mish-inplace": lambda T: T.nn.Mish(inplace=True),
    "hardtanh": lambda T: T.nn.Hardtanh(-2.0, 1.5),
    "hardtanh-inplace": lambda T: T.nn.Hardtanh(inplace=True),
    "relu6": lambda T: T.nn.ReLU6(),
    "relu6-inplace": lambda T: T.nn.ReLU6(inplace=True),
    "prelu": lambda T: T.nn.PReLU(),
    "prelu-3": lambda T: T.nn.PReLU(3, init=0.1),
    "prelu-f64": lambda T: T.nn.PReLU(dtype=T.float64),
    "glu": lambda T: T.nn.GLU(),
    "softmax2d": lambda T: T.nn.Softmax2d(),
    "unflatten": lambda T: T.nn.Unflatten(1, (2, 3)),
    "unflatten-list": lambda T: T.nn.Unflatten(-1, [2, -1]),
    "smoothl1": lambda T: T.nn.SmoothL1Loss(beta=0.5),
    "huber": lambda T: T.nn.HuberLoss(reduction="sum", delta=2.0),
    "kldiv": lambda T: T.nn.KLDivLoss(reduction="batchmean", log_target=True),
    "cosine-embedding": lambda T: T.nn.CosineEmbeddingLoss(0.1, reduction="sum"),
    "margin-ranking": lambda T: T.nn.MarginRankingLoss(0.2),
    "pairwise-distance": lambda T: T.nn.PairwiseDistance(p=1.0, eps=1e-3, keepdim=True),
    "cosine-similarity": lambda T: T.nn.CosineSimilarity(dim=0, eps=1e-6),
    "flatten": lambda T: T.nn.Flatten(),
    "flatten-opts": lambda T: T.nn.Flatten(0, 2),
    "mse": lambda T: T.nn.MSELoss(),
    "l1-sum": lambda T: T.nn.L1Loss(reduction="sum"),
    "ce": lambda T: T.nn.CrossEntropyLoss(),
    "ce-opts": lambda T: T.nn.CrossEntropyLoss(
        weight=T.ones(3), ignore_index=1, label_smoothing=0.1
    ),
    "nll": lambda T: T.nn.NLLLoss(weight=T.ones(3), reduction="none"),
    "bce": lambda T: T.nn.BCELoss(weight=T.ones(2)),
    "bce-logits": lambda T: T.nn.BCEWithLogitsLoss(pos_weight=T.ones(2)),
    "mha": lambda T: T.nn.MultiheadAttention(8, 2),
    "mha-opts": lambda T: T.nn.MultiheadAttention(
        6, 3, dropout=0.1, bias=False, add_bias_kv=True, add_zero_attn=True, batch_first=True
    ),
    "mha-kdim-vdim": lambda T: T.nn.MultiheadAttention(8, 4, kdim=5, vdim=3, dtype=T.float64),
    "encoder-layer": lambda T: T.nn.TransformerEncoderLayer(8, 2, 16),
    "encoder-layer-opts": lambda T: T.nn.TransformerEncoderLayer(
        8, 2, 16, 0.0, "gelu", 1e-3, batch_first=True, norm_first=True, bias=False
    ),
    "encoder": lambda T: T.nn.TransformerEncoder(
        T.nn.TransformerEncoderLayer(8, 2, 16), 2, T.nn.LayerNorm(8), enable_nested_tensor=False
    ),
    "sequential": lambda T: T.nn.Sequential(T.nn.Linear(2, 3), T.nn.ReLU(), T.nn.Linear(3, 1)),
    "sequential-odict": lambda T: T.nn.Sequential(
        OrderedDict([("fc", T.nn.Linear(2, 3)), ("act", T.nn.Tanh()), ("bn", T.nn.BatchNorm1d(3))])
    ),
    "modulelist": lambda T: T.nn.ModuleList(
        [T.nn.Linear(2, 2) for _ in range(3)] + [T.nn.ReLU(), T.nn.ReLU(), T.nn.Linear(2, 1)]
    ),
    "moduledict": lambda T: T.nn.ModuleDict({"b": T.nn.Linear(2, 2), "a": T.nn.GELU()}),
    "empty-modulelist": lambda T: T.nn.ModuleList(),
    "empty-sequential": lambda T: T.nn.Sequential(),
}


# second tier: group / instance norm, transposed convolution, adaptive pooling, upsampling,
# channel dropout
LAYERS.update(
    {
        "groupnorm": lambda T: T.nn.GroupNorm(2, 4),
        "groupnorm-opts": lambda T: T.nn.GroupNorm(3, 6, eps=1e-3, affine=False),
        "groupnorm-nobias": lambda T: T.nn.GroupNorm(1, 4, bias=False, dtype=T.float64),
        "instancenorm2d": lambda T: T.nn.InstanceNorm2d(3),
        "instancenorm2d-affine-track": lambda T: T.nn.InstanceNorm2d(
            3, eps=1e-3, momentum=0.2, affine=True, track_running_stats=True
        ),
        "convtranspose2d": lambda T: T.nn.ConvTranspose2d(
            4, 6, 3, stride=2, padding=1, output_padding=1, groups=2
        ),
        "convtranspose2d-opts": lambda T: T.nn.ConvTranspose2d(
            2, 3, (2, 3), stride=(1, 2), dilation=2, bias=False
        ),
        "adaptiveavgpool2d": lambda T: T.nn.AdaptiveAvgPool2d((3, None)),
        "adaptiveavgpool2d-int": lambda T: T.nn.AdaptiveAvgPool2d(2),
        "upsample": lambda T: T.nn.Upsample(scale_factor=2),
        "upsample-bilinear": lambda T: T.nn.Upsample(
            size=(7, 5), mode="bilinear", align_corners=True
        ),
        "upsample-nearest-exact": lambda T: T.nn.Upsample(
            scale_factor=(1.5, 2), mode="nearest-exact"
        ),
        "dropout2d": lambda T: T.nn.Dropout2d(0.3),
        "dropout2d-inplace": lambda T: T.nn.Dropout2d(inplace=True),
    }
)


def _describe(m):
    return {
        "repr": repr(m),
        # _version: how many in-place writes the default initialisation made
        "params": [
            (n, tuple(p.shape), _dt(p.dtype), p.requires_grad, p._version)
            for n, p in m.named_parameters()
        ],
        "buffers": [(n, tuple(b.shape), _dt(b.dtype), b._version) for n, b in m.named_buffers()],
        "state_dict": [(k, tuple(v.shape), _dt(v.dtype)) for k, v in m.state_dict().items()],
        "modules": [(n, type(c).__name__) for n, c in m.named_modules()],
        "children": [n for n, _ in m.named_children()],
        "training": m.training,
    }


@needs_torch
@pytest.mark.parametrize("name", list(LAYERS))
def test_layer_structure_matches_torch(name):
    make = LAYERS[name]
    assert _describe(make(NB)) == _describe(make(_torch_ns()))


@needs_torch
@pytest.mark.parametrize(
    "name",
    [
        "linear",
        "bilinear",
        "conv2d",
        "embedding-pad",
        "layernorm",
        "batchnorm1d",
        "dropout",
        "softplus",
        "ce-opts",
        "maxpool2d",
        "avgpool2d",
        "flatten-opts",
        "gelu-tanh",
        "conv2d-same-reflect",
    ],
)
def test_layer_public_attributes_match_torch(name):
    tm, nm = LAYERS[name](_torch_ns()), LAYERS[name](NB)
    for attr in (
        "in_features",
        "out_features",
        "in1_features",
        "in2_features",
        "in_channels",
        "out_channels",
        "kernel_size",
        "stride",
        "padding",
        "dilation",
        "groups",
        "padding_mode",
        "output_padding",
        "transposed",
        "_reversed_padding_repeated_twice",
        "num_embeddings",
        "embedding_dim",
        "padding_idx",
        "max_norm",
        "norm_type",
        "scale_grad_by_freq",
        "sparse",
        "normalized_shape",
        "eps",
        "elementwise_affine",
        "num_features",
        "momentum",
        "affine",
        "track_running_stats",
        "p",
        "inplace",
        "beta",
        "threshold",
        "reduction",
        "ignore_index",
        "label_smoothing",
        "ceil_mode",
        "return_indices",
        "count_include_pad",
        "divisor_override",
        "start_dim",
        "end_dim",
        "approximate",
        "training",
    ):
        if hasattr(tm, attr):
            tv = getattr(tm, attr)
            nv = getattr(nm, attr)
            if isinstance(tv, list):
                tv, nv = tuple(tv), tuple(nv)
            assert nv == tv, attr


def _cnn(T, odict=False):
    layers = [
        ("conv1", T.nn.Conv2d(1, 4, 3, padding=1)),
        ("bn1", T.nn.BatchNorm2d(4)),
        ("relu1", T.nn.ReLU()),
        ("pool", T.nn.MaxPool2d(2)),
        ("conv2", T.nn.Conv2d(4, 8, 3)),
        ("relu2", T.nn.ReLU()),
        ("avg", T.nn.AvgPool2d(2)),
        ("flat", T.nn.Flatten()),
        ("drop", T.nn.Dropout(0.25)),
        ("fc", T.nn.Linear(8, 10)),
        ("out", T.nn.LogSoftmax(dim=1)),
    ]
    if odict:
        return T.nn.Sequential(OrderedDict(layers))
    return T.nn.Sequential(*[m for _, m in layers])


@needs_torch
@pytest.mark.parametrize("odict", [False, True])
def test_sequential_cnn_repr_and_state_dict_keys_match_torch(odict):
    nb_model, t_model = _cnn(NB, odict), _cnn(_torch_ns(), odict)
    assert repr(nb_model) == repr(t_model)
    assert list(nb_model.state_dict()) == list(t_model.state_dict())
    assert _describe(nb_model) == _describe(t_model)
    # a nested model: children reprs indent like PyTorch's
    nested_nb = nn.Sequential(nb_model, nn.ModuleDict({"head": nn.Linear(10, 2)}))
    nested_t = torch.nn.Sequential(t_model, torch.nn.ModuleDict({"head": torch.nn.Linear(10, 2)}))
    assert repr(nested_nb) == repr(nested_t)
    assert list(nested_nb.state_dict()) == list(nested_t.state_dict())


# -- containers -----------------------------------------------------------------------------


def test_sequential_indexing_slicing_len_append():
    a, b, c = nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)
    s = nn.Sequential(a, b, c)
    assert len(s) == 3 and s[0] is a and s[-1] is c and list(s) == [a, b, c]
    sub = s[1:]
    assert type(sub) is nn.Sequential and list(sub._modules) == ["1", "2"] and sub[0] is b
    with pytest.raises(IndexError, match="index 3 is out of range"):
        s[3]
    d = nn.Tanh()
    assert s.append(d) is s and s[3] is d and len(s) == 4
    s[0] = nn.Identity()
    assert isinstance(s[0], nn.Identity)
    del s[1]
    assert list(s._modules) == ["0", "1", "2"] and s[1] is c
    assert s.pop(0) is not None and len(s) == 2
    s.insert(0, a)
    assert s[0] is a and len(s) == 3
    s.extend([nn.ReLU()])
    assert len(s) == 4
    assert len(s + nn.Sequential(nn.ReLU())) == 5
    assert len(s * 2) == 8
    o = nn.Sequential(OrderedDict([("x", a), ("y", b)]))
    assert o.x is a and o[1] is b and list(o._modules) == ["x", "y"]
    assert "0" not in dir(s)


def test_modulelist_and_moduledict():
    ml = nn.ModuleList([nn.Linear(1, 1), nn.ReLU()])
    assert len(ml) == 2 and isinstance(ml[-1], nn.ReLU)
    ml.append(nn.Tanh())
    ml += [nn.Sigmoid()]
    ml.insert(0, nn.Identity())
    assert [type(m).__name__ for m in ml] == ["Identity", "Linear", "ReLU", "Tanh", "Sigmoid"]
    assert isinstance(ml[1:3], nn.ModuleList) and len(ml[1:3]) == 2
    del ml[0]
    assert list(ml._modules) == ["0", "1", "2", "3"]
    assert len(list(ml.parameters())) == 2
    with pytest.raises(IndexError):
        ml[10]
    with pytest.raises(TypeError, match="ModuleList.extend should be called with an iterable"):
        ml.extend(3)
    md = nn.ModuleDict([("a", nn.Linear(1, 2)), ("b", nn.ReLU())])
    assert list(md.keys()) == ["a", "b"] and "a" in md and len(md) == 2
    md["c"] = nn.Tanh()
    md.update({"a": nn.Linear(1, 3)})
    assert md["a"].out_features == 3 and list(md) == ["a", "b", "c"]
    assert isinstance(md.pop("b"), nn.ReLU) and list(md) == ["a", "c"]
    assert [n for n, _ in md.named_parameters()] == ["a.weight", "a.bias"]
    with pytest.raises(ValueError, match="has length 1; 2 is required"):
        md.update([("x",)])
    md.clear()
    assert len(md) == 0


# -- state dicts --------------------------------------------------------------------------------


@needs_torch
def test_load_state_dict_reports_match_torch():
    reports = []
    for T in (NB, _torch_ns()):
        m = _cnn(T)
        sd = m.state_dict()
        del sd["0.bias"]
        sd["extra.weight"] = T.zeros(1)
        r = m.load_state_dict(sd, strict=False)
        rep = [list(r.missing_keys), list(r.unexpected_keys)]
        with pytest.raises(RuntimeError) as e1:
            m.load_state_dict(sd)
        sd = m.state_dict()
        sd["9.weight"] = T.zeros(3, 3)
        with pytest.raises(RuntimeError) as e2:
            m.load_state_dict(sd)
        ok = m.load_state_dict(m.state_dict())
        reports.append(
            (rep, str(e1.value), str(e2.value), repr(ok), ok.missing_keys, ok.unexpected_keys)
        )
    assert reports[0] == reports[1]
    assert reports[0][0] == [["0.bias"], ["extra.weight"]]


@needs_torch
def test_load_torch_weights_into_nbgrad_model():
    torch.manual_seed(0)
    t_model = _cnn(_torch_ns())
    nb_model = _cnn(NB)
    r = nb_model.load_state_dict(_to_nb_state(t_model.state_dict()))
    assert not r.missing_keys and not r.unexpected_keys
    for (k, v), (tk, tv) in zip(nb_model.state_dict().items(), t_model.state_dict().items()):
        assert k == tk and _dt(v.dtype) == _dt(tv.dtype)
        np.testing.assert_array_equal(_np(v), _np(tv))
    # loading copies in place: the Parameter objects stay the same
    w = nb_model[0].weight
    nb_model.load_state_dict(_to_nb_state(t_model.state_dict()))
    assert nb_model[0].weight is w


def test_state_dict_detaches_and_keep_vars():
    m = nn.Linear(2, 2)
    sd = m.state_dict()
    assert not sd["weight"].requires_grad and sd["weight"].grad_fn is None
    assert _np(sd["weight"]).tolist() == _np(m.weight).tolist()
    assert m.state_dict(keep_vars=True)["weight"] is m.weight
    bn = nn.BatchNorm1d(2, track_running_stats=False)
    assert list(bn.state_dict()) == ["weight", "bias"]


# -- train / eval / zero_grad -------------------------------------------------------------


def test_train_eval_propagate():
    m = _cnn(NB)
    assert all(c.training for c in m.modules())
    assert m.eval() is m
    assert not any(c.training for c in m.modules())
    m.train()
    assert all(c.training for c in m.modules())
    m[1].eval()
    assert not m[1].training and m.training


def test_zero_grad_and_requires_grad_():
    m = nn.Sequential(nn.Linear(2, 3), nn.LayerNorm(3))
    params = list(m.parameters())
    assert len(params) == 4 and all(p.requires_grad for p in params)
    loss = sum((p * p).sum() for p in params)
    loss.backward()
    assert all(p.grad is not None for p in params)
    m.zero_grad(set_to_none=False)
    assert all(p.grad is not None and float(p.grad.abs().sum()) == 0 for p in params)
    m.zero_grad()
    assert all(p.grad is None for p in params)
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())


# -- default initialisation -------------------------------------------------------------------


def test_default_init_bounds_and_values():
    nbgrad.manual_seed(0)
    lin = nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)
    w, b = _np(lin.weight), _np(lin.bias)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.02 * bound and abs(w.mean()) < 0.02 * bound
    assert lin.weight.dtype == nbgrad.float32 and lin.weight._version == 1
    cv = nn.Conv2d(8, 16, 3)
    bound = 1 / math.sqrt(8 * 9)
    assert np.abs(_np(cv.weight)).max() <= bound and np.abs(_np(cv.bias)).max() <= bound
    bil = nn.Bilinear(5, 7, 3)
    assert np.abs(_np(bil.weight)).max() <= 1 / math.sqrt(5)
    emb = nn.Embedding(500, 40, padding_idx=3)
    e = _np(emb.weight)
    assert np.all(e[3] == 0) and abs(e.std() - 1) < 0.05 and abs(e.mean()) < 0.05
    bn = nn.BatchNorm2d(3)
    assert _np(bn.weight).tolist() == [1, 1, 1] and _np(bn.bias).tolist() == [0, 0, 0]
    assert _np(bn.running_mean).tolist() == [0, 0, 0]
    assert _np(bn.running_var).tolist() == [1, 1, 1]
    assert bn.num_batches_tracked.dtype == nbgrad.int64 and int(bn.num_batches_tracked) == 0
    assert not bn.running_mean.requires_grad
    ln = nn.LayerNorm([2, 3])
    assert _np(ln.weight).tolist() == [[1] * 3] * 2 and _np(ln.bias).sum() == 0


def test_default_init_reproducible_with_manual_seed():
    nbgrad.manual_seed(123)
    a = _cnn(NB)
    nbgrad.manual_seed(123)
    b = _cnn(NB)
    c = _cnn(NB)
    for (k, va), vb, vc in zip(
        a.state_dict().items(), b.state_dict().values(), c.state_dict().values()
    ):
        np.testing.assert_array_equal(_np(va), _np(vb))
        if k.endswith("weight") and k.startswith(("0", "4", "9")):
            assert not np.array_equal(_np(va), _np(vc))


def test_embedding_from_pretrained():
    w = nbgrad.tensor([[1.0, 2.3, 3.0], [4.0, 5.1, 6.3]])
    e = nn.Embedding.from_pretrained(w)
    assert not e.weight.requires_grad and e.num_embeddings == 2 and e.embedding_dim == 3
    e2 = nn.Embedding.from_pretrained(w, freeze=False, padding_idx=0)
    assert e2.weight.requires_grad and e2.padding_idx == 0
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(3, 2, padding_idx=3)


def _sorted_sets(msg):
    # set reprs inside messages print in hash order; compare their elements sorted
    return re.sub(
        r"\{([^{}]*)\}", lambda m: "{" + ", ".join(sorted(m.group(1).split(", "))) + "}", msg
    )


@needs_torch
def test_constructor_errors_match_torch():
    cases = [
        lambda T: T.nn.Conv2d(3, 4, 3, groups=2),
        lambda T: T.nn.Conv2d(4, 3, 3, groups=2),
        lambda T: T.nn.Conv2d(4, 4, 3, groups=0),
        lambda T: T.nn.Conv2d(4, 4, 3, padding="full"),
        lambda T: T.nn.Conv2d(4, 4, 3, stride=2, padding="same"),
        lambda T: T.nn.Conv1d(4, 4, 3, padding_mode="mirror"),
        lambda T: T.nn.Dropout(1.5),
        lambda T: T.nn.Bilinear(0, 2, 2),
    ]
    for make in cases:
        errs = []
        for T in (NB, _torch_ns()):
            with pytest.raises(Exception) as e:
                make(T)
            errs.append((type(e.value), _sorted_sets(str(e.value))))
        assert errs[0] == errs[1]


# -- nn.init --------------------------------------------------------------------------------


def _big(*shape):
    return nbgrad.empty(*shape, requires_grad=True)


def test_init_uniform_normal_constant_statistics():
    nbgrad.manual_seed(0)
    t = _big(200, 300)
    v0 = t._version
    out = init.uniform_(t, -2.0, 3.0)
    a = _np(t)
    assert out is t and t._version == v0 + 1 and t.grad_fn is None and t.requires_grad
    assert a.min() >= -2.0 and a.max() <= 3.0 and abs(a.mean() - 0.5) < 0.02
    assert abs(a.std() - 5 / math.sqrt(12)) < 0.02
    init.normal_(t, 1.5, 0.5)
    a = _np(t)
    assert abs(a.mean() - 1.5) < 0.01 and abs(a.std() - 0.5) < 0.01
    assert t._version == v0 + 2
    init.constant_(t, 0.25)
    assert np.all(_np(t) == 0.25)
    init.ones_(t)
    assert np.all(_np(t) == 1)
    init.zeros_(t)
    assert np.all(_np(t) == 0) and t._version == v0 + 5


def test_init_xavier_kaiming_statistics():
    nbgrad.manual_seed(1)
    t = _big(256, 128, 3)  # fan_in 384, fan_out 768
    fan_in, fan_out = 128 * 3, 256 * 3
    assert init._calculate_fan_in_and_fan_out(t) == (fan_in, fan_out)
    init.xavier_uniform_(t, gain=2.0)
    bound = 2.0 * math.sqrt(6.0 / (fan_in + fan_out))
    a = _np(t)
    assert np.abs(a).max() <= bound and abs(a.std() - bound / math.sqrt(3)) < 0.02 * bound
    init.xavier_normal_(t)
    std = math.sqrt(2.0 / (fan_in + fan_out))
    assert abs(_np(t).std() - std) < 0.02 * std
    init.kaiming_uniform_(t, a=math.sqrt(5))
    bound = 1 / math.sqrt(fan_in)
    a = _np(t)
    assert np.abs(a).max() <= bound and abs(a.std() - bound / math.sqrt(3)) < 0.02 * bound
    init.kaiming_normal_(t, mode="fan_out", nonlinearity="relu")
    std = math.sqrt(2.0) / math.sqrt(fan_out)
    assert abs(_np(t).std() - std) < 0.02 * std and abs(_np(t).mean()) < 0.02 * std
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(t, mode="fan_avg")
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(_big(5))
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_uniform_(_big(0, 3))


def test_init_trunc_normal_orthogonal_eye_dirac():
    nbgrad.manual_seed(2)
    t = _big(400, 250)
    init.trunc_normal_(t, mean=0.5, std=2.0, a=-1.0, b=3.0)
    a = _np(t)
    assert a.min() >= -1.0 and a.max() <= 3.0
    # moments of the truncated normal
    alpha, beta = (-1.0 - 0.5) / 2.0, (3.0 - 0.5) / 2.0
    pdf = lambda x: math.exp(-x * x / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda x: 0.5 * (1 + math.erf(x / math.sqrt(2)))  # noqa: E731
    z = cdf(beta) - cdf(alpha)
    mean = 0.5 + 2.0 * (pdf(alpha) - pdf(beta)) / z
    var = 4.0 * (
        1 + (alpha * pdf(alpha) - beta * pdf(beta)) / z - ((pdf(alpha) - pdf(beta)) / z) ** 2
    )
    assert abs(a.mean() - mean) < 0.02 and abs(a.std() - math.sqrt(var)) < 0.02
    init.trunc_normal_(t, a=2.5, b=3.0)  # the narrow-window branch
    a = _np(t)
    assert a.min() >= 2.5 and a.max() <= 3.0 and a.mean() < 2.75
    q = _big(6, 10)
    init.orthogonal_(q, gain=2.0)
    qa = _np(q).astype(np.float64)
    np.testing.assert_allclose(qa @ qa.T, 4.0 * np.eye(6), atol=1e-5)
    q = _big(10, 2, 3)
    init.orthogonal_(q)
    qa = _np(q).reshape(10, 6).astype(np.float64)
    np.testing.assert_allclose(qa.T @ qa, np.eye(6), atol=1e-5)
    e = _big(3, 5)
    init.eye_(e)
    np.testing.assert_array_equal(_np(e), np.eye(3, 5))
    d = _big(4, 2, 3, 3)
    init.dirac_(d, groups=2)
    expect = np.zeros((4, 2, 3, 3))
    for g in range(2):
        for i in range(2):
            expect[g * 2 + i, i, 1, 1] = 1
    np.testing.assert_array_equal(_np(d), expect)
    s = _big(10, 4)
    init.sparse_(s, 0.3)
    assert all((_np(s)[:, j] == 0).sum() >= 3 for j in range(4))


def test_init_generator_and_manual_seed_reproducibility():
    from nbgrad.random import Generator

    nbgrad.manual_seed(7)
    a = init.kaiming_uniform_(_big(5, 4)).detach().numpy().copy()
    nbgrad.manual_seed(7)
    b = init.kaiming_uniform_(_big(5, 4)).detach().numpy().copy()
    np.testing.assert_array_equal(a, b)
    nbgrad.manual_seed(7)
    g1 = init.normal_(_big(3, 3), generator=Generator(5)).detach().numpy().copy()
    c = _np(init.kaiming_uniform_(_big(5, 4)))  # the default stream was not advanced by g1
    np.testing.assert_array_equal(a, c)
    g2 = init.normal_(_big(3, 3), generator=Generator(5)).detach().numpy()
    np.testing.assert_array_equal(g1, g2)
    g = Generator(9)
    x = _np(init.uniform_(_big(4), 0, 1, g)).copy()  # generator passed positionally, as torch
    y = init.uniform_(_big(4), 0, 1, g).detach().numpy()
    assert not np.array_equal(x, y)


def test_init_deprecated_aliases_warn():
    with pytest.warns(
        FutureWarning, match="`nn.init.normal` is now deprecated in favor of `nn.init.normal_`"
    ):
        init.normal(_big(2, 2))


@needs_torch
def test_calculate_gain_and_fans_match_torch():
    for args in [
        ("linear",),
        ("conv2d",),
        ("sigmoid",),
        ("tanh",),
        ("relu",),
        ("leaky_relu",),
        ("leaky_relu", 0.2),
        ("leaky_relu", 3),
        ("selu",),
        ("conv_transpose3d",),
    ]:
        assert init.calculate_gain(*args) == torch.nn.init.calculate_gain(*args)
    for args in [("leaky_relu", True), ("leaky_relu", "x"), ("softsign",)]:
        with pytest.raises(ValueError) as e:
            init.calculate_gain(*args)
        with pytest.raises(ValueError) as te:
            torch.nn.init.calculate_gain(*args)
        assert str(e.value) == str(te.value)
    for shape in [(3, 4), (5, 2, 3), (6, 4, 3, 2)]:
        assert init._calculate_fan_in_and_fan_out(
            nbgrad.empty(*shape)
        ) == torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(*shape))


@needs_torch
def test_dirac_and_eye_match_torch():
    for shape, groups in [((4, 2, 3), 1), ((4, 2, 3, 3), 2), ((6, 3, 1, 3, 2), 3)]:
        t = torch.empty(*shape)
        torch.nn.init.dirac_(t, groups)
        n = init.dirac_(nbgrad.empty(*shape), groups)
        np.testing.assert_array_equal(_np(n), _np(t))


# -- nn.utils -------------------------------------------------------------------------------


def _grads_pair(seed=0, nonfinite=False):
    rng = np.random.default_rng(seed)
    shapes = [(3, 4), (4,), (2, 2, 2)]
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    grads = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    if nonfinite:
        grads[1][0] = np.inf
    nb = [nbgrad.nn.Parameter(nbgrad.tensor(a)) for a in arrays]
    for p, g in zip(nb, grads):
        p.grad = nbgrad.tensor(g)
    nb.append(nbgrad.nn.Parameter(nbgrad.zeros(2)))  # no grad: skipped
    tp = None
    if HAS_TORCH:
        tp = [torch.nn.Parameter(torch.tensor(a)) for a in arrays]
        for p, g in zip(tp, grads):
            p.grad = torch.tensor(g)
        tp.append(torch.nn.Parameter(torch.zeros(2)))
    return nb, tp


@needs_torch
@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, float("inf")])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    nb, tp = _grads_pair()
    versions = [p.grad._version for p in nb[:3]]
    total = nn_utils.clip_grad_norm_(nb, max_norm, norm_type=norm_type)
    ttotal = torch.nn.utils.clip_grad_norm_(tp, max_norm, norm_type=norm_type)
    assert isinstance(total, nbgrad.Tensor) and total.dim() == 0
    assert _dt(total.dtype) == _dt(ttotal.dtype) and not total.requires_grad
    np.testing.assert_allclose(total.item(), ttotal.item(), rtol=1e-6)
    for p, q, v in zip(nb, tp, versions):
        np.testing.assert_allclose(_np(p.grad), _np(q.grad), rtol=1e-6, atol=1e-7)
        assert p.grad._version == v + 1  # scaled in place
    assert nb[3].grad is None


@needs_torch
def test_clip_grad_norm_edge_cases_match_torch():
    nb, tp = _grads_pair()
    # a single tensor and a generator are accepted
    total = nn_utils.clip_grad_norm_(nb[0], 1.0)
    ttotal = torch.nn.utils.clip_grad_norm_(tp[0], 1.0)
    np.testing.assert_allclose(total.item(), ttotal.item(), rtol=1e-6)
    total = nn_utils.clip_grad_norm_((p for p in nb), 0.1)
    ttotal = torch.nn.utils.clip_grad_norm_((p for p in tp), 0.1)
    np.testing.assert_allclose(total.item(), ttotal.item(), rtol=1e-6)
    # no gradients at all: norm 0
    assert nn_utils.clip_grad_norm_([nbgrad.nn.Parameter(nbgrad.zeros(2))], 1.0).item() == 0.0
    with pytest.warns(UserWarning, match="`parameters` is an empty generator"):
        nn_utils.clip_grad_norm_((p for p in []), 1.0)
    nb, tp = _grads_pair(nonfinite=True)
    with pytest.raises(RuntimeError) as e:
        nn_utils.clip_grad_norm_(nb, 1.0, error_if_nonfinite=True)
    with pytest.raises(RuntimeError) as te:
        torch.nn.utils.clip_grad_norm_(tp, 1.0, error_if_nonfinite=True)
    assert str(e.value) == str(te.value)
    total = nn_utils.clip_grad_norm_(nb, 1.0)
    assert math.isinf(total.item())


@needs_torch
def test_clip_grad_value_matches_torch():
    nb, tp = _grads_pair(seed=3)
    assert nn_utils.clip_grad_value_(nb, 0.5) is None
    torch.nn.utils.clip_grad_value_(tp, 0.5)
    for p, q in zip(nb[:3], tp[:3]):
        np.testing.assert_array_equal(_np(p.grad), _np(q.grad))
        assert np.abs(_np(p.grad)).max() <= 0.5
    nn_utils.clip_grad_value_(nb[0], 0.1)
    assert np.abs(_np(nb[0].grad)).max() <= 0.1


@needs_torch
def test_parameters_to_vector_roundtrip_matches_torch():
    torch.manual_seed(0)
    t_model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2))
    nb_model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    nb_model.load_state_dict(_to_nb_state(t_model.state_dict()))
    vec = nn_utils.parameters_to_vector(nb_model.parameters())
    tvec = torch.nn.utils.parameters_to_vector(t_model.parameters())
    assert tuple(vec.shape) == (26,)
    np.testing.assert_array_equal(_np(vec), _np(tvec))
    assert vec.requires_grad and vec.grad_fn is not None  # differentiable, like torch
    new = nbgrad.arange(26, dtype=nbgrad.float32)
    nn_utils.vector_to_parameters(new, nb_model.parameters())
    torch.nn.utils.vector_to_parameters(torch.arange(26, dtype=torch.float32), t_model.parameters())
    for p, q in zip(nb_model.parameters(), t_model.parameters()):
        np.testing.assert_array_equal(_np(p), _np(q))
        assert p.requires_grad
    with pytest.raises(TypeError, match="expected torch.Tensor, but got: list"):
        nn_utils.vector_to_parameters([1.0], nb_model.parameters())


# -- forward / backward values against PyTorch ----------------------------------------------

RTOL, ATOL = 1e-4, 1e-5


def _pair_layers(make, seed=0):
    torch.manual_seed(seed)
    tm = make(_torch_ns())
    nm = make(NB)
    nm.load_state_dict(_to_nb_state(tm.state_dict()))
    return nm, tm


def _check_forward_backward(nm, tm, inputs, grad_inputs=True, seed=0):
    """Run both modules on the same inputs; compare outputs, input grads, parameter grads."""
    nb_in, t_in = [], []
    for a in inputs:
        if np.issubdtype(a.dtype, np.floating):
            nb_in.append(nbgrad.tensor(a, requires_grad=grad_inputs))
            t_in.append(torch.tensor(a, requires_grad=grad_inputs))
        else:
            nb_in.append(nbgrad.tensor(a))
            t_in.append(torch.tensor(a))
    out, tout = nm(*nb_in), tm(*t_in)
    assert tuple(out.shape) == tuple(tout.shape) and _dt(out.dtype) == _dt(tout.dtype)
    np.testing.assert_allclose(_np(out), _np(tout), rtol=RTOL, atol=ATOL)
    if not tout.requires_grad:
        return out, tout
    g = np.random.default_rng(seed + 1).standard_normal(tuple(tout.shape)).astype(np.float32)
    out.backward(nbgrad.tensor(g))
    tout.backward(torch.tensor(g))
    for x, tx in zip(nb_in, t_in):
        if tx.grad is not None:
            np.testing.assert_allclose(_np(x.grad), _np(tx.grad), rtol=RTOL, atol=ATOL)
    tparams = dict(tm.named_parameters())
    for n, p in nm.named_parameters():
        tg = tparams[n].grad
        assert (p.grad is None) == (tg is None), n
        if tg is not None:
            np.testing.assert_allclose(_np(p.grad), _np(tg), rtol=RTOL, atol=ATOL, err_msg=n)
    return out, tout


def _randn(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


VALUE_CASES = {
    "linear": ("linear", [(5, 3)]),
    "linear-nobias-3d": ("linear-nobias", [(2, 5, 3)]),
    "bilinear": ("bilinear", [(4, 2), (4, 3)]),
    "conv1d": ("conv1d", [(2, 2, 9)]),
    "conv1d-opts": ("conv1d-opts", [(2, 2, 11)]),
    "conv2d": ("conv2d", [(2, 3, 9, 11)]),
    "conv2d-same-reflect": ("conv2d-same-reflect", [(2, 2, 6, 5)]),
    "conv2d-valid": ("conv2d-valid", [(1, 2, 5, 5)]),
    "maxpool2d": ("maxpool2d", [(2, 3, 6, 7)]),
    "maxpool2d-opts": ("maxpool2d-opts", [(2, 2, 5, 6)]),
    "avgpool2d": ("avgpool2d", [(2, 2, 5, 6)]),
    "layernorm": ("layernorm", [(3, 4, 5)]),
    "layernorm-noaffine": ("layernorm-noaffine", [(3, 4)]),
    "layernorm-nobias": ("layernorm-nobias", [(3, 4)]),
    "relu": ("relu", [(3, 4)]),
    "gelu": ("gelu", [(3, 4)]),
    "gelu-tanh": ("gelu-tanh", [(3, 4)]),
    "tanh": ("tanh", [(3, 4)]),
    "sigmoid": ("sigmoid", [(3, 4)]),
    "softplus": ("softplus", [(3, 4)]),
    "silu": ("silu", [(3, 4)]),
    "leakyrelu": ("leakyrelu", [(3, 4)]),
    "softmax": ("softmax", [(3, 4, 2)]),
    "logsoftmax": ("logsoftmax", [(3, 4)]),
    "flatten": ("flatten", [(2, 3, 4, 5)]),
    "flatten-opts": ("flatten-opts", [(2, 3, 4, 5)]),
    "identity": ("identity", [(2, 3)]),
    "sequential": ("sequential", [(4, 2)]),
    # second tier
    "elu": ("elu", [(3, 4)]),
    "mish": ("mish", [(3, 4)]),
    "hardtanh": ("hardtanh", [(3, 4)]),
    "relu6": ("relu6", [(3, 4)]),
    "prelu": ("prelu", [(3, 4)]),
    "prelu-3": ("prelu-3", [(2, 3, 4, 2)]),
    "glu": ("glu", [(3, 4)]),
    "softmax2d": ("softmax2d", [(2, 3, 4, 5)]),
    "unflatten": ("unflatten", [(4, 6, 2)]),
    "unflatten-list": ("unflatten-list", [(3, 8)]),
    "smoothl1": ("smoothl1", [(3, 4), (3, 4)]),
    "huber": ("huber", [(3, 4), (3, 4)]),
    "kldiv": ("kldiv", [(3, 4), (3, 4)]),
    "pairwise-distance": ("pairwise-distance", [(3, 4), (3, 4)]),
    "cosine-similarity": ("cosine-similarity", [(3, 4), (3, 4)]),
}


# second tier
VALUE_CASES.update(
    {
        "groupnorm": ("groupnorm", [(2, 4, 3, 5)]),
        "groupnorm-opts": ("groupnorm-opts", [(3, 6, 4)]),
        "instancenorm2d": ("instancenorm2d", [(2, 3, 4, 5)]),
        "instancenorm2d-unbatched": ("instancenorm2d-affine-track", [(3, 4, 5)]),
        "convtranspose2d": ("convtranspose2d", [(2, 4, 5, 4)]),
        "convtranspose2d-opts": ("convtranspose2d-opts", [(1, 2, 4, 3)]),
        "convtranspose2d-unbatched": ("convtranspose2d-opts", [(2, 4, 3)]),
        "adaptiveavgpool2d": ("adaptiveavgpool2d", [(2, 3, 7, 5)]),
        "adaptiveavgpool2d-int": ("adaptiveavgpool2d-int", [(3, 5, 5)]),
        "upsample": ("upsample", [(2, 3, 4, 5)]),
        "upsample-bilinear": ("upsample-bilinear", [(1, 2, 4, 3)]),
        "upsample-nearest-exact": ("upsample-nearest-exact", [(1, 2, 5, 3)]),
    }
)


@needs_F
@needs_torch
@pytest.mark.parametrize("case", list(VALUE_CASES))
def test_layer_forward_backward_matches_torch(case):
    layer, shapes = VALUE_CASES[case]
    nm, tm = _pair_layers(LAYERS[layer])
    inputs = [_randn(*s, seed=i) for i, s in enumerate(shapes)]
    _check_forward_backward(nm, tm, inputs)


@needs_F
@needs_torch
@pytest.mark.parametrize(
    "layer",
    ["relu-inplace", "leakyrelu-opts", "silu-inplace"]
    + ["elu-opts", "mish-inplace", "hardtanh-inplace", "relu6-inplace"],  # second tier
)
def test_inplace_activations_match_torch(layer):
    nm, tm = _pair_layers(LAYERS[layer])
    a = _randn(3, 4)
    x, tx = nbgrad.tensor(a), torch.tensor(a)
    out, tout = nm(x), tm(tx)
    assert out is x and tout is tx
    np.testing.assert_allclose(_np(x), _np(tx), rtol=RTOL, atol=ATOL)
    assert x._version == tx._version


@needs_F
@needs_torch
def test_softmax_implicit_dim_matches_torch():
    nm, tm = _pair_layers(LAYERS["softmax-none"])
    for shape in [(4,), (3, 4), (2, 3, 4), (2, 3, 4, 5)]:
        a = _randn(*shape)
        with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
            out = nm(nbgrad.tensor(a))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tout = tm(torch.tensor(a))
        np.testing.assert_allclose(_np(out), _np(tout), rtol=RTOL, atol=ATOL)


@needs_F
@needs_torch
@pytest.mark.parametrize("layer", ["embedding", "embedding-pad"])
def test_embedding_matches_torch(layer):
    nm, tm = _pair_layers(LAYERS[layer])
    idx = np.array([[0, 2, 9, 2], [9, 9, 1, 0]], dtype=np.int64)
    _check_forward_backward(nm, tm, [idx])
    if nm.padding_idx is not None:
        assert np.all(_np(nm.weight.grad)[nm.padding_idx] == 0)


@needs_F
@needs_torch
@pytest.mark.parametrize(
    "layer,shape",
    [
        ("batchnorm1d", (6, 3)),
        ("batchnorm1d", (6, 3, 4)),
        ("batchnorm2d-noaffine", (3, 4, 5, 2)),
        ("batchnorm2d-notrack", (3, 4, 2, 2)),
        ("batchnorm1d-nobias", (5, 3)),
    ],
)
def test_batchnorm_train_and_eval_match_torch(layer, shape):
    nm, tm = _pair_layers(LAYERS[layer])
    for step in range(3):
        _check_forward_backward(nm, tm, [_randn(*shape, seed=step)], seed=step)
        for (k, v), (tk, tv) in zip(nm.state_dict().items(), tm.state_dict().items()):
            assert k == tk
            np.testing.assert_allclose(_np(v), _np(tv), rtol=RTOL, atol=ATOL, err_msg=k)
    nm.eval()
    tm.eval()
    _check_forward_backward(nm, tm, [_randn(*shape, seed=10)], seed=10)
    if nm.track_running_stats:
        assert int(nm.num_batches_tracked) == 3
        # eval normalises with the running statistics: a constant batch is not zeroed
        a = np.ones(shape, np.float32)
        out = nm(nbgrad.tensor(a)).detach().numpy()
        np.testing.assert_allclose(out, tm(torch.tensor(a)).detach().numpy(), rtol=RTOL, atol=ATOL)
        assert np.abs(out).max() > 1e-3
    with pytest.raises(ValueError) as e:
        nm(nbgrad.zeros(2))
    with pytest.raises(ValueError) as te:
        tm(torch.zeros(2))
    assert str(e.value) == str(te.value)


@needs_F
@needs_torch
def test_batchnorm_cumulative_average_momentum_none():
    make = lambda T: T.nn.BatchNorm1d(3, momentum=None)  # noqa: E731
    nm, tm = _pair_layers(make)
    for step in range(4):
        _check_forward_backward(nm, tm, [_randn(5, 3, seed=step)], seed=step)
    np.testing.assert_allclose(_np(nm.running_mean), _np(tm.running_mean), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(_np(nm.running_var), _np(tm.running_var), rtol=RTOL, atol=ATOL)


@needs_F
def test_dropout_train_and_eval():
    nbgrad.manual_seed(0)
    d = nn.Dropout(0.25)
    x = nbgrad.ones(200, 100, requires_grad=True)
    y = d(x)
    a = _np(y)
    kept = a != 0
    assert abs(kept.mean() - 0.75) < 0.02
    np.testing.assert_allclose(a[kept], 1 / 0.75, rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(_np(x.grad), kept / 0.75, rtol=1e-6)
    d.eval()
    z = d(x)
    np.testing.assert_array_equal(_np(z), _np(x))
    assert nn.Dropout(0.0)(x).detach().numpy().min() == 1.0


def _loss_inputs(name):
    rng = np.random.default_rng(0)
    if name in ("mse", "l1-sum"):
        return [
            rng.standard_normal((4, 3)).astype(np.float32),
            rng.standard_normal((4, 3)).astype(np.float32),
        ]
    if name in ("ce", "ce-opts"):
        return [
            rng.standard_normal((5, 3)).astype(np.float32),
            np.array([0, 2, 1, 1, 2], dtype=np.int64),
        ]
    if name == "ce-probs":
        p = rng.random((5, 3)).astype(np.float32)
        return [rng.standard_normal((5, 3)).astype(np.float32), p / p.sum(1, keepdims=True)]
    if name == "nll":
        x = rng.standard_normal((5, 3)).astype(np.float32)
        return [
            x - np.log(np.exp(x).sum(1, keepdims=True)),
            np.array([0, 2, 1, 1, 2], dtype=np.int64),
        ]
    if name == "bce":
        return [
            rng.uniform(0.05, 0.95, (4, 2)).astype(np.float32),
            rng.integers(0, 2, (4, 2)).astype(np.float32),
        ]
    if name == "bce-logits":
        return [
            rng.standard_normal((4, 2)).astype(np.float32),
            rng.integers(0, 2, (4, 2)).astype(np.float32),
        ]
    raise KeyError(name)


LOSS_LAYERS = dict(
    LAYERS,
    **{
        "ce-probs": lambda T: T.nn.CrossEntropyLoss(reduction="sum", label_smoothing=0.2),
        "ce-weighted": lambda T: T.nn.CrossEntropyLoss(weight=T.tensor([0.2, 1.0, 3.0])),
        "nll-weighted-ignore": lambda T: T.nn.NLLLoss(
            weight=T.tensor([0.2, 1.0, 3.0]), ignore_index=2
        ),
        "bce-logits-posw": lambda T: T.nn.BCEWithLogitsLoss(
            weight=T.tensor([1.0, 0.5]), pos_weight=T.tensor([2.0, 0.3]), reduction="none"
        ),
    },
)
LOSS_INPUTS = {"ce-weighted": "ce", "nll-weighted-ignore": "nll", "bce-logits-posw": "bce-logits"}


@needs_F
@needs_torch
@pytest.mark.parametrize(
    "name",
    [
        "mse",
        "l1-sum",
        "ce",
        "ce-opts",
        "ce-probs",
        "ce-weighted",
        "nll",
        "nll-weighted-ignore",
        "bce",
        "bce-logits",
        "bce-logits-posw",
    ],
)
def test_losses_match_torch(name):
    nm, tm = _pair_layers(LOSS_LAYERS[name])
    inputs = _loss_inputs(LOSS_INPUTS.get(name, name))
    nb_x = nbgrad.tensor(inputs[0], requires_grad=True)
    t_x = torch.tensor(inputs[0], requires_grad=True)
    out, tout = nm(nb_x, nbgrad.tensor(inputs[1])), tm(t_x, torch.tensor(inputs[1]))
    assert tuple(out.shape) == tuple(tout.shape)
    np.testing.assert_allclose(_np(out), _np(tout), rtol=RTOL, atol=ATOL)
    out.sum().backward()
    tout.sum().backward()
    np.testing.assert_allclose(_np(nb_x.grad), _np(t_x.grad), rtol=RTOL, atol=ATOL)


@needs_F
@needs_torch
@pytest.mark.parametrize("training", [True, False])
def test_sequential_cnn_forward_backward_matches_torch(training):
    nm, tm = _pair_layers(_cnn)
    nm[8].p = tm[8].p = 0.0  # dropout off so both runs are deterministic
    nm.train(training)
    tm.train(training)
    x = _randn(3, 1, 10, 10)
    target = np.array([1, 7, 3], dtype=np.int64)
    nb_x, t_x = nbgrad.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    crit, tcrit = nn.NLLLoss(), torch.nn.NLLLoss()
    out, tout = nm(nb_x), tm(t_x)
    np.testing.assert_allclose(_np(out), _np(tout), rtol=RTOL, atol=ATOL)
    loss_, tloss = crit(out, nbgrad.tensor(target)), tcrit(tout, torch.tensor(target))
    np.testing.assert_allclose(loss_.item(), tloss.item(), rtol=RTOL)
    loss_.backward()
    tloss.backward()
    np.testing.assert_allclose(_np(nb_x.grad), _np(t_x.grad), rtol=RTOL, atol=ATOL)
    tparams = dict(tm.named_parameters())
    for n, p in nm.named_parameters():
        np.testing.assert_allclose(
            _np(p.grad), _np(tparams[n].grad), rtol=1e-3, atol=1e-5, err_msg=n
        )
    for (k, v), tv in zip(nm.state_dict().items(), tm.state_dict().values()):
        np.testing.assert_allclose(_np(v), _np(tv), rtol=RTOL, atol=ATOL, err_msg=k)
    # one clipped SGD step keeps both models equal
    total = nn_utils.clip_grad_norm_(nm.parameters(), 0.5)
    ttotal = torch.nn.utils.clip_grad_norm_(tm.parameters(), 0.5)
    np.testing.assert_allclose(total.item(), ttotal.item(), rtol=1e-4)
    with nbgrad.no_grad():
        for p in nm.parameters():
            p -= 0.1 * p.grad
    with torch.no_grad():
        for p in tm.parameters():
            p -= 0.1 * p.grad
    nm.zero_grad()
    tm.zero_grad()
    np.testing.assert_allclose(_np(nm(nb_x)), _np(tm(t_x)), rtol=1e-3, atol=1e-4)
