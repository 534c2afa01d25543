#include "kernel_operator.h"
using namespace AscendC;

constexpr int32_t BUFFER_NUM = 2;

// Row-wise softmax: one row per tile, double-buffered; half rows are computed in float.
template <typename T>
class KernelSoftmax {
public:
    __aicore__ inline KernelSoftmax() {}
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, const SoftmaxCustomTilingData& t)
    {
        uint32_t blockIdx = GetBlockIdx();
        this->cols = t.cols;
        this->colsAligned = t.colsAligned;
        this->myRows = t.rowsPerBlock + (blockIdx < t.bigBlocks ? 1 : 0);
        uint32_t firstRow = t.rowsPerBlock * blockIdx + (blockIdx < t.bigBlocks ? blockIdx : t.bigBlocks);
        xGm.SetGlobalBuffer((__gm__ T*)x + firstRow * cols, this->myRows * cols);
        yGm.SetGlobalBuffer((__gm__ T*)y + firstRow * cols, this->myRows * cols);
        pipe.InitBuffer(inQueue, BUFFER_NUM, colsAligned * sizeof(T));
        pipe.InitBuffer(outQueue, BUFFER_NUM, colsAligned * sizeof(T));
        pipe.InitBuffer(workBuf, colsAligned * sizeof(float));
        pipe.InitBuffer(rowBuf, colsAligned * sizeof(float));
        pipe.InitBuffer(redBuf, 32);
    }
    __aicore__ inline void Process()
    {
        for (uint32_t r = 0; r < this->myRows; ++r) {
            CopyIn(r);
            Compute();
            CopyOut(r);
        }
    }

private:
    __aicore__ inline void CopyIn(uint32_t r)
    {
        LocalTensor<T> xLocal = inQueue.AllocTensor<T>();
        DataCopyExtParams params{1, static_cast<uint32_t>(cols * sizeof(T)), 0, 0, 0};
        DataCopyPadExtParams<T> pad{false, 0, 0, 0};
        DataCopyPad(xLocal, xGm[r * cols], params, pad);
        inQueue.EnQue(xLocal);
    }
    __aicore__ inline float ScalarOf(const LocalTensor<float>& red)
    {
        event_t eventVS = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_S));
        SetFlag<HardEvent::V_S>(eventVS);
        WaitFlag<HardEvent::V_S>(eventVS);
        return red.GetValue(0);
    }
    __aicore__ inline void Compute()
    {
        LocalTensor<T> xLocal = inQueue.DeQue<T>();
        LocalTensor<T> yLocal = outQueue.AllocTensor<T>();
        LocalTensor<float> row = rowBuf.Get<float>();
        LocalTensor<float> work = workBuf.Get<float>();
        LocalTensor<float> red = redBuf.Get<float>();
        if constexpr (std::is_same<T, float>::value) {
            ReduceMax(red, xLocal, work, cols);
            float maxValue = ScalarOf(red);
            Adds(row, xLocal, -maxValue, cols);
        } else {
            Cast(row, xLocal, RoundMode::CAST_NONE, cols);
            ReduceMax(red, row, work, cols);
            float maxValue = ScalarOf(red);
            Adds(row, row, -maxValue, cols);
        }
        Exp(row, row, cols);
        ReduceSum(red, row, work, cols);
        float sum = ScalarOf(red);
        if constexpr (std::is_same<T, float>::value) {
            Muls(yLocal, row, 1.0f / sum, cols);
        } else {
            Muls(row, row, 1.0f / sum, cols);
            Cast(yLocal, row, RoundMode::CAST_RINT, cols);
        }
        outQueue.EnQue<T>(yLocal);
        inQueue.FreeTensor(xLocal);
    }
    __aicore__ inline void CopyOut(uint32_t r)
    {
        LocalTensor<T> yLocal = outQueue.DeQue<T>();
        DataCopyExtParams params{1, static_cast<uint32_t>(cols * sizeof(T)), 0, 0, 0};
        DataCopyPad(yGm[r * cols], yLocal, params);
        outQueue.FreeTensor(yLocal);
    }

    TPipe pipe;
    TQue<QuePosition::VECIN, BUFFER_NUM> inQueue;
    TQue<QuePosition::VECOUT, BUFFER_NUM> outQueue;
    TBuf<TPosition::VECCALC> workBuf, rowBuf, redBuf;
    GlobalTensor<T> xGm, yGm;
    uint32_t cols = 0, colsAligned = 0, myRows = 0;
};

extern "C" __global__ __aicore__ void softmax_custom(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling)
{
    GET_TILING_DATA(tiling_data, tiling);
    KernelSoftmax<DTYPE_X> op;
    op.Init(x, y, tiling_data);
    op.Process();
}
