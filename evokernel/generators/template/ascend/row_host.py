"""The host side of the vector cores' row program: what its TilingFunc computes (``geometry``, mirrored by the
emitted C++: rows per block, tile rows, chunks of long rows, UB bytes) and the TilingFunc itself (``host_row``).
Used by the ``ascend_row`` family and by the cube family's row programs after a matmul.
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.ascend.project import TILING_FUNC_TAIL, tiling_func_head
from evokernel.generators.template.ascend.row_compute import Consts
from evokernel.generators.template.ascend.rowop import (
    BLOCK_MODES,
    CORES,
    MAX_REPEAT_CHUNK,
    MAX_TILE_ROWS,
    UB_BYTES,
    AscendOp,
    vector_cores,
)


def _ub_bytes(c: Consts, k: int, cpad: int) -> int:
    kpad = (k + c.align - 1) // c.align * c.align
    work = ((cpad + 63) // 64 + 7) // 8 * 8 if c.work else 0
    return (c.row_bytes * k * cpad + c.col_bytes * cpad + c.slot_bytes * kpad + c.bcast_bytes * 8 * kpad +
            c.fold_bytes * 64 * k + 4 * work + c.scalar_bytes)


def geometry(op: AscendOp, knobs: dict[str, Any], c: Consts, cores: int = CORES, ub: int = UB_BYTES
             ) -> dict[str, int] | None:
    """What the row program's TilingFunc (:func:`host_row`) computes for the task's shapes (None: it would fail)."""
    if c.vecin_buffers > 8:
        return None
    A = c.align
    tile = int(knobs.get("tile", 4096))
    mode, cores = vector_cores(knobs, cores)
    resident = knobs.get("row_mode", "stream") == "resident" and bool(op.reduces)
    repeat = knobs.get("vec_form", "count") == "repeat"
    max_chunk = MAX_REPEAT_CHUNK if repeat else 1 << 30
    N, rows = op.N, op.rows
    npad = (N + A - 1) // A * A
    block_dim = min(rows, cores)
    row_cap = rows if mode == 2 else -(-rows // block_dim)
    k = 0
    chunk = N
    if npad <= max_chunk and (npad <= tile or resident):
        r = max(1, tile // npad)
        r = min(r, MAX_TILE_ROWS, row_cap)
        while r > 1 and _ub_bytes(c, r, npad) > ub:
            r -= 1
        if _ub_bytes(c, r, npad) <= ub:
            k = r
    if k == 0:
        if resident:
            return None
        k = 1
        chunk = max(min(tile, max_chunk) // A * A, A)
        while chunk > A and _ub_bytes(c, 1, chunk) > ub:
            chunk -= A
        if _ub_bytes(c, 1, chunk) > ub:
            return None
        pieces = -(-N // chunk)  # equal chunks instead of a short last one
        chunk = (-(-N // pieces) + A - 1) // A * A
    if mode == 2:
        block_dim = min(cores, -(-rows // k))
    return {"block_dim": block_dim, "tile_rows": k, "chunk": chunk, "rows_per_block": rows // block_dim,
            "big_blocks": rows % block_dim, "ub_bytes": _ub_bytes(c, k, (chunk + A - 1) // A * A),
            "passes": (len(op.reduces) + (1 if op.out_kind == "J" else 0)) if not resident else 1}

# ----------------------------------------------------------------------------------------- host


def host_row(op: AscendOp, knobs: dict[str, Any], c: Consts, tiling_cls: str) -> str:
    """The row program's TilingFunc (mirrored by :func:`geometry`)."""
    fe = op.exts[op.frame_ext] if op.frame_ext >= 0 else None
    if fe is not None and tuple(op.graph.nodes[fe.root].shape) == tuple(op.frame):
        shape = ["    const gert::Shape& shape = context->GetInputShape(%d)->GetStorageShape();" % op.frame_ext,
                 "    uint32_t cols = static_cast<uint32_t>(shape.GetDim(shape.GetDimNum() - 1));",
                 "    uint32_t rows = cols == 0 ? 0 : static_cast<uint32_t>(shape.GetShapeSize() / cols);"]
    else:
        shape = [f"    uint32_t cols = {op.N};", f"    uint32_t rows = {op.rows};"]
    return "\n".join(_host_constants(op, knobs, c) + tiling_func_head(tiling_cls) + shape + [
        "    if (rows == 0 || cols == 0) return ge::GRAPH_FAILED;",
        "    uint32_t blockDim = rows < coreNum ? rows : coreNum;",
        "    uint32_t rowCap = BLOCK_MODE == 2 ? rows : (rows + blockDim - 1) / blockDim;",
        "    uint32_t nPad = (cols + ALIGN - 1) / ALIGN * ALIGN;",
        "    uint32_t k = 0, chunk = cols;",
        "    if (nPad <= MAX_CHUNK && (nPad <= TILE_ELEMS || RESIDENT)) {",
        "        // tiles of whole rows",
        "        uint32_t r = TILE_ELEMS / nPad > 0 ? TILE_ELEMS / nPad : 1;",
        "        if (r > MAX_TILE_ROWS) r = MAX_TILE_ROWS;",
        "        if (r > rowCap) r = rowCap;",
        "        while (r > 1 && UbBytes(r, nPad) > ub) --r;",
        "        if (UbBytes(r, nPad) <= ub) k = r;",
        "    }",
        "    if (k == 0) {",
        "        if (RESIDENT) return ge::GRAPH_FAILED;  // a row does not fit the UB",
        "        // one row at a time, in equal chunks",
        "        k = 1;",
        "        uint32_t target = TILE_ELEMS < MAX_CHUNK ? TILE_ELEMS : MAX_CHUNK;",
        "        chunk = target / ALIGN * ALIGN > ALIGN ? target / ALIGN * ALIGN : ALIGN;",
        "        while (chunk > ALIGN && UbBytes(1, chunk) > ub) chunk -= ALIGN;",
        "        if (UbBytes(1, chunk) > ub) return ge::GRAPH_FAILED;",
        "        uint32_t pieces = (cols + chunk - 1) / chunk;",
        "        chunk = ((cols + pieces - 1) / pieces + ALIGN - 1) / ALIGN * ALIGN;",
        "    }",
        "    if (BLOCK_MODE == 2) {",
        "        uint32_t tiles = (rows + k - 1) / k;",
        "        blockDim = tiles < coreNum ? tiles : coreNum;",
        "    }",
        "    context->SetBlockDim(blockDim);",
        "    tiling.set_rows(rows);",
        "    tiling.set_cols(cols);",
        "    tiling.set_rowsPerBlock(rows / blockDim);",
        "    tiling.set_bigBlocks(rows % blockDim);",
        "    tiling.set_tileRows(k);",
        "    tiling.set_chunk(chunk);",
        "    tiling.set_kPad((k + ALIGN - 1) / ALIGN * ALIGN);",
        "    tiling.set_cPad((chunk + ALIGN - 1) / ALIGN * ALIGN);"] + TILING_FUNC_TAIL)


