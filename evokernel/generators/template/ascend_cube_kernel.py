"""The cube template's kernel (:func:`kernel`): the AIC class that tiles C over the cube cores (L1 -> L0A/L0B ->
Mmad -> Fixpipe, A/B copies per dtype and layout), handed on to the batch, split-K, L1-resident-A and row-program
variants, and the MIX epilogue on the vector cores (:func:`mixed`) with its entry (:func:`mix_entry`). The task
analysis, geometry and host tiling are in :mod:`.ascend_cube`.
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.ascend_cube import CubeOp, geometry


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

def kernel(op: CubeOp, knobs: dict[str, Any], T: str, tiling_cls: str) -> str:
    a, b = op.exts[0].name, op.exts[1].name
    bias = op.exts[2].name if op.bias else None
    k0 = 32 // op.esize
    if op.trans_b:  # b is N x K: NZ with column blocks of k0 along K, each n (rounded to 16) rows; no transpose
        b_copy = """        Nd2NzParams bParams;
        bParams.ndNum = 1;
        bParams.nValue = n;
        bParams.dValue = k;
        bParams.srcNdMatrixStride = 0;
        bParams.srcDValue = K;
        bParams.dstNzC0Stride = CeilDiv(n, 16) * 16;
        bParams.dstNzNStride = 1;
        bParams.dstNzMatrixStride = 0;
        DataCopy(b1Local, bGm[n0 * K + k0], bParams);"""
        b_split = """        uint32_t nBlocks = CeilDiv(n, 16), kBlocks = CeilDiv(k, C0);
        LoadData2DParams params;
        params.repeatTimes = nBlocks;
        params.srcStride = 1;
        params.ifTranspose = false;
        for (uint32_t j = 0; j < kBlocks; ++j) {
            LoadData(b2Local[j * nBlocks * FRACTAL], b1Local[j * CeilDiv(n, 16) * FRACTAL], params);
        }"""
    elif not op.half:  # float b is K x N: 16-row bands of B, each a Zz matrix of 16 x 8 fractals, then
        # LoadDataWithTranspose: a 16 x 16 square (two neighbouring fractals) -> the L0B fractals (2j, p), (2j+1, p)
        b_copy = """        uint32_t bands = k / 16, tail = k % 16, nPad = CeilDiv(n, 16) * 16;
        Nd2NzParams bParams;
        bParams.nValue = 16;
        bParams.dValue = n;
        bParams.srcDValue = N;
        bParams.dstNzC0Stride = 16;
        bParams.dstNzNStride = 1;
        if (bands > 0 && 16 * N > 65535) {  // a band stride beyond Nd2NzParams' 16 bits: one copy per band
            bParams.ndNum = 1;
            bParams.srcNdMatrixStride = 0;
            bParams.dstNzMatrixStride = 0;
            for (uint32_t j = 0; j < bands; ++j) {
                DataCopy(b1Local[j * nPad * 16], bGm[(k0 + 16 * j) * N + n0], bParams);
            }
        } else if (bands > 0) {
            bParams.ndNum = bands;
            bParams.srcNdMatrixStride = 16 * N;
            bParams.dstNzMatrixStride = nPad * 16;
            DataCopy(b1Local, bGm[k0 * N + n0], bParams);
        }
        if (tail > 0) {  // the last band's rows beyond k are never read by Mmad (params.k = k)
            bParams.ndNum = 1;
            bParams.nValue = tail;
            bParams.srcNdMatrixStride = 0;
            bParams.dstNzMatrixStride = 0;
            DataCopy(b1Local[bands * nPad * 16], bGm[(k0 + bands * 16) * N + n0], bParams);
        }"""
        b_split = """        uint32_t nBlocks = CeilDiv(n, 16), bands = CeilDiv(k, 16);
        for (uint32_t j = 0; j < bands; ++j) {
            LoadData2dTransposeParams params;
            params.startIndex = j * nBlocks;  // band j's squares, one per 16 columns
            params.repeatTimes = nBlocks;
            params.srcStride = 1;
            params.dstGap = 0;
            params.dstFracGap = nBlocks - 1;  // the square's second fractal: the next k block, same n block
            LoadDataWithTranspose(b2Local[2 * j * nBlocks * FRACTAL], b1Local, params);
        }"""
    else:  # b is K x N: NZ with column blocks of 16 along N, each k (rounded to 16) rows; fractals transposed
        b_copy = """        Nd2NzParams bParams;
        bParams.ndNum = 1;
        bParams.nValue = k;
        bParams.dValue = n;
        bParams.srcNdMatrixStride = 0;
        bParams.srcDValue = N;
        bParams.dstNzC0Stride = CeilDiv(k, 16) * 16;
        bParams.dstNzNStride = 1;
        bParams.dstNzMatrixStride = 0;
        DataCopy(b1Local, bGm[k0 * N + n0], bParams);"""
        b_split = """        uint32_t nBlocks = CeilDiv(n, 16), kBlocks = CeilDiv(k, 16);
        LoadData2DParams params;
        params.repeatTimes = nBlocks;
        params.srcStride = kBlocks;
        params.ifTranspose = true;
        for (uint32_t j = 0; j < kBlocks; ++j) {
            LoadData(b2Local[j * nBlocks * FRACTAL], b1Local[j * FRACTAL], params);
        }"""
    bias_members = ""
    bias_init = ""
    bias_load = ""
    bias_use = "        Mmad(c1Local, a2Local, b2Local, params);"
    bias_free = ""
    if bias:
        bias_members = f"""    TQue<TPosition::C1, 1> inQueueBias1;
    TQue<TPosition::C2, 1> inQueueBias2;
    GlobalTensor<{T}> biasGm;
    LocalTensor<float> bias2Local;
