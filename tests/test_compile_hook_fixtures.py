"""The hook-order fixtures replayed under ``nbgrad.compile`` give identical logs.

Each scenario of tests/hook_scenarios.py and tests/module_hook_scenarios.py (``scenario(T,
log)``, expected logs recorded from PyTorch in tests/fixtures/) is wrapped in
``nbgrad.compile`` and called three times with the same ``log`` object (cleared before each
call: the guards compare non-tensor arguments by identity, and the hooks the replay
re-registers are the capture-time closures, which append to that object).

- Call 1 captures: the function runs eagerly, so its log must be the whole fixture.
- Calls 2 and 3 replay, which runs only the recorded calls, not the function's Python body.
  ``Log.append`` classifies every entry by its stack: an entry is *replay-visible* when a frame
  of the nbgrad package lies between the append and the scenario function's frame (a hook or a
  module called by nbgrad); entries the scenario body (or a helper it calls directly, such as
  ``err``) appends are *python* entries, which a plain replay does not make again (docs/
  compile.md, "Not captured").  A replay's log must equal the fixture's replay-visible entries,
  as classified during the capture.  The module runner's trailing ``('warning', ...)``
  entries are classified the same way, from the stack that emitted the warning.
  A call that resumed after a graph break, ran eagerly or captured again (``cf.stats``
  deltas) runs the whole Python body, so it must give the whole fixture; a resume into a
  continuation an earlier call captured runs no Python (mode "continuation"): replay-visible.

The mode each call took is in every assertion message.  ``XFAIL`` lists the scenarios that
fail, each with its reason: an inherent limitation of replaying without running Python (a
hook closure that refers to a tensor or handle of the capture call: docs/compile.md).  The
runner first found seven nbgrad.compile bugs, all fixed: in-place methods, ``out=`` writes
and grad-mode switches were not recorded, a call that raised during the capture and
``saved_tensors_hooks`` were silently left out of the record.
"""

import json
import os
import sys
import warnings

import pytest

import nbgrad
import nbgrad.autograd.graph  # noqa: F401
import nbgrad.utils.hooks  # noqa: F401

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hook_scenarios as H  # noqa: E402
import module_hook_scenarios as M  # noqa: E402

NBGRAD_DIR = os.path.dirname(os.path.abspath(nbgrad.__file__)) + os.sep

_CLOSURE = "hook closes over a capture-time %s: the replay re-registers the capture-time closure, "
XFAIL = {  # scenario -> reason (limitations of replaying without Python, then suspected bugs)
    "hooks/s1_leaf_hook_before_accumulation": _CLOSURE % "x" + "which reads the old x.grad",
    "hooks/s1_leaf_hook_two_backwards": _CLOSURE % "x" + "which reads the old x.grad",
    "hooks/s1_retain_grad_visible_timing": _CLOSURE % "y" + "which reads the old y.grad",
    "hooks/s2_post_acc_order_with_tensor_hook": _CLOSURE % "x" + "(`t is x` false, old x.grad)",
    "hooks/s1_add_hook_inside_hook": _CLOSURE % "y" + "which gets the hook added in the hook",
    "hooks/s1_remove_sibling_during_backward": _CLOSURE % "handle" + "the replay's stays",
    "hooks/s1_remove_other_tensor_hook_during_backward": _CLOSURE % "handle" + "the replay's stays",
    "hooks/s1_self_removing_hook": _CLOSURE % "handle" + "the replay's hook stays",
    "hooks/seed_scale_by_captured_tensor_values": _CLOSURE % "w" + "whose values pick the factor",
}


def _load(fixture, mod, prefix):
    with open(os.path.join(HERE, "fixtures", fixture)) as f:
        expected = json.load(f)
    return {prefix + fn.__name__: (fn, mod, expected[fn.__name__]) for fn in mod.SCENARIOS}


