"""Schedules for Ascend C candidates (the ``ascend-sim`` / ``ascend`` backends).

Same shape as :mod:`.schedules` for the cpu backend: a schedule is a flat JSON-able dict with
``family`` (``ascend_elementwise`` or ``ascend_row``), ``families``, ``transform`` (``draft``,
``explore``, ``memory`` or the transform applied to the start point) and the knob values.

Knobs (the latency model of the emulator rewards overlap of the MTE2/VEC/MTE3 pipes, all 40 vector
cores, large transfers and few passes over GM):

* ``tile``        elements a tile aims at (the host shrinks it until the UB holds every buffer);
* ``buffer_num``  1 = single buffering, 2 = double-buffered queues (copy-in/out overlap compute);
* ``blocks``      ``all`` vector cores, ``half`` of them, or ``tile``: no block gets less than a tile;
* ``vec_form``    (rows) ``count``: per-row count-form instructions with scalars read back from UB;
                  ``repeat``: mask/repeat forms that cover a tile's rows in one instruction
                  (WholeReduce, Brcb-broadcast binary ops);
* ``row_mode``    (rows with reductions) ``stream``: every reduction phase re-reads its inputs from GM
                  chunk by chunk (any row length); ``resident``: a tile of whole rows is read once and
                  stays in UB for all phases (one pass over GM; only when a row fits).
"""
from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Iterable
from typing import Any

from evokernel.generators.template import schedules as S

FAMILIES = ("ascend_elementwise", "ascend_row", "ascend_colreduce")

FAMILY_KNOBS: dict[str, dict[str, list[Any]]] = {
    "ascend_elementwise": {"tile": [1024, 2048, 4096, 8192, 16384], "buffer_num": [1, 2],
                           "blocks": ["all", "half", "tile"]},
    "ascend_row": {"tile": [1024, 2048, 4096, 8192, 16384], "buffer_num": [1, 2], "blocks": ["all", "half", "tile"],
                   "vec_form": ["count", "repeat"], "row_mode": ["stream", "resident"]},
    # reductions over middle dims: vec_form count = row-by-row adds, repeat = a pairwise tree over the tile
    "ascend_colreduce": {"tile": [1024, 2048, 4096, 8192, 16384], "buffer_num": [1, 2], "blocks": ["all", "half"],
                         "vec_form": ["count", "repeat"]},
}

# the draft: single buffer, a moderate tile, every core, the simplest instruction forms, multi-pass rows
CONSERVATIVE: dict[str, Any] = {"tile": 4096, "buffer_num": 1, "blocks": "all", "vec_form": "count",
                                "row_mode": "stream"}

META_KEYS = ("family", "families", "transform", "from")

TRANSFORMS: list[tuple[str, dict[str, Any]]] = [
    ("double_buffer", {"buffer_num": 2}),
    ("resident_rows", {"row_mode": "resident"}),
    ("repeat_form", {"vec_form": "repeat"}),
    ("tile_8192", {"tile": 8192}),
    ("tile_16384", {"tile": 16384}),
    ("blocks_all", {"blocks": "all"}),
    ("blocks_tile", {"blocks": "tile"}),
    ("tile_2048", {"tile": 2048}),
    ("tile_4096", {"tile": 4096}),
    ("count_form", {"vec_form": "count"}),
    ("stream_rows", {"row_mode": "stream"}),
    ("single_buffer", {"buffer_num": 1}),
    ("tile_1024", {"tile": 1024}),
    ("blocks_half", {"blocks": "half"}),
]
TRANSFORM_NAMES = [t for t, _ in TRANSFORMS]


def knob_space(families: Iterable[str]) -> dict[str, list[Any]]:
    space: dict[str, list[Any]] = {}
    for f in families:
        for k, vals in FAMILY_KNOBS.get(f, {}).items():
            space.setdefault(k, list(vals))
    return space


