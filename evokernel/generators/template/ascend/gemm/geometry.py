"""The host tiling of a GEMM on the cube unit (mirrored by the TilingFunc the families write): ``base_m x base_n``
tiles of C over the cube cores, K in ``base_k`` steps, ``buffer_num`` L1/L0 buffers; None when the buffers do not
fit the cube core's memories (L1 512 KiB, L0A/L0B 64 KiB, L0C 128 KiB, the bias table 1 KiB).
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.ascend.gemm.op import CUBE_CORES, L0A_BYTES, L0B_BYTES, L0C_BYTES, L1_BYTES, CubeOp


def geometry(op: CubeOp, knobs: dict[str, Any], cores: int = CUBE_CORES, k_ranges: int = 1) -> dict[str, int] | None:
    """The tiling for these shapes (``k_ranges``: K cut into that many ranges, each a tile of its own), or None."""
    bm, bn, bk, nb = (int(knobs[k]) for k in ("base_m", "base_n", "base_k", "buffer_num"))
    es = op.esize
    a_tile, b_tile = bm * bk * es, bk * bn * es
    bias_l1 = bn * es if op.bias else 0
    if (a_tile * nb > L0A_BYTES or b_tile * nb > L0B_BYTES or bm * bn * 4 > L0C_BYTES
            or (a_tile + b_tile) * nb + bias_l1 > L1_BYTES or (op.bias and bn * 4 > 1024)):
        return None
    tiles_m, tiles_n = -(-op.M // bm), -(-op.N // bn)
    tiles = op.batch * tiles_m * tiles_n * k_ranges
    return {"baseM": bm, "baseN": bn, "baseK": bk, "tilesM": tiles_m, "tilesN": tiles_n,
            "blockDim": min(tiles, cores), "kSteps": -(-op.K // bk)}
