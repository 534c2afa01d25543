"""The ``ascend_row`` family: a ``row`` stage over the frame ``(rows, N)`` with per-row or per-column broadcasts and
last-dim reductions -- sum/mean/max/min, softmax and log_softmax, layer/RMS/L2 norms, elementwise prologues and
epilogues, a whole-tensor sum or mean as the output (one atomic add per block). Rows are split over the blocks; a
tile is ``kk`` whole rows (or, for rows longer than a tile, one row in equal chunks). ``row_mode=stream`` evaluates
each reduction in its own pass over GM and a final pass writes the output; ``resident`` reads a tile of rows once
and runs every phase in UB. ``vec_form=count`` uses count-form instructions per row (row scalars read back with a
V->S sync); ``repeat`` uses mask/repeat forms over all rows of the tile (WholeReduce, a 64-lane fold,
Brcb-broadcast binary ops). The kernel and its host are the vector cores' row program (:mod:`.row_kernel`,
:mod:`.row_host`), which the cube family also runs after a matmul.

This family's entry also takes flat chains: the classification (:mod:`.rowop`) names ``ascend_elementwise`` for
those. Knobs: tile, buffer_num, blocks, vec_form, row_mode.
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.ascend import rowop, vector_project
from evokernel.generators.template.ascend.row_compute import Consts
from evokernel.generators.template.ascend.row_host import geometry, host_row
from evokernel.generators.template.ascend.row_kernel import RowKernel
from evokernel.generators.template.ascend.rowop import AscendOp
from evokernel.generators.template.front.lower import Plan

NAME = "ascend_row"
STAGE = "row"  # the plan stage this family drafts (one stage)
SEVERAL_STAGES = False
KNOBS: dict[str, list[Any]] = {"tile": [1024, 2048, 4096, 8192, 16384], "buffer_num": [1, 2],
                               "blocks": ["all", "half", "tile"], "vec_form": ["count", "repeat"],
                               "row_mode": ["stream", "resident"]}
DEFAULTS: dict[str, Any] = {"tile": 4096, "buffer_num": 1, "blocks": "all", "vec_form": "count", "row_mode": "stream"}
TRANSFORMS: list[tuple[str, dict[str, Any]]] = []  # the vector transforms (ascend.schedules) cover its knobs
FIELDS = [("rows", ""), ("cols", "the last dimension"), ("rowsPerBlock", ""),
          ("bigBlocks", "the first bigBlocks blocks take one row more"), ("tileRows", "rows per tile"),
          ("chunk", "columns per tile (cols unless a row is longer than a tile)"),
          ("kPad", "tileRows rounded up to 8"), ("cPad", "chunk rounded up to 8")]


def prepare(plan: Plan, task_name: str, task_source: str = "") -> AscendOp:
    """The row stage classified (:func:`~.rowop.prepare`): an ``ascend_row`` operator, or an ``ascend_elementwise``
    one for a flat chain."""
    return rowop.prepare(plan, task_name, task_source)


def priors(op: AscendOp) -> dict[str, float]:
    """Keeping rows resident saves a GM pass per reduction; the repeat forms pay off for short rows (one
    instruction covers many rows) but cost one instruction per 64 columns on long ones."""
    p: dict[str, float] = {}
    if op.reduces:
        p["resident_rows"] = 0.03
    if op.N <= 512:
        p["repeat_form"] = 0.025
    elif op.N > 1024:
        p["repeat_form"] = -0.03
    return p


def render_project(op: AscendOp, knobs: dict[str, Any]) -> tuple[dict[str, str], Consts, dict[str, int] | None]:
    return vector_project.render_project(op, knobs, RowKernel(op, knobs), FIELDS, geometry, host_row)
