"""Ascend C candidate for softmax over the last axis (npu_l1/19_softmax.py) built on the high-level API: the host
calls GetSoftMaxMaxTmpSize and SoftMaxTilingFunc and carries the SoftMaxTiling as a TILING_DATA_FIELD_DEF_STRUCT
member; the kernel calls AscendC::SoftMax on tiles of TILE_ROWS rows (rows padded to 32 bytes by DataCopyPad,
the original length passed as oriSrcK). Test data for tests/verifier/ascend_sim/test_norm_api.py."""

project_json_src = """
[
    {
        "op": "SoftmaxCustom",
        "language": "cpp",
        "input_desc": [{"name": "x", "param_type": "required", "format": ["ND"], "type": ["float"]}],
        "output_desc": [{"name": "y", "param_type": "required", "format": ["ND"], "type": ["float"]}]
    }
]
"""

host_tiling_src = """
#include "register/tilingdata_base.h"
#include "tiling/tiling_api.h"

namespace optiling {
BEGIN_TILING_DATA_DEF(SoftmaxCustomTilingData)
  TILING_DATA_FIELD_DEF(uint32_t, rows);
  TILING_DATA_FIELD_DEF(uint32_t, cols);
  TILING_DATA_FIELD_DEF(uint32_t, colsAligned);
  TILING_DATA_FIELD_DEF(uint32_t, rowsPerBlock);
  TILING_DATA_FIELD_DEF(uint32_t, bigBlocks);
  TILING_DATA_FIELD_DEF(uint32_t, tileRows);
  TILING_DATA_FIELD_DEF(uint32_t, tmpBytes);
  TILING_DATA_FIELD_DEF_STRUCT(SoftMaxTiling, softmaxTiling);
END_TILING_DATA_DEF;

REGISTER_TILING_DATA_CLASS(SoftmaxCustom, SoftmaxCustomTilingData)
}
"""

host_operator_src = """
#include <vector>
#include "softmax_custom_tiling.h"
#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"
#include "tiling/tiling_api.h"

namespace optiling {
constexpr uint32_t TILE_ROWS = 8;
constexpr uint32_t TMP_DIVISOR = 1;  // 1: the maximum tmp space for a tile

static ge::graphStatus TilingFunc(gert::TilingContext* context)
{
    SoftmaxCustomTilingData tiling;
    const gert::Shape& shape = context->GetInputShape(0)->GetStorageShape();
    uint32_t cols = shape.GetDim(shape.GetDimNum() - 1);
    uint32_t rows = shape.GetShapeSize() / cols;
    uint32_t colsAligned = (cols + 7) / 8 * 8;
    uint32_t coreNum = platform_ascendc::PlatformAscendC(context->GetPlatformInfo()).GetCoreNumAiv();
    uint32_t blockDim = rows < coreNum ? rows : coreNum;
    std::vector<int64_t> tileShape = {TILE_ROWS, colsAligned};
    ge::Shape srcShape(tileShape);
    uint32_t tmpBytes = AscendC::GetSoftMaxMaxTmpSize(srcShape, sizeof(float), false) / TMP_DIVISOR;
    AscendC::SoftMaxTilingFunc(srcShape, sizeof(float), tmpBytes, tiling.softmaxTiling);
    context->SetBlockDim(blockDim);
    tiling.set_rows(rows);
    tiling.set_cols(cols);
    tiling.set_colsAligned(colsAligned);
    tiling.set_rowsPerBlock(rows / blockDim);
    tiling.set_bigBlocks(rows % blockDim);
    tiling.set_tileRows(TILE_ROWS);
    tiling.set_tmpBytes(tmpBytes);
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
class SoftmaxCustom : public OpDef {
public:
    explicit SoftmaxCustom(const char* name) : OpDef(name)
    {
        this->Input("x").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->Output("y").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->SetInferShape(ge::InferShape);
        this->AICore().SetTiling(optiling::TilingFunc).AddConfig("ascend910b");
    }
};
OP_ADD(SoftmaxCustom);
}
"""

