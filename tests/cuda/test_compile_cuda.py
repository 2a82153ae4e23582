"""nbgrad.compile with CUDA tensors: the replay runs op by op on the device (fusion is
CPU-only), with the eager values, gradients and hooks.  Simulator or GPU (tests/cuda)."""

import numpy as np

import nbgrad as T


def _step(log):
    def step(x, w):
        h = (x * w + 1).tanh()
        h.register_hook(lambda g: log.append(round(float(g.sum().item()), 9)))
        loss = (h * h).sum()
        loss.backward()
        return loss

    return step


def test_compiled_step_on_cuda_matches_eager():
    xs = np.linspace(-1, 1, 6)
    x = T.tensor(xs, device="cuda")
    w = T.tensor(xs[::-1].copy(), device="cuda", requires_grad=True)
    log = []
    want = _step(log)(x, w).item()
    want_g, want_log = w.grad.cpu().numpy().copy(), list(log)
    cf = T.compile(_step(log))
    for _ in range(3):
        log.clear()
        w.grad = None
        got = cf(x, w)
        assert got.is_cuda and abs(got.item() - want) < 1e-12
        np.testing.assert_allclose(w.grad.cpu().numpy(), want_g, rtol=1e-12)
        assert log == want_log
    assert cf.stats["replays"] == 2
    rec = next(iter(cf._records.values()))[0]
    assert not rec.regions  # CPU-only fusion: the device replays op by op
