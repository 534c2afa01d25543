"""Runs INSIDE the reference sandbox: how large the planted values of a trial may be, asked of the reference.

The ``special`` and ``distinct`` trials plant large magnitudes (`trial_inputs`: 1e2 up to 1e10 in float32). Where a
task's arithmetic amplifies them and then cancels -- a SwiGLU's products of two amplified values summed by its down
projection -- the exact answer of a few elements is far below the terms that make it, and float32 cannot resolve
it: PyTorch's own float32 answer misses the float64 one there by 3 to 11 times the tolerance (measured at 1e10, 1e8
and 1e6), and an honest kernel with another order of summation misses it elsewhere, so such a trial refused honest
kernels in 6 verifications of 10. The worker therefore asks, trial by trial, whether the reference **resolves** its
answer on the planted inputs (`resolves`): every output element of float32 PyTorch within 1/`MARGIN` of the
tolerance of the float64 answer (elementwise and norm-wise, the parent's tolerances per dtype), NaN/Inf where float64
has them and nowhere else, integer outputs equal. If it does not, the same trial is drawn again with the large values
of a lower level of `trial_inputs.LARGE_LEVELS` (same seed: the same positions and strata, a narrower range), down to
1e3; the first level that resolves is kept. A reference that resolves at no level (the large values are not what it
misses) keeps level 0, as before.

So a candidate is judged only on planted values whose answer float32 arithmetic gives: a kernel wrong above the
level its task resolves is not caught by these trials (docs/verifier.md, "Limits we know of"). The decision depends
on the reference and the secret inputs alone; the candidate has no part in it.
"""
from __future__ import annotations

import math
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

MARGIN = 8.0  # float32 PyTorch within this fraction of the tolerance: an honest kernel several times farther passes
# a task whose float32 answer lands this far inside the tolerance (relative to it) in EASY_PROBES probes in a row, of one
# kind of trial, is not probed again in that worker (elementwise operators, softmax, norms: ~1e-5 of it; a matmul or a
# SwiGLU is never this far inside): the probe's float64 forward is paid for a task's first verdicts, not for each
EASY = 1e-3
EASY_PROBES = 4
# PyTorch's realised error on one draw is partly luck: a LayerNorm row with a common offset of 1e4 is answered 1e-5
# from the float64 answer on one draw and 1.5e-4 on the next, and a draw where it happened to land inside 1/MARGIN
# planted values at which an honest kernel summing in another order misses the tolerance (CI, round 3's eighth
# stop: 2 runs of ~3,600 tests). The probe therefore also asks JITTERS variants of the draw (`jittered`: each
# floating element moved by at most JITTER units of its dtype's rounding, a new rounding pattern with the same
# conditioning) and takes the worst; a draw answered within EASY needs no variant
JITTERS = 2
JITTER = 16.0
# and an honest kernel may sum in the worst order: the probe's float64 forward is asked once more with every
# contraction and sum moved as far as a sequential float32 sum rounds (`Accumulation`); that answer must stay within
# 1/NOISE_MARGIN of the tolerance of the exact one (it models the honest kernel's own error, not PyTorch's)
NOISE_MARGIN = 2.0


def worst(r32: list[Any], r64: list[Any], tols: dict[str, list[float]]) -> float:
    """How far the reference's outputs ``r32`` are from the float64 answer ``r64`` (same order), as a fraction of the
    parent's tolerance ``tols`` (dtype name -> [elementwise, norm-wise]): the largest over the elements and the
    norm-wise error; ``inf`` where non-floating outputs differ, NaN/Inf sit at other positions, or the outputs do not
    pair up."""
    if len(r32) != len(r64):
        return float("inf")
    out = 0.0
    for a, b in zip(r32, r64):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or a.shape != b.shape:
            return float("inf")
        if not a.is_floating_point():
            if not torch.equal(a, b.to(a.dtype)):
                return float("inf")
            continue
        tol = tols.get(str(a.dtype).removeprefix("torch."))
        if tol is None or a.numel() == 0:
            continue
        el, nw = float(tol[0]), float(tol[1])
        x, y = a.reshape(-1), b.reshape(-1).double()
        lo, hi = torch.aminmax(y)
        if not (math.isfinite(float(lo)) and math.isfinite(float(hi))) or not bool(torch.isfinite(x).all()):
            fx, fy = torch.isfinite(x), torch.isfinite(y)
            if not torch.equal(fx, fy):
                return float("inf")  # float32 overflowed where float64 did not (or the reverse)
            xd = x[~fx].double()
            if not torch.equal(xd.nan_to_num(0.0), y[~fy].nan_to_num(0.0)) or not torch.equal(xd.isnan(), y[~fy].isnan()):
                return float("inf")
            x, y = x[fx], y[fy]
            if y.numel() == 0:
                continue
        d = torch.sub(y, x)  # float64
        ya = y.abs()
        # the largest |d| / (el + el |y|), as a fraction of 1
        out = max(out, float((d.abs_() / ya.mul_(el).add_(el)).max()))
        ny = float(torch.linalg.vector_norm(y))
        if ny > 0:
            out = max(out, float(torch.linalg.vector_norm(d)) / (nw * ny))
        elif float(d.abs().max()) > 0:
            return float("inf")
    return out


