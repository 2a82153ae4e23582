#!/usr/bin/env python
"""Benchmark a DistributedDataParallel training step on 2 MPI ranks: bucketed all-reduces that
overlap the backward pass (DDP) against one all-reduce of all gradients after backward.

    python scripts/bench_ddp.py                      # launches mpirun -n 2 itself
    python scripts/bench_ddp.py --trace ddp.json     # also a Chrome trace of one step (rank 0)
    python scripts/bench_ddp.py --json               # one JSON document on stdout

Each rank trains an MLP (``--layers`` Linear(hidden, hidden) + ReLU, SGD) on its own batch.
Three modes, interleaved round by round (``--rounds`` rounds of ``--steps`` steps each, the
order alternating) so that a load change on the machine hits them alike:

- ``overlap``: ``DistributedDataParallel(model, bucket_cap_mb=...)``: each bucket's all-reduce
  starts from the post-accumulate-grad hooks while backward goes on;
- ``after_backward``: the same DDP with one bucket (``bucket_cap_mb`` larger than the model):
  its single all-reduce can only start once backward has produced the last gradient, so it
  runs after the backward computation -- the same copies and the same all-reduce code, without
  the overlap;
- ``local``: no communication at all (the compute alone);
- ``manual`` (not run unless asked): no DDP; after ``backward()`` the gradients are
  concatenated (``torch.cat``), all-reduced (``all_reduce(..., AVG)``) and copied back, as a user
  would write it.

A round's time is the slowest rank's.  Reported: the median step time of each mode with its
spread over rounds (min, max), and the median (min, max) over rounds of the per-round ratio
overlap / after_backward.  Then one more overlapped step is profiled: its timeline (when each
bucket's all-reduce was launched and seen complete, relative to the start of backward and to
its last gradient) shows the communication starting inside backward; ``--trace`` writes it as a
Chrome trace (the profiler's events plus one span per bucket all-reduce).  The collective
checks are off (``NBGRAD_DISTRIBUTED_CHECKS=0``) in both modes: the comparison is of when the
communication happens, not of the checks.  Needs the 'mpi' extra (docs/distributed.md).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--batch", type=int, default=32, help="per rank")
    p.add_argument("--steps", type=int, default=5, help="steps per round")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--bucket-cap-mb", type=float, default=4.0)
    p.add_argument("--modes", default="overlap,after_backward,local")
    p.add_argument("--trace", default="", help="write rank 0's Chrome trace of one DDP step here")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument("--timeout", type=int, default=600, help="seconds before the job is killed")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args(argv)


# ---------------------------------------------------------------------------------------------
# the launcher


def launch(args, argv):
    path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    exe = shutil.which("mpirun", path=path) or shutil.which("mpiexec", path=path)
    if exe is None:
        raise SystemExit("no mpirun/mpiexec: pip install 'nbgrad[mpi]'")
    version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    cmd = [exe, "-n", str(args.ranks)]
    if "Open MPI" in version:
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        if args.ranks > (os.cpu_count() or 1):
            cmd.append("--oversubscribe")
    cmd += [sys.executable, os.path.abspath(__file__), "--worker"] + list(argv)
    env = dict(os.environ, NBGRAD_DISTRIBUTED_CHECKS="0", NBGRAD_QUIET="1")
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, "1")  # one core per rank
    env["PYTHONPATH"] = os.pathsep.join([ROOT] + [p for p in [env.get("PYTHONPATH")] if p])
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.timeout)
    doc = None
    for line in out.stdout.splitlines():
        if line.startswith("BENCHDDP "):
            doc = json.loads(line[len("BENCHDDP ") :])
    if out.returncode != 0 or doc is None:
        raise SystemExit(
            "mpirun failed (exit %d):\n%s\n%s"
            % (out.returncode, out.stdout[-3000:], out.stderr[-3000:])
        )
    return doc


def report(doc):
    c = doc["config"]
    print(
        "DDP step on %d ranks: MLP %d x Linear(%d, %d), batch %d per rank, %.1f MB of "
        "gradients in %d bucket(s) (bucket_cap_mb=%g); %d rounds x %d steps"
        % (
            c["ranks"],
            c["layers"],
            c["hidden"],
            c["hidden"],
            c["batch"],
            c["grad_mb"],
            c["buckets"],
            c["bucket_cap_mb"],
            c["rounds"],
            c["steps"],
        )
    )
    print("%-16s %10s %10s %10s" % ("mode", "median ms", "min ms", "max ms"))
    for mode, m in doc["modes"].items():
        print("%-16s %10.2f %10.2f %10.2f" % (mode, m["median_ms"], m["min_ms"], m["max_ms"]))
    r = doc.get("ratio_overlap_to_after_backward")
    if r:
        print(
            "overlap / after_backward: median %.3f (min %.3f, max %.3f over rounds)"
            % (r["median"], r["min"], r["max"])
        )
    t = doc["timeline"]
    print(
        "one overlapped step (rank 0, ms from the start of backward): last gradient at %.2f, "
        "backward() returned at %.2f" % (t["compute_end_ms"], t["backward_return_ms"])
    )
    for i, b in enumerate(t["buckets"]):
        print(
            "  bucket %d (%.1f MB): all-reduce launched at %.2f, seen complete at %.2f%s"
            % (
                i,
                b["mb"],
                b["launch_ms"],
                b["done_ms"],
                "  <- inside backward" if b["launch_ms"] < t["compute_end_ms"] else "",
            )
        )


# ---------------------------------------------------------------------------------------------
# the ranks


def worker(args):
    import numpy as np

    import nbgrad as torch
    import nbgrad.distributed as dist
    from nbgrad import nn
    from nbgrad.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("mpi")
    rank, ws = dist.get_rank(), dist.get_world_size()

    def mlp():
        torch.manual_seed(0)
        layers = []
        for _ in range(args.layers):
            layers += [nn.Linear(args.hidden, args.hidden), nn.ReLU()]
        return nn.Sequential(*layers)

    x = torch.from_numpy(
        np.random.default_rng(rank).standard_normal((args.batch, args.hidden)).astype(np.float32)
    )
    ddp = DDP(mlp(), bucket_cap_mb=args.bucket_cap_mb)
    one_bucket = DDP(mlp(), bucket_cap_mb=1e6)
    plain = mlp()
    local = mlp()
    models = {"overlap": ddp, "after_backward": one_bucket, "local": local, "manual": plain}
    opts = {m: torch.optim.SGD(model.parameters(), lr=1e-4) for m, model in models.items()}

    def plain_step(mode):
        def step():
            opts[mode].zero_grad()
            models[mode](x).pow(2).mean().backward()
            opts[mode].step()

        return step

    def step_manual():
        opts["manual"].zero_grad()
        plain(x).pow(2).mean().backward()
        params = list(plain.parameters())
        flat = torch.cat([p.grad.reshape(-1) for p in params])
        dist.all_reduce(flat, op=dist.ReduceOp.AVG)
        off = 0
        for p in params:
            n = p.numel()
            p.grad.copy_(flat[off : off + n].reshape(p.shape))
            off += n
        opts["manual"].step()

    steps = {m: plain_step(m) for m in ("overlap", "after_backward", "local")}
    steps["manual"] = step_manual
    modes = [m for m in args.modes.split(",") if m]
    for m in modes:  # warm: kernels, buffers
        steps[m]()
        steps[m]()
    times = {m: [] for m in modes}
    for r in range(args.rounds):
        for m in modes if r % 2 == 0 else modes[::-1]:
            dist.barrier()
            t0 = time.perf_counter()
            for _ in range(args.steps):
                steps[m]()
            t = torch.tensor([(time.perf_counter() - t0) / args.steps], dtype=torch.float64)
            dist.all_reduce(t, op=dist.ReduceOp.MAX)  # the slowest rank sets the pace
            times[m].append(float(t) * 1e3)

    # one profiled overlapped step: its timeline and (optionally) a Chrome trace
    opts["overlap"].zero_grad()
    loss = ddp(x).pow(2).mean()
    dist.barrier()
    with torch.autograd.profiler.profile() as prof:
        t_bwd = time.perf_counter()
        loss.backward()
        t_ret = time.perf_counter()
    reducer = ddp.reducer
    _, t_compute_end, _, _, buckets = reducer.stats[-1]
    ms = lambda t: (t - t_bwd) * 1e3  # noqa: E731
    timeline = {
        "compute_end_ms": ms(t_compute_end),
        "backward_return_ms": ms(t_ret),
        "buckets": [{"launch_ms": ms(a), "done_ms": ms(b), "mb": n / 2**20} for a, b, n in buckets],
    }
    if rank == 0 and args.trace:
        events = prof.function_events
        t0 = min(e.start for e in events)
        prof.export_chrome_trace(args.trace)
        with open(args.trace) as f:
            trace = json.load(f)
        for i, (a, b, n) in enumerate(buckets):
            trace["traceEvents"].append(
                {
                    "name": "all_reduce bucket %d (%.1f MB)" % (i, n / 2**20),
                    "ph": "X",
                    "cat": "comm",
                    "ts": a * 1e6 - t0,
                    "dur": (b - a) * 1e6,
                    "pid": os.getpid(),
                    "tid": "mpi (launch to completion seen)",
                    "args": {},
                }
            )
        with open(args.trace, "w") as f:
            json.dump(trace, f)
    if rank == 0:
        summary = {
            m: {
                "median_ms": statistics.median(v),
                "min_ms": min(v),
                "max_ms": max(v),
                "rounds_ms": v,
            }
            for m, v in times.items()
        }
        doc = {
            "config": {
                "ranks": ws,
                "hidden": args.hidden,
                "layers": args.layers,
                "batch": args.batch,
                "steps": args.steps,
                "rounds": args.rounds,
                "bucket_cap_mb": args.bucket_cap_mb,
                "buckets": len(reducer.buckets),
                "grad_mb": sum(b.flat.nbytes for b in reducer.buckets) / 2**20,
            },
            "modes": summary,
            "timeline": timeline,
        }
        if "overlap" in times and "after_backward" in times:
            ratios = [a / b for a, b in zip(times["overlap"], times["after_backward"])]
            doc["ratio_overlap_to_after_backward"] = {
                "median": statistics.median(ratios),
                "min": min(ratios),
                "max": max(ratios),
            }
        print("BENCHDDP " + json.dumps(doc), flush=True)
    dist.destroy_process_group()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    if args.worker:
        worker(args)
        return 0
    doc = launch(args, [a for a in argv if a != "--json"])
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        report(doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
