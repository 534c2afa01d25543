"""The ``ascend_colreduce`` family: a reduction over a run of middle dimensions, ``(outer, mid, inner) -> (outer,
inner)`` -- its operator (:func:`prepare`), kernel (``ColKernel``), host geometry and TilingFunc. Units of one outer
index x a column chunk (narrower chunks when there are fewer units than cores), tiles of several reduced rows,
combined row by row (``vec_form=count``) or by a pairwise tree (``repeat``). Knobs: tile, buffer_num, blocks,
vec_form.
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.ascend import vector_project
from evokernel.generators.template.ascend.names import _ident, _prod, _snake, own_init
from evokernel.generators.template.ascend.project import TILING_FUNC_TAIL, tiling_func_head
from evokernel.generators.template.ascend.row_compute import Consts
from evokernel.generators.template.ascend.rowop import (
    BLOCK_MODES,
    CORES,
    REDUCE_FNS,
    UB_BYTES,
    AscendOp,
    Ext,
    vector_cores,
)
from evokernel.generators.template.ascend.vecops import COMBINE_OP, IDENTITY, _indent
from evokernel.generators.template.front.graph import AnalysisError
from evokernel.generators.template.front.lower import Plan
from evokernel.generators.template.front.graph import attr_expr

NAME = "ascend_colreduce"
STAGE = "midreduce"  # the plan stage this family drafts (one stage)
SEVERAL_STAGES = False
# vec_form count = row-by-row adds, repeat = a pairwise tree over the tile
KNOBS: dict[str, list[Any]] = {"tile": [1024, 2048, 4096, 8192, 16384], "buffer_num": [1, 2], "blocks": ["all", "half"],
                               "vec_form": ["count", "repeat"]}
DEFAULTS: dict[str, Any] = {"tile": 4096, "buffer_num": 1, "blocks": "all", "vec_form": "count"}
TRANSFORMS: list[tuple[str, dict[str, Any]]] = []  # the vector transforms (ascend.schedules) cover its knobs
FIELDS = [("outer", "dims before the reduced ones"), ("mid", "the reduced dims"), ("inner", "dims after"),
          ("chunk", "columns per unit"), ("cPad", "chunk rounded up to 32 bytes"),
          ("midRows", "reduced rows per tile"), ("colChunks", ""), ("unitsPerBlock", ""),
          ("bigBlocks", "the first bigBlocks blocks take one unit more")]


def priors(op: AscendOp) -> dict[str, float]:
    return {"repeat_form": 0.025}  # log2(rows) whole-tile instructions instead of one per row


def render_project(op: AscendOp, knobs: dict[str, Any]) -> tuple[dict[str, str], Consts, dict[str, int] | None]:
    return vector_project.render_project(op, knobs, ColKernel(op, knobs), FIELDS, geometry, host)


def geometry(op: AscendOp, knobs: dict[str, Any], c: Consts, cores: int = CORES, ub: int = UB_BYTES
             ) -> dict[str, int] | None:
    """What the host TilingFunc (:func:`host`) computes for the task's shapes (None: it would fail)."""
    if c.vecin_buffers > 8:
        return None
    return _col_geometry(op, knobs, c, cores, ub)


