"""Row programs after a matmul on the cube unit (the ``ascend_cube`` family's MIX kernels with a row epilogue).

When what follows the matmul is more than a chain of elementwise functions of its output -- the output read
twice (``y * s + y``, ``y * sigmoid(y)``), a residual or other full-tensor operand, or a row-wise reduction or
normalisation over N (sum/mean/max/min, logsumexp, softmax, layer/RMS-norm-like, then any elementwise tail) --
the cube core computes whole rows of C: per row block of ``base_m`` rows it runs every ``base_n`` column tile
and writes each through the Fixpipe into its AI core's workspace slot (``base_m x N`` values of the task's
dtype, so a float16 task sees C rounded to half as PyTorch does), then flags (CrossCoreSetFlag mode 2) its two
vector cores. Each vector core runs the ascend_row family's row program (``ascend/row_kernel.RowKernel``, the same
code the vector-only template writes for softmax or layer norm) on half the block's rows, reading C from the
slot and the other operands from GM, and flags back before the slot takes the next row block.

The row program sees C as an input named ``mm``; the vector template's rules apply to it (operands that are
full tensors, per-row ``(M, 1)`` or per-column ``(N,)``; reductions over the last dimension only; no
whole-tensor reductions here). A row of C is streamed in chunks when it does not fit the Unified Buffer.
"""
from __future__ import annotations

import copy
import dataclasses
from typing import Any

from evokernel.generators.template.ascend import row_host, row_kernel, rowop
from evokernel.generators.template.ascend.cube import cols as COLS
from evokernel.generators.template.ascend.cube import gnorm as GN
from evokernel.generators.template.ascend.cube import norms as NORMS
from evokernel.generators.template.ascend.cube import pool as POOL
from evokernel.generators.template.ascend.cube.mix import mix_entry
from evokernel.generators.template.front.graph import AnalysisError, Node
from evokernel.generators.template.front.lower import Plan, Stage

MM = "mm"  # the row program's name for the matmul's output


def prepare_rows(plan: Plan, cut: int, region: list[int], task_name: str, task_source: str) -> Any:
    """The row program over the matmul's output (node ``cut``) as an ``ascend/rowop.AscendOp`` whose input
    ``mm`` is C; raises AnalysisError with the vector template's reason when it cannot be written."""
    plan, cut, region, pool = POOL.rewrite(plan, cut, region)  # a pooling first: the row program reads P
    if pool is not None and any(plan.graph.nodes[i].op in NORMS.NORM_OPS for i in region):
        raise AnalysisError("after the matmul: a pooling and a GroupNorm/BatchNorm (one of them is templated)")

    gphase = None
    if pool is None:  # a GroupNorm of small groups: its own phase before the row program
        plan, cut, region, gphase = GN.rewrite(plan, cut, region)
    plan, cut, region, norm = NORMS.rewrite(plan, cut, region)  # a GroupNorm / BatchNorm made row-programmable
    g = plan.graph
    root_of = lambda nid: plan.aliases.get(nid, nid)  # noqa: E731
    inside = set(region)
    ext: list[int] = []
    for i in region:
        for a in g.nodes[i].args:
            if isinstance(a, int) and a not in inside and a not in ext:
                ext.append(a)
    g2 = copy.copy(g)
    g2.nodes = list(g.nodes)
    c = g.nodes[cut]
    g2.nodes[cut] = Node(cut, "input", [], {"index": -1, "name": MM}, c.shape, "f32", "the matmul's output")
    for a in ext:
        if a != cut and g.nodes[root_of(a)].op not in ("input", "param"):
            raise AnalysisError(f"{g.nodes[a].origin}: the epilogue reads an intermediate that is not the matmul's "
                                "output (one matmul, then one row program)")
    if cut not in ext:
        raise AnalysisError("the epilogue does not read the matmul's output")
    st = Stage("row", None, list(region), region[-1], ext)
    try:
        op = rowop.prepare(Plan(g2, [st], plan.aliases), task_name, task_source)
    except AnalysisError as exc:
        raise AnalysisError(f"after the matmul: {exc}") from None
    mm = next(e for e in op.exts if e.nid == cut)
    if mm.role != "J" or tuple(op.frame) != tuple(c.shape):
        raise AnalysisError(f"after the matmul: the row program's frame {op.frame} is not the matmul's output "
                            f"{tuple(c.shape)}")
    if op.out_kind not in ("J", "R"):
        raise AnalysisError("after the matmul: a reduction over the whole output (only per-row results and "
                            "full tensors are written from the vector cores' row blocks)")
    op.family = "ascend_row"  # always the row program (its flat form splits the tensor, not rows)
    op.norm = norm  # type: ignore[attr-defined]  # None, or the GroupNorm / BatchNorm rewrite
    op.pool = pool  # type: ignore[attr-defined]  # None, or the pooling before the row program
    op.gn_phase = gphase  # type: ignore[attr-defined]  # None, or the small-group GroupNorm phase before it
    op.phase_exts = GN.phase_exts(gphase, plan.graph) if gphase is not None else []  # type: ignore[attr-defined]
    for e in op.exts:
        if e.nid == cut or (norm is not None and e.root in norm.internal):
            e.pyexpr = ""  # computed by the kernel (C or P, the batch statistics): not an operand of the operator
    return op


