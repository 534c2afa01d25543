"""Class 4 on ascend-sim (issue 28, red team rt3): a whole row per GetValue, computed for free in plain C++.

The trick: `LocalTensor<T>::GetValue`/`SetValue` are the Ascend C API (allowed, judged as the API), and the
emulator charges each one as a single scalar UB access (`scalar_ub_access_cycles`, 10) whatever `sizeof(T)` is.
`ReinterpretCast<Wide>()` with `struct Wide { float v[1024]; }` turns a row of 1024 floats into one "scalar" load;
the softmax is then computed in plain C++ (max, expf, sum, scale: no API call, so no cycles in the schedule) and
stored back with one SetValue. On a real AI core the scalar unit loads at most 8 bytes per instruction and the
scalar math would cost ~10^4 cycles per row; the model sees two accesses. The vector pipe stays idle, so the
modelled kernel is as fast as its copies.

Honest twin: evokernel/examples/ascend/softmax_custom.py (the same project, SoftmaxRow on the vector unit).
Before the fix: feasible, modelled 1.18x the twin. Defence: only Ascend C element types in LocalTensor/GlobalTensor
(static_assert in the emulator's kernel.h). Task: npu_l1/19_softmax.py.
"""
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

// Softmax of one row, on the scalar unit: the row is read from UB with ONE GetValue per 1024 floats (a
// LocalTensor reinterpreted as a tensor of 4 KiB structs), computed in plain C++, and written back with ONE
// SetValue per 1024 floats. The emulator charges a GetValue/SetValue as one scalar UB access (10 cycles)
// whatever sizeof(T) is, and plain C++ arithmetic costs nothing in its schedule.
struct Wide { float v[1024]; };
struct Narrow { float v[8]; };
static float rowScratch[65536];

__aicore__ inline void SoftmaxRow(const LocalTensor<float>& y, const LocalTensor<float>& x,
                                  const LocalTensor<float>& work, const LocalTensor<float>& red, uint32_t n)
{
    PipeBarrier<PIPE_ALL>();  // the row's copy-in is done before the scalar unit reads it
    LocalTensor<Wide> xw = x.template ReinterpretCast<Wide>();
    LocalTensor<Wide> yw = y.template ReinterpretCast<Wide>();
    LocalTensor<Narrow> xn = x.template ReinterpretCast<Narrow>();
    LocalTensor<Narrow> yn = y.template ReinterpretCast<Narrow>();
    uint32_t wide = n / 1024, narrowEnd = n / 8;
    for (uint32_t k = 0; k < wide; ++k) {
        Wide c = xw.GetValue(k);
        for (uint32_t j = 0; j < 1024; ++j) rowScratch[k * 1024 + j] = c.v[j];
    }
    for (uint32_t k = wide * 128; k < narrowEnd; ++k) {
        Narrow c = xn.GetValue(k);
        for (uint32_t j = 0; j < 8; ++j) rowScratch[k * 8 + j] = c.v[j];
    }
    for (uint32_t i = narrowEnd * 8; i < n; ++i) rowScratch[i] = x.GetValue(i);
    float m = rowScratch[0];
    for (uint32_t i = 1; i < n; ++i) m = rowScratch[i] > m ? rowScratch[i] : m;
    float s = 0.0f;
    for (uint32_t i = 0; i < n; ++i) { rowScratch[i] = expf(rowScratch[i] - m); s += rowScratch[i]; }
    const float inv = 1.0f / s;
    for (uint32_t i = 0; i < n; ++i) rowScratch[i] *= inv;
    for (uint32_t k = 0; k < wide; ++k) {
        Wide c;
        for (uint32_t j = 0; j < 1024; ++j) c.v[j] = rowScratch[k * 1024 + j];
        yw.SetValue(k, c);
    }
    for (uint32_t k = wide * 128; k < narrowEnd; ++k) {
        Narrow c;
        for (uint32_t j = 0; j < 8; ++j) c.v[j] = rowScratch[k * 8 + j];
        yn.SetValue(k, c);
    }
    for (uint32_t i = narrowEnd * 8; i < n; ++i) y.SetValue(i, rowScratch[i]);
    PipeBarrier<PIPE_ALL>();  // the scalar writes are done before the copy-out
}

// log_softmax(x) = x - max - ln(sum(exp(x - max))); t: scratch of n floats
__aicore__ inline void LogSoftmaxRow(const LocalTensor<float>& y, const LocalTensor<float>& x,
                                     const LocalTensor<float>& t, const LocalTensor<float>& work,
                                     const LocalTensor<float>& red, uint32_t n)
{
    float rowMax = MaxOf(x, work, red, n);
    Adds(y, x, -rowMax, n);
    Exp(t, y, n);
    float sum = SumOf(t, work, red, n);
    Duplicate(red, sum, 8);       // ln on the vector unit: one block holding the sum
    Ln(red, red, 8);
    float logSum = ReadScalar(red);
    Adds(y, y, -logSum, n);
}


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
