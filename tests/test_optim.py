"""nbgrad.optim: optimizers and lr schedulers.

Oracle tests (PyTorch installed) run the same problem from the same float32 values in both
libraries for 20 steps and compare parameters, state and version counters.  The closed-form
tests stand alone: SGD / momentum / Nesterov on a 1-D quadratic (linear recurrences solved by
matrix powers in float64), Adam / AdamW / RMSprop under a constant gradient, and the schedules'
closed forms.
"""

import copy
import importlib
import math
import warnings

import numpy as np
import pytest
from conftest import needs_torch, torch

import nbgrad
from nbgrad import optim, serialization
from nbgrad.optim import _functional, lr_scheduler

RTOL, ATOL = 1e-5, 1e-6
STEPS = 20


@pytest.fixture(params=["kernels", "numpy"])
def binding(request, monkeypatch):
    """Run a test with the fused Numba kernels and again with the numpy ufunc binding."""
    monkeypatch.setattr(_functional, "USE_KERNELS", request.param == "kernels")
    return request.param


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


def _loss(lib, p, x, y):
    h = (x @ p[0].t() + p[1]).relu()
    out = h @ p[2].t() + p[3]
    return ((out - y) ** 2).mean() + 0.01 * (p[0] * p[0]).sum()


def _nb_params(arrs):
    return [nbgrad.tensor(arrs[k].copy(), requires_grad=True) for k in ("w1", "b1", "w2", "b2")]


def _torch_params(arrs):
    return [torch.tensor(arrs[k].copy(), requires_grad=True) for k in ("w1", "b1", "w2", "b2")]


def _run_nb(opt_cls, kwargs, arrs, steps=STEPS, params=None):
    params = params if params is not None else _nb_params(arrs)
    x, y = nbgrad.tensor(arrs["x"]), nbgrad.tensor(arrs["y"])
    opt = opt_cls(params, **kwargs)
    for _ in range(steps):
        opt.zero_grad()
        _loss(nbgrad, params, x, y).backward()
        opt.step()
    return params, opt


def _run_torch(opt_cls, kwargs, arrs, steps=STEPS):
    params = _torch_params(arrs)
    x, y = torch.tensor(arrs["x"]), torch.tensor(arrs["y"])
    opt = opt_cls(params, **kwargs)
    for _ in range(steps):
        opt.zero_grad()
        _loss(torch, params, x, y).backward()
        opt.step()
    return params, opt


def _assert_close(nb, th, rtol=RTOL, atol=ATOL):
    np.testing.assert_allclose(nb.detach().numpy(), th.detach().numpy(), rtol=rtol, atol=atol)


CONFIGS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.5)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True)),
    ("SGD", dict(lr=0.05, momentum=0.8, weight_decay=0.05)),
    ("SGD", dict(lr=0.01, momentum=0.5, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.02, amsgrad=True)),
    ("Adam", dict(lr=0.01, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, betas=(0.3, 0.5), eps=1e-6)),  # lerp weight >= 0.5 branch
    ("Adam", dict(lr=0.005, maximize=True, amsgrad=True)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, weight_decay=0.2, amsgrad=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, centered=True)),
    ("RMSprop", dict(lr=0.005, momentum=0.9)),
    ("RMSprop", dict(lr=0.005, momentum=0.5, centered=True, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.005, alpha=0.3)),
    ("RMSprop", dict(lr=0.002, maximize=True)),
]
CONFIG_IDS = ["%s-%s" % (n, "-".join("%s=%s" % kv for kv in kw.items())) for n, kw in CONFIGS]


@needs_torch
@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=CONFIG_IDS)
def test_trajectory_matches_torch(name, kwargs, binding):
    arrs = _init_arrays()
    nb_p, nb_opt = _run_nb(getattr(optim, name), kwargs, arrs)
    th_p, th_opt = _run_torch(getattr(torch.optim, name), kwargs, arrs)
    for a, b in zip(nb_p, th_p):
        _assert_close(a, b)
        assert a._version == b._version
    # state: same keys, values and versions; param_groups identical
    nb_sd, th_sd = nb_opt.state_dict(), th_opt.state_dict()
    assert nb_sd["param_groups"] == th_sd["param_groups"]
    assert nb_sd["state"].keys() == th_sd["state"].keys()
    for k in th_sd["state"]:
        assert nb_sd["state"][k].keys() == th_sd["state"][k].keys()
        for key, tv in th_sd["state"][k].items():
            nv = nb_sd["state"][k][key]
            assert nv.dtype.name == str(tv.dtype).replace("torch.", "")
            assert nv._version == tv._version, key
            _assert_close(nv, tv, rtol=1e-4 if key != "step" else 0)


