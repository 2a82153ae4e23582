"""Long differential fuzz runs of nbgrad against PyTorch (tests/fuzz/graphs.py).

    .venv/bin/python scripts/fuzz.py --n 10000 [--seed S] [--ops unary,reduce,...]
                                     [--jobs J] [--no-shrink] [--json FILE]

Runs the random programs of seeds S .. S+n-1 on nbgrad and torch, shrinks every mismatch to
a minimal program and prints a summary: graphs run, mismatches by signature (``kind @ op``),
and one minimal program per signature, grouped by area; signatures listed in
tests/fuzz/test_fuzz.py's KNOWN are marked.  Exit status 1 when any mismatch is found
(``--allow-known``: only when one is not in KNOWN).

Programs run in worker processes (``--jobs`` of them, each over a slice of the seeds), so a
crash of the interpreter (a signal) is reported as a ``crash`` mismatch for the program that
was running, and the run goes on with the next seed.  ``--ops`` restricts the generator
groups (see ``GENERATORS`` in graphs.py: unary, nn_unary, scalar, binary, compare, logical,
where, reduce, view, copyshape, index, linalg, nn, create, inplace, hook, retain,
node_hook, detach_leaf, error, index_inplace, cast, out).
"""

import argparse
import json
import os
import subprocess
import sys
import time
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, ROOT)

AREAS = {
    "indexing/loader": (
        "getitem getitem_adv getitem_bool getitem_list getitem_pair getitem_mixed gather scatter "
        "scatter_add "
        "index_select masked_select nonzero embedding nll_loss cross_entropy index_inplace "
        "err_gather err_index_select err_index setitem setitem_t scatter_"
    ),
    "pointwise NaN/reductions": (
        "neg exp exp2 log log2 log1p expm1 sqrt rsqrt sin cos tan tanh sigmoid reciprocal erf "
        "square abs relu sign floor ceil round trunc gelu gelu_tanh silu softplus leaky_relu "
        "nn_relu nn_sigmoid nn_tanh pow powop rpow muls rmuls adds rsubs divs rdivs rem clamp "
        "clamp_min clamp_max clamp_kw add add_alpha sub sub_alpha mul div pow_t maximum minimum "
        "rem_t lerp lerp_t floor_divide eq ne lt le gt ge isnan isinf isfinite logical_and "
        "logical_or logical_xor logical_not and_op inv masked_fill where sum mean prod amax amin "
        "max min max_dim min_dim max_idx argmax argmin var std norm logsumexp cumsum sum_multi "
        "softmax log_softmax all any mse_loss l1_loss bce bce_logits layer_norm batch_norm "
        "normalize err_softmax_dim err_dim_sum err_dim_mean err_dim_softmax err_dim_cumsum "
        "err_dim_amax err_dim_max int_sqrt int_exp int_neg int_abs int_sum int_mean int_to "
        "int_sigmoid to_int to_bool"
    ),
    "shape/linalg/creation": (
        "view reshape flatten unflatten squeeze unsqueeze transpose t mT permute movedim expand "
        "expand_as broadcast_to narrow unbind split chunk cat stack flip roll tril triu repeat "
        "clone contiguous to sum_to_size broadcast_tensors matmul mm bmm dot mv outer einsum "
        "linear conv1d conv2d pad_constant pad_reflect pad_replicate pad_circular max_pool2d "
        "avg_pool2d zeros ones full arange eye linspace zeros_like ones_like full_like "
        "scalar_tensor tensor_scalar err_broadcast err_view err_reshape err_matmul err_mm_dtype "
        "err_cat err_transpose err_expand err_unflatten err_dim_flip err_dim_squeeze "
        "err_dim_unsqueeze err_int_grad"
    ),
    "autograd/in-place/hooks": (
        "add_ mul_ sub_ div_ copy_ iadd imul exp_ sin_ tanh_ sigmoid_ neg_ relu_ abs_ floor_ "
        "sqrt_ clamp_ zero_ fill_ pow_ tril_ masked_fill_ hook retain_grad detach node_prehook "
        "node_hook node_next_prehook node_post_acc out_exp out_add out_sum out_matmul out_cat "
        "detach_leaf err_leaf_inplace err_requires_grad backward final"
    ),
}
AREA_OF = {k: area for area, keys in AREAS.items() for k in keys.split()}


