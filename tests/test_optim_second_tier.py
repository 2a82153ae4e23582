"""Second-tier optimizers (Adagrad, Adadelta, Adamax, NAdam, RAdam, LBFGS) and schedulers
(OneCycleLR, ReduceLROnPlateau, SequentialLR).

Oracle tests (PyTorch installed) run the same problem from the same values in both libraries for
50 steps, in float32 and float64, and compare parameters, version counters and the state dicts
(keys in order, dtypes, versions, values).  The torch-free tests check closed forms: each
optimizer under a constant gradient, LBFGS's first step and its convergence on quadratics and
Rosenbrock, and the schedules' formulas.
"""

import copy
import math
import warnings

import numpy as np
import pytest
from conftest import needs_torch, torch

import nbgrad
from nbgrad import optim, serialization
from nbgrad.optim import _functional, lr_scheduler

STEPS = 50
NAMES = ["Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam"]


@pytest.fixture(params=["kernels", "numpy"])
def binding(request, monkeypatch):
    """Run a test with the fused Numba kernels and again with the numpy ufunc binding."""
    monkeypatch.setattr(_functional, "USE_KERNELS", request.param == "kernels")
    return request.param


@pytest.fixture
def default_float64():
    """nbgrad's and torch's default dtype float64 (the state's step becomes float64)."""
    nbgrad.set_default_dtype(nbgrad.float64)
    if torch is None:
        yield
        return
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(before)


# ------------------------------------------------------------------------------------------
# a small MLP-like problem, identical in both libraries


def _init_arrays(seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return {
        "w1": (rng.standard_normal((5, 3)) * 0.5).astype(dtype),
        "b1": (rng.standard_normal(5) * 0.1).astype(dtype),
        "w2": (rng.standard_normal((2, 5)) * 0.5).astype(dtype),
        "b2": (rng.standard_normal(2) * 0.1).astype(dtype),
        "x": rng.standard_normal((8, 3)).astype(dtype),
        "y": rng.standard_normal((8, 2)).astype(dtype),
    }


def _loss(p, x, y, act="relu"):
    h = x @ p[0].t() + p[1]
    h = h.relu() if act == "relu" else h.tanh()
    out = h @ p[2].t() + p[3]
    return ((out - y) ** 2).mean() + 0.01 * (p[0] * p[0]).sum()


def _params(lib, arrs):
    return [lib.tensor(arrs[k].copy(), requires_grad=True) for k in ("w1", "b1", "w2", "b2")]


def _run(lib, name, kwargs, arrs, steps=STEPS, params=None):
    params = params if params is not None else _params(lib, arrs)
    x, y = lib.tensor(arrs["x"]), lib.tensor(arrs["y"])
    opt = getattr(lib.optim, name)(params, **kwargs)
    for _ in range(steps):
        opt.zero_grad()
        _loss(params, x, y).backward()
        opt.step()
    return params, opt


def _np(t):
    return t.detach().numpy()


def _dtype_name(t):
    return str(t.dtype).replace("torch.", "").replace("nbgrad.", "")


def _assert_state_dicts_match(nb_sd, th_sd, rtol, atol):
    assert nb_sd["param_groups"] == th_sd["param_groups"]
    assert list(nb_sd["state"]) == list(th_sd["state"])
    for k, th_state in th_sd["state"].items():
        nb_state = nb_sd["state"][k]
        assert list(nb_state) == list(th_state)  # same keys, same order
        for key, tv in th_state.items():
            nv = nb_state[key]
            assert isinstance(nv, nbgrad.Tensor), key
            assert _dtype_name(nv) == _dtype_name(tv), key
            assert tuple(nv.shape) == tuple(tv.shape), key
            assert nv._version == tv._version, key
            if key == "step":
                assert nv.item() == tv.item()
            else:
                np.testing.assert_allclose(_np(nv), _np(tv), rtol=rtol, atol=atol, err_msg=key)


CONFIGS = [
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.05, lr_decay=0.01, initial_accumulator_value=0.1)),
    ("Adagrad", dict(lr=0.05, weight_decay=0.1, eps=1e-6)),
    ("Adagrad", dict(lr=0.02, maximize=True)),
    ("Adagrad", dict(lr=0.05, fused=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.5, eps=1e-4)),
    ("Adadelta", dict(lr=1.0, weight_decay=0.1)),
    ("Adadelta", dict(lr=0.3, maximize=True)),
    ("Adamax", dict()),
    ("Adamax", dict(lr=0.01, betas=(0.3, 0.5), eps=1e-6)),  # lerp weight >= 0.5 branch
    ("Adamax", dict(lr=0.01, weight_decay=0.1)),
    ("Adamax", dict(lr=0.005, maximize=True)),
    ("NAdam", dict()),
    ("NAdam", dict(lr=0.01, momentum_decay=0.02)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("NAdam", dict(lr=0.005, betas=(0.3, 0.5), maximize=True)),
    ("RAdam", dict()),
    ("RAdam", dict(lr=0.01, weight_decay=0.1)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.01, betas=(0.5, 0.9))),  # rectified from step 6 on
    ("RAdam", dict(lr=0.005, maximize=True, foreach=False)),
]
CONFIG_IDS = ["%s-%s" % (n, "-".join("%s=%s" % kv for kv in kw.items())) for n, kw in CONFIGS]


@needs_torch
@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=CONFIG_IDS)
def test_float32_trajectory_matches_torch(name, kwargs, binding):
    """50 steps from the same float32 values (each library's own autograd): parameters,
    versions and the whole state dict agree to float32 tolerance."""
    arrs = _init_arrays(0)
    nb_p, nb_opt = _run(nbgrad, name, kwargs, arrs)
    th_p, th_opt = _run(torch, name, kwargs, arrs)
    for a, b in zip(nb_p, th_p):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-4, atol=2e-5)
        assert a._version == b._version
    _assert_state_dicts_match(nb_opt.state_dict(), th_opt.state_dict(), rtol=1e-3, atol=2e-5)


@needs_torch
@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=CONFIG_IDS)
def test_float64_trajectory_matches_torch(name, kwargs, binding, default_float64):
    arrs = _init_arrays(2, np.float64)
    nb_p, nb_opt = _run(nbgrad, name, kwargs, arrs)
    th_p, th_opt = _run(torch, name, kwargs, arrs)
    for a, b in zip(nb_p, th_p):
        assert a.dtype == nbgrad.float64
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-11, atol=1e-13)
        assert a._version == b._version
    _assert_state_dicts_match(nb_opt.state_dict(), th_opt.state_dict(), rtol=1e-9, atol=1e-13)
    # the step (and NAdam's mu_product) follow the default dtype, unless fused (float32)
    step = nb_opt.state[nb_p[0]]["step"]
    assert step.dtype == (nbgrad.float32 if kwargs.get("fused") else nbgrad.float64)


TIGHT = [
    ("Adagrad", dict(lr=0.05, lr_decay=0.01, weight_decay=0.01)),
    ("Adadelta", dict(lr=1.0, weight_decay=0.01)),
    ("Adamax", dict(lr=0.01, weight_decay=0.01)),
    ("Adamax", dict(lr=0.01, betas=(0.3, 0.5))),
    ("NAdam", dict(lr=0.01, weight_decay=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.01, weight_decay=0.01)),
    ("RAdam", dict(lr=0.01, betas=(0.5, 0.9), weight_decay=0.1, decoupled_weight_decay=True)),
]


@needs_torch
@pytest.mark.parametrize(
    "name,kwargs", TIGHT, ids=["%s-%d" % (n, i) for i, (n, _) in enumerate(TIGHT)]
)
def test_same_gradients_tight(name, kwargs, binding):
    """Feed torch exactly nbgrad's gradients: only the update maths differs, so after 50 steps
    the parameters agree to a few float32 ulps (PyTorch's vectorised kernels fuse some
    multiply-adds; nbgrad rounds them one by one)."""
    arrs = _init_arrays(1)
    nb_p, th_p = _params(nbgrad, arrs), _params(torch, arrs)
    x, y = nbgrad.tensor(arrs["x"]), nbgrad.tensor(arrs["y"])
    nb_opt = getattr(optim, name)(nb_p, **kwargs)
    th_opt = getattr(torch.optim, name)(th_p, **kwargs)
    for _ in range(STEPS):
        nb_opt.zero_grad()
        _loss(nb_p, x, y).backward()
        for a, b in zip(nb_p, th_p):
            b.grad = torch.from_numpy(a.grad.numpy().copy())
        nb_opt.step()
        th_opt.step()
    for a, b in zip(nb_p, th_p):
        np.testing.assert_allclose(_np(a), _np(b), rtol=2e-6, atol=2e-7)


