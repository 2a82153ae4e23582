#!/usr/bin/env python
"""Train a small CNN on scikit-learn's bundled 8x8 digits (offline) with nbgrad.

A global module backward hook records each layer's gradient norm per step and flags layers whose
gradients are all zero; the script prints a per-epoch table and writes a PNG plot of the
per-layer gradient norms.  Needs the 'examples' extra:  pip install -e ".[examples]"

    python scripts/train_digits_cnn.py --epochs 15 --plot grad_norms.png
"""

import argparse
import collections
import time

import numpy as np

import nbgrad as torch
import nbgrad.nn as nn
from nbgrad.nn.modules.module import register_module_full_backward_hook


def load_digits(seed):
    from sklearn.datasets import load_digits as _load

    d = _load()
    x = (d.images / 16.0).astype(np.float32)[:, None]  # N x 1 x 8 x 8 in [0, 1]
    y = d.target.astype(np.int64)
    idx = np.random.default_rng(seed).permutation(len(x))
    cut = int(0.8 * len(x))
    return (x[idx[:cut]], y[idx[:cut]]), (x[idx[cut:]], y[idx[cut:]])


def build():
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),  # 16 x 4 x 4
        nn.Conv2d(16, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),  # 32 x 2 x 2
        nn.Flatten(),
        nn.Linear(32 * 2 * 2, 64),
        nn.ReLU(),
        nn.Linear(64, 10),
    )


class GradMonitor:
    """Global full backward hook: per-layer gradient norm of the layer's output gradient."""

    def __init__(self, model):
        self.names = {id(m): name for name, m in model.named_modules() if name}
        self.step_norms = collections.defaultdict(list)
        self.zero_layers = set()
        self.handle = register_module_full_backward_hook(self.hook)

    def hook(self, module, grad_input, grad_output):
        name = self.names.get(id(module))
        if name is None or grad_output[0] is None:
            return None
        g = grad_output[0]
        self.step_norms[name].append(float(g.norm()))
        if not bool((g != 0).any()):
            self.zero_layers.add(name)
        return None


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=15)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--plot", default="grad_norms.png")
    args = p.parse_args(argv)
    torch.manual_seed(args.seed)
    (xtr, ytr), (xte, yte) = load_digits(args.seed)
    model = build()
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    monitor = GradMonitor(model)
    history = collections.defaultdict(list)
    rng = np.random.default_rng(args.seed)
    print(
        "%5s %10s %10s %9s %8s  %s"
        % ("epoch", "loss", "train acc", "test acc", "time s", "all-zero-gradient layers")
    )
    for epoch in range(1, args.epochs + 1):
        t0 = time.perf_counter()
        model.train()
        order = rng.permutation(len(xtr))
        total, correct, seen = 0.0, 0, 0
        monitor.zero_layers.clear()
        for start in range(0, len(order), args.batch_size):
            b = order[start : start + args.batch_size]
            xb, yb = torch.from_numpy(xtr[b]), torch.from_numpy(ytr[b])
            logits = model(xb)
            loss = loss_fn(logits, yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss) * len(b)
            correct += int((logits.argmax(1) == yb).sum())
            seen += len(b)
        for name, norms in monitor.step_norms.items():
            history[name].append(float(np.mean(norms)))
        monitor.step_norms.clear()
        model.eval()
        with torch.no_grad():
            test_acc = float(
                (model(torch.from_numpy(xte)).argmax(1) == torch.from_numpy(yte)).float().mean()
            )
        print(
            "%5d %10.4f %10.3f %9.3f %8.2f  %s"
            % (
                epoch,
                total / seen,
                correct / seen,
                test_acc,
                time.perf_counter() - t0,
                ", ".join(sorted(monitor.zero_layers)) or "-",
            )
        )
    monitor.handle.remove()
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4))
        for name, series in history.items():
            ax.plot(
                range(1, len(series) + 1),
                series,
                label="%s (%s)" % (name, type(dict(model.named_modules())[name]).__name__),
            )
        ax.set_xlabel("epoch")
        ax.set_ylabel("mean |grad_output| per step")
        ax.set_yscale("log")
        ax.set_title("nbgrad: per-layer gradient norms, digits CNN")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
        print("wrote", args.plot)
    print("final test accuracy: %.3f" % test_acc)
    return 0 if test_acc >= 0.95 else 1


if __name__ == "__main__":
    raise SystemExit(main())
