"""End-to-end: a tiny model trained with nbgrad's nn + optim must actually learn."""

import numpy as np

import nbgrad as torch
import nbgrad.nn as nn


def test_small_cnn_learns_synthetic_images():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    # class 0: bright left half, class 1: bright right half, plus noise (1x8x8 images)
    y = rng.integers(0, 2, 256)
    x = rng.normal(0, 0.3, (256, 1, 8, 8)).astype(np.float32)
    x[y == 0, :, :, :4] += 1.0
    x[y == 1, :, :, 4:] += 1.0
    model = nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(4 * 4 * 4, 2),
    )
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    xs, ys = torch.from_numpy(x), torch.from_numpy(y)
    first = None
    for step in range(60):
        loss = loss_fn(model(xs), ys)
        opt.zero_grad()
        loss.backward()
        opt.step()
        first = float(loss) if first is None else first
    assert float(loss) < 0.1 < first
    acc = float((model(xs).argmax(1) == ys).float().mean())
    assert acc > 0.97


def test_global_backward_hook_records_per_layer_norms():
    from nbgrad.nn.modules.module import register_module_full_backward_hook

    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    norms = []
    h = register_module_full_backward_hook(
        lambda m, gi, go: norms.append((type(m).__name__, float(go[0].norm())))
    )
    try:
        model(torch.randn(5, 3)).sum().backward()
    finally:
        h.remove()
    # inputs need no grad: hooks fire at the outputs, outermost first (as in PyTorch)
    assert [n for n, _ in norms] == ["Sequential", "Linear", "ReLU", "Linear"]
    assert all(v > 0 for _, v in norms)