def test_kernels_and_numpy_bindings_agree(monkeypatch):
    """The fused kernels and the numpy binding implement the same op sequence."""
    for name, kwargs in CONFIGS:
        results = []
        for use in (True, False):
            monkeypatch.setattr(_functional, "USE_KERNELS", use)
            params, _ = _run(nbgrad, name, kwargs, _init_arrays(4), steps=20)
            results.append([_np(p).copy() for p in params])
        for a, b in zip(*results):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7, err_msg=name + str(kwargs))


def _manual_steps(lib, opt, params, grads):
    for g_list in grads:
        for p, g in zip(params, g_list):
            p.grad = lib.tensor(g.copy())
        opt.step()


@needs_torch
@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("Adagrad", dict(lr=0.1, weight_decay=0.1, initial_accumulator_value=0.2)),
        ("Adadelta", dict(lr=1.0, weight_decay=0.1)),
        ("Adamax", dict(lr=0.05, weight_decay=0.1)),
        ("NAdam", dict(lr=0.05, weight_decay=0.1)),
        ("RAdam", dict(lr=0.05, betas=(0.5, 0.9), weight_decay=0.1, decoupled_weight_decay=True)),
    ],
)
def test_noncontiguous_float16_complex_match_torch(name, kwargs, binding):
    rng = np.random.default_rng(3)
    base = rng.standard_normal((4, 3)).astype(np.float32)
    grads = [[rng.standard_normal((3, 4)).astype(np.float32)] for _ in range(10)]
    # a non-contiguous leaf (the transpose of a (4, 3) array)
    nb_p = [nbgrad.tensor(base).t().detach().requires_grad_()]
    assert not nb_p[0].is_contiguous()
    th_p = [torch.tensor(base).t().detach().requires_grad_()]
    nb_opt = getattr(optim, name)(nb_p, **kwargs)
    th_opt = getattr(torch.optim, name)(th_p, **kwargs)
    _manual_steps(nbgrad, nb_opt, nb_p, grads)
    _manual_steps(torch, th_opt, th_p, grads)
    np.testing.assert_allclose(_np(nb_p[0]), _np(th_p[0]), rtol=1e-5, atol=1e-6)
    assert nb_p[0]._version == th_p[0]._version

    # complex64: the real view is updated, as PyTorch's view_as_real
    cbase = (base[:, 0] + 1j * base[:, 1]).astype(np.complex64)
    cgrads = [[(g[0][0] + 1j * g[0][1]).astype(np.complex64)] for g in grads]
    nb_c = [nbgrad.tensor(cbase.copy(), requires_grad=True)]
    th_c = [torch.tensor(cbase.copy(), requires_grad=True)]
    nb_opt = getattr(optim, name)(nb_c, **kwargs)
    th_opt = getattr(torch.optim, name)(th_c, **kwargs)
    _manual_steps(nbgrad, nb_opt, nb_c, cgrads)
    _manual_steps(torch, th_opt, th_c, cgrads)
    np.testing.assert_allclose(_np(nb_c[0]), _np(th_c[0]), rtol=1e-5, atol=1e-6)
    for key, tv in th_opt.state[th_c[0]].items():
        nv = nb_opt.state[nb_c[0]][key]
        assert _dtype_name(nv) == _dtype_name(tv), key
        np.testing.assert_allclose(nv.numpy(), tv.numpy(), rtol=1e-4, atol=1e-6, err_msg=key)

    # float16 (numpy binding; values rounded to half after every op)
    hbase = base.astype(np.float16)
    hgrads = [[g[0].T.astype(np.float16)] for g in grads]
    nb_h = [nbgrad.tensor(hbase.copy(), requires_grad=True)]
    th_h = [torch.tensor(hbase.copy(), requires_grad=True)]
    nb_opt = getattr(optim, name)(nb_h, **kwargs)
    th_opt = getattr(torch.optim, name)(th_h, **kwargs)
    _manual_steps(nbgrad, nb_opt, nb_h, hgrads)
    _manual_steps(torch, th_opt, th_h, hgrads)
    assert nb_h[0].dtype == nbgrad.float16
    np.testing.assert_allclose(
        _np(nb_h[0]).astype(np.float32), _np(th_h[0]).astype(np.float32), rtol=1e-2, atol=3e-3
    )


@needs_torch
def test_adagrad_state_created_by_constructor_like_torch():
    """Adagrad builds every parameter's state in __init__ (also for parameters that never get
    a gradient), from the constructor's initial_accumulator_value; a group added later gets its
    state at its first step."""
    states = []
    for lib in (nbgrad, torch):
        a = lib.ones(2, requires_grad=True)
        unused = lib.ones(3, requires_grad=True)
        opt = lib.optim.Adagrad(
            [{"params": [a]}, {"params": [unused], "initial_accumulator_value": 5.0}],
            initial_accumulator_value=0.5,
        )
        late = lib.ones(2, requires_grad=True)
        opt.add_param_group({"params": [late]})
        a.grad = lib.ones(2)
        late.grad = lib.ones(2)
        opt.step()
        sd = opt.state_dict()
        states.append(
            {
                k: {kk: (_dtype_name(v), v.tolist(), v._version) for kk, v in s.items()}
                for k, s in sd["state"].items()
            }
        )
    assert states[0] == states[1]
    assert states[0][1]["sum"][1] == [0.5, 0.5, 0.5]  # the constructor's value, as torch


# ------------------------------------------------------------------------------------------
# state dicts


@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("Adagrad", dict(lr=0.1, lr_decay=0.01)),
        ("Adadelta", dict(lr=0.5, weight_decay=0.1)),
        ("Adamax", dict(lr=0.01)),
        ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
        ("RAdam", dict(lr=0.01)),
    ],
)
@pytest.mark.parametrize("via", ["deepcopy", "file"])
def test_state_dict_round_trip(name, kwargs, via, tmp_path):
    arrs = _init_arrays(6)
    x, y = nbgrad.tensor(arrs["x"]), nbgrad.tensor(arrs["y"])
    params, opt = _run(nbgrad, name, kwargs, arrs, steps=10)
    if via == "file":
        serialization.save(opt.state_dict(), tmp_path / "opt.nbg")
        saved = serialization.load(tmp_path / "opt.nbg")
    else:
        saved = copy.deepcopy(opt.state_dict())
    params2 = [p.detach().clone().requires_grad_() for p in params]
    opt2 = getattr(optim, name)(params2, lr=123.0)
    opt2.load_state_dict(saved)
    assert opt2.param_groups[0]["lr"] == kwargs["lr"]
    assert opt2.param_groups[0]["params"][0] is params2[0]
    for _ in range(10):
        for ps, o in ((params, opt), (params2, opt2)):
            o.zero_grad()
            _loss(ps, x, y).backward()
            o.step()
    for a, b in zip(params, params2):
        np.testing.assert_array_equal(_np(a), _np(b))
    sd1, sd2 = opt.state_dict(), opt2.state_dict()
    assert sd1["param_groups"] == sd2["param_groups"]
    for k in sd1["state"]:
        assert list(sd1["state"][k]) == list(sd2["state"][k])
        for key in sd1["state"][k]:
            np.testing.assert_array_equal(
                sd1["state"][k][key].numpy(), sd2["state"][k][key].numpy()
            )


