"""The package's layers only import downward (docs/design.md, "The layers").

Static: every module-level import of an nbgrad module must point to the same or a lower layer,
and every function-local import of an nbgrad module (a deferred import) must say why on its
line with a ``# cycle: <reason>`` comment.
"""

import ast
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent / "nbgrad"

# most specific prefix wins; a module's layer is that of its longest matching prefix
LAYERS = [
    (
        "leaf",
        [
            "nbgrad._config",
            "nbgrad._flags",
            "nbgrad._fpstate",
            "nbgrad.dtypes",
            "nbgrad.device",
            "nbgrad.grad_mode",
            "nbgrad.random",
            "nbgrad.utils.hooks",
            "nbgrad._repr",
            "nbgrad._missing",
            "nbgrad._devarray",
        ],
    ),
    ("tensor", ["nbgrad._tensor"]),
    (
        "graph",
        [
            "nbgrad.autograd.graph",
            "nbgrad.autograd.saved",
            "nbgrad.autograd.anomaly_mode",
            "nbgrad.autograd.batching",
            "nbgrad.autograd.dual",
            "nbgrad.autograd.profiler",
            "nbgrad.creation",
        ],
    ),
    ("kernels", ["nbgrad.kernels"]),
    ("ops", ["nbgrad.ops"]),
    ("autograd", ["nbgrad.autograd"]),
    ("surface", ["nbgrad._tensor_methods", "nbgrad.cuda"]),
    (
        "library",
        [
            "nbgrad.nn",
            "nbgrad.distributed",
            "nbgrad.optim",
            "nbgrad.utils",
            "nbgrad.serialization",
            "nbgrad._torch_format",
            "nbgrad.compile",
        ],
    ),
    ("top", ["nbgrad", "nbgrad.bench", "nbgrad.__main__", "nbgrad._warmup", "nbgrad.testing"]),
]
RANK = {p: i for i, (_, prefixes) in enumerate(LAYERS) for p in prefixes}


def layer(mod):
    parts = mod.split(".")
    for n in range(len(parts), 0, -1):
        p = ".".join(parts[:n])
        if p in RANK:
            return RANK[p]
    raise KeyError(mod)


def modules():
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        yield ".".join(parts), path


def _targets(node, mod, is_pkg):
    """Absolute nbgrad modules an import statement loads."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.startswith("nbgrad")]
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    if node.level:
        base = base[: len(base) - node.level + 1]
        name = ".".join(base + ([node.module] if node.module else []))
    else:
        name = node.module or ""
    if not name.startswith("nbgrad"):
        return []
    out = [name]
    for a in node.names:  # "from . import x" / "from .ops import api" load submodules
        sub = ROOT.parent / pathlib.Path(*(name + "." + a.name).split("."))
        if sub.with_suffix(".py").exists() or (sub / "__init__.py").exists():
            out.append(name + "." + a.name)
    return [t for t in out if t != "nbgrad" or node.names[0].name == "*"] or out


def _imports(tree, mod, is_pkg):
    """(line, target, deferred) for every import of an nbgrad module."""
    found = []

    def visit(node, deferred):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for t in _targets(child, mod, is_pkg):
                    found.append((child.lineno, t, deferred))
            visit(
                child,
                deferred or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)),
            )

    visit(tree, False)
    return found


MODULES = list(modules())


@pytest.mark.parametrize("mod,path", MODULES, ids=[m for m, _ in MODULES])
def test_imports_point_down(mod, path):
    src = path.read_text()
    lines = src.splitlines()
    tree = ast.parse(src)
    me = layer(mod)
    bad = []
    for line, target, deferred in _imports(tree, mod, path.name == "__init__.py"):
        if target == mod or (mod == "nbgrad" and target.startswith("nbgrad")):
            continue
        if deferred:
            # a deferred import says why: an import cycle, or NOTE [lazy imports] (it keeps
            # ``import nbgrad`` lean; then it must still point down or sideways)
            text = lines[line - 1]
            if "# lazy:" in text and layer(target) > me:
                bad.append(
                    "line %d: lazy import of %s (layer %s) from layer %s"
                    % (line, target, LAYERS[layer(target)][0], LAYERS[me][0])
                )
            elif "# cycle:" not in text and "# lazy:" not in text:
                bad.append(
                    "line %d: deferred import of %s without a '# cycle: <reason>' or "
                    "'# lazy: <reason>' comment" % (line, target)
                )
        elif layer(target) > me:
            bad.append(
                "line %d: %s (layer %s) imports %s (layer %s)"
                % (line, mod, LAYERS[me][0], target, LAYERS[layer(target)][0])
            )
    assert not bad, "\n".join(bad)


def test_import_is_lazy_about_nn_optim_and_utils():
    # NOTE [lazy imports]: import nbgrad loads the core only; the rest loads on first use
    import subprocess

    code = (
        "import sys, nbgrad as T\n"
        "heavy = ('nbgrad.nn', 'nbgrad.optim', 'nbgrad.testing', 'nbgrad.utils.data',\n"
        "         'nbgrad._torch_format', 'nbgrad.utils.checkpoint')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
        "print(type(T.nn.Linear(2, 3)).__name__, T.optim.SGD.__name__,\n"
        "      T.utils.data.DataLoader.__name__, T.utils.checkpoint.checkpoint.__name__,\n"
        "      hasattr(T._VF, 'lstm'), 'nn' in dir(T))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out == ["[]", "Linear SGD DataLoader checkpoint True True"]
