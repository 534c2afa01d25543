"""Runs INSIDE the reference sandbox: what the ``special`` and ``distinct`` trials plant into integer and bool inputs.

The trial perturbations of `trial_inputs` reshape floating inputs only, so an integer input (class targets,
indices, offsets) used to hold only what ``get_inputs()`` draws -- ``randint(0, C)`` -- and a kernel wrong on
any other value the operator accepts passed: a cross entropy that scored ``ignore_index`` (-100, the padding of
every language-model batch) as class 0 (red team round 6, ``rt6_cross_entropy_ignores_ignore_index``).

In the trials named in `PLANTED_IN`, every integer (not bool) input of at least 2 elements gets, at random
positions (~1/16 of its elements per group, at least one; the positions of the groups do not overlap):

* the **boundaries** of what ``get_inputs()`` drew: its minimum and maximum (0 and C-1 for ``randint(0, C)``) --
  ``special`` only;
* the **sentinels** `SENTINELS` (-1, -100: ignore_index's default) and ``-(max + 1)``, the most negative index
  that wraps to a valid one for a dimension of ``max + 1`` -- each only if the dtype holds it and it lies outside
  the drawn range;
* **negative indices** drawn from -2 .. -max (`NEGATIVE_DRAWN` per trial), where the drawn range is [0, max] with
  max >= 2: Python-style indexing accepts every value in [-(max + 1), max] (red team round 8 passed a gather right
  for -1 and -(max + 1) only).

Every int64 and int32 input also gets **large magnitudes** (`large_values`: int64 from 2**31, past int32's range, up
to 2**52; int32 from 2**16 up to 2**29), both signs, at most one per row of the last dimension, in ``special`` and
``distinct`` alike (red team round 9 passed an int64 cumsum accumulated in int32). An index input's reference raises
on them, so they are dropped there like any refused group.

Every bool input of at least 2 elements (a mask) gets ~1/16 of the rows of its last dimension all False (a padding row:
nothing kept) and ~1/16 all True (red team round 8 passed a masked mean answering 0/0 on an all-False row; ``rand >
0.5`` over a row is never all False).

The ``special`` trials (the plain one and the perturbed-parameter one) plant every group: their planted equal values
already excuse an index output from exact comparison (ties). The ``distinct`` trials compare integer outputs exactly
and promise rows without ties, so they plant no boundaries (~1/16 of the elements repeating the drawn maximum would
tie an argmax over an integer input) but the sentinels, the negative indices and the bool rows: a sentinel planted
only where integer outputs are excused never judged one (red team round 8: a count of ``labels != -100`` that ignored
its labels passed). The sentinels repeat too; an argmin over an integer input meets PyTorch's first-index choice
among them, as the plain trials judge it among ``randint``'s own repeats. The timing's value rounds draw their inputs
in a worker that holds no model, so they plant nothing here.

A planted group is kept only if **the reference accepts it**: the task's ``Model`` runs on the inputs with the
group planted (floating inputs as drawn, before their own perturbation) without an exception and gives finite
floating outputs. That check runs here, in the reference's sandbox, on the reference's model (``accepts``, given
by the worker); the candidate never takes part. So -100 is planted for ``F.cross_entropy`` (it ignores it) and
refused for an embedding or a gather (they raise), -1 is refused for a cross entropy and kept for a Python-style
index. All groups are tried at once first (one forward); if that is refused, each group is tried alone on top of
the groups kept so far (one forward each). The positions come from torch's generator, seeded by the trial's
secret seed, so the same seed gives the same inputs (the float64 second opinion draws them again).
"""
from __future__ import annotations

from typing import Callable

import torch

PLANTED_IN = ("special", "distinct")  # the perturbations that also plant integer and bool values (trial_inputs'
# PERTURBATIONS' names); ``distinct`` plants no boundaries (`plant`'s sentinels_only)
SENTINELS = (-1, -100)  # -100: the default ignore_index of cross_entropy / nll_loss
SHARE = 16  # ~1/SHARE of an integer input's elements (a bool input's rows) per planted group
NEGATIVE_DRAWN = 8  # Python-style negative indices drawn per trial (`groups`)
MIN_ELEMENTS = 2  # a one-element integer input is a count or a size more often than data: left alone
# large magnitudes (`large_values`), both signs: int64 from beyond int32's range to 2**52, int32 from 2**16 to 2**29
# (two of them add without leaving int32); other integer dtypes (int8/int16/uint8) get none
LARGE = {torch.int64: (1 << 31, 1 << 52), torch.int32: (1 << 16, 1 << 29)}


