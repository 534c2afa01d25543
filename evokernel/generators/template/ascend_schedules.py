"""Schedules for Ascend C candidates (the ``ascend-sim`` / ``ascend`` backends).

Same shape as :mod:`.schedules` for the cpu backend: a schedule is a flat JSON-able dict with
``family`` (``ascend_elementwise``, ``ascend_row``, ``ascend_colreduce``, ``ascend_cube`` or ``ascend_conv``), ``families``, ``transform`` (``draft``,
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
                  stays in UB for all phases (one pass over GM; only when a row fits);
* ``base_m``, ``base_n``, ``base_k`` (``ascend_cube``: matmul on the cube unit) the L0C tile and the K step;
  with ``buffer_num`` the L1/L0 buffering (schedules whose buffers overflow L1/L0 have no geometry);
* ``row_split``   (``ascend_cube`` with a row program after the matmul) ``all``: C whole in the workspace,
                  SyncAll, then every vector core takes a share of the rows; ``block``: per AI core, row block
                  by row block through a workspace slot and cross-core flags;
* ``split_k``     (``ascend_cube`` without batch or row program) K in 1, 2 or 4 ranges; ``split_sum`` ``auto``:
                  float32 without ReLU or vector epilogue adds each range's partial C into the zero-filled
                  output with SetAtomicAdd on the Fixpipe, anything else (float16, ReLU, an epilogue) writes
                  float partials to a workspace that the vector cores sum after SyncAll (a MIX kernel);
                  ``workspace``: that MIX kernel for float32 too (ascend_cube_splitk.py);
* ``a_resident``  (``ascend_cube``) a row block of A (base_m x K) loaded into L1 once and reused for every N tile
                  of the row block (tiles in contiguous row-major ranges per core); None when it overflows L1.
"""
from __future__ import annotations

import random
from typing import Any

from evokernel.generators.template import schedules as S

FAMILIES = ("ascend_elementwise", "ascend_row", "ascend_colreduce", "ascend_cube", "ascend_conv")

FAMILY_KNOBS: dict[str, dict[str, list[Any]]] = {
    "ascend_elementwise": {"tile": [1024, 2048, 4096, 8192, 16384], "buffer_num": [1, 2],
                           "blocks": ["all", "half", "tile"]},
    "ascend_row": {"tile": [1024, 2048, 4096, 8192, 16384], "buffer_num": [1, 2], "blocks": ["all", "half", "tile"],
                   "vec_form": ["count", "repeat"], "row_mode": ["stream", "resident"]},
    # reductions over middle dims: vec_form count = row-by-row adds, repeat = a pairwise tree over the tile
    "ascend_colreduce": {"tile": [1024, 2048, 4096, 8192, 16384], "buffer_num": [1, 2], "blocks": ["all", "half"],
                         "vec_form": ["count", "repeat"]},
    # matmul on the cube unit (ascend_cube.py): the L0C tile (base_m x base_n), the K step, L1/L0 buffering
    "ascend_cube": {"base_m": [64, 128, 256], "base_n": [64, 128, 256], "base_k": [32, 64, 128, 256],
                    "buffer_num": [1, 2], "row_split": ["all", "block"], "split_k": [1, 2, 4],
                    "split_sum": ["auto", "workspace"], "a_resident": [False, True]},
}
# convolution on the vector cores (ascend_conv.py): output channels per pass, the input-row queue's buffers, cores
FAMILY_KNOBS["ascend_conv"] = {"co_tile": [8, 16, 32, 64], "buffer_num": [1, 2], "blocks": ["all", "half"],
                               "w_mode": ["gm", "ub"],  # weights read from GM, or each pass's copied to UB
                               # cube: an implicit GEMM (ascend_conv_cube.py) where it applies (dense), with
                               # the cube's tile knobs; vector: the direct convolution
                               "lowering": ["cube", "vector"], "base_m": [64, 128, 256], "base_n": [64, 128, 256],
                               "base_k": [32, 64, 128, 256]}

