"""GroupNorm with small groups after a matmul on the cube unit: a normalisation phase on the vector cores
before the row program (``ascend/cube/norms.py`` runs the row program once per group instead; with groups of
fewer than ``PHASE_MAX_S`` = 8 columns every instruction there works on a handful of values per row).

Once C is whole in the workspace (``row_split = all``), each vector core normalises its share of the M rows
into Z (M x N floats after C in the workspace), a tile of whole rows at a time: the elementwise chain between
the matmul and the norm (``ascend_cube_cols.chain_code``), then per group the sum of its S values as S
``Gather``s (byte offsets of every group's first value in the tile, ``srcBaseAddr = 4 t``) added up, the means
expanded back to every column by one more ``Gather`` (offsets ``column -> its group``), the centred values,
their squares summed the same way (the biased variance), ``1 / sqrt(var + eps)`` expanded and multiplied in,
the affine weight and bias per column; Z written with ``DataCopy``. The same core then runs the row program on
its rows of Z for what follows the norm (an identity scale when nothing does), as the pooling phase does
(``ascend/cube/pool.py``). The offsets are written by the scalar unit once per core.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evokernel.generators.template.ascend import names, rowop
from evokernel.generators.template.ascend.cube import cols as COLS
from evokernel.generators.template.ascend.cube import norms as NORMS
from evokernel.generators.template.front.graph import AnalysisError, Const, Graph, Node, Ref
from evokernel.generators.template.front.lower import Plan
from evokernel.generators.template.front.graph import attr_expr

PHASE_MAX_S = 8  # groups narrower than this (values per group) are normalised by the phase
UB_BUDGET = 160 * 1024


@dataclass
class GnPhase:
    cut: int  # C (the matmul's output)
    pre: list[int]  # the elementwise chain from C to the norm's input
    src: int  # the norm's input
    groups: int
    eps: float
    weight: int | None
    bias: int | None
    exts: list[Any] = field(default_factory=list)  # the operands only the phase reads (rowop.Ext)


def rewrite(plan: Plan, cut: int, region: list[int]) -> tuple[Plan, int, list[int], GnPhase | None]:
    """The region after a small-group GroupNorm: the norm's output becomes the row program's input (the phase
    computes it); unchanged (and None) otherwise."""
    g = plan.graph
    norms = [i for i in region if g.nodes[i].op == "group_norm"]
    if len(norms) != 1 or any(g.nodes[i].op == "batch_norm" for i in region) or g.half:
        return plan, cut, region, None
    nid = norms[0]
    norm = g.nodes[nid]
    M, N = (int(d) for d in g.nodes[cut].shape)
    G = int(norm.attrs["groups"])
    if tuple(norm.shape) != (M, N) or G < 1 or N % G or N // G >= PHASE_MAX_S:
        return plan, cut, region, None
    k = region.index(nid)
    phase = GnPhase(cut, list(region[:k]), norm.args[0], G, float(norm.attrs["eps"]),
                    norm.args[1] if norm.attrs.get("affine") else None,
                    norm.args[2] if norm.attrs.get("affine") else None)
    NORMS._check_bn_chain(g, cut, phase)  # type: ignore[arg-type]  # (pre, src): elementwise, per-column operands
    for a in [x for i in phase.pre for x in g.nodes[i].args] + [phase.weight, phase.bias]:
        if isinstance(a, int) and a != cut and a not in phase.pre and plan.aliases.get(a, a) != a:
            raise AnalysisError(f"{g.nodes[a].origin}: a view of an operand before a GroupNorm")
    g2 = Graph(nodes=[Node(n.id, n.op, list(n.args), dict(n.attrs), tuple(n.shape), n.dtype, n.origin)
                      for n in g.nodes], input_names=list(g.input_names), output=g.output,
               init_source=g.init_source, init_params=list(g.init_params), half=g.half)
    post = list(region[k + 1:])
    if not post:  # nothing after the norm: the row program copies Z (an identity scale)
        one = int(g2.add("binary", [Ref(nid), Const(1.0)], {"fn": "mul"}, (M, N), origin=norm.origin))
        post = [one]
        if g.output == nid:
            g2.output = Ref(one)
    return Plan(g2, [], dict(plan.aliases)), nid, post, phase


def phase_exts(phase: GnPhase, g: Graph) -> list[Any]:
    """The phase's own operands (chain operands, the norm's weight and bias) as kernel operands."""
    out, seen = [], set()
    ids = [a for i in phase.pre for a in g.nodes[i].args if isinstance(a, int)] + \
        [a for a in (phase.weight, phase.bias) if a is not None]
    for a in ids:
        if a == phase.cut or a in phase.pre or a in seen:
            continue
        seen.add(a)
        r = g.nodes[a]
        if r.op == "input":
            name, py = r.attrs["name"], r.attrs["name"]
        elif r.op == "param":
            name, py = r.attrs["path"].replace(".", "_"), attr_expr("self", r.attrs["path"])
        else:
            raise AnalysisError(f"{r.origin}: an operand of the GroupNorm that is not an input or a parameter")
        out.append(rowop.Ext(a, a, names._ident(name), "C", py, tuple(r.shape)))
    return out


def phase_class(op: Any, phase: GnPhase, tiling_cls: str) -> str:

    g = op.row_op.graph
    by_root = {e.root: e.name for e in op.exts}
    chain, cols, nbuf = COLS.chain_code(g, phase.cut, phase.pre, phase.src, by_root)
    N, G = op.N, phase.groups
    S, GP = N // G, (G + 7) // 8 * 8
    affine = phase.weight is not None
    per_row = 4 * N * (1 + nbuf + 2 + 1 + 1) + 4 * GP * 4  # x, chain, s0/s1, eoff, out; sums, tmp, goff, stats
    fixed = 4 * N * (len(cols) + 2)
    rows = max(1, min(op.M, 255, (UB_BUDGET - fixed) // per_row))
    if fixed + per_row > UB_BUDGET:
        raise AnalysisError(f"a row of {N} values does not fit the Unified Buffer for the GroupNorm phase")
    cls = f"Kernel{op.op_type}GroupNorm"
    args = "".join(f"GM_ADDR {name}, " for _, name in cols)
    wb = f"GM_ADDR {by_root[phase.weight]}, GM_ADDR {by_root[phase.bias]}, " if affine else ""
    ind = lambda ls, k: "\n".join(" " * k + ln for ln in ls)  # noqa: E731
    col_gm = "".join(f"        gm_col{k}.SetGlobalBuffer((__gm__ float*){name}, N);\n" for k, (_, name) in enumerate(cols))
    loads = [(f"col{k}", f"gm_col{k}") for k in range(len(cols))] + ([("gw", "gm_w"), ("gb", "gm_b")] if affine else [])
    col_bufs = "".join(f"        pipe.InitBuffer(b_{v}, N * sizeof(float));\n" for v, _ in loads)
    col_get = "".join(f"        {v} = b_{v}.Get<float>();\n        DataCopy({v}, {gm}, N);\n" for v, gm in loads)
    tile_bufs = "".join(f"        pipe.InitBuffer(b_v{k}, GN_ROWS * N * sizeof(float));\n        v{k} = b_v{k}.Get<float>();\n"
                        for k in range(nbuf))
    wb_gm = (f"        gm_w.SetGlobalBuffer((__gm__ float*){by_root[phase.weight]}, N);\n"
             f"        gm_b.SetGlobalBuffer((__gm__ float*){by_root[phase.bias]}, N);\n") if affine else ""
    aff = ("""            for (uint32_t r = 0; r < rr; ++r) {
                Mul(s1[r * N], s0[r * N], gw, N);
                Add(o[r * N], s1[r * N], gb, N);
            }""" if affine else "            Muls(o, s0, 1.0f, n);")
    locals_ = ["s0", "s1", "gs", "gt", "gm", "o_"] + [f"v{k}" for k in range(nbuf)] + [v for v, _ in loads]
    bufs = ["b_s0", "b_s1", "b_gs", "b_gt", "b_gm"] + [f"b_v{k}" for k in range(nbuf)] + [f"b_{v}" for v, _ in loads]
    gms = ["gm_c", "gm_z"] + [f"gm_col{k}" for k in range(len(cols))] + (["gm_w", "gm_b"] if affine else [])
    return (_phase_head(S, G, N, GP, rows, cls, args, wb, tiling_cls, col_gm, wb_gm, col_bufs, tile_bufs)
            + _phase_run(aff, loads, ind, chain, names, S, phase, col_get)
            + _phase_tail(gms, locals_, bufs))


def _phase_head(S: Any, G: Any, N: Any, GP: Any, rows: Any, cls: Any, args: Any, wb: Any, tiling_cls: Any, col_gm:
                Any, wb_gm: Any, col_bufs: Any, tile_bufs: Any) -> str:
    """The class and its Init."""
    return f"""constexpr uint32_t GN_S = {S};  // values per group (the GroupNorm's {G} groups of the {N} features)
