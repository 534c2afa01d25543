"""Correctness gate (g_corr), computed in the trusted parent on raw bytes the worker handed over.

A candidate output passes a trial when it has the reference's shape and dtype, matches the reference's
NaN/Inf position by position (NaN where the reference is NaN, the same signed Inf where it is Inf, nothing
non-finite elsewhere), every other element satisfies ``|c - r| <= atol + rtol * |r|``, the norm-wise
relative error over those elements is within rtol, and it is not degenerate: all zeros, a constant, or a
copy of an input do not pass where the reference is none of those, even when they happen to fall inside an
atol-dominated tolerance (KernelBench issue #165: zeros "pass" softmax at atol 1e-2). Every element is
judged: the non-finite positions are masked out of the finite rules, never a reason to skip a trial.

**Tolerances follow the output dtype** (`tolerance`): float32 gets the configured atol = rtol (the paper's
1e-2; strict mode 1e-4); float64 must be float64-accurate, ``1e-7 x`` that (1e-9; float32 arithmetic widened
to double is 1e-7 to 1e-6 off, an honest double kernel in another summation order at most 2e-12 on the
operators we measured); float16/bfloat16 get the configured value but never less than one unit of their
rounding (eps), so strict mode does not ask a half kernel for more than half precision holds.

**Reductions are compared tightly.** An output whose elements each aggregate many inputs (at least
`REDUCTION_RATIO` input elements per output element, or at most `SMALL_NUMEL` elements: losses, sums,
norms, row statistics) must also match norm-wise within `RTOL_REDUCTION` (1e-4; float64: 1e-10): the 1e-2
tolerance let an MSE estimated from one row in twelve pass (its error, 0.3%, is far above what float
accumulation costs: at most 1.3e-6 over every honest kernel of the golden corpus). Where float32 itself is
far from the exact answer (cancellation), the parent asks the reference for its float64 answer (`truth`) and
the candidate passes if it is no more than `FP_NOISE` times as far from it as float32 PyTorch is. The same
second opinion applies to the norm-wise rule of any output: where the exact answer is (near) zero (the mean
of a normalised tensor, KernelBench level2 23), float32 PyTorch is noise as well, and a kernel as close to
the float64 answer as PyTorch passes; an all-zeros or constant answer is still refused as degenerate.

**Float32 outputs are float32-accurate.** Every float32 output must also match norm-wise within
`PRECISION_F32` (1e-4, KernelBench's current float32 tolerance, here norm-wise so that a few elements near
zero do not decide), with the same float64 second opinion: the elementwise 1e-2 alone accepted a float32
result rounded through bfloat16 (norm-wise 1.7e-3 off on randn; float16 2e-4) and the tanh form of GELU for
the exact one (2e-4), both faster or simpler and neither the operator. Honest float32 kernels in another
order of operations are 1e-7 to 3e-5 off (a naive sequential sum of 2^20 shifted values: 3e-5).

**Where float32 PyTorch itself misses the exact answer, rounding noise is judged on its own scale.** How far
float32 PyTorch lands is one draw of its rounding, and a plainer honest order of operations lands farther:
on KernelBench level2 23 the template's float32 kernel (normalisation folded into x * scale + shift) was
refused in 5 verifications of 12, up to 30 times as far as PyTorch (1e-7 on values of 1e-9). So when PyTorch
is off by more than the bound, the candidate may also be off by `FP_NOISE` times the unit rounding of the
output dtype times the *working scale* -- the largest RMS of any tensor the float64 forward computes
(`Exact.scale`, measured in the reference's process) -- per element. An estimate from a subset, a wrong
constant or a skipped term is off by far more than that; a well conditioned small output (float32 PyTorch
within the bound) never gets this floor.

**The floor cannot be met by noise.** Noise, a constant or a scaled copy of an input is as far from the exact
answer as 0 is (it does not correlate with it), so the floor is granted only where the exact answer is
itself at float32's noise level -- no farther from 0 than `FP_NOISE` times PyTorch's own error -- or where the
candidate carries the answer (it is within half the answer's size of it). A small answer that float32
resolves (KernelBench level2 23's mean with its affine parameters drawn, or a small residual on top of it)
is then judged by the bound and PyTorch's distance alone, and an answer near 0 is as wrong as it looks.
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
ELEMENT_OPINION_MAX = 16  # the float64 opinion on elementwise misses: at most this many (or 0.1%) elements
F64_SCALE = 1e-7  # float64 outputs: the configured tolerance times this (1e-9 by default, 1e-11 strict)
PRECISION_F32 = 1e-4  # norm-wise, for every float32 output (see the module docstring)
RTOL_REDUCTION_F64 = 1e-10  # norm-wise, for float64 reductions


@dataclass(frozen=True)
class Tolerance:
    """What an output of one dtype is judged by: ``elementwise`` is atol = rtol, ``reduction`` the norm-wise
    bound of outputs that aggregate many inputs, ``precision`` the norm-wise bound of every other output
    (float32: float32-accurate, see `PRECISION_F32`; other dtypes: ``elementwise``)."""
    elementwise: float
    reduction: float
    precision: float = 0.0  # 0: the elementwise value

    def normwise(self, reduction: bool) -> float:
        return self.reduction if reduction else (self.precision or self.elementwise)


def tolerance(dtype: torch.dtype, tol: float) -> Tolerance:
    """The tolerances of an output of ``dtype`` under the configured ``tol`` (the table in docs/verifier.md)."""
    if dtype == torch.float64:
        el = tol * F64_SCALE
        return Tolerance(el, min(el, RTOL_REDUCTION_F64))
    if dtype in (torch.float16, torch.bfloat16):  # never below one unit of the dtype's rounding
        el = max(tol, torch.finfo(dtype).eps)
        return Tolerance(el, min(el, RTOL_REDUCTION))
    return Tolerance(tol, min(tol, RTOL_REDUCTION), min(tol, PRECISION_F32))


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
    nonfinite: int = 0  # reference elements that are NaN/Inf (matched position by position, masked otherwise)


def _fmt_index(flat_index: int, shape: tuple[int, ...]) -> str:
    idx = []
    for dim in reversed(shape):
        idx.append(flat_index % dim if dim else 0)
        flat_index //= dim if dim else 1
    return "[" + ", ".join(str(i) for i in reversed(idx)) + "]"


_CHUNK = 1 << 20  # elements per chunk: temporaries stay cache-resident, one loop gathers every statistic


@dataclass
class _Scan:
    """Statistics of one pass; the finite ones over the elements where the reference is finite."""
    within: bool = True  # every element satisfies |c - r| <= tol + tol * |r| (NaN/Inf in c never do)
    nonfinite: int = 0  # reference elements that are NaN or +-Inf
    nonfinite_bad: int = -1  # the first flat index where the candidate does not repeat them (-1: none)
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


def _split_nonfinite(st: _Scan, cc: torch.Tensor, rr: torch.Tensor, start: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A chunk whose reference holds NaN/Inf: check the candidate repeats them (NaN where NaN, the same Inf
    where Inf), count them, and return the chunk's elements where the reference is finite."""
    fin = torch.isfinite(rr)
    idx = torch.logical_not(fin).nonzero().squeeze(1)  # few, as a rule: judged on their own
    cn, rn = cc[idx], rr[idx]
    same = (cn == rn) | (torch.isnan(cn) & torch.isnan(rn))
    st.nonfinite += idx.numel()
    if st.nonfinite_bad < 0 and not bool(same.all()):
        st.nonfinite_bad = start + int(idx[torch.logical_not(same).nonzero()[0]])
    return cc[fin], rr[fin]


