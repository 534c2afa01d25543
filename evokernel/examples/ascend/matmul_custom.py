"""Ascend C candidate for a float16 matrix multiplication (a @ b) on the cube unit: the operator-project
format of MultiKernelBench and the paper's NPU KernelBench, six strings.
task: npu_l1/31_matmul_fp16.py

    evokernel verify evokernel/suites/npu_l1/31_matmul_fp16.py evokernel/examples/ascend/matmul_custom.py \
        --backend ascend-sim

A cube-only kernel (KERNEL_TYPE_AIC_ONLY): the output is cut into baseM x baseN tiles spread over the cube
cores; per tile a loop over K in baseK steps copies A and B from GM into L1 (ND -> NZ), loads them into
L0A/L0B (B's fractals transposed), accumulates Mmad results in L0C, and writes the tile out through the
Fixpipe, rounding float to half on the way. The L1 and L0 queues hold two buffers each, so the next K
step's copies overlap the current Mmad. Tails in M and K are handled by the copies and Mmad's m/k; N has to
be a multiple of 16 (Fixpipe writes 16-column blocks), which the host checks."""

project_json_src = """
[
    {
        "op": "MatmulCustom",
        "language": "cpp",
        "input_desc": [
            {"name": "a", "param_type": "required", "format": ["ND"], "type": ["float16"]},
            {"name": "b", "param_type": "required", "format": ["ND"], "type": ["float16"]}
        ],
        "output_desc": [
            {"name": "c", "param_type": "required", "format": ["ND"], "type": ["float16"]}
        ]
    }
]
"""

host_tiling_src = """
#include "register/tilingdata_base.h"

namespace optiling {
BEGIN_TILING_DATA_DEF(MatmulCustomTilingData)
  TILING_DATA_FIELD_DEF(uint32_t, M);
  TILING_DATA_FIELD_DEF(uint32_t, N);
  TILING_DATA_FIELD_DEF(uint32_t, K);
  TILING_DATA_FIELD_DEF(uint32_t, baseM);
  TILING_DATA_FIELD_DEF(uint32_t, baseN);
  TILING_DATA_FIELD_DEF(uint32_t, baseK);
  TILING_DATA_FIELD_DEF(uint32_t, tilesM);
  TILING_DATA_FIELD_DEF(uint32_t, tilesN);
END_TILING_DATA_DEF;

REGISTER_TILING_DATA_CLASS(MatmulCustom, MatmulCustomTilingData)
}
"""

host_operator_src = """
#include "matmul_custom_tiling.h"
#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"

namespace optiling {
// base block: 128 x 128 of C in L0C (64 KiB of float), K in steps of 64 (A and B tiles of 16 KiB in L1
// and in L0A/L0B, two buffers each)
constexpr uint32_t BASE_M = 128;
constexpr uint32_t BASE_N = 128;
constexpr uint32_t BASE_K = 64;

static ge::graphStatus TilingFunc(gert::TilingContext* context)
{
    const gert::Shape& a = context->GetInputShape(0)->GetStorageShape();
    const gert::Shape& b = context->GetInputShape(1)->GetStorageShape();
    if (a.GetDimNum() != 2 || b.GetDimNum() != 2 || a.GetDim(1) != b.GetDim(0)) {
        return ge::GRAPH_FAILED;
    }
    uint32_t M = a.GetDim(0), K = a.GetDim(1), N = b.GetDim(1);
    if (N % 16 != 0) {
        return ge::GRAPH_FAILED;  // Fixpipe moves whole 16-column blocks
    }
    auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
    uint32_t cubeCores = platform.GetCoreNumAic();
    uint32_t tilesM = (M + BASE_M - 1) / BASE_M;
    uint32_t tilesN = (N + BASE_N - 1) / BASE_N;
    uint32_t tiles = tilesM * tilesN;

    MatmulCustomTilingData tiling;
    tiling.set_M(M);
    tiling.set_N(N);
    tiling.set_K(K);
    tiling.set_baseM(BASE_M);
    tiling.set_baseN(BASE_N);
    tiling.set_baseK(BASE_K);
    tiling.set_tilesM(tilesM);
    tiling.set_tilesN(tilesN);
    context->SetBlockDim(tiles < cubeCores ? tiles : cubeCores);
    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
    size_t* workspace = context->GetWorkspaceSizes(1);
    workspace[0] = 0;
    return ge::GRAPH_SUCCESS;
}
}

namespace ge {
static ge::graphStatus InferShape(gert::InferShapeContext* context)
{
    const gert::Shape* a = context->GetInputShape(0);
    const gert::Shape* b = context->GetInputShape(1);
    gert::Shape* c = context->GetOutputShape(0);
    c->SetDimNum(2);
    c->SetDim(0, a->GetDim(0));
    c->SetDim(1, b->GetDim(1));
    return GRAPH_SUCCESS;
}
}

namespace ops {
class MatmulCustom : public OpDef {
public:
    explicit MatmulCustom(const char* name) : OpDef(name)
    {
        this->Input("a").ParamType(REQUIRED).DataType({ge::DT_FLOAT16}).Format({ge::FORMAT_ND});
        this->Input("b").ParamType(REQUIRED).DataType({ge::DT_FLOAT16}).Format({ge::FORMAT_ND});
        this->Output("c").ParamType(REQUIRED).DataType({ge::DT_FLOAT16}).Format({ge::FORMAT_ND});
        this->SetInferShape(ge::InferShape);
        this->AICore().SetTiling(optiling::TilingFunc);
        this->AICore().AddConfig("ascend910b");
    }
};
OP_ADD(MatmulCustom);
}
"""

