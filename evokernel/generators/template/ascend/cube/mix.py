"""The cube family's MIX kernels (one cube core and two vector cores per AI core): the entry that runs the cube
core's class and the vector cores' code (:func:`mix_entry`, for every MIX variant), and the elementwise epilogue
after the matmul (:func:`mixed`: each float tile through the AI core's workspace slot, CrossCoreSetFlag mode 2, the
vector cores run the chain on half the rows each and flag back; :func:`epilogue_code`, also split-K's).
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.ascend.gemm.op import CubeOp
from evokernel.generators.template.ascend.names import flit
from evokernel.generators.template.ascend.vecops import Scalar, binary_code, unary_code


def mix_entry(op: Any, cls: str, vector: str) -> str:
    """The entry of a MIX kernel (one cube core and two vector cores per block): the cube core runs ``cls``
    (``Init(inputs..., out, workspace, tiling)``), the vector cores run ``vector`` (C++ statements, 8 spaces in)."""
    exts = ", ".join(f"GM_ADDR {e.name}" for e in op.exts)
    return f"""extern "C" __global__ __aicore__ void {op.kernel_name}({exts}, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);  // per block: the cube core and two vector cores
    GET_TILING_DATA(tiling_data, tiling);
    if ASCEND_IS_AIC {{
        {cls} op;
        op.Init({", ".join(e.name for e in op.exts)}, out, workspace, tiling_data);
        op.Process();
    }} else {{
{vector}    }}
}}"""


def epilogue_code(op: CubeOp) -> list[str]:
    """The vector cores' chain over `count` floats from x, ping-ponging between w0 and w1; the result's name last."""
    lines: list[str] = []
    src, bufs = "x", ["w0", "w1"]
    for k, step in enumerate(op.epilogue):
        dst = bufs[k % 2]
        if step[0] == "unary":
            lines += unary_code(step[1], step[2], dst, src, ["t0", "t1"], "count")
        else:
            _, fn, value, const_left = step
            c = Scalar(flit(value), value)
            lines += binary_code(fn, dst, c, src, "count") if const_left else binary_code(fn, dst, src, c, "count")
        src = dst
    return lines + [src]


def mixed(op: CubeOp, text: str, T: str, tiling_cls: str) -> str:
    """The MIX kernel: the cube core's class writes each tile (float) to its AI core's workspace slot and flags
    its vector cores (CrossCoreSetFlag mode 2, flag 0); each vector core runs the epilogue on half the tile's
    rows and writes the output, then flags back (flag 1) so the slot can take the next tile."""
    cls = f"Kernel{op.op_type}"

    def sub(old: str, new: str) -> None:
        nonlocal text
        assert text.count(old) == 1, old
        text = text.replace(old, new)

    sub(f"GM_ADDR out, const {tiling_cls}& t)", f"GM_ADDR out, GM_ADDR workspace, const {tiling_cls}& t)")
    sub(f"        cGm.SetGlobalBuffer((__gm__ {T}*)out, M * N);\n",
        f"        cGm.SetGlobalBuffer((__gm__ {T}*)out, M * N);\n"
        "        wsGm.SetGlobalBuffer((__gm__ float*)workspace + GetBlockIdx() * baseM * baseN, baseM * baseN);\n")
    sub("            CopyOut(m0, n0, m, n);\n        }\n    }\n",
        "            CopyOut(m0, n0, m, n);\n        }\n"
        "        if (tilesDone > 0) {\n            CrossCoreWaitFlag(1);  // the vector cores are done with the last tile\n"
        "        }\n    }\n")
    i = text.index("    __aicore__ inline void CopyOut(")
    j = text.index("    TPipe pipe;", i)
    text = text[:i] + """    __aicore__ inline void CopyOut(uint32_t m0, uint32_t n0, uint32_t m, uint32_t n)
    {
        LocalTensor<float> c1Local = outQueueCO1.DeQue<float>();
        if (tilesDone++ > 0) {
            CrossCoreWaitFlag(1);  // the vector cores have read the previous tile from the slot
        }
        FixpipeParamsV220 params;  // the float tile into this AI core's workspace slot, rows of baseN
        params.nSize = n;
        params.mSize = m;
        params.srcStride = CeilDiv(m, 16) * 16;
        params.dstStride = baseN;
        params.ndNum = 1;
        Fixpipe(wsGm, c1Local, params);
        outQueueCO1.FreeTensor(c1Local);
        CrossCoreSetFlag<2, PIPE_FIX>(0);  // the tile is in GM: the vector cores may read it
    }

