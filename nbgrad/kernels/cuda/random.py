"""Random numbers on a CUDA device: xoroshiro128+ generators (numba.cuda.random) and the
launchers that fill preallocated device arrays in place: ``uniform_cuda``, ``normal_cuda``,
``bernoulli_cuda`` and ``dropout_cuda``.

State.  A ``CudaGenerator`` owns one device array of ``NSTATES`` xoroshiro128+ states, each a
subsequence 2**64 draws apart from the next (``create_xoroshiro128p_states``), so the streams
never overlap.  Thread ``t`` of a launch reads and advances ``states[t]`` only; launches use at
most ``NSTATES`` threads (``RNG_BLOCKS`` x ``THREADS``) and grid-stride over the elements, so the
numbers depend only on the seed, the sequence of calls and the array sizes (never on timing):
successive calls advance the states, and ``manual_seed`` (or ``set_state``) replays them
exactly.  ``default_generator(device)`` keeps one generator per device, created lazily with the
seed given to the module's ``manual_seed`` (``torch.cuda.manual_seed`` seeds the current
device, ``manual_seed_all`` every device).

Draws.  numba's ``xoroshiro128p_uniform_float32`` rounds a 53-bit double to float32 and so can
return exactly 1.0, and its normals take ``log`` of a uniform that can be 0 (an infinite
value every ~2**24 float32 draws) and build float64 normals from float32 uniforms; the helpers
here take 24 bits for float32 and 53 for float64 (both in [0, 1)), and Box-Muller uses
``1 - u`` in (0, 1] and keeps both outputs (one pair of uniforms per two elements).
``uniform`` maps ``low + u (high - low)`` and, as PyTorch's CUDA kernel, turns a value rounded
up to ``high`` into ``low``, so the range is [low, high).

Dropout mirrors nn.functional.dropout on the CPU: keep with probability ``1 - p`` (a uniform
of the data's precision below ``1 - p``), ``out = x * scale`` for kept elements and ``x * 0``
for dropped ones, ``scale = 1 / (1 - p)`` rounded to the data's dtype.  That is a product, not
a select, because PyTorch's dropout multiplies (a NaN input stays NaN where dropped).  p = 0
and p = 1 draw nothing (the CPU path draws nothing either): identity with an all-ones mask,
and ``x * 0`` with an all-zeros mask.
"""

import math

import numpy as np
from numba import cuda, float32, uint32
from numba.cuda.random import (
    create_xoroshiro128p_states,
    xoroshiro128p_dtype,
    xoroshiro128p_next,
    xoroshiro128p_uniform_float64,
)

from ... import random as _cpu_random
from .config import SIM, THREADS, grid

__all__ = [
    "CudaGenerator",
    "NSTATES",
    "default_generator",
    "manual_seed",
    "manual_seed_all",
    "initial_seed",
    "uniform_cuda",
    "normal_cuda",
    "bernoulli_cuda",
    "dropout_cuda",
]

RNG_BLOCKS = 4 if SIM else 128  # 128 x 256 states = 512 KiB per device
NSTATES = RNG_BLOCKS * THREADS
DEFAULT_SEED = 67280421310721  # nbgrad.random's default (PyTorch's default_generator seed)
_MASK64 = 2**64 - 1


def _check_seed(seed):
    seed = int(seed)
    if not -(2**63) <= seed < 2**64:  # PyTorch's parser: int64 or uint64
        raise ValueError("Overflow when unpacking long long")
    return seed & _MASK64  # kept as uint64: -1 is 2**64 - 1


def _device_id():
    try:
        return int(cuda.get_current_device().id)
    except AttributeError:  # the simulator's device has no id: one device
        return 0


