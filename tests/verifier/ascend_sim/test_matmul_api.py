"""The high-level Matmul API (lib/matmul_intf.h) and its host tiling (matmul_tiling::MultiCoreMatmulTiling,
TCubeTiling) on ascend-sim: operator projects written the way CANN's samples use them (host GetTiling, kernel
REGIST_MATMUL_OBJ + SetTensorA/B + SetBias + SetTail + IterateAll or Iterate/GetTensorC), checked against numpy
for several shapes (tails that are not multiples of the base block, bias on and off, half and bfloat16, B
transposed, float with B transposed, multi-core splits), and misuse that must get a clear verdict."""
from __future__ import annotations

import numpy as np
import pytest

from ascend_sim_harness import NP_TO_SPEC

NP_TO_SPEC.setdefault(np.dtype(np.uint16), "bfloat16")  # bfloat16 tensors travel as their bit patterns

TILING_H = """
#include "register/tilingdata_base.h"
#include "tiling/tiling_api.h"
namespace optiling {
BEGIN_TILING_DATA_DEF(MmTilingData)
TILING_DATA_FIELD_DEF(int32_t, trans);
TILING_DATA_FIELD_DEF_STRUCT(TCubeTiling, cubeTilingData);
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS(MmCustom, MmTilingData)
}
"""

HOST = """
#include "mm_custom_tiling.h"
#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"
#include "tiling/tiling_api.h"
using namespace matmul_tiling;
namespace optiling {
static ge::graphStatus TilingFunc(gert::TilingContext* context) {
    auto plat = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
    auto sa = context->GetInputTensor(0)->GetOriginShape();
    auto sb = context->GetInputTensor(1)->GetOriginShape();
    const bool transB = @TRANS_B@;
    int32_t M = sa.GetDim(0), K = sa.GetDim(1);
    int32_t N = transB ? sb.GetDim(0) : sb.GetDim(1);
    auto dt = context->GetInputDesc(0)->GetDataType();
    DataType ad = dt == ge::DT_FLOAT16 ? DataType::DT_FLOAT16 : dt == ge::DT_BF16 ? DataType::DT_BF16 : DataType::DT_FLOAT;
    MultiCoreMatmulTiling t(plat);
    t.SetDim(@DIM@);
    t.SetAType(TPosition::GM, CubeFormat::ND, ad);
    t.SetBType(TPosition::GM, CubeFormat::ND, ad, transB);
    t.SetCType(TPosition::GM, CubeFormat::ND, DataType::DT_FLOAT);
    t.SetBiasType(TPosition::GM, CubeFormat::ND, DataType::DT_FLOAT);
    t.SetShape(M, N, K);
    t.SetOrgShape(M, N, K);
    @EXTRA@
    t.SetBias(@BIAS@);
    t.SetBufferSpace(-1, -1, -1);
    MmTilingData tiling;
    if (t.GetTiling(tiling.cubeTilingData) == -1) return ge::GRAPH_FAILED;
    @POST@
    tiling.set_trans(transB ? 1 : 0);
    context->SetBlockDim(@BLOCK_DIM@);
    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
    size_t* ws = context->GetWorkspaceSizes(1);
    ws[0] = plat.GetLibApiWorkSpaceSize()@USER_WS@;
    return ge::GRAPH_SUCCESS;
}
}
namespace ops {
class MmCustom : public OpDef {
public:
    explicit MmCustom(const char* name) : OpDef(name) {
        this->Input("a").ParamType(REQUIRED).DataType({ge::DT_FLOAT16, ge::DT_BF16, ge::DT_FLOAT}).Format({ge::FORMAT_ND, ge::FORMAT_ND, ge::FORMAT_ND});
        this->Input("b").ParamType(REQUIRED).DataType({ge::DT_FLOAT16, ge::DT_BF16, ge::DT_FLOAT}).Format({ge::FORMAT_ND, ge::FORMAT_ND, ge::FORMAT_ND});
        this->Input("bias").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_FLOAT, ge::DT_FLOAT}).Format({ge::FORMAT_ND, ge::FORMAT_ND, ge::FORMAT_ND});
        this->Output("c").ParamType(REQUIRED).DataType({@C_LIST@}).Format({ge::FORMAT_ND, ge::FORMAT_ND, ge::FORMAT_ND});
        this->AICore().SetTiling(optiling::TilingFunc).AddConfig("ascend910b");
    }
};
OP_ADD(MmCustom);
}
"""

