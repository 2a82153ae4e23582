"""How much memory does nbgrad.utils.checkpoint save?  (The figures in docs/checkpoint.md.)

A 20-layer MLP-like chain on a 256 x 1024 float32 batch is run forward and backward with and
without checkpointing, for two layer shapes:

* ``plain``:    ``h = tanh(h @ W_i + b_i)``        (the graph keeps 1 activation per layer)
* ``residual``: ``h = h + tanh(h @ W_i + b_i) / 2`` (the graph keeps 2 activations per layer)
  Memory is measured with ``tracemalloc``,
which sees every numpy allocation (nbgrad's tensors are numpy arrays):

* held after forward  -- bytes allocated by the forward pass that are still alive when it
  returns, i.e. the activations the autograd graph keeps for backward (plus the 1 MiB output);
* peak fwd+bwd        -- the highest allocation above the starting point during forward and
  backward together (weight gradients are accumulated in place into existing ``.grad``
  buffers, so they do not count).

Gradients of every variant are compared with the plain run.

    python scripts/checkpoint_memory.py [--layers 20] [--batch 256] [--width 1024]
                                        [--chain plain|residual|both]
"""

import argparse
import math
import tracemalloc

import numpy as np

import nbgrad
from nbgrad.utils.checkpoint import checkpoint, checkpoint_sequential

MiB = float(1 << 20)


def build(layers, width, seed=0):
    nbgrad.manual_seed(seed)
    ws = [(nbgrad.randn(width, width) / math.sqrt(width)).requires_grad_() for _ in range(layers)]
    bs = [nbgrad.zeros(width).requires_grad_() for _ in range(layers)]
    return ws, bs


def block(ws, bs, lo, hi, residual=False):
    def f(h):
        for i in range(lo, hi):
            if residual:
                h = h + (h @ ws[i] + bs[i]).tanh() / 2
            else:
                h = (h @ ws[i] + bs[i]).tanh()
        return h

    return f


def forward(kind, x, ws, bs, residual):
    n = len(ws)
    if kind == "none":
        return block(ws, bs, 0, n, residual)(x)
    reentrant = kind.endswith("reentrant=True)")
    if kind.startswith("per-layer"):
        h = x
        for i in range(n):
            h = checkpoint(block(ws, bs, i, i + 1, residual), h, use_reentrant=reentrant)
        return h
    segments = int(kind.split()[0])
    fns = [block(ws, bs, i, i + 1, residual) for i in range(n)]
    return checkpoint_sequential(fns, segments, x, use_reentrant=reentrant)


def measure(kind, ws, bs, batch, width, residual):
    params = ws + bs
    for p in params:  # in-place accumulation: gradients allocate nothing new
        p.grad = nbgrad.zeros_like(p)
    nbgrad.manual_seed(1)
    x = nbgrad.randn(batch, width).requires_grad_()
    x.grad = nbgrad.zeros_like(x)
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    out = forward(kind, x, ws, bs, residual)
    held = tracemalloc.get_traced_memory()[0] - base
    out.sum().backward()
    peak = tracemalloc.get_traced_memory()[1] - base
    grads = [x.grad.numpy().copy()] + [p.grad.numpy().copy() for p in params]
    del out
    return held, peak, grads


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=20)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--chain", choices=["plain", "residual", "both"], default="both")
    args = ap.parse_args()
    nbgrad.warmup(("float32",))
    ws, bs = build(args.layers, args.width)
    act = args.batch * args.width * 4 / MiB
    segs = max(2, round(math.sqrt(args.layers)))
    kinds = ["none"]
    for r in (False, True):
        kinds += [
            "per-layer (use_reentrant=%s)" % r,
            "%d segments (use_reentrant=%s)" % (segs, r),
            "2 segments (use_reentrant=%s)" % r,
        ]
    print(
        "%d layers, batch %d x %d float32 (one activation = %.2f MiB), nbgrad %s, numpy %s"
        % (args.layers, args.batch, args.width, act, nbgrad.__version__, np.__version__)
    )
    chains = ["plain", "residual"] if args.chain == "both" else [args.chain]
    for chain in chains:
        residual = chain == "residual"
        for k in kinds:  # warm-up: compile kernels
            x = nbgrad.randn(2, args.width, requires_grad=True)
            forward(k, x, ws, bs, residual).sum().backward()
        print()
        print(
            "chain %r: h = %s"
            % (chain, "h + tanh(h @ W + b) / 2" if residual else "tanh(h @ W + b)")
        )
        print("%-34s %15s %15s %12s" % ("variant", "held after fwd", "peak fwd+bwd", "max |dgrad|"))
        ref = None
        for k in kinds:
            tracemalloc.start()
            measure(k, ws, bs, args.batch, args.width, residual)  # settle allocations
            held, peak, grads = measure(k, ws, bs, args.batch, args.width, residual)
            tracemalloc.stop()
            if ref is None:
                ref = grads
            diff = max(float(np.abs(a - b).max()) for a, b in zip(grads, ref))
            print("%-34s %11.1f MiB %11.1f MiB %12.3g" % (k, held / MiB, peak / MiB, diff))


if __name__ == "__main__":
    main()
