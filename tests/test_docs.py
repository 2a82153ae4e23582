"""Docs that are generated from the package stay current, and missing PyTorch names say so."""

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
