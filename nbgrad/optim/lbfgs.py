"""``LBFGS``: limited-memory BFGS with an optional strong-Wolfe line search.

A port of torch/optim/lbfgs.py (itself a port of minFunc and torch7's optim).  The flat
vectors (gradient, direction, history) are numpy arrays of the parameters' dtype and the
scalars that PyTorch keeps as 0-d tensors (``t``, ``ys``, ``ro``, ``al``, ``H_diag``, the
directional derivatives) are numpy scalars of that dtype, so every scalar operation rounds as
PyTorch's 0-d tensor arithmetic does (a Python float meeting a float32 0-d tensor gives float32,
and so does a Python float meeting a ``np.float32`` under NEP 50).  What goes into
``optimizer.state`` is what PyTorch stores there: Tensors, 0-d Tensors, lists of them, Python
numbers.
"""

import numpy as np

from .._tensor import Tensor
from ..grad_mode import enable_grad
from ._functional import _as_real
from .optimizer import Optimizer, _use_no_grad

__all__ = ["LBFGS"]


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """Minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clipped to ``bounds``
    (torch7's polyinterp.lua for two points with values and derivatives)."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if d2_square >= 0:
        d2 = np.sqrt(d2_square)
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """Line search along ``d`` for a step ``t`` meeting the strong Wolfe conditions (torch7's
    lswolfe.lua): bracket, then zoom by cubic interpolation.  Returns (f, g, t, evaluations)."""
    d_norm = np.abs(d).max()
    g = g.copy()
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = 1
    gtd_new = g_new.dot(d)

    # bracket an interval containing a point satisfying the Wolfe criteria
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket = [t_prev, t]
            bracket_f = [f_prev, f_new]
            bracket_g = [g_prev, g_new.copy()]
            bracket_gtd = [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket = [t]
            bracket_f = [f_new]
            bracket_g = [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket = [t_prev, t]
            bracket_f = [f_prev, f_new]
            bracket_g = [g_prev, g_new.copy()]
            bracket_gtd = [gtd_prev, gtd_new]
            break

        # interpolate
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(
            t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step)
        )

        # next step
        t_prev = tmp
        f_prev = f_new
        g_prev = g_new.copy()
        gtd_prev = gtd_new
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1

    # reached max number of iterations?
    if ls_iter == max_ls:
        bracket = [0, t]
        bracket_f = [f, f_new]
        bracket_g = [g, g_new]

    # zoom phase: refine the bracket until a point satisfies the criteria
    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        # line-search bracket is so small
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break

        t = _cubic_interpolate(
            bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1]
        )

        # a trial point too close to the bracket's ends (twice, or on an end) moves to 0.1 of
        # the bracket's length away from the nearest end
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                if abs(t - max(bracket)) < abs(t - min(bracket)):
                    t = max(bracket) - eps
                else:
                    t = min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False

        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1

        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            # Armijo condition not satisfied or not lower than lowest point
            bracket[high_pos] = t
            bracket_f[high_pos] = f_new
            bracket_g[high_pos] = g_new.copy()
            bracket_gtd[high_pos] = gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True  # Wolfe conditions satisfied
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                # old high becomes new low
                bracket[high_pos] = bracket[low_pos]
                bracket_f[high_pos] = bracket_f[low_pos]
                bracket_g[high_pos] = bracket_g[low_pos]
                bracket_gtd[high_pos] = bracket_gtd[low_pos]

            # new point becomes new low
            bracket[low_pos] = t
            bracket_f[low_pos] = f_new
            bracket_g[low_pos] = g_new.copy()
            bracket_gtd[low_pos] = gtd_new

    t = bracket[low_pos]
    f_new = bracket_f[low_pos]
    g_new = bracket_g[low_pos]
    return f_new, g_new, t, ls_func_evals


def _unwrap(v):
    """A state value as the working value: Tensor -> its array (0-d -> numpy scalar)."""
    if isinstance(v, Tensor):
        a = v._data
        return a[()] if a.ndim == 0 else a
    return v


def _wrap(v):
    """A working value as PyTorch stores it: arrays and numpy scalars -> Tensors."""
    if isinstance(v, (np.ndarray, np.generic)):
        return Tensor._make(np.asarray(v))
    return v


class LBFGS(Optimizer):
    r"""L-BFGS, as ``torch.optim.LBFGS`` (heavily inspired by minFunc).

    ``step(closure)`` runs up to ``max_iter`` iterations (``max_eval`` closure evaluations,
    default ``max_iter * 5 // 4``): the two-loop recursion over the last ``history_size``
    (s, y) pairs gives the direction, then either a fixed step ``lr`` (the first iteration
    scales it by ``min(1, 1 / |g|_1)``) or, with ``line_search_fn="strong_wolfe"``, PyTorch's
    strong-Wolfe line search with cubic interpolation.  It stops early on
    ``max|g| <= tolerance_grad``, on a step or loss change below ``tolerance_change``, or when
    the directional derivative is above ``-tolerance_change``.

    One parameter group only; the whole state (``func_evals``, ``n_iter``, ``d``, ``t``,
    ``old_dirs``, ``old_stps``, ``ro``, ``H_diag``, ``prev_flat_grad``, ``prev_loss``, ``al``)
    is registered under the first parameter, as PyTorch does.  Complex parameters are
    optimised as their real views.
    """

    def __init__(
        self,
        params,
        lr=1,
        max_iter=20,
        max_eval=None,
        tolerance_grad=1e-7,
        tolerance_change=1e-9,
        history_size=100,
        line_search_fn=None,
    ):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError("Invalid learning rate: {}".format(lr))
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(
            lr=lr,
            max_iter=max_iter,
            max_eval=max_eval,
            tolerance_grad=tolerance_grad,
            tolerance_change=tolerance_change,
            history_size=history_size,
            line_search_fn=line_search_fn,
        )
        super().__init__(params, defaults)

        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")

        self._params = self.param_groups[0]["params"]
        self._numel_cache = None

    def _numel(self):
        if self._numel_cache is None:
            self._numel_cache = sum(
                2 * p.numel() if p.is_complex() else p.numel() for p in self._params
            )
        return self._numel_cache

    def _gather_flat_grad(self):
        views = []
        for p in self._params:
            g = p.grad
            if g is None:
                a = p._data
                view = np.zeros(a.size * (2 if a.dtype.kind == "c" else 1), _real_dtype(a.dtype))
            else:
                view = _as_real(g._data).reshape(-1)
            views.append(view)
        return np.concatenate(views)

    def _add_grad(self, step_size, update):
        offset = 0
        for p in self._params:
            a = _as_real(p._data)
            numel = a.size
            a += step_size * update[offset : offset + numel].reshape(a.shape)  # p.add_(u, alpha)
            p._vc[0] += 1
            offset += numel
        if offset != self._numel():
            raise AssertionError("Expected offset {} to equal {}".format(offset, self._numel()))

    def _clone_param(self):
        return [p._data.copy() for p in self._params]

    def _set_param(self, params_data):
        for p, pdata in zip(self._params, params_data):
            np.copyto(p._data, pdata)  # p.copy_(pdata)
            p._vc[0] += 1

    def _directional_evaluate(self, closure, x, t, d):
        self._add_grad(t, d)
        loss = float(closure())
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    @_use_no_grad
    def step(self, closure):
        """Perform one optimization step (up to ``max_iter`` iterations).

        Args:
            closure (Callable): re-evaluates the model and returns the loss (it is called
                with grad mode on, and must compute the gradients).
        """
        if len(self.param_groups) != 1:
            raise AssertionError(
                "Expected exactly one param_group, but got {}".format(len(self.param_groups))
            )

        def closure_with_grad(user_closure=closure):
            with enable_grad():
                return user_closure()

        closure = closure_with_grad

        group = self.param_groups[0]
        lr = _unwrap(group["lr"])
        if isinstance(lr, np.ndarray):  # a 1-element lr of shape (1,)
            lr = lr.reshape(())[()]
        max_iter = group["max_iter"]
        max_eval = group["max_eval"]
        tolerance_grad = group["tolerance_grad"]
        tolerance_change = group["tolerance_change"]
        line_search_fn = group["line_search_fn"]
        history_size = group["history_size"]

        # LBFGS has only global state, registered as the first parameter's (for load_state_dict)
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        # evaluate initial f(x) and df/dx
        orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1

        flat_grad = self._gather_flat_grad()
        opt_cond = np.abs(flat_grad).max() <= tolerance_grad
        if opt_cond:
            return orig_loss

        # the cached state, as working values (the history lists keep their Tensors)
        d = _unwrap(state.get("d"))
        t = _unwrap(state.get("t"))
        old_dirs_t = state.get("old_dirs")
        old_stps_t = state.get("old_stps")
        ro_t = state.get("ro")
        old_dirs = None if old_dirs_t is None else [v._data for v in old_dirs_t]
        old_stps = None if old_stps_t is None else [v._data for v in old_stps_t]
        ro = None if ro_t is None else [_unwrap(v) for v in ro_t]
        H_diag = _unwrap(state.get("H_diag"))
        prev_flat_grad_t = state.get("prev_flat_grad")
        prev_flat_grad = None if prev_flat_grad_t is None else prev_flat_grad_t._data
        prev_loss = state.get("prev_loss")

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1

            # -- descent direction --------------------------------------------------------
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                old_dirs_t, old_stps_t, ro_t = [], [], []
                H_diag = 1
            else:
                # update the memory with the last step's (s, y)
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = y.dot(s)
                if ys > 1e-10:
                    if len(old_dirs) == history_size:
                        # shift history by one (limited-memory)
                        for lst in (old_dirs, old_stps, ro, old_dirs_t, old_stps_t, ro_t):
                            lst.pop(0)
                    r_i = 1.0 / ys
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(r_i)
                    old_dirs_t.append(Tensor._make(y))
                    old_stps_t.append(Tensor._make(s))
                    ro_t.append(_wrap(r_i))
                    H_diag = ys / y.dot(y)  # scale of the initial inverse Hessian

                # two-loop recursion: d = -H g
                num_old = len(old_dirs)
                if "al" not in state:
                    state["al"] = [None] * history_size
                al_t = state["al"]
                al = [None] * num_old

                q = -flat_grad
                for i in range(num_old - 1, -1, -1):
                    a_i = old_stps[i].dot(q) * ro[i]
                    al[i] = a_i
                    al_t[i] = _wrap(a_i)
                    q += (-a_i) * old_dirs[i]  # q.add_(old_dirs[i], alpha=-al[i])

                d = r = q * H_diag
                for i in range(num_old):
                    be_i = old_dirs[i].dot(r) * ro[i]
                    r += (al[i] - be_i) * old_stps[i]  # r.add_(old_stps[i], alpha=al[i] - be_i)

            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.copy()
                prev_flat_grad_t = Tensor._make(prev_flat_grad)
            else:
                np.copyto(prev_flat_grad, flat_grad)
                prev_flat_grad_t._vc[0] += 1
            prev_loss = loss

            # -- step length --------------------------------------------------------------
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / np.abs(flat_grad).sum()) * lr
            else:
                t = lr

            gtd = flat_grad.dot(d)  # directional derivative
            if gtd > -tolerance_change:
                break

            ls_func_evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = self._clone_param()

                def obj_func(x, t, d):
                    return self._directional_evaluate(closure, x, t, d)

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                    obj_func, x_init, t, d, loss, flat_grad, gtd, max_ls=max_eval - current_evals
                )
                self._add_grad(t, d)
                opt_cond = np.abs(flat_grad).max() <= tolerance_grad
            else:
                # fixed step; re-evaluate only if another iteration follows
                self._add_grad(t, d)
                if n_iter != max_iter:
                    loss = float(closure())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = np.abs(flat_grad).max() <= tolerance_grad
                    ls_func_evals = 1

            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            # -- stopping conditions ------------------------------------------------------
            if n_iter == max_iter:
                break
            if current_evals >= max_eval:
                break
            if opt_cond:
                break
            if np.abs(d * t).max() <= tolerance_change:  # lack of progress
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        state["d"] = _wrap(d)
        state["t"] = _wrap(t)
        state["old_dirs"] = old_dirs_t
        state["old_stps"] = old_stps_t
        state["ro"] = ro_t
        state["H_diag"] = _wrap(H_diag)
        state["prev_flat_grad"] = prev_flat_grad_t
        state["prev_loss"] = prev_loss

        return orig_loss


def _real_dtype(dt):
    return np.empty(0, dt).real.dtype
