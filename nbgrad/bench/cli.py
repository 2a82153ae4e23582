"""``nbgrad-bench``: time the shared workloads (``nbgrad.bench.workloads``), optionally next to
PyTorch in the same process, and print a table (``rich`` when installed, plain text without).

See docs/benchmarks.md for the options, the timing method and the ``--json`` schema.
"""

import argparse
import datetime
import json
import os
import platform
import sys
import time

import numba
import numpy as np

import nbgrad

from . import schema, timing, workloads as W

__all__ = ["main", "machine_info", "build_parser"]

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2
_THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
_REEXEC_MARK = "NBGRAD_BENCH_REEXEC"
_SCALE = {"s": 1.0, "ms": 1e3, "us": 1e6}


def build_parser(prog="nbgrad-bench"):
    p = argparse.ArgumentParser(
        prog=prog,
        description="Time nbgrad's benchmark workloads (the same ones asv_bench runs), "
        "optionally next to PyTorch in the same process.",
        epilog="Workloads: nbgrad-bench --list.  Docs: docs/benchmarks.md.",
    )
    p.add_argument(
        "-k",
        dest="patterns",
        metavar="PATTERN",
        action="append",
        default=[],
        help="run the workloads whose name, title or group contains PATTERN (case-insensitive; "
        "wildcards * ? [] allowed); repeatable, any match runs",
    )
    p.add_argument("--list", action="store_true", help="list the workloads and exit")
    p.add_argument(
        "--quick",
        action="store_true",
        help="small sizes, 3 rounds, 5 ms per measurement (a smoke run, not for reporting)",
    )
    p.add_argument(
        "--repeat", type=int, metavar="N", help="rounds per workload (default 7, --quick 3)"
    )
    p.add_argument(
        "--target",
        type=float,
        metavar="SECONDS",
        help="minimum duration of one measurement; inner loops are calibrated to it "
        "(default 0.02, --quick 0.005)",
    )
    p.add_argument(
        "--threads",
        type=int,
        metavar="N",
        help="run both libraries with N threads: numba.set_num_threads, torch.set_num_threads, "
        "BLAS/OpenMP pools through threadpoolctl (else OMP/OPENBLAS/MKL_NUM_THREADS and a "
        "restart); fresh-process workloads get the same environment",
    )
    p.add_argument(
        "--compare",
        action="append",
        choices=["torch"],
        default=[],
        help="also measure PyTorch, alternating rounds with nbgrad in this process; the ratio "
        "column is the median of the per-round nbgrad/torch ratios [min, max]",
    )
    p.add_argument(
        "--clock",
        choices=sorted(timing.CLOCKS),
        default="wall",
        help="wall: time.perf_counter (default); thread: time.thread_time, per-thread CPU time, "
        "robust to other processes but blind to worker threads (use with --threads 1)",
    )
    p.add_argument("--json", metavar="FILE", help="also write the results as JSON (schema: docs)")
    p.add_argument(
        "--profile",
        metavar="NAME",
        help="run workload NAME under nbgrad.autograd.profiler and print its key_averages table "
        "(with --compare torch, PyTorch's table too); exits 2 while nbgrad has no profiler",
    )
    p.add_argument("--plain", action="store_true", help="plain text even when rich is installed")
    return p


# ---------------------------------------------------------------------------------------------
# machine and threads


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _blas_name():
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return ("%s %s" % (blas.get("name", ""), blas.get("version", ""))).strip() or None
    except Exception:
        return None


def _threadpoolctl():
    try:
        import threadpoolctl
    except ImportError:
        return None
    return threadpoolctl


def _blas_threads():
    tpc = _threadpoolctl()
    if tpc is not None:
        for info in tpc.threadpool_info():
            if info.get("user_api") == "blas":
                return info.get("num_threads")
    value = os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS")
    return int(value) if value and value.isdigit() else None