# The kernel as CANN's multi-core matmul sample writes it (per-core offsets from the tiling, SetTail for the
# edge cores), with the C write chosen by MODE: 0 IterateAll, 1 Iterate + GetTensorC to GM in place.
KERNEL = """@CUBE_ONLY@
#include "kernel_operator.h"
#include "lib/matmul_intf.h"
using namespace matmul;
template <typename aType, typename cType> class MmKernel {
public:
    __aicore__ inline void Init(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, const TCubeTiling& tiling, bool transB) {
        this->tiling = tiling;
        this->transB = transB;
        aGlobal.SetGlobalBuffer(reinterpret_cast<__gm__ aType*>(a), tiling.M * tiling.Ka);
        bGlobal.SetGlobalBuffer(reinterpret_cast<__gm__ aType*>(b), tiling.Kb * tiling.N);
        cGlobal.SetGlobalBuffer(reinterpret_cast<__gm__ cType*>(c), tiling.M * tiling.N);
        biasGlobal.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(bias), tiling.N);
        int32_t mBlocks = (tiling.M + tiling.singleCoreM - 1) / tiling.singleCoreM;
        mIdx = GetBlockIdx() % mBlocks;
        nIdx = GetBlockIdx() / mBlocks;
        int32_t offA = mIdx * tiling.Ka * tiling.singleCoreM;
        int32_t offB = transB ? nIdx * tiling.singleCoreN * tiling.Kb : nIdx * tiling.singleCoreN;
        aGlobal = aGlobal[offA];
        bGlobal = bGlobal[offB];
        cGlobal = cGlobal[mIdx * tiling.N * tiling.singleCoreM + nIdx * tiling.singleCoreN];
        biasGlobal = biasGlobal[nIdx * tiling.singleCoreN];
        mm.SetOrgShape(tiling.M, tiling.N, tiling.Ka, tiling.Kb);
    }
    __aicore__ inline void Process() {
        if (GetBlockIdx() >= tiling.usedCoreNum) return;
        int32_t tailM = tiling.M - mIdx * tiling.singleCoreM;
        int32_t tailN = tiling.N - nIdx * tiling.singleCoreN;
        mm.SetTail(tailM < tiling.singleCoreM ? tailM : tiling.singleCoreM,
                   tailN < tiling.singleCoreN ? tailN : tiling.singleCoreN, -1);
        @SET_A@
        mm.SetTensorB(bGlobal, transB);
        @SET_BIAS@
#if @MODE@ == 0
        mm.IterateAll(cGlobal);
#elif @MODE@ == 1
        while (mm.Iterate()) mm.GetTensorC(cGlobal);
#elif @MODE@ == 3
        // as MatmulLeakyReluInvocationAsync does it (and CANN's Iterate.md example): one asynchronous Iterate has
        // the cube compute every block into the workspace, GetTensorC<false> reads them one after the other
        @SET_WS@
        mm.template Iterate<false>();
        const uint32_t roundM = (tiling.singleCoreM + tiling.baseM - 1) / tiling.baseM;
        const uint32_t blocks = roundM * ((tiling.singleCoreN + tiling.baseN - 1) / tiling.baseN);
        for (uint32_t count = 0; count < blocks; ++count) {
            AscendC::LocalTensor<cType> t = outQueue.AllocTensor<cType>();
            mm.template GetTensorC<false>(t, false, true);
            AscendC::LeakyRelu(t, t, (cType)0.1f, tiling.baseM * tiling.baseN);
            outQueue.EnQue(t);
            t = outQueue.DeQue<cType>();
            AscendC::DataCopyParams cp = {(uint16_t)tiling.baseM, (uint16_t)(tiling.baseN * sizeof(cType) / 32), 0,
                                          (uint16_t)((tiling.N - tiling.baseN) * sizeof(cType) / 32)};
            AscendC::DataCopy(cGlobal[count % roundM * tiling.baseM * tiling.N + count / roundM * tiling.baseN], t, cp);
            outQueue.FreeTensor(t);
        }
#else
        // as 12_matmulleakyrelu does it: each block into the UB, LeakyRelu there, out to its place in C
        // (whole blocks: the split is even); the UB path needs the system workspace (SetSysWorkspace)
        uint32_t count = 0;
        const uint32_t roundM = (tiling.singleCoreM + tiling.baseM - 1) / tiling.baseM;
        while (mm.template Iterate<true>()) {
            AscendC::LocalTensor<cType> t = outQueue.AllocTensor<cType>();
            mm.template GetTensorC<true>(t, false, true);
            AscendC::LeakyRelu(t, t, (cType)0.1f, tiling.baseM * tiling.baseN);
            outQueue.EnQue(t);
            t = outQueue.DeQue<cType>();
            AscendC::DataCopyParams cp = {(uint16_t)tiling.baseM, (uint16_t)(tiling.baseN * sizeof(cType) / 32), 0,
                                          (uint16_t)((tiling.N - tiling.baseN) * sizeof(cType) / 32)};
            AscendC::DataCopy(cGlobal[count % roundM * tiling.baseM * tiling.N + count / roundM * tiling.baseN], t, cp);
            outQueue.FreeTensor(t);
            ++count;
        }
#endif
        mm.End();
    }
    Matmul<MatmulType<AscendC::TPosition::GM, CubeFormat::ND, aType>, MatmulType<AscendC::TPosition::GM, CubeFormat::ND, aType>,
           MatmulType<AscendC::TPosition::GM, CubeFormat::ND, cType>, MatmulType<AscendC::TPosition::GM, CubeFormat::ND, float>> mm;
    AscendC::GlobalTensor<aType> aGlobal, bGlobal;
    AscendC::GlobalTensor<cType> cGlobal;
    AscendC::GlobalTensor<float> biasGlobal;
    AscendC::GlobalTensor<cType> wsGlobal;  // MODE 3: this core's share of the user workspace
    AscendC::TQue<AscendC::TPosition::VECOUT, 1> outQueue;
    TCubeTiling tiling;
    bool transB = false;
    int32_t mIdx = 0, nIdx = 0;
};
extern "C" __global__ __aicore__ void mm_custom(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR workspace,
                                                GM_ADDR tiling) {
    @KERNEL_TYPE@
    GET_TILING_DATA(tilingData, tiling);
    MmKernel<DTYPE_A, DTYPE_C> k;
    AscendC::TPipe pipe;
#if @MODE@ >= 2
    AscendC::SetSysWorkspace(workspace);
#endif
    @REGIST@
#if @MODE@ == 3
    const TCubeTiling& ct = tilingData.cubeTilingData;
    k.wsGlobal.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(AscendC::GetUserWorkspace(workspace)) +
                               GetBlockIdx() * ct.singleCoreM * ct.singleCoreN, ct.singleCoreM * ct.singleCoreN);
#endif
#if @MODE@ >= 2
    pipe.InitBuffer(k.outQueue, 1, tilingData.cubeTilingData.baseM * tilingData.cubeTilingData.baseN * sizeof(float));
#endif
    k.Init(a, b, bias, c, tilingData.cubeTilingData, tilingData.trans != 0);
    k.Process();
}
"""

