"""``nbgrad.autograd.functional``: jacobian, hessian, vjp, jvp, vhp, hvp (PyTorch's semantics,
output structure and errors; SEMANTICS.md section 12).  jvp/hvp use the double-backward trick,
as PyTorch's functional API does.  Loaded on first use, after ops (NOTE [autograd layering])."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import grad_mode
from .._tensor import Tensor
from ..creation import zeros, zeros_like
from ..ops.shape import stack
from . import forward_ad as fwAD, grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]


def _as_tuple(inp, arg_name, fn_name):
    is_tuple = True
    if not isinstance(inp, tuple):
        inp = (inp,)
        is_tuple = False
    for i, el in enumerate(inp):
        if not isinstance(el, Tensor):
            if is_tuple:
                raise TypeError(
                    "The %s given to %s must be either a Tensor or a tuple of "
                    "Tensors but the value at index %d has type %s."
                    % (arg_name, fn_name, i, type(el))
                )
            raise TypeError(
                "The %s given to %s must be either a Tensor or a tuple of Tensors "
                "but the given %s has type %s." % (arg_name, fn_name, arg_name, type(el))
            )
    return is_tuple, inp


def _tuple_postprocess(res, to_unpack):
    if isinstance(to_unpack, tuple):
        assert len(to_unpack) == 2
        if not to_unpack[1]:
            res = tuple(r[0] for r in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs, create_graph, need_graph):
    out = []
    for t in inputs:
        if create_graph and t._requires_grad:
            out.append(t.view_as(t))
        else:
            out.append(t.detach().requires_grad_(need_graph))
    return tuple(out)


def _grad_postprocess(inputs, create_graph):
    if isinstance(inputs[0], Tensor) if inputs else False:
        if not create_graph:
            return tuple(t.detach() if t is not None else None for t in inputs)
        return inputs
    return tuple(_grad_postprocess(i, create_graph) for i in inputs)


def _validate_v(v, other, is_other_tuple):
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(
                "v is a tuple of invalid length: should be %d but got %d." % (len(other), len(v))
            )
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.shape != el_other.shape:
            prepend = "Entry %d in " % idx if is_other_tuple else ""
            raise RuntimeError(
                "%sv has invalid size: should be %s but got %s."
                % (prepend, el_other.shape, el_v.shape)
            )


def _check_requires_grad(inputs, input_type, strict):
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(
                "The output of the user-provided function is independent of "
                "input %d. This is not allowed in strict mode." % i
            )
        if not inp._requires_grad:
            if input_type == "hessian":
                raise RuntimeError(
                    "The hessian of the user-provided function with respect to "
                    "input %d is independent of the input. This is not allowed "
                    "in strict mode. You should ensure that your function is "
                    "thrice differentiable and that the hessian depends on the "
                    "inputs." % i
                )
            if input_type == "jacobian":
                raise RuntimeError(
                    "While computing the hessian, found that the jacobian of the "
                    "user-provided function with respect to input %d is "
                    "independent of the input. This is not allowed in strict "
                    "mode. You should ensure that your function is twice "
                    "differentiable and that the jacobian depends on the inputs "
                    "(this would be violated by a linear function for example)." % i
                )
            if input_type == "grad_inputs":
                raise RuntimeError(
                    "The gradient with respect to input %d is independent of the "
                    "inputs of the user-provided function. This is not allowed in "
                    "strict mode." % i
                )
            raise RuntimeError(
                "Output %d of the user-provided function does not require "
                "gradients. The outputs must be computed in a differentiable "
                "manner from the input when running in strict mode." % i
            )


def _autograd_grad(
    outputs,
    inputs,
    grad_outputs=None,
    create_graph=False,
    retain_graph=None,
    is_grads_batched=False,
):
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    new_outputs, new_grad_outputs = [], []
    for out, go in zip(outputs, grad_outputs):
        if out is not None and out._requires_grad:
            new_outputs.append(out)
            new_grad_outputs.append(go)
    if not new_outputs:
        return (None,) * len(inputs)
    return grad(
        new_outputs,
        inputs,
        new_grad_outputs,
        allow_unused=True,
        create_graph=create_graph,
        retain_graph=retain_graph,
        is_grads_batched=is_grads_batched,
    )


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    res = []
    for i, (g, ref) in enumerate(zip(grads, refs)):
        if g is None:
            if strict:
                if stage == "back":
                    raise RuntimeError(
                        "The output of the user-provided function is independent "
                        "of input %d. This is not allowed in strict mode." % i
                    )
                if stage == "back_trick":
                    raise RuntimeError(
                        "The gradient with respect to the input is independent of "
                        "entry %d in the grad_outputs when using the double "
                        "backward trick to compute forward mode gradients. This "
                        "is not allowed in strict mode." % i
                    )
                if stage == "double_back":
                    raise RuntimeError(
                        "The jacobian of the user-provided function is independent "
                        "of input %d. This is not allowed in strict mode." % i
                    )
                raise RuntimeError(
                    "The hessian of the user-provided function is independent of "
                    "entry %d in the grad_jacobian. This is not allowed in strict "
                    "mode as it prevents from using the double backward trick to "
                    "replace forward mode AD." % i
                )
            g = zeros_like(ref)
        res.append(g)
    return tuple(res)


def _check_outputs(outputs, fn_name):
    if not isinstance(outputs, (tuple, Tensor)):
        raise TypeError(
            "The outputs of the user-provided function given to %s must be either a "
            "Tensor or a tuple of Tensors but the given outputs of the user-provided "
            "function has type %s." % (fn_name, type(outputs))
        )


def vjp(
    func: Callable[..., Tensor | tuple[Tensor, ...]],
    inputs: Tensor | tuple[Tensor, ...],
    v: Tensor | tuple[Tensor, ...] | None = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple[Any, Any]:
    """Return ``(func(*inputs), v^T J)``: the outputs and the vector-Jacobian product (``v``
    shaped as the outputs; optional for a one-element output)."""
    with grad_mode.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph, True)
        outputs = func(*inputs)
        _check_outputs(outputs, "vjp")
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "vjp"
        )
        _check_requires_grad(outputs, "outputs", strict)
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            v = _grad_preprocess(v, create_graph, False)
            _validate_v(v, outputs, is_outputs_tuple)
        else:
            if len(outputs) != 1 or outputs[0].numel() != 1:
                raise RuntimeError(
                    "The vector v can only be None if the user-provided function "
                    "returns a single Tensor with a single element."
                )
        with grad_mode.set_grad_enabled(create_graph):
            grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
            vjp_ = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")
    outputs = _grad_postprocess(outputs, create_graph)
    vjp_ = _grad_postprocess(vjp_, create_graph)
    return (
        _tuple_postprocess(outputs, is_outputs_tuple),
        _tuple_postprocess(vjp_, is_inputs_tuple),
    )


def jvp(
    func: Callable[..., Tensor | tuple[Tensor, ...]],
    inputs: Tensor | tuple[Tensor, ...],
    v: Tensor | tuple[Tensor, ...] | None = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple[Any, Any]:
    """Return ``(func(*inputs), J v)``: the outputs and the Jacobian-vector product (``v``
    shaped as the inputs), via the double-backward trick."""
    with grad_mode.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph, True)
        if v is not None:
            _, v = _as_tuple(v, "v", "jvp")
            v = _grad_preprocess(v, create_graph, False)
            _validate_v(v, inputs, is_inputs_tuple)
        else:
            if len(inputs) != 1 or inputs[0].numel() != 1:
                raise RuntimeError(
                    "The vector v can only be None if the input to the "
                    "user-provided function is a single Tensor with a single "
                    "element."
                )
        outputs = func(*inputs)
        _check_outputs(outputs, "jvp")
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "jvp"
        )
        _check_requires_grad(outputs, "outputs", strict)
        grad_outputs = tuple(zeros_like(out).requires_grad_(True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict)
        if create_graph:
            with grad_mode.enable_grad():
                grad_res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=True)
                jvp_ = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
        else:
            grad_res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=False)
            jvp_ = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    jvp_ = _grad_postprocess(jvp_, create_graph)
    return (
        _tuple_postprocess(outputs, is_outputs_tuple),
        _tuple_postprocess(jvp_, is_outputs_tuple),
    )


def jacobian(
    func: Callable[..., Tensor | tuple[Tensor, ...]],
    inputs: Tensor | tuple[Tensor, ...],
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
) -> Any:
    """The Jacobian: ``out.shape + in.shape`` per (output, input) pair."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: '
            'If your function has more outputs than inputs, "forward-mode" tends to '
            'be more performant. Otherwise, prefer to use "reverse-mode".'
        )
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                "torch.autograd.functional.jacobian: `create_graph=True` "
                'and `strategy="forward-mode"` are not supported '
                "together (yet). Please either set `create_graph=False` "
                'or `strategy="reverse-mode"`.'
            )
        if strict:
            raise RuntimeError(
                "torch.autograd.functional.jacobian: `strict=True` and "
                '`strategy="forward-mode"` are not supported together (yet). '
                "Please either set `strict=False` or "
                '`strategy="reverse-mode"`.'
            )
        if not vectorize:
            raise NotImplementedError(
                "Computing Jacobian using forward-AD or "
                "forward-over-reverse Hessian isonly implemented for "
                "`vectorize=True`."
            )
    if vectorize and strict:
        raise RuntimeError(
            "torch.autograd.functional.jacobian: `strict=True` and "
            "`vectorized=True` are not supported together. Please either set "
            "`strict=False` or `vectorize=False`."
        )
    if strategy == "forward-mode":
        return _jacobian_forward(func, inputs)
    with grad_mode.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph, True)
        outputs = func(*inputs)
        _check_outputs(outputs, "jacobian")
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "jacobian"
        )
        _check_requires_grad(outputs, "outputs", strict)
        if vectorize:
            jacobian_ = _jacobian_batched(outputs, inputs, create_graph)
            jacobian_ = _grad_postprocess(jacobian_, create_graph)
            return _tuple_postprocess(jacobian_, (is_outputs_tuple, is_inputs_tuple))
        jacobian_ = []
        for i, out in enumerate(outputs):
            jac_i = [[] for _ in inputs]
            flat = out.reshape(-1)
            for j in range(flat.numel()):
                vj = _autograd_grad(
                    (flat[j],), inputs, retain_graph=True, create_graph=create_graph
                )
                for el_idx, (jac_el, vj_el, inp_el) in enumerate(zip(jac_i, vj, inputs)):
                    if vj_el is not None:
                        if strict and create_graph and not vj_el._requires_grad:
                            raise RuntimeError(
                                "The jacobian of the user-provided function is "
                                "independent of input %d. This is not allowed in "
                                "strict mode when create_graph=True." % i
                            )
                        jac_el.append(vj_el)
                    else:
                        if strict:
                            raise RuntimeError(
                                "Output %d of the user-provided function is "
                                "independent of input %d. This is not allowed in "
                                "strict mode." % (i, el_idx)
                            )
                        jac_el.append(zeros(*inp_el.shape, dtype=inp_el.dtype))
            jacobian_.append(
                tuple(
                    (
                        stack(jac_i_el, 0).view(*(tuple(out.shape) + tuple(inputs[el].shape)))
                        if jac_i_el
                        else zeros(
                            *(tuple(out.shape) + tuple(inputs[el].shape)), dtype=inputs[el].dtype
                        )
                    )
                    for el, jac_i_el in enumerate(jac_i)
                )
            )
        jacobian_ = _grad_postprocess(tuple(jacobian_), create_graph)
        return _tuple_postprocess(jacobian_, (is_outputs_tuple, is_inputs_tuple))