def test_load_state_dict_casts_and_old_formats():
    p = nbgrad.zeros(2, requires_grad=True)
    opt = optim.NAdam([p])
    p.grad = nbgrad.ones(2)
    opt.step()
    sd = copy.deepcopy(opt.state_dict())
    assert sd["state"][0]["mu_product"].dtype == nbgrad.float32
    # floating state (mu_product too, as PyTorch) follows the parameter; step keeps its own
    q = nbgrad.zeros(2, dtype=nbgrad.float64, requires_grad=True)
    opt2 = optim.NAdam([q])
    opt2.load_state_dict(sd)
    assert opt2.state[q]["mu_product"].dtype == nbgrad.float64
    assert opt2.state[q]["exp_avg"].dtype == nbgrad.float64
    assert opt2.state[q]["step"].dtype == nbgrad.float32
    # plain-number step / mu_product (older checkpoints) become tensors
    sd["state"][0]["step"] = 3
    sd["state"][0]["mu_product"] = 0.5
    opt3 = optim.NAdam([nbgrad.zeros(2, requires_grad=True)])
    opt3.load_state_dict(sd)
    st = opt3.state[opt3.param_groups[0]["params"][0]]
    assert isinstance(st["step"], nbgrad.Tensor) and st["step"].item() == 3.0
    assert isinstance(st["mu_product"], nbgrad.Tensor) and st["mu_product"].item() == 0.5
    for name in ("Adagrad", "Adadelta", "Adamax", "RAdam"):
        r = nbgrad.zeros(2, requires_grad=True)
        o = getattr(optim, name)([r])
        r.grad = nbgrad.ones(2)
        o.step()
        s = copy.deepcopy(o.state_dict())
        s["state"][0]["step"] = 7
        o2 = getattr(optim, name)([nbgrad.zeros(2, requires_grad=True)])
        o2.load_state_dict(s)
        step = o2.state[o2.param_groups[0]["params"][0]]["step"]
        assert isinstance(step, nbgrad.Tensor) and step.item() == 7.0, name


@needs_torch
@pytest.mark.parametrize("name", NAMES)
def test_state_dict_loads_into_torch(name):
    """The format is PyTorch's: an nbgrad state dict (tensors converted) loads into the torch
    optimizer and the two continue identically."""
    arrs = _init_arrays(7)
    nb_p, nb_opt = _run(nbgrad, name, dict(lr=0.01), arrs, steps=5)
    th_p = [torch.tensor(_np(p).copy(), requires_grad=True) for p in nb_p]
    th_opt = getattr(torch.optim, name)(th_p)

    def to_torch(v):
        return torch.tensor(v.numpy().copy()) if isinstance(v, nbgrad.Tensor) else v

    sd = nb_opt.state_dict()
    th_opt.load_state_dict(
        {
            "state": {
                k: {kk: to_torch(vv) for kk, vv in s.items()} for k, s in sd["state"].items()
            },
            "param_groups": copy.deepcopy(sd["param_groups"]),
        }
    )
    x, y = nbgrad.tensor(arrs["x"]), nbgrad.tensor(arrs["y"])
    xt, yt = torch.tensor(arrs["x"]), torch.tensor(arrs["y"])
    for _ in range(10):
        nb_opt.zero_grad()
        th_opt.zero_grad()
        _loss(nb_p, x, y).backward()
        _loss(th_p, xt, yt).backward()
        nb_opt.step()
        th_opt.step()
    for a, b in zip(nb_p, th_p):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------------------
# versions, grad mode, closures


@pytest.mark.parametrize(
    "name,kwargs,per_step",
    [
        ("Adagrad", dict(), 1),  # param.addcdiv_
        ("Adadelta", dict(), 1),  # param.add_
        ("Adamax", dict(), 1),  # param.addcdiv_
        ("NAdam", dict(), 2),  # two param.addcdiv_
        ("NAdam", dict(weight_decay=0.1, decoupled_weight_decay=True), 3),  # + param.mul_
        ("RAdam", dict(), 1),  # param.add_
        ("RAdam", dict(weight_decay=0.1, decoupled_weight_decay=True), 2),  # + param.mul_
    ],
)
def test_step_updates_in_place_and_bumps_version(name, kwargs, per_step, binding):
    p = nbgrad.nn.Parameter(nbgrad.ones(4))
    view = p.detach()  # shares storage and version counter with p
    storage = p._data
    opt = getattr(optim, name)([p], **kwargs)
    for i in range(3):
        p.grad = nbgrad.full((4,), 0.5)
        opt.step()
        assert p._version == per_step * (i + 1)
    assert p._data is storage and view._version == p._version
    np.testing.assert_array_equal(view.numpy(), _np(p))
    assert p.is_leaf and p.requires_grad and p.grad_fn is None
    assert isinstance(p, nbgrad.nn.Parameter)


@pytest.mark.parametrize("name", NAMES)
def test_closure_runs_under_grad_and_parameters_without_grad_are_skipped(name):
    p = nbgrad.tensor([1.0, 2.0], requires_grad=True)
    idle = nbgrad.tensor([3.0], requires_grad=True)
    seen = []

    def closure():
        seen.append(nbgrad.is_grad_enabled())
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    opt = getattr(optim, name)([p, idle], lr=0.1)
    with nbgrad.no_grad():
        loss = opt.step(closure)
    assert seen == [True] and loss.item() == 5.0
    assert nbgrad.is_grad_enabled()
    assert idle._version == 0 and idle.item() == 3.0
    # only Adagrad builds state for a parameter that has no gradient (in its constructor)
    assert (idle in opt.state) == (name == "Adagrad")


# ------------------------------------------------------------------------------------------
# closed forms (no oracle needed)


def _constant_grad_run(opt, x, c, steps):
    out = []
    for _ in range(steps):
        opt.zero_grad()
        (x * c).sum().backward()
        opt.step()
        out.append(_np(x).copy())
    return np.array(out)


C = np.array([0.5, -2.0, 3e-3])
X0 = np.array([1.0, 2.0, -1.0])
T = np.arange(1, STEPS + 1)[:, None]


@pytest.mark.parametrize("dtype,rtol", [("float32", 1e-5), ("float64", 1e-12)])
def test_adagrad_constant_gradient_closed_form(binding, dtype, rtol):
    # s_k = s0 + k g^2;  x_t = x0 - sum_k lr / (1 + (k-1) decay) * g / (sqrt(s_k) + eps)
    lr, decay, s0, eps = 0.1, 0.05, 0.3, 1e-10
    x = nbgrad.tensor(X0.astype(dtype), requires_grad=True)
    opt = optim.Adagrad([x], lr=lr, lr_decay=decay, initial_accumulator_value=s0, eps=eps)
    got = _constant_grad_run(opt, x, nbgrad.tensor(C.astype(dtype)), STEPS)
    steps = lr / (1 + (T - 1) * decay) * C / (np.sqrt(s0 + T * C**2) + eps)
    np.testing.assert_allclose(got, X0 - np.cumsum(steps, axis=0), rtol=rtol, atol=rtol / 10)


@pytest.mark.parametrize("dtype,rtol", [("float32", 1e-5), ("float64", 1e-12)])
def test_adadelta_constant_gradient_recurrence(binding, dtype, rtol):
    # v_k = (1 - rho^k) g^2 in closed form; the delta accumulator u is a scalar recurrence
    lr, rho, eps = 1.0, 0.9, 1e-6
    x = nbgrad.tensor(X0.astype(dtype), requires_grad=True)
    got = _constant_grad_run(
        optim.Adadelta([x], lr=lr, rho=rho, eps=eps), x, nbgrad.tensor(C.astype(dtype)), STEPS
    )
    u = np.zeros(3)
    want, xk = [], X0.copy()
    for k in range(1, STEPS + 1):
        v = (1 - rho**k) * C**2
        delta = np.sqrt(u + eps) / np.sqrt(v + eps) * C
        u = rho * u + (1 - rho) * delta**2
        xk = xk - lr * delta
        want.append(xk)
    np.testing.assert_allclose(got, np.array(want), rtol=rtol * 10, atol=rtol / 10)