def machine_info(torch=None, requested=None, how=()):
    """The machine and library description printed above the table and stored in the JSON."""
    try:
        available = len(os.sched_getaffinity(0))
    except AttributeError:
        available = os.cpu_count()
    try:
        import importlib.metadata as md

        torch_version = torch.__version__ if torch is not None else md.version("torch")
    except Exception:
        torch_version = None
    return {
        "cpu": _cpu_model(),
        "logical_cpus": os.cpu_count(),
        "available_cpus": available,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "versions": {
            "nbgrad": nbgrad.__version__,
            "numpy": np.__version__,
            "numba": numba.__version__,
            "torch": torch_version,
        },
        "blas": _blas_name(),
        "threads": {
            "requested": requested,
            "numba": numba.get_num_threads(),
            "torch": torch.get_num_threads() if torch is not None else None,
            "blas": _blas_threads(),
            "how": list(how),
        },
    }


def set_threads(n, torch, allow_restart, say):
    """Pin every thread pool of this process (and of the fresh processes it starts) to ``n``.
    Returns ``(what was done, a function that undoes it)``."""
    how, undo = [], []
    extra = {k: str(n) for k in _THREAD_ENV + ("NUMBA_NUM_THREADS",)}
    saved_env = dict(W.FreshProcess.extra_env)
    W.FreshProcess.extra_env.update(extra)
    undo.append(
        lambda: (W.FreshProcess.extra_env.clear(), W.FreshProcess.extra_env.update(saved_env))
    )
    k = min(n, numba.config.NUMBA_NUM_THREADS)
    before = numba.get_num_threads()
    numba.set_num_threads(k)
    undo.append(lambda: numba.set_num_threads(before))
    how.append("numba.set_num_threads(%d)" % k)
    if torch is not None:
        torch_before = torch.get_num_threads()
        torch.set_num_threads(n)
        undo.append(lambda: torch.set_num_threads(torch_before))
        how.append("torch.set_num_threads(%d)" % n)
    tpc = _threadpoolctl()
    if tpc is not None:
        limits = tpc.threadpool_limits(limits=n)
        undo.append(limits.restore_original_limits)
        how.append("threadpoolctl.threadpool_limits(%d)" % n)
    elif all(os.environ.get(v) == str(n) for v in _THREAD_ENV):
        how.append("%s=%d (environment at start-up)" % ("/".join(_THREAD_ENV), n))
    elif allow_restart and not os.environ.get(_REEXEC_MARK):
        # BLAS pools read their size when numpy is imported, which nbgrad already did: restart
        # the same command with the variables set
        env = dict(os.environ, **{v: str(n) for v in _THREAD_ENV}, **{_REEXEC_MARK: "1"})
        say("threadpoolctl is not installed: restarting with %s=%d" % ("/".join(_THREAD_ENV), n))
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(sys.executable, [sys.executable] + sys.orig_argv[1:], env)
    else:
        how.append("BLAS threads NOT set (install threadpoolctl or set OPENBLAS_NUM_THREADS)")

    def restore():
        for f in reversed(undo):
            f()

    return how, restore


# ---------------------------------------------------------------------------------------------
# output


def _rich(plain):
    if plain:
        return None
    try:
        import rich  # noqa: F401
    except ImportError:
        return None
    from rich.console import Console

    out = Console(width=None if sys.stdout.isatty() else 200, highlight=False)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    return out, err


def _fmt(value, unit):
    v = value * _SCALE[unit]
    if abs(v) >= 100:
        return "%.0f %s" % (v, unit)
    if abs(v) >= 10:
        return "%.1f %s" % (v, unit)
    return "%.2f %s" % (v, unit)


def _fmt_ratio(r):
    return "%.2f [%.2f, %.2f]" % (r["median"], r["min"], r["max"])


