"""Tensor / Node hooks, retain_grad, post-accumulate hooks, version counters, saved-tensor hooks
and anomaly mode (SEMANTICS.md sections 1, 2, 3, 4, 6, 10) compared with PyTorch recordings.

Each scenario of tests/hook_scenarios.py is run with nbgrad and its log (hook calls in order,
values, final grads, error types/messages) must equal the log recorded from torch 2.13 in
tests/fixtures/hooks.json (regenerate with scripts/record_hook_fixtures.py).  Needs no torch.
"""

import json
import os
import sys

import pytest

import nbgrad
import nbgrad.autograd.graph  # noqa: F401
import nbgrad.utils.hooks  # noqa: F401

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hook_scenarios  # noqa: E402

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "hooks.json")
with open(FIXTURE) as _f:
    EXPECTED = json.load(_f)

_BY_NAME = {fn.__name__: fn for fn in hook_scenarios.SCENARIOS}


def _diff(expected, got):
    lines = []
    for i in range(max(len(expected), len(got))):
        e = expected[i] if i < len(expected) else "<missing>"
        g = got[i] if i < len(got) else "<missing>"
        mark = "  " if e == g else "!!"
        lines.append("%s %3d expected %r\n          got      %r" % (mark, i, e, g))
    return "\n".join(lines)


def test_every_scenario_has_a_fixture():
    assert sorted(_BY_NAME) == sorted(k for k in EXPECTED if not k.startswith("_"))


@pytest.mark.parametrize("name", sorted(_BY_NAME))
def test_hook_scenario(name):
    got = json.loads(json.dumps(hook_scenarios.run(_BY_NAME[name], nbgrad)))
    expected = EXPECTED[name]
    assert got == expected, "scenario %s differs from torch:\n%s" % (name, _diff(expected, got))
