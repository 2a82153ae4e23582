"""Write docs/api-scope.md: the PyTorch API nbgrad provides, read from the package itself.

python scripts/gen_api_scope.py          # rewrite the page
python scripts/gen_api_scope.py --check  # exit 1 if the page is out of date (a test runs it)
"""

import inspect
import os
import sys
import types

import nbgrad
import nbgrad.utils.safetensors as _safetensors
from nbgrad.ops.registry import FUNCTION, INPLACE, METHOD, OUT, REGISTRY

PAGE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "api-scope.md"
)


def _public(ns, own=True):
    """Public names of ``ns``; with ``own``, only what it defines or lists in ``__all__`` (not
    what it merely imports)."""
    names = []
    for n in dir(ns):
        obj = getattr(ns, n)
        listed = n in getattr(ns, "__all__", ())
        constant = n.isupper() and len(n) > 1 and not listed and not inspect.isclass(obj)
        if n.startswith("_") or isinstance(obj, types.ModuleType) or constant:
            continue  # private names, submodules, constants
        home = getattr(obj, "__module__", None)
        if own and not listed and home and not home.startswith(ns.__name__):
            continue
        names.append(n)
    return sorted(names)


def _names(names):
    return ", ".join("`%s`" % n for n in names) or "(none)"


def _ops_table():
    rows = [
        "| op | public names | Tensor method | in-place | `out=` | `grad_fn` |",
        "|---|---|---|---|---|---|",
    ]
    for name in sorted(REGISTRY):
        op = REGISTRY[name]
        if name.startswith("elementwise.") or not (op.variants or op.differentiable):
            continue
        nodes = sorted({c.__name__ for c in op.nodes.values()}) if op.nodes else ["no gradient"]
        surface = _names(op.public_names) if FUNCTION in op.variants else "(internal)"
        rows.append(
            "| `%s` | %s | %s | %s | %s | %s |"
            % (
                name,
                surface,
                "yes" if METHOD in op.variants else "",
                "yes" if INPLACE in op.variants else "",
                "yes" if OUT in op.variants else "",
                ", ".join(nodes),
            )
        )
    return rows


def render():
    nn, F, optim = nbgrad.nn, nbgrad.nn.functional, nbgrad.optim
    sections = [
        ("`nbgrad` (`torch`)", [n for n in _public(nbgrad, own=False) if n != "REGISTRY"]),
        ("`nbgrad.Tensor` (`torch.Tensor`) methods and attributes", _public(nbgrad.Tensor, False)),
        ("`nbgrad.autograd`", _public(nbgrad.autograd)),
        ("`nbgrad.autograd.functional`", _public(nbgrad.autograd.functional)),
        ("`nbgrad.autograd.forward_ad`", _public(nbgrad.autograd.forward_ad)),
        ("`nbgrad.autograd.graph`", _public(nbgrad.autograd.graph)),
        ("`nbgrad.nn`", [n for n in _public(nn) if inspect.isclass(getattr(nn, n))]),
        ("`nbgrad.nn.functional`", sorted(F.__all__)),
        ("`nbgrad.nn.init`", _public(nbgrad.nn.init)),
        ("`nbgrad.optim`", _public(optim)),
        (
            "`nbgrad.optim.lr_scheduler`",
            [
                n
                for n in _public(optim.lr_scheduler)
                if inspect.isclass(getattr(optim.lr_scheduler, n))
            ],
        ),
        ("`nbgrad.utils.data`", _public(nbgrad.utils.data)),
        ("`nbgrad.utils.dlpack`", _public(nbgrad.utils.dlpack)),
        ("`nbgrad.utils.safetensors` (`safetensors.torch`)", _public(_safetensors)),
        ("`nbgrad.cuda`", _public(nbgrad.cuda)),
        ("`nbgrad.distributed` (MPI backend)", sorted(nbgrad.distributed.__all__)),
        ("`nbgrad.nn.parallel`", _public(nbgrad.nn.parallel)),
    ]
    out = [
        "# API scope",
        "",
        "Generated from the installed package by `scripts/gen_api_scope.py` (a test fails when",
        "this page is out of date). A name listed here exists; how it behaves is PyTorch 2.13's,",
        "checked by the test suite (see [API coverage](api.md)). A `torch` name missing here",
        "raises an `AttributeError` that says nbgrad does not provide it yet.",
        "",
    ]
    for title, names in sections:
        out += ["## %s" % title, "", _names(names), ""]
    out += (
        [
            "## Ops in the registry",
            "",
            "Each op is declared once (`nbgrad/ops/registry.py`); its surface and node names are",
            "read from that declaration.",
            "",
        ]
        + _ops_table()
        + [""]
    )
    return "\n".join(out)


def main(argv):
    text = render()
    if "--check" in argv:
        with open(PAGE) as f:
            if f.read() != text:
                print("docs/api-scope.md is out of date: run python scripts/gen_api_scope.py")
                return 1
        return 0
    with open(PAGE, "w") as f:
        f.write(text)
    print("wrote", PAGE)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