@pytest.mark.parametrize("dtype,rtol", [("float32", 1e-5), ("float64", 1e-12)])
def test_adamax_constant_gradient_closed_form(binding, dtype, rtol):
    # m_t = (1 - beta1^t) g and u_t = |g| + eps (beta2 u never wins), so every step moves x by
    # -lr g / (|g| + eps)
    lr, eps = 0.01, 1e-8
    x = nbgrad.tensor(X0.astype(dtype), requires_grad=True)
    got = _constant_grad_run(
        optim.Adamax([x], lr=lr, eps=eps), x, nbgrad.tensor(C.astype(dtype)), STEPS
    )
    np.testing.assert_allclose(got, X0 - T * lr * C / (np.abs(C) + eps), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype,rtol", [("float32", 1e-5), ("float64", 1e-12)])
def test_nadam_constant_gradient_closed_form(binding, dtype, rtol, request):
    # m_t = (1 - b1^t) g, v_t = (1 - b2^t) g^2: the denominator is |g| + eps; with
    # mu_t = b1 (1 - 0.5 * 0.96^(t psi)) and P_t = mu_1 ... mu_t the step is
    # lr (1 - mu_t) / (1 - P_t) g / d + lr mu_{t+1} / (1 - P_t mu_{t+1}) m_t / d
    # (P_t is a state tensor in the default dtype: float64 here for the float64 run)
    if dtype == "float64":
        request.getfixturevalue("default_float64")
    lr, b1, b2, psi, eps = 0.01, 0.9, 0.999, 4e-3, 1e-8
    x = nbgrad.tensor(X0.astype(dtype), requires_grad=True)
    got = _constant_grad_run(
        optim.NAdam([x], lr=lr, betas=(b1, b2), momentum_decay=psi, eps=eps),
        x,
        nbgrad.tensor(C.astype(dtype)),
        STEPS,
    )
    t = T[:, 0].astype(float)
    mu = b1 * (1 - 0.5 * 0.96 ** (t * psi))
    mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * psi))
    prod = np.cumprod(mu)
    d = np.abs(C) + eps
    m = (1 - b1**t)[:, None] * C
    c_grad = (lr * (1 - mu) / (1 - prod))[:, None]
    c_avg = (lr * mu_next / (1 - prod * mu_next))[:, None]
    steps = c_grad * C / d + c_avg * m / d
    np.testing.assert_allclose(got, X0 - np.cumsum(steps, axis=0), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype,rtol", [("float32", 1e-5), ("float64", 1e-12)])
def test_radam_constant_gradient_closed_form(binding, dtype, rtol):
    # m_hat = g; while rho_t <= 5 the step is lr m_hat = lr g (no adaptive term), after
    # that lr g sqrt(1 - b2^t) / (|g| sqrt(1 - b2^t) + eps) r_t
    lr, b1, b2, eps = 0.01, 0.9, 0.999, 1e-8
    x = nbgrad.tensor(X0.astype(dtype), requires_grad=True)
    got = _constant_grad_run(
        optim.RAdam([x], lr=lr, betas=(b1, b2), eps=eps), x, nbgrad.tensor(C.astype(dtype)), STEPS
    )
    t = T[:, 0].astype(float)
    rho_inf = 2 / (1 - b2) - 1
    rho = rho_inf - 2 * t * b2**t / (1 - b2**t)
    rect = np.sqrt(
        np.clip((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho), 0, None)
    )
    bc2 = np.sqrt(1 - b2**t)[:, None]
    adaptive = lr * C * bc2 / (np.abs(C) * bc2 + eps) * rect[:, None]
    steps = np.where((rho > 5)[:, None], adaptive, lr * C)
    assert (rho <= 5).sum() == 5  # both branches are exercised
    np.testing.assert_allclose(got, X0 - np.cumsum(steps, axis=0), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("name", NAMES)
def test_maximize_mirrors_minimize(name, binding):
    # maximize on -f follows exactly the minimize trajectory on f
    c = nbgrad.tensor([0.5, -2.0, 0.25])
    runs = []
    for maximize, sign in ((False, 1.0), (True, -1.0)):
        x = nbgrad.tensor([1.0, 2.0, -1.0], requires_grad=True)
        opt = getattr(optim, name)([x], lr=0.05, weight_decay=0.1, maximize=maximize)
        for _ in range(20):
            opt.zero_grad()
            (sign * ((x - c) ** 2).sum()).backward()
            opt.step()
        runs.append(_np(x).copy())
    np.testing.assert_array_equal(runs[0], runs[1])


@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("Adagrad", dict(lr=0.5)),
        ("Adadelta", dict(lr=10.0)),
        ("Adamax", dict(lr=0.05)),
        ("NAdam", dict(lr=0.05)),
        ("RAdam", dict(lr=0.05)),
    ],
)
def test_converges_on_a_quadratic(name, kwargs):
    a = nbgrad.tensor([1.0, 4.0, 0.5])
    c = nbgrad.tensor([0.5, -1.0, 2.0])
    x = nbgrad.zeros(3, requires_grad=True)
    opt = getattr(optim, name)([x], **kwargs)
    for _ in range(600):
        opt.zero_grad()
        (0.5 * a * (x - c) ** 2).sum().backward()
        opt.step()
    np.testing.assert_allclose(_np(x), c.numpy(), atol=2e-2)


# ------------------------------------------------------------------------------------------
# errors (messages as PyTorch's)


def _errors(lib):
    mod = lib.optim
    sched = mod.lr_scheduler
    p = lib.zeros(2, requires_grad=True)
    c = lib.zeros(2, dtype=lib.complex64, requires_grad=True)

    def stepped(opt, *params):
        for q in params:
            q.grad = lib.ones_like(q)
        opt.step()

    def bad_line_search(opt):
        def closure():
            opt.zero_grad()
            loss = ((p - 1) ** 2).sum()
            loss.backward()
            return loss

        opt.step(closure)

    def opt_sgd():
        return mod.SGD([lib.zeros(1, requires_grad=True)], lr=0.1)

    cases = [
        lambda: mod.Adagrad([p], lr=-1),
        lambda: mod.Adagrad([p], lr_decay=-0.1),
        lambda: mod.Adagrad([p], weight_decay=-1),
        lambda: mod.Adagrad([p], initial_accumulator_value=-1),
        lambda: mod.Adagrad([p], eps=-1e-3),
        lambda: mod.Adagrad([p], fused=True, foreach=True),
        lambda: mod.Adagrad([p], lr=lib.tensor([0.1, 0.2])),
        lambda: stepped(mod.Adagrad([c], fused=True), c),
        lambda: mod.Adadelta([p], lr=-1),
        lambda: mod.Adadelta([p], rho=1.5),
        lambda: mod.Adadelta([p], eps=-1),
        lambda: mod.Adadelta([p], weight_decay=-1),
        lambda: stepped(mod.Adadelta([p], capturable=True), p),
        lambda: mod.Adamax([p], lr=-1),
        lambda: mod.Adamax([p], eps=-1),
        lambda: mod.Adamax([p], betas=(1.0, 0.9)),
        lambda: mod.Adamax([p], betas=(0.9, -0.1)),
        lambda: mod.Adamax([p], weight_decay=-1),
        lambda: stepped(mod.Adamax([p], capturable=True), p),
        lambda: mod.NAdam([p], lr=-1),
        lambda: mod.NAdam([p], eps=-1),
        lambda: mod.NAdam([p], betas=(0.9, 1.0)),
        lambda: mod.NAdam([p], weight_decay=-1),
        lambda: mod.NAdam([p], momentum_decay=-1),
        lambda: stepped(mod.NAdam([p], capturable=True), p),
        lambda: mod.RAdam([p], lr=-1),
        lambda: mod.RAdam([p], eps=-1),
        lambda: mod.RAdam([p], betas=(-0.5, 0.9)),
        lambda: mod.RAdam([p], weight_decay=-1),
        lambda: stepped(mod.RAdam([p], capturable=True), p),
        lambda: stepped(mod.Adam([p], capturable=True), p),
        lambda: mod.LBFGS([p], lr=-1),
        lambda: mod.LBFGS([{"params": [p]}, {"params": [lib.zeros(1, requires_grad=True)]}]),
        lambda: bad_line_search(mod.LBFGS([p], line_search_fn="backtracking")),
        lambda: sched.ReduceLROnPlateau(opt_sgd(), factor=1.0),
        lambda: sched.ReduceLROnPlateau(opt_sgd(), mode="median"),
        lambda: sched.ReduceLROnPlateau(opt_sgd(), threshold_mode="ratio"),
        lambda: sched.ReduceLROnPlateau(opt_sgd(), min_lr=[0.1, 0.2]),
        lambda: sched.ReduceLROnPlateau("not an optimizer"),
        lambda: sched.OneCycleLR(opt_sgd(), max_lr=0.1),
        lambda: sched.OneCycleLR(opt_sgd(), max_lr=0.1, total_steps=0),
        lambda: sched.OneCycleLR(opt_sgd(), max_lr=0.1, epochs=-1, steps_per_epoch=3),
        lambda: sched.OneCycleLR(opt_sgd(), max_lr=0.1, epochs=2, steps_per_epoch=1.5),
        lambda: sched.OneCycleLR(opt_sgd(), max_lr=0.1, total_steps=10, pct_start=1.5),
        lambda: sched.OneCycleLR(opt_sgd(), max_lr=0.1, total_steps=10, anneal_strategy="exp"),
        lambda: sched.OneCycleLR(opt_sgd(), max_lr=[0.1, 0.2], total_steps=10),
        lambda: sched.OneCycleLR(mod.Adagrad([p]), max_lr=0.1, total_steps=10),
        lambda: sched.SequentialLR(opt_sgd(), [], milestones=[]),
        lambda: sched.SequentialLR(opt_sgd(), [object()], milestones=[]),
        lambda: sched.SequentialLR(opt_sgd(), [sched.StepLR(opt_sgd(), 2)], milestones=[]),
        lambda: sched.SequentialLR(
            (o := opt_sgd()), [sched.StepLR(o, 2), sched.StepLR(o, 3)], milestones=[]
        ),
        lambda: sched.SequentialLR(
            (o := opt_sgd()), [sched.StepLR(o, 2), sched.ReduceLROnPlateau(o)], milestones=[3]
        ),
    ]
    out = []
    for case in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(Exception) as info:
                case()
        msg = str(info.value).replace("nbgrad.", "torch.")  # dtype names in messages
        if "is different from" in msg:  # names the optimizer objects: keep the message's frame
            msg = msg.split(" has ")[0]
        out.append((type(info.value).__name__, msg))
    return out


