"""Docs that are generated from the package stay current, and missing PyTorch names say so."""

import ast
import inspect
import os
import subprocess
import sys

import pytest

import nbgrad

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_api_scope_page_is_current():
    r = subprocess.run(
        [sys.executable, os.path.join(ROOT, "scripts", "gen_api_scope.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize(
    "namespace,name,torch_name",
    [
        (nbgrad, "fft", "torch.fft"),
        (nbgrad.nn, "Transformer", "torch.nn.Transformer"),
        (nbgrad.optim, "Rprop", "torch.optim.Rprop"),
    ],
)
def test_missing_torch_names_say_so(namespace, name, torch_name):
    with pytest.raises(AttributeError, match="nbgrad does not provide %s" % torch_name):
        getattr(namespace, name)
    assert not hasattr(namespace, name)


# -- type stub of the Tensor class (nbgrad/_tensor.pyi, written by scripts/gen_stubs.py) ---------


def test_tensor_stub_is_current():
    r = subprocess.run(
        [sys.executable, os.path.join(ROOT, "scripts", "gen_stubs.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stdout + r.stderr


def _stub_classes():
    with open(os.path.join(ROOT, "nbgrad", "_tensor.pyi")) as f:
        tree = ast.parse(f.read())
    classes = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names = set()
            for m in node.body:
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names.add(m.name)
                elif isinstance(m, ast.AnnAssign):
                    names.add(m.target.id)
            classes[node.name] = (node, names)
    return tree, classes


def test_tensor_stub_declares_every_public_attribute():
    from nbgrad._tensor import Size

    tree, classes = _stub_classes()
    for cls in (nbgrad.Tensor, Size):
        _, declared = classes[cls.__name__]
        public = {n for n in dir(cls) if not n.startswith("_")}
        own_dunders = {
            n
            for n in vars(cls)
            if n.startswith("__") and n.endswith("__") and callable(getattr(cls, n))
        }
        missing = (public | own_dunders) - declared - {"__init_subclass__", "__subclasshook__"}
        if cls is Size:
            missing -= {"count", "index"}  # tuple's own, from the base class in the stub
        assert not missing, "%s lacks %s" % (cls.__name__, sorted(missing))
    # the operators and the registry-installed methods are there, with their parameters
    _, tensor_names = classes["Tensor"]
    for n in ("__add__", "__radd__", "__matmul__", "__getitem__", "add", "add_", "sum", "view"):
        assert n in tensor_names
    tensor_node = classes["Tensor"][0]
    add = next(m for m in tensor_node.body if getattr(m, "name", None) == "add")
    params = [a.arg for a in add.args.args + add.args.kwonlyargs]
    expected = list(inspect.signature(nbgrad.Tensor.add).parameters)
    assert params == ["self"] + expected[1:]
    # module-level names other modules import from nbgrad._tensor stay reachable (as Any)
    assert any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in tree.body)


def test_tensor_stub_is_not_imported():
    """A .pyi is for type checkers only: the module runs from its .py."""
    import nbgrad._tensor

    assert nbgrad._tensor.__file__.endswith("_tensor.py")
    assert os.path.exists(os.path.join(ROOT, "nbgrad", "_tensor.pyi"))


# -- annotations of the public API resolve (a typo in a forward reference fails here) -----------

_ANNOTATED = [
    "nbgrad._tensor",
    "nbgrad.creation",
    "nbgrad.autograd",
    "nbgrad.autograd.functional",
    "nbgrad.grad_mode",
    "nbgrad.random",
    "nbgrad.serialization",
    "nbgrad.nn.modules.module",
    "nbgrad.optim.optimizer",
]


def _public_callables(modname):
    import importlib

    mod = importlib.import_module(modname)
    for name, obj in vars(mod).items():
        if name.startswith("_") or getattr(obj, "__module__", None) != modname:
            continue
        if inspect.isfunction(obj):
            yield name, obj
        elif inspect.isclass(obj):
            for mname, m in vars(obj).items():
                if mname.startswith("_") and not (mname.endswith("__") or mname == "__init__"):
                    continue
                if isinstance(m, property):
                    for part, f in (("fget", m.fget), ("fset", m.fset)):
                        if f is not None:
                            yield "%s.%s.%s" % (name, mname, part), f
                elif isinstance(m, (staticmethod, classmethod)):
                    yield "%s.%s" % (name, mname), m.__func__
                elif inspect.isfunction(m) and m.__module__ == modname:
                    yield "%s.%s" % (name, mname), m


@pytest.mark.parametrize("modname", _ANNOTATED)
def test_annotations_resolve(modname):
    import typing

    checked = annotated = 0
    for name, fn in _public_callables(modname):
        hints = typing.get_type_hints(fn)  # raises NameError on an unresolvable name
        checked += 1
        annotated += bool(hints)
    assert checked and annotated, modname
    if modname == "nbgrad.autograd":  # Tensor.backward is defined there
        assert typing.get_type_hints(nbgrad.Tensor.backward)["return"] is type(None)


def test_annotation_typo_is_caught():
    """The check above fails for an annotation naming something that does not exist."""
    import typing

    def f(x: "Tensr") -> None:  # noqa: F821
        pass

    with pytest.raises(NameError):
        typing.get_type_hints(f)
