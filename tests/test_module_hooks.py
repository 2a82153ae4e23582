"""nn.Module hooks (SEMANTICS.md section 5) compared with logs recorded from PyTorch
(tests/fixtures/module_hooks.json, written by scripts/record_hook_fixtures.py).  No torch needed."""

import json
import os
import sys

import pytest

import nbgrad

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import module_hook_scenarios as S  # noqa: E402

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "module_hooks.json")
with open(FIXTURE) as _f:
    EXPECTED = json.load(_f)
_BY_NAME = {fn.__name__: fn for fn in S.SCENARIOS}


def test_every_module_scenario_has_a_fixture():
    assert sorted(_BY_NAME) == sorted(k for k in EXPECTED if not k.startswith("_"))


@pytest.mark.parametrize("name", sorted(_BY_NAME))
def test_module_hook_scenario(name):
    got = json.loads(json.dumps(S.run(_BY_NAME[name], nbgrad)))
    assert got == EXPECTED[name], "\n".join(
        "%s expected %r\n   got      %r" % ("  " if e == g else "!!", e, g)
        for e, g in zip(EXPECTED[name] + [None] * len(got), got + [None] * len(EXPECTED[name]))
    )


def test_fast_path_when_no_hooks_anywhere():
    calls = []

    class M(nbgrad.nn.Module):
        def forward(self, x):
            calls.append(1)
            return x

    m = M()
    x = nbgrad.ones(2)
    assert m(x) is x  # no identity wrapping without hooks