def prepare(plan: Plan, task_name: str, task_source: str = "") -> AscendOp:
    """A reduction over a run of middle dimensions: (outer, mid, inner) -> (outer, inner)."""
    g = plan.graph
    st = plan.stages[0]
    r = g.nodes[st.out]
    if r.op != "reduce":  # argmax / argmin: an index output
        raise AnalysisError(f"{r.origin}: {r.op} (int64 indices out) has no Ascend C template")
    src = r.args[0]
    root = plan.aliases.get(src, src)
    shape = tuple(g.nodes[src].shape)
    dims = r.attrs["dims"]
    fn = r.attrs["fn"]
    if fn not in REDUCE_FNS:
        raise AnalysisError(f"{r.origin}: reduction {fn}")
    if g.nodes[root].op not in ("input", "param") or g.nodes[src].dtype != "f32":
        raise AnalysisError(f"{r.origin}: the reduced tensor is not a float input")
    d0, d1 = dims[0], dims[-1]
    outer, mid, inner = _prod(shape[:d0]), _prod(shape[d0:d1 + 1]), _prod(shape[d1 + 1:])
    if inner < 8:
        raise AnalysisError(f"{r.origin}: a reduction over the trailing dims {dims} with fewer than 8 values left per row")
    if outer * mid * inner >= 2 ** 31:
        raise AnalysisError(f"the tensor has {outer * mid * inner} elements; 32-bit tiling fields cannot address it")
    rnode = g.nodes[root]
    name = _ident(rnode.attrs["name"] if rnode.op == "input" else rnode.attrs["path"].replace(".", "_"))
    if name in ("out", "workspace", "tiling"):
        name += "1"
    pyexpr = rnode.attrs["name"] if rnode.op == "input" else attr_expr("self", rnode.attrs["path"])
    ext = Ext(src, root, name, "J", pyexpr, shape)
    out_shape = tuple(g.nodes[g.output].shape)
    init_source = g.init_source if (not task_source or own_init(task_source)) else ""
    frame_ext = 0 if tuple(rnode.shape) == shape else -1
    return AscendOp(g, [st.out], {src: "J", st.out: "M"}, [ext], st.out, "M", out_shape, shape, outer, inner,
                    "ascend_colreduce", "reduction", _snake(task_name), frame_ext, [st.out], init_source,
                    (outer, mid, inner, d0, d1))