constexpr uint32_t GN_GP = {GP};  // groups per row in UB, rounded to 8
constexpr uint32_t GN_ROWS = {rows};  // rows of C per tile

class {cls} {{
public:
    __aicore__ inline {cls}() {{}}
    __aicore__ inline void Init(GM_ADDR cWs, {args}{wb}GM_ADDR zOut, const {tiling_cls}& tl)
    {{
        M = tl.M;
        N = tl.N;
        gm_c.SetGlobalBuffer((__gm__ float*)cWs, static_cast<uint64_t>(M) * N);
        gm_z.SetGlobalBuffer((__gm__ float*)zOut, static_cast<uint64_t>(M) * N);
{col_gm}{wb_gm}        pipe.InitBuffer(q_x, 1, GN_ROWS * N * sizeof(float));
        pipe.InitBuffer(q_o, 1, GN_ROWS * N * sizeof(float));
        pipe.InitBuffer(b_s0, GN_ROWS * N * sizeof(float));
        pipe.InitBuffer(b_s1, GN_ROWS * N * sizeof(float));
        pipe.InitBuffer(b_eoff, GN_ROWS * N * sizeof(uint32_t));
        pipe.InitBuffer(b_goff, GN_ROWS * GN_GP * sizeof(uint32_t));
        pipe.InitBuffer(b_gs, GN_ROWS * GN_GP * sizeof(float));
        pipe.InitBuffer(b_gt, GN_ROWS * GN_GP * sizeof(float));
        pipe.InitBuffer(b_gm, GN_ROWS * GN_GP * sizeof(float));
{col_bufs}        s0 = b_s0.Get<float>();
        s1 = b_s1.Get<float>();
        gs = b_gs.Get<float>();
        gt = b_gt.Get<float>();
        gm = b_gm.Get<float>();
        eoff = b_eoff.Get<uint32_t>();
        goff = b_goff.Get<uint32_t>();
{tile_bufs}    }}
"""


def _phase_run(aff: Any, loads: Any, ind: Any, chain: Any, names: Any, S: Any, phase: Any, col_get: Any) -> str:
    """Run: a tile of rows normalised per group into Z."""
    return f"""    __aicore__ inline void Run(uint32_t first, uint32_t rows)
    {{
{ind(["// the per-column operands, once", *col_get.rstrip().splitlines()], 0) if loads else ""}
        // byte offsets: every group's first value in a tile (padding lanes: the row's first value), and each
        // column's group statistic
        uint32_t tileRows = rows < GN_ROWS ? rows : GN_ROWS;
        for (uint32_t r = 0; r < tileRows; ++r) {{
            for (uint32_t j = 0; j < GN_GP; ++j) {{
                goff.SetValue(r * GN_GP + j, (r * N + (j < N / GN_S ? j * GN_S : 0)) * static_cast<uint32_t>(sizeof(float)));
            }}
            for (uint32_t j = 0; j < N; ++j) {{
                eoff.SetValue(r * N + j, (r * GN_GP + j / GN_S) * static_cast<uint32_t>(sizeof(float)));
            }}
        }}
        event_t evSV = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::S_V));
        SetFlag<HardEvent::S_V>(evSV);
        WaitFlag<HardEvent::S_V>(evSV);
        event_t evMV = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::MTE2_V));
        SetFlag<HardEvent::MTE2_V>(evMV);
        WaitFlag<HardEvent::MTE2_V>(evMV);
        for (uint32_t r0 = first; r0 < first + rows; r0 += GN_ROWS) {{
            uint32_t rr = first + rows - r0 < GN_ROWS ? first + rows - r0 : GN_ROWS;
            uint32_t n = rr * N, w = N;
            uint32_t ng = rr * GN_GP;
            (void)w;
            LocalTensor<float> x = q_x.AllocTensor<float>();
            DataCopy(x, gm_c[static_cast<uint64_t>(r0) * N], n);
            q_x.EnQue(x);
            x = q_x.DeQue<float>();
{ind(chain, 12)}
            GroupSums(y, ng);  // gs: each group's sum
            Muls(gm, gs, {names.flit(1.0 / S)}, ng);  // the means
            Gather(s1, gm, eoff, 0, n);  // each column's group mean
            Sub(s0, y, s1, n);  // centred
            Mul(s1, s0, s0, n);
            GroupSums(s1, ng);
            Muls(gs, gs, {names.flit(1.0 / S)}, ng);  // the biased variances
            Adds(gs, gs, {names.flit(phase.eps)}, ng);
            Sqrt(gs, gs, ng);
            Duplicate(gt, 1.0f, ng);
            Div(gm, gt, gs, ng);  // 1 / sqrt(var + eps)
            Gather(s1, gm, eoff, 0, n);
            Mul(s0, s0, s1, n);
            LocalTensor<float> o = q_o.AllocTensor<float>();
{aff}
            q_o.EnQue(o);
            o = q_o.DeQue<float>();
            DataCopy(gm_z[static_cast<uint64_t>(r0) * N], o, n);
            q_o.FreeTensor(o);
            q_x.FreeTensor(x);
        }}
    }}