def _hvp_forward_over_reverse(func, inputs, v):
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hvp")
    _, v = _as_tuple(v, "v", "hvp")
    _validate_v(v, inputs, is_inputs_tuple)
    with grad_mode.enable_grad(), fwAD.dual_level():
        duals = tuple(
            fwAD.make_dual(x.detach().requires_grad_(True), t.detach()) for x, t in zip(inputs, v)
        )
        outputs = func(*duals)
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "hvp"
        )
        if is_outputs_tuple or not isinstance(outputs[0], Tensor):
            raise RuntimeError("The function given to hvp should return a single Tensor")
        if outputs[0].numel() != 1:
            raise RuntimeError(
                "The Tensor returned by the function given to hvp should contain a single element"
            )
        jac = _autograd_grad(outputs, duals, create_graph=True)
        res = []
        for x, g in zip(inputs, jac):
            t = fwAD.unpack_dual(g).tangent if g is not None else None
            res.append(t.detach() if t is not None else zeros_like(x))
        out = fwAD.unpack_dual(outputs[0]).primal.detach()
    return (
        _tuple_postprocess((out,), is_outputs_tuple),
        _tuple_postprocess(tuple(res), is_inputs_tuple),
    )


def _standard_basis(tensors):
    """One batched identity per tensor: rows = all elements of all ``tensors``, so chunk i is
    ``(total, *tensors[i].shape)`` with ones where row k is element k of the concatenation."""
    numels = [t.numel() for t in tensors]
    total, start, chunks = sum(numels), 0, []
    for t, n in zip(tensors, numels):
        c = zeros(total, n, dtype=t.dtype)
        c._data[np.arange(start, start + n), np.arange(n)] = 1
        chunks.append(c.view(total, *t.shape))
        start += n
    return chunks, numels


