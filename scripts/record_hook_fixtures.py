"""Record tests/fixtures/hooks.json from PyTorch (the oracle) for tests/test_hooks.py.

    .venv/bin/python scripts/record_hook_fixtures.py

Runs every scenario of tests/hook_scenarios.py with ``T = torch`` and writes
``{scenario name: log}``; strings are normalised (``'torch.'`` -> ``'nbgrad.'``) by
``hook_scenarios.run``, node names are kept as ``.name()`` gives them.
"""

import json
import os
import sys

import torch
import torch.autograd.graph  # noqa: F401
import torch.utils.hooks  # noqa: F401

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

import hook_scenarios  # noqa: E402


def main():
    out = {}
    for fn in hook_scenarios.SCENARIOS:
        out[fn.__name__] = hook_scenarios.run(fn, torch)
    # JSON round trip so what is written is exactly what the test reads back
    out = json.loads(json.dumps(out))
    path = os.path.join(ROOT, "tests", "fixtures", "hooks.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(
            {"_meta": {"torch": torch.__version__, "scenarios": len(out)}, **out},
            f,
            indent=1,
            sort_keys=False,
        )
        f.write("\n")
    import module_hook_scenarios  # noqa: E402

    mods = {
        fn.__name__: module_hook_scenarios.run(fn, torch) for fn in module_hook_scenarios.SCENARIOS
    }
    mods = json.loads(json.dumps(mods))
    mpath = os.path.join(ROOT, "tests", "fixtures", "module_hooks.json")
    with open(mpath, "w") as f:
        json.dump(
            {"_meta": {"torch": torch.__version__, "scenarios": len(mods)}, **mods}, f, indent=1
        )
        f.write("\n")
    print("recorded %d module-hook scenarios -> %s" % (len(mods), mpath))
    out.update(mods)
    uncaught = [k for k, v in out.items() if any(e[0] == "uncaught" for e in v)]
    print("recorded %d scenarios with torch %s -> %s" % (len(out), torch.__version__, path))
    if uncaught:
        print("scenarios that raised unexpectedly under torch:", uncaught)


if __name__ == "__main__":
    main()