def _header_lines(info, settings):
    v, t = info["versions"], info["threads"]
    lines = [
        "nbgrad-bench %s on %s (%s logical CPUs, %s available), %s"
        % (
            v["nbgrad"],
            info["cpu"],
            info["logical_cpus"],
            info["available_cpus"],
            info["platform"],
        ),
        "Python %s, numpy %s (%s), numba %s%s"
        % (
            info["python"],
            v["numpy"],
            info["blas"] or "BLAS unknown",
            v["numba"],
            ", torch %s" % v["torch"] if "torch" in settings["compare"] else "",
        ),
        "threads: numba %s, BLAS %s%s%s"
        % (
            t["numba"],
            t["blas"] if t["blas"] is not None else "default",
            ", torch %s" % t["torch"] if t["torch"] is not None else "",
            " (%s)" % "; ".join(t["how"]) if t["how"] else " (library defaults)",
        ),
        "%s sizes, %d rounds, >= %g ms per measurement, %s clock; ratio = median of per-round "
        "nbgrad/other [min, max]"
        % (
            "quick" if settings["quick"] else "full",
            settings["repeat"],
            settings["target_s"] * 1e3,
            settings["clock"],
        ),
    ]
    return lines


def _columns(rows, compare):
    cols = ["workload", "what", "nbgrad"]
    if "torch" in compare:
        cols += ["torch", "nbgrad/torch"]
    if any("numpy" in r["results"] for r in rows):
        cols += ["numpy", "nbgrad/numpy"]
    return cols


def _cells(row, cols):
    cells = {"workload": row["name"], "what": row["title"]}
    if row["status"] != "ok":
        cells["nbgrad"] = row["status"] + " (below)"
    for lib in ("nbgrad", "torch", "numpy"):
        if lib in row["results"]:
            cells[lib] = _fmt(row["results"][lib]["median"], row["unit"])
        elif lib in row["skipped"] and lib != "nbgrad":
            cells[lib] = "n/a"
        if lib in row["ratios"]:
            cells["nbgrad/" + lib] = _fmt_ratio(row["ratios"][lib])
    return [cells.get(c, "") for c in cols]


def print_table(rows, compare, console=None):
    cols = _columns(rows, compare)
    if console is not None:
        from rich import box
        from rich.table import Table
        from rich.text import Text  # cells are text, not markup ("[0.9, 1.1]")

        table = Table(box=box.SIMPLE_HEAD)
        for c in cols:
            table.add_column(c, justify="left" if c in ("workload", "what") else "right")
        for row in rows:
            table.add_row(*map(Text, _cells(row, cols)))
        console.print(table)
    else:
        body = [_cells(r, cols) for r in rows]
        widths = [max(len(c), *(len(b[i]) for b in body)) for i, c in enumerate(cols)]
        fmt = "  ".join(
            ("%%-%ds" if c in ("workload", "what") else "%%%ds") % w for c, w in zip(cols, widths)
        )
        print(fmt % tuple(cols))
        print("  ".join("-" * w for w in widths))
        for b in body:
            print((fmt % tuple(b)).rstrip())
    for row in rows:
        if row["status"] != "ok":
            print("%s %s: %s" % (row["name"], row["status"], row["reason"]))
        for lib, reason in row["skipped"].items():
            if lib != "nbgrad" and lib in compare:
                print("%s: %s skipped: %s" % (row["name"], lib, reason))


def print_list(selected, console=None):
    cols = ["workload", "group", "also", "what", "--quick size"]
    rows, notes = [], []
    for w in selected:
        reason = w.skip_reason(nbgrad)
        if reason:
            notes.append("%s is skipped: %s" % (w.name, reason))
        if w.quick_test:
            notes.append("%s is not in the quick test: %s" % (w.name, w.quick_test))
        full, quick = w.params(False), w.params(True)
        small = ", ".join("%s=%s" % (k, v) for k, v in quick.items() if full.get(k) != v)
        also = ", ".join(w.libraries()[1:]) or "-"
        rows.append([w.name, w.group, also, w.label(), small or "same"])
    if console is not None:
        from rich import box
        from rich.table import Table
        from rich.text import Text  # cells are text, not markup ("[0.9, 1.1]")

        table = Table(box=box.SIMPLE_HEAD)
        for c in cols:
            table.add_column(c)
        for r in rows:
            table.add_row(*map(Text, r))
        console.print(table)
    else:
        widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
        print("  ".join("%-*s" % (w, c) for w, c in zip(widths, cols)).rstrip())
        for r in rows:
            print("  ".join("%-*s" % (w, c) for w, c in zip(widths, r)).rstrip())
    for note in notes:
        print(note)