def _jacobian_batched(outputs, inputs, create_graph):
    """vectorize=True: every row of every output's Jacobian from ONE backward whose gradients
    carry a batch dim (NOTE [batched backward]), then split per output."""
    basis, numels = _standard_basis(outputs)
    vj = _autograd_grad(outputs, inputs, basis, create_graph=create_graph, is_grads_batched=True)
    total = sum(numels)
    res = [[] for _ in outputs]
    for x, g in zip(inputs, vj):
        if g is None:
            g = zeros(total, *x.shape, dtype=x.dtype)
        for i, (out, part) in enumerate(zip(outputs, g.split(numels, 0))):
            res[i].append(part.reshape(*(tuple(out.shape) + tuple(x.shape))))
    return tuple(tuple(r) for r in res)


def hessian(
    func: Callable[..., Tensor],
    inputs: Tensor | tuple[Tensor, ...],
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    outer_jacobian_strategy: str = "reverse-mode",
) -> Any:
    """The Hessian of a scalar function: a Tensor for one input, else a tuple of tuples (one
    block per pair of inputs)."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")

    def ensure_single_output_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict)
        if is_out_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError(
                "The Tensor returned by the function given to hessian should "
                "contain a single element"
            )
        return out.squeeze()

    def jac_func(*inp):
        if outer_jacobian_strategy == "forward-mode":
            # forward-over-reverse: the inner backward must see the dual inputs (not detached
            # copies without tangents), so they must require grad
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    res = jacobian(
        jac_func,
        inputs,
        create_graph=create_graph,
        strict=strict,
        vectorize=vectorize,
        strategy=outer_jacobian_strategy,
    )
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _scalar_fn_setup(func, inputs, v, create_graph, strict, name):
    """Shared by vhp/hvp: inputs, v, the scalar output and its gradient (with a graph)."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", name)
    inputs = _grad_preprocess(inputs, create_graph, True)
    if v is not None:
        _, v = _as_tuple(v, "v", name)
        v = _grad_preprocess(v, create_graph, False)
        _validate_v(v, inputs, is_inputs_tuple)
    elif len(inputs) != 1 or inputs[0].numel() != 1:
        raise RuntimeError(
            "The vector v can only be None if the input to the user-provided "
            "function is a single Tensor with a single element."
        )
    outputs = func(*inputs)
    is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", name)
    _check_requires_grad(outputs, "outputs", strict)
    if is_outputs_tuple or not isinstance(outputs[0], Tensor):
        raise RuntimeError("The function given to %s should return a single Tensor" % name)
    if outputs[0].numel() != 1:
        raise RuntimeError(
            "The Tensor returned by the function given to %s should contain a single element" % name
        )
    jac = _autograd_grad(outputs, inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict)
    return is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac


