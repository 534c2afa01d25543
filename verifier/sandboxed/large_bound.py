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

MARGIN = 8.0  # float32 PyTorch within this fraction of the tolerance: an honest kernel several times farther passes
# a task whose float32 answer lands this far inside the tolerance (relative to it) in EASY_PROBES probes in a row, of one
# kind of trial, is not probed again in that worker (elementwise operators, softmax, norms: ~1e-5 of it; a matmul or a
# SwiGLU is never this far inside): the probe's float64 forward is paid for a task's first verdicts, not for each
EASY = 1e-3
EASY_PROBES = 4


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


def resolves(r32: list[Any], r64: list[Any], tols: dict[str, list[float]]) -> bool:
    """Whether the reference's outputs ``r32`` give the float64 answer ``r64`` (same order) to within 1/`MARGIN` of
    the parent's tolerance ``tols`` (dtype name -> [elementwise, norm-wise]) in every element; non-floating outputs
    must be equal, NaN/Inf must sit at the same positions."""
    return worst(r32, r64, tols) <= 1.0 / MARGIN
