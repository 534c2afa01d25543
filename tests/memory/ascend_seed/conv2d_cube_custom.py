"""Test vehicle: the host side of a 3x3 / padding 1 conv2d (groups 1, bias) for seed item 16 (the implicit GEMM on
the cube: im2col by the vector cores, SyncAll, Mmad), for npu_l1/36_conv2d_3x3.
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
  TILING_DATA_FIELD_DEF(uint32_t, bufFloats);
END_TILING_DATA_DEF;

REGISTER_TILING_DATA_CLASS(Conv2dCustom, Conv2dCustomTilingData)
}
"""

host_operator_src = """
#include "conv2d_custom_tiling.h"
#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"

// the module's attributes: stride 1, padding 1, dilation 1, groups 1
constexpr int64_t PAD = 1;

namespace optiling {
static uint64_t Up(uint64_t a, uint64_t b) { return (a + b - 1) / b * b; }

static ge::graphStatus TilingFunc(gert::TilingContext* context)
{
    const gert::Shape& x = context->GetInputShape(0)->GetStorageShape();
    const gert::Shape& wt = context->GetInputShape(1)->GetStorageShape();
    if (x.GetDimNum() != 4 || wt.GetDimNum() != 4 || wt.GetDim(1) != x.GetDim(1)) {
        return ge::GRAPH_FAILED;
    }
    uint32_t batch = x.GetDim(0), cin = x.GetDim(1), h = x.GetDim(2), w = x.GetDim(3);
    uint32_t cout = wt.GetDim(0), kh = wt.GetDim(2), kw = wt.GetDim(3);
    if (h + 2 * PAD < kh || w + 2 * PAD < kw || kh <= PAD || kw <= PAD) {
        return ge::GRAPH_FAILED;
    }
    uint32_t ho = h + 2 * PAD - kh + 1, wo = w + 2 * PAD - kw + 1;
    uint64_t K = static_cast<uint64_t>(cin) * kh * kw, P = static_cast<uint64_t>(ho) * wo, Np = Up(P, 16);
    // one K step on the cube: W (cout x K) in L0A, a 64-pixel tile of col (K x 64) in L0B, each 64 KiB
    if (Up(K, 16) * 64 * sizeof(float) > 65536 || Up(cout, 16) * Up(K, 8) * sizeof(float) > 65536) {
        return ge::GRAPH_FAILED;
    }
    // the vector cores' UB: the im2col rows of one (n, ci, r, s), a row of C, the bias-added row, a zero row
    uint64_t buf = static_cast<uint64_t>(ho) * Up(wo, 8);
    if (Up(P, 8) > buf) buf = Up(P, 8);
    if ((buf + 3 * Up(P, 8)) * sizeof(float) > 196608) {
        return ge::GRAPH_FAILED;
    }
    auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
    context->SetBlockDim(platform.GetCoreNumAic());  // MIX: every AI core, its cube core and two vector cores
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
    tiling.set_bufFloats(static_cast<uint32_t>(buf));
    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
    size_t* workspace = context->GetWorkspaceSizes(1);  // col (64-float aligned), then C, rows of Np
    workspace[0] = (Up(batch * K * Np, 64) + static_cast<uint64_t>(batch) * cout * Np) * sizeof(float);
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
    y->SetDim(2, x->GetDim(2) + 2 * PAD - wt->GetDim(2) + 1);
    y->SetDim(3, x->GetDim(3) + 2 * PAD - wt->GetDim(3) + 1);
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
@seed 16_cube_conv
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
    m.def("conv2d_custom", &conv2d_custom_impl_npu, "convolution as an implicit GEMM on the cube");
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