C_TYPES = {"float16": "half", "bfloat16": "bfloat16_t", "float32": "float"}


def bf16_bits(x: np.ndarray) -> np.ndarray:
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_value(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def build(sim, tmp_path_factory, dtype="float16", *, trans_b=False, bias=True, dim=8, extra="", post="", mode=0,
          c_type="float", cube_only=False, ratio1=False,
          set_a="mm.SetTensorA(aGlobal);", regist="REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), k.mm, "
          "&tilingData.cubeTilingData);", tag="", set_ws="mm.SetWorkspace(wsGlobal);"):
    host = (HOST.replace("@TRANS_B@", "true" if trans_b else "false").replace("@DIM@", str(dim))
            .replace("@EXTRA@", extra).replace("@POST@", post)
            .replace("@USER_WS@", " + (size_t)M * N * 4" if mode == 3 else "").replace("@BIAS@", "true" if bias else "false")
            .replace("@C_LIST@", "ge::DT_FLOAT, ge::DT_FLOAT, ge::DT_FLOAT" if c_type == "float"
                     else "ge::DT_FLOAT16, ge::DT_BF16, ge::DT_FLOAT")
            .replace("@BLOCK_DIM@", "tiling.cubeTilingData.usedCoreNum" if cube_only or ratio1
                     else "(tiling.cubeTilingData.usedCoreNum + 1) / 2"))
    kernel = (KERNEL.replace("@MODE@", str(mode)).replace("@SET_WS@", set_ws).replace("@SET_A@", set_a).replace("@REGIST@", regist)
              .replace("@SET_BIAS@", "mm.SetBias(biasGlobal);" if bias else "")
              .replace("@CUBE_ONLY@", "#define ASCENDC_CUBE_ONLY" if cube_only else
                       "#define EVK_SIM_MIX 1  // what the ascend-sim build defines for KERNEL_TYPE_MIX_AIC_1_1"
                       if ratio1 else "")
              .replace("@KERNEL_TYPE@", "KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);" if cube_only else
                       "KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_1);" if ratio1 else ""))
    d = tmp_path_factory.mktemp(f"mm-{dtype}{tag}")
    t = C_TYPES[dtype]
    exe = sim.op_project(d, op="MmCustom", kernel_name="mm_custom", kernel_src=kernel, host_src=host,
                         tiling_src=TILING_H, tiling_header="mm_custom_tiling.h",
                         dtypes={"a": t, "b": t, "bias": "float", "c": t if c_type == "same" else "float"},
                         label=f"matmul API {dtype}{tag}: kernel + host + launcher")
    return exe, d


def inputs(dtype, m, n, k, trans_b, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, k) if trans_b else (k, n)).astype(np.float32)
    bias = rng.uniform(-1, 1, (n,)).astype(np.float32)
    if dtype == "float16":
        a, b = a.astype(np.float16), b.astype(np.float16)
        av, bv = a.astype(np.float64), b.astype(np.float64)
    elif dtype == "bfloat16":
        a, b = bf16_bits(a), bf16_bits(b)
        av, bv = bf16_value(a).astype(np.float64), bf16_value(b).astype(np.float64)
    else:
        av, bv = a.astype(np.float64), b.astype(np.float64)
    ref = av @ (bv.T if trans_b else bv)
    return a, b, bias, ref


