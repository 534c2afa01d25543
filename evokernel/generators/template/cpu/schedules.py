"""The cpu back end's schedules: the knob spaces and conservative values of its families (gathered from the
family table, :mod:`.families`), the transforms a refinement applies, the algorithm a draft takes by shape,
exploration, and the search over them (:class:`~..front.search.Space`, shared with the Ascend C back end).

A schedule is a flat JSON-serialisable dict (:mod:`..front.search`): ``family``, ``families``, ``transform`` and
the knob values relevant to those families.
"""
from __future__ import annotations

import random
from typing import Any

from evokernel.generators.template.cpu.families import FAMILIES
from evokernel.generators.template.front.search import Space, failed_with

# knob -> allowed values, per family (the first value listed is not necessarily the default): each family's own
FAMILY_KNOBS: dict[str, dict[str, list[Any]]] = {name: fam.KNOBS for name, fam in FAMILIES.items()}


def _conservative() -> dict[str, Any]:
    """The families' conservative values in one dict (a knob several families share has one value)."""
    out: dict[str, Any] = {}
    for name, fam in FAMILIES.items():
        for k, v in fam.DEFAULTS.items():
            if out.setdefault(k, v) != v:
                raise ValueError(f"cpu family {name} wants {k}={v!r}, another family {out[k]!r}")
    return out


CONSERVATIVE: dict[str, Any] = _conservative()

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
TRANSFORMS += [t for fam in FAMILIES.values() for t in getattr(fam, "TRANSFORMS", [])]  # a family's own, after these
TRANSFORM_NAMES = [t for t, _ in TRANSFORMS]


def risky_failed(context: list[Any], family: str) -> bool:
    """Did a retrieved trace or experience of this family fail with a risky knob value?"""
    return failed_with(context, family, RISKY)


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


CPU = Space(FAMILY_KNOBS, TRANSFORMS, "row")
knob_space = CPU.knob_space
apply_transform = CPU.apply_transform
transform_scores = CPU.transform_scores
order_transforms = CPU.order_transforms
pick_refinement = CPU.pick_refinement