@needs_torch
@pytest.mark.parametrize(
    "name,kwargs,tol",
    [
        ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01), (2e-6, 1e-7)),
        ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.01), (2e-6, 1e-7)),
        ("AdamW", dict(lr=0.01), (2e-6, 1e-7)),
        ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True), (2e-6, 1e-7)),
        # centered with a small alpha: sqrt(E[g^2] - E[g]^2) cancels badly, so the last-ulp
        # differences between the two libraries' autograd are amplified; with the same gradients
        # the update maths (lerp weight 1 - alpha >= 0.5 branch) still agrees to float32 tolerance
        ("RMSprop", dict(lr=0.005, alpha=0.3, centered=True), (RTOL, ATOL)),
    ],
)
def test_same_gradients_tight(name, kwargs, tol, binding):
    """Feed torch exactly nbgrad's gradients: only the update maths differs, so the parameters
    agree to a few float32 ulps after 20 steps."""
    arrs = _init_arrays(1)
    nb_p = _nb_params(arrs)
    th_p = _torch_params(arrs)
    x, y = nbgrad.tensor(arrs["x"]), nbgrad.tensor(arrs["y"])
    nb_opt = getattr(optim, name)(nb_p, **kwargs)
    th_opt = getattr(torch.optim, name)(th_p, **kwargs)
    for _ in range(STEPS):
        nb_opt.zero_grad()
        _loss(nbgrad, nb_p, x, y).backward()
        for a, b in zip(nb_p, th_p):
            b.grad = torch.from_numpy(a.grad.numpy().copy())
        nb_opt.step()
        th_opt.step()
    for a, b in zip(nb_p, th_p):
        _assert_close(a, b, rtol=tol[0], atol=tol[1])


@needs_torch
@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("SGD", dict(lr=0.05, momentum=0.9, weight_decay=0.01)),
        ("Adam", dict(lr=0.01, amsgrad=True)),
        ("AdamW", dict(lr=0.01)),
        ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True)),
    ],
)
def test_float64_matches_torch(name, kwargs, binding):
    nbgrad.set_default_dtype(nbgrad.float64)
    torch_default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        arrs = _init_arrays(2, np.float64)
        nb_p, nb_opt = _run_nb(getattr(optim, name), kwargs, arrs)
        th_p, th_opt = _run_torch(getattr(torch.optim, name), kwargs, arrs)
        for a, b in zip(nb_p, th_p):
            assert a.dtype == nbgrad.float64
            _assert_close(a, b, rtol=1e-12, atol=1e-13)
        if name != "SGD":  # step is float64 when the default dtype is float64
            assert nb_opt.state[nb_p[0]]["step"].dtype == nbgrad.float64
            assert th_opt.state[th_p[0]]["step"].dtype == torch.float64
    finally:
        torch.set_default_dtype(torch_default)


def _manual_steps(lib, opt, params, grads):
    for g_list in grads:
        for p, g in zip(params, g_list):
            p.grad = lib.tensor(g.copy())
        opt.step()


@needs_torch
@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.1)),
        ("Adam", dict(lr=0.05, amsgrad=True, weight_decay=0.1)),
        ("AdamW", dict(lr=0.05)),
        ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True)),
    ],
)
def test_noncontiguous_float16_complex_match_torch(name, kwargs, binding):
    rng = np.random.default_rng(3)
    base = rng.standard_normal((4, 3)).astype(np.float32)
    grads = [[rng.standard_normal((3, 4)).astype(np.float32)] for _ in range(8)]
    # a non-contiguous leaf (the transpose of a (4, 3) array)
    nb_p = [nbgrad.tensor(base).t().detach().requires_grad_()]
    assert not nb_p[0].is_contiguous()
    th_p = [torch.tensor(base).t().detach().requires_grad_()]
    nb_opt = getattr(optim, name)(nb_p, **kwargs)
    th_opt = getattr(torch.optim, name)(th_p, **kwargs)
    _manual_steps(nbgrad, nb_opt, nb_p, grads)
    _manual_steps(torch, th_opt, th_p, grads)
    _assert_close(nb_p[0], th_p[0])
    assert nb_p[0]._version == th_p[0]._version

    # complex64 (Adam/RMSprop update the real view, as PyTorch)
    cbase = (base[:, 0] + 1j * base[:, 1]).astype(np.complex64)
    cgrads = [[(g[0][0] + 1j * g[0][1]).astype(np.complex64)] for g in grads]
    nb_c = [nbgrad.tensor(cbase.copy(), requires_grad=True)]
    th_c = [torch.tensor(cbase.copy(), requires_grad=True)]
    nb_opt = getattr(optim, name)(nb_c, **kwargs)
    th_opt = getattr(torch.optim, name)(th_c, **kwargs)
    _manual_steps(nbgrad, nb_opt, nb_c, cgrads)
    _manual_steps(torch, th_opt, th_c, cgrads)
    np.testing.assert_allclose(
        nb_c[0].detach().numpy(), th_c[0].detach().numpy(), rtol=RTOL, atol=ATOL
    )

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
        nb_h[0].detach().numpy().astype(np.float32),
        th_h[0].detach().numpy().astype(np.float32),
        rtol=1e-2,
        atol=2e-3,
    )


def test_kernels_and_numpy_bindings_agree(monkeypatch):
    """The fused kernels and the numpy binding implement the same op sequence."""
    for name, kwargs in CONFIGS:
        results = []
        for use in (True, False):
            monkeypatch.setattr(_functional, "USE_KERNELS", use)
            params, _ = _run_nb(getattr(optim, name), kwargs, _init_arrays(4))
            results.append([p.detach().numpy().copy() for p in params])
        for a, b in zip(*results):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7, err_msg=name + str(kwargs))