# the draft: single buffer, a moderate tile, every core, the simplest instruction forms, multi-pass rows
CONSERVATIVE: dict[str, Any] = {"tile": 4096, "buffer_num": 1, "blocks": "all", "vec_form": "count",
                                "row_mode": "stream", "base_m": 64, "base_n": 64, "base_k": 32,
                                "row_split": "all", "split_k": 1, "split_sum": "auto", "a_resident": False}


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
    # cube (ascend_cube): longer K steps (fewer, longer copies and Mmads), larger L0C tiles (more reuse of
    # each loaded fractal), and back
    ("base_k_64", {"base_k": 64}),
    ("base_k_128", {"base_k": 128}),
    ("base_k_256", {"base_k": 256}),
    ("base_mn_128", {"base_m": 128, "base_n": 128}),
    ("base_m_256", {"base_m": 256}),
    ("base_n_256", {"base_n": 256}),
    ("base_mn_64", {"base_m": 64, "base_n": 64}),
    ("base_k_32", {"base_k": 32}),
    # cube + row program (ascend_cube_rows.py): row blocks handed over per AI core (cube and vector work
    # overlap; a core per row block) or the whole of C first, then every vector core (all cores for small M)
    ("rows_by_block", {"row_split": "block"}),
    ("rows_after_all", {"row_split": "all"}),
    # cube-only matmuls with few output tiles and a long K: K ranges on more cube cores, atomic adds into C
    ("split_k_2", {"split_k": 2}),
    ("split_k_4", {"split_k": 4}),
    ("split_k_1", {"split_k": 1}),
    # split-K's partial sums through the float workspace and the vector cores, and back to atomic adds
    ("split_sum_workspace", {"split_sum": "workspace"}),
    ("split_sum_auto", {"split_sum": "auto"}),
    # a row block of A kept in L1 for all its N tiles (one long copy instead of one per tile and K step)
    ("a_resident", {"a_resident": True}),
    ("a_per_tile", {"a_resident": False}),
]
# conv (ascend_conv): more output channels per pass reuse each loaded input row for more Axpys (more UB)
TRANSFORMS += [("co_tile_32", {"co_tile": 32}), ("co_tile_64", {"co_tile": 64}), ("co_tile_16", {"co_tile": 16}),
               ("co_tile_8", {"co_tile": 8}), ("weights_ub", {"w_mode": "ub"}), ("weights_gm", {"w_mode": "gm"}),
               ("lowering_vector", {"lowering": "vector"}), ("lowering_cube", {"lowering": "cube"})]
CONSERVATIVE.update(co_tile=16, w_mode="gm", lowering="cube")  # the cube lowering is the fast one where it applies
TRANSFORM_NAMES = [t for t, _ in TRANSFORMS]
# the search over these knobs is the cpu generator's, on this target's knobs and transforms
ASCEND = S.Space(FAMILY_KNOBS, TRANSFORMS, "ascend_row")
knob_space = ASCEND.knob_space
apply_transform = ASCEND.apply_transform
transform_scores = ASCEND.transform_scores
order_transforms = ASCEND.order_transforms
pick_refinement = ASCEND.pick_refinement
knobs_of = S.knobs_of
canonical = S.canonical


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
    """Knobs of the best feasible retrieved schedule of ``family`` (the cpu helper is family-generic)."""
    knobs, source = S.memory_draft_knobs(context, family)
    if knobs is None:
        return None, ""
    return {k: v for k, v in knobs.items() if k in knob_space([family])}, source


def prior_scores(family: str, n_cols: int, reductions: int, op: Any = None) -> dict[str, float]:
    """Small op-aware priors for the refinement order (memory evidence, a log speedup, outweighs them):
    keeping rows resident saves a GM pass per reduction, double buffering overlaps copies with compute,
    and the repeat forms pay off for short rows (one instruction covers many rows) but cost one
    instruction per 64 columns on long ones. For a matmul (``op``: its M, N, K), split-K when few output
    tiles leave cube cores idle over a long K, and A resident in L1 once the K steps are long."""
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
    if family == "ascend_conv":  # each loaded input row feeds co_tile Axpys: more channels per pass first
        p.update({"weights_ub": 0.04, "co_tile_32": 0.03, "co_tile_64": 0.02})  # GM scalar reads cost most
        # cube lowering: the GEMM's K steps and tiles as for a matmul (the vector knobs are cosmetic there)
        p.update({"base_k_128": 0.035, "base_mn_128": 0.025, "base_k_64": 0.015, "double_buffer": 0.03})
    if family == "ascend_cube":  # short K steps and small tiles are copy-bound: grow them first
        p.update({"base_k_128": 0.03, "base_mn_128": 0.025, "base_k_64": 0.015})
        # one long copy of A per row block (npu suites, modelled: 2-15% faster after base_k_128 + double_buffer,
        # slower from the single-buffered draft; evals/cube_knobs.py)
        p["a_resident"] = 0.018
        if op is not None and getattr(op, "batch", 1) == 1 and getattr(op, "K", 0) >= 1024 and \
                -(-op.M // 64) * -(-op.N // 64) < 20:  # fewer draft tiles than the 20 cube cores, a long K
            p["split_k_2"] = 0.028
    return p


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
    if family == "ascend_conv":
        knobs["lowering"] = "cube"  # drafts take the fast lowering; the vector one is a refinement
    return knobs