def test_errors():
    errs = _errors(nbgrad)
    assert errs[0] == ("ValueError", "Invalid learning rate: -1")
    assert errs[3] == ("ValueError", "Invalid initial_accumulator_value value: -1")
    assert errs[5] == ("RuntimeError", "`fused` and `foreach` cannot be `True` together.")
    assert errs[9] == ("ValueError", "Invalid rho value: 1.5")
    assert (
        errs[12][0] == "AssertionError"
        and "['cuda', 'xpu', 'hpu', 'privateuseone']." in errs[12][1]
    )
    assert errs[24][1].startswith("If capturable=True, params, mu_products and state_steps")
    assert errs[23] == ("ValueError", "Invalid momentum_decay value: -1")
    assert errs[32] == (
        "ValueError",
        "LBFGS doesn't support per-parameter options (parameter groups)",
    )
    assert errs[33] == ("RuntimeError", "only 'strong_wolfe' is supported")
    assert errs[34] == ("ValueError", "Factor should be < 1.0.")
    assert errs[39] == (
        "ValueError",
        "You must define either total_steps OR (epochs AND steps_per_epoch)",
    )


@needs_torch
def test_errors_match_torch():
    assert _errors(nbgrad) == _errors(torch)


def test_differentiable_not_supported():
    for name in NAMES:
        with pytest.raises(NotImplementedError, match="differentiable"):
            getattr(optim, name)([nbgrad.zeros(1, requires_grad=True)], differentiable=True)


@needs_torch
@pytest.mark.parametrize("name", NAMES + ["LBFGS"])
def test_defaults_and_repr_match_torch(name):
    nb = getattr(optim, name)([nbgrad.zeros(1, requires_grad=True)])
    th = getattr(torch.optim, name)([torch.zeros(1, requires_grad=True)])
    assert list(nb.defaults.items()) == list(th.defaults.items())
    assert repr(nb) == repr(th)


# ------------------------------------------------------------------------------------------
# LBFGS


def _lbfgs_run(lib, arrs, kwargs, steps, act="tanh"):
    """L-BFGS on the tanh MLP: (params, optimizer, the loss each step returned)."""
    params = _params(lib, arrs)
    x, y = lib.tensor(arrs["x"]), lib.tensor(arrs["y"])
    opt = lib.optim.LBFGS(params, **kwargs)

    def closure():
        opt.zero_grad()
        loss = _loss(params, x, y, act)
        loss.backward()
        return loss

    losses = [opt.step(closure).item() for _ in range(steps)]
    return params, opt, losses


def _logistic_arrays(dtype):
    rng = np.random.default_rng(1)
    arrs = {
        "w": rng.standard_normal((3, 6)) * 0.3,
        "b": rng.standard_normal(3) * 0.1,
        "x": rng.standard_normal((40, 6)),
        "y": (rng.random((40, 3)) > 0.5) * 1.0,
    }
    return {k: v.astype(dtype) for k, v in arrs.items()}


def _lbfgs_logistic_run(lib, arrs, kwargs, steps):
    """L-BFGS on an L2-regularised logistic regression (convex, well conditioned)."""
    w = lib.tensor(arrs["w"].copy(), requires_grad=True)
    b = lib.tensor(arrs["b"].copy(), requires_grad=True)
    x, y = lib.tensor(arrs["x"]), lib.tensor(arrs["y"])
    opt = lib.optim.LBFGS([w, b], **kwargs)

    def closure():
        opt.zero_grad()
        z = x @ w.t() + b
        loss = (lib.nn.functional.softplus(z) - y * z).mean() + 0.01 * (w * w).sum()
        loss.backward()
        return loss

    losses = [opt.step(closure).item() for _ in range(steps)]
    return [w, b], opt, losses


def _state_summary(st):
    """LBFGS's state as plain data: type, shape and dtype of each entry (values separately)."""

    def describe(v):
        if isinstance(v, list):
            return ("list", len(v), [describe(e) for e in v[:3]])
        if v is None or isinstance(v, (int, float)):
            return type(v).__name__
        return ("tensor", tuple(v.shape), _dtype_name(v))

    return [(k, describe(v)) for k, v in st.items()]


def _assert_lbfgs_match(
    nb, th, rtol, atol, state_tol, values_of=("old_dirs", "old_stps", "ro", "al")
):
    """Losses and parameters to (rtol, atol); the state's tensors to ``state_tol`` relative to
    each tensor's largest entry (the history vectors y = g_k+1 - g_k cancel, so they carry the
    gradients' rounding differences magnified by |g| / |y|)."""
    (nb_p, nb_opt, nb_losses), (th_p, th_opt, th_losses) = nb, th
    np.testing.assert_allclose(nb_losses, th_losses, rtol=rtol, atol=atol)
    for a, b in zip(nb_p, th_p):
        np.testing.assert_allclose(_np(a), _np(b), rtol=rtol, atol=atol)
        assert a._version == b._version
    nb_st, th_st = nb_opt.state[nb_p[0]], th_opt.state[th_p[0]]
    assert _state_summary(nb_st) == _state_summary(th_st)  # keys, order, types, shapes
    assert nb_st["func_evals"] == th_st["func_evals"] and nb_st["n_iter"] == th_st["n_iter"]

    def close(u, v, key):
        if v is None or isinstance(v, (int, float)):
            assert u == v, key
            return
        u, v = u.numpy(), v.numpy()
        assert np.abs(u - v).max() <= state_tol * np.abs(v).max(), key

    for key in ("d", "prev_flat_grad", "H_diag", "t"):
        close(nb_st[key], th_st[key], key)
    for key in values_of:
        for u, v in zip(nb_st.get(key, []), th_st.get(key, [])):
            close(u, v, key)
    assert nb_st["prev_loss"] == pytest.approx(th_st["prev_loss"], rel=rtol, abs=atol)
    assert nb_opt.state_dict()["param_groups"] == th_opt.state_dict()["param_groups"]


LBFGS_CONFIGS = [
    (dict(max_iter=10, history_size=5), 4),
    (dict(lr=0.5, max_iter=6, history_size=3), 4),
    (dict(max_iter=5, tolerance_change=1e-4), 4),
    (dict(line_search_fn="strong_wolfe", max_iter=10), 4),
    (dict(line_search_fn="strong_wolfe", max_iter=7, max_eval=9, history_size=4), 4),
    (dict(line_search_fn="strong_wolfe", max_iter=20, history_size=10), 2),
    (dict(line_search_fn="strong_wolfe", max_iter=4), 4),  # max_eval 5: short line searches
]
LBFGS_IDS = ["-".join("%s=%s" % kv for kv in kw.items()) for kw, _ in LBFGS_CONFIGS]