# ------------------------------------------------------------------------------------------
# closed forms (no oracle needed)


def _quadratic_run(opt_factory, a, x0, steps):
    """f(x) = a/2 x^2, gradient by nbgrad autograd; returns x after each step."""
    x = nbgrad.tensor([x0], requires_grad=True)
    opt = opt_factory([x])
    out = []
    for _ in range(steps):
        opt.zero_grad()
        (0.5 * a * x * x).sum().backward()
        opt.step()
        out.append(x.item())
    return np.array(out)


def _linear_recurrence(M, v0, steps):
    M = np.asarray(M, dtype=np.float64)
    return np.array([(np.linalg.matrix_power(M, t) @ v0)[0] for t in range(1, steps + 1)])


def test_sgd_plain_closed_form(binding):
    a, lr, x0 = 2.0, 0.1, 3.0
    got = _quadratic_run(lambda p: optim.SGD(p, lr=lr), a, x0, STEPS)
    want = x0 * (1 - lr * a) ** np.arange(1, STEPS + 1)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_sgd_weight_decay_closed_form(binding):
    a, wd, lr, x0 = 2.0, 0.5, 0.1, 3.0
    got = _quadratic_run(lambda p: optim.SGD(p, lr=lr, weight_decay=wd), a, x0, STEPS)
    want = x0 * (1 - lr * (a + wd)) ** np.arange(1, STEPS + 1)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_sgd_maximize_closed_form(binding):
    a, lr, x0 = -1.0, 0.1, 1.5  # maximizing -x^2/2 drives x to 0
    got = _quadratic_run(lambda p: optim.SGD(p, lr=lr, maximize=True), a, x0, STEPS)
    want = x0 * (1 + lr * a) ** np.arange(1, STEPS + 1)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_sgd_momentum_closed_form(binding):
    # b_t = mu b_{t-1} + a x_{t-1} (b_0 = 0 gives the first-step b_1 = g_1), x_t = x_{t-1} - lr b_t
    a, lr, mu, x0 = 2.0, 0.05, 0.9, 3.0
    got = _quadratic_run(lambda p: optim.SGD(p, lr=lr, momentum=mu), a, x0, STEPS)
    want = _linear_recurrence([[1 - lr * a, -lr * mu], [a, mu]], [x0, 0.0], STEPS)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_sgd_dampening_closed_form(binding):
    # the first step copies the gradient; later ones b_t = mu b + (1 - d) g
    a, lr, mu, d, x0 = 2.0, 0.05, 0.9, 0.3, 3.0
    got = _quadratic_run(lambda p: optim.SGD(p, lr=lr, momentum=mu, dampening=d), a, x0, STEPS)
    b1 = a * x0
    x1 = x0 - lr * b1
    want = [x1] + list(
        _linear_recurrence(
            [[1 - lr * (1 - d) * a, -lr * mu], [(1 - d) * a, mu]], [x1, b1], STEPS - 1
        )
    )
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_sgd_nesterov_closed_form(binding):
    # b_t = mu b + a x; x_t = x - lr (a x + mu b_t)
    a, lr, mu, x0 = 2.0, 0.05, 0.9, 3.0
    got = _quadratic_run(lambda p: optim.SGD(p, lr=lr, momentum=mu, nesterov=True), a, x0, STEPS)
    want = _linear_recurrence([[1 - lr * a * (1 + mu), -lr * mu * mu], [a, mu]], [x0, 0.0], STEPS)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def _constant_grad_run(opt, x, c, steps):
    out = []
    for _ in range(steps):
        opt.zero_grad()
        (x * c).sum().backward()
        opt.step()
        out.append(x.detach().numpy().copy())
    return np.array(out)


