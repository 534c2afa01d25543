"""Column statistics on the vector cores after a matmul: a training-mode BatchNorm's batch mean and biased
variance per output feature, over all M rows of C (``ascend/cube/norms.py`` rewrites the norm; this writes
the phase that computes its statistics).

Once C is whole in the workspace (``row_split = all``: the cube cores' SyncAll), the vector cores split the N
columns into slices of whole 8-float blocks (N is a multiple of 16), each core its own slice, in chunks of
``BN_COLS`` columns. Per chunk, two passes over the M rows in tiles of ``BN_ROWS`` rows (DataCopyPad, a row
gap of N - width): the first sums ``y`` (the elementwise chain between the matmul and the norm, evaluated on
the tile) per column, giving the mean; the second sums ``(y - mean)^2``, giving the biased variance PyTorch
normalises with; ``rstd = 1 / sqrt(var + eps)``. The chunk's mean and rstd go to GM after C in the workspace
(``bn_mean``, ``bn_rstd``), a SyncAll of the vector cores later the row program reads them as per-column
operands. Two passes, not sum and sum of squares in one: no cancellation when a column's mean is large
against its spread.
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.ascend import names, vecops
from evokernel.generators.template.front.graph import AnalysisError, Const

UB_BUDGET = 160 * 1024  # bytes of the 192 KiB Unified Buffer this phase may use (the rest: alignment slack)


def _ext_names(op: Any, bn: Any) -> tuple[dict[int, str], str, str]:
    """(root node -> kernel argument name of the chain's per-column operands, mean name, rstd name)."""
    by_root = {e.root: e.name for e in op.exts}
    row = {e.root: e.name for e in op.row_op.exts}
    return by_root, row[bn.mean_id], row[bn.rstd_id]


def _plan(op: Any, bn: Any) -> tuple[list[str], list[tuple[int, str]], int]:
    g = op.row_op.graph
    cut = next(e.nid for e in op.row_op.exts if g.nodes[e.root].attrs.get("index") == -1)
    return chain_code(g, cut, bn.pre, bn.src, {e.root: e.name for e in op.exts})


def chain_code(g: Any, cut: int, pre: list[int], src: int, by_root: dict[int, str]
               ) -> tuple[list[str], list[tuple[int, str]], int]:
    """The elementwise chain from C (``x``) to ``src`` as instructions over a tile (``n`` elements, ``rr`` rows
    of ``w``; ``y`` its result), its per-column operands (root, argument name, loaded into ``col<k>``) and the
    number of tile buffers ``v<k>`` it uses."""
    val: dict[int, str] = {cut: "x"}
    cols: list[tuple[int, str]] = []
    col_of: dict[int, str] = {}
    lines: list[str] = []
    nbuf = 0
    for i in pre:
        n = g.nodes[i]
        dst = f"v{nbuf}"
        nbuf += 1
        if n.op == "unary":
            lines += vecops.unary_code(n.attrs["fn"], n.attrs, dst, val[n.args[0]], ["s0", "s1"], "n")
        else:
            ops: list[Any] = []
            per_col = False
            for a in n.args:
                if isinstance(a, Const):
                    ops.append(vecops.Scalar(names.flit(a.value), float(a.value)))
                elif a in val:
                    ops.append(val[a])
                else:
                    if a not in col_of:
                        if a not in by_root:
                            raise AnalysisError(f"{n.origin}: an operand before the norm that is not an operand "
                                                "of the kernel")
                        col_of[a] = f"col{len(cols)}"
                        cols.append((a, by_root[a]))
                    ops.append(col_of[a])
                    per_col = True
            if per_col:  # a per-column operand: row by row
                rows = vecops.binary_code(n.attrs["fn"], f"{dst}[r * w]",
                                      *[o if isinstance(o, vecops.Scalar) or o.startswith("col") else f"{o}[r * w]"
                                        for o in ops], "w")
                lines += ["for (uint32_t r = 0; r < rr; ++r) {"] + ["    " + ln for ln in rows] + ["}"]
            else:
                lines += vecops.binary_code(n.attrs["fn"], dst, ops[0], ops[1], "n")
        val[i] = dst
    lines.append(f"LocalTensor<float> y = {val[src]};")
    return lines, cols, nbuf


def _sizes(op: Any, nbuf: int, ncols: int) -> tuple[int, int]:
    """(BN_ROWS, BN_COLS): a chunk of columns and a tile of rows that fit the UB budget."""
    cols = min(op.N, 256)
    fixed = cols * 4 * (ncols + 4)  # the operands' chunks, sum, mean, rstd (out queue: 2 x cols)
    per_row = cols * 4 * (1 + nbuf + 2)  # x, the chain's values, two scratch tiles
    rows = max(1, min(op.M, 1024, (UB_BUDGET - fixed) // per_row))
    return rows, cols


def stats_class(op: Any, bn: Any, tiling_cls: str) -> str:
    """The column-statistics class (``Kernel<Op>Stats``)."""
    chain, cols, nbuf = _plan(op, bn)
    rows, width = _sizes(op, nbuf, len(cols))
    cls = f"Kernel{op.op_type}Stats"
    args = "".join(f"GM_ADDR {name}, " for _, name in cols)
    ind = lambda ls, k: "\n".join(" " * k + ln for ln in ls)  # noqa: E731
    tile_bufs = "".join(f"        pipe.InitBuffer(b_v{k}, BN_ROWS * BN_COLS * sizeof(float));\n" for k in range(nbuf))
    col_bufs = "".join(f"        pipe.InitBuffer(q_col{k}, 1, BN_COLS * sizeof(float));\n" for k in range(len(cols)))
    col_gm = "".join(f"        gm_col{k}.SetGlobalBuffer((__gm__ float*){name}, N);\n" for k, (_, name) in enumerate(cols))
    col_load = "".join(f"""            {{
                LocalTensor<float> c = q_col{k}.AllocTensor<float>();
                DataCopy(c, gm_col{k}[cc0], w);
                q_col{k}.EnQue(c);
            }}
            col{k} = q_col{k}.DeQue<float>();
""" for k in range(len(cols)))
    col_free = "".join(f"            q_col{k}.FreeTensor(col{k});\n" for k in range(len(cols)))
    v_get = "".join(f"        v{k} = b_v{k}.Get<float>();\n" for k in range(nbuf))
    members = ", ".join(["s0", "s1", "acc", "mean"] + [f"v{k}" for k in range(nbuf)] + [f"col{k}" for k in range(len(cols))])
    tbufs = ", ".join(["b_s0", "b_s1", "b_acc", "b_mean"] + [f"b_v{k}" for k in range(nbuf)])
    col_q = (f"    TQue<QuePosition::VECIN, 1> {', '.join(f'q_col{k}' for k in range(len(cols)))};\n" if cols else "")
    col_gms = "".join(f", gm_col{k}" for k in range(len(cols)))
    return (_stats_head(rows, width, cls, args, tiling_cls, col_gm, col_bufs, tile_bufs, v_get)
            + _stats_process(col_load, col_free, names, bn)
            + _stats_tail(col_q, tbufs, col_gms, members, ind, chain))


def _stats_head(rows: Any, width: Any, cls: Any, args: Any, tiling_cls: Any, col_gm: Any, col_bufs: Any, tile_bufs:
                Any, v_get: Any) -> str:
    """The class and its Init (this vector core's slice of column blocks)."""
    return f"""constexpr uint32_t BN_ROWS = {rows};  // the column statistics' tile: rows of C
constexpr uint32_t BN_COLS = {width};  // and columns (a chunk of a vector core's slice)

class {cls} {{
public:
    __aicore__ inline {cls}() {{}}
    __aicore__ inline void Init(GM_ADDR cWs, {args}GM_ADDR meanOut, GM_ADDR rstdOut, const {tiling_cls}& t)
    {{
        M = t.M;
        N = t.N;
        invM = 1.0f / static_cast<float>(M);
        // this vector core's slice: whole 8-float column blocks, the remainder to the first cores
        uint32_t cores = GetBlockNum() * GetTaskRation(), idx = GetBlockIdx();
        uint32_t blocks = N / 8, share = blocks / cores, extra = blocks % cores;
        c0 = (idx * share + (idx < extra ? idx : extra)) * 8;
        cw = (share + (idx < extra ? 1 : 0)) * 8;
        gm_c.SetGlobalBuffer((__gm__ float*)cWs, static_cast<uint64_t>(M) * N);
{col_gm}        gm_mean.SetGlobalBuffer((__gm__ float*)meanOut, N);
        gm_rstd.SetGlobalBuffer((__gm__ float*)rstdOut, N);
        pipe.InitBuffer(q_x, 1, BN_ROWS * BN_COLS * sizeof(float));
{col_bufs}        pipe.InitBuffer(q_out, 1, 2 * BN_COLS * sizeof(float));
        pipe.InitBuffer(b_s0, BN_ROWS * BN_COLS * sizeof(float));
        pipe.InitBuffer(b_s1, BN_ROWS * BN_COLS * sizeof(float));
{tile_bufs}        pipe.InitBuffer(b_acc, BN_COLS * sizeof(float));
        pipe.InitBuffer(b_mean, BN_COLS * sizeof(float));
        s0 = b_s0.Get<float>();
        s1 = b_s1.Get<float>();
{v_get}        acc = b_acc.Get<float>();
        mean = b_mean.Get<float>();
    }}
"""


def _stats_process(col_load: Any, col_free: Any, names: Any, bn: Any) -> str:
    """Process: per chunk of columns, the mean pass and the centred pass."""
    return f"""    __aicore__ inline void Process()
    {{
        for (uint32_t cc0 = c0; cc0 < c0 + cw; cc0 += BN_COLS) {{
            uint32_t w = c0 + cw - cc0 < BN_COLS ? c0 + cw - cc0 : BN_COLS;
{col_load}            Pass(cc0, w, false);  // acc: the column sums of y
            Muls(mean, acc, invM, w);
            Pass(cc0, w, true);  // acc: the column sums of (y - mean)^2
            LocalTensor<float> o = q_out.AllocTensor<float>();
            Muls(o, mean, 1.0f, w);  // o[0, w): the mean, o[BN_COLS, BN_COLS + w): 1 / sqrt(var + eps)
            Muls(s0, acc, invM, w);
            Adds(s0, s0, {names.flit(bn.eps)}, w);
            Sqrt(s0, s0, w);
            Duplicate(s1, 1.0f, w);
            Div(o[BN_COLS], s1, s0, w);
            q_out.EnQue(o);
            o = q_out.DeQue<float>();
            DataCopy(gm_mean[cc0], o, w);
            DataCopy(gm_rstd[cc0], o[BN_COLS], w);
            q_out.FreeTensor(o);
{col_free}        }}
    }}

"""


def _stats_tail(col_q: Any, tbufs: Any, col_gms: Any, members: Any, ind: Any, chain: Any) -> str:
    """Pass over all M rows, the members."""
    return f"""private:
    __aicore__ inline void Pass(uint32_t cc0, uint32_t w, bool centred)
    {{
        Duplicate(acc, 0.0f, w);
        for (uint32_t r0 = 0; r0 < M; r0 += BN_ROWS) {{
            uint32_t rr = M - r0 < BN_ROWS ? M - r0 : BN_ROWS;
            uint32_t n = rr * w;
            LocalTensor<float> x = q_x.AllocTensor<float>();
            if (w == N) {{
                DataCopy(x, gm_c[static_cast<uint64_t>(r0) * N], n);
            }} else {{  // rows of w columns (whole 32-byte blocks) at a row stride of N
                DataCopyExtParams p(static_cast<uint16_t>(rr), w * sizeof(float), (N - w) * sizeof(float), 0, 0);
                DataCopyPad(x, gm_c[static_cast<uint64_t>(r0) * N + cc0], p, DataCopyPadExtParams<float>(false, 0, 0, 0));
            }}
            q_x.EnQue(x);
            x = q_x.DeQue<float>();
{ind(chain, 12)}
            if (centred) {{
                for (uint32_t r = 0; r < rr; ++r) {{
                    Sub(s0[r * w], y[r * w], mean, w);
                }}
                Mul(s0, s0, s0, n);
                y = s0;
            }}
            for (uint32_t r = 0; r < rr; ++r) {{
                Add(acc, acc, y[r * w], w);
            }}
            q_x.FreeTensor(x);
        }}
    }}

    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q_x;
{col_q}    TQue<QuePosition::VECOUT, 1> q_out;
    TBuf<TPosition::VECCALC> {tbufs};
    GlobalTensor<float> gm_c, gm_mean, gm_rstd{col_gms};
    LocalTensor<float> {members};
    uint32_t M = 0, N = 0, c0 = 0, cw = 0;
    float invM = 0.0f;
}};
"""



def vector_phase(op: Any, bn: Any, T: str) -> str:
    """The vector cores' statistics phase in the kernel entry (after the SyncAll that makes C whole)."""
    _, mean, rstd = _ext_names(op, bn)
    chain, cols, _ = _plan(op, bn)
    args = "".join(f"{name}, " for _, name in cols)
    return f"""        // the batch statistics: per column over all M rows, after C in the workspace
        GM_ADDR {mean} = workspace + static_cast<uint64_t>(tiling_data.M) * tiling_data.N * sizeof({T});
        GM_ADDR {rstd} = {mean} + static_cast<uint64_t>(tiling_data.N) * sizeof(float);
        {{
            Kernel{op.op_type}Stats stats;
            stats.Init(workspace, {args}{mean}, {rstd}, tiling_data);
            stats.Process();
        }}
        SyncAll<true>();  // every column's statistics are in GM: the vector cores may normalise
"""


def workspace_extra(op: Any) -> str:
    """The workspace the statistics take after C ("" without a training-mode BatchNorm)."""
    row_op = getattr(op, "row_op", None)
    norm, pool = getattr(row_op, "norm", None), getattr(row_op, "pool", None)
    if getattr(row_op, "gn_phase", None) is not None:  # Z, the group-normalised C (ascend/cube/gnorm.py)
        return " + static_cast<size_t>(M) * N * sizeof(float)"
    if pool is not None:  # P, the pooled C (ascend/cube/pool.py)
        return " + static_cast<size_t>(M) * (N / ROW_POOL) * sizeof(float)"
    if norm is None or norm.bn is None:
        return ""
    return " + 2 * static_cast<size_t>(N) * sizeof(float)"