"""
        bias_init = f"""        biasGm.SetGlobalBuffer((__gm__ {T}*){bias}, N);
        pipe.InitBuffer(inQueueBias1, 1, baseN * sizeof({T}));
        pipe.InitBuffer(inQueueBias2, 1, baseN * sizeof(float));
"""
        bias_load = f"""    __aicore__ inline void LoadBias(uint32_t n0, uint32_t n)
    {{
        // GM -> L1 (C1) -> bias table (C2), {T} -> float
        LocalTensor<{T}> bias1Local = inQueueBias1.AllocTensor<{T}>();
        DataCopyExtParams copy{{1, static_cast<uint32_t>(n * sizeof({T})), 0, 0, 0}};
        DataCopyPadExtParams<{T}> pad{{false, 0, 0, 0}};
        DataCopyPad(bias1Local, biasGm[n0], copy, pad);
        inQueueBias1.EnQue(bias1Local);
        bias1Local = inQueueBias1.DeQue<{T}>();
        bias2Local = inQueueBias2.AllocTensor<float>();
        DataCopy(bias2Local, bias1Local, DataCopyParams(1, static_cast<uint16_t>(CeilDiv(n * sizeof({T}), 64)), 0, 0));
        inQueueBias2.EnQue(bias2Local);
        inQueueBias1.FreeTensor(bias1Local);
        bias2Local = inQueueBias2.DeQue<float>();
    }}
"""
        bias_use = """        if (first) {
            Mmad(c1Local, a2Local, b2Local, bias2Local, params);  // C = bias + A x B
        } else {
            Mmad(c1Local, a2Local, b2Local, params);
        }"""
        bias_free = "            inQueueBias2.FreeTensor(bias2Local);\n"
    quant = "QuantMode_t::F322F16" if op.half else "QuantMode_t::NoQuant"
    b_rows = "N * K" if op.trans_b else "K * N"
    text = f"""#include "kernel_operator.h"
using namespace AscendC;

constexpr int32_t BUFFER_NUM = {int(knobs["buffer_num"])};
constexpr uint32_t C0 = {k0};              // elements of a 32-byte fractal row
constexpr uint32_t FRACTAL = 16 * C0;      // elements of a 512-byte fractal

__aicore__ inline uint32_t CeilDiv(uint32_t a, uint32_t b) {{ return (a + b - 1) / b; }}
__aicore__ inline uint32_t Min(uint32_t a, uint32_t b) {{ return a < b ? a : b; }}

