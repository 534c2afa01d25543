"""Schedules for Ascend C candidates (the ``ascend-sim`` / ``ascend`` backends).

Same shape as the cpu back end's (:mod:`..cpu.schedules`; the search itself is :mod:`..front.search`): a schedule
is a flat JSON-able dict with ``family`` (a row of the family table, :mod:`.families`: ``ascend_elementwise``,
``ascend_row``, ``ascend_colreduce``, ``ascend_cube`` or ``ascend_conv``), ``families``, ``transform`` (``draft``,
``explore``, ``memory`` or the transform applied to the start point) and the knob values. Each family declares its
knobs, their conservative values, its own transforms and its priors; this module gathers them.

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
                  stays in UB for all phases (one pass over GM; only when a row fits);
* ``base_m``, ``base_n``, ``base_k`` (``ascend_cube``: matmul on the cube unit; ``ascend_conv``'s implicit GEMM)
  the L0C tile and the K step;
  with ``buffer_num`` the L1/L0 buffering (schedules whose buffers overflow L1/L0 have no geometry);
* ``co_tile``, ``w_mode``, ``lowering`` (``ascend_conv``): output channels per pass, weights from GM or UB, the
  implicit GEMM on the cube or the direct convolution on the vector cores;
* ``row_split``   (``ascend_cube`` with a row program after the matmul) ``all``: C whole in the workspace,
                  SyncAll, then every vector core takes a share of the rows; ``block``: per AI core, row block
                  by row block through a workspace slot and cross-core flags;
* ``split_k``     (``ascend_cube`` without batch or row program) K in 1, 2 or 4 ranges; ``split_sum`` ``auto``:
                  float32 without ReLU or vector epilogue adds each range's partial C into the zero-filled
                  output with SetAtomicAdd on the Fixpipe, anything else (float16, ReLU, an epilogue) writes
                  float partials to a workspace that the vector cores sum after SyncAll (a MIX kernel);
                  ``workspace``: that MIX kernel for float32 too (cube/splitk.py);
* ``a_resident``  (``ascend_cube``) a row block of A (base_m x K) loaded into L1 once and reused for every N tile
                  of the row block (tiles in contiguous row-major ranges per core); None when it overflows L1.
"""
from __future__ import annotations

import random
from typing import Any

from evokernel.generators.template.ascend.families import FAMILIES
from evokernel.generators.template.front import search

FAMILY_KNOBS: dict[str, dict[str, list[Any]]] = {name: fam.KNOBS for name, fam in FAMILIES.items()}


def _conservative() -> dict[str, Any]:
    """The draft: single buffer, a moderate tile, every core, the simplest instruction forms, multi-pass rows, the
    smallest cube tiles, the conv's cube lowering -- each family's conservative values in one dict (a knob several
    families share has one value)."""
    out: dict[str, Any] = {}
    for name, fam in FAMILIES.items():
        for k, v in fam.DEFAULTS.items():
            if out.setdefault(k, v) != v:
                raise ValueError(f"Ascend C family {name} wants {k}={v!r}, another family {out[k]!r}")
    return out


CONSERVATIVE: dict[str, Any] = _conservative()

# the vector cores' transforms, shared by the families whose knobs they name (their order is the base order of
# the refinement search); each family's own follow, in table order
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
TRANSFORMS += [t for fam in FAMILIES.values() for t in fam.TRANSFORMS]
TRANSFORM_NAMES = [t for t, _ in TRANSFORMS]
# the search over these knobs is the cpu generator's, on this target's knobs and transforms
ASCEND = search.Space(FAMILY_KNOBS, TRANSFORMS, "ascend_row")
knob_space = ASCEND.knob_space
apply_transform = ASCEND.apply_transform
transform_scores = ASCEND.transform_scores
order_transforms = ASCEND.order_transforms
pick_refinement = ASCEND.pick_refinement


def make_schedule(family: str, knobs: dict[str, Any], transform: str) -> dict[str, Any]:
    """A clean schedule of ``family``: every knob of the family, unknown or invalid values replaced
    by the conservative ones."""
    space = knob_space([family])
    clean = {k: knobs.get(k, CONSERVATIVE[k]) for k in sorted(space)}
    for k, v in list(clean.items()):
        if v not in space[k]:
            clean[k] = CONSERVATIVE[k]
    return {"family": family, "families": [family], "transform": transform, **clean}


# ----------------------------------------------------------------------------------------- memory

def memory_draft_knobs(context: list[Any], family: str) -> tuple[dict[str, Any] | None, str]:
    """Knobs of the best feasible retrieved schedule of ``family``, only those of the family's knob space."""
    knobs, source = search.memory_draft_knobs(context, family)
    if knobs is None:
        return None, ""
    return {k: v for k, v in knobs.items() if k in knob_space([family])}, source


def prior_scores(op: Any) -> dict[str, float]:
    """Small op-aware priors for the refinement order (memory evidence, a log speedup, outweighs them): double
    buffering overlaps copies with compute, then the operator's family's own (``priors(op)``: resident rows, the
    repeat forms, the cube's tiles, split-K and resident A, the conv's channels per pass ...)."""
    p: dict[str, float] = {"double_buffer": 0.02}
    p.update(FAMILIES[op.family].priors(op))
    return p


def draft_knobs(op: Any) -> dict[str, Any]:
    """Knob values a family chooses for the draft from the operator's shapes (its ``draft_knobs(op)``, e.g. the cube's
    base block from the modelled pipe balance); ``{}`` when the family has none."""
    fn = getattr(FAMILIES[op.family], "draft_knobs", None)
    return dict(fn(op)) if fn is not None else {}


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
    knobs.update(getattr(FAMILIES[family], "EXPLORE_FIXED", {}))  # e.g. a conv draft's fast lowering
    return knobs
