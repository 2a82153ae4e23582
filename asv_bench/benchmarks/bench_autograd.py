"""Autograd workloads of DESIGN.md's performance budget, for nbgrad and (when installed) PyTorch.

Every class is parametrised by ``lib``: the same code runs with ``T = nbgrad`` and with
``T = torch``, so ``asv compare``/the HTML report shows the ratio directly.  A ``torch`` case is
skipped (``NotImplementedError`` in ``setup``) when PyTorch is not importable.  ``setup`` calls
``nbgrad.warmup()`` so kernel compilation / cache loading never lands in a timing.

Names follow asv's conventions: ``time_*`` methods are timed, ``setup`` runs before each repeat.
"""

import math

import numpy as np

import nbgrad

try:
    import torch
except ImportError:  # the oracle is optional
    torch = None

LIBS = ["nbgrad", "torch"]


def _lib(name):
    if name == "nbgrad":
        return nbgrad
    if torch is None:
        raise NotImplementedError("PyTorch is not installed")
    return torch


def _randn(T, *shape, seed=0, requires_grad=False):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return T.tensor(a, requires_grad=requires_grad)


class _Bench:
    params = [LIBS]
    param_names = ["lib"]

    def setup(self, lib, *args):
        nbgrad.warmup()
        self.T = _lib(lib)


class TimeOpChainForward(_Bench):
    """Forward of a chain of ``n`` multiplications on a 4-element tensor that requires grad
    (graph recording on).  Per-op cost = (time(n=20) - time(n=0)) / 20."""

    params = [LIBS, [0, 20]]
    param_names = ["lib", "n_ops"]

    def setup(self, lib, n):
        super().setup(lib)
        self.x = self.T.ones(4, requires_grad=True)

    def time_forward(self, lib, n):
        y = self.x
        for _ in range(n):
            y = y * 1.0001
        return y


class TimeOpChainBackward(_Bench):
    """Backward through the ``n``-op chain above (plus its ``sum``).

    ``time_forward_backward`` builds and runs a fresh graph (per-node backward cost =
    slope of this minus the forward slope of TimeOpChainForward); ``time_backward_retained``
    times ``backward`` alone on one graph kept with ``retain_graph=True``."""

    params = [LIBS, [0, 20]]
    param_names = ["lib", "n_ops"]

    def setup(self, lib, n):
        super().setup(lib)
        self.x = self.T.ones(4, requires_grad=True)
        self.loss = self._forward(n)

    def _forward(self, n):
        y = self.x
        for _ in range(n):
            y = y * 1.0001
        return y.sum()

    def time_forward_backward(self, lib, n):
        self._forward(n).backward()

    def time_backward_retained(self, lib, n):
        self.loss.backward(retain_graph=True)


class TimeGeluPrimitives(_Bench):
    """GELU (tanh approximation) written from primitive ops, 1M float32, forward + backward."""

    def setup(self, lib):
        super().setup(lib)
        self.x = _randn(self.T, 1 << 20, requires_grad=True)
        self.c = math.sqrt(2 / math.pi)

    def time_gelu_fwd_bwd(self, lib):
        T, x, c = self.T, self.x, self.c
        y = 0.5 * x * (1 + T.tanh(c * (x + 0.044715 * x * x * x)))
        y.sum().backward()
        x.grad = None


class TimeMLPStep(_Bench):
    """One SGD step of a 784-512-512-10 ReLU MLP (float32): forward, log_softmax loss,
    backward, in-place update under no_grad."""

    params = [LIBS, [128, 16]]
    param_names = ["lib", "batch"]

    def setup(self, lib, batch):
        super().setup(lib)
        T = self.T
        sizes = [784, 512, 512, 10]
        self.ws = [
            _randn(T, a, b, seed=i) * (1 / math.sqrt(a))
            for i, (a, b) in enumerate(zip(sizes, sizes[1:]))
        ]
        for w in self.ws:
            w.requires_grad_(True)
        self.bs = [T.zeros(b, requires_grad=True) for b in sizes[1:]]
        self.xb = _randn(T, batch, 784, seed=10)

    def time_train_step(self, lib, batch):
        T = self.T
        h = self.xb
        for i, (w, b) in enumerate(zip(self.ws, self.bs)):
            h = h @ w + b
            if i < 2:
                h = h.relu()
        loss = h.log_softmax(1).mean()
        loss.backward()
        with T.no_grad():
            for p in self.ws + self.bs:
                p -= 0.01 * p.grad
                p.grad = None


class TimeSoftmax(_Bench):
    """softmax + log_softmax over the last dim of a 128x10000 float32 tensor, mean, backward."""

    def setup(self, lib):
        super().setup(lib)
        self.x = _randn(self.T, 128, 10000, requires_grad=True)

    def time_softmax_logsoftmax_fwd_bwd(self, lib):
        x = self.x
        (x.softmax(1) + x.log_softmax(1)).mean().backward()
        x.grad = None


class TimeJacobian(_Bench):
    """The 100 x 50 Jacobian of tanh(W2 @ tanh(W1 @ x + b1)) (float64) by
    ``autograd.functional.jacobian``: a row loop, one batched backward (vectorize=True), or one
    batched forward-mode pass."""

    params = [LIBS, ["rows", "vectorize", "forward-mode"]]
    param_names = ["lib", "mode"]

    def setup(self, lib, mode):
        super().setup(lib)
        from nbgrad.bench import jacobian_100

        kw = {
            "rows": {},
            "vectorize": {"vectorize": True},
            "forward-mode": {"vectorize": True, "strategy": "forward-mode"},
        }[mode]
        self.run = jacobian_100(self.T, **kw)

    def time_jacobian(self, lib, mode):
        self.run()