@pytest.mark.parametrize("amsgrad", [False, True])
def test_adam_constant_gradient_closed_form(binding, amsgrad):
    # with a constant gradient g the bias-corrected moments are g and g^2: every step moves
    # x by -lr g / (|g| + eps)
    c = np.array([0.5, -2.0, 3e-3], dtype=np.float32)
    x0 = np.array([1.0, 2.0, -1.0], dtype=np.float32)
    lr, eps = 0.01, 1e-8
    x = nbgrad.tensor(x0.copy(), requires_grad=True)
    got = _constant_grad_run(
        optim.Adam([x], lr=lr, eps=eps, amsgrad=amsgrad), x, nbgrad.tensor(c), STEPS
    )
    t = np.arange(1, STEPS + 1)[:, None]
    want = x0 - t * lr * c / (np.abs(c) + eps)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_adamw_constant_gradient_closed_form(binding):
    # x_t = q x_{t-1} - lr s with q = 1 - lr wd, s = g / (|g| + eps)
    c = np.array([0.5, -2.0], dtype=np.float32)
    x0 = np.array([1.0, 2.0], dtype=np.float32)
    lr, wd = 0.01, 0.5
    x = nbgrad.tensor(x0.copy(), requires_grad=True)
    got = _constant_grad_run(optim.AdamW([x], lr=lr, weight_decay=wd), x, nbgrad.tensor(c), STEPS)
    q = 1 - lr * wd
    s = c / (np.abs(c) + 1e-8)
    t = np.arange(1, STEPS + 1)[:, None]
    want = q**t * x0 - lr * s * (1 - q**t) / (1 - q)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_rmsprop_constant_gradient_closed_form(binding):
    # v_k = g^2 (1 - alpha^k), so x_t = x0 - lr sum_k g / (|g| sqrt(1 - alpha^k) + eps)
    c = np.array([0.5, -2.0], dtype=np.float32)
    x0 = np.array([1.0, 2.0], dtype=np.float32)
    lr, alpha, eps = 0.01, 0.9, 1e-8
    x = nbgrad.tensor(x0.copy(), requires_grad=True)
    got = _constant_grad_run(
        optim.RMSprop([x], lr=lr, alpha=alpha, eps=eps), x, nbgrad.tensor(c), STEPS
    )
    k = np.arange(1, STEPS + 1)[:, None]
    steps = lr * c / (np.abs(c) * np.sqrt(1 - alpha**k) + eps)
    want = x0 - np.cumsum(steps, axis=0)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_param_groups_different_lr_closed_form(binding):
    a, x0 = 2.0, 3.0
    x = nbgrad.tensor([x0], requires_grad=True)
    y = nbgrad.tensor([x0], requires_grad=True)
    opt = optim.SGD([{"params": [x]}, {"params": [y], "lr": 0.01}], lr=0.1)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.01]
    assert opt.param_groups[1]["momentum"] == 0  # defaults fill the group
    for _ in range(STEPS):
        opt.zero_grad()
        (0.5 * a * (x * x + y * y)).sum().backward()
        opt.step()
    np.testing.assert_allclose(x.item(), x0 * (1 - 0.1 * a) ** STEPS, rtol=RTOL)
    np.testing.assert_allclose(y.item(), x0 * (1 - 0.01 * a) ** STEPS, rtol=RTOL)


@needs_torch
@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop"])
def test_param_groups_different_lr_match_torch(name):
    arrs = _init_arrays(5)

    def groups(ps):
        return [{"params": ps[:2], "lr": 0.02}, {"params": ps[2:]}]

    nb_p, th_p = _nb_params(arrs), _torch_params(arrs)
    kw = dict(lr=0.005, momentum=0.9) if name == "SGD" else dict(lr=0.005)
    nb_opt = getattr(optim, name)(groups(nb_p), **kw)
    th_opt = getattr(torch.optim, name)(groups(th_p), **kw)
    x, y = nbgrad.tensor(arrs["x"]), nbgrad.tensor(arrs["y"])
    xt, yt = torch.tensor(arrs["x"]), torch.tensor(arrs["y"])
    for _ in range(STEPS):
        nb_opt.zero_grad()
        th_opt.zero_grad()
        _loss(nbgrad, nb_p, x, y).backward()
        _loss(torch, th_p, xt, yt).backward()
        nb_opt.step()
        th_opt.step()
    for a, b in zip(nb_p, th_p):
        _assert_close(a, b)
    assert nb_opt.state_dict()["param_groups"] == th_opt.state_dict()["param_groups"]


# ------------------------------------------------------------------------------------------
# state dicts


@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True)),
        ("Adam", dict(lr=0.01, amsgrad=True)),
        ("AdamW", dict(lr=0.01, weight_decay=0.1)),
        ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True)),
    ],
)
@pytest.mark.parametrize("via", ["deepcopy", "file"])
def test_state_dict_round_trip(name, kwargs, via, tmp_path):
    arrs = _init_arrays(6)
    x, y = nbgrad.tensor(arrs["x"]), nbgrad.tensor(arrs["y"])
    params, opt = _run_nb(getattr(optim, name), kwargs, arrs, steps=10)
    if via == "file":
        serialization.save(opt.state_dict(), tmp_path / "opt.nbg")
        saved = serialization.load(tmp_path / "opt.nbg")
    else:
        saved = copy.deepcopy(opt.state_dict())
    # a fresh optimizer over copies of the current parameters, loaded from the saved state
    params2 = [p.detach().clone().requires_grad_() for p in params]
    opt2 = getattr(optim, name)(params2, lr=123.0)
    opt2.load_state_dict(saved)
    assert opt2.param_groups[0]["lr"] == kwargs["lr"]
    assert opt2.param_groups[0]["params"][0] is params2[0]
    for _ in range(10):
        for ps, o in ((params, opt), (params2, opt2)):
            o.zero_grad()
            _loss(nbgrad, ps, x, y).backward()
            o.step()
    for a, b in zip(params, params2):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    sd1, sd2 = opt.state_dict(), opt2.state_dict()
    assert sd1["param_groups"] == sd2["param_groups"]
    for k in sd1["state"]:
        for key in sd1["state"][k]:
            np.testing.assert_array_equal(
                sd1["state"][k][key].numpy(), sd2["state"][k][key].numpy()
            )


