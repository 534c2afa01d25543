"""Test vehicle: the host side of a 3x3 / padding 1 conv2d (groups 1) for seed item 15 (direct
convolution on the vector cores), for npu_l1/36_conv2d_3x3.
"""

project_json_src = """
[
    {
        "op": "Conv2dCustom",
        "language": "cpp",
        "input_desc": [
            {
                "name": "x",
                "param_type": "required",
                "format": [
                    "ND"
                ],
                "type": [
                    "float"
                ]
            },
            {
                "name": "conv_weight",
                "param_type": "required",
                "format": [
                    "ND"
                ],
                "type": [
                    "float"
                ]
            },
            {
                "name": "conv_bias",
                "param_type": "required",
                "format": [
                    "ND"
                ],
                "type": [
                    "float"
                ]
            }
        ],
        "output_desc": [
            {
                "name": "out",
                "param_type": "required",
                "format": [
                    "ND"
                ],
                "type": [
                    "float"
                ]
            }
        ]
    }
]
"""

host_tiling_src = """
#include "register/tilingdata_base.h"

namespace optiling {
BEGIN_TILING_DATA_DEF(Conv2dCustomTilingData)
  TILING_DATA_FIELD_DEF(uint32_t, batch);
  TILING_DATA_FIELD_DEF(uint32_t, cin);
  TILING_DATA_FIELD_DEF(uint32_t, h);
  TILING_DATA_FIELD_DEF(uint32_t, w);
  TILING_DATA_FIELD_DEF(uint32_t, cout);
  TILING_DATA_FIELD_DEF(uint32_t, ho);
  TILING_DATA_FIELD_DEF(uint32_t, wo);
  TILING_DATA_FIELD_DEF(uint32_t, kh);
  TILING_DATA_FIELD_DEF(uint32_t, kw);
  TILING_DATA_FIELD_DEF(uint32_t, cinPerGroup);
  TILING_DATA_FIELD_DEF(uint32_t, coutPerGroup);
  TILING_DATA_FIELD_DEF(uint32_t, coTile);
  TILING_DATA_FIELD_DEF(uint32_t, woTile);
  TILING_DATA_FIELD_DEF(uint32_t, wChunks);
  TILING_DATA_FIELD_DEF(uint32_t, coPasses);
END_TILING_DATA_DEF;

REGISTER_TILING_DATA_CLASS(Conv2dCustom, Conv2dCustomTilingData)
}
"""

