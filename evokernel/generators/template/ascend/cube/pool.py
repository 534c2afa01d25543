"""Pooling along the features after a matmul on the cube unit (the ``ascend_cube`` family): KernelBench's
``MaxPool1d``/``AvgPool1d`` of ``linear(x).unsqueeze(1)`` (kernel k, stride k, no padding or dilation), then
anything the row program runs on the pooled rows.

Once C is whole in the workspace (``row_split = all``), each vector core pools its share of the M rows into
``P`` (M x N/k floats after C in the workspace): a tile of whole rows of C in UB (``DataCopy``), then per
window offset ``t < k`` one ``Gather`` of the elements ``j * k + t`` of every row (byte offsets built once by
the scalar unit, ``srcBaseAddr = 4 t``) combined by ``Max`` or ``Add`` (then ``Muls`` by 1/k), the pooled rows
written with ``DataCopyPad``. The same core then runs the row program (``ascend/cube/rows.py``) on the same
rows of P, so no barrier between cores is needed (a ``PipeBarrier<PIPE_ALL>`` orders its own GM write before
its reads). The region after the pooling is rewritten so the row program's input ``mm`` is P, and a per-row
result viewed without its unit dim (``sum(dim=1)`` without keepdim, then a scale: KernelBench 55) stays a
per-row ``(M, 1)`` value inside the region. Float32 only; the row-block hand-over has no geometry.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evokernel.generators.template.front.graph import AnalysisError, Graph, Node, Ref
from evokernel.generators.template.front.lower import Plan

UB_BUDGET = 160 * 1024


@dataclass
class PoolInfo:
    kind: str  # max or avg
    k: int


def rewrite(plan: Plan, cut: int, region: list[int]) -> tuple[Plan, int, list[int], PoolInfo | None]:
    """The region with its leading pooling taken out: the pooled tensor (the squeeze after it) becomes the row
    program's input; unchanged (and None) without a pooling."""
    g = plan.graph
    pools = [i for i in region if g.nodes[i].op == "poolnd"]
    if not pools:
        return plan, cut, region, None
    pool = g.nodes[pools[0]]
    if len(pools) > 1 or region[0] != pool.id:
        raise AnalysisError(f"{pool.origin}: a pooling after the matmul that is not the first op after it (one "
                            "pooling right after the matmul is templated)")
    a = pool.attrs
    M, N = (int(d) for d in g.nodes[cut].shape)
    k = int(a["k"][2])
    src = pool.args[0]
    if (a.get("adaptive") or tuple(a["k"][:2]) != (1, 1) or tuple(a["s"]) != (1, 1, k) or any(a["p"])
            or tuple(a["d"]) != (1, 1, 1) or plan.aliases.get(src, src) != cut
            or tuple(g.nodes[src].shape) != (M, 1, N) or tuple(pool.shape) != (M, 1, N // k) or k < 1):
        raise AnalysisError(f"{pool.origin}: only a 1-D pooling of the matmul's (M, 1, N) output with stride = kernel "
                            "and no padding or dilation is templated after the matmul")
    if g.half:
        raise AnalysisError(f"{pool.origin}: a pooling after a float16 matmul is not templated")
    NP = N // k
    users = g.users()
    sq = [u for u in users[pool.id]]
    if len(sq) != 1 or g.nodes[sq[0]].op != "reshape" or tuple(g.nodes[sq[0]].shape) != (M, NP):
        raise AnalysisError(f"{pool.origin}: the pooled (M, 1, N/k) tensor is used other than as (M, N/k)")
    q = sq[0]
    g2 = Graph(nodes=[Node(n.id, n.op, list(n.args), dict(n.attrs), tuple(n.shape), n.dtype, n.origin) for n in g.nodes],
               input_names=list(g.input_names), output=g.output, init_source=g.init_source,
               init_params=list(g.init_params), half=g.half)
    aliases = {k_: v for k_, v in plan.aliases.items() if k_ != q}
    rest = list(region[1:])
    inside = set(rest)
    # per-row values viewed as (M,) inside the region: read the (M, 1) value itself, and stay (M, 1)
    for i in rest:
        n = g2.nodes[i]
        for j, x in enumerate(n.args):
            if isinstance(x, int) and x not in inside and x in aliases and aliases[x] in inside \
                    and tuple(g.nodes[x].shape) == (M,) and tuple(g.nodes[aliases[x]].shape) == (M, 1):
                n.args[j] = Ref(aliases[x])
        if tuple(n.shape) == (M,):
            n.shape = (M, 1)
    return Plan(g2, [], aliases), q, rest, PoolInfo(str(a["kind"]), k)


def _rows_per_tile(N: int, NP: int) -> int:
    npp = (NP + 7) // 8 * 8
    per_row = 4 * (N + 3 * npp)
    if per_row > UB_BUDGET:
        raise AnalysisError(f"a row of {N} values and its pooled row do not fit the Unified Buffer")
    return max(1, min(255, UB_BUDGET // per_row))


def pool_class(op: Any, info: PoolInfo, tiling_cls: str) -> str:
    """The pooling class (``Kernel<Op>Pool``)."""
    NP = op.N // info.k
    rows = min(_rows_per_tile(op.N, NP), op.M)
    cls = f"Kernel{op.op_type}Pool"
    comb = "Max(o, o, t, n);" if info.kind == "max" else "Add(o, o, t, n);"
    avg = f"\n            Muls(o, o, {1.0 / info.k!r}f, n);" if info.kind == "avg" else ""
    return f"""constexpr uint32_t POOL_K = {info.k};  // the {info.kind} pooling's window (and stride) along the features
constexpr uint32_t POOL_ROWS = {rows};  // rows of C per tile

class {cls} {{
public:
    __aicore__ inline {cls}() {{}}
    __aicore__ inline void Init(GM_ADDR cWs, GM_ADDR pooledOut, const {tiling_cls}& tl)
    {{
        M = tl.M;
        N = tl.N;
        NP = N / POOL_K;
        NPP = (NP + 7) / 8 * 8;  // a pooled row in UB, rounded to 32 bytes
        gm_c.SetGlobalBuffer((__gm__ float*)cWs, static_cast<uint64_t>(M) * N);
        gm_p.SetGlobalBuffer((__gm__ float*)pooledOut, static_cast<uint64_t>(M) * NP);
        pipe.InitBuffer(q_x, 1, POOL_ROWS * N * sizeof(float));
        pipe.InitBuffer(q_o, 1, POOL_ROWS * NPP * sizeof(float));
        pipe.InitBuffer(b_t, POOL_ROWS * NPP * sizeof(float));
        pipe.InitBuffer(b_off, POOL_ROWS * NPP * sizeof(uint32_t));
        t = b_t.Get<float>();
        off = b_off.Get<uint32_t>();
    }}
    __aicore__ inline void Run(uint32_t first, uint32_t rows)
    {{
        // byte offsets of each window's first element in a tile of rows (the padding lanes: the row's first)
        for (uint32_t r = 0; r < POOL_ROWS && r < rows; ++r) {{
            for (uint32_t j = 0; j < NPP; ++j) {{
                off.SetValue(r * NPP + j, (r * N + (j < NP ? j * POOL_K : 0)) * static_cast<uint32_t>(sizeof(float)));
            }}
        }}
        event_t evSV = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::S_V));
        SetFlag<HardEvent::S_V>(evSV);
        WaitFlag<HardEvent::S_V>(evSV);
        for (uint32_t r0 = first; r0 < first + rows; r0 += POOL_ROWS) {{
            uint32_t rr = first + rows - r0 < POOL_ROWS ? first + rows - r0 : POOL_ROWS;
            uint32_t n = rr * NPP;
            LocalTensor<float> x = q_x.AllocTensor<float>();
            DataCopy(x, gm_c[static_cast<uint64_t>(r0) * N], rr * N);
            q_x.EnQue(x);
            x = q_x.DeQue<float>();
            LocalTensor<float> o = q_o.AllocTensor<float>();
            Gather(o, x, off, 0, n);
            for (uint32_t k = 1; k < POOL_K; ++k) {{  // the window's k-th elements
                Gather(t, x, off, k * static_cast<uint32_t>(sizeof(float)), n);
                {comb}
            }}{avg}
            q_o.EnQue(o);
            o = q_o.DeQue<float>();
            DataCopyPad(gm_p[static_cast<uint64_t>(r0) * NP], o,
                        DataCopyExtParams(static_cast<uint16_t>(rr), NP * static_cast<uint32_t>(sizeof(float)), 0, 0, 0));
            q_o.FreeTensor(o);
            q_x.FreeTensor(x);
        }}
    }}

private:
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q_x;
    TQue<QuePosition::VECOUT, 1> q_o;
    TBuf<TPosition::VECCALC> b_t, b_off;
    GlobalTensor<float> gm_c, gm_p;
    LocalTensor<float> t;
    LocalTensor<uint32_t> off;
    uint32_t M = 0, N = 0, NP = 0, NPP = 0;
}};
"""


def vector_branch(op: Any, cls: str, init_args: str, names: list[str]) -> str:
    """The vector cores' part of the kernel entry: pool this core's rows of C into P, then the row program on
    them."""
    return f"""        // the vector cores: once C is whole, each pools an equal share of its rows into P (after C in the
        // workspace), then runs the row program on the same rows of P
        SyncAll<false>();
        uint32_t M = tiling_data.M, N = tiling_data.N, NP = tiling_data.cols;
        uint32_t cores = GetBlockNum() * GetTaskRation(), idx = GetBlockIdx();
        uint32_t share = M / cores, extra = M % cores;
        uint32_t first = idx * share + (idx < extra ? idx : extra);
        uint32_t rows = share + (idx < extra ? 1 : 0);
        if (rows > 0) {{
            GM_ADDR pooled = workspace + static_cast<uint64_t>(M) * N * sizeof(float);
            {{
                Kernel{op.op_type}Pool pool;
                pool.Init(workspace, pooled, tiling_data);
                pool.Run(first, rows);
            }}
            PipeBarrier<PIPE_ALL>();  // this core's pooled rows are in GM before its row program reads them
            {cls}Rows op;
            op.Init({init_args}, out, tiling_data);
            GM_ADDR slot = pooled + static_cast<uint64_t>(first) * NP * sizeof(float);
            op.Rows({", ".join(names)}, out, first, rows);
        }}
"""
