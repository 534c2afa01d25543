#include "kernel_operator.h"
using namespace AscendC;

constexpr int32_t BUFFER_NUM = 2;

class KernelLayerNorm {
public:
    __aicore__ inline KernelLayerNorm() {}
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR y, const LayerNormCustomTilingData& t)
    {
        uint32_t blockIdx = GetBlockIdx();
        cols = t.cols;
        colsAligned = t.colsAligned;
        eps = t.epsilon;
        invCols = t.invCols;
        myRows = t.rowsPerBlock + (blockIdx < t.bigBlocks ? 1 : 0);
        uint32_t firstRow = t.rowsPerBlock * blockIdx + (blockIdx < t.bigBlocks ? blockIdx : t.bigBlocks);
        xGm.SetGlobalBuffer((__gm__ float*)x + firstRow * cols, myRows * cols);
        yGm.SetGlobalBuffer((__gm__ float*)y + firstRow * cols, myRows * cols);
        gammaGm.SetGlobalBuffer((__gm__ float*)gamma, cols);
        betaGm.SetGlobalBuffer((__gm__ float*)beta, cols);
        pipe.InitBuffer(inQueue, BUFFER_NUM, colsAligned * sizeof(float));
        pipe.InitBuffer(outQueue, BUFFER_NUM, colsAligned * sizeof(float));
        pipe.InitBuffer(paramQueue, 1, 2 * colsAligned * sizeof(float));
        pipe.InitBuffer(centeredBuf, colsAligned * sizeof(float));
        pipe.InitBuffer(squareBuf, colsAligned * sizeof(float));
        pipe.InitBuffer(workBuf, colsAligned * sizeof(float));
        pipe.InitBuffer(redBuf, 32);
    }
    __aicore__ inline void Process()
    {
        // gamma and beta: loaded once, side by side in one buffer
        LocalTensor<float> params = paramQueue.AllocTensor<float>();
        DataCopyExtParams copyRow{1, static_cast<uint32_t>(cols * sizeof(float)), 0, 0, 0};
        DataCopyPadExtParams<float> pad{false, 0, 0, 0};
        DataCopyPad(params, gammaGm, copyRow, pad);
        DataCopyPad(params[colsAligned], betaGm, copyRow, pad);
        paramQueue.EnQue(params);
        params = paramQueue.DeQue<float>();
        for (uint32_t r = 0; r < myRows; ++r) {
            CopyIn(r);
            Compute(params);
            CopyOut(r);
        }
        paramQueue.FreeTensor(params);
    }

private:
    __aicore__ inline void CopyIn(uint32_t r)
    {
        LocalTensor<float> xLocal = inQueue.AllocTensor<float>();
        DataCopyExtParams copyRow{1, static_cast<uint32_t>(cols * sizeof(float)), 0, 0, 0};
        DataCopyPadExtParams<float> pad{false, 0, 0, 0};
        DataCopyPad(xLocal, xGm[r * cols], copyRow, pad);
        inQueue.EnQue(xLocal);
    }
    __aicore__ inline float ReduceToScalar(const LocalTensor<float>& src)
    {
        LocalTensor<float> red = redBuf.Get<float>();
        LocalTensor<float> work = workBuf.Get<float>();
        ReduceSum(red, src, work, cols);
        event_t eventVS = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_S));
        SetFlag<HardEvent::V_S>(eventVS);
        WaitFlag<HardEvent::V_S>(eventVS);
        return red.GetValue(0);
    }
    __aicore__ inline void Compute(const LocalTensor<float>& params)
    {
        LocalTensor<float> xLocal = inQueue.DeQue<float>();
        LocalTensor<float> yLocal = outQueue.AllocTensor<float>();
        LocalTensor<float> centered = centeredBuf.Get<float>();
        LocalTensor<float> square = squareBuf.Get<float>();
        float mean = ReduceToScalar(xLocal) * invCols;
        Adds(centered, xLocal, -mean, cols);
        Mul(square, centered, centered, cols);
        float var = ReduceToScalar(square) * invCols;
        // rstd on the vector unit: sqrt(var + eps) in one lane, then a scalar reciprocal
        LocalTensor<float> red = redBuf.Get<float>();
        Duplicate(red, var + eps, 8);
        Sqrt(red, red, 8);
        event_t eventVS = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_S));
        SetFlag<HardEvent::V_S>(eventVS);
        WaitFlag<HardEvent::V_S>(eventVS);
        float rstd = 1.0f / red.GetValue(0);
        Muls(centered, centered, rstd, cols);
        Mul(centered, centered, params, cols);
        Add(yLocal, centered, params[colsAligned], cols);
        outQueue.EnQue<float>(yLocal);
        inQueue.FreeTensor(xLocal);
    }
    __aicore__ inline void CopyOut(uint32_t r)
    {
        LocalTensor<float> yLocal = outQueue.DeQue<float>();
        DataCopyExtParams copyRow{1, static_cast<uint32_t>(cols * sizeof(float)), 0, 0, 0};
        DataCopyPad(yGm[r * cols], yLocal, copyRow);
        outQueue.FreeTensor(yLocal);
    }

    TPipe pipe;
    TQue<QuePosition::VECIN, BUFFER_NUM> inQueue;
    TQue<QuePosition::VECOUT, BUFFER_NUM> outQueue;
    TQue<QuePosition::VECIN, 1> paramQueue;
    TBuf<TPosition::VECCALC> centeredBuf, squareBuf, workBuf, redBuf;
    GlobalTensor<float> xGm, yGm, gammaGm, betaGm;
    uint32_t cols = 0, colsAligned = 0, myRows = 0;
    float eps = 0, invCols = 0;
};

extern "C" __global__ __aicore__ void layer_norm_custom(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR y,
                                                        GM_ADDR workspace, GM_ADDR tiling)
{
    GET_TILING_DATA(tiling_data, tiling);
    KernelLayerNorm op;
    op.Init(x, gamma, beta, y, tiling_data);
    op.Process();
}
