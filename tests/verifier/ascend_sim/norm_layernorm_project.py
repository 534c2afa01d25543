"""Ascend C candidate for layer normalisation over the last axis (npu_l1/21_layer_norm.py) built on the high-level
API: the host calls GetLayerNormMaxMinTmpSize and GetLayerNormNDTilingInfo ({B, S, H, originH} for one row) into a
TILING_DATA_FIELD_DEF_STRUCT(LayerNormTiling) member; the kernel calls AscendC::LayerNorm<float> (the [B, S, H]
form) row by row with the minimum tmp space. Test data for tests/verifier/ascend_sim/test_norm_api.py."""

project_json_src = """
[
    {
        "op": "LayerNormCustom",
        "language": "cpp",
        "input_desc": [
            {"name": "x", "param_type": "required", "format": ["ND"], "type": ["float"]},
            {"name": "gamma", "param_type": "required", "format": ["ND"], "type": ["float"]},
            {"name": "beta", "param_type": "required", "format": ["ND"], "type": ["float"]}
        ],
        "output_desc": [{"name": "y", "param_type": "required", "format": ["ND"], "type": ["float"]}]
    }
]
"""

host_tiling_src = """
#include "register/tilingdata_base.h"
#include "tiling/tiling_api.h"

namespace optiling {
BEGIN_TILING_DATA_DEF(LayerNormCustomTilingData)
  TILING_DATA_FIELD_DEF(uint32_t, rows);
  TILING_DATA_FIELD_DEF(uint32_t, cols);
  TILING_DATA_FIELD_DEF(uint32_t, rowsPerBlock);
  TILING_DATA_FIELD_DEF(uint32_t, bigBlocks);
  TILING_DATA_FIELD_DEF(uint32_t, tmpBytes);
  TILING_DATA_FIELD_DEF(float, eps);
  TILING_DATA_FIELD_DEF_STRUCT(LayerNormTiling, lnTiling);
END_TILING_DATA_DEF;

REGISTER_TILING_DATA_CLASS(LayerNormCustom, LayerNormCustomTilingData)
}
"""

host_operator_src = """
#include <vector>
#include "layer_norm_custom_tiling.h"
#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"
#include "tiling/tiling_api.h"

namespace optiling {
static ge::graphStatus TilingFunc(gert::TilingContext* context)
{
    LayerNormCustomTilingData tiling;
    const gert::Shape& shape = context->GetInputShape(0)->GetStorageShape();
    uint32_t cols = shape.GetDim(shape.GetDimNum() - 1);
    uint32_t rows = shape.GetShapeSize() / cols;
    if (cols % 8 != 0) return ge::GRAPH_FAILED;  // rows of whole 32-byte blocks only
    uint32_t coreNum = platform_ascendc::PlatformAscendC(context->GetPlatformInfo()).GetCoreNumAiv();
    uint32_t blockDim = rows < coreNum ? rows : coreNum;
    std::vector<int64_t> rowShape = {1, 1, cols, cols};
    ge::Shape srcShape(rowShape);
    uint32_t maxTmp = 0, minTmp = 0;
    AscendC::GetLayerNormMaxMinTmpSize(srcShape, sizeof(float), false, maxTmp, minTmp);
    AscendC::GetLayerNormNDTilingInfo(srcShape, minTmp, sizeof(float), false, tiling.lnTiling);
    context->SetBlockDim(blockDim);
    tiling.set_rows(rows);
    tiling.set_cols(cols);
    tiling.set_rowsPerBlock(rows / blockDim);
    tiling.set_bigBlocks(rows % blockDim);
    tiling.set_tmpBytes(minTmp);
    tiling.set_eps(1e-5f);
    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
    context->GetWorkspaceSizes(1)[0] = 0;
    return ge::GRAPH_SUCCESS;
}
}

namespace ge {
static ge::graphStatus InferShape(gert::InferShapeContext* context)
{
    *context->GetOutputShape(0) = *context->GetInputShape(0);
    return GRAPH_SUCCESS;
}
}

namespace ops {
class LayerNormCustom : public OpDef {
public:
    explicit LayerNormCustom(const char* name) : OpDef(name)
    {
        this->Input("x").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->Input("gamma").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->Input("beta").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->Output("y").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->SetInferShape(ge::InferShape);
        this->AICore().SetTiling(optiling::TilingFunc).AddConfig("ascend910b");
    }
};
OP_ADD(LayerNormCustom);
}
"""

