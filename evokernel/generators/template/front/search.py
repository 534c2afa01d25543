"""The schedule search every target shares (the front end's, target-independent): what a schedule is, how
retrieved memory ranks schedules and transforms, and :class:`Space`, the search over one target's knobs and
transforms (applying a transform, scoring it from memory, ordering, picking a refinement).

A schedule is a flat JSON-serialisable dict: ``family`` (the plan's costliest family), ``families`` (all families
of its stages), ``transform`` (``draft``, ``explore``, ``memory`` or the name of the transform applied to the
start point) and the knob values relevant to those families. The knobs and transforms themselves are the back
ends' (:mod:`..cpu.schedules`, :mod:`..ascend.schedules`), each gathered from its family table.
"""
from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Iterable
from typing import Any

META_KEYS = ("family", "families", "transform", "from")


def knobs_of(schedule: dict[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (schedule or {}).items() if k not in META_KEYS}


def canonical(schedule: dict[str, Any] | None) -> str:
    return json.dumps(knobs_of(schedule), sort_keys=True)


def _item_schedule(item: Any) -> dict[str, Any] | None:
    try:
        return item.schedule()
    except Exception:  # noqa: BLE001 - a malformed memory item is just ignored
        return None


def _same_family(sched: dict[str, Any], family: str) -> bool:
    return sched.get("family") == family


ATTEMPT_KINDS = ("trace", "experience")  # both record one attempt: its schedule and its outcome


def _attempts(context: list[Any]) -> list[Any]:
    """Traces and experiences of the context, one per attempt (an attempt's trace and experience
    both carry its schedule and outcome; counting both would double the evidence)."""
    seen: set[str] = set()
    out = []
    for item in context:
        if item.kind not in ATTEMPT_KINDS:
            continue
        key = (item.meta or {}).get("attempt_id") or item.id
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


def memory_draft_knobs(context: list[Any], family: str) -> tuple[dict[str, Any] | None, str]:
    """Knobs of the best feasible retrieved schedule of ``family`` (a trace or experience by latency,
    else a best-practice item), and the id it came from."""
    best: tuple[float, str, dict[str, Any]] | None = None
    attempts = {id(i) for i in _attempts(context)}
    for item in context:
        sched = _item_schedule(item)
        if not sched or not _same_family(sched, family):
            continue
        meta = item.meta or {}
        if item.kind in ATTEMPT_KINDS:
            if id(item) not in attempts:
                continue
            if not meta.get("feasible"):
                continue
            lat = float(meta.get("latency_ms", -1) or -1)
            rank = lat if lat > 0 else 1e12
        elif item.kind == "best_practice":
            rank = 1e13
        else:
            continue
        if best is None or (rank, item.id) < (best[0], best[1]):
            best = (rank, item.id, sched)
    if best is None:
        return None, ""
    return knobs_of(best[2]), best[1]


def failed_with(context: list[Any], family: str, values: dict[str, Any]) -> bool:
    """Did a retrieved trace or experience of this family fail with one of these knob values?"""
    for item in _attempts(context):
        sched = _item_schedule(item)
        if not sched or not _same_family(sched, family):
            continue
        if (item.meta or {}).get("feasible") is False and any(sched.get(k) == v for k, v in values.items()):
            return True
    return False


class Space:
    """The knobs and transforms of one target's schedules (:mod:`..cpu.schedules`, :mod:`..ascend.schedules`);
    the search over them -- applying transforms, scoring them from memory, ordering, picking a
    refinement -- is the same for every target."""

    def __init__(self, family_knobs: dict[str, dict[str, list[Any]]], transforms: list[tuple[str, dict[str, Any]]],
                 default_family: str):
        self.family_knobs, self.transforms, self.default_family = family_knobs, transforms, default_family
        self.names = [t for t, _ in transforms]

    def knob_space(self, families: Iterable[str]) -> dict[str, list[Any]]:
        space: dict[str, list[Any]] = {}
        for f in families:
            for k, vals in self.family_knobs.get(f, {}).items():
                space.setdefault(k, list(vals))
        return space

    def apply_transform(self, schedule: dict[str, Any], name: str) -> dict[str, Any] | None:
        changes = dict(self.transforms)[name]
        space = self.knob_space(schedule.get("families") or [schedule.get("family", self.default_family)])
        if any(k not in space or v not in space[k] for k, v in changes.items()):
            return None
        if all(schedule.get(k) == v for k, v in changes.items()):
            return None
        out = dict(schedule)
        out.update(changes)
        out["transform"] = name
        return out

    def transform_scores(self, context: list[Any], family: str) -> dict[str, float]:
        """Evidence per transform from memory: log speedup over the parent of retrieved refinements of
        the same family (negative when it slowed down, -1 when the result failed); best-practice items
        naming a transform add 0.5."""
        scores: dict[str, float] = {}
        attempts = {id(i) for i in _attempts(context)}
        for item in context:
            meta = item.meta or {}
            sched = _item_schedule(item)
            if item.kind == "best_practice":
                named = set()
                if sched and sched.get("transform") in self.names:
                    named.add(sched["transform"])
                named |= {t for t in self.names if t in (item.text or "").split()}
                for t in named:
                    scores[t] = scores.get(t, 0.0) + 0.5
                continue
            if id(item) not in attempts or not sched or not _same_family(sched, family):
                continue
            t = sched.get("transform")
            # a refinement: traces link their parent; experiences say their stage
            if t not in self.names or not (meta.get("parent") or meta.get("stage") == "refine"):
                continue
            if meta.get("feasible") is False:
                scores[t] = scores.get(t, 0.0) - 1.0
                continue
            sp = meta.get("speedup_vs_parent")
            if isinstance(sp, (int, float)) and sp > 0:
                scores[t] = scores.get(t, 0.0) + math.log(float(sp))
        return scores

    def order_transforms(self, scores: dict[str, float], seed: int) -> list[str]:
        """Transforms by memory evidence, then by the base order perturbed by the seed (deterministic)."""
        rng = random.Random(seed)
        jitter = {t: i + rng.random() * 2.5 for i, t in enumerate(self.names)}
        return sorted(self.names, key=lambda t: (-round(scores.get(t, 0.0), 6), jitter[t]))

    def pick_refinement(self, start: dict[str, Any], tried: set[str], scores: dict[str, float], seed: int,
                        is_real: Callable[[dict[str, Any]], bool], prefer: list[str] | None = None,
                        ) -> dict[str, Any] | None:
        """The first applicable, untried, non-cosmetic transform (``is_real``; ``prefer`` first); else the
        first such composition of two transforms."""
        order = self.order_transforms(scores, seed)
        if prefer:
            order = [t for t in prefer if t in order] + [t for t in order if t not in prefer]
        for name in order:
            cand = self.apply_transform(start, name)
            if cand is None or canonical(cand) in tried:
                continue
            if is_real(cand):
                return cand
        # neighbours two steps away
        for a in order:
            first = self.apply_transform(start, a)
            if first is None:
                continue
            for b in order:
                if b == a:
                    continue
                cand = self.apply_transform(first, b)
                if cand is None or canonical(cand) in tried:
                    continue
                if is_real(cand):
                    cand["transform"] = f"{a}+{b}"
                    return cand
        return None