def integer_input(t: torch.Tensor) -> bool:
    """An input this module plants into: integer, not bool, at least `MIN_ELEMENTS` elements."""
    return (not t.is_floating_point() and not t.is_complex() and t.dtype != torch.bool
            and t.numel() >= MIN_ELEMENTS)


def bool_input(t: torch.Tensor) -> bool:
    """A bool input this module plants rows into (a mask): at least `MIN_ELEMENTS` elements."""
    return t.dtype == torch.bool and t.numel() >= MIN_ELEMENTS


def groups(x: torch.Tensor, sentinels_only: bool = False) -> list[tuple[str, list[int]]]:
    """(name, values) of the groups planted into ``x``: its drawn minimum and maximum (not with ``sentinels_only``),
    then each sentinel the dtype holds outside the drawn range (``-(max + 1)`` only if it is not one of `SENTINELS`),
    then, for a drawn range of non-negative values up to ``max >= 2`` (indices), Python-style negative indices drawn
    from -2 .. -max (`NEGATIVE_DRAWN` of them; red team round 8: a gather right for -1 and -(max + 1) only)."""
    lo, hi = int(x.min()), int(x.max())
    info = torch.iinfo(x.dtype)
    out: list[tuple[str, list[int]]] = [] if sentinels_only else [("boundaries", sorted({lo, hi}))]
    for s in (*SENTINELS, -(hi + 1)):
        if info.min <= s <= info.max and not lo <= s <= hi and all(s not in v for _, v in out):
            out.append((f"sentinel {s}", [s]))
    if lo >= 0 and hi >= 2 and info.min <= -hi:
        taken = {v for _, vs in out for v in vs}
        drawn = [v for v in (-torch.randint(2, hi + 1, (NEGATIVE_DRAWN,))).tolist() if v not in taken]
        if drawn:
            out.append(("negative indices", sorted(set(drawn))))
    return out