kernel_src = """
#include "kernel_operator.h"
using namespace AscendC;

class KernelLayerNormApi {
public:
    __aicore__ inline KernelLayerNormApi() {}
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR y, const LayerNormCustomTilingData& t)
    {
        uint32_t blockIdx = GetBlockIdx();
        cols = t.cols;
        eps = t.eps;
        lnTiling = t.lnTiling;
        myRows = t.rowsPerBlock + (blockIdx < t.bigBlocks ? 1 : 0);
        uint32_t firstRow = t.rowsPerBlock * blockIdx + (blockIdx < t.bigBlocks ? blockIdx : t.bigBlocks);
        xGm.SetGlobalBuffer((__gm__ float*)x + firstRow * cols, myRows * cols);
        yGm.SetGlobalBuffer((__gm__ float*)y + firstRow * cols, myRows * cols);
        gGm.SetGlobalBuffer((__gm__ float*)gamma, cols);
        bGm.SetGlobalBuffer((__gm__ float*)beta, cols);
        pipe.InitBuffer(inQueue, 1, cols * sizeof(float));
        pipe.InitBuffer(outQueue, 1, cols * sizeof(float));
        pipe.InitBuffer(gBuf, cols * sizeof(float));
        pipe.InitBuffer(bBuf, cols * sizeof(float));
        pipe.InitBuffer(meanBuf, 32);
        pipe.InitBuffer(varBuf, 32);
        pipe.InitBuffer(tmpBuf, t.tmpBytes);
    }
    __aicore__ inline void Process()
    {
        LocalTensor<float> g = gBuf.Get<float>();
        LocalTensor<float> b = bBuf.Get<float>();
        DataCopy(g, gGm, cols);
        DataCopy(b, bGm, cols);
        for (uint32_t r = 0; r < myRows; ++r) {
            LocalTensor<float> xLocal = inQueue.AllocTensor<float>();
            DataCopy(xLocal, xGm[r * cols], cols);
            inQueue.EnQue(xLocal);
            xLocal = inQueue.DeQue<float>();
            LocalTensor<float> yLocal = outQueue.AllocTensor<float>();
            LocalTensor<float> mean = meanBuf.Get<float>();
            LocalTensor<float> var = varBuf.Get<float>();
            LocalTensor<uint8_t> tmp = tmpBuf.Get<uint8_t>();
            LayerNorm<float>(yLocal, mean, var, xLocal, g, b, tmp, eps, lnTiling);
            outQueue.EnQue<float>(yLocal);
            inQueue.FreeTensor(xLocal);
            yLocal = outQueue.DeQue<float>();
            DataCopy(yGm[r * cols], yLocal, cols);
            outQueue.FreeTensor(yLocal);
        }
    }

private:
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> inQueue;
    TQue<QuePosition::VECOUT, 1> outQueue;
    TBuf<TPosition::VECCALC> gBuf, bBuf, meanBuf, varBuf, tmpBuf;
    GlobalTensor<float> xGm, yGm, gGm, bGm;
    LayerNormTiling lnTiling;
    uint32_t cols = 0, myRows = 0;
    float eps = 0;
};

extern "C" __global__ __aicore__ void layer_norm_custom(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR y,
                                                        GM_ADDR workspace, GM_ADDR tiling)
{
    GET_TILING_DATA(tiling_data, tiling);
    KernelLayerNormApi op;
    op.Init(x, gamma, beta, y, tiling_data);
    op.Process();
}
"""

python_bind_src = """
#include <torch/library.h>
#include <torch/csrc/autograd/custom_function.h>
#include "pytorch_npu_helper.hpp"
#include <torch/extension.h>

at::Tensor layer_norm_custom_impl_npu(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta) {
    at::Tensor result = at::empty_like(x);
    EXEC_NPU_CMD(aclnnLayerNormCustom, x, gamma, beta, result);
    return result;
}

TORCH_LIBRARY_IMPL(myops, PrivateUse1, m) {
    m.impl("layer_norm_custom", &layer_norm_custom_impl_npu);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("layer_norm_custom", &layer_norm_custom_impl_npu, "layer norm over the last axis");
}
"""

model_src = """
import torch
import torch_npu
import custom_ops_lib

class ModelNew(torch.nn.Module):
    def __init__(self, features) -> None:
        super().__init__()
        self.ln = torch.nn.LayerNorm(features, eps=1e-5)
        with torch.no_grad():
            self.ln.weight.copy_(1.0 + 0.5 * torch.randn(features))
            self.ln.bias.copy_(0.5 * torch.randn(features))

    def forward(self, x):
        return custom_ops_lib.layer_norm_custom(x, self.ln.weight, self.ln.bias)
"""