def run(sim, built, dtype, m, n, k, *, trans_b=False, bias=True, seed=0):
    exe, d = built
    a, b, bv, ref = inputs(dtype, m, n, k, trans_b, seed)
    if bias:
        ref = ref + bv
    res = sim.run_op(exe, d, "MmCustom", [("a", a), ("b", b), ("bias", bv)], [("c", (m, n), np.float32)])
    return res, ref


@pytest.fixture(scope="module")
def mm_f16(sim, tmp_path_factory):
    return build(sim, tmp_path_factory, "float16")


@pytest.mark.parametrize("m,n,k", [(256, 256, 128), (200, 176, 100), (33, 300, 520), (1024, 640, 256)])
def test_iterate_all_matches_numpy_with_tails_and_cores(sim, mm_f16, m, n, k):
    res, ref = run(sim, mm_f16, "float16", m, n, k)
    assert res.rc == 0 and res.rules("error") == set(), (res.stderr[-2000:], res.violations)
    np.testing.assert_allclose(res.outputs["c"], ref, rtol=2e-3, atol=2e-3)
    # the cube did the work: ND2NZ copies, L1 -> L0 loads, Mmads and Fixpipes in the schedule
    rep = res.report
    assert rep["status"] == "ok", rep.get("status")
    aic = [blk for blk in rep["blocks"] if blk.get("core") == "aic"]
    assert aic and any(blk["timing_estimate"]["busy_cycles"]["cube"] > 0 for blk in aic)


@pytest.mark.parametrize("dtype,trans_b,bias,m,n,k", [
    ("bfloat16", False, True, 130, 96, 72),
    ("bfloat16", True, False, 64, 200, 136),
    ("float16", True, True, 48, 80, 40),
    ("float32", True, True, 70, 50, 90),
])
def test_types_transpose_and_bias(sim, tmp_path_factory, dtype, trans_b, bias, m, n, k):
    built = build(sim, tmp_path_factory, dtype, trans_b=trans_b, bias=bias, dim=4,
                  tag=f"-{int(trans_b)}{int(bias)}")
    res, ref = run(sim, built, dtype, m, n, k, trans_b=trans_b, bias=bias, seed=3)
    assert res.rc == 0 and res.rules("error") == set(), (res.stderr[-2000:], res.violations)
    np.testing.assert_allclose(res.outputs["c"], ref, rtol=1e-4, atol=1e-4)


def test_iterate_and_get_tensor_c_visit_every_block(sim, tmp_path_factory):
    # small fixed base blocks: many Iterate steps per core, with row and column tails inside each core
    built = build(sim, tmp_path_factory, "float16", dim=3, extra="t.SetFixSplit(32, 48, -1);", mode=1, tag="-iter")
    res, ref = run(sim, built, "float16", 150, 170, 64, seed=5)
    assert res.rc == 0 and res.rules("error") == set(), (res.stderr[-2000:], res.violations)
    np.testing.assert_allclose(res.outputs["c"], ref, rtol=2e-3, atol=2e-3)
    aic = [blk for blk in res.report["blocks"] if blk.get("core") == "aic"]
    assert sum(blk["counters"]["cube"]["fix_calls"] for blk in aic) >= 5 * 4  # one Fixpipe per 32 x 48 block


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_c_in_half_and_bfloat16_is_rounded_by_the_fixpipe(sim, tmp_path_factory, dtype):
    built = build(sim, tmp_path_factory, dtype, dim=4, c_type="same", tag="-c16")
    m, n, k = 96, 112, 80
    a, b, bv, ref = inputs(dtype, m, n, k, False, seed=6)
    ref = ref + bv
    out_dt = np.float16 if dtype == "float16" else np.uint16
    res = sim.run_op(built[0], built[1], "MmCustom", [("a", a), ("b", b), ("bias", bv)], [("c", (m, n), out_dt)])
    assert res.rc == 0 and res.rules("error") == set(), (res.stderr[-2000:], res.violations)
    got = res.outputs["c"].astype(np.float64) if dtype == "float16" else bf16_value(res.outputs["c"]).astype(np.float64)
    want = ref.astype(np.float16).astype(np.float64) if dtype == "float16" else bf16_value(bf16_bits(ref)).astype(np.float64)
    tol = 2e-3 if dtype == "float16" else 1.6e-2
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_a_cube_only_kernel_computes_on_each_cube_core(sim, tmp_path_factory):
    # ASCENDC_CUBE_ONLY + KERNEL_TYPE_AIC_ONLY: no AIV, no server; each block's cube core runs its own Matmul
    built = build(sim, tmp_path_factory, "float16", dim=6, cube_only=True, tag="-cube")
    res, ref = run(sim, built, "float16", 160, 144, 64, seed=8)
    assert res.rc == 0 and res.rules("error") == set(), (res.stderr[-2000:], res.violations)
    np.testing.assert_allclose(res.outputs["c"], ref, rtol=2e-3, atol=2e-3)
    blocks = res.report["blocks"]
    assert blocks and all(blk["kernel_type"] == "aic" and "ai_core" not in blk for blk in blocks)
    assert sum(blk["counters"]["cube"]["mmad_calls"] > 0 for blk in blocks) == len(blocks)


