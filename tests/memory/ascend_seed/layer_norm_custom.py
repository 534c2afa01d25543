"""Test vehicle: LayerNorm with an epsilon attribute and gamma/beta, float32/float16 (seed items 03, 06,
12, 13), for npu_l1/21_layer_norm and 30_layer_norm_fp16 (@dtype is filled in per task)."""
project_json_src = """
[{"op": "LayerNormCustom", "language": "cpp",
  "input_desc": [{"name": "x", "param_type": "required", "format": ["ND", "ND"], "type": ["float", "float16"]},
                 {"name": "gamma", "param_type": "required", "format": ["ND", "ND"], "type": ["float", "float16"]},
                 {"name": "beta", "param_type": "required", "format": ["ND", "ND"], "type": ["float", "float16"]}],
  "output_desc": [{"name": "y", "param_type": "required", "format": ["ND", "ND"], "type": ["float", "float16"]}],
  "attr": [{"name": "epsilon", "param_type": "optional", "type": "float", "default_value": "1e-5"}]}]
"""

host_tiling_src = """
#include "register/tilingdata_base.h"

namespace optiling {
BEGIN_TILING_DATA_DEF(LayerNormCustomTilingData)
  TILING_DATA_FIELD_DEF(uint32_t, cols);
  TILING_DATA_FIELD_DEF(uint32_t, colsAligned);
  TILING_DATA_FIELD_DEF(uint32_t, rowsPerBlock);
  TILING_DATA_FIELD_DEF(uint32_t, bigBlocks);
  TILING_DATA_FIELD_DEF(float, epsilon);
END_TILING_DATA_DEF;

REGISTER_TILING_DATA_CLASS(LayerNormCustom, LayerNormCustomTilingData)
}
"""

host_operator_src = """
#include "layer_norm_custom_tiling.h"
#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"

namespace optiling {
static ge::graphStatus TilingFunc(gert::TilingContext* context)
{
    LayerNormCustomTilingData tiling;
    auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
    const gert::Shape& shape = context->GetInputShape(0)->GetStorageShape();
    uint32_t cols = shape.GetDim(shape.GetDimNum() - 1);
    uint32_t rows = shape.GetShapeSize() / cols;
    uint32_t coreNum = platform.GetCoreNumAiv();
    uint32_t blockDim = rows < coreNum ? rows : coreNum;
    uint32_t colsAligned = (cols + 7) / 8 * 8;
    const float* eps = context->GetAttrs()->GetFloat(0);  // attribute 0 of the OpDef: epsilon
    uint32_t typeSize = context->GetInputDesc(0)->GetDataType() == ge::DT_FLOAT16 ? 2 : 4;
    uint64_t ubSize = 0;
    platform.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ubSize);
    // UB: in/out queues (2 x 2 rows) + raw gamma|beta in the input type + gamma|beta, row, t, work as float
    if (static_cast<uint64_t>(colsAligned) * (6 * typeSize + 5 * 4) + 32 > ubSize) return ge::GRAPH_FAILED;
    context->SetBlockDim(blockDim);
    tiling.set_cols(cols);
    tiling.set_colsAligned(colsAligned);
    tiling.set_rowsPerBlock(rows / blockDim);
    tiling.set_bigBlocks(rows % blockDim);
    tiling.set_epsilon(eps == nullptr ? 1e-5f : *eps);
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
        this->Input("x").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_FLOAT16}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
        this->Input("gamma").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_FLOAT16}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
        this->Input("beta").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_FLOAT16}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
        this->Output("y").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_FLOAT16}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
        this->Attr("epsilon").AttrType(OPTIONAL).Float(1e-5);
        this->SetInferShape(ge::InferShape);
        this->AICore().SetTiling(optiling::TilingFunc);
        this->AICore().AddConfig("ascend910b");
    }
};
OP_ADD(LayerNormCustom);
}
"""

