"""Ascend C templates for matrix multiplication on the cube unit (the ``ascend_cube`` family).

A task whose graph is one gemm (``a @ b``, ``a @ b.T``, ``nn.Linear``), optionally followed by a per-column
bias add and/or a ReLU, becomes a cube-only operator: the output is cut into ``base_m x base_n`` tiles
spread over the cube cores; per tile a loop over K in ``base_k`` steps copies A and B from GM into L1
(ND -> NZ), loads them into L0A/L0B (B's fractals transposed unless B is given transposed), accumulates
``Mmad`` results in L0C (the bias enters through the bias table at the first step), and writes the tile
out through the Fixpipe (float -> half rounding and ReLU on the way).

Knobs (``ascend_schedules.FAMILY_KNOBS["ascend_cube"]``): ``base_m``, ``base_n`` (the L0C tile), ``base_k``
(the K step: longer copies and fewer Mmads when larger), ``buffer_num`` (two L1/L0 buffers let the next
step's copies overlap the current Mmad). A schedule whose buffers do not fit L1 (512 KiB), L0A/L0B
(64 KiB) or L0C (128 KiB) has no geometry (None), so the generator never proposes it.

An epilogue beyond bias and ReLU (a chain of elementwise functions and scalar operations) makes it a MIX
kernel: the cube core writes each float tile to its AI core's workspace slot and flags (CrossCoreSetFlag
mode 2) its two vector cores, which run the chain on half the rows each, write the output and flag back
before the slot takes the next tile.

Anything more after the matmul -- its output read twice, full-tensor or per-row operands, row reductions and
normalisations over N (softmax, logsumexp, sums, layer/RMS norm) -- is a row program on the vector cores
over whole rows of C (``ascend_cube_rows.py``); a GroupNorm or a training-mode BatchNorm after the matmul:
``ascend_cube_norms.py`` (its column statistics ``ascend_cube_cols.py``, small groups ``ascend_cube_gnorm.py``),
a pooling along the features: ``ascend_cube_pool.py``. Batched matmul: ``ascend_cube_batch.py``; the split-K knobs
(atomic adds in float32, a float workspace summed by the vector cores otherwise): ``ascend_cube_splitk.py``.
This module analyses the task (``CubeOp``), sizes the tiles (``geometry``) and writes the host; the kernel
class, its MIX epilogue and entry are written by ``ascend_cube_kernel.py``.

A float32 B given as K x N goes into L1 as 16-row bands (Zz, 16 x 8 fractals) and into L0B through
``LoadDataWithTranspose`` (each 16 x 16 square of two neighbouring fractals becomes two Zn fractals).

What is refused, by name: N not a multiple of 16 (Fixpipe writes 16-column blocks),
batched gemm, two matmuls in one task, more than one kernel after the matmul (e.g. a whole-tensor reduction
then its use), and what the vector template refuses in the row program (reductions over other dims ...).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evokernel.generators.template.analysis import AnalysisError, Graph
from evokernel.generators.template.lower import Plan

L1_BYTES, L0A_BYTES, L0B_BYTES, L0C_BYTES = 512 * 1024, 64 * 1024, 64 * 1024, 128 * 1024
CUBE_CORES = 20  # GetCoreNumAic() of the emulated 910B; the host asks the platform, this is for geometry


@dataclass
class CubeExt:
    name: str    # OpDef / kernel argument name
    pyexpr: str  # how ModelNew passes it
    root: int


@dataclass
class CubeOp:
    graph: Graph
    snake: str
    M: int
    K: int
    N: int
    trans_b: bool
    half: bool
    exts: list[CubeExt]  # a, b, then the bias when there is one
    bias: bool
    relu: bool
    out_shape: tuple[int, ...]
    init_source: str = ""
    epilogue: list = field(default_factory=list)  # elementwise steps on the vector cores (a MIX kernel)
    family: str = "ascend_cube"
    op_class: str = "matmul"
    reduces: list[int] = field(default_factory=list)
    batch: int = 1  # batch entries (a batched matmul: ascend_cube_batch.py)
    row_op: Any = None  # a row program on the vector cores over whole rows of C (ascend_cube_rows.py)

    @property
    def rows(self) -> int:
        return self.M

    @property
    def op_type(self) -> str:
        return "".join(p.capitalize() for p in (self.snake + "_custom").split("_") if p)

    @property
    def kernel_name(self) -> str:
        return self.snake + "_custom"

    @property
    def esize(self) -> int:
        return 2 if self.half else 4

    @property
    def mix(self) -> bool:
        return bool(self.epilogue) or self.row_op is not None


def kernel_operands(g: Graph, ids, root_of, refusal: str) -> list[tuple[str, str, int]]:
    """(kernel argument name, how ModelNew passes it, graph root) of each operand node in `ids` (None skipped):
    inputs and parameters only, float in the graph, names made unique C identifiers that avoid the kernel's own
    arguments (out, workspace, tiling); anything else is refused with `refusal`."""
    from evokernel.generators.template import ascend_codegen as AC

    out: list[tuple[str, str, int]] = []
    used: set[str] = set()
    for nid in ids:
        if nid is None:
            continue
        root = root_of(nid)
        rnode = g.nodes[root]
        if rnode.op not in ("input", "param") or g.nodes[nid].dtype != "f32":
            raise AnalysisError(f"{g.nodes[nid].origin}: {refusal}")
        if rnode.op == "input":
            name, pyexpr = rnode.attrs["name"], rnode.attrs["name"]
        else:
            name, pyexpr = rnode.attrs["path"].replace(".", "_"), "self." + rnode.attrs["path"]
        name = AC._ident(name)
        while name in used or name in ("out", "workspace", "tiling"):
            name += "_"
        used.add(name)
        out.append((name, pyexpr, root))
    return out

def prepare(plan: Plan, task_name: str, task_source: str = "") -> CubeOp:
    """A gemm stage as one cube operator, or AnalysisError naming what the template cannot do."""
    from evokernel.generators.template import ascend_codegen as AC

    g = plan.graph
    st = plan.stages[0]
    gemm = g.nodes[st.anchor]
    a_id, b_id = gemm.args[0], gemm.args[1]
    root_of = lambda nid: plan.aliases.get(nid, nid)  # noqa: E731
    batch = int(gemm.attrs.get("batch", 1))
    if batch != 1 and (len(gemm.shape) < 3 or len(g.nodes[a_id].shape) != len(gemm.shape)
                       or len(g.nodes[b_id].shape) != len(gemm.shape)):
        raise AnalysisError("a batched matmul whose operands do not share the batch dims is not templated")
    if batch == 1 and len(gemm.shape) != 2:
        raise AnalysisError("a matmul of a (..., M, K) input by a 2-D B (leading dims folded into M) is not "
                            "templated (2-D a @ b and batched a @ b with the same batch dims are)")
    M, N, K = int(gemm.attrs["m"]), int(gemm.attrs["n"]), int(gemm.attrs["k"])
    trans_b = bool(gemm.attrs.get("trans_b"))
    half = bool(getattr(g, "half", False))
    if N % 16:
        raise AnalysisError(f"N = {N} is not a multiple of 16: the Fixpipe writes the output in 16-column blocks")
    # epilogue: [add a per-column (N,) operand: the cube's bias table], then a chain of elementwise functions
    # and scalar operations; a lone ReLU is the Fixpipe's, anything else runs on the vector cores (MIX); what
    # is more than such a chain (C read twice, full-tensor operands, row reductions) is a row program
    from evokernel.generators.template.analysis import Const

    gemms = [s for s in plan.stages if s.family in ("gemm", "gemv")]
    if len(gemms) > 1:
        raise AnalysisError(f"the task has {len(gemms)} matmuls: the cube template writes one matmul and its "
                            "epilogue (one kernel)")
    rest = plan.stages[1:]
    from evokernel.generators.template import ascend_cube_norms as NORMS

    NORMS.check_rest(plan)  # one row region, or regions around one GroupNorm / training-mode BatchNorm
    bias_id, chain = None, []
    cur = st.anchor
    nodes = list(st.nodes)
    if nodes:
        n = g.nodes[nodes[0]]
        if n.op == "binary" and n.attrs.get("fn") == "add" and all(isinstance(a, int) for a in n.args):
            other = next(a for a in n.args if a != cur)
            if tuple(g.nodes[other].shape) in ((N,), (1, N)) and g.nodes[root_of(other)].op in ("input", "param"):
                bias_id, cur = other, nodes.pop(0)
    cut = cur
    row_region: list[int] | None = None
    if rest:
        row_region = nodes + NORMS.rest_nodes(rest)
    for nid in nodes if row_region is None else []:
        n = g.nodes[nid]
        if n.op == "unary" and cur in n.args:
            AC.unary_code(n.attrs["fn"], n.attrs, "d", "x", ["t0", "t1"], "n")  # raises for an unknown function
            chain.append(("unary", n.attrs["fn"], dict(n.attrs)))
            cur = nid
        elif n.op == "binary" and cur in n.args and n.attrs.get("fn") in AC.BIN_OP and \
                any(isinstance(a, Const) for a in n.args):
            const = next(a for a in n.args if isinstance(a, Const))
            chain.append(("binary", n.attrs["fn"], float(const.value), n.args[0] is const))
            cur = nid
        else:  # an operand beyond constants: the row program takes it
            row_region = list(nodes)
            break
    row_op = None
    if row_region is not None:
        from evokernel.generators.template import ascend_cube_rows as ROWS

        row_op = ROWS.prepare_rows(plan, cut, row_region, task_name, task_source)
        chain, cur = [], row_region[-1]
    if batch != 1 and (row_op is not None or (chain and chain != [("unary", "relu", {"fn": "relu"})])):
        raise AnalysisError("a vector epilogue after a batched matmul is not templated (bias and ReLU are: the "
                            "bias table and the Fixpipe)")
    relu = chain == [("unary", "relu", {"fn": "relu"})] or (len(chain) == 1 and chain[0][:2] == ("unary", "relu"))
    epilogue = [] if relu else chain
    if root_of(g.output) != cur:
        raise AnalysisError("the output is not produced by the matmul kernel")
    exts = [CubeExt(*o) for o in kernel_operands(g, (a_id, b_id, bias_id), root_of,
                                                 "matmul operands must be inputs or parameters")]
    used = {e.name for e in exts}
    init_source = g.init_source if (not task_source or AC.own_init(task_source)) else ""
    if row_op is not None:  # the row program's own operands (residuals, norm weights) follow the cube's
        for e in list(row_op.exts) + list(getattr(row_op, "phase_exts", [])):  # (+ what a phase before it reads)
            if e.nid != cut and e.pyexpr and all(x.root != e.root for x in exts):  # (no pyexpr: computed)
                name = e.name
                while name in used or name in ("out", "workspace", "tiling", "slot"):
                    name += "_"
                used.add(name)
                e.name = name
                exts.append(CubeExt(name, e.pyexpr, e.root))
    return CubeOp(g, AC._snake(task_name), M, K, N, trans_b, half, exts, bias_id is not None, relu,
                  tuple(g.nodes[g.output].shape), init_source, epilogue=epilogue, row_op=row_op, batch=batch)


def geometry(op: CubeOp, knobs: dict[str, Any], cores: int = CUBE_CORES) -> dict[str, int] | None:
    """The host tiling for these shapes, or None when the buffers do not fit the cube core's memories."""
    bm, bn, bk, nb = (int(knobs[k]) for k in ("base_m", "base_n", "base_k", "buffer_num"))
    es = op.esize
    a_tile, b_tile = bm * bk * es, bk * bn * es
    bias_l1 = bn * es if op.bias else 0
    if (a_tile * nb > L0A_BYTES or b_tile * nb > L0B_BYTES or bm * bn * 4 > L0C_BYTES
            or (a_tile + b_tile) * nb + bias_l1 > L1_BYTES or (op.bias and bn * 4 > 1024)):
        return None
    tiles_m, tiles_n = -(-op.M // bm), -(-op.N // bn)
    tiles = op.batch * tiles_m * tiles_n
    split = int(knobs.get("split_k", 1))
    if split > 1:
        from evokernel.generators.template import ascend_cube_splitk as SPLITK

        if SPLITK.refusal(op, knobs) is not None:
            return None
        tiles *= SPLITK.k_chunk(op.K, bk, split)[1]
    if knobs.get("a_resident"):  # A's row block in L1 for all its N tiles (ascend_cube_resident.py)
        from evokernel.generators.template import ascend_cube_resident as RES

        if RES.refusal(op, knobs) is not None:
            return None
    geo = {"baseM": bm, "baseN": bn, "baseK": bk, "tilesM": tiles_m, "tilesN": tiles_n,
           "blockDim": min(tiles, cores), "kSteps": -(-op.K // bk)}
    if op.row_op is not None:  # a block's work is a row block (all N): the vector cores' row program needs it
        from evokernel.generators.template import ascend_cube_rows as ROWS

        rg = ROWS.row_geometry(op.row_op, knobs, bm)
        if rg is None or not ROWS.split_ok(op.row_op, knobs):
            return None
        if knobs.get("row_split", "block") == "block":
            geo.update(blockDim=min(tiles_m, cores))
        geo.update(rowSplit=str(knobs.get("row_split", "block")), rowTileRows=int(rg[3]["tile_rows"]), rowChunk=int(rg[3]["chunk"]))
    return geo


def render_project(op: CubeOp, knobs: dict[str, Any]) -> tuple[dict[str, str], None, dict[str, int] | None]:
    """The six strings of the operator project and the host's geometry (None: infeasible)."""
    geo = geometry(op, knobs)
    T = "half" if op.half else "float"
    ge_dt = "ge::DT_FLOAT16" if op.half else "ge::DT_FLOAT"
    a, b = op.exts[0].name, op.exts[1].name
    tiling_cls = f"{op.op_type}TilingData"
    fields = ["M", "N", "K", "baseM", "baseN", "baseK", "tilesM", "tilesN"]
    rg = None
    if op.row_op is not None:
        from evokernel.generators.template import ascend_cube_rows as ROWS

        rg = ROWS.row_geometry(op.row_op, knobs, int(knobs["base_m"]))
        if rg is None:
            raise AnalysisError("no tile of the row program after the matmul fits the vector core's Unified Buffer")
        fields += ROWS.ROW_FIELDS
    if op.batch != 1:
        fields.append("batch")
    split = int(knobs.get("split_k", 1)) if geo is not None else 1
    if split > 1:
        from evokernel.generators.template import ascend_cube_splitk as SPLITK

        fields += SPLITK.tiling_fields(op, knobs)
    tiling = "\n".join(['#include "register/tilingdata_base.h"', "", "namespace optiling {",
                        f"BEGIN_TILING_DATA_DEF({tiling_cls})"] +
                       [f"  TILING_DATA_FIELD_DEF(uint32_t, {f});" for f in fields] +
                       ["END_TILING_DATA_DEF;", "", f"REGISTER_TILING_DATA_CLASS({op.op_type}, {tiling_cls})", "}"])
    b_rows, b_cols = ("1", "0") if op.trans_b else ("0", "1")  # dims of b holding K and N
    host = f"""#include "{op.kernel_name}_tiling.h"
#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"

namespace optiling {{
constexpr uint32_t BASE_M = {int(knobs["base_m"])};
constexpr uint32_t BASE_N = {int(knobs["base_n"])};
constexpr uint32_t BASE_K = {int(knobs["base_k"])};
{_row_consts(op, rg)}
static ge::graphStatus TilingFunc(gert::TilingContext* context)
{{
    const gert::Shape& a = context->GetInputShape(0)->GetStorageShape();
    const gert::Shape& b = context->GetInputShape(1)->GetStorageShape();
    if (a.GetDimNum() != 2 || b.GetDimNum() != 2 || a.GetDim(1) != b.GetDim({b_rows})) {{
        return ge::GRAPH_FAILED;
    }}
    uint32_t M = a.GetDim(0), K = a.GetDim(1), N = b.GetDim({b_cols});
    if (N % 16 != 0) {{
        return ge::GRAPH_FAILED;  // Fixpipe moves whole 16-column blocks
    }}
{_row_check(rg)}    auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
    uint32_t cubeCores = platform.GetCoreNumAic();
    uint32_t tilesM = (M + BASE_M - 1) / BASE_M;
    uint32_t tilesN = (N + BASE_N - 1) / BASE_N;
    uint32_t tiles = {"tilesM;  // a block's work: a row block of all N (the vector cores reduce whole rows)" if rg and knobs.get("row_split", "block") == "block" else "tilesM * tilesN;"}
    {tiling_cls} tiling;
""" + "".join(f"    tiling.set_{f}({v});\n" for f, v in
              (("M", "M"), ("N", "N"), ("K", "K"), ("baseM", "BASE_M"), ("baseN", "BASE_N"), ("baseK", "BASE_K"),
               ("tilesM", "tilesM"), ("tilesN", "tilesN"))) + _row_sets(rg) + f"""    context->SetBlockDim(tiles < cubeCores ? tiles : cubeCores);
    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
    size_t* workspace = context->GetWorkspaceSizes(1);
    workspace[0] = {_workspace(op, rg is not None, str(knobs.get("row_split", "block")))};
    return ge::GRAPH_SUCCESS;
}}
}}

namespace ge {{
static ge::graphStatus InferShape(gert::InferShapeContext* context)
{{
    gert::Shape* y = context->GetOutputShape(0);
{_infer(op, b_cols)}
    return GRAPH_SUCCESS;
}}
}}

namespace ops {{
class {op.op_type} : public OpDef {{
public:
    explicit {op.op_type}(const char* name) : OpDef(name)
    {{
""" + "".join(f'        this->Input("{e.name}").ParamType(REQUIRED).DataType({{{ge_dt}}}).Format({{ge::FORMAT_ND}});\n'
              for e in op.exts) + f"""        this->Output("out").ParamType(REQUIRED).DataType({{{ge_dt}}}).Format({{ge::FORMAT_ND}});
        this->SetInferShape(ge::InferShape);
        this->AICore().SetTiling(optiling::TilingFunc);
        this->AICore().AddConfig("ascend910b");
    }}
}};
OP_ADD({op.op_type});
}}"""
    from evokernel.generators.template.ascend_cube_kernel import kernel as cube_kernel

    kernel = cube_kernel(op, knobs, T, tiling_cls)
    ty = "float16" if op.half else "float"
    import json

    desc = [{"op": op.op_type, "language": "cpp",
             "input_desc": [{"name": e.name, "param_type": "required", "format": ["ND"], "type": [ty]}
                            for e in op.exts],
             "output_desc": [{"name": "out", "param_type": "required", "format": ["ND"], "type": [ty]}]}]
    n_expr = f"{b}.size({b_cols})"
    params = ", ".join(f"const at::Tensor& {e.name}" for e in op.exts)
    args = ", ".join(e.name for e in op.exts)
    from evokernel.generators.template import ascend_codegen as AC

    alloc = f"at::Tensor result = at::empty({{{a}.size(0), {n_expr}}}, {a}.options());"
    if rg is not None:
        alloc = f"at::Tensor result = at::empty({{{', '.join(str(d) for d in op.out_shape)}}}, {a}.options());"
    if op.batch != 1:
        from evokernel.generators.template import ascend_cube_batch as BATCH

        alloc = BATCH.batch_alloc(op, a, b, b_cols)
        host = BATCH.batch_host(op, host, b_rows, b_cols)
    if split > 1:
        from evokernel.generators.template import ascend_cube_splitk as SPLITK

        if SPLITK.mode(op, knobs) == "atomic":
            alloc = alloc.replace("at::empty(", "at::zeros(") + "  // split-K: the K ranges add into it"
        host = SPLITK.splitk_host(op, knobs, host, split)
    bind = AC.binding_source(op.kernel_name, op.op_type, params, alloc, args, "matmul on the cube unit")
    model = AC.model_source(op.init_source, op.graph.input_names, op.kernel_name, ", ".join(e.pyexpr for e in op.exts))
    parts = {"project_json_src": json.dumps(desc, indent=4), "host_tiling_src": tiling, "host_operator_src": host,
             "kernel_src": kernel, "python_bind_src": bind, "model_src": model}
    return parts, None, geo


def _row_consts(op: CubeOp, rg: Any) -> str:
    if rg is None:
        return ""
    from evokernel.generators.template import ascend_cube_rows as ROWS

    return ROWS.row_constants(rg[3], 16 if op.half else 8, op.N)


def _row_check(rg: Any) -> str:
    if rg is None:
        return ""
    return ("    if (N != ROW_N) {\n        return ge::GRAPH_FAILED;  // the row program's tiles were sized for "
            "N = ROW_N\n    }\n")


def _row_sets(rg: Any) -> str:
    if rg is None:
        return ""
    from evokernel.generators.template import ascend_cube_rows as ROWS

    return ROWS.host_row_fields()


def _workspace(op: CubeOp, rows: bool, split: str = "block") -> str:
    if rows and split == "all":  # the whole of C (the task's dtype)
        from evokernel.generators.template import ascend_cube_cols as COLS  # (+ a BatchNorm's statistics)

        return f"static_cast<size_t>(M) * N * sizeof({'half' if op.half else 'float'}){COLS.workspace_extra(op)};  // MIX: C, whole"
    if rows:  # a row block of C (all N, the task's dtype) per AI core
        return ("static_cast<size_t>(tiles < cubeCores ? tiles : cubeCores) * BASE_M * N * "
                f"sizeof({'half' if op.half else 'float'});  // MIX: one row block of C per AI core")
    if op.mix:
        return ("static_cast<size_t>(tiles < cubeCores ? tiles : cubeCores) * BASE_M * BASE_N * sizeof(float);"
                "  // MIX: one float tile per AI core")
    return "0;"


def _infer(op: CubeOp, b_cols: str) -> str:
    if op.row_op is None:
        return ("    y->SetDimNum(2);\n    y->SetDim(0, context->GetInputShape(0)->GetDim(0));\n"
                f"    y->SetDim(1, context->GetInputShape(1)->GetDim({b_cols}));")
    dims = [f"    y->SetDimNum({len(op.out_shape)});"]
    for k, d in enumerate(op.out_shape):
        dims.append(f"    y->SetDim({k}, " + ("context->GetInputShape(0)->GetDim(0)" if k == 0 else str(d)) + ");")
    return "\n".join(dims)