def test_state_dict_format():
    w = nbgrad.zeros(2, requires_grad=True)
    b = nbgrad.zeros(1, requires_grad=True)
    unused = nbgrad.zeros(3, requires_grad=True)
    opt = optim.SGD([{"params": [w, unused]}, {"params": [b], "lr": 0.5}], lr=0.1, momentum=0.9)
    w.grad = nbgrad.ones(2)
    b.grad = nbgrad.ones(1)
    opt.step()
    sd = opt.state_dict()
    assert set(sd) == {"state", "param_groups"}
    assert list(sd["state"]) == [0, 2]  # indices run over all groups; no grad, no state
    assert sd["state"][0]["momentum_buffer"] is opt.state[w]["momentum_buffer"]  # live, as torch
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2]]
    assert sd["param_groups"][1] == {
        "lr": 0.5,
        "momentum": 0.9,
        "dampening": 0,
        "weight_decay": 0,
        "nesterov": False,
        "maximize": False,
        "foreach": None,
        "differentiable": False,
        "fused": None,
        "params": [2],
    }
    assert isinstance(opt.state, type(opt.state)) and opt.state[unused] == {}


def test_load_state_dict_errors_and_casts():
    p = nbgrad.zeros(2, requires_grad=True)
    opt = optim.Adam([p])
    p.grad = nbgrad.ones(2)
    opt.step()
    sd = opt.state_dict()
    with pytest.raises(ValueError, match="different number of parameter groups"):
        optim.Adam(
            [
                {"params": [nbgrad.zeros(2, requires_grad=True)]},
                {"params": [nbgrad.zeros(2, requires_grad=True)]},
            ]
        ).load_state_dict(sd)
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        optim.Adam(
            [nbgrad.zeros(2, requires_grad=True), nbgrad.zeros(2, requires_grad=True)]
        ).load_state_dict(sd)
    # float state follows the parameter's dtype; step keeps its own
    q = nbgrad.zeros(2, dtype=nbgrad.float64, requires_grad=True)
    opt2 = optim.Adam([q])
    opt2.load_state_dict(sd)
    assert opt2.state[q]["exp_avg"].dtype == nbgrad.float64
    assert opt2.state[q]["step"].dtype == nbgrad.float32
    # a plain-number step (older checkpoints) becomes a tensor
    sd["state"][0]["step"] = 3
    opt3 = optim.Adam([nbgrad.zeros(2, requires_grad=True)])
    opt3.load_state_dict(sd)
    st = opt3.state[opt3.param_groups[0]["params"][0]]["step"]
    assert isinstance(st, nbgrad.Tensor) and st.item() == 3.0


@needs_torch
def test_state_dict_loads_into_torch_and_back():
    """The format is PyTorch's: an nbgrad state dict (tensors converted) loads into
    torch.optim.Adam and the two continue identically."""
    arrs = _init_arrays(7)
    nb_p, nb_opt = _run_nb(optim.Adam, dict(lr=0.01, amsgrad=True), arrs, steps=5)
    th_p = [torch.tensor(p.detach().numpy().copy(), requires_grad=True) for p in nb_p]
    th_opt = torch.optim.Adam(th_p)

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
        _loss(nbgrad, nb_p, x, y).backward()
        _loss(torch, th_p, xt, yt).backward()
        nb_opt.step()
        th_opt.step()
    for a, b in zip(nb_p, th_p):
        _assert_close(a, b)


# ------------------------------------------------------------------------------------------
# zero_grad, versions, grad mode, closures, hooks


def test_zero_grad_semantics():
    p = nbgrad.ones(3, requires_grad=True)
    opt = optim.SGD([p], lr=0.1)
    (p * 2).sum().backward()
    g = p.grad
    v = g._version
    opt.zero_grad(set_to_none=False)
    assert p.grad is g and g._version == v + 1
    np.testing.assert_array_equal(g.numpy(), np.zeros(3, np.float32))
    opt.zero_grad()  # default: set_to_none=True
    assert p.grad is None
    # a parameter without a gradient is skipped: no update, no version bump, no state
    opt2 = optim.Adam([p])
    opt2.step()
    assert p._version == 0 and len(opt2.state) == 0
    np.testing.assert_array_equal(p.detach().numpy(), np.ones(3, np.float32))


@needs_torch
def test_zero_grad_matches_torch():
    p, pt = nbgrad.ones(3, requires_grad=True), torch.ones(3, requires_grad=True)
    (p * 2).sum().backward(create_graph=True)
    (pt * 2).sum().backward(create_graph=True)
    bumps = []
    for opt, q in ((optim.SGD([p]), p), (torch.optim.SGD([pt]), pt)):
        v = q.grad._version
        opt.zero_grad(set_to_none=False)
        assert q.grad.grad_fn is None and not q.grad.requires_grad
        assert q.grad.tolist() == [0.0, 0.0, 0.0]
        bumps.append(q.grad._version - v)
    assert bumps[0] == bumps[1]