kernel_src = """
#include "kernel_operator.h"
using namespace AscendC;

constexpr int32_t BUFFER_NUM = 2;

class KernelSoftmax {
public:
    __aicore__ inline KernelSoftmax() {}
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, const SoftmaxCustomTilingData& t)
    {
        uint32_t blockIdx = GetBlockIdx();
        cols = t.cols;
        colsAligned = t.colsAligned;
        tileRows = t.tileRows;
        softmaxTiling = t.softmaxTiling;
        myRows = t.rowsPerBlock + (blockIdx < t.bigBlocks ? 1 : 0);
        uint32_t firstRow = t.rowsPerBlock * blockIdx + (blockIdx < t.bigBlocks ? blockIdx : t.bigBlocks);
        xGm.SetGlobalBuffer((__gm__ float*)x + firstRow * cols, myRows * cols);
        yGm.SetGlobalBuffer((__gm__ float*)y + firstRow * cols, myRows * cols);
        pipe.InitBuffer(inQueue, BUFFER_NUM, tileRows * colsAligned * sizeof(float));
        pipe.InitBuffer(outQueue, BUFFER_NUM, tileRows * colsAligned * sizeof(float));
        pipe.InitBuffer(sumBuf, tileRows * 32);
        pipe.InitBuffer(maxBuf, tileRows * 32);
        pipe.InitBuffer(tmpBuf, t.tmpBytes);
    }
    __aicore__ inline void Process()
    {
        for (uint32_t r = 0; r < myRows; r += tileRows) {
            uint32_t n = myRows - r < tileRows ? myRows - r : tileRows;
            CopyIn(r, n);
            Compute(n);
            CopyOut(r, n);
        }
    }

private:
    __aicore__ inline void CopyIn(uint32_t r, uint32_t n)
    {
        LocalTensor<float> xLocal = inQueue.AllocTensor<float>();
        DataCopyExtParams params{static_cast<uint16_t>(n), static_cast<uint32_t>(cols * sizeof(float)), 0, 0, 0};
        DataCopyPadExtParams<float> pad{false, 0, 0, 0};
        DataCopyPad(xLocal, xGm[r * cols], params, pad);
        inQueue.EnQue(xLocal);
    }
    __aicore__ inline void Compute(uint32_t n)
    {
        LocalTensor<float> xLocal = inQueue.DeQue<float>();
        LocalTensor<float> yLocal = outQueue.AllocTensor<float>();
        LocalTensor<float> sumLocal = sumBuf.Get<float>();
        LocalTensor<float> maxLocal = maxBuf.Get<float>();
        LocalTensor<uint8_t> tmp = tmpBuf.Get<uint8_t>();
        SoftMaxShapeInfo shape = {n, colsAligned, n, cols};
        SoftMax<float>(yLocal, sumLocal, maxLocal, xLocal, tmp, softmaxTiling, shape);
        outQueue.EnQue<float>(yLocal);
        inQueue.FreeTensor(xLocal);
    }
    __aicore__ inline void CopyOut(uint32_t r, uint32_t n)
    {
        LocalTensor<float> yLocal = outQueue.DeQue<float>();
        DataCopyExtParams params{static_cast<uint16_t>(n), static_cast<uint32_t>(cols * sizeof(float)), 0, 0, 0};
        DataCopyPad(yGm[r * cols], yLocal, params);
        outQueue.FreeTensor(yLocal);
    }

    TPipe pipe;
    TQue<QuePosition::VECIN, BUFFER_NUM> inQueue;
    TQue<QuePosition::VECOUT, BUFFER_NUM> outQueue;
    TBuf<TPosition::VECCALC> sumBuf, maxBuf, tmpBuf;
    GlobalTensor<float> xGm, yGm;
    SoftMaxTiling softmaxTiling;
    uint32_t cols = 0, colsAligned = 0, myRows = 0, tileRows = 0;
};

extern "C" __global__ __aicore__ void softmax_custom(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling)
{
    GET_TILING_DATA(tiling_data, tiling);
    KernelSoftmax op;
    op.Init(x, y, tiling_data);
    op.Process();
}
"""

python_bind_src = """
#include <torch/library.h>
#include <torch/csrc/autograd/custom_function.h>
#include "pytorch_npu_helper.hpp"
#include <torch/extension.h>

at::Tensor softmax_custom_impl_npu(const at::Tensor& self) {
    at::Tensor result = at::empty_like(self);
    EXEC_NPU_CMD(aclnnSoftmaxCustom, self, result);
    return result;
}

TORCH_LIBRARY_IMPL(myops, PrivateUse1, m) {
    m.impl("softmax_custom", &softmax_custom_impl_npu);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("softmax_custom", &softmax_custom_impl_npu, "softmax over the last axis");
}
"""

model_src = """
import torch
import torch_npu
import custom_ops_lib

class ModelNew(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x):
        return custom_ops_lib.softmax_custom(x)
"""