host_operator_src = """
#include "conv2d_custom_tiling.h"
#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"

// the module's attributes
constexpr int64_t STRIDE_H = 1, PAD_H = 1, PAD_W = 1, DIL_H = 1, DIL_W = 1, GROUPS = 1;

namespace optiling {
constexpr uint32_t CO_TILE = 32;
constexpr uint32_t BUFFER_NUM = 2;
constexpr uint32_t HALF_CORES = 0;
constexpr uint32_t WEIGHTS_IN_UB = 1;

static ge::graphStatus TilingFunc(gert::TilingContext* context)
{
    const gert::Shape& x = context->GetInputShape(0)->GetStorageShape();
    const gert::Shape& wt = context->GetInputShape(1)->GetStorageShape();
    if (x.GetDimNum() != 4 || wt.GetDimNum() != 4) {
        return ge::GRAPH_FAILED;
    }
    uint32_t batch = x.GetDim(0), cin = x.GetDim(1), h = x.GetDim(2), w = x.GetDim(3);
    uint32_t cout = wt.GetDim(0), kh = wt.GetDim(2), kw = wt.GetDim(3);
    if (cin % GROUPS != 0 || cout % GROUPS != 0 || wt.GetDim(1) * GROUPS != cin) {
        return ge::GRAPH_FAILED;
    }
    int64_t hoSigned = (static_cast<int64_t>(h) + 2 * PAD_H - DIL_H * (kh - 1) - 1) / STRIDE_H + 1;
    int64_t woSigned = static_cast<int64_t>(w) + 2 * PAD_W - DIL_W * (kw - 1);
    if (hoSigned <= 0 || woSigned <= 0) {
        return ge::GRAPH_FAILED;
    }
    uint32_t ho = static_cast<uint32_t>(hoSigned), wo = static_cast<uint32_t>(woSigned);
    uint32_t woAligned = (wo + 7) / 8 * 8;  // accumulator rows start on 32-byte blocks
    uint32_t coTile = CO_TILE < cout ? CO_TILE : cout;
    auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
    uint64_t ub = 0;
    platform.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ub);
    uint64_t wElems = WEIGHTS_IN_UB ? (static_cast<uint64_t>(coTile) * (cin / GROUPS) * kh * kw + 7) / 8 * 8 : 0;
    // output columns per chunk: the input-row queue, the accumulator (and the pass's weights) must fit the UB
    uint64_t fit = (ub / sizeof(float) - wElems) / (BUFFER_NUM + coTile) / 8 * 8;
    if (wElems >= ub / sizeof(float) || fit < 8) {
        return ge::GRAPH_FAILED;
    }
    uint32_t woTile = fit < woAligned ? static_cast<uint32_t>(fit) : woAligned;
    uint32_t wChunks = (wo + woTile - 1) / woTile;
    uint32_t coPasses = (cout + coTile - 1) / coTile;
    uint32_t items = batch * ho * coPasses * wChunks;
    uint32_t coreNum = platform.GetCoreNumAiv();
    if (HALF_CORES) coreNum = coreNum / 2 > 0 ? coreNum / 2 : 1;
    context->SetBlockDim(items < coreNum ? items : coreNum);
    Conv2dCustomTilingData tiling;
    tiling.set_batch(batch);
    tiling.set_cin(cin);
    tiling.set_h(h);
    tiling.set_w(w);
    tiling.set_cout(cout);
    tiling.set_ho(ho);
    tiling.set_wo(wo);
    tiling.set_kh(kh);
    tiling.set_kw(kw);
    tiling.set_cinPerGroup(cin / GROUPS);
    tiling.set_coutPerGroup(cout / GROUPS);
    tiling.set_coTile(coTile);
    tiling.set_woTile(woTile);
    tiling.set_wChunks(wChunks);
    tiling.set_coPasses(coPasses);
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
    const gert::Shape* x = context->GetInputShape(0);
    const gert::Shape* wt = context->GetInputShape(1);
    gert::Shape* y = context->GetOutputShape(0);
    y->SetDimNum(4);
    y->SetDim(0, x->GetDim(0));
    y->SetDim(1, wt->GetDim(0));
    y->SetDim(2, (x->GetDim(2) + 2 * PAD_H - DIL_H * (wt->GetDim(2) - 1) - 1) / STRIDE_H + 1);
    y->SetDim(3, x->GetDim(3) + 2 * PAD_W - DIL_W * (wt->GetDim(3) - 1));
    return GRAPH_SUCCESS;
}
}

namespace ops {
class Conv2dCustom : public OpDef {
public:
    explicit Conv2dCustom(const char* name) : OpDef(name)
    {
        this->Input("x").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->Input("conv_weight").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->Input("conv_bias").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->Output("out").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->SetInferShape(ge::InferShape);
        this->AICore().SetTiling(optiling::TilingFunc);
        this->AICore().AddConfig("ascend910b");
    }
};
OP_ADD(Conv2dCustom);
}
"""

kernel_src = """
@seed 15_vector_conv
"""

python_bind_src = """
#include <torch/library.h>
#include <torch/csrc/autograd/custom_function.h>
#include "pytorch_npu_helper.hpp"
#include <torch/extension.h>

at::Tensor conv2d_custom_impl_npu(const at::Tensor& x, const at::Tensor& conv_weight, const at::Tensor& conv_bias) {
    at::Tensor result = at::empty({x.size(0), conv_weight.size(0), (x.size(2) + 2 - 1 * (conv_weight.size(2) - 1) - 1) / 1 + 1, x.size(3) + 2 - 1 * (conv_weight.size(3) - 1)}, x.options());
    EXEC_NPU_CMD(aclnnConv2dCustom, x, conv_weight, conv_bias, result);
    return result;
}

TORCH_LIBRARY_IMPL(myops, PrivateUse1, m) {
    m.impl("conv2d_custom", &conv2d_custom_impl_npu);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("conv2d_custom", &conv2d_custom_impl_npu, "direct convolution on the vector cores");
}
"""

model_src = """
import torch
import torch.nn as nn
import torch_npu
import custom_ops_lib


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=1, padding=kernel_size // 2)

    def forward(self, x):
        return custom_ops_lib.conv2d_custom(x, self.conv.weight, self.conv.bias)
"""