class ColKernel:
    """The ``ascend_colreduce`` family: ``out[a, k] = reduce_m x[a, m, k]``. A unit is one outer index
    and one chunk of columns; a tile holds ``midRows`` middle rows of that chunk. ``vec_form=count``
    adds the tile's rows into the accumulator one by one; ``repeat`` folds them pairwise first (a
    tree of whole-tile instructions, the row padding zero-filled by DataCopyPad)."""

    def __init__(self, op: AscendOp, knobs: dict[str, Any]):
        self.op = op
        self.bn = int(knobs.get("buffer_num", 1))
        self.tree = knobs.get("vec_form", "count") == "repeat"
        self.half = bool(getattr(op.graph, "half", False))
        self.T = "half" if self.half else "float"
        self.A = 16 if self.half else 8
        self.io = 2 if self.half else 4

    def render(self, cls: str, tiling_cls: str) -> tuple[str, Consts]:
        op, A = self.op, self.A
        e = op.exts[0]
        unit = self._unit()
        copyin, copyout = self._copies()
        init, members = self._init_members(e)
        process = ["for (uint32_t u = 0; u < myUnits; ++u) {",
                   "    uint32_t unit = firstUnit + u;",
                   "    uint32_t a = unit / colChunks;",
                   "    uint32_t c0 = (unit % colChunks) * chunk;",
                   "    uint32_t cc = K - c0 < chunk ? K - c0 : chunk;",
                   "    Unit(a, c0, cc);",
                   "}"]
        lines = [f"class {cls} {{",
                 "public:",
                 f"    __aicore__ inline {cls}() {{}}",
                 f"    __aicore__ inline void Init(GM_ADDR {e.name}, GM_ADDR out, const {tiling_cls}& t)",
                 "    {"] + _indent(init, 8) + [
                 "    }",
                 "    __aicore__ inline void Process()",
                 "    {"] + _indent(process, 8) + [
                 "    }",
                 "",
                 "private:",
                 "    __aicore__ inline void Unit(uint32_t a, uint32_t c0, uint32_t cc)",
                 "    {"] + _indent(unit, 8) + [
                 "    }",
                 "    __aicore__ inline void CopyIn(uint32_t a, uint32_t m0, uint32_t mm, uint32_t c0, uint32_t cc)",
                 "    {"] + _indent(copyin, 8) + [
                 "    }",
                 "    __aicore__ inline void CopyOut(uint32_t a, uint32_t c0, uint32_t cc)",
                 "    {"] + _indent(copyout, 8) + [
                 "    }",
                 "",
                 "    TPipe pipe;"] + _indent(members, 4) + [
                 "    uint32_t M = 0, K = 0, chunk = 0, midRows = 0, colChunks = 0, myUnits = 0, firstUnit = 0;",
                 "    float invM = 0.0f;",
                 "};"]
        c = Consts(align=A)
        c.row_bytes = self.bn * self.io + (4 if self.half else 0)  # per element of a midRows x cPad tile
        c.col_bytes = self.bn * self.io + (4 if self.half else 0)  # per element of the accumulator chunk
        c.vecin_buffers = self.bn
        return "\n".join(lines), c

    def _unit(self) -> list[str]:
        """``Unit(a, c0, cc)``: the accumulator over all M reduced rows, tile by tile, then written out."""
        op, T, A = self.op, self.T, self.A
        fn = op.graph.nodes[op.out].attrs["fn"]
        comb = COMBINE_OP[fn]
        acc = "facc" if self.half else "o"
        src = "ft" if self.half else "l"
        unit = [f"uint32_t ccp = (cc + {A - 1}) / {A} * {A};",
                f"LocalTensor<{T}> o = q_out.AllocTensor<{T}>();",
                f"Duplicate({acc}, {IDENTITY[fn]}, static_cast<int32_t>(cc));",
                "for (uint32_t m0 = 0; m0 < M; m0 += midRows) {",
                "    uint32_t mm = M - m0 < midRows ? M - m0 : midRows;",
                "    CopyIn(a, m0, mm, c0, cc);",
                f"    LocalTensor<{T}> l = q_x.DeQue<{T}>();"]
        if self.half:
            unit.append("    Cast(ft, l, RoundMode::CAST_NONE, static_cast<int32_t>(mm * ccp));")
        if self.tree:
            unit += ["    for (uint32_t w = mm; w > 1;) {  // pairwise: row i takes row i + w - h",
                     "        uint32_t h = w / 2;",
                     f"        {comb}({src}, {src}, {src}[(w - h) * ccp], static_cast<int32_t>(h * ccp));",
                     "        w -= h;",
                     "    }",
                     f"    {comb}({acc}, {acc}, {src}, static_cast<int32_t>(cc));"]
        else:
            unit += ["    for (uint32_t r = 0; r < mm; ++r) {",
                     f"        {comb}({acc}, {acc}, {src}[r * ccp], static_cast<int32_t>(cc));",
                     "    }"]
        unit += ["    q_x.FreeTensor(l);", "}"]
        if fn == "mean":
            unit.append(f"Muls({acc}, {acc}, invM, static_cast<int32_t>(cc));")
        if self.half:
            unit.append("Cast(o, facc, RoundMode::CAST_RINT, static_cast<int32_t>(cc));")
        unit += ["q_out.EnQue(o);", "CopyOut(a, c0, cc);"]
        return unit

    def _copies(self) -> tuple[list[str], list[str]]:
        """``CopyIn`` (mm reduced rows of a column chunk, zero-padded to 32 bytes) and ``CopyOut``."""
        T, A = self.T, self.A
        pad_x = "cc == ccp ? 0 : static_cast<uint8_t>(ccp - cc)"
        copyin = [f"uint32_t ccp = (cc + {A - 1}) / {A} * {A};",
                  f"LocalTensor<{T}> l = q_x.AllocTensor<{T}>();",
                  "uint64_t at = (static_cast<uint64_t>(a) * M + m0) * K + c0;",
                  "if (ccp == cc && cc == K) {",
                  "    DataCopy(l, gm_x[at], mm * cc);",
                  "} else {  // mm rows of cc columns, K apart in GM; each row padded with zeros to 32 bytes",
                  f"    DataCopyExtParams p(static_cast<uint16_t>(mm), static_cast<uint32_t>(cc * sizeof({T})), "
                  f"static_cast<uint32_t>((K - cc) * sizeof({T})), 0, 0);",
                  f"    DataCopyPad(l, gm_x[at], p, DataCopyPadExtParams<{T}>(true, 0, {pad_x}, 0));",
                  "}",
                  "q_x.EnQue(l);"]
        copyout = [f"LocalTensor<{T}> o = q_out.DeQue<{T}>();",
                   f"uint32_t ccp = (cc + {A - 1}) / {A} * {A};",
                   "uint64_t at = static_cast<uint64_t>(a) * K + c0;",
                   "if (ccp == cc) {",
                   "    DataCopy(gm_out[at], o, cc);",
                   "} else {",
                   f"    DataCopyPad(gm_out[at], o, DataCopyExtParams(1, static_cast<uint32_t>(cc * sizeof({T})), 0, 0, 0));",
                   "}",
                   "q_out.FreeTensor(o);"]
        return copyin, copyout

    def _init_members(self, e: Ext) -> tuple[list[str], list[str]]:
        T = self.T
        init = ["uint32_t blockIdx = GetBlockIdx();",
                "M = t.mid;",
                "K = t.inner;",
                "chunk = t.chunk;",
                "midRows = t.midRows;",
                "colChunks = t.colChunks;",
                "myUnits = t.unitsPerBlock + (blockIdx < t.bigBlocks ? 1 : 0);",
                "firstUnit = t.unitsPerBlock * blockIdx + (blockIdx < t.bigBlocks ? blockIdx : t.bigBlocks);",
                "invM = 1.0f / static_cast<float>(M);",
                f"gm_x.SetGlobalBuffer((__gm__ {T}*){e.name}, static_cast<uint64_t>(t.outer) * M * K);",
                f"gm_out.SetGlobalBuffer((__gm__ {T}*)out, static_cast<uint64_t>(t.outer) * K);",
                f"pipe.InitBuffer(q_x, BUFFER_NUM, midRows * t.cPad * sizeof({T}));",
                f"pipe.InitBuffer(q_out, BUFFER_NUM, t.cPad * sizeof({T}));"]
        members = ["TQue<QuePosition::VECIN, BUFFER_NUM> q_x;", "TQue<QuePosition::VECOUT, BUFFER_NUM> q_out;",
                   f"GlobalTensor<{T}> gm_x, gm_out;"]
        if self.half:
            init += ["pipe.InitBuffer(b_ft, midRows * t.cPad * sizeof(float));",
                     "pipe.InitBuffer(b_acc, t.cPad * sizeof(float));",
                     "ft = b_ft.Get<float>();", "facc = b_acc.Get<float>();"]
            members += ["TBuf<TPosition::VECCALC> b_ft, b_acc;", "LocalTensor<float> ft, facc;"]
        return init, members