@pytest.mark.parametrize(
    "name,kwargs,per_step",
    [
        ("SGD", dict(lr=0.1, momentum=0.9), 1),
        ("Adam", dict(), 1),
        ("Adam", dict(weight_decay=0.1, decoupled_weight_decay=True), 2),  # mul_ + addcdiv_
        ("AdamW", dict(), 2),
        ("RMSprop", dict(centered=True, momentum=0.5), 1),
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
    np.testing.assert_array_equal(view.numpy(), p.detach().numpy())
    assert p.is_leaf and p.requires_grad and p.grad_fn is None
    assert isinstance(p, nbgrad.nn.Parameter)


def test_step_runs_under_no_grad_and_closure_under_grad():
    p = nbgrad.tensor([1.0, 2.0], requires_grad=True)
    seen = []

    def closure():
        seen.append(nbgrad.is_grad_enabled())
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    opt = optim.SGD([p], lr=0.1)
    with nbgrad.no_grad():
        loss = opt.step(closure)
    assert seen == [True] and loss.item() == 5.0
    np.testing.assert_allclose(p.detach().numpy(), [0.8, 1.6], rtol=1e-6)
    assert nbgrad.is_grad_enabled()
    # a graph built on p after the step sees the new values and still differentiates
    opt.zero_grad()
    (p * p).sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), [1.6, 3.2], rtol=1e-6)
    (p * 3).sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), [4.6, 6.2], rtol=1e-6)


def test_step_hooks():
    p = nbgrad.tensor([1.0], requires_grad=True)
    opt = optim.SGD([p], lr=0.1)
    log = []
    h1 = opt.register_step_pre_hook(lambda o, a, k: log.append(("pre", o is opt)))
    h2 = opt.register_step_post_hook(lambda o, a, k: log.append(("post", p.item())))
    hg = optim.register_optimizer_step_pre_hook(lambda o, a, k: log.append(("global_pre",)))
    p.grad = nbgrad.tensor([1.0])
    opt.step()
    assert log == [("global_pre",), ("pre", True), ("post", pytest.approx(0.9))]
    for h in (h1, h2, hg):
        h.remove()
    opt.step()
    assert len(log) == 3


def test_plain_leaf_parameters_and_named_params():
    w = nbgrad.tensor([1.0, 2.0], requires_grad=True)  # not a Parameter
    opt = optim.Adam([("w", w)], lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["w"]
    w.grad = nbgrad.tensor([1.0, -1.0])
    opt.step()
    np.testing.assert_allclose(w.detach().numpy(), [0.9, 2.1], rtol=1e-6)


def test_add_param_group():
    a = nbgrad.zeros(2, requires_grad=True)
    b = nbgrad.zeros(2, requires_grad=True)
    opt = optim.SGD([a], lr=0.1, momentum=0.9)
    opt.add_param_group({"params": b, "lr": 0.01})  # a single Tensor is accepted
    assert opt.param_groups[1]["params"] == [b] and opt.param_groups[1]["momentum"] == 0.9
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [a]})
    with pytest.warns(UserWarning, match="duplicate parameters"):
        optim.SGD([{"params": [b, b]}], lr=0.1)


# ------------------------------------------------------------------------------------------
# errors (messages as PyTorch's)


def _errors(lib):
    mod = lib.optim
    p = lib.zeros(2, requires_grad=True)
    cases = [
        lambda: mod.SGD([p], lr=-1),
        lambda: mod.SGD([], lr=0.1),
        lambda: mod.SGD(p, lr=0.1),
        lambda: mod.SGD([{"params": {p}}], lr=0.1),
        lambda: mod.SGD([p, 3], lr=0.1),
        lambda: mod.SGD([p * 2], lr=0.1),
        lambda: mod.SGD([p], lr=0.1, nesterov=True),
        lambda: mod.SGD([p], lr=0.1, momentum=-0.5),
        lambda: mod.SGD([p], lr=0.1, weight_decay=-1),
        lambda: mod.SGD(
            [{"params": [p]}],
            lr=importlib.import_module(lib.__name__ + ".optim.optimizer").required,
        ),
        lambda: mod.Adam([p], lr=-0.5),
        lambda: mod.Adam([p], eps=-1.0),
        lambda: mod.Adam([p], betas=(1.0, 0.9)),
        lambda: mod.Adam([p], betas=(0.9, -0.1)),
        lambda: mod.Adam([p], betas=(0, 0.9)),
        lambda: mod.Adam([p], weight_decay=-1),
        lambda: mod.AdamW([p], lr=-1),
        lambda: mod.RMSprop([p], alpha=-0.1),
        lambda: mod.RMSprop([p], momentum=-0.1),
        lambda: mod.RMSprop([p], eps=-1.0),
        lambda: mod.lr_scheduler.StepLR("not an optimizer", 3),
        lambda: mod.lr_scheduler.StepLR(mod.SGD([p], lr=0.1), 3, last_epoch=4),
    ]
    out = []
    for case in cases:
        with pytest.raises(Exception) as info:
            case()
        out.append((type(info.value).__name__, str(info.value)))
    return out


def test_errors():
    errs = _errors(nbgrad)
    assert errs[0] == ("ValueError", "Invalid learning rate: -1")
    assert errs[1] == ("ValueError", "optimizer got an empty parameter list")
    assert errs[2][0] == "TypeError" and "iterable of Tensors or dicts" in errs[2][1]
    assert errs[3][0] == "TypeError" and "ordering of tensors in sets" in errs[3][1]
    assert errs[4] == (
        "TypeError",
        "optimizer can only optimize Tensors, but one of the params is int",
    )
    assert errs[5] == ("ValueError", "can't optimize a non-leaf Tensor")
    assert errs[6] == ("ValueError", "Nesterov momentum requires a momentum and zero dampening")
    assert errs[12] == ("ValueError", "Invalid beta parameter at index 0: 1.0")


