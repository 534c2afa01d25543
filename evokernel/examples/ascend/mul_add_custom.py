"""Ascend C candidate (six strings of an operator project). a * b + c: the CopyIn/Compute/CopyOut pipeline of seed item 02 with a host side.
task: npu_l1/12_elementwise_mul_add.py

    evokernel verify evokernel/suites/npu_l1/12_elementwise_mul_add.py evokernel/examples/ascend/mul_add_custom.py --backend ascend-sim
"""
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

kernel_src = """#include "kernel_operator.h"
using namespace AscendC;

constexpr int32_t BUFFER_NUM = 2;
using InQue = TQue<QuePosition::VECIN, BUFFER_NUM>;

class KernelMulAdd {  // z = a * b + c over this block's range, one tile at a time
public:
    __aicore__ inline KernelMulAdd() {}
    __aicore__ inline void Init(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR z, const MulAddCustomTilingData& t)
    {
        uint32_t start = t.blockLength * GetBlockIdx();
        length = t.totalLength - start < t.blockLength ? t.totalLength - start : t.blockLength;
        tile = t.tileLength;
        aGm.SetGlobalBuffer((__gm__ float*)a + start, length);
        bGm.SetGlobalBuffer((__gm__ float*)b + start, length);
        cGm.SetGlobalBuffer((__gm__ float*)c + start, length);
        zGm.SetGlobalBuffer((__gm__ float*)z + start, length);
        pipe.InitBuffer(qa, BUFFER_NUM, tile * sizeof(float));  // UB: 4 queues x 2 x tile x 4 bytes
        pipe.InitBuffer(qb, BUFFER_NUM, tile * sizeof(float));
        pipe.InitBuffer(qc, BUFFER_NUM, tile * sizeof(float));
        pipe.InitBuffer(qz, BUFFER_NUM, tile * sizeof(float));
    }
    __aicore__ inline void Process()
    {
        for (uint32_t off = 0; off < length; off += tile) {
            uint32_t n = length - off < tile ? length - off : tile;
            Load(qa, aGm[off], n);  // CopyIn
            Load(qb, bGm[off], n);
            Load(qc, cGm[off], n);
            Compute(n);
            Store(zGm[off], n);     // CopyOut
        }
    }

private:
    __aicore__ inline void Load(InQue& q, const GlobalTensor<float>& g, uint32_t n)
    {
        LocalTensor<float> t = q.AllocTensor<float>();
        DataCopyExtParams p{1, static_cast<uint32_t>(n * sizeof(float)), 0, 0, 0};
        if (n % 8 == 0) DataCopy(t, g, n);
        else DataCopyPad(t, g, p, DataCopyPadExtParams<float>{false, 0, 0, 0.0f});
        q.EnQue(t);
    }
    __aicore__ inline void Compute(uint32_t n)
    {
        LocalTensor<float> ta = qa.DeQue<float>(), tb = qb.DeQue<float>(), tc = qc.DeQue<float>();
        LocalTensor<float> tz = qz.AllocTensor<float>();
        Mul(tz, ta, tb, n);
        Add(tz, tz, tc, n);
        qz.EnQue(tz);
        qa.FreeTensor(ta);
        qb.FreeTensor(tb);
        qc.FreeTensor(tc);
    }
    __aicore__ inline void Store(const GlobalTensor<float>& g, uint32_t n)
    {
        LocalTensor<float> tz = qz.DeQue<float>();
        DataCopyExtParams p{1, static_cast<uint32_t>(n * sizeof(float)), 0, 0, 0};
        if (n % 8 == 0) DataCopy(g, tz, n);
        else DataCopyPad(g, tz, p);
        qz.FreeTensor(tz);
    }

    TPipe pipe;
    InQue qa, qb, qc;
    TQue<QuePosition::VECOUT, BUFFER_NUM> qz;
    GlobalTensor<float> aGm, bGm, cGm, zGm;
    uint32_t length = 0, tile = 0;
};

extern "C" __global__ __aicore__ void mul_add_custom(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR z,
                                                     GM_ADDR workspace, GM_ADDR tiling)
{
    GET_TILING_DATA(tiling_data, tiling);
    KernelMulAdd op;
    op.Init(a, b, c, z, tiling_data);
    op.Process();
}
"""

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
