"""Runs INSIDE the reference sandbox: the values the ``special`` trials plant into integer inputs.

The trial perturbations of `trial_inputs` reshape floating inputs only, so an integer input (class targets,
indices, offsets) used to hold only what ``get_inputs()`` draws -- ``randint(0, C)`` -- and a kernel wrong on
any other value the operator accepts passed: a cross entropy that scored ``ignore_index`` (-100, the padding of
every language-model batch) as class 0 (red team round 6, ``rt6_cross_entropy_ignores_ignore_index``).

In the trials named in `PLANTED_IN`, every integer (not bool) input of at least 2 elements gets, at random
positions (~1/16 of its elements per group, at least one; the positions of the groups do not overlap):

* the **boundaries** of what ``get_inputs()`` drew: its minimum and maximum (0 and C-1 for ``randint(0, C)``);
* the **sentinels** `SENTINELS` (-1, -100: ignore_index's default) and ``-(max + 1)``, the most negative index
  that wraps to a valid one for a dimension of ``max + 1`` -- each only if the dtype holds it and it lies outside
  the drawn range.

The ``special`` trials (the plain one and the perturbed-parameter one) plant them: their planted equal values
already excuse an index output from exact comparison (ties), and planted boundaries repeat a value many times (a
``distinct`` trial promises rows without ties and compares integer outputs exactly). The timing's value rounds draw
their inputs in a worker that holds no model, so they plant nothing here.

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

PLANTED_IN = ("special",)  # the perturbations that also plant integer values (trial_inputs.PERTURBATIONS' names)
SENTINELS = (-1, -100)  # -100: the default ignore_index of cross_entropy / nll_loss
SHARE = 16  # ~1/SHARE of an integer input's elements per planted group
MIN_ELEMENTS = 2  # a one-element integer input is a count or a size more often than data: left alone


def integer_input(t: torch.Tensor) -> bool:
    """An input this module plants into: integer, not bool, at least `MIN_ELEMENTS` elements."""
    return (not t.is_floating_point() and not t.is_complex() and t.dtype != torch.bool
            and t.numel() >= MIN_ELEMENTS)


def groups(x: torch.Tensor) -> list[tuple[str, list[int]]]:
    """(name, values) of the groups planted into ``x``: its drawn minimum and maximum, then each sentinel the dtype
    holds outside the drawn range (``-(max + 1)`` only if it is not one of `SENTINELS`)."""
    lo, hi = int(x.min()), int(x.max())
    info = torch.iinfo(x.dtype)
    out: list[tuple[str, list[int]]] = [("boundaries", sorted({lo, hi}))]
    for s in (*SENTINELS, -(hi + 1)):
        if info.min <= s <= info.max and not lo <= s <= hi and all(s not in v for _, v in out[1:]):
            out.append((f"sentinel {s}", [s]))
    return out


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


def plant(inputs: list[torch.Tensor], accepts: Callable[[list[torch.Tensor]], bool]) -> list[torch.Tensor]:
    """``inputs`` with boundary and sentinel values planted into their integer inputs where ``accepts`` (the
    reference runs on the whole list without error and with finite outputs) holds; the other inputs are returned
    as they are. A new list; the tensors given are not modified."""
    out = list(inputs)
    for i, x in enumerate(inputs):
        if not integer_input(x):
            continue
        named = groups(x)
        n = x.numel()
        k = max(1, n // SHARE)
        places = _positions(n, len(named), k)
        plans = [(values, where) for (_, values), where in zip(named, places) if where.numel()]
        whole = x
        for values, where in plans:
            whole = _planted(whole, where, values)
        if accepts(out[:i] + [whole] + out[i + 1:]):
            out[i] = whole
            continue
        kept = x
        for values, where in plans:
            trial = _planted(kept, where, values)
            if accepts(out[:i] + [trial] + out[i + 1:]):
                kept = trial
        out[i] = kept
    return out