# ---------------------------------------------------------------------------------------------
# running


def _row(w, quick):
    return {
        "name": w.name,
        "title": w.label(quick),
        "group": w.group,
        "unit": w.unit,
        "status": "ok",
        "reason": None,
        "results": {},
        "ratios": {},
        "skipped": {},
    }


def run(selected, libs, settings, progress=None):
    """Measure ``selected`` workloads; ``libs`` maps a library name to its module (None: numpy).
    Returns the JSON rows."""
    rows = []
    for i, w in enumerate(selected):
        row = _row(w, settings["quick"])
        use = {}
        for name, T in libs.items():
            if name == "numpy" and not w.numpy:
                continue
            reason = w.skip_reason(T)
            if reason:
                row["skipped"][name] = reason
            else:
                use[name] = T
        if "nbgrad" not in use:
            row["status"], row["reason"] = "skipped", row["skipped"].get("nbgrad", "n/a")
        else:
            if progress is not None:
                progress.start(i, w, settings["repeat"])
            try:
                out = timing.run_workload(
                    w,
                    use,
                    quick=settings["quick"],
                    repeat=settings["repeat"],
                    target=settings["target_s"],
                    clock=settings["clock"],
                    on_round=progress.advance if progress is not None else None,
                )
                row["results"], row["ratios"] = out["results"], out["ratios"]
            except Exception as e:  # report it and go on with the others
                row["status"], row["reason"] = "error", "%s: %s" % (type(e).__name__, e)
        rows.append(row)
        if progress is not None:
            progress.done(i, w, row)
    return rows


class _PlainProgress:
    def __init__(self, total):
        self.total = total
        self.t0 = None

    def start(self, i, w, rounds):
        self.t0 = time.perf_counter()

    def advance(self, r):
        pass

    def done(self, i, w, row):
        if row["status"] == "ok":
            what = _fmt(row["results"]["nbgrad"]["median"], row["unit"])
            if "torch" in row["ratios"]:
                what += ", x%.2f torch" % row["ratios"]["torch"]["median"]
            what += " (%.1f s)" % (time.perf_counter() - self.t0)
        else:
            what = "%s: %s" % (row["status"], row["reason"])
        print(
            "[%*d/%d] %s: %s" % (len(str(self.total)), i + 1, self.total, w.name, what),
            file=sys.stderr,
            flush=True,
        )


class _RichProgress:
    def __init__(self, total, console, repeat):
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self.all = self.progress.add_task("workloads", total=total)
        self.one = self.progress.add_task("", total=repeat)

    def __enter__(self):
        self.progress.__enter__()
        return self

    def __exit__(self, *exc):
        return self.progress.__exit__(*exc)

    def start(self, i, w, rounds):
        self.progress.reset(self.one, total=rounds, description="%s (rounds)" % w.name)

    def advance(self, r):
        self.progress.advance(self.one)

    def done(self, i, w, row):
        self.progress.advance(self.all)


def profile_workload(name, quick, torch, target, say):
    """Print the profiler table of one workload (nbgrad, then torch when given)."""
    import importlib

    try:
        w = W.get(name)
    except KeyError as e:
        say(str(e.args[0]))
        return EXIT_USAGE
    if w.self_timed:
        say("%s runs in a fresh process and cannot be profiled in this one" % name)
        return EXIT_USAGE
    if W._profiler(nbgrad) is None:
        say(
            "nbgrad.autograd.profiler.profile is not available in this nbgrad yet: --profile "
            "needs it (PyTorch's torch.autograd.profiler API)"
        )
        return EXIT_USAGE
    for T in [nbgrad] + ([torch] if torch is not None and w.torch else []):
        mod = importlib.import_module(T.__name__ + ".autograd.profiler")
        record = getattr(mod, "record_function", None)
        fns = w.setup(T, quick)
        try:
            numbers = {p: min(timing.calibrate(fn, target), 50) for p, fn in fns.items()}
            with mod.profile() as prof:
                for p, fn in fns.items():
                    with record("part: " + p) if record is not None else _null():
                        for _ in range(numbers[p]):
                            fn()
        finally:
            W.close(fns)
        print("== %s: %s, %s" % (T.__name__, w.name, w.label(quick)))
        print(
            ", ".join("part %s: %d calls" % kv for kv in numbers.items()),
        )
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=30))
    return EXIT_OK


