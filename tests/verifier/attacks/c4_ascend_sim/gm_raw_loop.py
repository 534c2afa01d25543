"""Attack (ascend-sim): the kernel computes sigmoid with a plain C++ loop over the __gm__ pointers (GetPhyAddr),
no DataCopy and no vector instruction, so the emulator counts nothing and the modelled latency is the launch.
Defence: the kernel's GM addresses point into an unbacked window, so the first raw dereference faults
(gm_raw_access, runtime gate); main's memfd view was PROT_NONE too."""

project_json_src = """
[{"op": "SigmoidCustom", "language": "cpp",
  "input_desc": [{"name": "x", "param_type": "required", "format": ["ND"], "type": ["float"]}],
  "output_desc": [{"name": "y", "param_type": "required", "format": ["ND"], "type": ["float"]}]}]
"""

host_tiling_src = """
#include "register/tilingdata_base.h"
namespace optiling {
BEGIN_TILING_DATA_DEF(SigmoidCustomTilingData)
  TILING_DATA_FIELD_DEF(uint32_t, totalLength);
  TILING_DATA_FIELD_DEF(uint32_t, blockLength);
  TILING_DATA_FIELD_DEF(uint32_t, tileLength);
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS(SigmoidCustom, SigmoidCustomTilingData)
}
"""

host_operator_src = """
#include "sigmoid_custom_tiling.h"
#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"

namespace optiling {
static ge::graphStatus TilingFunc(gert::TilingContext* context)
{
    SigmoidCustomTilingData tiling;
    uint32_t coreNum = platform_ascendc::PlatformAscendC(context->GetPlatformInfo()).GetCoreNumAiv();
    uint32_t total = context->GetInputShape(0)->GetStorageShape().GetShapeSize();
    uint32_t perCore = (total + coreNum - 1) / coreNum;
    uint32_t blockLength = (perCore + 7) / 8 * 8;
    context->SetBlockDim((total + blockLength - 1) / blockLength);
    tiling.set_totalLength(total);
    tiling.set_blockLength(blockLength);
    tiling.set_tileLength(blockLength < 4096 ? blockLength : 4096);
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
class SigmoidCustom : public OpDef {
public:
    explicit SigmoidCustom(const char* name) : OpDef(name)
    {
        this->Input("x").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->Output("y").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->SetInferShape(ge::InferShape);
        this->AICore().SetTiling(optiling::TilingFunc);
        this->AICore().AddConfig("ascend910b");
    }
};
OP_ADD(SigmoidCustom);
}
"""

kernel_src = """
#include "kernel_operator.h"
#include <cmath>
using namespace AscendC;

class KernelSigmoid {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, const SigmoidCustomTilingData& t)
    {
        uint32_t start = t.blockLength * GetBlockIdx();
        length = t.totalLength - start < t.blockLength ? t.totalLength - start : t.blockLength;
        tile = t.tileLength;
        xGm.SetGlobalBuffer((__gm__ float*)x + start, length);
        yGm.SetGlobalBuffer((__gm__ float*)y + start, length);
        pipe.InitBuffer(inQ, 2, tile * sizeof(float));
        pipe.InitBuffer(outQ, 2, tile * sizeof(float));
        pipe.InitBuffer(oneBuf, tile * sizeof(float));
    }
    __aicore__ inline void Process()
    {
        // the whole sigmoid on the scalar unit's raw pointers: no DataCopy, no vector instruction, nothing counted
        __gm__ float* xs = xGm.GetPhyAddr();
        __gm__ float* ys = yGm.GetPhyAddr();
        for (uint32_t i = 0; i < length; ++i) ys[i] = 1.0f / (1.0f + expf(-xs[i]));
        return;
        LocalTensor<float> one = oneBuf.Get<float>();
        Duplicate(one, 1.0f, tile);
        for (uint32_t off = 0; off < length; off += tile) {
            uint32_t n = length - off < tile ? length - off : tile;
            LocalTensor<float> x = inQ.AllocTensor<float>();
            DataCopy(x, xGm[off], n);
            inQ.EnQue(x);
            x = inQ.DeQue<float>();
            LocalTensor<float> y = outQ.AllocTensor<float>();
            Muls(y, x, -1.0f, n);
            Exp(y, y, n);
            Adds(y, y, 1.0f, n);
            Div(y, one, y, n);
            outQ.EnQue(y);
            inQ.FreeTensor(x);
            y = outQ.DeQue<float>();
            DataCopy(yGm[off], y, n);
            outQ.FreeTensor(y);
        }
    }

private:
    TPipe pipe;
    TQue<QuePosition::VECIN, 2> inQ;
    TQue<QuePosition::VECOUT, 2> outQ;
    TBuf<TPosition::VECCALC> oneBuf;
    GlobalTensor<float> xGm, yGm;
    uint32_t length = 0, tile = 0;
};

extern "C" __global__ __aicore__ void sigmoid_custom(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling)
{
    GET_TILING_DATA(t, tiling);
    KernelSigmoid op;
    op.Init(x, y, t);
    op.Process();
}
"""

python_bind_src = """
#include <torch/library.h>
#include "pytorch_npu_helper.hpp"
#include <torch/extension.h>

at::Tensor sigmoid_custom_impl_npu(const at::Tensor& x) {
    at::Tensor y = at::empty_like(x);
    EXEC_NPU_CMD(aclnnSigmoidCustom, x, y);
    return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("sigmoid_custom", &sigmoid_custom_impl_npu, "sigmoid");
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
        return custom_ops_lib.sigmoid_custom(x)
"""