@needs_torch
@pytest.mark.parametrize("kwargs,steps", LBFGS_CONFIGS, ids=LBFGS_IDS)
def test_lbfgs_float64_matches_torch(kwargs, steps, default_float64):
    """Float64 L-BFGS steps (each up to max_iter iterations, 8 to 40 in all) on the tanh MLP
    (non-convex: the line search brackets, zooms and interpolates) and on a logistic
    regression: losses, parameters, versions, the counters and the whole state agree."""
    arrs = _init_arrays(5, np.float64)
    _assert_lbfgs_match(
        _lbfgs_run(nbgrad, arrs, kwargs, steps),
        _lbfgs_run(torch, arrs, kwargs, steps),
        rtol=1e-9,
        atol=1e-11,
        state_tol=1e-7,
    )
    arrs = _logistic_arrays(np.float64)
    _assert_lbfgs_match(
        _lbfgs_logistic_run(nbgrad, arrs, kwargs, steps),
        _lbfgs_logistic_run(torch, arrs, kwargs, steps),
        rtol=1e-11,
        atol=1e-12,
        state_tol=1e-9,
    )


LBFGS_FLOAT32 = [
    (dict(max_iter=10, history_size=5), 4),
    (dict(max_iter=5, tolerance_change=1e-4), 4),
    (dict(lr=0.5, max_iter=6, history_size=3), 2),
    (dict(line_search_fn="strong_wolfe", max_iter=7, max_eval=9, history_size=4), 2),
]


@needs_torch
@pytest.mark.parametrize(
    "kwargs,steps",
    LBFGS_FLOAT32,
    ids=["-".join("%s=%s" % kv for kv in kw.items()) for kw, _ in LBFGS_FLOAT32],
)
def test_lbfgs_float32_matches_torch(kwargs, steps):
    """Float32 on the logistic regression.  The two libraries' float32 dot products and sums
    differ in the last ulp (numpy's and PyTorch's BLAS accumulate in different orders), and
    L-BFGS amplifies such differences: a cubic interpolation step is sensitive to the
    directional derivatives, and once the loss reaches float32 noise the line search takes
    different decisions.  So these runs stop short of convergence; the tight float32 check with
    identical function values is test_lbfgs_same_function_values_tight."""
    arrs = _logistic_arrays(np.float32)
    _assert_lbfgs_match(
        _lbfgs_logistic_run(nbgrad, arrs, kwargs, steps),
        _lbfgs_logistic_run(torch, arrs, kwargs, steps),
        rtol=1e-4,
        atol=1e-5,
        state_tol=2e-2,
        values_of=("old_dirs", "old_stps", "ro"),  # al: s.q products of noise-level vectors
    )


def _rosenbrock_closure(xy_params):
    """Rosenbrock in numpy float64, gradients written to ``.grad``: both libraries see the same
    function and gradient values for the same point, so only L-BFGS's own maths can differ."""
    (xy,) = xy_params
    lib = nbgrad if isinstance(xy, nbgrad.Tensor) else torch
    dtype = xy.detach().numpy().dtype

    def closure():
        v = xy.detach().numpy().astype(np.float64)
        a, b = v[0::2], v[1::2]
        f = np.sum(100.0 * (b - a**2) ** 2 + (1 - a) ** 2)
        g = np.empty_like(v)
        g[0::2] = -400.0 * a * (b - a**2) - 2 * (1 - a)
        g[1::2] = 200.0 * (b - a**2)
        xy.grad = lib.tensor(g.astype(dtype))
        return lib.tensor(f)

    return closure


@needs_torch
@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lbfgs_same_function_values_tight(line_search_fn, dtype):
    """With identical function and gradient values the L-BFGS updates agree tightly."""
    start = np.array([-1.2, 1.0, -0.5, 0.8, 0.3, -0.4], dtype=dtype)
    lr = 1 if line_search_fn else 0.002
    res = []
    for lib in (nbgrad, torch):
        xy = lib.tensor(start.copy(), requires_grad=True)
        opt = lib.optim.LBFGS(
            [xy], lr=lr, max_iter=8, history_size=6, line_search_fn=line_search_fn
        )
        closure = _rosenbrock_closure([xy])
        for _ in range(3):
            opt.step(closure)
        st = opt.state[xy]
        res.append((xy.detach().numpy().copy(), st["func_evals"], st["n_iter"]))
    tol = 1e-12 if dtype == "float64" else 2e-5
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=tol, atol=tol)
    assert res[0][1:] == res[1][1:]


def test_lbfgs_first_iteration_closed_form():
    # the first iteration steps along -g with t = min(1, 1 / |g|_1) * lr
    for g0_scale, lr in ((0.1, 1.0), (5.0, 0.5)):
        c = np.array([1.0, -2.0, 0.5]) * g0_scale
        x = nbgrad.tensor([0.0, 0.0, 0.0], dtype=nbgrad.float64, requires_grad=True)
        opt = optim.LBFGS([x], lr=lr, max_iter=1)

        def closure():
            opt.zero_grad()
            loss = (x * nbgrad.tensor(c)).sum()
            loss.backward()
            return loss

        opt.step(closure)
        t = min(1.0, 1.0 / np.abs(c).sum()) * lr
        np.testing.assert_allclose(_np(x), -t * c, rtol=1e-15)
        st = opt.state[x]
        assert st["func_evals"] == 1 and st["n_iter"] == 1  # the last iteration is not evaluated
        assert st["H_diag"] == 1 and st["old_dirs"] == [] and st["prev_loss"] == 0.0


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_lbfgs_solves_a_quadratic(line_search_fn):
    # f(x) = 1/2 x^T A x - b^T x with A SPD: the minimiser is A^-1 b
    rng = np.random.default_rng(0)
    m = rng.standard_normal((6, 6))
    A = m @ m.T + 6 * np.eye(6)
    b = rng.standard_normal(6)
    x = nbgrad.zeros(6, dtype=nbgrad.float64, requires_grad=True)
    At, bt = nbgrad.tensor(A), nbgrad.tensor(b)
    opt = optim.LBFGS([x], max_iter=100, tolerance_change=1e-14, line_search_fn=line_search_fn)

    def closure():
        opt.zero_grad()
        loss = 0.5 * (x @ (At @ x)) - bt @ x
        loss.backward()
        return loss

    for _ in range(3):
        opt.step(closure)
    np.testing.assert_allclose(_np(x), np.linalg.solve(A, b), rtol=1e-6, atol=1e-7)
    if line_search_fn:  # exact-ish line searches: far fewer evaluations than plain steps
        assert opt.state[x]["func_evals"] < 60


def test_lbfgs_rosenbrock_strong_wolfe_converges():
    xy = nbgrad.tensor([-1.2, 1.0], dtype=nbgrad.float64, requires_grad=True)
    opt = optim.LBFGS([xy], max_iter=200, line_search_fn="strong_wolfe")
    closure = _rosenbrock_closure([xy])
    opt.step(closure)
    np.testing.assert_allclose(_np(xy), [1.0, 1.0], atol=1e-4)  # tolerance_change stops it
    st = opt.state[xy]
    assert st["n_iter"] < 60 and len(st["old_dirs"]) == len(st["ro"]) <= 100


def test_lbfgs_state_dict_round_trip(tmp_path):
    """Interrupt a run, save the optimizer (deepcopy and file), load it into a new LBFGS over
    copies of the parameters and continue: identical to the uninterrupted run."""
    for via in ("deepcopy", "file"):
        arrs = _init_arrays(8, np.float64)
        kwargs = dict(line_search_fn="strong_wolfe", max_iter=5, history_size=4)
        full_p, _, full_losses = _lbfgs_run(nbgrad, arrs, kwargs, 6)
        part_p, part_opt, losses = _lbfgs_run(nbgrad, arrs, kwargs, 3)
        if via == "file":
            serialization.save(part_opt.state_dict(), tmp_path / "lbfgs.nbg")
            saved = serialization.load(tmp_path / "lbfgs.nbg")
        else:
            saved = copy.deepcopy(part_opt.state_dict())
        params = [p.detach().clone().requires_grad_() for p in part_p]
        opt = optim.LBFGS(params, **kwargs)
        opt.load_state_dict(saved)
        x, y = nbgrad.tensor(arrs["x"]), nbgrad.tensor(arrs["y"])

        def closure():
            opt.zero_grad()
            loss = _loss(params, x, y, "tanh")
            loss.backward()
            return loss

        losses += [opt.step(closure).item() for _ in range(3)]
        assert losses == full_losses
        for a, b in zip(params, full_p):
            np.testing.assert_array_equal(_np(a), _np(b))