def test_a_one_to_one_mix_kernel_serves_its_single_vector_core(sim, tmp_path_factory):
    built = build(sim, tmp_path_factory, "float16", dim=3, ratio1=True, tag="-r1")
    exe, d = built
    a, b, bv, ref = inputs("float16", 96, 80, 48, False, seed=12)
    res = sim.run_op(exe, d, "MmCustom", [("a", a), ("b", b), ("bias", bv)], [("c", (96, 80), np.float32)],
                     options={"mix": 1})
    assert res.rc == 0 and res.rules("error") == set(), (res.stderr[-2000:], res.violations)
    np.testing.assert_allclose(res.outputs["c"], ref + bv, rtol=2e-3, atol=2e-3)
    cores = [blk["core"] for blk in res.report["blocks"]]
    assert cores.count("aic") == cores.count("aiv") == 3


def test_n_first_traversal_with_get_tensor_c_in_place(sim, tmp_path_factory):
    built = build(sim, tmp_path_factory, "bfloat16", dim=2, mode=1, tag="-nfirst",
                  extra="t.SetTraverse(MatrixTraverse::FIRSTN); t.SetFixSplit(48, 32, -1);")
    res, ref = run(sim, built, "bfloat16", 100, 90, 40, seed=2)
    assert res.rc == 0 and res.rules("error") == set(), (res.stderr[-2000:], res.violations)
    np.testing.assert_allclose(res.outputs["c"], ref, rtol=1e-4, atol=1e-4)


def test_get_tensor_c_into_the_ub_through_the_workspace_then_a_vector_epilogue(sim, tmp_path_factory):
    built = build(sim, tmp_path_factory, "float16", dim=8, extra="t.SetFixSplit(64, 80, -1);", mode=2, tag="-ub")
    res, ref = run(sim, built, "float16", 256, 320, 96, seed=9)
    assert res.rc == 0 and res.rules("error") == set(), (res.stderr[-2000:], res.violations)
    np.testing.assert_allclose(res.outputs["c"], np.where(ref >= 0, ref, 0.1 * ref), rtol=2e-3, atol=2e-3)
    aiv = [blk for blk in res.report["blocks"] if blk.get("core") == "aiv"]
    # the AIVs moved each C block GM (workspace) -> UB and UB -> GM themselves
    assert sum(blk["counters"]["mte3_bytes"] for blk in aiv) == 256 * 320 * 4


def test_an_asynchronous_iterate_fills_the_workspace_and_get_tensor_c_reads_block_after_block(sim, tmp_path_factory):
    # Iterate<false> once, then GetTensorC<false> per block (CANN's Iterate.md); the emulator used to hand out the
    # first block every time
    built = build(sim, tmp_path_factory, "float16", dim=8, extra="t.SetFixSplit(64, 80, -1);", mode=3, tag="-async")
    res, ref = run(sim, built, "float16", 256, 320, 96, seed=9)
    assert res.rc == 0 and res.rules("error") == set(), (res.stderr[-2000:], res.violations)
    np.testing.assert_allclose(res.outputs["c"], np.where(ref >= 0, ref, 0.1 * ref), rtol=2e-3, atol=2e-3)