class Kernel{op.op_type} {{
public:
    __aicore__ inline Kernel{op.op_type}() {{}}
    __aicore__ inline void Init({", ".join(f"GM_ADDR {e.name}" for e in op.exts)}, GM_ADDR out, const {tiling_cls}& t)
    {{
        M = t.M; N = t.N; K = t.K;
        baseM = t.baseM; baseN = t.baseN; baseK = t.baseK;
        tilesM = t.tilesM; tilesN = t.tilesN;
        aGm.SetGlobalBuffer((__gm__ {T}*){a}, M * K);
        bGm.SetGlobalBuffer((__gm__ {T}*){b}, {b_rows});
        cGm.SetGlobalBuffer((__gm__ {T}*)out, M * N);
        pipe.InitBuffer(inQueueA1, BUFFER_NUM, baseM * baseK * sizeof({T}));
        pipe.InitBuffer(inQueueB1, BUFFER_NUM, baseK * baseN * sizeof({T}));
        pipe.InitBuffer(inQueueA2, BUFFER_NUM, baseM * baseK * sizeof({T}));
        pipe.InitBuffer(inQueueB2, BUFFER_NUM, baseK * baseN * sizeof({T}));
        pipe.InitBuffer(outQueueCO1, 1, baseM * baseN * sizeof(float));
{bias_init}    }}
    __aicore__ inline void Process()
    {{
        for (uint32_t tile = GetBlockIdx(); tile < tilesM * tilesN; tile += GetBlockNum()) {{
            uint32_t m0 = (tile / tilesN) * baseM;
            uint32_t n0 = (tile % tilesN) * baseN;
            uint32_t m = Min(baseM, M - m0);
            uint32_t n = Min(baseN, N - n0);
{"            LoadBias(n0, n);" + chr(10) if bias else ""}            LocalTensor<float> c1Local = outQueueCO1.AllocTensor<float>();
            for (uint32_t k0 = 0; k0 < K; k0 += baseK) {{
                uint32_t k = Min(baseK, K - k0);
                CopyIn(m0, n0, k0, m, n, k);
                SplitA(m, k);
                SplitB(n, k);
                Compute(c1Local, m, n, k, k0 == 0);
            }}
{bias_free}            outQueueCO1.EnQue<float>(c1Local);
            CopyOut(m0, n0, m, n);
        }}
    }}

private:
{bias_load}    __aicore__ inline void CopyIn(uint32_t m0, uint32_t n0, uint32_t k0, uint32_t m, uint32_t n, uint32_t k)
    {{
        LocalTensor<{T}> a1Local = inQueueA1.AllocTensor<{T}>();
        LocalTensor<{T}> b1Local = inQueueB1.AllocTensor<{T}>();
        // A tile (m x k) -> NZ: column blocks of C0 along k, each m rounded up to 16 rows
        Nd2NzParams aParams;
        aParams.ndNum = 1;
        aParams.nValue = m;
        aParams.dValue = k;
        aParams.srcNdMatrixStride = 0;
        aParams.srcDValue = K;
        aParams.dstNzC0Stride = CeilDiv(m, 16) * 16;
        aParams.dstNzNStride = 1;
        aParams.dstNzMatrixStride = 0;
        DataCopy(a1Local, aGm[m0 * K + k0], aParams);
{b_copy}
        inQueueA1.EnQue(a1Local);
        inQueueB1.EnQue(b1Local);
    }}
    __aicore__ inline void SplitA(uint32_t m, uint32_t k)
    {{
        // NZ -> Zz: for each row block, its K fractals (one column block apart in L1)
        LocalTensor<{T}> a1Local = inQueueA1.DeQue<{T}>();
        LocalTensor<{T}> a2Local = inQueueA2.AllocTensor<{T}>();
        uint32_t mBlocks = CeilDiv(m, 16), kBlocks = CeilDiv(k, C0);
        LoadData2DParams params;
        params.repeatTimes = kBlocks;
        params.srcStride = mBlocks;
        params.ifTranspose = false;
        for (uint32_t i = 0; i < mBlocks; ++i) {{
            LoadData(a2Local[i * kBlocks * FRACTAL], a1Local[i * FRACTAL], params);
        }}
        inQueueA2.EnQue<{T}>(a2Local);
        inQueueA1.FreeTensor(a1Local);
    }}
    __aicore__ inline void SplitB(uint32_t n, uint32_t k)
    {{
        // -> Zn in L0B: fractal (k block, n block) row-major, n-major inside
        LocalTensor<{T}> b1Local = inQueueB1.DeQue<{T}>();
        LocalTensor<{T}> b2Local = inQueueB2.AllocTensor<{T}>();
{b_split}
        inQueueB2.EnQue<{T}>(b2Local);
        inQueueB1.FreeTensor(b1Local);
    }}
    __aicore__ inline void Compute(LocalTensor<float>& c1Local, uint32_t m, uint32_t n, uint32_t k, bool first)
    {{
        LocalTensor<{T}> a2Local = inQueueA2.DeQue<{T}>();
        LocalTensor<{T}> b2Local = inQueueB2.DeQue<{T}>();
        MmadParams params;
        params.m = m;
        params.n = n;
        params.k = k;
        params.cmatrixInitVal = first;  // the first K step starts C afresh, the others accumulate
{bias_use}
        inQueueA2.FreeTensor(a2Local);
        inQueueB2.FreeTensor(b2Local);
    }}
    __aicore__ inline void CopyOut(uint32_t m0, uint32_t n0, uint32_t m, uint32_t n)
    {{
        LocalTensor<float> c1Local = outQueueCO1.DeQue<float>();
        FixpipeParamsV220 params;
        params.nSize = n;
        params.mSize = m;
        params.srcStride = CeilDiv(m, 16) * 16;
        params.dstStride = N;
        params.quantPre = {quant};
        params.reluEn = {"true" if op.relu else "false"};
        params.ndNum = 1;
        Fixpipe(cGm[m0 * N + n0], c1Local, params);
        outQueueCO1.FreeTensor(c1Local);
    }}

