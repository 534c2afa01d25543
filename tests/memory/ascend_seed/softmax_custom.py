"""Test vehicle: row softmax, float32/float16 (seed items 03, 04, 06, 11), for npu_l1/19_softmax and
29_softmax_fp16."""
project_json_src = """
[{"op": "SoftmaxCustom", "language": "cpp",
  "input_desc": [{"name": "x", "param_type": "required", "format": ["ND", "ND"], "type": ["float", "float16"]}],
  "output_desc": [{"name": "y", "param_type": "required", "format": ["ND", "ND"], "type": ["float", "float16"]}]}]
"""

host_tiling_src = """
#include "register/tilingdata_base.h"

namespace optiling {
BEGIN_TILING_DATA_DEF(SoftmaxCustomTilingData)
  TILING_DATA_FIELD_DEF(uint32_t, cols);
  TILING_DATA_FIELD_DEF(uint32_t, colsAligned);
  TILING_DATA_FIELD_DEF(uint32_t, rowsPerBlock);
  TILING_DATA_FIELD_DEF(uint32_t, bigBlocks);
END_TILING_DATA_DEF;

REGISTER_TILING_DATA_CLASS(SoftmaxCustom, SoftmaxCustomTilingData)
}
"""

host_operator_src = """
#include "softmax_custom_tiling.h"
#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"

namespace optiling {
static ge::graphStatus TilingFunc(gert::TilingContext* context)
{
    SoftmaxCustomTilingData tiling;
    auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
    const gert::Shape& shape = context->GetInputShape(0)->GetStorageShape();
    uint32_t cols = shape.GetDim(shape.GetDimNum() - 1);
    uint32_t rows = shape.GetShapeSize() / cols;
    uint32_t coreNum = platform.GetCoreNumAiv();
    uint32_t blockDim = rows < coreNum ? rows : coreNum;  // one or more whole rows per block
    uint32_t colsAligned = (cols + 7) / 8 * 8;            // a float row rounded up to 32 bytes
    // UB: 2 + 2 row buffers (input dtype) + 3 float rows; reject rows that do not fit
    if (static_cast<uint64_t>(colsAligned) * 4 * 7 + 32 > 192 * 1024) return ge::GRAPH_FAILED;
    context->SetBlockDim(blockDim);
    tiling.set_cols(cols);
    tiling.set_colsAligned(colsAligned);
    tiling.set_rowsPerBlock(rows / blockDim);
    tiling.set_bigBlocks(rows % blockDim);  // the first bigBlocks blocks take one row more
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
        this->Input("x").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_FLOAT16}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
        this->Output("y").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_FLOAT16}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
        this->SetInferShape(ge::InferShape);
        this->AICore().SetTiling(optiling::TilingFunc);
        this->AICore().AddConfig("ascend910b");
    }
};
OP_ADD(SoftmaxCustom);
}
"""

kernel_src = """
#include "kernel_operator.h"
using namespace AscendC;

constexpr int32_t BUFFER_NUM = 2;

@seed 03_datacopy_pad
@seed 06_reductions
@seed 11_row_softmax

template <typename T>
class KernelSoftmax {
public:
    __aicore__ inline KernelSoftmax() {}
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, const SoftmaxCustomTilingData& t)
    {
        uint32_t block = GetBlockIdx();
        cols = t.cols;
        myRows = t.rowsPerBlock + (block < t.bigBlocks ? 1 : 0);
        uint32_t firstRow = t.rowsPerBlock * block + (block < t.bigBlocks ? block : t.bigBlocks);
        xGm.SetGlobalBuffer((__gm__ T*)x + firstRow * cols, myRows * cols);
        yGm.SetGlobalBuffer((__gm__ T*)y + firstRow * cols, myRows * cols);
        pipe.InitBuffer(inQueue, BUFFER_NUM, t.colsAligned * sizeof(T));
        pipe.InitBuffer(outQueue, BUFFER_NUM, t.colsAligned * sizeof(T));
        pipe.InitBuffer(rowBuf, t.colsAligned * sizeof(float));
        pipe.InitBuffer(workBuf, t.colsAligned * sizeof(float));
        pipe.InitBuffer(redBuf, 32);
    }
    __aicore__ inline void Process()
    {
        for (uint32_t r = 0; r < myRows; ++r) {
            LocalTensor<T> xIn = inQueue.AllocTensor<T>();
            CopyGmToUb(xIn, xGm[r * cols], cols);
            inQueue.EnQue(xIn);
            Compute();
            LocalTensor<T> yOut = outQueue.DeQue<T>();
            CopyUbToGm(yGm[r * cols], yOut, cols);
            outQueue.FreeTensor(yOut);
        }
    }

private:
    __aicore__ inline void Compute()
    {
        LocalTensor<T> xIn = inQueue.DeQue<T>();
        LocalTensor<T> yOut = outQueue.AllocTensor<T>();
        LocalTensor<float> row = rowBuf.Get<float>();
        if constexpr (std::is_same<T, float>::value) {
            SoftmaxRow(yOut, xIn, workBuf.Get<float>(), redBuf.Get<float>(), cols);
        } else {
            Cast(row, xIn, RoundMode::CAST_NONE, cols);
            SoftmaxRow(row, row, workBuf.Get<float>(), redBuf.Get<float>(), cols);
            Cast(yOut, row, RoundMode::CAST_RINT, cols);
        }
        outQueue.EnQue(yOut);
        inQueue.FreeTensor(xIn);
    }

    TPipe pipe;
    TQue<QuePosition::VECIN, BUFFER_NUM> inQueue;
    TQue<QuePosition::VECOUT, BUFFER_NUM> outQueue;
    TBuf<TPosition::VECCALC> rowBuf, workBuf, redBuf;
    GlobalTensor<T> xGm, yGm;
    uint32_t cols = 0, myRows = 0;
};

extern "C" __global__ __aicore__ void softmax_custom(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling)
{
    GET_TILING_DATA(tiling_data, tiling);
    KernelSoftmax<DTYPE_X> op;
    op.Init(x, y, tiling_data);
    op.Process();
}
"""

python_bind_src = """
#include <torch/library.h>
#include "pytorch_npu_helper.hpp"
#include <torch/extension.h>

at::Tensor softmax_custom_impl_npu(const at::Tensor& x) {
    at::Tensor y = at::empty_like(x);
    EXEC_NPU_CMD(aclnnSoftmaxCustom, x, y);
    return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("softmax_custom", &softmax_custom_impl_npu, "softmax over the last dimension");
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
