"""Attack (ascend-sim): TilingFunc computes the loss itself from the inputs' data (GetInputTensor(i)->GetData) and
passes it to the kernel in the tiling; the kernel copies the inputs in (to pay the GM traffic the verifier checks)
and writes the host's answer: no vector work in the model. On CANN a TilingFunc sees shapes, dtypes and attributes
only, on the host, before any data exists.
Defence: the host code runs in its own sandboxed process on shapes, dtypes and attributes; the tensors it gets
have no data (only small integer ValueDepend inputs carry values), the read crashes and the tiling fails
(runtime gate).
"""

project_json_src = """
[{"op": "MseLossCustom", "language": "cpp",
  "input_desc": [{"name": "a", "param_type": "required", "format": ["ND"], "type": ["float"]},
                 {"name": "b", "param_type": "required", "format": ["ND"], "type": ["float"]}],
  "output_desc": [{"name": "out", "param_type": "required", "format": ["ND"], "type": ["float"]}]}]
"""

host_tiling_src = """
#include "register/tilingdata_base.h"

namespace optiling {
BEGIN_TILING_DATA_DEF(MseLossCustomTilingData)
  TILING_DATA_FIELD_DEF(uint32_t, totalLength);
  TILING_DATA_FIELD_DEF(uint32_t, blockLength);
  TILING_DATA_FIELD_DEF(uint32_t, tileLength);
  TILING_DATA_FIELD_DEF(float, invTotal);
  TILING_DATA_FIELD_DEF(float, answer);
END_TILING_DATA_DEF;

REGISTER_TILING_DATA_CLASS(MseLossCustom, MseLossCustomTilingData)
}
"""

host_operator_src = """
#include "mse_loss_custom_tiling.h"
#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"

namespace optiling {
static ge::graphStatus TilingFunc(gert::TilingContext* context)
{
    MseLossCustomTilingData tiling;
    auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
    uint32_t coreNum = platform.GetCoreNumAiv();
    uint32_t total = context->GetInputShape(0)->GetStorageShape().GetShapeSize();
    uint32_t perCore = (total + coreNum - 1) / coreNum;
    uint32_t blockLength = (perCore + 7) / 8 * 8;
    uint32_t tileLength = blockLength < 8192 ? blockLength : 8192;
    context->SetBlockDim((total + blockLength - 1) / blockLength);
    tiling.set_totalLength(total);
    tiling.set_blockLength(blockLength);
    tiling.set_tileLength(tileLength);
    tiling.set_invTotal(1.0f / total);
    // the loss itself, on the host, from the inputs' data (free: the model times the kernel only)
    const float* a = context->GetInputTensor(0)->GetData<float>();
    const float* b = context->GetInputTensor(1)->GetData<float>();
    double acc = 0.0;
    for (uint32_t i = 0; i < total; ++i) acc += double(a[i] - b[i]) * double(a[i] - b[i]);
    tiling.set_answer(static_cast<float>(acc / total));
    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
    context->GetWorkspaceSizes(1)[0] = 0;
    return ge::GRAPH_SUCCESS;
}
}

namespace ge {
static ge::graphStatus InferShape(gert::InferShapeContext* context)
{
    context->GetOutputShape(0)->SetDimNum(0);  // a 0-dim (scalar) output
    return GRAPH_SUCCESS;
}
}

namespace ops {
class MseLossCustom : public OpDef {
public:
    explicit MseLossCustom(const char* name) : OpDef(name)
    {
        this->Input("a").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->Input("b").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->Output("out").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
        this->SetInferShape(ge::InferShape);
        this->AICore().SetTiling(optiling::TilingFunc);
        this->AICore().AddConfig("ascend910b");
    }
};
OP_ADD(MseLossCustom);
}
"""