""" + text[j:]
    sub("    uint32_t M = 0, N = 0, K = 0, baseM = 0, baseN = 0, baseK = 0, tilesM = 0, tilesN = 0;\n};",
        "    uint32_t M = 0, N = 0, K = 0, baseM = 0, baseN = 0, baseK = 0, tilesM = 0, tilesN = 0;\n"
        "    GlobalTensor<float> wsGm;\n    uint32_t tilesDone = 0;\n};")
    code = epilogue_code(op)
    result, steps = code[-1], code[:-1]
    body = "\n".join("                " + ln for ln in steps)
    if op.half:
        finish = f"                Cast(y, {result}, RoundMode::CAST_RINT, count);"
    else:
        finish = f"                DataCopy(y, {result}, count);"
    epi = _epilogue_head(cls, tiling_cls, T) + _epilogue_process(T, body, finish)
    i = text.index('extern "C" __global__ __aicore__ void')
    entry = mix_entry(op, cls, f"""        {cls}Epilogue op;
        op.Init(out, workspace, tiling_data);
        op.Process();
""")
    return text[:i] + epi.lstrip("\n") + "\n" + entry


def _epilogue_head(cls: Any, tiling_cls: Any, T: Any) -> str:
    """The vector cores' epilogue class and its Init."""
    return f"""
// The vector cores: the epilogue on their half of each tile's rows.
class {cls}Epilogue {{
public:
    __aicore__ inline {cls}Epilogue() {{}}
    __aicore__ inline void Init(GM_ADDR out, GM_ADDR workspace, const {tiling_cls}& t)
    {{
        M = t.M; N = t.N; baseM = t.baseM; baseN = t.baseN; tilesM = t.tilesM; tilesN = t.tilesN;
        core = GetBlockIdx() / GetTaskRation();
        sub = GetSubBlockIdx();
        wsGm.SetGlobalBuffer((__gm__ float*)workspace + core * baseM * baseN, baseM * baseN);
        outGm.SetGlobalBuffer((__gm__ {T}*)out, M * N);
        chunk = (180 * 1024) / (6 * baseN * sizeof(float));  // rows per pass: 6 row-sized buffers in UB
        if (chunk > baseM) chunk = baseM;
        const uint32_t bytes = chunk * baseN * sizeof(float);
        pipe.InitBuffer(inQueue, 1, bytes);
        pipe.InitBuffer(outQueue, 1, chunk * baseN * sizeof({T}));
        pipe.InitBuffer(work, 4 * bytes);
    }}
"""


def _epilogue_process(T: Any, body: Any, finish: Any) -> str:
    """Process: per tile, wait for the slot, the chain on half the rows, flag back."""
    return f"""    __aicore__ inline void Process()
    {{
        LocalTensor<float> all = work.Get<float>();
        LocalTensor<float> w0 = all, w1 = all[chunk * baseN], t0 = all[2 * chunk * baseN], t1 = all[3 * chunk * baseN];
        for (uint32_t tile = core; tile < tilesM * tilesN; tile += GetBlockNum()) {{
            uint32_t m0 = (tile / tilesN) * baseM;
            uint32_t n0 = (tile % tilesN) * baseN;
            uint32_t m = Min(baseM, M - m0);
            uint32_t n = Min(baseN, N - n0);
            uint32_t halfRows = CeilDiv(m, 2);  // each vector core takes half the rows
            uint32_t rBegin = sub * halfRows, rEnd = Min(m, rBegin + halfRows);
            CrossCoreWaitFlag(0);  // this AI core's cube core has written the tile
            for (uint32_t r0 = rBegin; r0 < rEnd; r0 += chunk) {{
                uint32_t rows = Min(chunk, rEnd - r0);
                uint32_t count = rows * baseN;
                LocalTensor<float> x = inQueue.AllocTensor<float>();
                DataCopy(x, wsGm[r0 * baseN], count);
                inQueue.EnQue(x);
                x = inQueue.DeQue<float>();
                LocalTensor<{T}> y = outQueue.AllocTensor<{T}>();
{body}
{finish}
                outQueue.EnQue(y);
                inQueue.FreeTensor(x);
                y = outQueue.DeQue<{T}>();
                DataCopyExtParams copy{{static_cast<uint16_t>(rows), static_cast<uint32_t>(n * sizeof({T})),
                                       static_cast<uint32_t>((baseN - n) * sizeof({T}) / 32),
                                       static_cast<uint32_t>((N - n) * sizeof({T})), 0}};
                DataCopyPad(outGm[(m0 + r0) * N + n0], y, copy);
                outQueue.FreeTensor(y);
            }}
            CrossCoreSetFlag<2, PIPE_MTE3>(1);  // done with the slot
        }}
    }}

private:
    TPipe pipe;
    TQue<TPosition::VECIN, 1> inQueue;
    TQue<TPosition::VECOUT, 1> outQueue;
    TBuf<TPosition::VECCALC> work;
    GlobalTensor<float> wsGm;
    GlobalTensor<{T}> outGm;
    uint32_t M = 0, N = 0, baseM = 0, baseN = 0, tilesM = 0, tilesN = 0, core = 0, sub = 0, chunk = 0;
}};
"""