def _null():
    import contextlib

    return contextlib.nullcontext()


def main(argv=None, prog="nbgrad-bench", exclude_groups=(), allow_restart=None):
    """Entry point of ``nbgrad-bench``.  ``argv=None``: ``sys.argv[1:]``, and then
    ``--threads`` may restart the process (``allow_restart``) when threadpoolctl is missing.
    ``exclude_groups``: groups left out unless ``-k`` is given."""
    if allow_restart is None:
        allow_restart = argv is None
    args = build_parser(prog).parse_args(sys.argv[1:] if argv is None else argv)
    consoles = _rich(args.plain)
    out_console, err_console = consoles if consoles else (None, None)

    def say(msg):
        if err_console is not None:
            err_console.print(msg, markup=False)
        else:
            print(msg, file=sys.stderr)

    selected = W.select(args.patterns)
    if not args.patterns and exclude_groups:
        selected = [w for w in selected if w.group not in exclude_groups]
    if args.list:
        print_list(selected, out_console)
        return EXIT_OK
    if not selected:
        say("no workload matches %s (see --list)" % " or ".join(map(repr, args.patterns)))
        return EXIT_USAGE
    if args.repeat is not None and args.repeat < 1:
        say("--repeat must be at least 1")
        return EXIT_USAGE
    if args.threads is not None and args.threads < 1:
        say("--threads must be at least 1")
        return EXIT_USAGE

    torch = None
    if "torch" in args.compare:
        try:
            import torch
        except ImportError:
            say("--compare torch: PyTorch is not installed")
            return EXIT_USAGE
    how, restore = [], None
    if args.threads is not None:
        how, restore = set_threads(args.threads, torch, allow_restart, say)
    try:
        return _measure(args, argv, prog, selected, torch, how, say, out_console, err_console)
    finally:
        if restore is not None:
            restore()


def _measure(args, argv, prog, selected, torch, how, say, out_console, err_console):
    settings = {
        "quick": args.quick,
        "repeat": args.repeat or (3 if args.quick else 7),
        "target_s": args.target or (0.005 if args.quick else 0.02),
        "clock": args.clock,
        "compare": (["torch"] if torch is not None else []) + ["numpy"],
        "patterns": list(args.patterns),
    }
    if args.profile:
        return profile_workload(args.profile, args.quick, torch, settings["target_s"], say)

    info = machine_info(torch, args.threads, how)
    for line in _header_lines(info, settings):
        say(line)
    t0 = time.perf_counter()
    nbgrad.warmup()
    say("kernels compiled or loaded in %.2f s" % (time.perf_counter() - t0))

    libs = {"nbgrad": nbgrad}
    if torch is not None:
        libs["torch"] = torch
    libs["numpy"] = None
    if err_console is not None and err_console.is_terminal:
        with _RichProgress(len(selected), err_console, settings["repeat"]) as progress:
            rows = run(selected, libs, settings, progress)
    else:
        rows = run(selected, libs, settings, _PlainProgress(len(selected)))
    print_table(rows, settings["compare"], out_console)

    if args.json:
        doc = {
            "schema": schema.SCHEMA_ID,
            "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "command": [prog] + list(sys.argv[1:] if argv is None else argv),
            "machine": info,
            "settings": settings,
            "workloads": rows,
        }
        schema.validate(doc)
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        say("results written to %s" % args.json)
    return EXIT_ERROR if any(r["status"] == "error" for r in rows) else EXIT_OK
