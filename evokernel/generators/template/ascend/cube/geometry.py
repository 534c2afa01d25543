"""The cube family's host tiling: the GEMM's (:mod:`..gemm.geometry`) with what the family's knobs add -- K ranges of
split-K (more tiles), A resident in L1 (refused when it does not fit), and after a matmul with a row program a
block's work as a row block (the vector cores' row program sized for half of one); None: no tiling exists.
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.ascend.cube import resident, rows, splitk
from evokernel.generators.template.ascend.gemm import geometry as gemm_geometry
from evokernel.generators.template.ascend.gemm.op import CUBE_CORES, CubeOp


def geometry(op: CubeOp, knobs: dict[str, Any], cores: int = CUBE_CORES) -> dict[str, int] | None:
    """The host tiling for these shapes, or None when the buffers do not fit the cube core's memories."""
    split = int(knobs.get("split_k", 1))
    ranges = 1
    if split > 1:
        if gemm_geometry.geometry(op, knobs, cores) is None or splitk.refusal(op, knobs) is not None:
            return None
        ranges = splitk.k_chunk(op.K, int(knobs["base_k"]), split)[1]
    geo = gemm_geometry.geometry(op, knobs, cores, ranges)
    if geo is None:
        return None
    if knobs.get("a_resident"):  # A's row block in L1 for all its N tiles (resident.py)
        if resident.refusal(op, knobs) is not None:
            return None
    if op.row_op is not None:  # a block's work is a row block (all N): the vector cores' row program needs it
        rg = rows.row_geometry(op.row_op, knobs, int(knobs["base_m"]))
        if rg is None or not rows.split_ok(op.row_op, knobs):
            return None
        if knobs.get("row_split", "block") == "block":
            geo.update(blockDim=min(geo["tilesM"], cores))
        geo.update(rowSplit=str(knobs.get("row_split", "block")), rowTileRows=int(rg[3]["tile_rows"]), rowChunk=int(rg[3]["chunk"]))
    return geo
