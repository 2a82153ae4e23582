"""``nbgrad.utils.checkpoint``: trade compute for memory by recomputing a region in backward.

Two variants, chosen by ``use_reentrant`` exactly as in PyTorch (see docs/checkpoint.md):

* ``use_reentrant=True`` (what PyTorch 2.x does when the argument is omitted, with a warning):
  an ``autograd.Function`` whose forward runs ``function`` under ``no_grad`` and saves only the
  inputs; its backward re-runs ``function`` with grad enabled on detached copies of the inputs
  and backpropagates through that recomputation with a nested ``autograd.backward`` -- which is
  how parameters captured in ``function``'s closure receive their ``.grad``.  Like PyTorch's,
  it cannot be used with ``autograd.grad`` or ``backward(inputs=...)``, and if no input
  requires grad, nothing inside gets a gradient.
* ``use_reentrant=False``: ``function`` runs with grad enabled, so the graph (closure
  parameters included) is built as usual, but under ``saved_tensors_hooks`` whose pack hook
  stores a small placeholder instead of the activation.  The first unpack in backward re-runs
  ``function`` and fills every placeholder with the recomputed value.  This one works with
  ``autograd.grad``, keyword arguments, and inputs that do not require grad.

Both restore the RNG state of the forward pass before recomputing (``preserve_rng_state``),
so dropout masks are the same in the recomputation, and leave the caller's RNG state as it was.
"""

import copy
import sys
import warnings
import weakref

from .. import grad_mode, random as _random
from .._tensor import Tensor
from ..autograd import backward, engine
from ..autograd.function import Function
from ..autograd.graph import saved_tensors_hooks

__all__ = [
    "checkpoint",
    "checkpoint_sequential",
    "detach_variable",
    "check_backward_validity",
    "CheckpointError",
]


class CheckpointError(RuntimeError):
    """The recomputation did not match the original forward (non-reentrant checkpoint)."""


# ------------------------------------------------------------------------------------------
# helpers


def _is_tensor(x):
    return isinstance(x, Tensor)


def detach_variable(inputs):
    """Detach every tensor in the tuple ``inputs``, keeping its ``requires_grad``."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(
            "Only tuple of tensors is supported. Got Unsupported input type: %s"
            % type(inputs).__name__
        )
    out = []
    for inp in inputs:
        if not _is_tensor(inp):
            out.append(inp)
            continue
        x = inp.detach()
        x.requires_grad = inp.requires_grad
        out.append(x)
    return tuple(out)


def check_backward_validity(inputs):
    if not any(_is_tensor(inp) and inp.requires_grad for inp in inputs):
        warnings.warn(
            "None of the inputs have requires_grad=True. Gradients will be None", stacklevel=3
        )


def get_rng_state():
    """A copy of the default generator's state (what ``torch.get_rng_state`` captures)."""
    g = _random.default_generator
    return copy.deepcopy(g.rng.bit_generator.state)


def set_rng_state(state):
    _random.default_generator.rng.bit_generator.state = copy.deepcopy(state)


class _ForkRng:
    """Context manager: restore the caller's RNG state on exit (``torch.random.fork_rng``)."""

    def __init__(self, enabled):
        self.enabled = enabled

    def __enter__(self):
        if self.enabled:
            self.state = get_rng_state()
        return self

    def __exit__(self, *exc):
        if self.enabled:
            set_rng_state(self.state)
        return False


def _inside_partial_backward():
    """True when the running backward pass is ``autograd.grad`` or ``backward(inputs=...)``:
    the reentrant variant cannot work there (PyTorch's ``_is_checkpoint_valid``)."""
    code = engine.run_backward.__code__
    f = sys._getframe(1)
    while f is not None:
        if f.f_code is code:
            return f.f_locals.get("inputs") is not None
        f = f.f_back
    return False


# ------------------------------------------------------------------------------------------
# reentrant variant