def groups_of(row_op: Any) -> int:
    norm = getattr(row_op, "norm", None)
    return norm.groups if norm is not None else 1


def batch_norm_of(row_op: Any) -> Any:
    norm = getattr(row_op, "norm", None)
    return norm.bn if norm is not None else None


def row_knobs(knobs: dict[str, Any]) -> dict[str, Any]:
    """The row program's schedule: whole rows resident in UB when they fit (one read of the slot), else
    streamed; count forms; single-buffered queues (the cube's buffer_num is its own)."""
    return {"tile": 8192, "buffer_num": 1, "blocks": "all", "vec_form": "count",
            "row_mode": str(knobs.get("row_mode", "resident"))}


def pool_of(row_op: Any) -> Any:
    return getattr(row_op, "pool", None)


def split_ok(row_op: Any, knobs: dict[str, Any]) -> bool:
    """A training-mode BatchNorm's statistics are over all M rows, and the pooling phase is written for the
    whole of C: both need ``row_split = all``."""
    return ((batch_norm_of(row_op) is None and pool_of(row_op) is None and getattr(row_op, "gn_phase", None) is None)
            or knobs.get("row_split", "block") == "all")


def row_geometry(row_op: Any, knobs: dict[str, Any], base_m: int) -> tuple[dict[str, Any], Any, str, dict[str, int]] | None:
    """(row knobs, Consts, the row class's text, geometry for half a row block) or None when no tile fits."""
    half_rows = -(-min(base_m, row_op.rows) // 2)
    for mode in ([knobs.get("row_mode", "resident"), "stream"] if knobs.get("row_mode", "resident") == "resident"
                 else ["stream"]):
        rk = row_knobs({**knobs, "row_mode": mode})
        text, consts = row_kernel.RowKernel(row_op, rk).render("__CLS__", "__TILING__")
        geo = row_host.geometry(dataclasses.replace(row_op, rows=half_rows), rk, consts, cores=1)
        if geo is not None:
            pool = pool_of(row_op)
            return rk, consts, text, {**geo, "groups": groups_of(row_op), "pool": pool.k if pool is not None else 1}
    return None


def row_geometry_knobs(rg: tuple[dict[str, Any], Any, str, dict[str, int]]) -> dict[str, Any]:
    return rg[0]


def row_class(row_op: Any, text: str, cls: str, tiling_cls: str, cube_exts: list[Any]) -> tuple[str, list[str]]:
    """The row class renamed, with ``Rows(...)``: point the operands at one call's rows and run them.
    Returns the text and the row program's kernel arguments (the cube's names for shared inputs)."""
    T = "half" if getattr(row_op.graph, "half", False) else "float"
    by_root = {e.root: e.name for e in cube_exts}
    grouped = groups_of(row_op) > 1
    names: list[str] = []
    sets = ["myRows = rows;"]
    # a GroupNorm's row program runs per group: rows of N (the group's S columns) at a row stride of LD
    ld, g0 = ("LD", " + g0") if grouped else ("N", "")
    span = "span" if grouped else "static_cast<uint64_t>(rows) * N"
    if grouped:
        sets += ["uint64_t g0 = static_cast<uint64_t>(grp) * N;  // the group's first column",
                 "uint64_t span = static_cast<uint64_t>(rows - 1) * LD + N;"]
    for e in row_op.exts:
        is_c = row_op.graph.nodes[e.root].attrs.get("index") == -1  # the matmul's output, in the slot
        arg = "slot" if is_c else by_root.get(e.root, e.name)
        names.append(arg)
        if arg == "slot":
            sets.append(f"gm_{e.name}.SetGlobalBuffer((__gm__ {T}*)slot{g0}, {span});")
        elif e.role == "J":
            sets.append(f"gm_{e.name}.SetGlobalBuffer((__gm__ {T}*){arg} + firstRow * {ld}{g0}, {span});")
        elif e.role == "R":
            sets.append(f"gm_{e.name}.SetGlobalBuffer((__gm__ {T}*){arg} + firstRow, rows);")
        elif e.role == "C" and grouped:
            sets.append(f"gm_{e.name}.SetGlobalBuffer((__gm__ {T}*){arg} + g0, N);")
    if row_op.out_kind == "J":
        sets.append(f"gm_out.SetGlobalBuffer((__gm__ {T}*)out + firstRow * {ld}{g0}, {span});")
    else:
        sets.append(f"gm_out.SetGlobalBuffer((__gm__ {T}*)out + firstRow, rows);")
    sets.append("Process();")
    params = ", ".join(f"GM_ADDR {n}" for n in names)
    grp = ", uint32_t grp" if grouped else ""
    method = ["    // one call: `rows` rows of C from the workspace slot, the output's rows from firstRow on" +
              (" (group grp's columns)" if grouped else ""),
              f"    __aicore__ inline void Rows({params}, GM_ADDR out, uint64_t firstRow, uint32_t rows{grp})",
              "    {"] + ["        " + s for s in sets] + ["    }", ""]
    text = text.replace("__CLS__", cls).replace("__TILING__", tiling_cls)
    if grouped:
        text = strided(text, T)
    i = text.index("\nprivate:\n")
    return text[:i + 1] + "\n".join(method) + text[i + 1:], names


ROW_FIELDS = ["rows", "cols", "rowsPerBlock", "bigBlocks", "tileRows", "chunk", "kPad", "cPad", "rowStride"]


def strided(text: str, T: str) -> str:
    """The row class reading and writing rows of N values at a row stride of LD (a GroupNorm's group of
    columns): GM offsets, DataCopyPad gaps and the dense (one contiguous copy) tests."""
    def sub(old: str, new: str) -> None:
        nonlocal text
        assert old in text, old
        text = text.replace(old, new)

    sub("bool dense = (ccp == cc) && (kk == 1 || cc == N);", "bool dense = (ccp == cc) && (kk == 1 || (cc == N && LD == N));")
    sub("[static_cast<uint64_t>(row0) * N + c0]", "[static_cast<uint64_t>(row0) * LD + c0]")
    sub(f"static_cast<uint32_t>((N - cc) * sizeof({T}))", f"static_cast<uint32_t>((LD - cc) * sizeof({T}))")
    sub("uint64_t at = static_cast<uint64_t>(row0) * N + c0;", "uint64_t at = static_cast<uint64_t>(row0) * LD + c0;")
    sub("if ((ccp == cc) && (kk == 1 || cc == N)) {", "if ((ccp == cc) && (kk == 1 || (cc == N && LD == N))) {")
    sub("uint32_t N = 0, tileRows = 0,", "uint32_t N = 0, LD = 0, tileRows = 0,")
    sub("        N = t.cols;\n", "        N = t.cols;\n        LD = t.rowStride;\n")
    return text


def host_row_fields() -> str:
    """The row program's tiling fields: a call covers at most half a row block (rowsPerBlock and bigBlocks 0:
    the rows come with each call)."""
    return "".join(f"    tiling.set_{f}({v});\n" for f, v in
                   (("rows", "M"), ("cols", "N / ROW_GROUPS / ROW_POOL"), ("rowsPerBlock", 0), ("bigBlocks", 0),
                    ("tileRows", "ROW_TILE_ROWS"), ("chunk", "ROW_CHUNK"), ("kPad", "ROW_K_PAD"),
                    ("cPad", "ROW_C_PAD"), ("rowStride", "N")))


def row_constants(geo: dict[str, Any], align: int, N: int) -> str:
    k, chunk = int(geo["tile_rows"]), int(geo["chunk"])
    kpad = (k + align - 1) // align * align
    cpad = (chunk + align - 1) // align * align
    return (f"// the vector cores' row program, sized for rows of N = {N} in the 192 KiB Unified Buffer\n"
            f"constexpr uint32_t ROW_N = {N};\n"
            f"constexpr uint32_t ROW_GROUPS = {int(geo.get('groups', 1))};  // the row program per group of "
            "N / ROW_GROUPS columns (GroupNorm)\n"
            f"constexpr uint32_t ROW_POOL = {int(geo.get('pool', 1))};  // the row program over C pooled by "
            "ROW_POOL along N\n"
            f"constexpr uint32_t ROW_TILE_ROWS = {k};\nconstexpr uint32_t ROW_CHUNK = {chunk};\n"
            f"constexpr uint32_t ROW_K_PAD = {kpad};\nconstexpr uint32_t ROW_C_PAD = {cpad};\n")


def mix_rows(op: Any, knobs: dict[str, Any], text: str, T: str, tiling_cls: str) -> str:
    """The cube-only kernel text turned into the MIX kernel: the cube core fills its slot with a row block of C
    (every column tile), flags its vector cores (flag 0) and waits for them (flag 1) before the next block;
    the vector cores run the row program on half the block's rows each."""
    rg = row_geometry(op.row_op, knobs, int(knobs["base_m"]))
    if rg is None:
        raise AnalysisError("no tile of the row program fits the vector core's Unified Buffer")
    _, _, row_text, _ = rg
    cls = f"Kernel{op.op_type}"
    if knobs.get("row_split", "block") == "all":
        return _mix_rows_all(op, text, T, tiling_cls, rg, cls)

    def sub(old: str, new: str) -> None:
        nonlocal text
        assert text.count(old) == 1, old
        text = text.replace(old, new)

    quant = "QuantMode_t::F322F16" if op.half else "QuantMode_t::NoQuant"
    sub(f"GM_ADDR out, const {tiling_cls}& t)", f"GM_ADDR out, GM_ADDR workspace, const {tiling_cls}& t)")
    sub(f"        cGm.SetGlobalBuffer((__gm__ {T}*)out, M * N);\n",
        f"        wsGm.SetGlobalBuffer((__gm__ {T}*)workspace + GetBlockIdx() * baseM * N, baseM * N);\n")
    sub("        for (uint32_t tile = GetBlockIdx(); tile < tilesM * tilesN; tile += GetBlockNum()) {\n",
        "        for (uint32_t rowBlock = GetBlockIdx(); rowBlock < tilesM; rowBlock += GetBlockNum()) {\n"
        "            if (tilesDone++ > 0) {\n"
        "                CrossCoreWaitFlag(1);  // the vector cores are done with the previous row block\n"
        "            }\n"
        "            for (uint32_t tile = rowBlock * tilesN; tile < (rowBlock + 1) * tilesN; ++tile) {\n")
    i = text.index("            uint32_t m0 = (tile / tilesN) * baseM;\n")
    j = text.index("            CopyOut(m0, n0, m, n);\n        }\n    }\n")
    body = "".join("    " + ln + "\n" for ln in text[i:j].splitlines())
    text = (text[:i] + body + "                CopyOut(m0, n0, m, n);\n            }\n"
            "            CrossCoreSetFlag<2, PIPE_FIX>(0);  // the row block is in the slot: the vector cores may read it\n"
            "        }\n"
            "        if (tilesDone > 0) {\n            CrossCoreWaitFlag(1);  // the vector cores are done with the last block\n"
            "        }\n    }\n" + text[j + len("            CopyOut(m0, n0, m, n);\n        }\n    }\n"):])
    i = text.index("    __aicore__ inline void CopyOut(")
    j = text.index("    TPipe pipe;", i)
    text = text[:i] + f"""    __aicore__ inline void CopyOut(uint32_t m0, uint32_t n0, uint32_t m, uint32_t n)
    {{
        LocalTensor<float> c1Local = outQueueCO1.DeQue<float>();
        FixpipeParamsV220 params;  // the tile into this AI core's slot: rows of N, columns n0..n0+n
        params.nSize = n;
        params.mSize = m;
        params.srcStride = CeilDiv(m, 16) * 16;
        params.dstStride = N;
        params.quantPre = {quant};
        params.ndNum = 1;
        Fixpipe(wsGm[n0], c1Local, params);
        outQueueCO1.FreeTensor(c1Local);
        (void)m0;
    }}

""" + text[j:]
    sub(f"    GlobalTensor<{T}> aGm, bGm, cGm;\n", f"    GlobalTensor<{T}> aGm, bGm, wsGm;\n")
    sub("    uint32_t M = 0, N = 0, K = 0, baseM = 0, baseN = 0, baseK = 0, tilesM = 0, tilesN = 0;\n};",
        "    uint32_t M = 0, N = 0, K = 0, baseM = 0, baseN = 0, baseK = 0, tilesM = 0, tilesN = 0;\n"
        "    uint32_t tilesDone = 0;\n};")
    rcls, names = row_class(op.row_op, row_text, f"{cls}Rows", tiling_cls, op.exts)
    rcls = (f"constexpr int32_t ROW_BUFFER_NUM = {int(row_geometry_knobs(rg)['buffer_num'])};  // the row program's "
            "queues\n\n" + rcls.replace("BUFFER_NUM", "ROW_BUFFER_NUM"))
    init_args = ", ".join("workspace" if n == "slot" else n for n in names)
    call_args = ", ".join(f"{n}" for n in names)
    i = text.index('extern "C" __global__ __aicore__ void')
    entry = mix_entry(op, cls, _block_rows_vector(cls, init_args, T, _rows_call, call_args, op))
    return text[:i] + rcls + "\n\n" + entry


def _block_rows_vector(cls: Any, init_args: Any, T: Any, _rows_call: Any, call_args: Any, op: Any) -> str:
    """The vector cores' side of the row-block hand-over: per row block of this AI core, wait for the slot, run the row program on half its rows, flag back."""
    return f"""        // the vector cores: the row program on their half of each row block in this AI core's slot
        {cls}Rows op;
        op.Init({init_args}, out, tiling_data);
        uint32_t core = GetBlockIdx() / GetTaskRation();
        uint32_t M = tiling_data.M, N = tiling_data.N, baseM = tiling_data.baseM;
        for (uint32_t rowBlock = core; rowBlock < tiling_data.tilesM; rowBlock += GetBlockNum()) {{
            uint32_t m0 = rowBlock * baseM;
            uint32_t m = Min(baseM, M - m0);
            uint32_t halfRows = CeilDiv(m, 2);
            uint32_t r0 = GetSubBlockIdx() * halfRows;
            uint32_t rows = r0 < m ? Min(halfRows, m - r0) : 0;
            CrossCoreWaitFlag(0);  // this AI core's cube core has written the row block
            if (rows > 0) {{
                GM_ADDR slot = workspace + (static_cast<uint64_t>(core) * baseM + r0) * N * sizeof({T});
                {_rows_call(op.row_op, call_args, "m0 + r0")}
            }}
            CrossCoreSetFlag<2, PIPE_MTE3>(1);  // done with the slot
        }}
"""



def _rows_call(row_op: Any, args: str, first: str) -> str:
    """The vector core's call of the row program on its rows (once per group of columns for a GroupNorm)."""
    if groups_of(row_op) == 1:
        return f"op.Rows({args}, out, {first}, rows);"
    return (f"for (uint32_t grp = 0; grp < tiling_data.N / tiling_data.cols; ++grp) {{  // each group of columns\n"
            f"                    op.Rows({args}, out, {first}, rows, grp);\n                }}")


def _mix_rows_all(op: Any, text: str, T: str, tiling_cls: str, rg: Any, cls: str) -> str:
    """``row_split = all``: every cube core computes its share of all the tiles of C into a workspace holding
    the whole of C (M x N), SyncAll<false>() (cube and vector cores), then all the vector cores split the M
    rows among themselves. Uses every AI core when M has few row blocks; no overlap of the two phases."""
    def sub(old: str, new: str) -> None:
        nonlocal text
        assert text.count(old) == 1, old
        text = text.replace(old, new)

    sub(f"GM_ADDR out, const {tiling_cls}& t)", f"GM_ADDR out, GM_ADDR workspace, const {tiling_cls}& t)")
    sub(f"        cGm.SetGlobalBuffer((__gm__ {T}*)out, M * N);\n",
        f"        cGm.SetGlobalBuffer((__gm__ {T}*)workspace, M * N);  // C, whole, in the workspace\n")
    sub("            CopyOut(m0, n0, m, n);\n        }\n    }\n",
        "            CopyOut(m0, n0, m, n);\n        }\n"
        "        SyncAll<false>();  // every tile of C is in the workspace: the vector cores may start\n    }\n")
    rcls, names = row_class(op.row_op, rg[2], f"{cls}Rows", tiling_cls, op.exts)
    rcls = (f"constexpr int32_t ROW_BUFFER_NUM = {int(row_geometry_knobs(rg)['buffer_num'])};  // the row program's "
            "queues\n\n" + rcls.replace("BUFFER_NUM", "ROW_BUFFER_NUM"))
    init_args = ", ".join("workspace" if n == "slot" else n for n in names)
    i = text.index('extern "C" __global__ __aicore__ void')
    rows_op = f"        {cls}Rows op;\n        op.Init({init_args}, out, tiling_data);\n"
    vec_start = rows_op + "        SyncAll<false>();\n"
    bn = batch_norm_of(op.row_op)
    if bn is not None:  # a training-mode BatchNorm: its column statistics first (their own pipe, then the rows')

        vec_start = "        SyncAll<false>();\n" + COLS.vector_phase(op, bn, T) + rows_op
        rcls = COLS.stats_class(op, bn, tiling_cls) + "\n" + rcls
    gphase = getattr(op.row_op, "gn_phase", None)
    if gphase is not None:  # the GroupNorm phase, then the row program, on each vector core's rows

        rcls = GN.phase_class(op, gphase, tiling_cls) + "\n" + rcls
        return text[:i] + rcls + "\n\n" + mix_entry(op, cls, GN.vector_branch(op, gphase, cls, init_args, names))
    pool = pool_of(op.row_op)
    if pool is not None:  # the pooling phase, then the row program, on each vector core's rows

        rcls = POOL.pool_class(op, pool, tiling_cls) + "\n" + rcls
        return text[:i] + rcls + "\n\n" + mix_entry(op, cls, POOL.vector_branch(op, cls, init_args, names))
    entry = mix_entry(op, cls, f"""        // the vector cores: once C is whole, an equal share of its rows each
{vec_start}        uint32_t M = tiling_data.M, N = tiling_data.N;
        uint32_t cores = GetBlockNum() * GetTaskRation(), idx = GetBlockIdx();
        uint32_t share = M / cores, extra = M % cores;
        uint32_t first = idx * share + (idx < extra ? idx : extra);
        uint32_t rows = share + (idx < extra ? 1 : 0);
        if (rows > 0) {{
            GM_ADDR slot = workspace + static_cast<uint64_t>(first) * N * sizeof({T});
            {_rows_call(op.row_op, ", ".join(names), "first")}
        }}
""")
    return text[:i] + rcls + "\n\n" + entry
