"""Time one optimizer step three ways: fused Numba kernels, numpy ufuncs, nbgrad tensor ops.

Run: .venv/bin/python scripts/bench_optim.py   (PyTorch optional, timed when importable)
Median of 7 repeats of thread CPU time per step; results are in docs/optim-performance.md.
"""

import time

import nbgrad
from nbgrad import optim
from nbgrad.optim import _functional as F

WORKLOADS = [
    ("MLP 784-128-10 (4 params)", [(128, 784), (128,), (10, 128), (10,)], 100),
    ("100 params x 100 elements", [(100,)] * 100, 50),
    ("one 4M-element param", [(4_000_000,)], 3),
]
CONFIGS = [("Adam", dict(lr=1e-3)), ("SGD", dict(lr=1e-2, momentum=0.9))]


def tensor_ops_adam(params, state, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
    """The same update written with nbgrad in-place Tensor ops."""
    with nbgrad.no_grad():
        for p in params:
            st = state.setdefault(
                p, {"step": 0, "m": nbgrad.zeros_like(p), "v": nbgrad.zeros_like(p)}
            )
            st["step"] += 1
            g = p.grad
            st["m"].lerp_(g, 1 - b1)
            st["v"].mul_(b2).add_(g * g, alpha=1 - b2)
            bc1 = 1 - b1 ** st["step"]
            bc2 = (1 - b2 ** st["step"]) ** 0.5
            denom = (st["v"].sqrt() / bc2).add_(eps)
            p.add_(st["m"] / denom, alpha=-lr / bc1)


def tensor_ops_sgd(params, bufs, lr=1e-2, mu=0.9):
    with nbgrad.no_grad():
        for p in params:
            b = bufs.get(p)
            if b is None:
                bufs[p] = p.grad.clone()
                b = bufs[p]
            else:
                b.mul_(mu).add_(p.grad)
            p.add_(b, alpha=-lr)


def bench(fn, n, repeat=7):
    """Median over ``repeat`` runs of the per-call thread CPU time of ``fn`` (µs)."""
    fn()
    times = []
    for _ in range(repeat):
        t = time.thread_time()
        for _ in range(n):
            fn()
        times.append((time.thread_time() - t) / n * 1e6)
    return sorted(times)[len(times) // 2]


def main():
    for label, shapes, n in WORKLOADS:
        params = [nbgrad.randn(*s, requires_grad=True) for s in shapes]
        for p in params:
            p.grad = nbgrad.randn(*p.shape)
        print(label)
        for name, kw in CONFIGS:
            for use in (True, False):
                F.USE_KERNELS = use
                opt = getattr(optim, name)(params, **kw)
                print(
                    "   %-5s %-11s %10.1f us"
                    % (name, "kernels" if use else "numpy", bench(opt.step, n))
                )
            F.USE_KERNELS = True
            st = {}
            fn = (
                (lambda: tensor_ops_adam(params, st))
                if name == "Adam"
                else (lambda: tensor_ops_sgd(params, st))
            )
            print("   %-5s %-11s %10.1f us" % (name, "tensor ops", bench(fn, n)))
        try:
            import torch
        except ImportError:
            continue
        torch.set_num_threads(1)
        tps = [torch.randn(*s, requires_grad=True) for s in shapes]
        for p in tps:
            p.grad = torch.randn(*p.shape)
        for name, kw in CONFIGS:
            o = getattr(torch.optim, name)(tps, foreach=False, **kw)
            print("   %-5s %-11s %10.1f us" % (name, "torch", bench(o.step, n)))


if __name__ == "__main__":
    main()