def jittered(tensors: list[Any], k: int) -> list[Any]:
    """The ``k``-th rounding variant of a trial's inputs for the probe (`JITTERS`): every floating tensor times
    1 + u * `JITTER` x its dtype's unit roundoff, u uniform in [-1, 1] per element from a generator of its own
    (torch's global stream untouched); zeros, non-finite values and other tensors as they are. The answer's
    conditioning is the same; which elements float32 happens to round well is not."""
    gen = torch.Generator().manual_seed(0x5EED + k)
    out = []
    for t in tensors:
        if isinstance(t, torch.Tensor) and t.is_floating_point() and t.numel() > 0:
            u = torch.rand(t.shape, generator=gen, dtype=torch.float64).mul_(2.0).sub_(1.0)
            u.mul_(JITTER * torch.finfo(t.dtype).eps).add_(1.0)
            t = (t.double() * u).to(t.dtype)
        out.append(t)
    return out


def _operands(func: Any, args: tuple, kwargs: dict) -> tuple[Any, int] | None:
    """For a contraction or a sum of the float64 forward: the same operation on the operands' magnitudes (a
    callable giving sum |a_i| |b_i| per output element) and the number of terms K each output element sums; None
    for any other operation."""
    aten = torch.ops.aten
    if func in (aten.mm.default, aten.bmm.default, aten.mv.default, aten.dot.default):
        a, b = args[0], args[1]
        return (lambda: func(a.abs(), b.abs())), int(a.shape[-1])
    if func in (aten.addmm.default, aten.baddbmm.default, aten.addmv.default):
        a, b = args[1], args[2]
        alpha = abs(float(kwargs.get("alpha", args[4] if len(args) > 4 else 1.0)))
        inner = {aten.addmm.default: aten.mm.default, aten.baddbmm.default: aten.bmm.default,
                 aten.addmv.default: aten.mv.default}[func]
        return (lambda: inner(a.abs(), b.abs()) * alpha), int(a.shape[-1])
    if func == aten.convolution.default and len(args) == 9:
        x, w = args[0], args[1]
        rest = list(args[3:])
        terms = int(w[0].numel()) if not rest[3] else int(w.shape[0] // max(1, int(rest[5])) * w[0, 0].numel())
        return (lambda: func(x.abs(), w.abs(), None, *rest)), max(1, terms)
    if func in (aten.sum.dim_IntList, aten.mean.dim) and args[0].dim() > 0:
        x = args[0]
        dims = args[1] if len(args) > 1 and args[1] else list(range(x.dim()))
        terms = 1
        for d in dims:
            terms *= int(x.shape[d])
        return (lambda: func(x.abs(), *args[1:], **kwargs)), max(1, terms)
    if func == aten.sum.default and args[0].dim() > 0:
        x = args[0]
        return (lambda: func(x.abs())), max(1, int(x.numel()))
    return None


class Accumulation(TorchDispatchMode):
    """A float64 forward in which every contraction (matmul, linear, convolution) and sum lands where an honest
    float32 kernel summing in another order could: its result moved by u sqrt(K) eps |a| |b| per element (K terms,
    eps float32's unit roundoff, u uniform in [-1, 1] from a generator of its own), the size of a sequential
    float32 sum's rounding (PyTorch's blocked sums round far less: a cube or a loop summing K products in order
    lands several times as far, so PyTorch resolving its answer does not say an honest kernel can; CI, round 3's
    eighth stop: a Linear+softmax at temperature 0.25 refused in 2 of 50 verifications)."""

    def __init__(self, seed: int = 0x5EED) -> None:
        super().__init__()
        self.gen = torch.Generator().manual_seed(seed)
        self.eps = torch.finfo(torch.float32).eps / 2
        self.moved = 0  # how many results were moved (0: the forward has no contraction or sum: a plain float64 one)

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if not isinstance(out, torch.Tensor) or out.dtype != torch.float64 or out.numel() == 0:
            return out
        spec = _operands(func, args, kwargs)
        if spec is None:
            return out
        magnitude, terms = spec
        self.moved += 1
        u = torch.rand(out.shape, generator=self.gen, dtype=torch.float64).mul_(2.0).sub_(1.0)
        return out + u.mul_(magnitude()).mul_(math.sqrt(terms) * self.eps)


def resolves(r32: list[Any], r64: list[Any], tols: dict[str, list[float]]) -> bool:
    """Whether the reference's outputs ``r32`` give the float64 answer ``r64`` (same order) to within 1/`MARGIN` of
    the parent's tolerance ``tols`` (dtype name -> [elementwise, norm-wise]) in every element; non-floating outputs
    must be equal, NaN/Inf must sit at the same positions."""
    return worst(r32, r64, tols) <= 1.0 / MARGIN
