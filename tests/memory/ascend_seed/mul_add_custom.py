"""Test vehicle: the complete kernel of seed item 02_pipeline_tque with a host side, for
npu_l1/12_elementwise_mul_add."""
project_json_src = """
[{"op": "MulAddCustom", "language": "cpp",
  "input_desc": [{"name": "a", "param_type": "required", "format": ["ND"], "type": ["float"]},
                 {"name": "b", "param_type": "required", "format": ["ND"], "type": ["float"]},
                 {"name": "c", "param_type": "required", "format": ["ND"], "type": ["float"]}],
  "output_desc": [{"name": "z", "param_type": "required", "format": ["ND"], "type": ["float"]}]}]
"""

host_tiling_src = """
#include "register/tilingdata_base.h"

namespace optiling {
BEGIN_TILING_DATA_DEF(MulAddCustomTilingData)
  TILING_DATA_FIELD_DEF(uint32_t, totalLength);
  TILING_DATA_FIELD_DEF(uint32_t, blockLength);
  TILING_DATA_FIELD_DEF(uint32_t, tileLength);
END_TILING_DATA_DEF;

REGISTER_TILING_DATA_CLASS(MulAddCustom, MulAddCustomTilingData)
}
"""

host_operator_src = """
#include "mul_add_custom_tiling.h"
#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"

namespace optiling {
static ge::graphStatus TilingFunc(gert::TilingContext* context)
{
    MulAddCustomTilingData tiling;
    auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
    uint32_t coreNum = platform.GetCoreNumAiv();
    uint32_t total = context->GetInputShape(0)->GetStorageShape().GetShapeSize();
    uint32_t perCore = (total + coreNum - 1) / coreNum;
    uint32_t blockLength = (perCore + 7) / 8 * 8;
    uint32_t tileLength = blockLength < 4096 ? blockLength : 4096;
    context->SetBlockDim((total + blockLength - 1) / blockLength);
    tiling.set_totalLength(total);
    tiling.set_blockLength(blockLength);
    tiling.set_tileLength(tileLength);
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
class MulAddCustom : public OpDef {
public:
    explicit MulAddCustom(const char* name) : OpDef(name)
    {
        this->Input("a").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->Input("b").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->Input("c").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->Output("z").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->SetInferShape(ge::InferShape);
        this->AICore().SetTiling(optiling::TilingFunc);
        this->AICore().AddConfig("ascend910b");
    }
};
OP_ADD(MulAddCustom);
}
"""

kernel_src = """@seed 02_pipeline_tque"""

python_bind_src = """
#include <torch/library.h>
#include "pytorch_npu_helper.hpp"
#include <torch/extension.h>

at::Tensor mul_add_custom_impl_npu(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c) {
    at::Tensor z = at::empty_like(a);
    EXEC_NPU_CMD(aclnnMulAddCustom, a, b, c, z);
    return z;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("mul_add_custom", &mul_add_custom_impl_npu, "a * b + c");
}
"""

model_src = """
import torch
import torch_npu
import custom_ops_lib


class ModelNew(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, a, b, c):
        return custom_ops_lib.mul_add_custom(a, b, c)
"""