@needs_torch
def test_errors_match_torch():
    assert _errors(nbgrad) == _errors(torch)


def test_top_level_set_is_accepted_like_torch():
    # PyTorch turns a top-level iterable into a list first, so a set is accepted there; only a
    # set as a group's "params" raises (covered in test_errors).
    p = nbgrad.zeros(1, requires_grad=True)
    assert optim.SGD({p}, lr=0.1).param_groups[0]["params"] == [p]


def test_differentiable_not_supported():
    with pytest.raises(NotImplementedError, match="differentiable"):
        optim.SGD([nbgrad.zeros(1, requires_grad=True)], lr=0.1, differentiable=True)


def test_repr():
    opt = optim.SGD([nbgrad.zeros(1, requires_grad=True)], lr=0.1)
    assert repr(opt).splitlines()[:3] == ["SGD (", "Parameter Group 0", "    dampening: 0"]


# ------------------------------------------------------------------------------------------
# lr schedulers


def _lrs(lib, make_sched, steps, lr=0.1, groups=1):
    ps = [lib.zeros(1, requires_grad=True) for _ in range(groups)]
    opt = lib.optim.SGD([{"params": [p], "lr": lr * (i + 1)} for i, p in enumerate(ps)], lr=lr)
    sched = make_sched(lib.optim.lr_scheduler, opt)
    seq = [sched.get_last_lr()]
    for _ in range(steps):
        opt.step()
        sched.step()
        seq.append(sched.get_last_lr())
        assert seq[-1] == [g["lr"] for g in opt.param_groups]
    return seq, sched, opt


SCHEDULERS = [
    ("StepLR", lambda m, o: m.StepLR(o, step_size=3, gamma=0.5)),
    ("CosineAnnealingLR", lambda m, o: m.CosineAnnealingLR(o, T_max=7)),
    ("CosineAnnealingLR-eta", lambda m, o: m.CosineAnnealingLR(o, T_max=5, eta_min=0.01)),
    ("MultiStepLR", lambda m, o: m.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3)),
    ("ExponentialLR", lambda m, o: m.ExponentialLR(o, gamma=0.9)),
    ("LambdaLR", lambda m, o: m.LambdaLR(o, lambda e: 1.0 / (e + 1))),
    ("MultiplicativeLR", lambda m, o: m.MultiplicativeLR(o, lambda e: 0.95)),
    ("ConstantLR", lambda m, o: m.ConstantLR(o, factor=0.5, total_iters=4)),
    ("LinearLR", lambda m, o: m.LinearLR(o, start_factor=0.2, total_iters=6)),
]


@needs_torch
@pytest.mark.parametrize("name,make", SCHEDULERS, ids=[s[0] for s in SCHEDULERS])
def test_scheduler_sequences_match_torch(name, make):
    nb_seq, nb_s, _ = _lrs(nbgrad, make, 25, groups=2)
    th_seq, th_s, _ = _lrs(torch, make, 25, groups=2)
    np.testing.assert_allclose(np.array(nb_seq), np.array(th_seq), rtol=1e-14, atol=0)
    assert nb_s.last_epoch == th_s.last_epoch == 25
    nb_sd, th_sd = nb_s.state_dict(), th_s.state_dict()
    assert set(nb_sd) == set(th_sd)
    assert nb_sd["base_lrs"] == th_sd["base_lrs"] and nb_sd["_step_count"] == th_sd["_step_count"]