# cf.stats key -> mode; "continuation": a resume whose continuation was captured by an
# earlier call, so the Python body does not run (tracked by ``ran``)
MODES = (("captures", "capture"), ("eager", "eager"), ("resumes", "resume"))
CASES = {**_load("hooks.json", H, "hooks/"), **_load("module_hooks.json", M, "module/")}


def _visible(code):
    """Whether an nbgrad frame lies between the caller's caller and the frame of ``code``
    (no scenario frame on the stack at all: the replay called it, so it is visible too)."""
    f = sys._getframe(2)
    nb = False
    while f is not None and f.f_code is not code:
        nb = nb or f.f_code.co_filename.startswith(NBGRAD_DIR)
        f = f.f_back
    return nb or f is None


class Log(list):
    """The scenario's log; ``visible[i]`` classifies entry ``i`` (see the module docstring)."""

    def __init__(self, code):
        super().__init__()
        self.code = code
        self.visible = []

    def append(self, entry):
        self.visible.append(_visible(self.code))
        super().append(entry)

    def clear(self):
        self.visible.clear()
        super().clear()


def _call(cf, mod, log, ran):
    """One call of the compiled scenario, as ``mod.run`` runs a scenario eagerly; returns the
    normalized log, its classification and the mode the call took."""
    log.clear()
    before, runs = dict(cf.stats), ran[0]
    caught = []

    def show(message, category, *args, **kwargs):
        caught.append((message, category, _visible(log.code)))

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = show
        try:
            cf(nbgrad, log)
        except Exception as e:  # noqa: BLE001
            log.append(("uncaught", type(e).__name__, str(e)))
        finally:
            nbgrad.autograd.set_detect_anomaly(False)
            if mod is M:
                M._reset_flag(nbgrad)
    if mod is M:  # the module runner logs the hook/backward warnings after the scenario
        for message, category, vis in caught:
            if issubclass(category, (UserWarning, FutureWarning)) and (
                "hook" in str(message) or "backward" in str(message)
            ):
                super(Log, log).append(("warning", category.__name__, str(message)[:60]))
                log.visible.append(vis)
    delta = {k: cf.stats[k] - before[k] for k in cf.stats}
    mode = next((m for k, m in MODES if delta[k]), "replay")
    if mode == "resume" and ran[0] == runs:  # a continuation captured by an earlier resume
        mode = "continuation"
    got = json.loads(json.dumps(H.normalize(list(log))))
    return got, list(log.visible), mode


def _diff(expected, got):
    out = []
    for i in range(max(len(expected), len(got))):
        e = expected[i] if i < len(expected) else "<missing>"
        g = got[i] if i < len(got) else "<missing>"
        mark = "!!" if e != g else "  "
        out.append("%s %3d expected %r\n          got      %r" % (mark, i, e, g))
    return "\n".join(out)


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=XFAIL[n])) if n in XFAIL else n
     for n in sorted(CASES)],
)  # fmt: skip
def test_compiled_hook_scenario(name):
    fn, mod, expected = CASES[name]
    ran = [0]

    def body(T, log):  # counts the runs of the Python body
        ran[0] += 1
        return fn(T, log)

    cf = nbgrad.compile(body)
    log = Log(fn.__code__)
    got, visible, mode = _call(cf, mod, log, ran)
    assert mode == "capture", "call 1 should capture, took %s" % mode
    assert got == expected, "call 1 (capture) differs from the fixture:\n" + _diff(expected, got)
    replay_expected = [e for e, v in zip(got, visible) if v]
    modes = ["capture"]
    for n in (2, 3):
        got, _, mode = _call(cf, mod, log, ran)
        modes.append(mode)
        plain = mode in ("replay", "continuation")  # the Python body did not run
        want = replay_expected if plain else expected
        assert got == want, "call %d (modes %s; expected the %s entries) differs:\n%s\n%s" % (
            n, "/".join(modes), "replay-visible" if plain else "fixture's", _diff(want, got),
            cf.explain().split("replayed program:")[0],
        )  # fmt: skip