def area_of(sig, program_keys):
    """Which engineer's area a signature belongs to (a routing hint, not a diagnosis)."""
    kind, _, key = sig.partition(" @ ")
    kind, key = kind.split(" ")[0], key.split(" ")[0]
    if kind in ("stride", "grad-stride"):
        return "shape/linalg/creation"  # memory layout (suggest_memory_format rules)
    if key not in ("backward", "final"):
        return AREA_OF.get(key, "other")
    ops = [k for k in program_keys if k not in ("leaf", "backward", "stmt")]
    if any(AREA_OF.get(k) == "autograd/in-place/hooks" for k in ops) or not ops:
        return "autograd/in-place/hooks"
    return AREA_OF.get(ops[-1], "other")


def known_signatures():
    try:
        from fuzz.test_fuzz import KNOWN
    except Exception:  # pragma: no cover - pytest helpers missing: nothing is known
        return {}
    return {k.signature: k.item for k in KNOWN}


# ------------------------------------------------------------------------------------- worker


def worker(args):
    import torch
    from fuzz import graphs as G

    import nbgrad

    torch.set_num_threads(1)
    groups = args.ops.split(",") if args.ops else None
    out = sys.stdout
    for seed in range(args.start, args.stop):
        print(json.dumps({"start": seed}), file=out, flush=True)
        prog = G.generate(seed, groups)
        rec = {"seed": seed}
        try:
            m = G.check(prog, nbgrad, torch)
        except Exception as e:  # a failure of the runner itself: report, go on
            rec["error"] = "%s: %s" % (type(e).__name__, e)
            print(json.dumps(rec), file=out, flush=True)
            continue
        if m is not None:
            small, sm = (prog, m) if args.no_shrink else G.shrink(prog, m, nbgrad, torch)
            rec.update(
                signature=G.signature_of(small, sm),
                first=m.signature,
                detail=sm.detail,
                program=small.source(header=False),
                keys=small.keys(),
                full=prog.source(header=False),
            )
        print(json.dumps(rec), file=out, flush=True)


def run_slice(args, start, stop, results, progress):
    """Run seeds [start, stop) in worker processes, restarting after a crash."""
    seed = start
    while seed < stop:
        cmd = [sys.executable, os.path.abspath(__file__), "--worker"]
        cmd += ["--start", str(seed), "--stop", str(stop)]
        if args.ops:
            cmd += ["--ops", args.ops]
        if args.no_shrink:
            cmd.append("--no-shrink")
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        current = None
        for line in p.stdout:
            rec = json.loads(line)
            if "start" in rec:
                current = rec["start"]
                continue
            results.append(rec)
            progress(rec)
            current = None
            seed = rec["seed"] + 1
        rc = p.wait()
        if current is not None:  # the worker died inside a program
            from fuzz import graphs as G

            prog = G.generate(current, args.ops.split(",") if args.ops else None)
            lib, small = shrink_crash(prog)
            rec = {
                "seed": current,
                "signature": "crash in %s (exit %d)" % (lib, rc),
                "first": "crash",
                "detail": "the interpreter died (%s)" % ("signal %d" % -rc if rc < 0 else rc),
                "program": small.source(header=False),
                "keys": small.keys(),
                "full": prog.source(header=False),
            }
            results.append(rec)
            progress(rec)
            seed = current + 1
        elif rc != 0 and seed < stop:
            print("worker failed with exit status %d at seed %d" % (rc, seed), file=sys.stderr)
            seed += 1