# the magnitudes between which float32 sums of squares of a chunk neither underflow nor overflow (with room for a
# chunk's worth of terms)
_SQUARES_SAFE = (1e-15, 1e15)


def _scan(c: torch.Tensor, r: torch.Tensor, tol: float) -> _Scan:
    """One pass over both tensors in chunks (floating, same shape and dtype). Chunks with a finite reference
    (all of them, nearly always) cost what they always did; one with NaN/Inf is split first."""
    st = _Scan()
    cf, rf = c.reshape(-1), r.reshape(-1)
    wide = c.dtype in (torch.float32, torch.float64)
    for start in range(0, cf.numel(), _CHUNK):
        cc, rr = cf[start : start + _CHUNK], rf[start : start + _CHUNK]
        if not wide:
            cc, rr = cc.float(), rr.float()
        lo, hi = torch.aminmax(rr)
        lo_f, hi_f = float(lo), float(hi)
        # aminmax propagates NaN and Inf, so a chunk is finite iff its extremes are
        if not (math.isfinite(lo_f) and math.isfinite(hi_f)):
            cc, rr = _split_nonfinite(st, cc, rr, start)
            if rr.numel() == 0:
                continue
            lo, hi = torch.aminmax(rr)
            lo_f, hi_f = float(lo), float(hi)
        d = cc - rr
        # max(|d| - tol*|r|) <= tol  <=>  every |d| <= tol + tol*|r|; a NaN makes the max NaN (fails)
        if st.within and not float(torch.sub(d.abs(), rr.abs(), alpha=tol).max()) <= tol:
            st.within = False
        c_lo, c_hi = torch.aminmax(cc)
        c_lo_f, c_hi_f = float(c_lo), float(c_hi)
        if rr.dtype == torch.float32:
            # float32 squares underflow below ~1e-19 and overflow above ~1e19: a chunk whose values lie out there is
            # summed in float64, or an output of tiny values has no norm at all and the norm-wise rules, the
            # all-zeros guard among them, are silently skipped (red-team rt3_tiny_outputs_underflow: x*1e-30 for
            # 1e-24*tanh(x) passed); a NaN/Inf output value leaves the chunk as it is (the elementwise rule fails it)
            size = max(abs(lo_f), abs(hi_f), abs(c_lo_f), abs(c_hi_f))
            if size < _SQUARES_SAFE[0] or (_SQUARES_SAFE[1] < size < math.inf):
                d, cc, rr = d.double(), cc.double(), rr.double()
        st.diff_sq += float(torch.dot(d, d))
        st.ref_sq += float(torch.dot(rr, rr))
        st.cand_sq += float(torch.dot(cc, cc))
        st.c_min, st.c_max = min(st.c_min, c_lo_f), max(st.c_max, c_hi_f)
        st.r_min, st.r_max = min(st.r_min, lo_f), max(st.r_max, hi_f)
    return st


