#!/usr/bin/env python
"""Train a 2-layer Transformer encoder to sort sequences of digits, with nbgrad or PyTorch.

Each example is a random sequence of ``--seq-len`` digits (0-9); the target at position i is
the i-th smallest digit.  The model embeds digits and positions, runs
``nn.TransformerEncoder`` (2 ``TransformerEncoderLayer``s, batch_first, no dropout) and
classifies every position.  The same script runs on PyTorch with ``--backend torch``;
``--torch-init`` starts nbgrad from PyTorch's initial weights (a PyTorch state dict), so the
two training curves can be compared step by step.

    python scripts/train_tiny_transformer.py                    # nbgrad
    python scripts/train_tiny_transformer.py --backend torch    # the same on PyTorch
    python scripts/train_tiny_transformer.py --torch-init       # nbgrad from torch's init
"""

import argparse
import importlib
import os
import time


def make_model(T, args):
    nn = T.nn

    class SortNet(nn.Module):
        def __init__(self):
            super().__init__()
            d = args.d_model
            self.tok = nn.Embedding(10, d)
            self.pos = nn.Embedding(args.seq_len, d)
            layer = nn.TransformerEncoderLayer(
                d, args.heads, args.ff, dropout=0.0, batch_first=True
            )
            self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.head = nn.Linear(d, 10)

        def forward(self, x):
            positions = T.arange(x.shape[1])
            return self.head(self.encoder(self.tok(x) + self.pos(positions)))

    return SortNet()


def batches(rng, n, seq_len):
    import numpy as np

    x = rng.integers(0, 10, size=(n, seq_len))
    return x, np.sort(x, axis=1)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", choices=["nbgrad", "torch"], default="nbgrad")
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--seq-len", type=int, default=8)
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--ff", type=int, default=128)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--log-every", type=int, default=50)
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="threads for BLAS (both backends) and PyTorch's intra-op pool; on a busy machine "
        "1 is much faster than oversubscribed BLAS threads",
    )
    p.add_argument(
        "--torch-init", action="store_true", help="nbgrad starts from PyTorch's initial weights"
    )
    args = p.parse_args(argv)
    if args.threads is not None:  # before numpy starts its BLAS pool
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = str(args.threads)
    import numpy as np

    T = importlib.import_module(args.backend)
    if args.backend == "torch" and args.threads is not None:
        T.set_num_threads(args.threads)
    T.manual_seed(args.seed)
    model = make_model(T, args)
    if args.torch_init and args.backend == "nbgrad":
        import torch

        torch.manual_seed(args.seed)
        state = make_model(torch, args).state_dict()
        model.load_state_dict({k: T.tensor(v.numpy()) for k, v in state.items()})
    opt = T.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = T.nn.CrossEntropyLoss()
    rng = np.random.default_rng(args.seed)
    print(
        "backend=%s  params=%d  seq_len=%d  batch=%d"
        % (args.backend, sum(p.numel() for p in model.parameters()), args.seq_len, args.batch_size)
    )
    t0 = time.perf_counter()
    for step in range(1, args.steps + 1):
        x, y = batches(rng, args.batch_size, args.seq_len)
        xt, yt = T.tensor(x), T.tensor(y)
        logits = model(xt)
        loss = loss_fn(logits.reshape(-1, 10), yt.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % args.log_every == 0 or step == 1:
            acc = float((logits.argmax(-1) == yt).float().mean())
            print(
                "step %4d  loss %.4f  token acc %.3f  %6.1f s"
                % (step, loss.item(), acc, time.perf_counter() - t0)
            )
    train_s = time.perf_counter() - t0
    model.eval()
    x, y = batches(np.random.default_rng(args.seed + 1), 1000, args.seq_len)
    with T.no_grad():
        pred = model(T.tensor(x)).argmax(-1).numpy()
    print(
        "held-out: token accuracy %.4f, sequence accuracy %.4f  (training %.1f s)"
        % ((pred == y).mean(), (pred == y).all(1).mean(), train_s)
    )
    print("sample:  input %s\n         sorted %s\n         model  %s" % (x[0], y[0], pred[0]))


if __name__ == "__main__":
    main()
