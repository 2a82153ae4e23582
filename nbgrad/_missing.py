"""The AttributeError for a PyTorch name nbgrad does not provide: it says so, and where the
supported scope is listed, instead of a bare "has no attribute"."""

SCOPE_DOC = "docs/api-scope.md"


def missing(module, name):
    """The module ``__getattr__`` of nbgrad's PyTorch-mirroring namespaces."""
    if name.startswith("__") and name.endswith("__"):
        return AttributeError("module %r has no attribute %r" % (module, name))
    torch_name = "torch" + module[len("nbgrad") :] + "." + name
    return AttributeError(
        "module %r has no attribute %r: nbgrad does not provide %s (yet); the supported "
        "PyTorch API is listed in %s" % (module, name, torch_name, SCOPE_DOC)
    )