def vhp(
    func: Callable[..., Tensor | tuple[Tensor, ...]],
    inputs: Tensor | tuple[Tensor, ...],
    v: Tensor | tuple[Tensor, ...] | None = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple[Any, Any]:
    """Return ``(func(*inputs), v^T H)`` for a scalar function: its value and the
    vector-Hessian product."""
    with grad_mode.enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac = _scalar_fn_setup(
            func, inputs, v, create_graph, strict, "vhp"
        )
        with grad_mode.set_grad_enabled(create_graph):
            grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
            vhp_ = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")
    outputs = _grad_postprocess(outputs, create_graph)
    vhp_ = _grad_postprocess(vhp_, create_graph)
    return (
        _tuple_postprocess(outputs, is_outputs_tuple),
        _tuple_postprocess(vhp_, is_inputs_tuple),
    )


def hvp(
    func: Callable[..., Tensor | tuple[Tensor, ...]],
    inputs: Tensor | tuple[Tensor, ...],
    v: Tensor | tuple[Tensor, ...] | None = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple[Any, Any]:
    """(func(inputs), H v).  Forward-over-reverse (one forward pass with tangents ``v`` through
    the function and its gradient) by default; the double-backward trick where results must
    carry a graph (create_graph=True) or strict mode must name the independent entry."""
    if not create_graph and not strict and v is not None:
        try:
            return _hvp_forward_over_reverse(func, inputs, v)
        except NotImplementedError:  # a custom Function without jvp: the trick needs none
            pass
    with grad_mode.enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac = _scalar_fn_setup(
            func, inputs, v, create_graph, strict, "hvp"
        )
        grad_jac = tuple(zeros_like(inp).requires_grad_(True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict)
        with grad_mode.set_grad_enabled(create_graph):
            grad_res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
            hvp_ = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    hvp_ = _grad_postprocess(hvp_, create_graph)
    return (
        _tuple_postprocess(outputs, is_outputs_tuple),
        _tuple_postprocess(hvp_, is_inputs_tuple),
    )


def _jacobian_forward(func, inputs):
    """strategy="forward-mode" (always vectorized, as in PyTorch): ONE forward pass whose
    tangents carry a batch dim holding the standard basis of all input elements; the output
    tangents are the Jacobian's columns."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    basis, numels = _standard_basis(inputs)
    # entered outside the try: if it fails (nested level), the caller's level stays open
    duals = fwAD.batched_dual_level(inputs, basis)
    try:
        outputs = func(*duals)
        _check_outputs(outputs, "jacobian")
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "jacobian"
        )
        tangents = [fwAD.unpack_dual(o).tangent for o in outputs]
        outputs = [fwAD.unpack_dual(o).primal for o in outputs]
    finally:
        fwAD.exit_dual_level()
    total = sum(numels)
    res = []
    for out, tan in zip(outputs, tangents):
        if tan is None:
            tan = zeros(total, *out.shape, dtype=out.dtype)
        row = []
        for x, part in zip(inputs, tan.split(numels, 0)):
            # the batch dim runs over input elements: move it behind the output's dims
            row.append(
                part.permute(*range(1, part.ndim), 0).reshape(*(tuple(out.shape) + tuple(x.shape)))
            )
        res.append(tuple(row))
    return _tuple_postprocess(tuple(res), (is_outputs_tuple, is_inputs_tuple))