def test_an_asynchronous_iterate_without_set_workspace_is_refused(sim, tmp_path_factory):
    built = build(sim, tmp_path_factory, "float16", dim=8, extra="t.SetFixSplit(64, 80, -1);", mode=3,
                  tag="-async-nows", set_ws="")
    res, _ = run(sim, built, "float16", 256, 320, 96, seed=9)
    v = res.find("invalid_argument")
    assert v and v[0]["severity"] == "fatal" and "SetWorkspace" in v[0]["message"], res.violations


@pytest.mark.parametrize("m,n,k,dim", [(32, 32, 32, 2), (70, 50, 90, 4), (130, 72, 200, 8)])
def test_a_float_matmul_with_row_major_b_goes_through_the_transposing_load(sim, tmp_path_factory, m, n, k, dim):
    """float x float with B in row-major ND (K x N): Zz blocks in L1, LoadDataWithTranspose into L0B."""
    built = build(sim, tmp_path_factory, "float32", dim=dim, tag=f"-f32nt{dim}")
    res, ref = run(sim, built, "float32", m, n, k, seed=5)
    assert res.rc == 0 and res.rules("error") == set(), (res.stderr[-2000:], res.violations)
    np.testing.assert_allclose(res.outputs["c"], ref, rtol=1e-4, atol=1e-4)
    aic = [blk for blk in res.report["blocks"] if blk.get("core") == "aic"]
    assert sum(blk["timing_estimate"]["busy_cycles"].get("mte1", 0) for blk in aic) > 0


@pytest.mark.parametrize("mk,n", [(48, 40), (40, 72)])
def test_a_float_matmul_with_transposed_a(sim, tmp_path_factory, mk, n):
    """SetTensorA(a, true) with float A^T (K x M): Zz blocks in L1, LoadDataWithTranspose into L0A, Mmad with
    kDirectionAlign. One core; M == K so the test's host tiling (which reads M, K from A's shape) holds."""
    built = build(sim, tmp_path_factory, "float32", dim=1, set_a="mm.SetTensorA(aGlobal, true);",
                  extra="t.SetAType(TPosition::GM, CubeFormat::ND, ad, true);", tag=f"-f32ta{mk}")
    exe, d = built
    a, b, bv, _ = inputs("float32", mk, n, mk, False, seed=9)
    ref = a.astype(np.float64).T @ b.astype(np.float64) + bv  # the kernel reads `a` as A^T
    res = sim.run_op(exe, d, "MmCustom", [("a", a), ("b", b), ("bias", bv)], [("c", (mk, n), np.float32)])
    assert res.rc == 0 and res.rules("error") == set(), (res.stderr[-2000:], res.violations)
    np.testing.assert_allclose(res.outputs["c"], ref, rtol=1e-4, atol=1e-4)


def test_a_float_row_major_b_with_a_base_k_of_8_is_refused_by_name(sim, tmp_path_factory):
    """The transposing load moves 16 x 16 float squares: a fixed baseK of 8 would split them."""
    built = build(sim, tmp_path_factory, "float32", dim=2, extra="t.SetFixSplit(-1, -1, 8);", tag="-f32k8")
    res, _ = run(sim, built, "float32", 32, 32, 32)
    assert res.report["status"] != "ok"
    hit = res.find("unsupported_api")
    assert hit and "baseK=8" in hit[0]["message"], res.violations


def test_without_regist_matmul_obj_the_verdict_says_so(sim, tmp_path_factory):
    built = build(sim, tmp_path_factory, "float16", dim=2, regist="", tag="-noreg")
    res, _ = run(sim, built, "float16", 32, 32, 32)
    assert res.report["status"] != "ok"
    hit = [v for v in res.violations if v["severity"] == "fatal"]
    assert hit and "REGIST_MATMUL_OBJ" in hit[0]["message"], res.violations


def test_iterate_all_before_set_tensor_a_is_fatal(sim, tmp_path_factory):
    built = build(sim, tmp_path_factory, "float16", dim=2, set_a="", tag="-noa")
    res, _ = run(sim, built, "float16", 32, 32, 32)
    assert res.report["status"] != "ok"
    hit = [v for v in res.violations if v["severity"] == "fatal"]
    assert hit and "SetTensorA" in hit[0]["message"] and hit[0]["rule"] == "invalid_tensor", res.violations


def test_a_tiling_that_overflows_l1_is_caught_on_the_cube_core(sim, tmp_path_factory):
    # a tiling edited after GetTiling to stage 64 K blocks of A in L1: 64 x 128 x 128 x 2 bytes > 512 KiB
    built = build(sim, tmp_path_factory, "float16", dim=2, tag="-l1",
                  post="tiling.cubeTilingData.set_stepKa(64); tiling.cubeTilingData.set_depthA1(128);")
    res, _ = run(sim, built, "float16", 256, 256, 512)
    assert res.report["status"] != "ok"
    msgs = " ".join(v["message"] for v in res.violations if v["severity"] in ("error", "fatal"))
    assert "L1" in msgs, res.violations