def test_lbfgs_stops_when_optimal_and_handles_unused_and_complex_params():
    x = nbgrad.tensor([1.0, 2.0], requires_grad=True)
    unused = nbgrad.zeros(3, requires_grad=True)
    opt = optim.LBFGS([x, unused])

    def closure():
        opt.zero_grad()
        loss = (x * 0.0).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)  # zero gradient: optimal at once, one evaluation, no state else
    assert loss.item() == 0.0 and list(opt.state[x]) == ["func_evals", "n_iter"]
    assert x._version == 0
    # a complex parameter is optimised as its real view: min |z - w|^2 is z = w (gradient
    # 2 (z - w), PyTorch's convention for a real function of complex inputs)
    z = nbgrad.zeros(2, dtype=nbgrad.complex128, requires_grad=True)
    w = np.array([1 + 2j, -0.5 + 0.25j])
    optc = optim.LBFGS([z], line_search_fn="strong_wolfe")

    def closure_c():
        d = z.detach().numpy() - w
        z.grad = nbgrad.tensor(2 * d)
        return nbgrad.tensor(float(np.sum(np.abs(d) ** 2)))

    optc.step(closure_c)
    np.testing.assert_allclose(_np(z), w, atol=1e-8)


# ------------------------------------------------------------------------------------------
# lr schedulers


def _opt(lib, name="SGD", groups=2, lr=0.1):
    ps = [lib.zeros(1, requires_grad=True) for _ in range(groups)]
    kw = dict(momentum=0.9) if name == "SGD" else {}
    return getattr(lib.optim, name)(
        [{"params": [p], "lr": lr * (i + 1)} for i, p in enumerate(ps)], lr=lr, **kw
    )


def _momenta(opt):
    return [g["betas"][0] if "betas" in g else g.get("momentum") for g in opt.param_groups]


def _schedule(lib, make, steps, metrics=None, opt_name="SGD", groups=2):
    """(lr per step, momentum per step, warnings, scheduler, optimizer)."""
    opt = _opt(lib, opt_name, groups)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sched = make(lib.optim.lr_scheduler, opt)
        lrs, moms = [list(sched.get_last_lr())], [_momenta(opt)]
        for i in range(steps):
            opt.step()
            if metrics is None:
                sched.step()
            else:
                sched.step(metrics[i])
            lrs.append(list(sched.get_last_lr()))
            moms.append(_momenta(opt))
            assert lrs[-1] == [g["lr"] for g in opt.param_groups]
    return lrs, moms, [(w.category.__name__, str(w.message)) for w in caught], sched, opt


PLATEAU_METRICS = list(
    np.r_[np.linspace(1.0, 0.5, 12), np.full(20, 0.5), np.linspace(0.5, 0.2, 10), np.full(20, 0.21)]
)

SCHEDULERS = [
    ("OneCycleLR-cos", lambda m, o: m.OneCycleLR(o, max_lr=[0.5, 1.0], total_steps=60), "SGD"),
    (
        "OneCycleLR-linear-3phase",
        lambda m, o: m.OneCycleLR(
            o, max_lr=0.5, epochs=6, steps_per_epoch=10, three_phase=True, anneal_strategy="linear"
        ),
        "SGD",
    ),
    (
        "OneCycleLR-adam-betas",
        lambda m, o: m.OneCycleLR(
            o,
            max_lr=0.01,
            total_steps=61,
            pct_start=0.25,
            base_momentum=0.8,
            max_momentum=[0.9, 0.95],
        ),
        "Adam",
    ),
    (
        "OneCycleLR-nadam-no-momentum",
        lambda m, o: m.OneCycleLR(
            o,
            max_lr=0.02,
            total_steps=70,
            cycle_momentum=False,
            div_factor=10.0,
            final_div_factor=100.0,
        ),
        "NAdam",
    ),
    (
        "SequentialLR-constant-exponential",
        lambda m, o: m.SequentialLR(
            o, [m.ConstantLR(o, factor=0.1, total_iters=20), m.ExponentialLR(o, gamma=0.9)], [20]
        ),
        "SGD",
    ),
    (
        "SequentialLR-linear-cosine-step",
        lambda m, o: m.SequentialLR(
            o,
            [
                m.LinearLR(o, start_factor=0.1, total_iters=8),
                m.CosineAnnealingLR(o, T_max=15, eta_min=0.001),
                m.StepLR(o, step_size=7, gamma=0.5),
            ],
            milestones=[10, 30],
        ),
        "SGD",
    ),
    (
        "SequentialLR-lambda-multistep",
        lambda m, o: m.SequentialLR(
            o,
            [m.LambdaLR(o, lambda e: 0.5 ** (e % 3)), m.MultiStepLR(o, [5, 9, 9], gamma=0.3)],
            milestones=[12],
        ),
        "RAdam",
    ),
]


@needs_torch
@pytest.mark.parametrize("name,make,opt_name", SCHEDULERS, ids=[s[0] for s in SCHEDULERS])
def test_scheduler_sequences_match_torch(name, make, opt_name):
    steps = 60
    nb_lrs, nb_moms, nb_warn, nb_s, nb_o = _schedule(nbgrad, make, steps, opt_name=opt_name)
    th_lrs, th_moms, th_warn, th_s, th_o = _schedule(torch, make, steps, opt_name=opt_name)
    np.testing.assert_allclose(np.array(nb_lrs), np.array(th_lrs), rtol=1e-14, atol=0)
    np.testing.assert_allclose(np.array(nb_moms), np.array(th_moms), rtol=1e-14, atol=0)
    assert nb_warn == th_warn
    assert nb_o.state_dict()["param_groups"] == th_o.state_dict()["param_groups"]
    nb_sd, th_sd = nb_s.state_dict(), th_s.state_dict()
    assert list(nb_sd) == list(th_sd)
    for key in th_sd:
        if key == "_schedulers":
            assert [list(s) for s in nb_sd[key]] == [list(s) for s in th_sd[key]]
        elif key not in ("lr_lambdas",):
            assert nb_sd[key] == th_sd[key], key


PLATEAUS = [
    ("min-rel", dict(patience=2, factor=0.5)),
    ("min-abs-cooldown", dict(patience=1, threshold=0.05, threshold_mode="abs", cooldown=3)),
    ("max-rel", dict(mode="max", patience=3, factor=0.3, min_lr=[0.01, 0.05])),
    ("max-abs-eps", dict(mode="max", threshold_mode="abs", patience=0, factor=0.9, eps=0.01)),
]


@needs_torch
@pytest.mark.parametrize("name,kwargs", PLATEAUS, ids=[p[0] for p in PLATEAUS])
def test_reduce_lr_on_plateau_matches_torch(name, kwargs):
    metrics = (
        PLATEAU_METRICS if kwargs.get("mode", "min") == "min" else [-m for m in PLATEAU_METRICS]
    )

    def make(m, o):
        return m.ReduceLROnPlateau(o, **kwargs)

    steps = len(metrics)
    nb_lrs, _, nb_warn, nb_s, _ = _schedule(nbgrad, make, steps, metrics=metrics)
    th_lrs, _, th_warn, th_s, _ = _schedule(torch, make, steps, metrics=metrics)
    np.testing.assert_allclose(np.array(nb_lrs), np.array(th_lrs), rtol=1e-14, atol=0)
    assert len({tuple(x) for x in nb_lrs}) > 2  # the lr was reduced more than once
    assert nb_warn == th_warn
    assert nb_s.state_dict() == th_s.state_dict()


@needs_torch
def test_reduce_lr_on_plateau_tensor_metric_epoch_and_new_groups_match_torch():
    out = []
    for lib in (nbgrad, torch):
        opt = _opt(lib, groups=1)
        s = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0)
        seq = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            s.step(lib.tensor(1.0))
            s.step(lib.tensor(2.0), epoch=5)
            opt.add_param_group({"params": [lib.zeros(1, requires_grad=True)], "lr": 1.0})
            s.step(3.0)
            seq.append((s.last_epoch, s.get_last_lr(), s.min_lrs, s.num_bad_epochs))
        out.append((seq, [str(w.message) for w in caught]))
    assert out[0] == out[1]