def knobs_of(schedule: dict[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (schedule or {}).items() if k not in META_KEYS}


def canonical(schedule: dict[str, Any] | None) -> str:
    return json.dumps(knobs_of(schedule), sort_keys=True)


def make_schedule(family: str, knobs: dict[str, Any], transform: str) -> dict[str, Any]:
    """A clean schedule of ``family``: every knob of the family, unknown or invalid values replaced
    by the conservative ones."""
    space = knob_space([family])
    clean = {k: knobs.get(k, CONSERVATIVE[k]) for k in sorted(space)}
    for k, v in list(clean.items()):
        if v not in space[k]:
            clean[k] = CONSERVATIVE[k]
    return {"family": family, "families": [family], "transform": transform, **clean}


def apply_transform(schedule: dict[str, Any], name: str) -> dict[str, Any] | None:
    changes = dict(TRANSFORMS)[name]
    space = knob_space(schedule.get("families") or [schedule.get("family", "ascend_row")])
    if any(k not in space or v not in space[k] for k, v in changes.items()):
        return None
    if all(schedule.get(k) == v for k, v in changes.items()):
        return None
    out = dict(schedule)
    out.update(changes)
    out["transform"] = name
    return out


# ----------------------------------------------------------------------------------------- memory

def memory_draft_knobs(context: list[Any], family: str) -> tuple[dict[str, Any] | None, str]:
    """Knobs of the best feasible retrieved schedule of ``family`` (the cpu helper is family-generic)."""
    knobs, source = S.memory_draft_knobs(context, family)
    if knobs is None:
        return None, ""
    return {k: v for k, v in knobs.items() if k in knob_space([family])}, source


def transform_scores(context: list[Any], family: str) -> dict[str, float]:
    """Evidence per transform from memory (log speedup over the parent of retrieved refinements of the
    same family, -1 for a failed one; +0.5 for a best-practice item naming it)."""
    scores: dict[str, float] = {}
    attempts = {id(i) for i in S._attempts(context)}
    for item in context:
        meta = item.meta or {}
        sched = S._item_schedule(item)
        if item.kind == "best_practice":
            named = set()
            if sched and sched.get("transform") in TRANSFORM_NAMES:
                named.add(sched["transform"])
            named |= {t for t in TRANSFORM_NAMES if t in (item.text or "").split()}
            for t in named:
                scores[t] = scores.get(t, 0.0) + 0.5
            continue
        if id(item) not in attempts or not sched or sched.get("family") != family:
            continue
        t = sched.get("transform")
        if t not in TRANSFORM_NAMES or not (meta.get("parent") or meta.get("stage") == "refine"):
            continue
        if meta.get("feasible") is False:
            scores[t] = scores.get(t, 0.0) - 1.0
            continue
        sp = meta.get("speedup_vs_parent")
        if isinstance(sp, (int, float)) and sp > 0:
            scores[t] = scores.get(t, 0.0) + math.log(float(sp))
    return scores


def prior_scores(family: str, n_cols: int, reductions: int) -> dict[str, float]:
    """Small op-aware priors for the refinement order (memory evidence, a log speedup, outweighs them):
    keeping rows resident saves a GM pass per reduction, double buffering overlaps copies with compute,
    and the repeat forms pay off for short rows (one instruction covers many rows) but cost one
    instruction per 64 columns on long ones."""
    p: dict[str, float] = {"double_buffer": 0.02}
    if family == "ascend_row":
        if reductions:
            p["resident_rows"] = 0.03
        if n_cols <= 512:
            p["repeat_form"] = 0.025
        elif n_cols > 1024:
            p["repeat_form"] = -0.03
    if family == "ascend_colreduce":
        p["repeat_form"] = 0.025  # log2(rows) whole-tile instructions instead of one per row
    return p


def order_transforms(scores: dict[str, float], seed: int) -> list[str]:
    rng = random.Random(seed)
    jitter = {t: i + rng.random() * 2.5 for i, t in enumerate(TRANSFORM_NAMES)}
    return sorted(TRANSFORM_NAMES, key=lambda t: (-round(scores.get(t, 0.0), 6), jitter[t]))


def explore_knobs(family: str, rng: random.Random) -> dict[str, Any]:
    """A seeded schedule leaning to the faster-looking values."""
    space = knob_space([family])
    knobs = dict(CONSERVATIVE)
    for k, vals in space.items():
        knobs[k] = rng.choice(vals)
    if rng.random() < 0.6:
        knobs["buffer_num"] = 2
    if knobs.get("blocks") == "half" and rng.random() < 0.7:
        knobs["blocks"] = "all"
    return knobs


def pick_refinement(start: dict[str, Any], tried: set[str], scores: dict[str, float], seed: int,
                    is_real: Callable[[dict[str, Any]], bool], prefer: list[str] | None = None,
                    ) -> dict[str, Any] | None:
    """The first applicable, untried transform whose code is new and feasible (``is_real``; ``prefer``
    first); else the first such composition of two transforms."""
    order = order_transforms(scores, seed)
    if prefer:
        order = [t for t in prefer if t in order] + [t for t in order if t not in prefer]
    for name in order:
        cand = apply_transform(start, name)
        if cand is None or canonical(cand) in tried:
            continue
        if is_real(cand):
            return cand
    for a in order:
        first = apply_transform(start, a)
        if first is None:
            continue
        for b in order:
            if b == a:
                continue
            cand = apply_transform(first, b)
            if cand is None or canonical(cand) in tried:
                continue
            if is_real(cand):
                cand["transform"] = f"{a}+{b}"
                return cand
    return None