def test_an_impossible_fixed_split_fails_in_the_tiling_function(sim, tmp_path_factory):
    # baseM = baseN = baseK = 256 in half: 256 KiB of L0A for one block (the 910B has 64 KiB)
    built = build(sim, tmp_path_factory, "float16", dim=2, extra="t.SetFixSplit(256, 256, 256);", tag="-fix")
    res, _ = run(sim, built, "float16", 256, 256, 256)
    assert res.rc != 0
    assert "matmul_tiling GetTiling: no base block fits" in res.stderr, res.stderr[-2000:]


# ---- the host tiling on its own -------------------------------------------------------------------------

TILING_PROBE = r"""
#include <cstdio>
#include <cstdlib>
#include "tiling/tiling_api.h"
using namespace matmul_tiling;
int main(int argc, char** argv) {
    int M = atoi(argv[1]), N = atoi(argv[2]), K = atoi(argv[3]), dim = atoi(argv[4]);
    int fm = atoi(argv[5]), fn = atoi(argv[6]), sm = atoi(argv[7]), sn = atoi(argv[8]), f32 = atoi(argv[9]);
    platform_ascendc::PlatformAscendC p(nullptr);
    MultiCoreMatmulTiling t(p);
    DataType ad = f32 ? DataType::DT_FLOAT : DataType::DT_FLOAT16;
    t.SetDim(dim);
    t.SetAType(TPosition::GM, CubeFormat::ND, ad);
    t.SetBType(TPosition::GM, CubeFormat::ND, ad);
    t.SetCType(TPosition::GM, CubeFormat::ND, DataType::DT_FLOAT);
    t.SetBiasType(TPosition::GM, CubeFormat::ND, DataType::DT_FLOAT);
    t.SetShape(M, N, K);
    t.SetOrgShape(M, N, K);
    t.SetFixSplit(fm, fn, -1);
    if (sm > 0) t.SetSingleShape(sm, sn, -1);
    t.SetBias(true);
    optiling::TCubeTiling c;
    long r = t.GetTiling(c);
    std::printf("%ld", r);
#define P(f) std::printf(" %d", c.f);
    EVK_TCUBE_FIELDS(P)
    std::printf("\n");
    return 0;
}
"""
FIELDS = ("usedCoreNum M N Ka Kb singleCoreM singleCoreN singleCoreK baseM baseN baseK depthA1 depthB1 stepM stepN "
          "isBias transLength iterateOrder shareMode shareL1Size shareL0CSize shareUbSize").split()


@pytest.fixture(scope="module")
def probe(sim, tmp_path_factory):
    d = tmp_path_factory.mktemp("tiling-probe")
    (d / "probe.cpp").write_text(TILING_PROBE)
    sim._gxx(["probe.cpp", str(sim.runtime_obj), "-o", "probe"], cwd=d)
    return d / "probe"


def tiling(probe, m, n, k, dim, fix=(-1, -1), single=(-1, -1), f32=False):
    import subprocess

    out = subprocess.run([str(probe), *map(str, (m, n, k, dim, *fix, *single, int(f32)))], capture_output=True,
                         text=True, timeout=30)
    vals = out.stdout.split()
    return int(vals[0]), dict(zip(FIELDS, map(int, vals[1:]))), out.stderr


