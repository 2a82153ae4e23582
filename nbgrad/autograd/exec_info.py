"""What a backward with ``inputs=`` (or ``autograd.grad``) runs and where it captures
gradients: PyTorch's ``exec_info``, computed before the engine's loop starts."""

from .graph import GradientEdge, grad_accumulator


def plan(inputs, deps, root_nodes, accumulate):
    """Which nodes run and where gradients are captured, for ``inputs=`` (PyTorch's exec_info)."""
    captures, targets = {}, set()
    for idx, t in enumerate(inputs):
        if isinstance(t, GradientEdge):  # autograd.grad(..., inputs=get_gradient_edge(y))
            captures.setdefault(t.node, []).append((t.output_nr, idx))
            continue
        if t.grad_fn is None:
            node = grad_accumulator(t)
            if accumulate:
                targets.add(node)
                continue
            captures.setdefault(node, []).append((0, idx))
        elif accumulate:
            # backward(inputs=[non_leaf]): its .grad comes from retain_grad; its node runs (its
            # hooks fire) but passes gradients on only to other inputs (PyTorch's exec_info)
            targets.add(t.grad_fn)
        else:
            captures.setdefault(t.grad_fn, []).append((t._output_nr, idx))
    # Kahn order from the roots, then decide children before parents.
    pending = dict(deps)
    order, stack = [], [n for n in root_nodes if pending.get(n, 0) == 0]
    while stack:
        n = stack.pop()
        order.append(n)
        for child, _ in n.next_functions:
            if child is not None:
                pending[child] -= 1
                if pending[child] == 0:
                    stack.append(child)
    useful, execute = set(), set()
    for n in reversed(order):
        child_useful = any(c in useful for c, _ in n.next_functions if c is not None)
        if n in targets or child_useful:
            execute.add(n)
            useful.add(n)
        elif n in captures:
            useful.add(n)
    return captures, execute