kernel_src = """
#include "kernel_operator.h"
using namespace AscendC;

constexpr int32_t BUFFER_NUM = 2;

@seed 03_datacopy_pad
@seed 06_reductions
@seed 12_layer_rms_norm

template <typename T>
class KernelLayerNorm {
public:
    __aicore__ inline KernelLayerNorm() {}
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR y, const LayerNormCustomTilingData& t)
    {
        uint32_t block = GetBlockIdx();
        cols = t.cols;
        ca = t.colsAligned;
        eps = t.epsilon;
        myRows = t.rowsPerBlock + (block < t.bigBlocks ? 1 : 0);
        uint32_t firstRow = t.rowsPerBlock * block + (block < t.bigBlocks ? block : t.bigBlocks);
        xGm.SetGlobalBuffer((__gm__ T*)x + firstRow * cols, myRows * cols);
        yGm.SetGlobalBuffer((__gm__ T*)y + firstRow * cols, myRows * cols);
        gammaGm.SetGlobalBuffer((__gm__ T*)gamma, cols);
        betaGm.SetGlobalBuffer((__gm__ T*)beta, cols);
        pipe.InitBuffer(inQueue, BUFFER_NUM, ca * sizeof(T));
        pipe.InitBuffer(outQueue, BUFFER_NUM, ca * sizeof(T));
        pipe.InitBuffer(paramBuf, 2 * ca * sizeof(float));   // gamma | beta, as float
        pipe.InitBuffer(rawBuf, 2 * ca * sizeof(T));
        pipe.InitBuffer(rowBuf, ca * sizeof(float));
        pipe.InitBuffer(tmpBuf, ca * sizeof(float));
        pipe.InitBuffer(workBuf, ca * sizeof(float));
        pipe.InitBuffer(redBuf, 32);
    }
    __aicore__ inline void Process()
    {
        LocalTensor<float> params = paramBuf.Get<float>();
        if constexpr (std::is_same<T, float>::value) {
            LoadOnce(params, gammaGm, cols);
            LoadOnce(params[ca], betaGm, cols);
        } else {
            LocalTensor<T> raw = rawBuf.Get<T>();
            LoadOnce(raw, gammaGm, cols);
            LoadOnce(raw[ca], betaGm, cols);
            Cast(params, raw, RoundMode::CAST_NONE, cols);
            Cast(params[ca], raw[ca], RoundMode::CAST_NONE, cols);
        }
        for (uint32_t r = 0; r < myRows; ++r) {
            LocalTensor<T> xIn = inQueue.AllocTensor<T>();
            CopyGmToUb(xIn, xGm[r * cols], cols);
            inQueue.EnQue(xIn);
            Compute(params);
            LocalTensor<T> yOut = outQueue.DeQue<T>();
            CopyUbToGm(yGm[r * cols], yOut, cols);
            outQueue.FreeTensor(yOut);
        }
    }

private:
    __aicore__ inline void Compute(const LocalTensor<float>& params)
    {
        LocalTensor<T> xIn = inQueue.DeQue<T>();
        LocalTensor<T> yOut = outQueue.AllocTensor<T>();
        LocalTensor<float> row = rowBuf.Get<float>(), t = tmpBuf.Get<float>();
        LocalTensor<float> work = workBuf.Get<float>(), red = redBuf.Get<float>();
        if constexpr (std::is_same<T, float>::value) {
            LayerNormRow(yOut, xIn, params, params[ca], t, work, red, eps, cols);
        } else {
            Cast(row, xIn, RoundMode::CAST_NONE, cols);
            LayerNormRow(row, row, params, params[ca], t, work, red, eps, cols);
            Cast(yOut, row, RoundMode::CAST_RINT, cols);
        }
        outQueue.EnQue(yOut);
        inQueue.FreeTensor(xIn);
    }

    TPipe pipe;
    TQue<QuePosition::VECIN, BUFFER_NUM> inQueue;
    TQue<QuePosition::VECOUT, BUFFER_NUM> outQueue;
    TBuf<TPosition::VECCALC> paramBuf, rawBuf, rowBuf, tmpBuf, workBuf, redBuf;
    GlobalTensor<T> xGm, yGm, gammaGm, betaGm;
    uint32_t cols = 0, ca = 0, myRows = 0;
    float eps = 0;
};

extern "C" __global__ __aicore__ void layer_norm_custom(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR y,
                                                        GM_ADDR workspace, GM_ADDR tiling)
{
    GET_TILING_DATA(tiling_data, tiling);
    KernelLayerNorm<DTYPE_X> op;
    op.Init(x, gamma, beta, y, tiling_data);
    op.Process();
}
"""

python_bind_src = """
#include <torch/library.h>
#include "pytorch_npu_helper.hpp"
#include <torch/extension.h>

at::Tensor layer_norm_custom_impl_npu(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta,
                                      double epsilon) {
    at::Tensor y = at::empty_like(x);
    EXEC_NPU_CMD(aclnnLayerNormCustom, x, gamma, beta, epsilon, y);
    return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("layer_norm_custom", &layer_norm_custom_impl_npu, "layer norm over the last dimension");
}
"""

model_src = """
import torch
import torch.nn as nn
import torch_npu
import custom_ops_lib


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        # the same parameters, filled with the same random draws as Model.__init__:
        # normal_(m, s) gives exactly m + s * torch.randn(...) of the same generator state
        self.ln = nn.LayerNorm(features, eps=1e-5, dtype=@dtype)
        with torch.no_grad():
            self.ln.weight.normal_(1.0, 0.5)
            self.ln.bias.normal_(0.0, 0.5)

    def forward(self, x):
        return custom_ops_lib.layer_norm_custom(x, self.ln.weight, self.ln.bias, self.ln.eps)
"""
