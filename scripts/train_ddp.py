#!/usr/bin/env python
"""Data-parallel training over MPI: the digits CNN of scripts/train_digits_cnn.py on N ranks.

    mpirun -n 2 python scripts/train_ddp.py --epochs 15
    python scripts/train_ddp.py            # one rank (MPI starts as a singleton)

Every rank builds the model (DistributedDataParallel broadcasts rank 0's parameters), reads its
share of the training set through a DistributedSampler (a new shuffle each epoch with
``set_epoch``) and trains with the global batch split across the ranks: DDP averages the
gradients during backward, so every rank takes the same optimizer step as one process on the
whole batch.  ``--accumulate k`` accumulates k micro-batches locally (``no_sync``) before each
reduced step.  Rank 0 prints the table; the script exits 1 when the final test accuracy is below
0.95, as the single-process example does.  Needs the 'mpi' and 'examples' extras:
pip install -e ".[mpi,examples]" (docs/distributed.md).
"""

import argparse
import contextlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from train_digits_cnn import build, load_digits  # noqa: E402  (the same data and model)

import nbgrad as torch  # noqa: E402
import nbgrad.distributed as dist  # noqa: E402
import nbgrad.nn as nn  # noqa: E402
from nbgrad.nn.parallel import DistributedDataParallel as DDP  # noqa: E402
from nbgrad.utils.data import DataLoader, DistributedSampler, TensorDataset  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=15)
    p.add_argument("--batch-size", type=int, default=64, help="global batch (all ranks)")
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--accumulate", type=int, default=1, help="micro-batches per reduced step")
    args = p.parse_args(argv)

    dist.init_process_group(backend="mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed + rank)  # different on purpose: DDP broadcasts rank 0's
    (xtr, ytr), (xte, yte) = load_digits(args.seed)
    model = DDP(build())
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    train = TensorDataset(torch.from_numpy(xtr), torch.from_numpy(ytr))
    sampler = DistributedSampler(train, shuffle=True, seed=args.seed)
    per_rank = max(1, args.batch_size // (world * args.accumulate))
    loader = DataLoader(train, batch_size=per_rank, sampler=sampler)
    if rank == 0:
        print(
            "%d rank(s), %d samples each per step (global batch %d), %d bucket(s)"
            % (world, per_rank, per_rank * world * args.accumulate, len(model.reducer.buckets))
        )
        print("%5s %10s %10s %9s %8s" % ("epoch", "loss", "train acc", "test acc", "time s"))
    test_acc = 0.0
    for epoch in range(1, args.epochs + 1):
        t0 = time.perf_counter()
        model.train()
        sampler.set_epoch(epoch)
        stats = torch.zeros(3, dtype=torch.float64)  # loss sum, correct, seen (this rank)
        batches = list(loader)
        for start in range(0, len(batches), args.accumulate):
            group = batches[start : start + args.accumulate]
            opt.zero_grad()
            for i, (xb, yb) in enumerate(group):
                last = i == len(group) - 1
                with model.no_sync() if not last else contextlib.nullcontext():
                    logits = model(xb)
                    loss = loss_fn(logits, yb) / len(group)
                    loss.backward()
                stats += torch.tensor(
                    [
                        float(loss) * len(group) * len(yb),
                        int((logits.argmax(1) == yb).sum()),
                        len(yb),
                    ],
                    dtype=torch.float64,
                )
            opt.step()
        dist.all_reduce(stats)  # the epoch's numbers over every rank
        model.eval()
        with torch.no_grad():
            test_acc = float(
                (model(torch.from_numpy(xte)).argmax(1) == torch.from_numpy(yte)).float().mean()
            )
        if rank == 0:
            loss_sum, correct, seen = stats.tolist()
            print(
                "%5d %10.4f %10.3f %9.3f %8.2f"
                % (epoch, loss_sum / seen, correct / seen, test_acc, time.perf_counter() - t0)
            )
    # every rank holds the same parameters
    flat = torch.cat([q.detach().reshape(-1) for q in model.parameters()])
    every = [torch.zeros_like(flat) for _ in range(world)]
    dist.all_gather(every, flat)
    same = all(bool((e == flat).all()) for e in every)
    if rank == 0:
        print("parameters identical on all %d ranks: %s" % (world, same))
        print("final test accuracy: %.3f" % test_acc)
    dist.destroy_process_group()
    return 0 if test_acc >= 0.95 and same else 1


if __name__ == "__main__":
    raise SystemExit(main())
