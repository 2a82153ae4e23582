"""Benchmarks: the workloads shared by ``nbgrad-bench`` and asv (``workloads``), the timing
method (``timing``), the command line (``cli``) and its JSON schema (``schema``).

``main`` is ``python -m nbgrad``: a forward/backward demo of a small graph, then a quick run of
the benchmark (``nbgrad-bench --quick``, next to PyTorch when it is installed; the fresh-process
workloads only with ``-k``).  Extra arguments go to ``nbgrad-bench``.
"""

import sys

import nbgrad

from . import cli, schema, timing, workloads

__all__ = ["main", "demo", "cli", "schema", "timing", "workloads"]


def demo(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 2).exp().sum()
    y.backward()
    return y, x.grad


def main(argv=None):
    allow_restart = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    y, g = demo(nbgrad)
    print("demo: y = (2x).exp().sum() =", y)
    print("      x.grad =", g)
    print("      y.grad_fn =", y.grad_fn.name())
    print(flush=True)
    extra = ["--quick"]
    try:
        import torch  # noqa: F401

        extra += ["--compare", "torch"]
    except ImportError:
        pass
    return cli.main(
        extra + argv,
        prog="python -m nbgrad",
        exclude_groups=("cold start",),
        allow_restart=allow_restart,
    )
