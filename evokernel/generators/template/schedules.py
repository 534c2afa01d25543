"""Schedules: the knobs of each family, the conservative default, exploration, the transforms a
refinement applies, and how retrieved memory steers both choices.

A schedule is a flat JSON-serialisable dict: ``family`` (the plan's costliest family), ``families``
(all families of its stages), ``transform`` (``draft``, ``explore``, ``memory`` or the name of the
transform applied to the start point) and the knob values relevant to those families.
"""
from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Iterable
from typing import Any

# knob -> allowed values, per family (the first value listed is not necessarily the default)
FAMILY_KNOBS: dict[str, dict[str, list[Any]]] = {
    "row": {"omp": ["static", "dynamic", "off"], "vec": [1, 8, 16], "unroll": [1, 2, 4], "tail": ["safe", "none"],
            "math": ["libm", "fast"], "row_cache": ["recompute", "cache"]},
    "gemm": {"omp": ["static", "dynamic", "off"], "gemm_algo": ["naive", "ikj", "packed"], "gemm_mr": [4, 6, 8],
             "gemm_nr": [16, 32, 48], "gemm_kc": [128, 256, 512], "gemm_mc": [48, 96, 192],
             "gemm_nc": [512, 1024, 2048], "vec": [1, 8, 16], "math": ["libm", "fast"], "unroll": [1, 2, 4]},
    "gemv": {"omp": ["static", "dynamic", "off"], "vec": [1, 8, 16], "unroll": [1, 2, 4], "math": ["libm", "fast"]},
    "conv": {"omp": ["static", "dynamic", "off"], "conv_algo": ["direct", "rowvec", "im2col"], "conv_ocb": [1, 2, 4, 8],
             "vec": [1, 8, 16], "math": ["libm", "fast"], "unroll": [1, 2, 4], "gemm_mr": [4, 6, 8],
             "gemm_nr": [16, 32, 48], "gemm_kc": [128, 256, 512], "gemm_mc": [48, 96, 192],
             "gemm_nc": [512, 1024, 2048]},
    "pool": {"omp": ["static", "dynamic", "off"], "vec": [1, 8, 16], "math": ["libm", "fast"]},
    "scan": {"omp": ["static", "dynamic", "off"], "scan_chains": [1, 4, 8]},
    "midreduce": {"omp": ["static", "dynamic", "off"], "mid_chunk": [128, 512, 2048]},
    "groupnorm": {"omp": ["static", "dynamic", "off"], "gn_stats": ["two_pass", "one_pass"], "vec": [1, 8, 16],
                  "math": ["libm", "fast"], "unroll": [1, 2, 4]},
    "layout": {"omp": ["static", "dynamic", "off"], "tile": [8, 32, 64]},
}

CONSERVATIVE: dict[str, Any] = {
    "omp": "static", "vec": 1, "unroll": 1, "tail": "safe", "math": "libm", "row_cache": "recompute",
    "gemm_algo": "ikj", "gemm_mr": 6, "gemm_nr": 32, "gemm_kc": 256, "gemm_mc": 96, "gemm_nc": 1024,
    "conv_algo": "direct", "conv_ocb": 4, "scan_chains": 1, "mid_chunk": 512, "gn_stats": "two_pass", "tile": 32,
}

# ------------------------------------------------------------------------------ shape prior
# The algorithm a draft starts from, by the shapes of the plan's anchors. Measured on KernelBench's own
# files at fitted sizes (docs/template-generator.md, "Algorithm by shape"): the packed, register-blocked
# gemm runs 2-3x faster than the row-at-a-time ikj form once all three gemm dims reach a few dozen;
# im2col + packed gemm runs 1.5-7x faster than the row-vectorised conv for dense convolutions, direct
# or transposed, with a reduction depth (CI/G x kernel volume) of 8 or more; a depthwise convolution
# runs 2-4x slower as im2col than row-vectorised, and one conv_algo knob serves every conv of a plan,
# so a plan with a depthwise conv keeps the row form. A prior only: refining can flip the algorithm
# (gemm_ikj, conv_rowvec, conv_im2col) and memory scores those flips like any transform.
PACKED_GEMM_MIN = {"m": 16, "n": 32, "k": 32}
IM2COL_MIN_DEPTH = 8


