"""CUDA twins of kernels/cpu/optim.py (kernels/cuda/optim.py) against the CPU kernels: the same
arguments on host arrays and on device copies, two steps each, every array compared after.
float32 and float64, sizes that are not multiples of the block, an empty buffer, NaN/Inf in the
gradient and in the state."""

import numpy as np
import pytest
from numba import cuda

from nbgrad.kernels.cpu import optim as cpu
from nbgrad.kernels.cuda import optim as gpu

DTYPES = [np.float32, np.float64]
SIZES = [0, 1, 7, 33, 100]


def _variants(name, s):
    """(number of leading array arguments, [trailing flag/scalar arguments, ...]) per kernel."""
    if name == "sgd_step":
        return 3, [
            (False, True, True, False, s(0.01), True, s(0.9), s(0.9), s(-0.1)),
            (True, False, True, True, s(0.0), False, s(0.9), s(1.0), s(-0.1)),
            (False, False, False, False, s(0.01), True, s(0.0), s(1.0), s(-0.1)),
        ]
    if name == "adam_step":
        common = (s(0.999), s(0.001), s(0.05), s(1e-8), s(-0.01))
        return 5, [
            (False, True, s(0.01), True, s(1.0), False, s(0.1), s(0.9), True) + common,
            (True, False, s(0.01), False, s(0.999), True, s(0.6), s(0.4), False) + common,
        ]
    if name == "rmsprop_step":
        return 5, [
            (False, True, True, s(0.01), True, s(0.99), s(0.01), True, s(0.99), s(0.9), s(1e-8))
            + (s(-0.01),),
            (True, False, False, s(0.0), False, s(0.3), s(0.7), False, s(0.3), s(0.0), s(1e-8))
            + (s(-0.01),),
            (False, True, False, s(0.0), False, s(0.3), s(0.7), False, s(0.3), s(0.0), s(1e-8))
            + (s(-0.01),),
        ]
    if name == "adagrad_step":
        return 3, [
            (False, s(0.01), True, s(1e-10), s(-0.01)),
            (True, s(0.0), False, s(1e-10), s(-0.01)),
        ]
    if name == "adadelta_step":
        return 4, [
            (False, s(0.01), True, s(0.9), s(0.1), s(1e-6), s(-1.0)),
            (True, s(0.0), False, s(0.9), s(0.1), s(1e-6), s(-1.0)),
        ]
    if name == "adamax_step":
        return 4, [
            (False, s(0.01), True, s(0.1), s(0.9), True, s(0.999), s(1e-8), s(-0.002)),
            (True, s(0.0), False, s(0.6), s(0.4), False, s(0.999), s(1e-8), s(-0.002)),
        ]
    if name == "nadam_step":
        tail = (s(0.999), s(0.001), s(0.002), s(1e-8), s(-0.001), s(-0.01))
        return 4, [
            (False, s(0.01), True, s(1.0), False, s(0.1), s(0.9), True) + tail,
            (True, s(0.01), False, s(0.9999), True, s(0.6), s(0.4), False) + tail,
        ]
    if name == "radam_step":
        head = (s(0.999), s(0.001), s(0.3), s(0.001))
        tail = (s(1.0), s(0.05), s(1e-8), s(0.7))
        return 4, [
            (False, s(0.01), True, s(1.0), False, s(0.1), s(0.9), True) + head + (True,) + tail,
            (True, s(0.01), False, s(0.999), True, s(0.6), s(0.4), False) + head + (False,) + tail,
        ]
    raise KeyError(name)


NAMES = [
    "sgd_step",
    "adam_step",
    "rmsprop_step",
    "adagrad_step",
    "adadelta_step",
    "adamax_step",
    "nadam_step",
    "radam_step",
]


def _arrays(k, n, dtype, seed, special):
    rng = np.random.default_rng(seed)
    arrs = [rng.standard_normal(n).astype(dtype) for _ in range(2)]  # p, g
    arrs += [np.abs(rng.standard_normal(n)).astype(dtype) * dtype(0.1) for _ in range(k - 2)]
    if special and n >= 12:
        g = arrs[1]
        g[0], g[1], g[2] = np.nan, np.inf, -np.inf
        arrs[0][3] = np.nan
        g[7] = 0
        for j, st in enumerate(arrs[2:]):  # NaN then Inf in each state buffer
            st[4 + j] = np.nan
            st[8 + j] = np.inf
    return arrs


def _run(name, n, dtype, variant, special=False):
    k, variants = _variants(name, np.dtype(dtype).type)
    rest = variants[variant]
    host = _arrays(k, n, dtype, 1000 * variant + n, special)
    dev = [cuda.to_device(a) for a in host]
    with np.errstate(all="ignore"):
        for _ in range(2):
            getattr(cpu, name)(*host, *rest)
            getattr(gpu, name + "_cuda")(*dev, *rest)
    tol = dict(rtol=2e-6, atol=1e-7) if dtype == np.float32 else dict(rtol=1e-13, atol=1e-15)
    for j, (h, d) in enumerate(zip(host, dev)):
        got = d.copy_to_host()
        assert got.dtype == h.dtype
        np.testing.assert_allclose(got, h, equal_nan=True, err_msg="%s array %d" % (name, j), **tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", NAMES)
def test_variants_match_cpu(name, dtype):
    k, variants = _variants(name, np.dtype(dtype).type)
    for v in range(len(variants)):
        _run(name, 33, dtype, v)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", NAMES)
def test_sizes(name, n):
    _run(name, n, np.float32, 0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", NAMES)
def test_nan_inf(name, dtype):
    k, variants = _variants(name, np.dtype(dtype).type)
    for v in range(len(variants)):
        _run(name, 12, dtype, v, special=True)


def test_amsgrad_nan_state_propagates():
    """vmax <- max(vmax, v) keeps a NaN from either side (torch.maximum), as on the CPU."""
    s = np.float64
    rest = (False, True, s(0.0), False, s(1.0), False, s(0.1), s(0.9), True)
    rest += (s(0.999), s(0.001), s(1.0), s(1e-8), s(-0.01))
    p, g = np.ones(3), np.ones(3)
    m, v = np.zeros(3), np.array([np.nan, 1.0, 1.0])
    vmax = np.array([1.0, np.nan, 0.5])
    dev = [cuda.to_device(a) for a in (p, g, m, v, vmax)]
    gpu.adam_step_cuda(*dev, *rest)
    out = dev[4].copy_to_host()
    assert np.isnan(out[0]) and np.isnan(out[1]) and out[2] == pytest.approx(1.0)