def test_onecycle_closed_form():
    # cos: warm up from max_lr/div to max_lr over pct_start*T - 1 steps, then anneal to
    # initial/final_div; momentum moves inversely between max_momentum and base_momentum
    total, max_lr, div, final_div, pct = 50, 0.4, 25.0, 1e4, 0.3
    lrs, moms, warns, _, _ = _schedule(
        nbgrad,
        lambda m, o: m.OneCycleLR(o, max_lr=max_lr, total_steps=total, pct_start=pct),
        total - 1,
        groups=1,
    )
    assert warns == []
    init, low = max_lr / div, max_lr / div / final_div
    up = pct * total - 1

    def cos(a, b, f):
        return b + (a - b) / 2 * (math.cos(math.pi * f) + 1)

    for t, (lr, mom) in enumerate(zip(lrs, moms)):
        if t <= up:
            want, want_m = cos(init, max_lr, t / up), cos(0.95, 0.85, t / up)
        else:
            f = (t - up) / (total - 1 - up)
            want, want_m = cos(max_lr, low, f), cos(0.85, 0.95, f)
        assert lr[0] == pytest.approx(want, rel=1e-13) and mom[0] == pytest.approx(want_m)
    assert lrs[0][0] == pytest.approx(init) and lrs[-1][0] == pytest.approx(low)
    assert max(lr[0] for lr in lrs) == pytest.approx(max_lr)


def test_onecycle_past_total_steps_raises():
    opt = _opt(nbgrad, groups=1)
    s = lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=3)
    for _ in range(3):
        opt.step()
        s.step()
    with pytest.raises(
        ValueError, match="Tried to step 4 times. The specified number of total steps is 3"
    ):
        s.step()


def test_reduce_lr_on_plateau_closed_form():
    # patience 2: the 3rd epoch without improvement halves the lr; cooldown 1 skips one epoch
    opt = _opt(nbgrad, groups=1)
    s = lr_scheduler.ReduceLROnPlateau(opt, patience=2, factor=0.5, cooldown=1, min_lr=0.02)
    metrics = [1.0, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9]
    got = []
    for m in metrics:
        s.step(m)
        got.append(s.get_last_lr()[0])
    assert got == [
        0.1,
        0.1,
        0.1,
        0.1,
        0.05,
        0.05,
        0.05,
        0.05,
        0.025,
        0.025,
        0.025,
        0.025,
        0.02,
        0.02,
        0.02,
    ]
    assert s.best == 0.9 and s.last_epoch == len(metrics)


def test_sequential_lr_closed_form_and_state_dict_round_trip():
    def make(m, o):
        return m.SequentialLR(
            o, [m.ConstantLR(o, factor=0.1, total_iters=5), m.ExponentialLR(o, gamma=0.9)], [5]
        )

    lrs, _, warns, _, _ = _schedule(nbgrad, make, 20, groups=1)
    want = [0.1 * 0.1 if t < 5 else 0.1 * 0.9 ** (t - 5) for t in range(21)]
    np.testing.assert_allclose([x[0] for x in lrs], want, rtol=1e-13)
    assert warns == []

    # interrupt at 8, save scheduler + optimizer, resume in fresh objects, continue to 20
    opt = _opt(nbgrad, groups=1)
    s = make(lr_scheduler, opt)
    for _ in range(8):
        opt.step()
        s.step()
    sd_s, sd_o = copy.deepcopy(s.state_dict()), copy.deepcopy(opt.state_dict())
    assert [type(x) for x in sd_s["_schedulers"]] == [dict, dict]
    opt2 = _opt(nbgrad, groups=1)
    s2 = make(lr_scheduler, opt2)
    opt2.load_state_dict(sd_o)
    s2.load_state_dict(sd_s)
    assert "_schedulers" in sd_s  # the caller's dict is left as it was
    resumed = []
    for _ in range(12):
        opt2.step()
        s2.step()
        resumed.append(s2.get_last_lr()[0])
    np.testing.assert_allclose(resumed, want[9:], rtol=1e-13)


@needs_torch
def test_scheduler_state_dict_round_trips_match_torch():
    """Resume OneCycleLR / SequentialLR / ReduceLROnPlateau from a state dict mid-way: the
    continued sequence is the same in both libraries and equals the uninterrupted one."""
    cases = [
        (lambda m, o: m.OneCycleLR(o, max_lr=0.3, total_steps=40), None),
        (
            lambda m, o: m.SequentialLR(
                o, [m.LinearLR(o, start_factor=0.2, total_iters=6), m.StepLR(o, 4, 0.5)], [10]
            ),
            None,
        ),
        (lambda m, o: m.ReduceLROnPlateau(o, patience=1, cooldown=2), PLATEAU_METRICS),
    ]
    for make, metrics in cases:
        seqs = []
        for lib in (nbgrad, torch):
            full, _, _, _, _ = _schedule(lib, make, 39, metrics=metrics)
            opt = _opt(lib)
            s = make(lib.optim.lr_scheduler, opt)
            for i in range(15):
                opt.step()
                s.step(*([] if metrics is None else [metrics[i]]))
            sd_s, sd_o = copy.deepcopy(s.state_dict()), copy.deepcopy(opt.state_dict())
            opt2 = _opt(lib)
            s2 = make(lib.optim.lr_scheduler, opt2)
            opt2.load_state_dict(sd_o)
            s2.load_state_dict(sd_s)
            rest = []
            for i in range(15, 39):
                opt2.step()
                s2.step(*([] if metrics is None else [metrics[i]]))
                rest.append(s2.get_last_lr())
            np.testing.assert_allclose(np.array(rest), np.array(full[16:]), rtol=1e-14)
            seqs.append(rest)
        np.testing.assert_allclose(np.array(seqs[0]), np.array(seqs[1]), rtol=1e-14)


@needs_torch
def test_scheduler_warnings_match_torch():
    """The step-order warning (scheduler stepped before the optimizer) and the epoch
    deprecation warning, as PyTorch emits them for the new schedulers."""

    def scenario(lib):
        sched = lib.optim.lr_scheduler
        out = []
        opt = _opt(lib, groups=1)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            s = sched.OneCycleLR(opt, max_lr=0.1, total_steps=10)
            s.step()  # before optimizer.step(): warns
            s.get_lr()  # outside step(): warns to use get_last_lr()
        out.append([(w.category.__name__, str(w.message)) for w in caught])
        opt = _opt(lib, groups=1)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            s = sched.SequentialLR(
                opt, [sched.ConstantLR(opt, total_iters=2), sched.ExponentialLR(opt, 0.9)], [2]
            )
            s.step()  # the active sub-scheduler warns
            s.step()
            s.step()
        out.append([(w.category.__name__, str(w.message)) for w in caught])
        opt = _opt(lib, groups=1)
        plateau = sched.ReduceLROnPlateau(opt)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            plateau.step(1.0, 3)
        out.append([(w.category.__name__, str(w.message)) for w in caught])
        return out

    nb, th = scenario(nbgrad), scenario(torch)
    assert nb == th
    assert any("before `optimizer.step()`" in m for _, m in nb[0])
    assert any("get_last_lr" in m for _, m in nb[0])
    assert any("epoch parameter" in m for _, m in nb[2])


def test_onecycle_drives_adam_momentum_and_training():
    nbgrad.manual_seed(0)
    w = nbgrad.randn(4, 1).requires_grad_()
    x = nbgrad.randn(64, 4)
    y = x @ nbgrad.tensor([[1.0], [-2.0], [0.5], [3.0]])
    opt = optim.NAdam([w], lr=0.01)
    s = lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=200)
    first = None
    for _ in range(200):
        opt.zero_grad()
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        opt.step()
        if s.last_epoch < s.total_steps - 1:
            s.step()
        first = first if first is not None else loss.item()
    assert loss.item() < 1e-3 * first
    assert opt.param_groups[0]["betas"] == (0.95, 0.999)  # back at max_momentum
    assert s.get_last_lr() == [pytest.approx(0.1 / 25 / 1e4)]