"""


def _phase_tail(gms: Any, locals_: Any, bufs: Any) -> str:
    """The group sums, the members."""
    return f"""private:
    __aicore__ inline void GroupSums(const LocalTensor<float>& src, uint32_t ng)
    {{
        Gather(gs, src, goff, 0, ng);
        for (uint32_t t = 1; t < GN_S; ++t) {{  // the group's t-th values
            Gather(gt, src, goff, t * static_cast<uint32_t>(sizeof(float)), ng);
            Add(gs, gs, gt, ng);
        }}
    }}

    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q_x;
    TQue<QuePosition::VECOUT, 1> q_o;
    TBuf<TPosition::VECCALC> {", ".join(bufs + ["b_eoff", "b_goff"])};
    GlobalTensor<float> {", ".join(gms)};
    LocalTensor<float> {", ".join(locals_)};
    LocalTensor<uint32_t> eoff, goff;
    uint32_t M = 0, N = 0;
}};
"""



def vector_branch(op: Any, phase: GnPhase, cls: str, init_args: str, names: list[str]) -> str:
    by_root = {e.root: e.name for e in op.exts}

    _, cols, _ = COLS.chain_code(op.row_op.graph, phase.cut, phase.pre, phase.src, by_root)
    args = "".join(f"{name}, " for _, name in cols)
    if phase.weight is not None:
        args += f"{by_root[phase.weight]}, {by_root[phase.bias]}, "
    return f"""        // the vector cores: once C is whole, each group-normalises an equal share of its rows into Z (after C
        // in the workspace), then runs the row program on the same rows of Z
        SyncAll<false>();
        uint32_t M = tiling_data.M, N = tiling_data.N;
        uint32_t cores = GetBlockNum() * GetTaskRation(), idx = GetBlockIdx();
        uint32_t share = M / cores, extra = M % cores;
        uint32_t first = idx * share + (idx < extra ? idx : extra);
        uint32_t rows = share + (idx < extra ? 1 : 0);
        if (rows > 0) {{
            GM_ADDR normed = workspace + static_cast<uint64_t>(M) * N * sizeof(float);
            {{
                Kernel{op.op_type}GroupNorm gn;
                gn.Init(workspace, {args}normed, tiling_data);
                gn.Run(first, rows);
            }}
            PipeBarrier<PIPE_ALL>();  // this core's normalised rows are in GM before its row program reads them
            {cls}Rows op;
            op.Init({init_args}, out, tiling_data);
            GM_ADDR slot = normed + static_cast<uint64_t>(first) * N * sizeof(float);
            op.Rows({", ".join(names)}, out, first, rows);
        }}
"""