def compare(candidate: torch.Tensor, reference: torch.Tensor, inputs: list[torch.Tensor], tol: float,
            label: str = "output", reduction: bool = False,
            truth: Callable[[], torch.Tensor | Exact] | None = None) -> Comparison:
    """``tol``: the configured tolerance (float32's; other dtypes derive theirs, see `tolerance`);
    ``reduction``: apply the tight norm-wise rule of reductions; ``truth``: the float64 reference of this
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

    tl = tolerance(reference.dtype, tol)
    # float64 stays float64; lower precisions are judged in float32 (enough for their tolerances)
    work = torch.float64 if reference.dtype == torch.float64 else torch.float32
    c = candidate.to(work)
    r = reference.to(work)
    st = _scan(c, r, tl.elementwise)
    if st.nonfinite_bad >= 0 and truth is not None and _nonfinite_artifacts(c, r, truth, tl.elementwise,
                                                                             reference.dtype):
        # the reference's NaN/Inf there is its own overflow (float16 partial sums), and the output is the answer
        fin0 = torch.isfinite(r)
        c, r = c.masked_fill(~fin0, 0.0), r.masked_fill(~fin0, 0.0)
        st = _scan(c, r, tl.elementwise)
    if st.nonfinite_bad >= 0:
        i = st.nonfinite_bad
        return Comparison(False, f"{label}: the reference is {r.reshape(-1)[i].item()} at "
                          f"{_fmt_index(i, tuple(r.shape))}, the output {c.reshape(-1)[i].item()}; NaN and Inf must "
                          f"match position by position (NaN where the reference is NaN, the same signed Inf where it "
                          f"is Inf: {st.nonfinite} such elements here)", float("inf"), float("inf"), float("inf"),
                          nonfinite=st.nonfinite)
    judged = r.numel() - st.nonfinite
    if st.nonfinite and judged == 0:
        return Comparison(True, f"{label}: every element of the reference is NaN/Inf, and the output repeats them",
                          nonfinite=st.nonfinite)
    raw_c, raw_r, fin = c, r, None
    if st.nonfinite and (not st.within or (st.ref_sq > 0 and st.norm_rel > tl.elementwise) or
                         (reduction and st.norm_rel > tl.reduction)):
        # the non-finite positions matched; the full-tensor work below (failures, the float64 opinion) judges
        # the rest: zeros at those positions in both tensors change nothing
        fin = torch.isfinite(r)
        c, r = c.masked_fill(~fin, 0.0), r.masked_fill(~fin, 0.0)
    if not st.within and not (truth is not None and _elements_within_truth(c, r, truth, tl.elementwise)):
        cmp = _mismatch(c, r, tl.elementwise, label, reference.dtype)
        cmp.nonfinite = st.nonfinite
        return cmp
    result = Comparison(True, "", norm_rel_err=st.norm_rel, nonfinite=st.nonfinite)
    degenerate = _degenerate(raw_c, raw_r, inputs, st, judged)
    if degenerate and truth is not None and st.c_min == st.c_max != 0 and _noise_around_constant(r, truth, fin, st.c_min):
        degenerate = ""  # the answer is that constant: PyTorch's spread around it is its own rounding
    if degenerate:
        result.ok = False
        result.message = f"{label}: {degenerate} (the reference is not); the kernel must compute the operator"
        return result
    if st.ref_sq > 0 and st.norm_rel > tl.elementwise:
        # an output whose exact value is (near) zero -- the mean of a normalised tensor, a divergence of two
        # close distributions -- is float32 noise in PyTorch too: ask the float64 answer before refusing
        bound = tl.reduction if reduction else tl.elementwise
        op = _against_truth(c, r, truth, bound, reference.dtype, judged, fin) if truth is not None else None
        if op is not None and op.ok:
            result.message = (f"{label}: within the float64 answer's tolerance ({op.e_cand:.3g} <= {op.allowed:.3g}; "
                              f"float32 PyTorch is {op.e_ref:.3g} away)")
            return result
        result.ok = False
        result.message = (f"{label}: norm-wise relative error {st.norm_rel:.4g} exceeds {tl.elementwise:g}"
                          f"{_dtype_note(reference.dtype)} although every element is within the elementwise "
                          f"tolerance (the output values are too small for atol to judge; e.g. an all-zeros "
                          f"answer){'' if op is None else op.detail()}")
        return result
    bound = tl.normwise(reduction)
    if st.norm_rel > bound and (st.ref_sq > 0 or st.diff_sq > 0):
        return _normwise(c, r, st, bound, label, truth, result, reference.dtype, judged, fin, reduction)
    return result


def _dtype_note(dtype: torch.dtype) -> str:
    return "" if dtype == torch.float32 else f" ({str(dtype).replace('torch.', '')} output)"


@dataclass
class _Opinion:
    """The float64 second opinion on one output."""
    ok: bool
    e_cand: float  # the candidate's distance from the float64 answer (norm over the judged elements)
    e_ref: float  # float32 PyTorch's distance
    allowed: float
    exact_norm: float
    floor: float = 0.0  # the working-scale floor (0: none applies)
    floor_refused: bool = False  # the floor would have let the candidate pass, but float32 resolves the answer

    def detail(self) -> str:
        text = (f"; against the exact (float64) answer it is {self.e_cand:.3g} off, where float32 PyTorch is "
                f"{self.e_ref:.3g} off")
        if self.floor_refused:
            text += (f" (the answer, of size {self.exact_norm:.3g}, is small but float32 resolves it: an output "
                     "near 0 does not carry it)")
        return text


def _against_truth(c: torch.Tensor, r: torch.Tensor, truth: Callable[[], torch.Tensor | Exact],
                   bound: float, dtype: torch.dtype, judged: int, fin: torch.Tensor | None = None) -> _Opinion:
    """The candidate may be ``bound`` relative to the exact answer, or ``FP_NOISE`` times as far from it as
    PyTorch; where PyTorch itself is beyond the bound, ``FP_NOISE`` unit roundings of the working scale per
    element -- if the answer is at float32's noise level or the candidate carries it (module docstring).
    Positions where the reference (``fin`` False: masked to 0 in ``c`` and ``r`` already) or the float64 answer
    is NaN/Inf are not judged here: the scan judged them."""
    exact, scale = _exact(truth, c.shape)
    finite = torch.isfinite(exact)
    if fin is not None:
        exact = exact.masked_fill(~fin, 0.0)  # float32 overflowed where float64 did not: not the opinion's
        finite |= ~fin
    if not bool(finite.all()):
        exact, c, r = exact.masked_fill(~finite, 0.0), c.masked_fill(~finite, 0.0), r.masked_fill(~finite, 0.0)
        judged -= int(finite.numel() - int(finite.sum()))
    e_cand = float((c.double() - exact).norm())
    e_ref = float((r.double() - exact).norm())
    e_exact = float(exact.norm())
    e_bound = bound * e_exact
    allowed = max(e_bound, FP_NOISE * e_ref)
    op = _Opinion(e_cand <= allowed, e_cand, e_ref, allowed, e_exact)
    if e_ref > e_bound and scale > 0 and judged > 0:
        unit = torch.finfo(dtype).eps / 2  # only floating outputs reach the float64 opinion
        floor = FP_NOISE * unit * scale * math.sqrt(judged)
        if floor > allowed:
            if e_exact <= FP_NOISE * e_ref or e_cand <= e_exact / 2:
                op.allowed, op.floor = floor, floor
                op.ok = e_cand <= floor
            else:
                op.floor_refused = e_cand <= floor
    return op


def _exact(truth: Callable[[], torch.Tensor | Exact], shape: torch.Size) -> tuple[torch.Tensor, float]:
    """The float64 answer of one output in ``shape``, and its working scale (0: unknown)."""
    got = truth()
    value, scale = (got.value, got.scale) if isinstance(got, Exact) else (got, 0.0)
    return value.to(torch.float64).reshape(shape), scale


def _nonfinite_artifacts(c: torch.Tensor, r: torch.Tensor, truth: Callable[[], torch.Tensor | Exact], tol: float,
                         dtype: torch.dtype) -> bool:
    """Where the output does not repeat the reference's NaN/Inf: is each such reference value an artifact of its
    own precision (the float64 answer finite and representable in the output's dtype: a float16 GEMM whose partial
    sums overflowed) with the output within the tolerance of that answer? Then those positions are not the
    candidate's to repeat. A NaN/Inf the float64 answer has too must still be repeated."""
    same = (c == r) | (torch.isnan(c) & torch.isnan(r))
    miss = ~torch.isfinite(r) & ~same
    exact = _exact(truth, c.shape)[0][miss]
    if not bool(torch.isfinite(exact).all()) or bool((exact.abs() > torch.finfo(dtype).max).any()):
        return False
    return bool(((c[miss].double() - exact).abs() <= tol + tol * exact.abs()).all())