class CudaGenerator:
    """Per-device xoroshiro128+ generator state (``NSTATES`` streams) seeded by an int."""

    def __init__(self, seed=DEFAULT_SEED, device=None):
        self.device = _device_id() if device is None else int(device)
        self._states = None
        self.manual_seed(seed)

    def manual_seed(self, seed):
        """Reseed (any int64 or uint64 value); the next draws replay from the start."""
        self._seed = _check_seed(seed)
        self._states = None  # built on first use, on this generator's device
        return self

    def initial_seed(self):
        return self._seed

    @property
    def states(self):
        """The device array of states (``xoroshiro128p_dtype``, ``NSTATES`` long)."""
        if self._states is None:
            if SIM:
                self._states = create_xoroshiro128p_states(NSTATES, self._seed)
            else:
                with cuda.gpus[self.device]:
                    self._states = create_xoroshiro128p_states(NSTATES, self._seed)
        return self._states

    def get_state(self):
        """A host copy of the states (``torch.cuda.get_rng_state``)."""
        return self.states.copy_to_host()

    def set_state(self, state):
        """Restore states returned by ``get_state``."""
        state = np.asarray(state)
        if state.dtype != xoroshiro128p_dtype or state.shape != (NSTATES,):
            raise RuntimeError(
                "RNG state must be %d xoroshiro128p states, got %s %s"
                % (NSTATES, state.dtype, state.shape)
            )
        self.states.copy_to_device(np.ascontiguousarray(state))


_generators = {}
_seed_all = [DEFAULT_SEED]
if _cpu_random.CUDA_SEED[0] is not None:  # nbgrad.manual_seed ran before this module loaded
    _seed_all[0] = _check_seed(_cpu_random.CUDA_SEED[0])


def default_generator(device=None):
    """The default generator of ``device`` (the current device when None)."""
    d = _device_id() if device is None else int(device)
    g = _generators.get(d)
    if g is None:
        g = _generators[d] = CudaGenerator(_seed_all[0], d)
    return g


def manual_seed(seed):
    """Seed the current device's default generator (``torch.cuda.manual_seed``)."""
    return default_generator().manual_seed(seed)


def manual_seed_all(seed):
    """Seed the default generator of every device, including ones not used yet."""
    _seed_all[0] = _check_seed(seed)
    for g in _generators.values():
        g.manual_seed(seed)


def initial_seed():
    return default_generator().initial_seed()


# ------------------------------------------------------------------------------------------
# device helpers


@cuda.jit(device=True)
def _u32(states, t):
    """float32 in [0, 1): the top 24 bits of the next draw."""
    x = xoroshiro128p_next(states, t)
    return float32(x >> uint32(40)) * float32(5.9604644775390625e-08)  # 2**-24


@cuda.jit(device=True)
def _u64(states, t):
    """float64 in [0, 1): the top 53 bits of the next draw."""
    return xoroshiro128p_uniform_float64(states, t)