def _host_constants(op: AscendOp, knobs: dict[str, Any], c: Consts) -> list[str]:
    """The TilingFunc's constants: the schedule's knobs and the UB bytes per kind of buffer, and ``UbBytes``."""
    resident = knobs.get("row_mode", "stream") == "resident" and bool(op.reduces)
    repeat = knobs.get("vec_form", "count") == "repeat"
    return [
        "namespace optiling {",
        f"constexpr uint32_t TILE_ELEMS = {int(knobs.get('tile', 4096))};",
        f"constexpr uint32_t BUFFER_NUM = {int(knobs.get('buffer_num', 1))};",
        f"constexpr uint32_t BLOCK_MODE = {BLOCK_MODES[knobs.get('blocks', 'all')]};  // 0 all cores, 1 half, "
        "2 at least one tile per block",
        f"constexpr bool RESIDENT = {'true' if resident else 'false'};  // whole rows stay in UB for every phase",
        f"constexpr uint32_t MAX_CHUNK = {MAX_REPEAT_CHUNK if repeat else 1 << 30};",
        "constexpr uint32_t MAX_TILE_ROWS = 255;",
        f"constexpr uint32_t ALIGN = {c.align};  // elements per 32-byte block",
        "// UB bytes per element of: a tile (rows x chunk), a chunk, a row slot, 8 slots, 64 per tile row; fixed",
        f"constexpr uint64_t ROW_BYTES = {c.row_bytes}, COL_BYTES = {c.col_bytes}, SLOT_BYTES = {c.slot_bytes};",
        f"constexpr uint64_t BCAST_BYTES = {c.bcast_bytes}, FOLD_BYTES = {c.fold_bytes}, "
        f"FIXED_BYTES = {c.scalar_bytes};",
        f"constexpr bool WORK = {'true' if c.work else 'false'};",
        "",
        "static uint64_t UbBytes(uint64_t k, uint64_t cPad)",
        "{",
        "    uint64_t kPad = (k + ALIGN - 1) / ALIGN * ALIGN;",
        "    uint64_t work = WORK ? ((cPad + 63) / 64 + 7) / 8 * 8 : 0;",
        "    return ROW_BYTES * k * cPad + COL_BYTES * cPad + SLOT_BYTES * kPad + BCAST_BYTES * 8 * kPad +",
        "           FOLD_BYTES * 64 * k + 4 * work + FIXED_BYTES;",
        "}",
        ""]