class CheckpointFunction(Function):
    """Forward under no_grad saving only the inputs; backward recomputes and backpropagates."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            ctx.fwd_cpu_state = get_rng_state()
        # non-tensor inputs live on ctx; tensors go through save_for_backward
        ctx.inputs = []
        ctx.tensor_indices = []
        tensor_inputs = []
        for i, arg in enumerate(args):
            if _is_tensor(arg):
                tensor_inputs.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensor_inputs)
        with grad_mode.no_grad():
            outputs = run_function(*args)
        return outputs

    @staticmethod
    def backward(ctx, *args):
        if _inside_partial_backward():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible with "
                ".grad() or passing an `inputs` parameter to .backward(). To resolve this "
                "error, you can either set use_reentrant=False, or call .backward() without "
                "passing the `inputs` argument."
            )
        inputs = list(ctx.inputs)
        tensors = ctx.saved_tensors
        for i, idx in enumerate(ctx.tensor_indices):
            inputs[idx] = tensors[i]
        with _ForkRng(ctx.preserve_rng_state):
            if ctx.preserve_rng_state:
                set_rng_state(ctx.fwd_cpu_state)
            detached_inputs = detach_variable(tuple(inputs))
            with grad_mode.enable_grad():
                outputs = ctx.run_function(*detached_inputs)
        if _is_tensor(outputs):
            outputs = (outputs,)
        outputs_with_grad, args_with_grad = [], []
        for i in range(len(outputs)):
            if _is_tensor(outputs[i]) and outputs[i].requires_grad:
                outputs_with_grad.append(outputs[i])
                args_with_grad.append(args[i])
        if len(outputs_with_grad) == 0:
            raise RuntimeError(
                "none of output has requires_grad=True, this checkpoint() is not necessary"
            )
        backward(outputs_with_grad, args_with_grad)
        grads = tuple(inp._grad if _is_tensor(inp) else None for inp in detached_inputs)
        return (None, None) + grads


# ------------------------------------------------------------------------------------------
# non-reentrant variant


class _Holder:
    """What the graph keeps instead of a saved activation: filled in by the recomputation."""

    __slots__ = ("value", "__weakref__")

    def __init__(self):
        self.value = None


class _Frame:
    """One checkpointed call: how to recompute it, and the placeholders its graph holds."""

    def __init__(self, function, args, kwargs, preserve_rng_state, check=True):
        self.check = check
        self.function = function
        self.args = args
        self.kwargs = kwargs
        self.preserve = preserve_rng_state
        self.rng_state = get_rng_state() if preserve_rng_state else None
        self.holders = []  # weakrefs, in pack order
        self.metadata = []  # (shape, dtype) per packed tensor, for the determinism check

    def pack(self, t):
        h = _Holder()
        self.holders.append(weakref.ref(h))
        self.metadata.append((tuple(t._data.shape), t._dtype))
        return h

    def unpack(self, h):
        if h.value is None:
            self.recompute()
        if h.value is None:
            raise CheckpointError(
                "torch.utils.checkpoint: the recomputation did not produce a value for a tensor "
                "saved during the original forward"
            )
        return h.value

    def recompute(self):
        count = [0]
        mismatched = []

        def rpack(t):
            i = count[0]
            count[0] += 1
            if i >= len(self.holders):
                return None
            if self.check and (tuple(t._data.shape), t._dtype) != self.metadata[i]:
                mismatched.append((i, self.metadata[i], (tuple(t._data.shape), t._dtype)))
            h = self.holders[i]()
            if h is not None:
                h.value = t.detach()
            return None

        def runpack(_):  # the recomputed graph is never backpropagated through
            raise CheckpointError(
                "torch.utils.checkpoint: the recomputation graph cannot be backpropagated through"
            )

        args = detach_variable(tuple(self.args))
        with _ForkRng(self.preserve):
            if self.preserve:
                set_rng_state(self.rng_state)
            with grad_mode.enable_grad(), saved_tensors_hooks(rpack, runpack):
                self.function(*args, **self.kwargs)
        if count[0] != len(self.holders):
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the "
                "original forward and recomputation.\nNumber of tensors saved during forward: "
                "%d\nNumber of tensors saved during recomputation: %d"
                % (len(self.holders), count[0])
            )
        if mismatched:
            lines = "\n".join(
                "tensor at position %d:\nsaved metadata: shape=%s dtype=%s\n"
                "recomputed metadata: shape=%s dtype=%s" % (i, list(a[0]), a[1], list(b[0]), b[1])
                for i, a, b in mismatched
            )
            raise CheckpointError(
                "torch.utils.checkpoint: Recomputed values for the following tensors have "
                "different metadata than during the forward pass.\n" + lines
            )


def _checkpoint_without_reentrant(function, preserve_rng_state, determinism_check, *args, **kwargs):
    if not grad_mode.is_grad_enabled():
        return function(*args, **kwargs)
    frame = _Frame(function, args, kwargs, preserve_rng_state, determinism_check == "default")
    with saved_tensors_hooks(frame.pack, frame.unpack):
        return function(*args, **kwargs)


# ------------------------------------------------------------------------------------------
# public entry points

_NO_REENTRANT_WARNING = (
    "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting "
    "in PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. "
    "use_reentrant=False is recommended, but if you need to preserve the current default "
    "behavior, you can pass use_reentrant=True. Refer to docs for more details on the "
    "differences between the two variants."
)


def checkpoint(
    function,
    *args,
    use_reentrant=None,
    context_fn=None,
    determinism_check="default",
    debug=False,
    **kwargs,
):
    """Run ``function(*args, **kwargs)`` without keeping its intermediate activations; they are
    recomputed during backward.  Values and gradients are the same as without checkpointing.

    ``preserve_rng_state=True`` (a keyword) replays the forward's random numbers in the
    recomputation, so dropout inside ``function`` draws the same mask.
    """
    if use_reentrant is None:
        warnings.warn(_NO_REENTRANT_WARNING, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not None or debug is not False:
            raise ValueError(
                "Passing `context_fn` or `debug` is only supported when use_reentrant=False."
            )
        return CheckpointFunction.apply(function, preserve, *args)
    if context_fn is not None:
        raise NotImplementedError("nbgrad's checkpoint does not support context_fn")
    if determinism_check not in ("default", "none"):
        raise ValueError(
            "determinism_check should be one of ['default', 'none'], but got %s" % determinism_check
        )
    return _checkpoint_without_reentrant(function, preserve, determinism_check, *args, **kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Split a sequence of modules/functions into ``segments`` chunks and checkpoint each chunk
    but the last (PyTorch's ``checkpoint_sequential``)."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should "
            "be passed explicitly. In version 2.9 we will raise an exception if use_reentrant "
            "is not passed. use_reentrant=False is recommended, but if you need to preserve "
            "the current default behavior, you can pass use_reentrant=True. Refer to docs for "
            "more details on the differences between the two variants.",
            stacklevel=2,
        )
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input

        return forward

    if hasattr(functions, "children") and callable(functions.children):
        functions = list(functions.children())
    else:
        functions = list(functions)
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(
            run_function(start, end, functions),
            input,
            use_reentrant=use_reentrant,
            preserve_rng_state=preserve,
        )
    return run_function(end + 1, len(functions) - 1, functions)(input)