def test_step_lr_closed_form():
    seq, sched, opt = _lrs(nbgrad, lambda m, o: m.StepLR(o, step_size=3, gamma=0.5), 20)
    want = [0.1 * 0.5 ** (t // 3) for t in range(21)]
    np.testing.assert_allclose([s[0] for s in seq], want, rtol=1e-14)
    assert sched.last_epoch == 20 and opt.param_groups[0]["initial_lr"] == 0.1


@pytest.mark.parametrize("T_max,eta_min", [(7, 0.0), (5, 0.01), (10, 0.05)])
def test_cosine_annealing_recursive_matches_closed_form(T_max, eta_min):
    # the recursive (chainable) form reproduces the closed form, also past T_max (periodic)
    seq, _, _ = _lrs(
        nbgrad, lambda m, o: m.CosineAnnealingLR(o, T_max=T_max, eta_min=eta_min), 3 * T_max
    )
    want = [
        eta_min + (0.1 - eta_min) * (1 + math.cos(math.pi * t / T_max)) / 2
        for t in range(3 * T_max + 1)
    ]
    np.testing.assert_allclose([s[0] for s in seq], want, rtol=1e-10, atol=1e-15)


def test_other_schedulers_closed_form():
    cases = [
        (
            lambda m, o: m.MultiStepLR(o, milestones=[2, 5, 5], gamma=0.3),
            lambda t: 0.1 * 0.3 ** (int(t >= 2) + 2 * int(t >= 5)),
        ),
        (lambda m, o: m.ExponentialLR(o, gamma=0.9), lambda t: 0.1 * 0.9**t),
        (lambda m, o: m.LambdaLR(o, lambda e: 1.0 / (e + 1)), lambda t: 0.1 / (t + 1)),
        (
            lambda m, o: m.LinearLR(o, start_factor=0.2, total_iters=6),
            lambda t: 0.1 * (0.2 + 0.8 * min(t, 6) / 6),
        ),
        (
            lambda m, o: m.ConstantLR(o, factor=0.5, total_iters=4),
            lambda t: 0.1 * (0.5 if t < 4 else 1.0),
        ),
    ]
    for make, closed in cases:
        seq, _, _ = _lrs(nbgrad, make, 12)
        np.testing.assert_allclose([s[0] for s in seq], [closed(t) for t in range(13)], rtol=1e-12)


def test_scheduler_scales_updates():
    # SGD under StepLR on f(x) = x (gradient 1): x decreases by the current lr each step
    x = nbgrad.tensor([0.0], requires_grad=True)
    opt = optim.SGD([x], lr=1.0)
    sched = lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    total = 0.0
    for t in range(8):
        opt.zero_grad()
        x.sum().backward()
        opt.step()
        total += 0.5 ** (t // 2)
        sched.step()
    np.testing.assert_allclose(x.item(), -total, rtol=1e-6)


def test_scheduler_state_dict_round_trip():
    seq_full, _, _ = _lrs(nbgrad, lambda m, o: m.CosineAnnealingLR(o, T_max=6, eta_min=0.001), 14)
    seq1, sched1, opt1 = _lrs(
        nbgrad, lambda m, o: m.CosineAnnealingLR(o, T_max=6, eta_min=0.001), 5
    )
    sd_opt, sd_sched = copy.deepcopy(opt1.state_dict()), sched1.state_dict()
    assert "optimizer" not in sd_sched and sd_sched["last_epoch"] == 5
    p = nbgrad.zeros(1, requires_grad=True)
    opt2 = optim.SGD([p], lr=0.1)
    sched2 = lr_scheduler.CosineAnnealingLR(opt2, T_max=6, eta_min=0.001)
    opt2.load_state_dict(sd_opt)
    sched2.load_state_dict(sd_sched)
    seq2 = [sched2.get_last_lr()]
    for _ in range(9):
        opt2.step()
        sched2.step()
        seq2.append(sched2.get_last_lr())
    np.testing.assert_allclose(seq1 + seq2[1:], seq_full, rtol=1e-14)


def test_scheduler_warnings():
    p = nbgrad.zeros(1, requires_grad=True)
    opt = optim.SGD([p], lr=0.1)
    sched = lr_scheduler.StepLR(opt, step_size=2)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    opt2 = optim.SGD([nbgrad.zeros(1, requires_grad=True)], lr=0.1)
    sched2 = lr_scheduler.ExponentialLR(opt2, gamma=0.5)
    opt2.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched2.step()
        with pytest.warns(UserWarning, match="get_last_lr"):
            sched2.get_lr()
    with pytest.warns(UserWarning, match="epoch parameter"):
        sched2.step(5)
    assert sched2.get_last_lr() == [pytest.approx(0.1 * 0.5**5)]  # closed form


# ------------------------------------------------------------------------------------------
# integration


def test_mixed_dtypes_in_one_group(binding):
    # the per-step scalar cache is keyed by dtype: each parameter is updated in its own dtype
    a = nbgrad.tensor([1.0, 2.0], dtype=nbgrad.float32, requires_grad=True)
    b = nbgrad.tensor([1.0, 2.0], dtype=nbgrad.float64, requires_grad=True)
    opt = optim.Adam([a, b], lr=0.1)
    for _ in range(5):
        opt.zero_grad()
        ((a * a).sum() + (b * b).sum()).backward()
        opt.step()
    assert a.dtype == nbgrad.float32 and b.dtype == nbgrad.float64
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6)
    assert opt.state[b]["exp_avg"].dtype == nbgrad.float64


@pytest.mark.skipif(
    not all(hasattr(nbgrad.nn, n) for n in ("Sequential", "Linear", "ReLU")),
    reason="nbgrad.nn layers are not available",
)
def test_trains_an_nn_module_with_scheduler():
    nbgrad.manual_seed(0)
    model = nbgrad.nn.Sequential(nbgrad.nn.Linear(3, 8), nbgrad.nn.ReLU(), nbgrad.nn.Linear(8, 1))
    x = nbgrad.randn(32, 3)
    y = x.sum(1, keepdim=True)
    opt = optim.Adam(model.parameters(), lr=0.01)
    sched = lr_scheduler.CosineAnnealingLR(opt, T_max=100)
    versions = [p._version for p in model.parameters()]  # init may have written in place
    losses = []
    for _ in range(100):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
    assert losses[-1] < 0.1 * losses[0]
    assert sched.get_last_lr() == [pytest.approx(0.0, abs=1e-12)]
    assert [p._version - v for p, v in zip(model.parameters(), versions)] == [100] * 4
