"""The ``ascend_elementwise`` family: a chain of unary/binary ops with scalar constants (only full tensors and
scalars, no reduction), the tensor as one flat array split over the blocks in 32-byte units, tiles of ``tile``
elements, an unaligned tail moved with DataCopyPad (the shape of the canonical add_custom example). Its kernel
(``FlatKernel``) is the row program (:mod:`.row_kernel`) in its flat form; the row-stage classification
(:mod:`.rowop`, reached through the ``ascend_row`` family's entry) picks this family for a flat chain.
Knobs: tile, buffer_num, blocks.
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.ascend import vector_project
from evokernel.generators.template.ascend.project import TILING_FUNC_TAIL, tiling_func_head
from evokernel.generators.template.ascend.row_compute import Consts
from evokernel.generators.template.ascend.row_kernel import RowKernel
from evokernel.generators.template.ascend.rowop import BLOCK_MODES, CORES, UB_BYTES, AscendOp, vector_cores
from evokernel.generators.template.ascend.vecops import _indent

NAME = "ascend_elementwise"
STAGE = None  # no plan stage of its own: a flat ``row`` stage (the ascend_row entry classifies it)
SEVERAL_STAGES = False
KNOBS: dict[str, list[Any]] = {"tile": [1024, 2048, 4096, 8192, 16384], "buffer_num": [1, 2], "blocks": ["all", "half", "tile"]}
DEFAULTS: dict[str, Any] = {"tile": 4096, "buffer_num": 1, "blocks": "all"}
TRANSFORMS: list[tuple[str, dict[str, Any]]] = []  # the vector transforms (ascend.schedules) cover its knobs
FIELDS = [("totalLength", ""), ("unitLength", "elements per 32-byte unit"), ("unitsPerBlock", ""),
          ("bigBlocks", "the first bigBlocks blocks take one unit more"), ("tileLength", "elements per tile")]


def priors(op: AscendOp) -> dict[str, float]:
    return {}


def render_project(op: AscendOp, knobs: dict[str, Any]) -> tuple[dict[str, str], Consts, dict[str, int] | None]:
    return vector_project.render_project(op, knobs, FlatKernel(op, knobs), FIELDS, geometry, host)


def geometry(op: AscendOp, knobs: dict[str, Any], c: Consts, cores: int = CORES, ub: int = UB_BYTES
             ) -> dict[str, int] | None:
    """What the host TilingFunc (:func:`host`) computes for the task's shapes (None: it would fail)."""
    if c.vecin_buffers > 8:
        return None
    A = c.align
    tile = int(knobs.get("tile", 4096))
    mode, cores = vector_cores(knobs, cores)
    total = op.rows * op.N
    units = (total + A - 1) // A
    tile_max = (ub - c.scalar_bytes) // c.row_bytes // A * A
    tile_len = min(tile, tile_max)
    if tile_len < A:
        return None
    block_dim = min(units, cores)
    if mode == 2:
        block_dim = min(cores, -(-units // (tile_len // A)))
    return {"block_dim": block_dim, "tile_length": tile_len, "units_per_block": units // block_dim,
            "big_blocks": units % block_dim, "ub_bytes": c.row_bytes * tile_len + c.scalar_bytes}


class FlatKernel(RowKernel):
    """The ``ascend_elementwise`` family: the tensor as one flat array split over the blocks."""

    def __init__(self, op: AscendOp, knobs: dict[str, Any]):
        super().__init__(op, knobs)
        self.flat_only = True

    def render(self, cls: str, tiling_cls: str) -> tuple[str, Consts]:
        op, T = self.op, self.T
        J_ext = [e for e in op.exts if e.role == "J"]
        S_ext = [e for e in op.exts if e.role == "S"]
        compute = self._compute(J_ext)
        copyin, copyout = self._copies(J_ext)
        args = ", ".join(f"GM_ADDR {e.name}" for e in op.exts) + ", GM_ADDR out"
        init, members, fbufs = self._init_members(J_ext, S_ext)
        process = ["for (uint32_t offset = 0; offset < length; offset += tileLength) {",
                   "    uint32_t len = length - offset < tileLength ? length - offset : tileLength;",
                   "    CopyIn(offset, len);",
                   "    Compute(len);",
                   "    CopyOut(offset, len);",
                   "}"]
        gms = ", ".join(f"gm_{e.name}" for e in op.exts) + ", gm_out"
        scal = "".join(f", s_{e.name} = 0.0f" for e in S_ext)
        lines = [f"class {cls} {{",
                 "public:",
                 f"    __aicore__ inline {cls}() {{}}",
                 f"    __aicore__ inline void Init({args}, const {tiling_cls}& t)",
                 "    {"] + _indent(init, 8) + [
                 "    }",
                 "    __aicore__ inline void Process()",
                 "    {"] + _indent(process, 8) + [
                 "    }",
                 "",
                 "private:",
                 "    __aicore__ inline void CopyIn(uint32_t offset, uint32_t len)",
                 "    {"] + _indent(copyin, 8) + [
                 "    }",
                 "    __aicore__ inline void Compute(uint32_t len)",
                 "    {"] + _indent(compute, 8) + [
                 "    }",
                 "    __aicore__ inline void CopyOut(uint32_t offset, uint32_t len)",
                 "    {"] + _indent(copyout, 8) + [
                 "    }",
                 "",
                 "    TPipe pipe;"] + _indent(members, 4) + [
                 f"    GlobalTensor<{T}> {gms};",
                 "    uint32_t length = 0, tileLength = 0, unitLength = 0;",
                 f"    float unused = 0.0f{scal};",
                 "};"]
        c = Consts(align=self.A)
        c.row_bytes = self.bn * self.io * (len(J_ext) + 1) + 4 * len(fbufs)
        c.scalar_bytes = 32 if S_ext else 0
        c.vecin_buffers = self.bn * len(J_ext) + (1 if S_ext else 0)
        return "\n".join(lines), c

    def _compute(self, J_ext: list[Any]) -> list[str]:
        """``Compute(len)``: the chain over one flat tile."""
        op, T = self.op, self.T
        compute = ["uint32_t kk = 1, cc = len, ccp = len, nflat = len;", "(void)kk; (void)cc; (void)ccp;"]
        compute += [f"LocalTensor<{T}> {self.io_var(e)} = q_{e.name}.DeQue<{T}>();" for e in J_ext]
        compute += self.casts_in(J_ext)
        compute.append(f"LocalTensor<{T}> o = q_out.AllocTensor<{T}>();")
        compute += self.block(list(self.nodes), op.out, True)
        compute += self.cast_out()
        compute.append("q_out.EnQue(o);")
        compute += [f"q_{e.name}.FreeTensor({self.io_var(e)});" for e in J_ext]
        return compute

    def _copies(self, J_ext: list[Any]) -> tuple[list[str], list[str]]:
        """``CopyIn`` and ``CopyOut`` of a flat tile (the unaligned tail with DataCopyPad)."""
        T = self.T
        copyin = [f"DataCopyPadExtParams<{T}> noPad(false, 0, 0, 0);",
                  f"DataCopyExtParams p(1, static_cast<uint32_t>(len * sizeof({T})), 0, 0, 0);",
                  "bool aligned = (len % unitLength == 0);"]
        for e in J_ext:
            v = self.io_var(e)
            copyin += [f"LocalTensor<{T}> {v} = q_{e.name}.AllocTensor<{T}>();",
                       "if (aligned) {",
                       f"    DataCopy({v}, gm_{e.name}[offset], len);",
                       "} else {  // the unaligned tail of the tensor",
                       f"    DataCopyPad({v}, gm_{e.name}[offset], p, noPad);",
                       "}",
                       f"q_{e.name}.EnQue({v});"]
        copyout = [f"LocalTensor<{T}> o = q_out.DeQue<{T}>();",
                   "if (len % unitLength == 0) {",
                   "    DataCopy(gm_out[offset], o, len);",
                   "} else {",
                   f"    DataCopyPad(gm_out[offset], o, DataCopyExtParams(1, static_cast<uint32_t>(len * sizeof({T})), "
                   "0, 0, 0));",
                   "}",
                   "q_out.FreeTensor(o);"]
        return copyin, copyout

    def _init_members(self, J_ext: list[Any], S_ext: list[Any]) -> tuple[list[str], list[str], list[str]]:
        T = self.T
        init = ["uint32_t blockIdx = GetBlockIdx();",
                "uint32_t myUnits = t.unitsPerBlock + (blockIdx < t.bigBlocks ? 1 : 0);",
                "uint64_t start = (static_cast<uint64_t>(t.unitsPerBlock) * blockIdx + "
                "(blockIdx < t.bigBlocks ? blockIdx : t.bigBlocks)) * t.unitLength;",
                "uint64_t end = start + static_cast<uint64_t>(myUnits) * t.unitLength;",
                "if (end > t.totalLength) end = t.totalLength;  // the last block ends on the real length",
                "length = end > start ? static_cast<uint32_t>(end - start) : 0;",
                "tileLength = t.tileLength;",
                "unitLength = t.unitLength;"]
        for e in J_ext:
            init.append(f"gm_{e.name}.SetGlobalBuffer((__gm__ {T}*){e.name} + start, length);")
        for e in S_ext:
            init.append(f"gm_{e.name}.SetGlobalBuffer((__gm__ {T}*){e.name}, 1);")
        init.append(f"gm_out.SetGlobalBuffer((__gm__ {T}*)out + start, length);")
        for e in J_ext:
            init.append(f"pipe.InitBuffer(q_{e.name}, BUFFER_NUM, tileLength * sizeof({T}));")
        init.append(f"pipe.InitBuffer(q_out, BUFFER_NUM, tileLength * sizeof({T}));")
        members = [f"TQue<QuePosition::VECIN, BUFFER_NUM> {', '.join('q_' + e.name for e in J_ext)};",
                   "TQue<QuePosition::VECOUT, BUFFER_NUM> q_out;"]
        if S_ext:
            members.append("TQue<QuePosition::VECIN, 1> q_scalar;")
        fbufs = [f"t{j}" for j in range(self.jpool.size)]
        if self.half:
            fbufs += [f"f_{e.name}" for e in J_ext] + ["fo"]
        for b in fbufs:
            init += [f"pipe.InitBuffer(b_{b}, tileLength * sizeof(float));", f"{b} = b_{b}.Get<float>();"]
        init += self._scalar_loads(S_ext)
        if fbufs:
            members.append(f"TBuf<TPosition::VECCALC> {', '.join('b_' + b for b in fbufs)};")
            members.append(f"LocalTensor<float> {', '.join(fbufs)};")
        return init, members, fbufs


def host(op: AscendOp, knobs: dict[str, Any], c: Consts, tiling_cls: str) -> str:
    return "\n".join([
        "namespace optiling {",
        f"constexpr uint32_t TILE_ELEMS = {int(knobs.get('tile', 4096))};",
        f"constexpr uint32_t BUFFER_NUM = {int(knobs.get('buffer_num', 1))};",
        f"constexpr uint32_t BLOCK_MODE = {BLOCK_MODES[knobs.get('blocks', 'all')]};  // 0 all cores, 1 half, "
        "2 at least one tile per block",
        f"constexpr uint64_t TILE_BYTES = {c.row_bytes};  // UB bytes per tile element: queues x BUFFER_NUM + "
        "float temporaries",
        f"constexpr uint64_t FIXED_BYTES = {c.scalar_bytes};",
        ""] + tiling_func_head(tiling_cls) + [
        f"    uint32_t totalLength = static_cast<uint32_t>(context->GetInputShape({op.frame_ext})->GetStorageShape()"
        ".GetShapeSize());",
        "    if (totalLength == 0) return ge::GRAPH_FAILED;",
        f"    uint32_t unit = {c.align};  // elements per 32-byte block",
        "    uint32_t units = (totalLength + unit - 1) / unit;",
        "    uint64_t tileMax = (ub - FIXED_BYTES) / TILE_BYTES / unit * unit;",
        "    uint32_t tileLength = tileMax < TILE_ELEMS ? static_cast<uint32_t>(tileMax) : TILE_ELEMS;",
        "    if (tileLength < unit) return ge::GRAPH_FAILED;",
        "    uint32_t blockDim = units < coreNum ? units : coreNum;",
        "    if (BLOCK_MODE == 2) {",
        "        uint32_t tiles = (units + tileLength / unit - 1) / (tileLength / unit);",
        "        blockDim = tiles < coreNum ? tiles : coreNum;",
        "    }",
        "    context->SetBlockDim(blockDim);",
        "    tiling.set_totalLength(totalLength);",
        "    tiling.set_unitLength(unit);",
        "    tiling.set_unitsPerBlock(units / blockDim);",
        "    tiling.set_bigBlocks(units % blockDim);",
        "    tiling.set_tileLength(tileLength);"] + TILING_FUNC_TAIL)