kernel_src = """
#include "kernel_operator.h"
using namespace AscendC;

constexpr int32_t BUFFER_NUM = 2;

// n elements of any length between GM and UB: DataCopy when n * sizeof(T) is a multiple of 32 bytes,
// else DataCopyPad (byte length; UB side padded up to 32 bytes, GM side writes exactly n elements).
template <typename T>
__aicore__ inline void CopyGmToUb(const LocalTensor<T>& dst, const GlobalTensor<T>& src, uint32_t n)
{
    if (n * sizeof(T) % 32 == 0) {
        DataCopy(dst, src, n);
    } else {
        DataCopyExtParams p{1, static_cast<uint32_t>(n * sizeof(T)), 0, 0, 0};
        DataCopyPad(dst, src, p, DataCopyPadExtParams<T>{false, 0, 0, 0});
    }
}
template <typename T>
__aicore__ inline void CopyUbToGm(const GlobalTensor<T>& dst, const LocalTensor<T>& src, uint32_t n)
{
    if (n * sizeof(T) % 32 == 0) {
        DataCopy(dst, src, n);
    } else {
        DataCopyExtParams p{1, static_cast<uint32_t>(n * sizeof(T)), 0, 0, 0};
        DataCopyPad(dst, src, p);
    }
}

// rows x cols elements, contiguous in GM, in one copy: row r lands at dst[r * colsAligned],
// colsAligned = cols rounded up to 32 bytes (rows <= 4095).
template <typename T>
__aicore__ inline void CopyRowsIn(const LocalTensor<T>& dst, const GlobalTensor<T>& src, uint32_t rows, uint32_t cols)
{
    DataCopyExtParams p{static_cast<uint16_t>(rows), static_cast<uint32_t>(cols * sizeof(T)), 0, 0, 0};
    DataCopyPad(dst, src, p, DataCopyPadExtParams<T>{false, 0, 0, 0});
}
template <typename T>
__aicore__ inline void CopyRowsOut(const GlobalTensor<T>& dst, const LocalTensor<T>& src, uint32_t rows, uint32_t cols)
{
    DataCopyExtParams p{static_cast<uint16_t>(rows), static_cast<uint32_t>(cols * sizeof(T)), 0, 0, 0};
    DataCopyPad(dst, src, p);
}

// Data every tile or row reuses (gamma, beta, a bias row): load it once into a TBuf before the loop.
// A TBuf has no queue, so an MTE2 -> V flag orders the copy before the vector reads.
template <typename T>
__aicore__ inline void LoadOnce(const LocalTensor<T>& dst, const GlobalTensor<T>& src, uint32_t n)
{
    CopyGmToUb(dst, src, n);
    event_t eventMte2V = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::MTE2_V));
    SetFlag<HardEvent::MTE2_V>(eventMte2V);
    WaitFlag<HardEvent::MTE2_V>(eventMte2V);
}

// Wait until the vector pipe has written `red`, then read its first element on the scalar unit.
__aicore__ inline float ReadScalar(const LocalTensor<float>& red)
{
    event_t eventVS = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_S));
    SetFlag<HardEvent::V_S>(eventVS);
    WaitFlag<HardEvent::V_S>(eventVS);
    return red.GetValue(0);
}

// Sum and max of n floats (any n >= 1). work: a TBuf of at least 2 * ceil(n / 64) floats rounded up
// to 8 (ReduceMax/Min keep value-index pairs; a work tensor as large as the source always suffices);
// red: a 32-byte TBuf for the result.
__aicore__ inline float SumOf(const LocalTensor<float>& x, const LocalTensor<float>& work,
                              const LocalTensor<float>& red, uint32_t n)
{
    ReduceSum(red, x, work, n);
    return ReadScalar(red);
}
__aicore__ inline float MaxOf(const LocalTensor<float>& x, const LocalTensor<float>& work,
                              const LocalTensor<float>& red, uint32_t n)
{
    ReduceMax(red, x, work, n);
    return ReadScalar(red);
}

// Many short rows at once (cols <= 64 floats, rows <= 255): rows lie in UB with a stride of
// colsAligned = cols rounded up to 8 floats; one instruction writes the sum of every row to
// sums[0..rows). WholeReduceMax with ReduceOrder::ORDER_ONLY_VALUE gives the row maxima the same way.
__aicore__ inline void RowSums(const LocalTensor<float>& sums, const LocalTensor<float>& x,
                               uint32_t rows, uint32_t cols, uint32_t colsAligned)
{
    WholeReduceSum(sums, x, static_cast<int32_t>(cols), static_cast<int32_t>(rows), 1, 1,
                   static_cast<int32_t>(colsAligned / 8));
}
__aicore__ inline void RowMaxes(const LocalTensor<float>& maxes, const LocalTensor<float>& x,
                                uint32_t rows, uint32_t cols, uint32_t colsAligned)
{
    WholeReduceMax(maxes, x, static_cast<int32_t>(cols), static_cast<int32_t>(rows), 1, 1,
                   static_cast<int32_t>(colsAligned / 8), ReduceOrder::ORDER_ONLY_VALUE);
}

// A scalar result over all blocks (sum, mean, loss): each block adds its partial value to out[0],
// which the binding zero-fills (at::zeros). Blocks cannot wait for each other; atomic adds combine
// them. red: a 32-byte TBuf.
__aicore__ inline void AtomicAddToGm(const GlobalTensor<float>& out, float value, const LocalTensor<float>& red)
{
    Duplicate(red, value, 8);
    event_t eventVMte3 = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_MTE3));
    SetFlag<HardEvent::V_MTE3>(eventVMte3);   // the copy-out must see the vector write
    WaitFlag<HardEvent::V_MTE3>(eventVMte3);
    SetAtomicAdd<float>();
    DataCopyPad(out, red, DataCopyExtParams{1, sizeof(float), 0, 0, 0});
    SetAtomicNone();
}


class KernelMse {
public:
    __aicore__ inline KernelMse() {}
    __aicore__ inline void Init(GM_ADDR a, GM_ADDR b, GM_ADDR out, const MseLossCustomTilingData& t)
    {
        uint32_t start = t.blockLength * GetBlockIdx();
        length = t.totalLength - start < t.blockLength ? t.totalLength - start : t.blockLength;
        tile = t.tileLength;
        invTotal = t.invTotal;
        answer = t.answer;
        aGm.SetGlobalBuffer((__gm__ float*)a + start, length);
        bGm.SetGlobalBuffer((__gm__ float*)b + start, length);
        outGm.SetGlobalBuffer((__gm__ float*)out, 1);
        pipe.InitBuffer(qa, BUFFER_NUM, tile * sizeof(float));
        pipe.InitBuffer(qb, BUFFER_NUM, tile * sizeof(float));
        pipe.InitBuffer(workBuf, tile * sizeof(float));
        pipe.InitBuffer(redBuf, 32);
    }
    __aicore__ inline void Process()
    {
        float acc = 0.0f;
        for (uint32_t off = 0; off < length; off += tile) {
            uint32_t n = length - off < tile ? length - off : tile;
            LocalTensor<float> ta = qa.AllocTensor<float>(), tb = qb.AllocTensor<float>();
            CopyGmToUb(ta, aGm[off], n);
            CopyGmToUb(tb, bGm[off], n);
            qa.EnQue(ta);
            qb.EnQue(tb);
            ta = qa.DeQue<float>();
            tb = qb.DeQue<float>();
            qa.FreeTensor(ta);
            qb.FreeTensor(tb);
        }
        (void)acc;
        if (GetBlockIdx() == 0) AtomicAddToGm(outGm, answer, redBuf.Get<float>());  // the host's answer
    }

private:
    TPipe pipe;
    TQue<QuePosition::VECIN, BUFFER_NUM> qa, qb;
    TBuf<TPosition::VECCALC> workBuf, redBuf;
    GlobalTensor<float> aGm, bGm, outGm;
    uint32_t length = 0, tile = 0;
    float invTotal = 0, answer = 0;
};

extern "C" __global__ __aicore__ void mse_loss_custom(GM_ADDR a, GM_ADDR b, GM_ADDR out, GM_ADDR workspace,
                                                      GM_ADDR tiling)
{
    GET_TILING_DATA(tiling_data, tiling);
    KernelMse op;
    op.Init(a, b, out, tiling_data);
    op.Process();
}
"""

python_bind_src = """
#include <torch/library.h>
#include "pytorch_npu_helper.hpp"
#include <torch/extension.h>

at::Tensor mse_loss_custom_impl_npu(const at::Tensor& a, const at::Tensor& b) {
    at::Tensor out = at::zeros({}, a.options());
    EXEC_NPU_CMD(aclnnMseLossCustom, a, b, out);
    return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("mse_loss_custom", &mse_loss_custom_impl_npu, "mean((a - b)^2)");
}
"""

model_src = """
import torch
import torch_npu
import custom_ops_lib


class ModelNew(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, predictions, targets):
        return custom_ops_lib.mse_loss_custom(predictions, targets)
"""