def _kernels(draw, ftype):
    """The fill kernels for one precision (``draw`` gives a uniform of type ``ftype``)."""
    one = ftype(1.0)
    two_pi = ftype(2.0 * math.pi)
    minus_two = ftype(-2.0)

    @cuda.jit
    def uniform(out, low, span, high, states):
        t = cuda.grid(1)
        for i in range(t, out.shape[0], cuda.gridsize(1)):
            v = low + draw(states, t) * span
            out[i] = low if v == high else v

    @cuda.jit
    def normal(out, mean, std, states):
        t = cuda.grid(1)
        n = out.shape[0]
        for k in range(t, (n + 1) // 2, cuda.gridsize(1)):
            u1 = one - draw(states, t)  # (0, 1]: log never sees 0
            u2 = draw(states, t)
            r = math.sqrt(minus_two * math.log(u1))
            a = two_pi * u2
            out[2 * k] = mean + std * (r * math.cos(a))
            if 2 * k + 1 < n:
                out[2 * k + 1] = mean + std * (r * math.sin(a))

    @cuda.jit
    def bernoulli_scalar(out, p, states):
        t = cuda.grid(1)
        for i in range(t, out.shape[0], cuda.gridsize(1)):
            out[i] = 1 if draw(states, t) < p else 0

    @cuda.jit
    def bernoulli_array(out, p, states):
        t = cuda.grid(1)
        for i in range(t, out.shape[0], cuda.gridsize(1)):
            out[i] = 1 if draw(states, t) < p[i] else 0

    @cuda.jit
    def dropout(x, keep_p, scale, zero, out, mask, states):
        t = cuda.grid(1)
        for i in range(t, x.shape[0], cuda.gridsize(1)):
            keep = draw(states, t) < keep_p
            mask[i] = keep
            out[i] = x[i] * (scale if keep else zero)

    return uniform, normal, bernoulli_scalar, bernoulli_array, dropout


_K = {
    np.dtype(np.float32): _kernels(_u32, np.float32),
    np.dtype(np.float64): _kernels(_u64, np.float64),
}


@cuda.jit
def _dropout_const(x, keep, scale, out, mask):
    # p == 0 (keep, scale 1) or p == 1 (drop, scale 0): no draws
    for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        mask[i] = keep
        out[i] = x[i] * scale


# ------------------------------------------------------------------------------------------
# launchers


def _flat(a):
    return a if a.ndim == 1 else a.reshape(a.size)


def _kernel_set(out, what):
    k = _K.get(np.dtype(out.dtype))
    if k is None:
        raise TypeError("%s: expected a float32 or float64 array, got %s" % (what, out.dtype))
    return k


def _states(state):
    if state is None:
        state = default_generator()
    if not isinstance(state, CudaGenerator):
        raise TypeError("expected a CudaGenerator or None, got %s" % type(state).__name__)
    return state.states


def _launch(n, states):
    blocks, threads = grid(n)
    return min(blocks, states.shape[0] // threads), threads


def uniform_cuda(out, low, high, state=None):
    """Fill ``out`` (float32/float64, any shape, C-contiguous) with U[low, high)."""
    (k_uniform, _, _, _, _) = _kernel_set(out, "uniform_")
    if not low <= high:
        raise RuntimeError(
            "uniform_ expects to return a [from, to) range, but found from=%s > to=%s" % (low, high)
        )
    if out.size == 0:
        return out
    t = out.dtype.type
    lo, hi = t(low), t(high)
    states = _states(state)
    f = _flat(out)
    k_uniform[_launch(f.shape[0], states)](f, lo, t(hi - lo), hi, states)
    return out


def normal_cuda(out, mean, std, state=None):
    """Fill ``out`` with N(mean, std^2) (Box-Muller, both outputs of each pair used)."""
    (_, k_normal, _, _, _) = _kernel_set(out, "normal_")
    if not std >= 0.0:
        raise RuntimeError("normal expects std >= 0.0, but found std %s" % std)
    if out.size == 0:
        return out
    t = out.dtype.type
    states = _states(state)
    f = _flat(out)
    k_normal[_launch((f.shape[0] + 1) // 2, states)](f, t(mean), t(std), states)
    return out


def bernoulli_cuda(out, p, state=None):
    """Fill ``out`` (float dtype) with 1 where a uniform < p, else 0.  ``p``: a scalar in
    [0, 1], or a device array of ``out``'s shape (per-element probabilities)."""
    (_, _, k_scalar, k_array, _) = _kernel_set(out, "bernoulli_")
    if out.size == 0:
        return out
    states = _states(state)
    f = _flat(out)
    cfg = _launch(f.shape[0], states)
    if getattr(p, "shape", ()) == ():
        if not 0 <= p <= 1:
            raise RuntimeError("bernoulli_ expects p to be in [0, 1], but got p=%s" % p)
        k_scalar[cfg](f, out.dtype.type(p), states)
    else:
        if tuple(p.shape) != tuple(out.shape):
            raise RuntimeError(
                "bernoulli_: p of shape %s does not match out %s" % (tuple(p.shape), out.shape)
            )
        k_array[cfg](f, _flat(p), states)
    return out


def dropout_cuda(x, p, out, mask, state=None):
    """Dropout: ``mask`` (uint8 or bool, ``x``'s shape) <- keep (probability ``1 - p``),
    ``out`` <- ``x * (1 / (1 - p))`` where kept, ``x * 0`` where dropped.  ``out`` may be
    ``x`` (in place).  ``state``: a CudaGenerator (the current device's default when None)."""
    if p < 0.0 or p > 1.0:
        raise ValueError("dropout probability has to be between 0 and 1, but got %s" % p)
    (_, _, _, _, k_dropout) = _kernel_set(x, "dropout")
    if x.size == 0:
        return out
    t = x.dtype.type
    xf, of, mf = _flat(x), _flat(out), _flat(mask)
    if p == 0 or p == 1:
        _dropout_const[grid(xf.shape[0])](xf, p == 0, t(1.0 if p == 0 else 0.0), of, mf)
        return out
    states = _states(state)
    k_dropout[_launch(xf.shape[0], states)](
        xf, t(1.0 - p), t(1.0 / (1.0 - p)), t(0.0), of, mf, states
    )
    return out
