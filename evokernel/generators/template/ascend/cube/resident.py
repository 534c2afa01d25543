"""L1-resident A for the cube template (the ``a_resident`` knob).

Without it, every (output tile, K step) copies its ``base_m x base_k`` piece of A from GM into L1: a row block of
A is read once per N tile, in ``K / base_k`` short copies. With it, a core copies the row block's whole
``base_m x K`` (ND -> NZ, one ``DataCopy`` with ``Nd2NzParams``) into L1 once and loads each K step's fractals
into L0A from there (the step's column blocks start ``k0 / C0`` blocks in); only B is copied per step. The
buffer is the A1 queue's one block; it is freed (and the queue's MTE1 -> MTE2 ordering waited for) when the
core moves to the next row block, and at the end.

Tiles are ordered row-block-major per core: a core takes a contiguous range of the row-major tile index
(``tilesM x tilesN``), so consecutive tiles share the row block (and the vector cores of a MIX epilogue walk
the same range). With a row program after the matmul (``row_split`` = ``block``) a core's unit is already a
whole row block (every N tile of it), so the order stays.

The geometry is None when A's row block (``base_m`` rounded to 16 rows x K rounded to a 32-byte column block),
B's buffers and the bias do not fit L1's 512 KiB (no partial-K residency is written). Refused by name
(``refusal``): a batched matmul and split-K.
"""
from __future__ import annotations

import re
from typing import Any

from evokernel.generators.template.ascend.cube import mix
from evokernel.generators.template.ascend.cube import rows as ROWS
from evokernel.generators.template.front.graph import AnalysisError

L1_BYTES = 512 * 1024