@pytest.mark.parametrize("m,n,k,dim,fix,single,f32", [
    (1024, 640, 256, 40, (-1, -1), (-1, -1), False),
    (1024, 640, 256, 40, (-1, 160), (-1, -1), False),
    (4096, 4096, 4096, 20, (-1, -1), (-1, -1), False),
    (77, 1000, 3000, 24, (-1, -1), (-1, -1), False),
    (512, 640, 256, 2, (128, 128), (512, 640), False),
    (300, 300, 700, 8, (-1, -1), (-1, -1), True),
])
def test_the_tiling_is_valid_for_the_910b(probe, m, n, k, dim, fix, single, f32):
    rc, t, err = tiling(probe, m, n, k, dim, fix, single, f32)
    assert rc == 0, err
    size = 4 if f32 else 2
    assert (t["M"], t["N"], t["Ka"], t["Kb"], t["isBias"]) == (m, n, k, k, 1)
    assert t["baseM"] % 16 == 0 and t["baseN"] % 16 == 0 and t["baseK"] % (32 // size) == 0
    assert t["baseM"] * t["baseK"] * size * 2 <= 64 * 1024 and t["baseK"] * t["baseN"] * size * 2 <= 64 * 1024
    assert t["baseM"] * t["baseN"] * 4 <= 128 * 1024
    assert t["depthA1"] * t["baseM"] * t["baseK"] * size + t["depthB1"] * t["baseN"] * t["baseK"] * size \
        + t["baseN"] * 4 <= 512 * 1024 and t["shareL1Size"] <= 512 * 1024
    assert t["depthA1"] >= t["stepKa"] >= 1 if "stepKa" in t else True
    cores_m = -(-m // t["singleCoreM"])
    cores_n = -(-n // t["singleCoreN"])
    assert t["usedCoreNum"] == cores_m * cores_n <= dim
    assert t["singleCoreK"] == k
    if fix[0] > 0:
        assert t["baseM"] == fix[0]
    if fix[1] > 0:
        assert t["baseN"] == fix[1]
    if single[0] > 0:
        assert (t["singleCoreM"], t["singleCoreN"]) == single


def test_the_samples_split_is_even(probe):
    # 12_matmulleakyrelu copies whole baseM x baseN blocks out: its tiling must split M and N evenly
    rc, t, _ = tiling(probe, 1024, 640, 256, 40, (-1, 160))
    assert rc == 0
    assert 1024 % t["singleCoreM"] == 0 and 640 % t["singleCoreN"] == 0
    assert t["singleCoreM"] % t["baseM"] == 0 and t["singleCoreN"] % t["baseN"] == 0


@pytest.mark.parametrize("args,message", [
    ((0, 64, 64, 8), "every size must be positive"),
    ((64, 64, 64, 0), "SetDim"),
    ((64, 64, 64, 8, (24, -1)), "multiple of 16"),
    ((512, 512, 64, 2, (-1, -1), (128, 128)), "needs 16 cores"),
])
def test_impossible_requests_return_minus_one_with_a_reason(probe, args, message):
    rc, _, err = tiling(probe, *args)
    assert rc == -1 and message in err, err


# ---- Ascend's kernel-launch matmul sample: its host tiling file and its kernel, both as published ---------

def _samples():
    try:
        from evokernel.evals.bench.ascend_samples import default_samples, extract
    except Exception:  # noqa: BLE001 - the package is not importable here
        return None, None
    return default_samples(), extract


def kernel_launch_tiling(sim, tmp_path):
    """The sample's host GenerateTiling, compiled unchanged and run (evals/bench/ascend_launch_samples.host_tiling)."""
    mirror, extract = _samples()
    if mirror is None:
        pytest.skip("no mirror of Ascend's samples (EVOKERNEL_ASCEND_SAMPLES)")
    from evokernel.evals.bench.ascend_launch_samples import BY_NAME, host_tiling

    sample = BY_NAME["matmul"]
    src = extract(mirror, sample.path, tmp_path)
    tiling_file, t = host_tiling(sample, src, tmp_path, tmp_path)
    return src, tiling_file, t


def test_the_kernel_launch_matmul_samples_host_tiling_compiles_unchanged(sim, tmp_path):
    _, _, t = kernel_launch_tiling(sim, tmp_path)
    assert (t["M"], t["N"], t["Ka"], t["Kb"], t["isBias"]) == (512, 1024, 512, 512, 0)
    assert 0 < t["usedCoreNum"] <= 40 and t["baseM"] % 16 == 0 and t["baseN"] % 16 == 0
    assert -(-512 // t["singleCoreM"]) * -(-1024 // t["singleCoreN"]) == t["usedCoreNum"]


# the kernel of that sample, and of 22_baremix_kernellaunch, run unchanged as rows of the kernel-launch samples
# table (evals/bench/ascend_launch_samples.py, tests/evals/test_ascend_launch_samples.py)


def test_what_the_matmul_apis_own_instructions_report_says_it_comes_from_inside_the_api(sim, tmp_path_factory):
    """A GlobalTensor for A declared at half its size: the emulated Matmul's own GM->L1 copy reads past it (a
    warning, inside the real buffer). The report sits at the kernel's IterateAll, and says the instruction it names
    is the API's, not a line of the kernel (it said 'DataCopy GM->L1 ... at' the kernel's line, a copy the kernel
    never wrote)."""
    built = build(sim, tmp_path_factory, "float16", dim=1, tag="-halfa",
                  set_a="AscendC::GlobalTensor<aType> ah; ah.SetGlobalBuffer(aGlobal.GetPhyAddr(), "
                        "tiling.M * tiling.Ka / 2); mm.SetTensorA(ah);")
    res, ref = run(sim, built, "float16", 64, 64, 64)
    assert res.rc == 0 and res.rules("error") == set(), res.violations
    warn = [v for v in res.find("gm_out_of_bounds") if v["severity"] == "warning"]
    assert warn and warn[0]["message"].startswith("inside the Matmul API (its own instructions"), res.violations