def large_range(dtype: torch.dtype, count: int) -> tuple[int, int] | None:
    """(smallest, largest) magnitude of the large values planted into an integer input of ``dtype`` holding ``count``
    of them (`LARGE`), or None for a dtype that gets none. int64: from int32's range up (so an int32 accumulator or
    a cast to int32 is wrong on every one of them) to 2**52 (exact in float64, so a kernel that widens through double
    rounds as PyTorch does) and never more than 2**61 / count (the sum of all of them stays inside int64)."""
    span = LARGE.get(dtype)
    if span is None:
        return None
    lo, hi = span
    return lo, max(lo, min(hi, (1 << 61) // max(1, count)))


def large_values(x: torch.Tensor, first: float, taken: torch.Tensor | None = None
                 ) -> tuple[torch.Tensor, list[int]] | None:
    """(positions, values) of the large magnitudes planted into ``x`` (`large_range`): at most one per row of the last
    dimension (a row's sum is then that value plus the drawn ones: a float conversion of the row rounds it as
    PyTorch does, where two large values of opposite signs would cancel), ~1 in 1024 elements and at least 16 where
    there are rows for them (small tensors: at most 1 in 64), log-uniform magnitudes drawn stratified, signs
    alternating from ``first``'s, never at a position in ``taken`` (the other groups': a row whose every draw lands
    there gets none). None for a dtype without them (`LARGE`)."""
    n = x.numel()
    width = x.shape[-1] if x.dim() else 1
    nrows = n // max(1, width)
    k = min(nrows, max(1, min(max(16, n // 1024), max(2, n // 64))))
    span = large_range(x.dtype, k)
    if span is None or not k:
        return None
    rows = _positions(nrows, 1, k)[0]
    where = rows * width + torch.randint(0, width, (rows.numel(),))
    if taken is not None and taken.numel():
        for _ in range(8):  # another column of the same row where the first draw met another group
            clash = torch.isin(where, taken)
            if not bool(clash.any()):
                break
            where[clash] = rows[clash] * width + torch.randint(0, width, (int(clash.sum()),))
        where = where[~torch.isin(where, taken)]
    m = where.numel()
    if not m:
        return None
    lo, hi = span
    u = (torch.randperm(m).double() + torch.rand(m, dtype=torch.float64)) / m
    mag = torch.round(lo * (hi / lo) ** u).clamp(lo, hi)
    sign = torch.where(torch.arange(m) % 2 == 0, 1.0, -1.0).double() * (1.0 if first > 0 else -1.0)
    return where, [int(v) for v in (mag * sign).tolist()]


def bool_groups(x: torch.Tensor) -> list[tuple[str, bool]]:
    """(name, value) of the rows planted into a bool input: all False (a padding row: nothing kept) and all True."""
    return [("all-False rows", False), ("all-True rows", True)]


def _positions(n: int, count: int, k: int) -> list[torch.Tensor]:
    """``count`` disjoint sets of ``k`` random positions in ``range(n)`` (fewer where ``n`` is small)."""
    total = min(n, count * k)
    if n <= 1 << 22:
        pos = torch.randperm(n)[:total]
    else:  # a huge index tensor: positions drawn with replacement, made disjoint by uniqueness (no full permutation)
        pos = torch.unique(torch.randint(0, n, (2 * total,)))[:total]
        pos = pos[torch.randperm(pos.numel())]
    return [pos[i * k:(i + 1) * k] for i in range(count)]


def _planted(x: torch.Tensor, where: torch.Tensor, values: list[int]) -> torch.Tensor:
    y = x.clone()
    flat = y.view(-1) if y.is_contiguous() else None
    vals = torch.tensor(values, dtype=x.dtype)[torch.arange(where.numel()) % len(values)]
    if flat is not None:
        flat[where] = vals
        return y
    c = y.contiguous()
    c.view(-1)[where] = vals
    y.copy_(c)
    return y


def _rows_planted(x: torch.Tensor, rows: torch.Tensor, value: bool) -> torch.Tensor:
    """``x`` (bool) with the given rows of its last dimension set to ``value``."""
    y = x.clone()
    c = y.contiguous()
    c.view(-1, c.shape[-1] if c.dim() else 1)[rows] = value
    if c is not y:
        y.copy_(c)
    return y


def plant(inputs: list[torch.Tensor], accepts: Callable[[list[torch.Tensor]], bool],
          sentinels_only: bool = False) -> list[torch.Tensor]:
    """``inputs`` with boundary and sentinel values planted into their integer inputs, and all-False and all-True rows
    into their bool inputs, where ``accepts`` (the reference runs on the whole list without error and with finite
    outputs) holds; the other inputs are returned as they are. ``sentinels_only`` (the ``distinct`` trials, which
    compare integer outputs exactly): no boundaries, whose repeats of drawn values make ties. A new list; the tensors
    given are not modified."""
    out = list(inputs)
    for i, x in enumerate(inputs):
        if bool_input(x):
            width = x.shape[-1] if x.dim() else 1
            nrows = x.numel() // width
            places = _positions(nrows, 2, max(1, nrows // SHARE))
            plans = [(value, where) for (_, value), where in zip(bool_groups(x), places) if where.numel()]
            do = _rows_planted
        elif integer_input(x):
            named = groups(x, sentinels_only)
            n = x.numel()
            places = _positions(n, len(named), max(1, n // SHARE))
            plans = [(values, where) for (_, values), where in zip(named, places) if where.numel()]
            large = large_values(x, first=-1.0 if sentinels_only else 1.0,
                                 taken=torch.cat([w for _, w in plans]) if plans else None)
            if large is not None:  # last: where it meets another group's position, the large value stays
                plans.append((large[1], large[0]))
            do = _planted
        else:
            continue
        if not plans:
            continue
        whole = x
        for values, where in plans:
            whole = do(whole, where, values)
        if accepts(out[:i] + [whole] + out[i + 1:]):
            out[i] = whole
            continue
        kept = x
        for values, where in plans:
            trial = do(kept, where, values)
            if accepts(out[:i] + [trial] + out[i + 1:]):
                kept = trial
        out[i] = kept
    return out