def shape_knobs(anchors: list[tuple[str, dict[str, Any], dict[str, int]]]) -> dict[str, Any]:
    """Algorithm knobs for a draft from ``(op, attrs, dims)`` of each anchor: gemm ``dims`` m, n, k;
    conv ``dims`` ci (input channels), kvol (kernel volume)."""
    out: dict[str, Any] = {}
    convs = []
    for op, attrs, dims in anchors:
        if op == "gemm" and all(dims.get(d, 0) >= v for d, v in PACKED_GEMM_MIN.items()):
            out["gemm_algo"] = "packed"
        elif op in ("conv2d", "convnd"):
            groups = max(int(attrs.get("groups", 1)), 1)
            convs.append((groups > 1 and dims["ci"] // groups == 1, dims["ci"] // groups * dims["kvol"]))
    if convs:
        depthwise = any(dw for dw, _ in convs)
        deep = any(depth >= IM2COL_MIN_DEPTH for _, depth in convs)
        out["conv_algo"] = "im2col" if deep and not depthwise else "rowvec"
    return out


# knobs whose risky value makes a kernel wrong unless sizes happen to divide
RISKY = {"tail": "none"}

META_KEYS = ("family", "families", "transform", "from")


def knobs_of(schedule: dict[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (schedule or {}).items() if k not in META_KEYS}


def canonical(schedule: dict[str, Any] | None) -> str:
    return json.dumps(knobs_of(schedule), sort_keys=True)


def make_schedule(family: str, families: list[str], knobs: dict[str, Any], transform: str) -> dict[str, Any]:
    space = knob_space(families)
    clean = {k: knobs.get(k, CONSERVATIVE[k]) for k in sorted(space)}
    for k, v in list(clean.items()):
        if v not in space[k]:
            clean[k] = CONSERVATIVE[k]
    return {"family": family, "families": list(families), "transform": transform, **clean}


# ---------------------------------------------------------------------------------- transforms
# name -> knob changes; a transform applies when all its knobs belong to the plan's families, it
# changes the schedule, and (checked by the generator) the generated source actually changes
TRANSFORMS: list[tuple[str, dict[str, Any]]] = [
    # vector lanes only pay off for exp/erf/tanh-heavy code together with vector math
    ("vectorize16_fast", {"vec": 16, "math": "fast"}),
    ("vectorize16", {"vec": 16}),
    ("fast_math", {"math": "fast"}),
    ("gemm_packed", {"gemm_algo": "packed"}),
    ("conv_im2col", {"conv_algo": "im2col"}),
    ("conv_rowvec", {"conv_algo": "rowvec"}),
    ("scan_chains4", {"scan_chains": 4}),
    ("unroll2", {"unroll": 2}),
    ("row_cache", {"row_cache": "cache"}),
    ("gemm_ikj", {"gemm_algo": "ikj"}),
    ("vectorize8", {"vec": 8}),
    ("unroll4", {"unroll": 4}),
    ("gemm_tile_8x32", {"gemm_mr": 8, "gemm_nr": 32}),
    ("gemm_tile_4x48", {"gemm_mr": 4, "gemm_nr": 48}),
    ("gemm_tile_6x16", {"gemm_mr": 6, "gemm_nr": 16}),
    ("gemm_tile_6x32", {"gemm_mr": 6, "gemm_nr": 32}),
    ("gemm_kc512", {"gemm_kc": 512}),
    ("gemm_kc128", {"gemm_kc": 128}),
    ("gemm_kc256", {"gemm_kc": 256}),
    ("gemm_mc192", {"gemm_mc": 192}),
    ("gemm_mc48", {"gemm_mc": 48}),
    ("gemm_nc2048", {"gemm_nc": 2048}),
    ("gemm_nc512", {"gemm_nc": 512}),
    ("conv_ocb8", {"conv_ocb": 8}),
    ("conv_ocb2", {"conv_ocb": 2}),
    ("scan_chains8", {"scan_chains": 8}),
    ("gn_one_pass", {"gn_stats": "one_pass"}),
    ("mid_chunk2048", {"mid_chunk": 2048}),
    ("mid_chunk128", {"mid_chunk": 128}),
    ("tile64", {"tile": 64}),
    ("tile8", {"tile": 8}),
    ("omp_dynamic", {"omp": "dynamic"}),
    ("omp_static", {"omp": "static"}),
    ("unroll1", {"unroll": 1}),
    ("row_recompute", {"row_cache": "recompute"}),
    ("safe_tail", {"tail": "safe"}),
    ("drop_tail", {"tail": "none"}),  # risky: no remainder loop
    ("omp_off", {"omp": "off"}),
]
TRANSFORM_NAMES = [t for t, _ in TRANSFORMS]


# --------------------------------------------------------------------------------------- memory

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


def risky_failed(context: list[Any], family: str) -> bool:
    """Did a retrieved trace or experience of this family fail with a risky knob value?"""
    for item in _attempts(context):
        sched = _item_schedule(item)
        if not sched or not _same_family(sched, family):
            continue
        if (item.meta or {}).get("feasible") is False and any(sched.get(k) == v for k, v in RISKY.items()):
            return True
    return False


def explore_knobs(families: list[str], rng: random.Random, allow_risky: bool) -> dict[str, Any]:
    """A seeded random schedule: faster-looking values, sometimes the risky ones."""
    space = knob_space(families)
    knobs = dict(CONSERVATIVE)
    for k, vals in space.items():
        choices = [v for v in vals if allow_risky or RISKY.get(k) != v]
        if k == "omp":
            choices = ["static", "dynamic"]
        knobs[k] = rng.choice(choices)
    if knobs.get("vec") == 1 and rng.random() < 0.7:
        knobs["vec"] = 16
    return knobs


class Space:
    """The knobs and transforms of one target's schedules (cpu here, Ascend C in ascend_schedules);
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


CPU = Space(FAMILY_KNOBS, TRANSFORMS, "row")
knob_space = CPU.knob_space
apply_transform = CPU.apply_transform
transform_scores = CPU.transform_scores
order_transforms = CPU.order_transforms
pick_refinement = CPU.pick_refinement