kernel_src = """
#include "kernel_operator.h"
using namespace AscendC;

constexpr int32_t BUFFER_NUM = 2;
constexpr uint32_t FRACTAL = 16;               // a half fractal is 16 x 16
constexpr uint32_t FRACTAL_SIZE = 16 * 16;

__aicore__ inline uint32_t CeilDiv(uint32_t a, uint32_t b) { return (a + b - 1) / b; }
__aicore__ inline uint32_t Min(uint32_t a, uint32_t b) { return a < b ? a : b; }

class KernelMatmul {
public:
    __aicore__ inline KernelMatmul() {}
    __aicore__ inline void Init(GM_ADDR a, GM_ADDR b, GM_ADDR c, const MatmulCustomTilingData& t)
    {
        M = t.M; N = t.N; K = t.K;
        baseM = t.baseM; baseN = t.baseN; baseK = t.baseK;
        tilesM = t.tilesM; tilesN = t.tilesN;
        aGm.SetGlobalBuffer((__gm__ half*)a, M * K);
        bGm.SetGlobalBuffer((__gm__ half*)b, K * N);
        cGm.SetGlobalBuffer((__gm__ half*)c, M * N);
        pipe.InitBuffer(inQueueA1, BUFFER_NUM, baseM * baseK * sizeof(half));
        pipe.InitBuffer(inQueueB1, BUFFER_NUM, baseK * baseN * sizeof(half));
        pipe.InitBuffer(inQueueA2, BUFFER_NUM, baseM * baseK * sizeof(half));
        pipe.InitBuffer(inQueueB2, BUFFER_NUM, baseK * baseN * sizeof(half));
        pipe.InitBuffer(outQueueCO1, 1, baseM * baseN * sizeof(float));
    }
    __aicore__ inline void Process()
    {
        for (uint32_t tile = GetBlockIdx(); tile < tilesM * tilesN; tile += GetBlockNum()) {
            uint32_t m0 = (tile / tilesN) * baseM;
            uint32_t n0 = (tile % tilesN) * baseN;
            uint32_t m = Min(baseM, M - m0);
            uint32_t n = Min(baseN, N - n0);
            LocalTensor<float> c1Local = outQueueCO1.AllocTensor<float>();
            for (uint32_t k0 = 0; k0 < K; k0 += baseK) {
                uint32_t k = Min(baseK, K - k0);
                CopyIn(m0, n0, k0, m, n, k);
                SplitA(m, k);
                SplitB(n, k);
                Compute(c1Local, m, n, k, k0 == 0);
            }
            outQueueCO1.EnQue<float>(c1Local);
            CopyOut(m0, n0, m, n);
        }
    }

private:
    __aicore__ inline void CopyIn(uint32_t m0, uint32_t n0, uint32_t k0, uint32_t m, uint32_t n, uint32_t k)
    {
        LocalTensor<half> a1Local = inQueueA1.AllocTensor<half>();
        LocalTensor<half> b1Local = inQueueB1.AllocTensor<half>();
        // A tile (m x k) -> NZ: column blocks of 16 along k, each m rounded up to 16 rows
        Nd2NzParams aParams;
        aParams.ndNum = 1;
        aParams.nValue = m;
        aParams.dValue = k;
        aParams.srcNdMatrixStride = 0;
        aParams.srcDValue = K;
        aParams.dstNzC0Stride = CeilDiv(m, FRACTAL) * FRACTAL;
        aParams.dstNzNStride = 1;
        aParams.dstNzMatrixStride = 0;
        DataCopy(a1Local, aGm[m0 * K + k0], aParams);
        // B tile (k x n) -> NZ: column blocks of 16 along n, each k rounded up to 16 rows
        Nd2NzParams bParams;
        bParams.ndNum = 1;
        bParams.nValue = k;
        bParams.dValue = n;
        bParams.srcNdMatrixStride = 0;
        bParams.srcDValue = N;
        bParams.dstNzC0Stride = CeilDiv(k, FRACTAL) * FRACTAL;
        bParams.dstNzNStride = 1;
        bParams.dstNzMatrixStride = 0;
        DataCopy(b1Local, bGm[k0 * N + n0], bParams);
        inQueueA1.EnQue(a1Local);
        inQueueB1.EnQue(b1Local);
    }
    __aicore__ inline void SplitA(uint32_t m, uint32_t k)
    {
        // NZ -> Zz: for each row block, its k fractals (one column block apart in L1)
        LocalTensor<half> a1Local = inQueueA1.DeQue<half>();
        LocalTensor<half> a2Local = inQueueA2.AllocTensor<half>();
        uint32_t mBlocks = CeilDiv(m, FRACTAL), kBlocks = CeilDiv(k, FRACTAL);
        LoadData2DParams params;
        params.repeatTimes = kBlocks;
        params.srcStride = mBlocks;
        params.ifTranspose = false;
        for (uint32_t i = 0; i < mBlocks; ++i) {
            LoadData(a2Local[i * kBlocks * FRACTAL_SIZE], a1Local[i * FRACTAL_SIZE], params);
        }
        inQueueA2.EnQue<half>(a2Local);
        inQueueA1.FreeTensor(a1Local);
    }
    __aicore__ inline void SplitB(uint32_t n, uint32_t k)
    {
        // NZ -> Zn: for each k block, its n fractals, each transposed
        LocalTensor<half> b1Local = inQueueB1.DeQue<half>();
        LocalTensor<half> b2Local = inQueueB2.AllocTensor<half>();
        uint32_t nBlocks = CeilDiv(n, FRACTAL), kBlocks = CeilDiv(k, FRACTAL);
        LoadData2DParams params;
        params.repeatTimes = nBlocks;
        params.srcStride = kBlocks;
        params.ifTranspose = true;
        for (uint32_t j = 0; j < kBlocks; ++j) {
            LoadData(b2Local[j * nBlocks * FRACTAL_SIZE], b1Local[j * FRACTAL_SIZE], params);
        }
        inQueueB2.EnQue<half>(b2Local);
        inQueueB1.FreeTensor(b1Local);
    }
    __aicore__ inline void Compute(LocalTensor<float>& c1Local, uint32_t m, uint32_t n, uint32_t k, bool first)
    {
        LocalTensor<half> a2Local = inQueueA2.DeQue<half>();
        LocalTensor<half> b2Local = inQueueB2.DeQue<half>();
        MmadParams params;
        params.m = m;
        params.n = n;
        params.k = k;
        params.cmatrixInitVal = first;  // the first K step starts C at 0, the others accumulate
        Mmad(c1Local, a2Local, b2Local, params);
        inQueueA2.FreeTensor(a2Local);
        inQueueB2.FreeTensor(b2Local);
    }
    __aicore__ inline void CopyOut(uint32_t m0, uint32_t n0, uint32_t m, uint32_t n)
    {
        LocalTensor<float> c1Local = outQueueCO1.DeQue<float>();
        FixpipeParamsV220 params;
        params.nSize = n;
        params.mSize = m;
        params.srcStride = CeilDiv(m, FRACTAL) * FRACTAL;
        params.dstStride = N;
        params.quantPre = QuantMode_t::F322F16;  // float accumulator -> half output
        params.ndNum = 1;
        Fixpipe(cGm[m0 * N + n0], c1Local, params);
        outQueueCO1.FreeTensor(c1Local);
    }

    TPipe pipe;
    TQue<TPosition::A1, BUFFER_NUM> inQueueA1;
    TQue<TPosition::B1, BUFFER_NUM> inQueueB1;
    TQue<TPosition::A2, BUFFER_NUM> inQueueA2;
    TQue<TPosition::B2, BUFFER_NUM> inQueueB2;
    TQue<TPosition::CO1, 1> outQueueCO1;
    GlobalTensor<half> aGm, bGm, cGm;
    uint32_t M = 0, N = 0, K = 0, baseM = 0, baseN = 0, baseK = 0, tilesM = 0, tilesN = 0;
};

extern "C" __global__ __aicore__ void matmul_custom(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    GET_TILING_DATA(tiling_data, tiling);
    KernelMatmul op;
    op.Init(a, b, c, tiling_data);
    op.Process();
}
"""

python_bind_src = """
#include <torch/library.h>
#include <torch/csrc/autograd/custom_function.h>
#include "pytorch_npu_helper.hpp"
#include <torch/extension.h>

at::Tensor matmul_custom_impl_npu(const at::Tensor& a, const at::Tensor& b) {
    at::Tensor result = at::empty({a.size(0), b.size(1)}, a.options());
    EXEC_NPU_CMD(aclnnMatmulCustom, a, b, result);
    return result;
}

TORCH_LIBRARY_IMPL(myops, PrivateUse1, m) {
    m.impl("matmul_custom", &matmul_custom_impl_npu);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("matmul_custom", &matmul_custom_impl_npu, "a @ b on the cube unit");
}
"""

model_src = """
import torch
import torch_npu
import custom_ops_lib


class ModelNew(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, a, b):
        return custom_ops_lib.matmul_custom(a, b)
"""