    TPipe pipe;
    TQue<TPosition::A1, BUFFER_NUM> inQueueA1;
    TQue<TPosition::B1, BUFFER_NUM> inQueueB1;
    TQue<TPosition::A2, BUFFER_NUM> inQueueA2;
    TQue<TPosition::B2, BUFFER_NUM> inQueueB2;
    TQue<TPosition::CO1, 1> outQueueCO1;
{bias_members}    GlobalTensor<{T}> aGm, bGm, cGm;
    uint32_t M = 0, N = 0, K = 0, baseM = 0, baseN = 0, baseK = 0, tilesM = 0, tilesN = 0;
}};

extern "C" __global__ __aicore__ void {op.kernel_name}({", ".join(f"GM_ADDR {e.name}" for e in op.exts)}, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    GET_TILING_DATA(tiling_data, tiling);
    Kernel{op.op_type} op;
    op.Init({", ".join(e.name for e in op.exts)}, out, tiling_data);
    op.Process();
}}"""
    if knobs.get("a_resident") and geometry(op, knobs) is not None:
        from evokernel.generators.template import ascend_cube_resident as RES

        return RES.resident(op, knobs, text, T, tiling_cls)
    if op.row_op is not None:
        from evokernel.generators.template import ascend_cube_rows as ROWS

        return ROWS.mix_rows(op, knobs, text, T, tiling_cls)
    if op.batch != 1:
        from evokernel.generators.template import ascend_cube_batch as BATCH

        text = BATCH.batch_kernel(op, text, T, tiling_cls)
    if int(knobs.get("split_k", 1)) > 1 and geometry(op, knobs) is not None:
        from evokernel.generators.template import ascend_cube_splitk as SPLITK

        return SPLITK.splitk_kernel(op, knobs, text, T, tiling_cls)  # atomic adds, or its own MIX kernel
    return mixed(op, text, T, tiling_cls) if op.mix else text

def epilogue_code(op: CubeOp) -> list[str]:
    """The vector cores' chain over `count` floats from x, ping-ponging between w0 and w1; the result's name last."""
    from evokernel.generators.template import ascend_codegen as AC

    lines: list[str] = []
    src, bufs = "x", ["w0", "w1"]
    for k, step in enumerate(op.epilogue):
        dst = bufs[k % 2]
        if step[0] == "unary":
            lines += AC.unary_code(step[1], step[2], dst, src, ["t0", "t1"], "count")
        else:
            _, fn, value, const_left = step
            c = AC.Scalar(AC.flit(value), value)
            lines += AC.binary_code(fn, dst, c, src, "count") if const_left else AC.binary_code(fn, dst, src, c, "count")
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
    epi = f"""
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
    __aicore__ inline void Process()
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
    i = text.index('extern "C" __global__ __aicore__ void')
    entry = mix_entry(op, cls, f"""        {cls}Epilogue op;
        op.Init(out, workspace, tiling_data);
        op.Process();
""")
    return text[:i] + epi.lstrip("\n") + "\n" + entry