def _elements_within_truth(c: torch.Tensor, r: torch.Tensor, truth: Callable[[], torch.Tensor | Exact],
                           tol: float) -> bool:
    """The float64 second opinion on elements outside the elementwise tolerance of the float32 reference (an
    output that sums many inputs, e.g. a GEMM on heavy-tailed inputs, can cancel to a small value that float32
    PyTorch itself misses by more than atol): each such element must be within the tolerance of the float64
    answer, or at most ``FP_NOISE`` times as far from it as PyTorch's own element. Elements inside the
    tolerance are not asked; a NaN/Inf where the reference is finite never passes. (Masked non-finite reference
    positions are 0 in both ``c`` and ``r``: never failing elements.)"""
    bad = ~((c - r).abs() <= tol + tol * r.abs())  # NaN compares false: a NaN output element is a miss
    if int(bad.sum()) > max(ELEMENT_OPINION_MAX, r.numel() // 1000) or not bool(torch.isfinite(c[bad]).all()):
        return False  # a wrong kernel misses many elements: no float64 forward for it
    exact = _exact(truth, c.shape)[0][bad]
    if not bool(torch.isfinite(exact).all()):
        return False
    cb, rb = c[bad].double(), r[bad].double()
    e_cand, e_ref = (cb - exact).abs(), (rb - exact).abs()
    return bool(((e_cand <= tol + tol * exact.abs()) | (e_cand <= FP_NOISE * e_ref)).all())


def _normwise(c: torch.Tensor, r: torch.Tensor, st: _Scan, bound: float, label: str,
               truth: Callable[[], torch.Tensor | Exact] | None, result: Comparison, dtype: torch.dtype,
               judged: int, fin: torch.Tensor | None, reduction: bool = True) -> Comparison:
    """The tight norm-wise rule (of reductions, or float32's precision) failed on the float32 reference; ask
    float64 before refusing."""
    detail = ""
    if truth is not None:
        op = _against_truth(c, r, truth, bound, dtype, judged, fin)
        if op.ok:
            result.message = (f"{label}: within the float64 answer's tolerance ({op.e_cand:.3g} <= {op.allowed:.3g}; "
                              f"float32 PyTorch is {op.e_ref:.3g} away)")
            return result
        detail = op.detail()
    result.ok = False
    if not reduction:
        result.message = (f"{label}: a float32 output must be float32-accurate: norm-wise within {bound:g} of the "
                          f"reference (its elements are within the elementwise tolerance); this one is off by "
                          f"{st.norm_rel:.3g}{detail}. Compute in float32 (a result rounded through bfloat16 or "
                          "float16 is off by 2e-4 to 2e-3) and the operator's own formula (an approximation such as "
                          "the tanh form of GELU for the exact one is off by ~2e-4)")
        return result
    result.message = (f"{label}: each output element aggregates many inputs, and such outputs must match "
                      f"norm-wise within {bound:g}{_dtype_note(dtype)}; this one is off by {st.norm_rel:.3g}{detail}. "
                      "Compute the reduction over all of its data (an estimate from a subset, a stride or a closed "
                      "form is not the operator), accumulating in double or pairwise if float sums drift")
    return result


def _mismatch(c: torch.Tensor, r: torch.Tensor, tol: float, label: str, dtype: torch.dtype) -> Comparison:
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
    digits = ".15g" if dtype == torch.float64 else ".6g"  # enough to show a float64 difference
    return Comparison(False, f"{label}: {int(bad.sum())} of {r.numel()} elements outside atol=rtol={tol:g}"
                      f"{_dtype_note(dtype)}; max abs err {max_abs:.4g}, max rel err {max_rel:.4g}; first mismatch at "
                      f"{_fmt_index(i, tuple(r.shape))}: expected {r.reshape(-1)[i].item():{digits}}, "
                      f"got {c.reshape(-1)[i].item():{digits}}", max_abs, max_rel)


NOISE_SPREAD = 1e-6  # float64's spread this far below float32's: the float32 spread is rounding


CONSTANT_ULPS = 64  # the constant output may be this many float32 units from the exact constant (relative)
RESOLVED = 1e3  # and the exact constant this many times farther from 0 than float32's scatter around it


def _noise_around_constant(r: torch.Tensor, truth: Callable[[], torch.Tensor | Exact],
                           fin: torch.Tensor | None, value: float) -> bool:
    """Is the exact answer a constant (0 included) that PyTorch's float32 only scatters around? True when the
    float64 answer's spread (max - min) is under ``NOISE_SPREAD`` of the reference's:
    the mean of a GroupNorm whose weight is one constant is its bias in every row, and float32 sums put ~1e-8
    of rounding around it, which an honest kernel's last addition can round away. A nonzero constant output
    there is the answer, not a trivial one (all zeros stays degenerate: rounding near 0 is too fine to vanish);
    where float64 varies as float32 does, the output must vary too. The constant must also carry the answer: the
    exact constant well above float32's scatter (``RESOLVED``; an answer of 0 is not one: a kernel writing 1e-30
    for the exact 0 of a LayerNorm's row mean, never reading its input, passed through this rule once: red team
    round 9) and ``value`` within ``CONSTANT_ULPS`` float32 units of it."""
    exact = _exact(truth, r.shape)[0]
    keep = torch.isfinite(exact) & torch.isfinite(r)
    if fin is not None:
        keep &= fin
    if not bool(keep.any()):
        return False
    e, rr = exact[keep], r[keep].double()
    r_spread = float(rr.max() - rr.min())
    if r_spread == 0:
        return False
    e_spread = float(e.max() - e.min())
    if e_spread > NOISE_SPREAD * r_spread:
        return False
    answer = float(e.mean())
    return (abs(answer) >= RESOLVED * r_spread and
            abs(value - answer) <= CONSTANT_ULPS * torch.finfo(torch.float32).eps * abs(answer))


def _degenerate(c: torch.Tensor, r: torch.Tensor, inputs: list[torch.Tensor], st: _Scan, judged: int) -> str:
    """Why a passing-looking output is a trivial answer, or '' if it is not (over the judged elements)."""
    if judged <= 1:
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
    """Fast path for timed calls: True when the output repeats the reference's NaN/Inf and is within the
    elementwise and norm-wise tolerance of its finite elements and not all zeros (the trials already ran the
    full checks), and, for a reduction, within its tight norm-wise bound (otherwise `compare` decides, with
    the float64 answer)."""
    if candidate.shape != reference.shape or candidate.dtype != reference.dtype:
        return False
    if not reference.is_floating_point():
        return torch.equal(candidate, reference)
    if reference.numel() == 0:
        return True
    tl = tolerance(reference.dtype, tol)
    st = _scan(candidate, reference, tl.elementwise)
    return st.within and st.nonfinite_bad < 0 and (
        st.ref_sq == 0 or (st.norm_rel <= tl.normwise(reduction) and st.cand_sq > 0))
