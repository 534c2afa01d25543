"""The GEMM on the cube unit as an AIC kernel class (:func:`kernel`): C tiled over the cube cores, per tile a loop over
K in ``base_k`` steps that copies A and B from GM into L1 (ND -> NZ), loads them into L0A/L0B (B's fractals
transposed unless B is given transposed; a float32 K x N B as 16-row bands through ``LoadDataWithTranspose``),
accumulates ``Mmad`` results in L0C (the bias through the bias table at the first step) and writes the tile out
through the Fixpipe (float -> half rounding and ReLU on the way). The cube family hands this text on to its
variants (:mod:`..cube.kernel`); the conv family's implicit GEMM batches it (:mod:`.batch`).
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.template.ascend.gemm.op import CubeOp

# B into L1 and from L1 into L0B (Zn fractals), per layout of B:
# N x K (given transposed): NZ with column blocks of k0 along K, each n (rounded to 16) rows; no transpose
_B_NK_COPY = """        Nd2NzParams bParams;
        bParams.ndNum = 1;
        bParams.nValue = n;
        bParams.dValue = k;
        bParams.srcNdMatrixStride = 0;
        bParams.srcDValue = K;
        bParams.dstNzC0Stride = CeilDiv(n, 16) * 16;
        bParams.dstNzNStride = 1;
        bParams.dstNzMatrixStride = 0;
        DataCopy(b1Local, bGm[n0 * K + k0], bParams);"""
_B_NK_SPLIT = """        uint32_t nBlocks = CeilDiv(n, 16), kBlocks = CeilDiv(k, C0);
        LoadData2DParams params;
        params.repeatTimes = nBlocks;
        params.srcStride = 1;
        params.ifTranspose = false;
        for (uint32_t j = 0; j < kBlocks; ++j) {
            LoadData(b2Local[j * nBlocks * FRACTAL], b1Local[j * CeilDiv(n, 16) * FRACTAL], params);
        }"""
# float K x N: 16-row bands of B, each a Zz matrix of 16 x 8 fractals, then LoadDataWithTranspose: a 16 x 16 square
# (two neighbouring fractals) -> the L0B fractals (2j, p), (2j+1, p)
_B_FLOAT_KN_COPY = """        uint32_t bands = k / 16, tail = k % 16, nPad = CeilDiv(n, 16) * 16;
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
_B_FLOAT_KN_SPLIT = """        uint32_t nBlocks = CeilDiv(n, 16), bands = CeilDiv(k, 16);
        for (uint32_t j = 0; j < bands; ++j) {
            LoadData2dTransposeParams params;
            params.startIndex = j * nBlocks;  // band j's squares, one per 16 columns
            params.repeatTimes = nBlocks;
            params.srcStride = 1;
            params.dstGap = 0;
            params.dstFracGap = nBlocks - 1;  // the square's second fractal: the next k block, same n block
            LoadDataWithTranspose(b2Local[2 * j * nBlocks * FRACTAL], b1Local, params);
        }"""
# half K x N: NZ with column blocks of 16 along N, each k (rounded to 16) rows; fractals transposed
_B_HALF_KN_COPY = """        Nd2NzParams bParams;
        bParams.ndNum = 1;
        bParams.nValue = k;
        bParams.dValue = n;
        bParams.srcNdMatrixStride = 0;
        bParams.srcDValue = N;
        bParams.dstNzC0Stride = CeilDiv(k, 16) * 16;
        bParams.dstNzNStride = 1;
        bParams.dstNzMatrixStride = 0;
        DataCopy(b1Local, bGm[k0 * N + n0], bParams);"""
_B_HALF_KN_SPLIT = """        uint32_t nBlocks = CeilDiv(n, 16), kBlocks = CeilDiv(k, 16);
        LoadData2DParams params;
        params.repeatTimes = nBlocks;
        params.srcStride = kBlocks;
        params.ifTranspose = true;
        for (uint32_t j = 0; j < kBlocks; ++j) {
            LoadData(b2Local[j * nBlocks * FRACTAL], b1Local[j * FRACTAL], params);
        }"""


def kernel(op: CubeOp, knobs: dict[str, Any], T: str, tiling_cls: str) -> str:
    a, b = op.exts[0].name, op.exts[1].name
    bias = op.exts[2].name if op.bias else None
    k0 = 32 // op.esize
    b_copy, b_split = _b_layout(op)
    bias_members, bias_init, bias_load, bias_use, bias_free = _bias_parts(bias, T)
    quant = "QuantMode_t::F322F16" if op.half else "QuantMode_t::NoQuant"
    b_rows = "N * K" if op.trans_b else "K * N"
    text = (_class_head(k0, tiling_cls, T, a, b, b_rows, bias_init, bias_free, op, bias, knobs)
            + _class_copies(bias_load, T, b_copy, b_split)
            + _class_tail(T, bias_use, quant, bias_members, op))
    return text


def _b_layout(op: CubeOp) -> tuple[str, str]:
    """How B gets into L1 (``b_copy``) and from there into L0B as Zn fractals (``b_split``): N x K (given
    transposed) without a transpose; a float K x N in 16-row bands through LoadDataWithTranspose; a half K x N with
    the fractals transposed by LoadData."""
    if op.trans_b:
        return _B_NK_COPY, _B_NK_SPLIT
    if not op.half:
        return _B_FLOAT_KN_COPY, _B_FLOAT_KN_SPLIT
    return _B_HALF_KN_COPY, _B_HALF_KN_SPLIT


def _bias_parts(bias: str | None, T: str) -> tuple[str, str, str, str, str]:
    """The bias's members, Init lines, LoadBias method, Mmad call and free (GM -> L1 -> the bias table, added by the
    first K step's Mmad); without a bias a plain Mmad."""
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
    return bias_members, bias_init, bias_load, bias_use, bias_free


def _class_head(k0: Any, tiling_cls: Any, T: Any, a: Any, b: Any, b_rows: Any, bias_init: Any, bias_free: Any, op: Any, bias: Any, knobs: Any) -> str:
    """The header, the class, its Init and the tile loop of Process."""
    return f"""#include "kernel_operator.h"
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

"""


def _class_copies(bias_load: Any, T: Any, b_copy: Any, b_split: Any) -> str:
    """The copies: A and B from GM into L1 (ND -> NZ), then into L0A/L0B."""
    return f"""private:
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
"""


def _class_tail(T: Any, bias_use: Any, quant: Any, bias_members: Any, op: Any) -> str:
    """Mmad, the Fixpipe out, the members and the kernel entry."""
    return f"""    __aicore__ inline void Compute(LocalTensor<float>& c1Local, uint32_t m, uint32_t n, uint32_t k, bool first)
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