def crashes(prog, lib):
    """Does running ``prog`` on ``lib`` kill the interpreter (a fresh one, with a signal)?"""
    cmd = [sys.executable, os.path.abspath(__file__), "--replay", lib]
    try:
        r = subprocess.run(cmd, input=prog.source(), capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return False
    return r.returncode < 0


def shrink_crash(prog, budget=60):
    """(library, smallest program found) for a program that crashed a worker: statements
    are removed while the crash persists (each try is a fresh interpreter)."""
    from fuzz import graphs as G

    for lib in ("nbgrad", "torch"):
        if crashes(prog, lib):
            break
    else:
        return "worker only (not reproduced alone)", prog
    calls = 0
    changed = True
    while changed and calls < budget:
        changed = False
        i = len(prog.stmts) - 1
        while i >= 0 and calls < budget:
            cand = G._remove(prog, [i])
            cand = G._remove(cand, G._unused_leaves(cand))
            if len(cand.stmts) < len(prog.stmts):
                calls += 1
                if crashes(cand, lib):
                    prog, changed = cand, True
            i = min(i - 1, len(prog.stmts) - 1)
    return lib, prog


def replay(lib_name):
    import importlib

    from fuzz import graphs as G

    G.run(G.parse(sys.stdin.read()), importlib.import_module(lib_name))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1000, help="number of random graphs")
    ap.add_argument("--seed", type=int, default=0, help="first seed")
    ap.add_argument("--ops", default=None, help="comma-separated generator groups")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument("--no-shrink", action="store_true", help="report unshrunk programs")
    ap.add_argument("--json", default=None, help="write every mismatch record to this file")
    ap.add_argument("--allow-known", action="store_true", help="exit 0 if all are in KNOWN")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--replay", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--start", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--stop", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    if args.replay:
        return replay(args.replay)

    t0 = time.time()
    results = []
    done = [0]

    def progress(rec):
        done[0] += 1
        if done[0] % 250 == 0:
            bad = sum(1 for r in results if "signature" in r)
            print(
                "%d/%d graphs, %d mismatches, %.0f s" % (done[0], args.n, bad, time.time() - t0),
                file=sys.stderr,
                flush=True,
            )

    import threading

    jobs = max(1, args.jobs)
    step = -(-args.n // jobs)
    threads = []
    for j in range(jobs):
        a = args.seed + j * step
        b = min(args.seed + args.n, a + step)
        if a >= b:
            continue
        t = threading.Thread(target=run_slice, args=(args, a, b, results, progress))
        t.start()
        threads.append(t)
    for t in threads:
        t.join()

    bad = [r for r in results if "signature" in r]
    errors = [r for r in results if "error" in r]
    known = known_signatures()
    by_sig = defaultdict(list)
    for r in bad:
        by_sig[r["signature"]].append(r)

    print()
    print(
        "graphs run: %d (seeds %d..%d), %.0f s"
        % (len(results), args.seed, args.seed + args.n - 1, time.time() - t0)
    )
    print("mismatching graphs: %d, distinct signatures: %d" % (len(bad), len(by_sig)))
    if errors:
        print(
            "runner errors: %d (first: seed %s %s)"
            % (len(errors), errors[0]["seed"], errors[0]["error"])
        )
    by_area = defaultdict(list)
    for sig, rs in by_sig.items():
        best = min(rs, key=lambda r: (len(r["program"]), r["seed"]))
        by_area[area_of(sig, best["keys"])].append((sig, rs, best))
    order = list(AREAS) + ["other"]
    for area in sorted(by_area, key=lambda a: order.index(a) if a in order else 99):
        print("\n## %s" % area)
        for sig, rs, best in sorted(by_area[area], key=lambda e: -len(e[1])):
            mark = "  [KNOWN: %s]" % known[sig] if sig in known else ""
            print("\n### %s  (%d graphs, e.g. seed %d)%s" % (sig, len(rs), best["seed"], mark))
            print("# " + best["detail"].replace("\n", " ")[:300])
            print(best["program"])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(bad, f, indent=1)
    unknown = [s for s in by_sig if s not in known]
    if bad and (not args.allow_known or unknown):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
