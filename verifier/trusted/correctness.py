"""Correctness gate (g_corr), computed in the trusted parent on raw bytes the worker handed over.

A candidate output passes a trial when it has the reference's shape and dtype, no NaN/Inf where
the reference is finite, every element satisfies ``|c - r| <= atol + rtol * |r|`` (the paper's
protocol: atol = rtol = 1e-2; strict mode 1e-4), the norm-wise relative error is within rtol, and
it is not degenerate: all zeros, a constant, or a copy of an input do not pass where the reference
is none of those, even when they happen to fall inside an atol-dominated tolerance (KernelBench
issue #165: zeros "pass" softmax at atol 1e-2).

**Reductions are compared tightly.** An output whose elements each aggregate many inputs (at least
`REDUCTION_RATIO` input elements per output element, or at most `SMALL_NUMEL` elements: losses, sums,
norms, row statistics) must also match norm-wise within `RTOL_REDUCTION` (1e-4): the 1e-2 tolerance
let an MSE estimated from one row in twelve pass (its error, 0.3%, is far above what float accumulation
costs: at most 1.3e-6 over every honest kernel of the golden corpus). Where float32 itself is far from
the exact answer (cancellation), the parent asks the reference for its float64 answer (`truth`) and the
candidate passes if it is no more than `FP_NOISE` times as far from it as float32 PyTorch is. The same
second opinion applies to the norm-wise rule of any output: where the exact answer is (near) zero (the mean
of a normalised tensor, KernelBench level2 23), float32 PyTorch is noise as well, and a kernel as close to
the float64 answer as PyTorch passes; an all-zeros or constant answer is still refused as degenerate.

**Where float32 PyTorch itself misses the exact answer, rounding noise is judged on its own scale.** How far
float32 PyTorch lands is one draw of its rounding, and a plainer honest order of operations lands farther:
on KernelBench level2 23 the template's float32 kernel (normalisation folded into x * scale + shift) was
refused in 5 verifications of 12, up to 30 times as far as PyTorch (1e-7 on values of 1e-9). So when PyTorch is off by more than the bound, the candidate may also be off by
`FP_NOISE` times the unit rounding of the output dtype times the *working scale* -- the largest RMS of any
tensor the float64 forward computes (`Exact.scale`, measured in the reference's process) -- per element.
An estimate from a subset, a wrong constant or a skipped term is off by far more than that; a well
conditioned small output (float32 PyTorch within the bound) never gets this floor.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch

DEFAULT_TOL = 1e-2
STRICT_TOL = 1e-4
RTOL_REDUCTION = 1e-4  # norm-wise, for reductions (see the module docstring)
REDUCTION_RATIO = 64  # input elements per output element from which an output is a reduction
SMALL_NUMEL = 16  # outputs this small (scalars, a few statistics) count as reductions too
FP_NOISE = 8.0  # a reduction may be this many times farther from the float64 answer than float32 PyTorch


@dataclass
class Exact:
    """The float64 answer of one output, with the working scale of the forward that computed it (0: unknown)."""
    value: torch.Tensor
    scale: float = 0.0


def is_reduction(output_numel: int, input_numel: int) -> bool:
    return output_numel <= SMALL_NUMEL or input_numel >= REDUCTION_RATIO * max(1, output_numel)


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


_CHUNK = 1 << 20  # elements per chunk: temporaries stay cache-resident, one loop gathers every statistic


@dataclass
class _Scan:
    within: bool = True  # every element satisfies |c - r| <= tol + tol * |r| (NaN/Inf in c never do)
    finite_ref: bool = True
    diff_sq: float = 0.0
    ref_sq: float = 0.0
    cand_sq: float = 0.0
    c_min: float = float("inf")
    c_max: float = float("-inf")
    r_min: float = float("inf")
    r_max: float = float("-inf")

    @property
    def norm_rel(self) -> float:
        if self.ref_sq > 0:
            return math.sqrt(self.diff_sq / self.ref_sq)
        return 0.0 if self.diff_sq == 0 else float("inf")


def _scan(c: torch.Tensor, r: torch.Tensor, tol: float) -> _Scan:
    """One pass over both tensors in chunks (floating, same shape and dtype)."""
    st = _Scan()
    cf, rf = c.reshape(-1), r.reshape(-1)
    for start in range(0, cf.numel(), _CHUNK):
        cc, rr = cf[start : start + _CHUNK], rf[start : start + _CHUNK]
        d = cc - rr
        # max(|d| - tol*|r|) <= tol  <=>  every |d| <= tol + tol*|r|; a NaN makes the max NaN (fails)
        if st.within and not float(torch.sub(d.abs(), rr.abs(), alpha=tol).max()) <= tol:
            st.within = False
        st.diff_sq += float(torch.dot(d, d))
        st.ref_sq += float(torch.dot(rr, rr))
        st.cand_sq += float(torch.dot(cc, cc))
        lo, hi = torch.aminmax(cc)
        st.c_min, st.c_max = min(st.c_min, float(lo)), max(st.c_max, float(hi))
        lo, hi = torch.aminmax(rr)
        lo_f, hi_f = float(lo), float(hi)
        # aminmax propagates NaN and Inf, so a chunk is finite iff its extremes are
        st.finite_ref = st.finite_ref and math.isfinite(lo_f) and math.isfinite(hi_f)
        st.r_min, st.r_max = min(st.r_min, lo_f), max(st.r_max, hi_f)
    return st


def compare(candidate: torch.Tensor, reference: torch.Tensor, inputs: list[torch.Tensor], tol: float,
            label: str = "output", reduction: bool = False,
            truth: Callable[[], torch.Tensor | Exact] | None = None) -> Comparison:
    """``reduction``: apply the tight norm-wise rule of reductions; ``truth``: the float64 reference of this
    output, computed on demand when that rule fails (None: no float64 second opinion)."""
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
    st = _scan(c, r, tol)
    if not st.finite_ref:
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
        st = _scan(c, r, tol)
    if not st.within:
        return _mismatch(c, r, tol, label)
    result = Comparison(True, "", norm_rel_err=st.norm_rel)
    degenerate = _degenerate(c, r, inputs, st)
    if degenerate:
        result.ok = False
        result.message = f"{label}: {degenerate} (the reference is not); the kernel must compute the operator"
        return result
    if st.ref_sq > 0 and st.norm_rel > tol:
        # an output whose exact value is (near) zero -- the mean of a normalised tensor, a divergence of two
        # close distributions -- is float32 noise in PyTorch too: ask the float64 answer before refusing
        bound = min(tol, RTOL_REDUCTION) if reduction else tol
        judged = _against_truth(c, r, truth, bound, reference.dtype) if truth is not None else None
        if judged is not None and judged[0]:
            result.message = (f"{label}: within the float64 answer's tolerance ({judged[1]:.3g} <= {judged[3]:.3g}; "
                              f"float32 PyTorch is {judged[2]:.3g} away)")
            return result
        detail = "" if judged is None else (f"; against the exact (float64) answer it is {judged[1]:.3g} off, where "
                                            f"float32 PyTorch is {judged[2]:.3g} off")
        result.ok = False
        result.message = (f"{label}: norm-wise relative error {st.norm_rel:.4g} exceeds {tol:g} although every "
                          f"element is within the elementwise tolerance (the output values are too small for atol "
                          f"to judge; e.g. an all-zeros answer){detail}")
        return result
    if reduction and st.norm_rel > min(tol, RTOL_REDUCTION) and (st.ref_sq > 0 or st.diff_sq > 0):
        return _reduction(c, r, st, tol, label, truth, result, reference.dtype)
    return result


def _against_truth(c: torch.Tensor, r: torch.Tensor, truth: Callable[[], torch.Tensor | Exact],
                   bound: float, dtype: torch.dtype) -> tuple[bool, float, float, float]:
    """(ok, candidate's distance from the float64 answer, float32 PyTorch's distance, allowed distance): the
    candidate may be ``bound`` relative to the exact answer, or ``FP_NOISE`` times as far from it as PyTorch;
    where PyTorch itself is beyond the bound, ``FP_NOISE`` unit roundings of the working scale per element."""
    got = truth()
    exact_t, scale = (got.value, got.scale) if isinstance(got, Exact) else (got, 0.0)
    exact = exact_t.to(torch.float64).reshape(c.shape)
    e_cand = float((c.double() - exact).norm())
    e_ref = float((r.double() - exact).norm())
    e_bound = bound * float(exact.norm())
    allowed = max(e_bound, FP_NOISE * e_ref)
    if e_ref > e_bound and scale > 0:
        unit = torch.finfo(dtype).eps / 2  # only floating outputs reach the float64 opinion
        allowed = max(allowed, FP_NOISE * unit * scale * math.sqrt(c.numel()))
    return e_cand <= allowed, e_cand, e_ref, allowed


def _reduction(c: torch.Tensor, r: torch.Tensor, st: _Scan, tol: float, label: str,
               truth: Callable[[], torch.Tensor | Exact] | None, result: Comparison, dtype: torch.dtype) -> Comparison:
    """The tight rule of reductions failed on the float32 reference; ask float64 before refusing."""
    bound = min(tol, RTOL_REDUCTION)
    if truth is not None:
        _, e_cand, e_ref, allowed = _against_truth(c, r, truth, bound, dtype)
        if e_cand <= allowed:
            result.message = (f"{label}: within the float64 answer's tolerance ({e_cand:.3g} <= {allowed:.3g}; "
                              f"float32 PyTorch is {e_ref:.3g} away)")
            return result
        detail = (f"; against the exact (float64) answer it is {e_cand:.3g} off, where float32 PyTorch is "
                  f"{e_ref:.3g} off")
    else:
        detail = ""
    result.ok = False
    result.message = (f"{label}: each output element aggregates many inputs, and such outputs must match "
                      f"norm-wise within {bound:g}; this one is off by {st.norm_rel:.3g}{detail}. Compute the "
                      "reduction over all of its data (an estimate from a subset, a stride or a closed form is "
                      "not the operator), accumulating in double or pairwise if float sums drift")
    return result


def _mismatch(c: torch.Tensor, r: torch.Tensor, tol: float, label: str) -> Comparison:
    """Feedback for an output outside the elementwise tolerance (full-tensor work: failures only)."""
    nonfinite = ~torch.isfinite(c)
    if bool(nonfinite.any()):
        i = int(nonfinite.reshape(-1).nonzero()[0])
        return Comparison(False, f"{label}: {int(nonfinite.sum())} NaN/Inf values where the reference is "
                          f"finite; first at {_fmt_index(i, tuple(r.shape))} (got {c.reshape(-1)[i].item()}, "
                          f"expected {r.reshape(-1)[i].item():.6g})", float("inf"), float("inf"), float("inf"))
    abs_err = (c - r).abs()
    bad = abs_err > tol + tol * r.abs()
    max_abs = float(abs_err.max())
    max_rel = float((abs_err / r.abs().clamp_min(1e-12)).max())
    i = int(bad.reshape(-1).nonzero()[0])
    return Comparison(False, f"{label}: {int(bad.sum())} of {r.numel()} elements outside atol=rtol={tol:g}; "
                      f"max abs err {max_abs:.4g}, max rel err {max_rel:.4g}; first mismatch at "
                      f"{_fmt_index(i, tuple(r.shape))}: expected {r.reshape(-1)[i].item():.6g}, "
                      f"got {c.reshape(-1)[i].item():.6g}", max_abs, max_rel)


def _degenerate(c: torch.Tensor, r: torch.Tensor, inputs: list[torch.Tensor], st: _Scan) -> str:
    """Why a passing-looking output is a trivial answer, or '' if it is not."""
    if c.numel() <= 1:
        return ""
    if st.cand_sq == 0 and st.ref_sq > 0:
        return "output is all zeros"
    if st.c_min == st.c_max and st.r_min != st.r_max:
        return f"output is the constant {st.c_min:.6g}"
    for k, x in enumerate(inputs):
        if x.shape == c.shape and x.is_floating_point():
            xd = x.to(c.dtype)
            if torch.equal(xd, c) and not torch.equal(xd, r):
                return f"output is a copy of input {k}"
    return ""


def quick_match(candidate: torch.Tensor, reference: torch.Tensor, tol: float, reduction: bool = False) -> bool:
    """Fast path for timed calls: True when the output is within the elementwise and norm-wise
    tolerance of a finite reference and not all zeros (the trials already ran the full checks), and, for a
    reduction, within its tight norm-wise bound (otherwise `compare` decides, with the float64 answer)."""
    if candidate.shape != reference.shape or candidate.dtype != reference.dtype:
        return False
    if not reference.is_floating_point():
        return torch.equal(candidate, reference)
    if reference.numel() == 0:
        return True
    st = _scan(candidate, reference, tol)
    bound = min(tol, RTOL_REDUCTION) if reduction else tol
    return st.within and st.finite_ref and (st.ref_sq == 0 or (st.norm_rel <= bound and st.cand_sq > 0))
