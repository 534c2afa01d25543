"""Test vehicle: the complete kernel of seed item 14_cube_matmul with the host side of
evokernel/examples/ascend/matmul_custom.py, for npu_l1/31_matmul_fp16."""
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

kernel_src = """@seed 14_cube_matmul"""

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
    m.def("matmul_custom", &matmul_custom_impl_npu, "matmul on the cube unit");
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
