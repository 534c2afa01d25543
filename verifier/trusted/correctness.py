"""Correctness gate (g_corr), computed in the trusted parent on raw bytes the worker handed over.

A candidate output passes a trial when it has the reference's shape and dtype, no NaN/Inf where
the reference is finite, every element satisfies ``|c - r| <= atol + rtol * |r|`` (the paper's
protocol: atol = rtol = 1e-2; strict mode 1e-4), the norm-wise relative error is within rtol, and
it is not degenerate: all zeros, a constant, or a copy of an input do not pass where the reference
is none of those, even when they happen to fall inside an atol-dominated tolerance (KernelBench
issue #165: zeros "pass" softmax at atol 1e-2).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

DEFAULT_TOL = 1e-2
STRICT_TOL = 1e-4


@dataclass
class Comparison:
    ok: bool
    message: str = ""
    max_abs_err: float = 0.0
    max_rel_err: float = 0.0
    norm_rel_err: float = 0.0


def _fmt_index(flat_index: int, shape: tuple[int, ...]) -> str:
    idx = []
    for dim in reversed(shape):
        idx.append(flat_index % dim if dim else 0)
        flat_index //= dim if dim else 1
    return "[" + ", ".join(str(i) for i in reversed(idx)) + "]"


def _is_constant(t: torch.Tensor) -> bool:
    return t.numel() > 1 and bool((t == t.reshape(-1)[0]).all())


def compare(candidate: torch.Tensor, reference: torch.Tensor, inputs: list[torch.Tensor], tol: float,
            label: str = "output") -> Comparison:
    if candidate.shape != reference.shape:
        return Comparison(False, f"{label}: shape mismatch: expected {tuple(reference.shape)}, got {tuple(candidate.shape)}")
    if candidate.dtype != reference.dtype:
        return Comparison(False, f"{label}: dtype mismatch: expected {reference.dtype}, got {candidate.dtype}")
    if reference.numel() == 0:
        return Comparison(True)
    if not reference.is_floating_point():
        diff = candidate != reference
        if bool(diff.any()):
            i = int(diff.reshape(-1).nonzero()[0])
            return Comparison(False, f"{label}: {int(diff.sum())} of {reference.numel()} elements differ; first at "
                              f"{_fmt_index(i, tuple(reference.shape))}: expected {reference.reshape(-1)[i].item()}, "
                              f"got {candidate.reshape(-1)[i].item()}")
        return Comparison(True)

    # float64 stays float64; lower precisions are judged in float32 (enough for 1e-2 / 1e-4 tolerances)
    work = torch.float64 if reference.dtype == torch.float64 else torch.float32
    c = candidate.to(work)
    r = reference.to(work)
    if not bool(torch.isfinite(r).all()):
        # NaN never matches (not even NaN); an Inf is matched only by the same Inf
        if bool(torch.isnan(r).any()):
            i = int(torch.isnan(r).reshape(-1).nonzero()[0])
            return Comparison(False, f"{label}: the reference is NaN at {_fmt_index(i, tuple(r.shape))}; NaN never matches")
        inf = torch.isinf(r)
        if not bool((c[inf] == r[inf]).all()):
            i = int((inf & (c != r)).reshape(-1).nonzero()[0])
            return Comparison(False, f"{label}: expected {r.reshape(-1)[i].item()} at {_fmt_index(i, tuple(r.shape))}, "
                              f"got {c.reshape(-1)[i].item()}")
        c, r = c.masked_fill(inf, 0.0), r.masked_fill(inf, 0.0)
    diff = c - r
    abs_err = diff.abs()
    # NaN compares False and Inf exceeds any bound, so non-finite outputs land in `bad`
    bad = ~(abs_err <= tol + tol * r.abs())
    if bool(bad.any()):
        nonfinite = ~torch.isfinite(c)
        if bool(nonfinite.any()):
            i = int(nonfinite.reshape(-1).nonzero()[0])
            return Comparison(False, f"{label}: {int(nonfinite.sum())} NaN/Inf values where the reference is "
                              f"finite; first at {_fmt_index(i, tuple(r.shape))} (got {c.reshape(-1)[i].item()}, "
                              f"expected {r.reshape(-1)[i].item():.6g})", float("inf"), float("inf"), float("inf"))
        max_abs = float(abs_err.max())
        max_rel = float((abs_err / r.abs().clamp_min(1e-12)).max())
        i = int(bad.reshape(-1).nonzero()[0])
        return Comparison(False, f"{label}: {int(bad.sum())} of {r.numel()} elements outside atol=rtol={tol:g}; "
                          f"max abs err {max_abs:.4g}, max rel err {max_rel:.4g}; first mismatch at "
                          f"{_fmt_index(i, tuple(r.shape))}: expected {r.reshape(-1)[i].item():.6g}, "
                          f"got {c.reshape(-1)[i].item():.6g}", max_abs, max_rel)
    max_abs = float(abs_err.max())
    max_rel = float((abs_err / r.abs().clamp_min(1e-12)).max())
    ref_norm = float(r.double().norm())
    norm_rel = float(diff.double().norm()) / ref_norm if ref_norm > 0 else (0.0 if max_abs == 0 else float("inf"))
    result = Comparison(True, "", max_abs, max_rel, norm_rel)

    degenerate = _degenerate(c, r, inputs)
    if degenerate:
        result.ok = False
        result.message = f"{label}: {degenerate} (the reference is not); the kernel must compute the operator"
        return result
    if ref_norm > 0 and norm_rel > tol:
        result.ok = False
        result.message = (f"{label}: norm-wise relative error {norm_rel:.4g} exceeds {tol:g} although every element "
                          f"is within the elementwise tolerance (the output values are too small for atol to "
                          f"judge; e.g. an all-zeros answer)")
        return result
    return result


def _degenerate(c: torch.Tensor, r: torch.Tensor, inputs: list[torch.Tensor]) -> str:
    """Why a passing-looking output is a trivial answer, or '' if it is not."""
    if c.numel() <= 1:
        return ""
    if bool((c == 0).all()) and not bool((r == 0).all()):
        return "output is all zeros"
    if _is_constant(c) and not _is_constant(r):
        return f"output is the constant {c.reshape(-1)[0].item():.6g}"
    for k, x in enumerate(inputs):
        if x.shape == c.shape and x.is_floating_point():
            xd = x.to(c.dtype)
            if torch.equal(xd, c) and not torch.equal(xd, r):
                return f"output is a copy of input {k}"
    return ""


def quick_match(candidate: torch.Tensor, reference: torch.Tensor, tol: float) -> bool:
    """Fast path for timed calls: True when `compare` would certainly pass on these two tensors
    (same shape/dtype, all finite, elementwise and norm-wise within tol, not all zeros)."""
    if candidate.shape != reference.shape or candidate.dtype != reference.dtype:
        return False
    if not reference.is_floating_point():
        return torch.equal(candidate, reference)
    if reference.numel() == 0:
        return True
    diff = candidate - reference
    # NaN compares False and Inf exceeds any bound, so one pass also rejects non-finite values
    if not bool((diff.abs() <= tol + tol * reference.abs()).all()):
        return False
    ref_norm = float(torch.linalg.vector_norm(reference))
    return ref_norm == 0 or float(torch.linalg.vector_norm(diff)) <= tol * ref_norm