def _col_geometry(op: AscendOp, knobs: dict[str, Any], c: Consts, cores: int, ub: int) -> dict[str, int] | None:
    assert op.col is not None
    outer, mid, inner = op.col[:3]
    A = c.align
    tile = int(knobs.get("tile", 4096))
    mode, cores = vector_cores(knobs, cores)
    kpad = (inner + A - 1) // A * A
    if kpad <= tile:
        chunk = inner
    else:
        chunk = max(tile // A * A, A)
        pieces = -(-inner // chunk)
        chunk = (-(-inner // pieces) + A - 1) // A * A
    if outer * -(-inner // chunk) < cores:  # too few units for the cores: narrower column chunks
        pieces = max(-(-inner // chunk), min(-(-cores // outer), -(-inner // A)))
        chunk = (-(-inner // pieces) + A - 1) // A * A
    cpad = (chunk + A - 1) // A * A
    rows = max(1, min(mid, tile // cpad, 4095))
    while rows > 1 and c.row_bytes * rows * cpad + c.col_bytes * cpad > ub:
        rows -= 1
    if c.row_bytes * rows * cpad + c.col_bytes * cpad > ub:
        return None
    col_chunks = -(-inner // chunk)
    units = outer * col_chunks
    block_dim = min(cores, units)
    return {"block_dim": block_dim, "chunk": chunk, "mid_rows": rows, "col_chunks": col_chunks,
            "units_per_block": units // block_dim, "big_blocks": units % block_dim,
            "ub_bytes": c.row_bytes * rows * cpad + c.col_bytes * cpad}


def host(op: AscendOp, knobs: dict[str, Any], c: Consts, tiling_cls: str) -> str:
    assert op.col is not None
    outer, mid, inner, d0, d1 = op.col
    if op.frame_ext >= 0:
        shape = ["    const gert::Shape& shape = context->GetInputShape(0)->GetStorageShape();",
                 f"    if (shape.GetDimNum() != {len(op.frame)}) return ge::GRAPH_FAILED;",
                 "    uint64_t outer = 1, mid = 1, inner = 1;",
                 "    for (size_t d = 0; d < shape.GetDimNum(); ++d) {",
                 f"        if (d < {d0}) outer *= shape.GetDim(d);",
                 f"        else if (d <= {d1}) mid *= shape.GetDim(d);",
                 "        else inner *= shape.GetDim(d);",
                 "    }"]
    else:
        shape = [f"    uint64_t outer = {outer}, mid = {mid}, inner = {inner};"]
    return "\n".join([
        "namespace optiling {",
        f"constexpr uint32_t TILE_ELEMS = {int(knobs.get('tile', 4096))};",
        f"constexpr uint32_t BUFFER_NUM = {int(knobs.get('buffer_num', 1))};",
        f"constexpr uint32_t BLOCK_MODE = {BLOCK_MODES[knobs.get('blocks', 'all')]};  // 0 all cores, 1 half",
        f"constexpr uint32_t ALIGN = {c.align};  // elements per 32-byte block",
        f"constexpr uint64_t TILE_BYTES = {c.row_bytes}, ACC_BYTES = {c.col_bytes};  // UB bytes per element",
        ""] + tiling_func_head(tiling_cls) + shape + [
        "    if (outer == 0 || mid == 0 || inner == 0) return ge::GRAPH_FAILED;",
        "    uint32_t K = static_cast<uint32_t>(inner);",
        "    uint32_t kPad = (K + ALIGN - 1) / ALIGN * ALIGN;",
        "    uint32_t chunk = K;",
        "    if (kPad > TILE_ELEMS) {  // columns in equal chunks",
        "        chunk = TILE_ELEMS / ALIGN * ALIGN > ALIGN ? TILE_ELEMS / ALIGN * ALIGN : ALIGN;",
        "        uint32_t pieces = (K + chunk - 1) / chunk;",
        "        chunk = ((K + pieces - 1) / pieces + ALIGN - 1) / ALIGN * ALIGN;",
        "    }",
        "    if (outer * ((K + chunk - 1) / chunk) < coreNum) {  // too few units for the cores: narrower chunks",
        "        uint64_t want = (coreNum + outer - 1) / outer;",
        "        uint64_t most = (K + ALIGN - 1) / ALIGN;",
        "        uint64_t pieces = want < most ? want : most;",
        "        if (pieces < (K + chunk - 1) / chunk) pieces = (K + chunk - 1) / chunk;",
        "        chunk = static_cast<uint32_t>(((K + pieces - 1) / pieces + ALIGN - 1) / ALIGN * ALIGN);",
        "    }",
        "    uint32_t cPad = (chunk + ALIGN - 1) / ALIGN * ALIGN;",
        "    uint64_t rows = TILE_ELEMS / cPad;",
        "    if (rows > mid) rows = mid;",
        "    if (rows > 4095) rows = 4095;",
        "    if (rows < 1) rows = 1;",
        "    while (rows > 1 && TILE_BYTES * rows * cPad + ACC_BYTES * cPad > ub) --rows;",
        "    if (TILE_BYTES * rows * cPad + ACC_BYTES * cPad > ub) return ge::GRAPH_FAILED;",
        "    uint32_t colChunks = (K + chunk - 1) / chunk;",
        "    uint32_t units = static_cast<uint32_t>(outer) * colChunks;",
        "    uint32_t blockDim = units < coreNum ? units : coreNum;",
        "    context->SetBlockDim(blockDim);",
        "    tiling.set_outer(static_cast<uint32_t>(outer));",
        "    tiling.set_mid(static_cast<uint32_t>(mid));",
        "    tiling.set_inner(K);",
        "    tiling.set_chunk(chunk);",
        "    tiling.set_cPad(cPad);",
        "    tiling.set_midRows(static_cast<uint32_t>(rows));",
        "    tiling.set_colChunks(colChunks);",
        "    tiling.set_unitsPerBlock(units / blockDim);",
        "    tiling.set_bigBlocks(units % blockDim);"] + TILING_FUNC_TAIL)
