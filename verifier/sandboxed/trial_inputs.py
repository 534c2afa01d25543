"""Runs INSIDE the reference sandbox: the value shapes of the correctness trials' inputs.

Each trial draws the task's own inputs from ``get_inputs()`` with a secret seed; some trials then
reshape their floating values (integer inputs such as class indices: `integer_inputs`, in the special trials):

* ``scale`` (x4), ``negate``, ``shift`` (+3): kernels that assume a range, a sign or small values fail;
* ``heavy``: heavy-tailed rows and a few dominant elements -- a random ~2% of the slices along the first
  dimension scaled by 16-64 and ~0.1% of the elements by 100-1000. A reduction or loss estimated from a
  subset of rows or a stride of elements misses (or over-counts) the dominant ones, so sampling fails
  where it would pass on well-behaved inputs; closed forms that assume the task's distribution fail too.
* ``special``: values i.i.d. draws almost never hold -- a few exact +0.0 and -0.0, large finite magnitudes and tiny
  normal ones of both signs over the dtype's range in decades (large: 1e2 up to `large_max`, 1e10 in float32/bfloat16
  and 1e75 in float64, at most one per row of the last dimension, signs alternating from +, none in float16; tiny:
  from the smallest normal up to 1e-4, float16 1e-3), drawn stratified so that every band of the range a few slices
  wide is hit in every trial, a few subnormals of both signs (the reference's sandbox keeps them only where flushing
  them to zero, as a kernel built with flush-to-zero does, leaves the reference's answer as it is: worker.py), and
  constant rows (~1/16 of the
  last dimension's rows repeat one value, so a norm over a row sees variance 0), and structured rows (`_structured`:
  sparse, integer, unit and zero rows). A kernel wrong only at zero, above
  or below some magnitude, on a row of equal values or on such a row fails here (red team rounds 4-6, 11). The trial with perturbed
  parameters (trusted/trials.py) draws these inputs too: a constant row's answer is the bias, which is 0 under the
  default parameters. Equal values make ties, so an index output (argmax) is not compared in this trial
  (trusted/trials.py).
* ``distinct``: the same zeros, tiny and large values without ties (no subnormals; signs alternating from -, so an
  input of one row sees a large value of each sign across the two trials): at most one zero per row of the last
  dimension, no constant rows, large values of a row never equal, so integer outputs (an argmax, a count) and bool
  masks are compared exactly here (red team round 5: an argmax wrong on every row holding a large value, and one that skipped a
  LayerNorm's drawn affine, passed while the only trials with such values skipped integer outputs). The second trial
  with perturbed parameters draws these inputs, and so do some of the timing's untimed rounds, at random
  (trusted/timing_protocol.py).
* non-contiguous inputs (``scale`` and ``negate``, `STRIDED_IN`): after their values are drawn, every floating input
  of at least two dimensions whose last two are at least 2 long reaches both models as a view with the same values:
  in ``scale`` a transposed copy's transpose (the last two dimensions swapped in memory: strides (..., 1, rows)),
  in ``negate`` a slice of a wider buffer (each row of the last dimension followed by 1-16 unused elements, NaN, in
  memory: strides (..., n + pad, 1)). A kernel that reads an input's memory linearly, ignoring its strides, or
  handles one layout and not the other, gives a wrong answer in one of them (red team round 10: an add that read
  b's memory linearly passed, every input being contiguous); making an input contiguous first (``x.contiguous()``)
  is allowed glue (data_movement.py). The reference's sandbox keeps a view only where the reference itself gives
  its answer on it (`same_answer`; a reference that calls ``.view()`` on it raises: that input stays contiguous).
* ``nonfinite`` (not in the default plan): a few NaN, +Inf and -Inf among the values; the outputs must repeat
  PyTorch's NaN/Inf position by position.

The random choices come from torch's generator, seeded by the trial's secret seed before ``get_inputs()``.
"""
from __future__ import annotations

import contextlib
import math
from typing import Any, Callable, Iterator

import torch