def a_bytes(op: Any, base_m: int) -> int:
    c0 = 32 // op.esize
    return -(-base_m // 16) * 16 * (-(-op.K // c0) * c0) * op.esize


def refusal(op: Any, knobs: dict[str, Any]) -> str | None:
    """Why A cannot be kept in L1 for this schedule (None: it can)."""
    if not knobs.get("a_resident"):
        return None
    if op.batch != 1:
        return "L1-resident A of a batched matmul is not templated"
    if int(knobs.get("split_k", 1)) > 1:
        return "L1-resident A with split-K is not templated (each K range would hold its own part of A)"
    bm, bn, bk, nb = (int(knobs[k]) for k in ("base_m", "base_n", "base_k", "buffer_num"))
    need = a_bytes(op, bm) + bk * bn * op.esize * nb + (bn * op.esize if op.bias else 0)
    if need > L1_BYTES:
        return (f"L1-resident A does not fit L1: {bm} x {op.K} of A ({a_bytes(op, bm)} bytes) and B's buffers need "
                f"{need} bytes of {L1_BYTES}")
    return None


def _sub(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


def resident_kernel(op: Any, text: str, T: str) -> str:
    """The cube core's class (``ascend_cube_kernel.kernel``'s text) with A's row block resident in L1."""
    text = _sub(text, f"        pipe.InitBuffer(inQueueA1, BUFFER_NUM, baseM * baseK * sizeof({T}));\n",
                f"        // A's row block, all of K, NZ (row count rounded to 16, K to whole column blocks)\n"
                f"        pipe.InitBuffer(inQueueA1, 1, CeilDiv(baseM, 16) * 16 * CeilDiv(K, C0) * C0 * sizeof({T}));\n")
    text = _sub(text, "    TQue<TPosition::A1, BUFFER_NUM> inQueueA1;\n", "    TQue<TPosition::A1, 1> inQueueA1;\n")
    # CopyIn: B only
    text = _sub(text, f"        LocalTensor<{T}> a1Local = inQueueA1.AllocTensor<{T}>();\n        LocalTensor<{T}> b1Local",
                f"        LocalTensor<{T}> b1Local")
    i = text.index("        // A tile (m x k) -> NZ")
    j = text.index("        DataCopy(a1Local, aGm[m0 * K + k0], aParams);\n")
    text = text[:i] + text[j + len("        DataCopy(a1Local, aGm[m0 * K + k0], aParams);\n"):]
    text = _sub(text, "        inQueueA1.EnQue(a1Local);\n        inQueueB1.EnQue(b1Local);\n", "        inQueueB1.EnQue(b1Local);\n")
    # SplitA: from the resident block, this K step's column blocks
    text = _sub(text, "    __aicore__ inline void SplitA(uint32_t m, uint32_t k)\n",
                "    __aicore__ inline void SplitA(uint32_t m, uint32_t k, uint32_t k0)\n")
    text = _sub(text, f"        LocalTensor<{T}> a1Local = inQueueA1.DeQue<{T}>();\n",
                f"        LocalTensor<{T}> a1Local = aRes[(k0 / C0) * CeilDiv(m, 16) * 16 * C0];  // step k0 of the block\n")
    text = _sub(text, "        inQueueA2.EnQue<{0}>(a2Local);\n        inQueueA1.FreeTensor(a1Local);\n".format(T),
                "        inQueueA2.EnQue<{0}>(a2Local);\n".format(T))
    text, n = re.subn(r"SplitA\(m, k\);\n", "SplitA(m, k, k0);\n", text)
    assert n == 1
    # Process: load A when the row block changes; free it at the end
    text, n = re.subn(r"( +)uint32_t n = Min\(baseN, N - n0\);\n",
                      lambda mt: (mt.group(0) + f"{mt.group(1)}if (m0 != aRow) {{\n"
                                  f"{mt.group(1)}    LoadA(m0, m);  // a new row block: all of its K into L1, once\n"
                                  f"{mt.group(1)}}}\n"), text, count=1)
    assert n == 1
    text = _sub(text, "    __aicore__ inline void Process()\n    {\n",
                "    __aicore__ inline void Process()\n    {\n        ProcessTiles();\n"
                "        if (aRow != NO_ROW) {\n            inQueueA1.FreeTensor(aRes);\n        }\n    }\n"
                "    __aicore__ inline void ProcessTiles()\n    {\n")
    load = f"""    __aicore__ inline void LoadA(uint32_t m0, uint32_t m)
    {{
        if (aRow != NO_ROW) {{
            inQueueA1.FreeTensor(aRes);  // the previous row block (its last Mmad's loads are ordered first)
        }}
        LocalTensor<{T}> a1Local = inQueueA1.AllocTensor<{T}>();
        Nd2NzParams aParams;  // m x K -> NZ: column blocks of C0 along K, each m rounded up to 16 rows
        aParams.ndNum = 1;
        aParams.nValue = m;
        aParams.dValue = K;
        aParams.srcNdMatrixStride = 0;
        aParams.srcDValue = K;
        aParams.dstNzC0Stride = CeilDiv(m, 16) * 16;
        aParams.dstNzNStride = 1;
        aParams.dstNzMatrixStride = 0;
        DataCopy(a1Local, aGm[m0 * K], aParams);
        inQueueA1.EnQue(a1Local);
        aRes = inQueueA1.DeQue<{T}>();
        aRow = m0;
    }}
"""
    text = _sub(text, "    __aicore__ inline void CopyIn(", load + "    __aicore__ inline void CopyIn(")
    return _sub(text, "    uint32_t M = 0, N = 0, K = 0, baseM = 0, baseN = 0, baseK = 0, tilesM = 0, tilesN = 0;\n",
                "    static constexpr uint32_t NO_ROW = 0xFFFFFFFFu;\n    uint32_t aRow = NO_ROW;  // the row block in L1\n"
                f"    LocalTensor<{T}> aRes;\n"
                "    uint32_t M = 0, N = 0, K = 0, baseM = 0, baseN = 0, baseK = 0, tilesM = 0, tilesN = 0;\n")


_CUBE_LOOP = "        for (uint32_t tile = GetBlockIdx(); tile < tilesM * tilesN; tile += GetBlockNum()) {\n"
_VEC_LOOP = "        for (uint32_t tile = core; tile < tilesM * tilesN; tile += GetBlockNum()) {\n"


def _range_loop(idx: str) -> str:
    return (f"        uint32_t total = tilesM * tilesN, share = total / GetBlockNum(), extra = total % GetBlockNum();\n"
            f"        uint32_t firstTile = {idx} * share + ({idx} < extra ? {idx} : extra);\n"
            f"        uint32_t lastTile = firstTile + share + ({idx} < extra ? 1 : 0);\n"
            "        for (uint32_t tile = firstTile; tile < lastTile; ++tile) {  // row-major: a core's tiles share "
            "row blocks\n")


def tile_order(text: str) -> str:
    """Each core's tiles as one contiguous range of the row-major tile index (the cube core's loop, and the
    vector cores' loop of a per-tile MIX epilogue, which must walk the same tiles)."""
    assert text.count(_CUBE_LOOP) <= 1 and text.count(_VEC_LOOP) <= 1
    return text.replace(_CUBE_LOOP, _range_loop("GetBlockIdx()")).replace(_VEC_LOOP, _range_loop("core"))


def resident(op: Any, knobs: dict[str, Any], text: str, T: str, tiling_cls: str) -> str:
    """The whole kernel text of a resident-A schedule: the cube core's class changed, then the MIX hand-over the
    operator needs (``ascend_cube_kernel.mixed`` or the row program), then the tile order."""
    why = refusal(op, knobs)
    if why is not None:
        raise AnalysisError(why)
    text = resident_kernel(op, text, T)
    if op.row_op is not None:
        text = ROWS.mix_rows(op, knobs, text, T, tiling_cls)
    elif op.mix:
        text = mix.mixed(op, text, T, tiling_cls)
    return tile_order(text)