def _heavy(x: torch.Tensor) -> torch.Tensor:
    x = x.clone()
    if x.dim() >= 1 and x.shape[0] >= 8:
        rows = max(1, x.shape[0] // 50)
        idx = torch.randperm(x.shape[0])[:rows]
        factor = 16.0 + 48.0 * torch.rand(rows, dtype=torch.float64)
        x[idx] = (x[idx].double() * factor.view(-1, *([1] * (x.dim() - 1)))).to(x.dtype)
    n = x.numel()
    if n:
        k = max(1, n // 1000)
        pos = torch.randint(0, n, (k,))
        flat = x.view(-1)
        flat[pos] = (flat[pos].double() * (100.0 + 900.0 * torch.rand(k, dtype=torch.float64))).to(x.dtype)
    return x


# The planted magnitudes cover each floating dtype's range in decades, not fixed bands (red team round 6 passed
# kernels wrong above 1.5e8, in the gap (4.5e5, 9.9e5) between the heaviest random draw and the old band, and on
# normal floats below 1e-30): large magnitudes log-uniform from LARGE_MIN (above anything the none/scale/negate/shift
# trials draw) up to `large_max`, tiny ones from the dtype's smallest normal up to `TINY_MAX` (where randn's own draws
# take over), drawn stratified (one per equal slice of the log range, in random order) so that every band wider than
# a slice is hit in every trial.
LARGE_MIN = 1e2
TINY_MAX = {torch.float16: 1e-3}  # other dtypes: DEFAULT_TINY_MAX; float16's smallest normal is 6.1e-5
DEFAULT_TINY_MAX = 1e-4
# float64: up to 1e75, whose fourth power is finite and whose outputs' squares the parent sums in float64
# (correctness._scan) stay far from overflow; float32/bfloat16: 1e10. Higher (up to sqrt(max / (HEADROOM x count)),
# ~1e17) refused 5 of 54 honest golden items (matmul + LayerNorm: PyTorch's LayerNorm overflowed on rows a matmul
# amplified while the kernels did not; SwiGLU products of two amplified values): a task-dependent bound -- the
# largest decade at which the reference's own arithmetic stays finite, probed in the reference sandbox -- is the way
# up, not done yet (docs/verifier.md)
# float16 has no cap: it gets tiny values but no large ones (two planted values meeting in one product of a float16
# matmul overflow its 65504 in PyTorch and in an honest kernel alike, and what an activation then makes of the Inf
# differs, NaN against Inf: the template's float16 cube matmul + tanh GELU was refused that way; docs/verifier.md)
LARGE_CAP = {torch.float64: 1e75, torch.float32: 1e10, torch.bfloat16: 1e10}
LARGE_PLANTED = tuple(LARGE_CAP)  # the dtypes that get large values
LARGE_IN = ("special", "distinct")  # the perturbations that plant them (their level: large_bound.py)
HEADROOM = 16.0  # every planted value's square, summed over all of them, stays <= max / HEADROOM
PLANTED = (torch.float32, torch.float64, torch.float16, torch.bfloat16)  # the dtypes that get planted values
SUBNORMALS_IN = ("special",)  # the perturbations that plant subnormals (kept by the reference's sandbox: worker.py)
SUBNORMALS_PER = 4096  # special: one subnormal per this many elements, at least 4 (`_plant_subnormals`)
HALF_SMALL = 8  # special/distinct: exact half-integers +-0.5 .. 7.5 and from 8.5 up to HALF_TOP (`_half_integers`),
HALF_TOP = 99.0  # ~1 in 1024 elements (at least 8; distinct: at most one per row); floor(99) + 0.5 < LARGE_MIN
TIE_EVERY = 32  # special: one element in this many copied from an earlier input of the same shape (`tie_inputs`)
TIES_IN = ("special",)  # the perturbations that tie inputs (kept by the reference's sandbox: worker.py)
OFFSET_IN = ("shift",)  # ... that give a few rows a large common offset (`offset_rows`; kept where resolved): the
# shift trial holds no large planted values (a row holding one has a spread that hides any offset)
OFFSET_MIN, OFFSET_MAX = 1e3, 1e4  # tried at 1, 1/4 and 1/16 of the drawn offset (`offset_rows`)
OFFSET_SCALES = (1.0, 0.25, 0.0625)


# The levels of the large values' range, as fractions of its log width above LARGE_MIN (level 0: up to the cap;
# float32 1e10, 1e8, 1e6, 1e4, 1e3). A task's reference is asked, trial by trial, for the first level at which its
# own float32 answer resolves every output element (large_bound.py): a SwiGLU's products of two amplified values
# cancel in the down projection to answers float32 PyTorch itself misses by 3-11x the tolerance at 1e10..1e6, where
# an honest kernel in another order of operations lands elsewhere; the values it is judged on are then planted
# lower, and every trial's answer is one float32 arithmetic can give.
LARGE_LEVELS = (1.0, 0.75, 0.5, 0.25, 0.125)
_level = [0]  # the level `large_max` plants at (set with `planted_level`; one worker, one thread)


@contextlib.contextmanager
def planted_level(level: int) -> Iterator[None]:
    """Plant large values at ``level`` of `LARGE_LEVELS` inside the block (clamped to the last level)."""
    saved = _level[0]
    _level[0] = min(max(0, int(level)), len(LARGE_LEVELS) - 1)
    try:
        yield
    finally:
        _level[0] = saved


def large_max(dtype: torch.dtype, count: int) -> float:
    """The largest magnitude planted in a tensor of ``dtype`` holding ``count`` large values: `LARGE_CAP` lowered to
    the current level (`planted_level`), and never more than the square root of max / (HEADROOM x count), so that
    the product of any two planted values and the sum of the squares of all of them (an honest kernel's sum of
    squares in a norm) stay finite in the dtype (float64's cap is far below that bound; a dtype without a cap,
    float16, gets the bound)."""
    bound = math.sqrt(torch.finfo(dtype).max / (HEADROOM * max(1, count)))
    cap = min(LARGE_CAP.get(dtype, bound), bound)
    if _level[0] and cap > LARGE_MIN:
        cap = LARGE_MIN * (cap / LARGE_MIN) ** LARGE_LEVELS[_level[0]]
    return cap


def tiny_range(dtype: torch.dtype) -> tuple[float, float]:
    """(smallest, largest) tiny normal magnitude planted in ``dtype``: from its smallest normal (subnormals: see
    `_plant_subnormals`) up to where randn's own draws are common."""
    return torch.finfo(dtype).tiny, TINY_MAX.get(dtype, DEFAULT_TINY_MAX)


def _dyadic(v: torch.Tensor) -> torch.Tensor:
    """``v`` rounded to 6 significant bits: n copies of it sum exactly in float32 for n up to 2**18, so a constant
    row's mean is that value and its variance exactly 0 whatever the order of summation (PyTorch's or a kernel's)."""
    m, e = torch.frexp(v.double())
    return torch.ldexp(torch.round(m * 64) / 64, e.double()).to(v.dtype)


def _pick(allowed: torch.Tensor, k: int, width: int) -> torch.Tensor:
    """Up to ``k`` random positions where ``allowed`` (flat) holds, at most one per run of ``width`` positions (a
    row), in random order; sampled without touching every position (inputs of 10^8 elements cost no more)."""
    n, got = allowed.numel(), torch.empty(0, dtype=torch.long)
    for _ in range(16):
        cand = torch.randint(0, n, (2 * k + 16,))
        got = torch.cat([got, cand[allowed[cand]]])
        rows, inverse = torch.unique(got // width, return_inverse=True)
        first = torch.full((rows.numel(),), got.numel(), dtype=torch.long)
        got = got[first.scatter_reduce_(0, inverse, torch.arange(got.numel()), "amin")]  # one per row, drawn order
        if got.numel() >= k or got.numel() == int((allowed.view(-1, width).any(dim=1)).sum()):
            break
    return got[torch.randperm(got.numel())[:k]]


def _log_uniform(k: int, lo: float, hi: float, first: float = 1.0) -> torch.Tensor:
    """``k`` magnitudes log-uniform in [lo, hi], stratified: one in each of k equal slices of the log range, the slices
    in random order, with alternating signs, ``first``'s sign first (float64). A band of the range at least two slices
    wide holds at least one of them, whatever the seed."""
    sign = torch.where(torch.arange(k) % 2 == 0, 1.0, -1.0).double() * (1.0 if first > 0 else -1.0)
    u = (torch.randperm(k).double() + torch.rand(k, dtype=torch.float64)) / max(k, 1)
    return lo * (hi / lo) ** u * sign


def subnormal_range(dtype: torch.dtype) -> tuple[float, float]:
    """(smallest, largest) subnormal magnitude of ``dtype``: from one unit in the last place of its smallest normal up
    to just below that normal."""
    info = torch.finfo(dtype)
    return info.tiny * info.eps, info.tiny * (1.0 - info.eps)


def _plant_subnormals(y: torch.Tensor, plain: torch.Tensor) -> None:
    """A few subnormal values (`SUBNORMALS_PER`, at least 4; both signs, log-uniform over the dtype's subnormal range)
    at positions ``plain`` (flat mask, updated) allows. Only in ``special``: the reference's sandbox keeps them only
    where flushing them to zero changes the reference's outputs by nothing (worker.py), so a kernel built with
    flush-to-zero is judged as before, and one wrong on (0, tiny) is not (red team round 8)."""
    if y.dtype not in PLANTED:
        return
    pos = _pick(plain, max(4, y.numel() // SUBNORMALS_PER), 1)
    lo, hi = subnormal_range(y.dtype)
    y.view(-1)[pos] = _log_uniform(pos.numel(), lo, hi, first=1.0 if float(torch.rand(())) < 0.5 else -1.0).to(y.dtype)
    plain[pos] = False


def flush_subnormals(x: torch.Tensor) -> torch.Tensor:
    """``x`` with its subnormal values replaced by a zero of their sign (what a flush-to-zero unit reads); ``x`` itself
    when it holds none."""
    if not x.is_floating_point() or x.numel() == 0:
        return x
    sub = (x != 0) & (x.abs() < torch.finfo(x.dtype).tiny)
    if not bool(sub.any()):
        return x
    return torch.where(sub, x * 0.0, x)


def _floating_pairs(xs: list, ys: list, floating: Callable[[torch.Tensor], bool]
                    ) -> list[tuple[torch.Tensor, torch.Tensor]] | None:
    """The output pairs of ``xs`` and ``ys`` left to judge by value (those ``floating`` holds for), or None where the
    two lists are not the same answer by structure: other lengths, a non-tensor, another shape or dtype, or an
    unequal output of another kind (`flush_harmless` and `same_answer` share it)."""
    if len(xs) != len(ys):
        return None
    pairs = []
    for a, b in zip(xs, ys):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or a.shape != b.shape \
                or a.dtype != b.dtype:
            return None
        if not floating(a):
            if not torch.equal(a, b):
                return None
            continue
        pairs.append((a, b))
    return pairs


def _finite_masks(a64: torch.Tensor, b64: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
    """Where ``a64`` and ``b64`` are finite, or None unless their NaN and signed Inf stand at the same positions."""
    fa, fb = torch.isfinite(a64), torch.isfinite(b64)
    if not torch.equal(fa, fb) or not torch.equal(a64[~fa].nan_to_num(0.0), b64[~fb].nan_to_num(0.0)) \
            or not torch.equal(a64[~fa].isnan(), b64[~fb].isnan()):
        return None
    return fa, fb


def flush_harmless(with_sub: list, flushed: list) -> bool:
    """Whether the reference's outputs on inputs holding subnormals (``with_sub``) and on the same inputs flushed
    (``flushed``) are the same answer: equal shapes and dtypes, non-floating outputs equal, the same NaN/Inf at the
    same positions, and every finite element within one smallest normal plus 4 units of rounding of the other (far
    inside any tolerance the parent applies). Then a kernel that flushes subnormals, in its inputs or its outputs,
    gives the reference's answer to within its rounding, and planted subnormals judge only kernels wrong on them."""
    pairs = _floating_pairs(with_sub, flushed, lambda t: t.is_floating_point())
    if pairs is None:
        return False
    for a, b in pairs:
        a64, b64 = a.double(), b.double()
        masks = _finite_masks(a64, b64)
        if masks is None:
            return False
        fa, fb = masks
        info = torch.finfo(a.dtype)
        if not bool(((a64[fa] - b64[fb]).abs() <= info.tiny + 4 * info.eps * b64[fb].abs()).all()):
            return False
    return True


def _plant_singles(y: torch.Tensor, plain: torch.Tensor, k_zero: int, zero_width: int, first: float = 1.0) -> None:
    """Plant values into contiguous ``y`` where ``plain`` (flat mask, updated) allows: ``k_zero`` exact zeros (+0.0,
    -0.0, ... ; at most one per ``zero_width`` elements) and, in float32/float64/float16/bfloat16, large magnitudes
    (`LARGE_PLANTED`: not in float16) and tiny ones of both signs over the dtype's range (`large_max`, `tiny_range`;
    stratified, `_log_uniform`).
    Large values: at most one per row of the last dimension (two large values in one row of a contraction cancel for
    some weights, where float32 PyTorch and an honest kernel disagree by far more than any tolerance: the rows with
    two or three large values tried for red team round 6's softmax door refused honest matmul and SwiGLU kernels).
    ``special`` and ``distinct`` share it; ``first``: the sign of the first large value (``special`` +, ``distinct`` -,
    so an input of one row, which holds one large value per trial, sees both signs in every verification: red team
    round 8 passed a ReLU wrong below -1e4 on a batch of one)."""
    n, flat = y.numel(), y.view(-1)
    zeros = _pick(plain, k_zero, zero_width)
    sign = torch.where(torch.arange(zeros.numel()) % 2 == 0, 1.0, -1.0).to(y.dtype)
    flat[zeros] = 0.0 * sign
    plain[zeros] = False
    if y.dtype not in PLANTED:
        return
    width = y.shape[-1] if y.dim() else 1
    k = min(max(16, n // 1024), max(2, n // 64))  # ~1 in 1024, at least 16 (small tensors: at most 1 in 64)
    large = _pick(plain, k if y.dtype in LARGE_PLANTED else 0, width)
    flat[large] = _halves_among(_log_uniform(large.numel(), LARGE_MIN, large_max(y.dtype, large.numel()), first),
                                y.dtype).to(y.dtype)
    plain[large] = False
    lo, hi = tiny_range(y.dtype)
    tiny = _pick(plain, k, 1)
    flat[tiny] = _log_uniform(tiny.numel(), lo, hi, first).to(y.dtype)
    plain[tiny] = False
    halves = _pick(plain, max(8, n // 1024), zero_width)  # exact ties x.5 below LARGE_MIN (distinct: one per row)
    flat[halves] = _half_integers(halves.numel(), y.dtype).to(y.dtype)
    plain[halves] = False


def _half_integers(k: int, dtype: torch.dtype) -> torch.Tensor:
    """``k`` exact half-integers (float64) of alternating signs, in random order: every other one below `HALF_SMALL`
    in magnitude (0.5 .. 7.5), the rest floor(m) + 0.5 with m log-uniform (stratified) from `HALF_SMALL` up to
    `HALF_TOP` (or `half_limit` of the dtype or `large_max`, if lower). An error of 1 on a tie is beyond a 1e-2 tolerance only below
    ~100: the large values' ties (`_halves_among`) lie above it. At a lower level of the large values (`planted_level`:
    the task's reference did not resolve the full range, a SwiGLU's amplified products) all are small: the honest
    SwiGLU kernel of test_planted_trials was refused on a distinct trial holding ties up to 98.5."""
    small = torch.randint(0, HALF_SMALL, (k,)).double() + 0.5
    # below LARGE_MIN: not a large value (one per row); float16: within `large_max`'s headroom (products stay finite)
    top = max(HALF_SMALL, min(HALF_TOP, half_limit(dtype), large_max(dtype, k)))
    wide = torch.floor(_log_uniform(k, HALF_SMALL, top).abs()) + 0.5
    # every level draws alike (the same positions and strata follow); at a lower level the wide ones are not used
    mags = torch.where((torch.arange(k) % 2 == 0) | (_level[0] > 0), small, wide)
    sign = torch.where(torch.arange(k) % 4 < 2, 1.0, -1.0).double()
    return (mags * sign)[torch.randperm(k)]


def half_limit(dtype: torch.dtype) -> float:
    """The magnitude below which every x.5 is exact in ``dtype`` with a bit to spare: 2^22 in float32, 2^51 in float64,
    2^9 in float16, 2^6 in bfloat16 (half of 1/eps)."""
    return 0.5 / torch.finfo(dtype).eps


def _halves_among(v: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``v`` (float64 magnitudes with signs) with every other element (odd positions) that lies below `half_limit`
    moved to the largest exact half-integer not above it (and not below LARGE_MIN), of its sign: large ties (2.5 -> 2 under torch.round's ties to
    even, 3 under C's roundf) at the magnitudes the large values cover (red team round 10: a rounding kernel wrong
    only on ties above 64 passed, random draws never holding an exact x.5); and every fourth (positions 2 mod 4)
    moved down to an integer (red team round 11: a ReLU wrong on exact integers up to 2^22 passed)."""
    out = v.clone()
    h = torch.floor(v.abs() - 0.5) + 0.5  # the largest x.5 not above |v|: the range's top stays a bound
    at = torch.arange(v.numel())
    odd = (at % 2 == 1) & (v.abs() < half_limit(dtype)) & (h >= LARGE_MIN)
    out[odd] = torch.sign(v[odd]) * h[odd]
    whole = (at % 4 == 2) & (v.abs() < half_limit(dtype)) & (torch.floor(v.abs()) >= LARGE_MIN)
    out[whole] = torch.sign(v[whole]) * torch.floor(v[whole].abs())
    return out


def _extremes_to_ends(y: torch.Tensor, skip: torch.Tensor | None = None) -> None:
    """In ~1/16 of the rows of the last dimension (at least one; not those ``skip`` marks: constant rows), move the
    row's largest element to its first index and its smallest to its last by two swaps (every other chosen row the
    other way round): the row's values stay as they were, only their order changes. A scan that skips a row's first
    or last element, or that starts from it as a reduction's seed without comparing it, is wrong there (red team
    round 10: a row max scanned from index 1 passed, the extremes of random rows being almost never at an end)."""
    if y.dim() == 0 or y.shape[-1] < 2 or y.numel() == 0:
        return
    rows = y.view(-1, y.shape[-1])
    free = torch.arange(rows.shape[0])
    if skip is not None:
        free = free[~skip]
    if free.numel() == 0:
        return
    chosen = free[torch.randperm(free.numel())[:max(1, rows.shape[0] // 16)]]
    sub = rows[chosen]
    high_first = torch.arange(chosen.numel()) % 2 == 0
    last = sub.shape[1] - 1
    for end, want_high in ((0, high_first), (last, ~high_first)):
        at = torch.where(want_high, sub.argmax(dim=1), sub.argmin(dim=1))
        if end == last:  # the first end is placed already: its element never moves again
            at = torch.where(at == 0, torch.full_like(at, last), at)
        r = torch.arange(sub.shape[0])
        moved, here = sub[r, at].clone(), sub[r, end].clone()
        sub[r, at] = here
        sub[r, end] = moved
    rows[chosen] = sub


def offset_rows(tensors: list[torch.Tensor]) -> list[tuple[int, torch.Tensor, torch.Tensor]]:
    """Where a large common offset goes: in each float32/float64 input of at least two dimensions, ~1/16 of the rows
    of the last dimension (at least one; not a constant row) get +-c added to every element, c log-uniform in
    [`OFFSET_MIN`, `OFFSET_MAX`] rounded to 6 significant bits, the sign alternating: (input index, rows, c) per input.
    A statistic computed as E[x^2] - E[x]^2 in float32 cancels there (red team round 10: a one-pass LayerNorm variance
    passed, no trial holding a row whose mean is far above its spread). `with_offsets` applies it; the reference's
    sandbox keeps the largest of c, c/4, c/16 at which the reference resolves its own answer (worker.py)."""
    plan = []
    for j, x in enumerate(tensors):
        if x.dtype not in (torch.float32, torch.float64) or x.dim() < 2 or x.numel() == 0 or x.shape[-1] < 2:
            continue
        rows = x.reshape(-1, x.shape[-1])
        free = torch.nonzero(rows.amax(dim=1) != rows.amin(dim=1)).view(-1)
        if free.numel() == 0:
            continue
        chosen = free[torch.randperm(free.numel())[:max(1, rows.shape[0] // 16)]]
        plan.append((j, chosen, _dyadic(_log_uniform(chosen.numel(), OFFSET_MIN, OFFSET_MAX))))
    return plan


def with_offsets(tensors: list[torch.Tensor], plan: list[tuple[int, torch.Tensor, torch.Tensor]],
                 scale: float = 1.0) -> list[torch.Tensor]:
    """``tensors`` with the offsets of ``plan`` (`offset_rows`) times ``scale`` (a power of two: still exact) added;
    new tensors where something was added, the list given is not modified."""
    out = list(tensors)
    for j, chosen, c in plan:
        y = tensors[j].clone()
        rows = y.view(-1, y.shape[-1]) if y.is_contiguous() else y.reshape(-1, y.shape[-1])
        rows[chosen] = (rows[chosen].double() + scale * c.view(-1, 1)).to(y.dtype)
        if not y.is_contiguous():
            y.copy_(rows.view(y.shape))
        out[j] = y
    return out


def tie_inputs(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """Exact ties across inputs: each floating input that has an earlier one of the same shape and dtype gets a copy of
    that one's values at ~1/`TIE_EVERY` of its positions (at least one), where both hold ordinary values (no large,
    subnormal or non-finite value is copied or overwritten: those are planted and checked on their own). ``a >= b``
    computed as ``a > b``, a max/min that picks a side on equality, are wrong there (red team round 10: two inputs
    never tied). New tensors where something was copied; the list is not modified."""
    out = list(tensors)
    for j, b in enumerate(tensors):
        if not b.is_floating_point() or b.numel() == 0:
            continue
        src = next((a for a in tensors[:j] if a.is_floating_point() and a.shape == b.shape and a.dtype == b.dtype
                    and a.is_contiguous() and b.is_contiguous()), None)
        if src is None:
            continue
        fa, fb = src.reshape(-1), b.reshape(-1)
        tiny = torch.finfo(b.dtype).tiny

        def ordinary(v: torch.Tensor) -> torch.Tensor:
            a = v.abs()
            return torch.isfinite(v) & (a < LARGE_MIN) & ((a == 0) | (a >= tiny))

        pos = _pick(ordinary(fa) & ordinary(fb), max(1, b.numel() // TIE_EVERY), 1)
        if pos.numel() == 0:
            continue
        tied = b.clone()
        tied.view(-1)[pos] = fa[pos]
        out[j] = tied
    return out


STRUCTURES = ("sparse", "integer", "unit", "zero")  # special: the kinds of structured rows, in the order they are given
INT_TOP = 24.0  # integer rows: a row of RMS 1 times a scale log-uniform in [2, this], rounded, within +-(LARGE_MIN - 1)


def _structured(rows: torch.Tensor, mask: torch.Tensor, free: torch.Tensor, budget: int, k: int) -> None:
    """Rows of a structure users' inputs have every day and i.i.d. draws never do, each kind in ``k`` of the ``free``
    rows (the zero row: one), in the order of `STRUCTURES`, while fewer than ``budget`` are taken (half the rows stay
    as drawn); no single value is planted in them afterwards (``mask``). Red team round 11 passed kernels wrong on each:

    * ``sparse``: about half the elements exact +0.0, the rest as drawn (post-ReLU activations, padded sequences,
      one-hot rows: a softmax whose sparse path dropped the zeros from its denominator);
    * ``integer``: the row over its RMS times a scale log-uniform in [2, `INT_TOP`], rounded and kept below
      `LARGE_MIN` (a row of large values is what the large values' one-per-row rule keeps out: two large values of
      a contraction's row cancel; exact in every floating dtype); every other one in magnitude (pixel values,
      counts, token ids cast to float: a ReLU wrong on exact integers). Larger integers: every fourth large value
      (`_halves_among`);
    * ``unit``: magnitudes over the row's largest, in [0, 1] with a 1 (probabilities, attention weights: a
      log-softmax that skipped its max subtraction where every value is small and non-negative);
    * ``zero``: every element +0.0 (a padded item, a zero state: a normalisation without its eps answers NaN)."""
    dtype = rows.dtype
    for kind in STRUCTURES:
        take = min(1 if kind == "zero" else k, budget, free.numel())
        if take <= 0:
            return
        sel, free = free[:take], free[take:]
        budget -= take
        r = rows[sel].double()
        if kind == "sparse":
            r = torch.where(torch.rand(r.shape) < 0.5, torch.zeros_like(r), r)
        elif kind == "integer":
            # float16: every square of the row summed stays within its max / HEADROOM (`large_max`)
            bound = max(1.0, min(LARGE_MIN - 1.0, math.floor(large_max(dtype, rows.shape[1]))))
            rms = r.pow(2).mean(dim=1, keepdim=True).sqrt()
            scale = _log_uniform(take, min(2.0, bound), min(INT_TOP, bound)).abs().view(-1, 1)
            r = torch.round(torch.where(rms > 0, r / rms, r) * scale).clamp(-bound, bound)
            r[1::2] = r[1::2].abs()
        elif kind == "unit":
            a = r.abs()
            top_ = a.amax(dim=1, keepdim=True)
            r = torch.where(top_ > 0, a / top_, a)
        else:
            r = torch.zeros_like(r)
        r = r.to(dtype)
        # no subnormal but those planted (the reference's sandbox keeps them only where flushing them is harmless)
        rows[sel] = torch.where(r.abs() < torch.finfo(dtype).tiny, torch.zeros_like(r), r)
        mask[sel] = False


def _special(x: torch.Tensor) -> torch.Tensor:
    """Constant slices, a few exact +0.0/-0.0 and a few large and tiny finite values among the drawn ones
    (``special``)."""
    if not x.is_floating_point() or x.numel() == 0:
        return x
    out = x.clone()  # its strides kept: a task's transposed input stays transposed
    y = out if out.is_contiguous() else out.contiguous()  # worked on in logical order, copied back at the end
    n, flat = y.numel(), y.view(-1)
    plain = torch.ones(n, dtype=torch.bool)  # not in a constant slice: where single values are planted
    if y.dim() >= 2:  # ~1/16 of the last dimension's rows repeat one value, others are structured (`_structured`)
        c = _dyadic(flat[int(torch.randint(0, n, ()))])
        # (not whole samples or channels: a GroupNorm whose group is constant has an answer of exactly 0, where the
        # noise of an honest kernel's other order of operations decides; the twin of c9_values/noise_at_floor was
        # refused that way)
        rows, mask = y.view(-1, y.shape[-1]), plain.view(-1, y.shape[-1])
        if rows.shape[0] >= 4 and rows.shape[1] >= 2:
            order = torch.randperm(rows.shape[0])
            k = max(1, rows.shape[0] // 16)
            idx = order[:k]
            rows[idx] = c
            mask[idx] = False
            _structured(rows, mask, order[k:], rows.shape[0] // 2 - k, k)
    _plant_singles(y, plain, max(2, n // 1024), 1)  # exact zeros: anywhere outside the constant rows
    _plant_subnormals(y, plain)
    if y.dim() >= 1:  # constant rows: no row of them is touched
        _extremes_to_ends(y, ~plain.view(-1, y.shape[-1]).any(dim=1) if y.dim() >= 2 else None)
    if y is not out:
        out.copy_(y)
    return out


def _distinct(x: torch.Tensor) -> torch.Tensor:
    """``special``'s single values without ties (``distinct``): exact +0.0/-0.0 (at most one per row of the last
    dimension: the two are equal) and, in float32/float64, large (at most one per row, as in ``special``) and tiny
    finite values of both signs, drawn from continuous ranges; no constant slices. So no two elements of a row are
    equal by construction, and an index output (argmax over a row) has one right answer."""
    if not x.is_floating_point() or x.numel() == 0:
        return x
    out = x.clone()
    y = out if out.is_contiguous() else out.contiguous()
    n = y.numel()
    # exact zeros at most one per row (+0.0 and -0.0 are equal)
    _plant_singles(y, torch.ones(n, dtype=torch.bool), max(2, n // 16384), y.shape[-1] if y.dim() else 1, first=-1.0)
    _extremes_to_ends(y)
    if y is not out:
        out.copy_(y)
    return out


def _nonfinite(x: torch.Tensor) -> torch.Tensor:
    """A few NaN, +Inf and -Inf among the drawn values (~1 in 4096, at least one of each where there is room):
    a kernel must give what PyTorch gives where an input is not a number (off by default; see
    ``VerifyConfig.perturbations`` and docs/verifier.md)."""
    if not x.is_floating_point() or x.numel() == 0:
        return x
    out = x.clone()  # its strides kept: a task's transposed input stays transposed
    y = out if out.is_contiguous() else out.contiguous()  # worked on in logical order, copied back at the end
    flat = y.view(-1)
    pos = _pick(torch.ones(flat.numel(), dtype=torch.bool), max(3, flat.numel() // 4096), 1)
    specials = torch.tensor([float("nan"), float("inf"), float("-inf")], dtype=y.dtype)
    flat[pos] = specials[torch.arange(pos.numel()) % 3]
    if y is not out:
        out.copy_(y)
    return out


# the trials whose floating inputs of >= 2 dimensions go to both models as non-contiguous views (`strided_view`)
STRIDED_IN = {"scale": "transposed", "negate": "padded"}
PAD_MAX = 16  # padded: unused elements after each row, 1 .. min(PAD_MAX, row length)


def strided_fits(x: torch.Tensor) -> bool:
    """Whether ``x`` can be shown as a non-contiguous view (`strided_view`): floating, its last two dimensions at
    least 2 long (a view of fewer is contiguous whatever its strides)."""
    return x.is_floating_point() and x.dim() >= 2 and x.shape[-1] >= 2 and x.shape[-2] >= 2


def strided_view(x: torch.Tensor, layout: str) -> torch.Tensor:
    """``x``'s values as a non-contiguous view over a fresh buffer that starts at its first element (so the view's
    storage span, `message_codec.span`, is the buffer's head): ``transposed``, the last two dimensions swapped in
    memory; ``padded``, each row of the last dimension followed by 1 .. `PAD_MAX` unused elements (drawn; NaN in a
    floating buffer, so a kernel that reads them is wrong)."""
    if layout == "transposed":
        return x.transpose(-1, -2).contiguous().transpose(-1, -2)
    if layout == "padded":
        n = x.shape[-1]
        pad = int(torch.randint(1, min(PAD_MAX, n) + 1, ()))
        buf = torch.full((*x.shape[:-1], n + pad), float("nan"), dtype=x.dtype)
        view = buf[..., :n]
        view.copy_(x)
        return view
    raise ValueError(f"unknown layout {layout!r}")


def same_answer(got: list[Any], base: list[Any]) -> bool:
    """Whether the reference's outputs on the non-contiguous views (``got``) are its answer on the contiguous inputs
    (``base``): equal shapes and dtypes, non-floating outputs equal, NaN at the same positions, and every other
    element within 1e-4 (16-bit dtypes: 1e-2) of the output's largest magnitude (at least 1) of the other: a
    library's other order of operations on a view (a BLAS call on a transposed operand) lands there, a reference
    that reads the view's memory as if it were contiguous does not."""
    pairs = _floating_pairs(got, base, lambda t: t.is_floating_point() or t.is_complex())
    if pairs is None:
        return False
    for a, b in pairs:
        if a.numel() == 0 or torch.equal(a, b):  # the usual case, ~20x cheaper than the float64 pass below
            continue
        a64, b64 = a.double(), b.double()
        masks = _finite_masks(a64, b64)
        if masks is None:
            return False
        fa, fb = masks
        a64, b64 = torch.where(fa, a64, 0.0), torch.where(fb, b64, 0.0)
        tol = 1e-2 if a.element_size() <= 2 else 1e-4
        if float((a64 - b64).abs().max()) > tol * max(1.0, float(b64.abs().max())):
            return False
    return True


PERTURBATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "none": lambda t: t,
    "scale": lambda t: t * 4.0,
    "negate": lambda t: -t,
    "shift": lambda t: t + 3.0,
    "heavy": _heavy,
    "special": _special,
    "distinct": _distinct,
    "nonfinite": _nonfinite,
}


# --- forward arguments that are not tensors (NPUKernelBench: normalized_shape, flags, a dtype) ---------
def encode_args(inputs: list[Any]) -> list[Any] | None:
    """The call template of a forward whose arguments are not all tensors: one entry per argument, ``["t", k]``
    (the k-th tensor of the inputs) or ``["v", value]``, a value being None, a bool, int, float or str as it is,
    or a tagged pair: ``["list", [values]]``, ``["tuple", [values]]``, ``["dtype", "float16"]`` (plain JSON lists,
    as the message schema allows). None when every argument is a tensor (KernelBench's tasks: nothing is sent)."""
    if all(isinstance(x, torch.Tensor) for x in inputs):
        return None
    template: list[Any] = []
    count = 0

    def value(v: Any, where: str) -> Any:
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, (list, tuple)):
            return ["list" if isinstance(v, list) else "tuple", [value(x, where) for x in v]]
        if isinstance(v, torch.dtype):
            return ["dtype", str(v).removeprefix("torch.")]
        raise TypeError(f"{where} is a {type(v).__name__}; forward arguments are tensors, numbers, strings, "
                        "None, torch dtypes and lists/tuples of them")

    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor):
            template.append(["t", count])
            count += 1
        else:
            template.append(["v", value(x, f"get_inputs()[{i}]")])
    return template


def decode_args(template: Any, tensors: list[Any]) -> list[Any]:
    """Forward's arguments from a call template (``encode_args``) and the tensors; ``ValueError`` on anything
    that is not such a template."""
    if not isinstance(template, list):
        raise ValueError("the call template is not a list")

    def value(v: Any, depth: int = 0) -> Any:
        if depth > 16:
            raise ValueError("call template nested too deeply")
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, list) and len(v) == 2:
            kind, inner = v
            if kind in ("list", "tuple") and isinstance(inner, list):
                items = [value(x, depth + 1) for x in inner]
                return items if kind == "list" else tuple(items)
            if kind == "dtype" and isinstance(inner, str):
                dtype = getattr(torch, inner, None)
                if isinstance(dtype, torch.dtype):
                    return dtype
        raise ValueError(f"bad value in the call template: {v!r}"[:200])

    args = []
    for entry in template:
        if isinstance(entry, list) and len(entry) == 2 and entry[0] == "t" and type(entry[1]) is int \
                and 0 <= entry[1] < len(tensors):
            args.append(tensors[entry[1]])
        elif isinstance(entry, list) and len(entry) == 2 and entry[0] == "v":
            args.append(value(entry[1]))
        else:
            raise ValueError(f"bad entry in the call template: {entry!r}"[:200])
    return args
