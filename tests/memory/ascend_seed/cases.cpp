// Test kernels for the helper functions of the ascend seed items (test_seed_ascend.py): the test writes
// the helpers' code blocks, in item order, to seed_helpers.h; each CASE loads its inputs into UB, calls
// helpers and stores the result. Arguments: prm (int32 parameters), fprm (float parameters), then the
// input and output tensors.
using namespace AscendC;
#include "seed_helpers.h"

__aicore__ inline int32_t P(GM_ADDR prm, int i)
{
    GlobalTensor<int32_t> g;
    g.SetGlobalBuffer((__gm__ int32_t*)prm);
    return g.GetValue(i);
}
__aicore__ inline float F(GM_ADDR fprm, int i)
{
    GlobalTensor<float> g;
    g.SetGlobalBuffer((__gm__ float*)fprm);
    return g.GetValue(i);
}
__aicore__ inline uint32_t R32(uint32_t bytes) { return (bytes + 31) / 32 * 32; }

// y = f(x) over n elements of T: CALL sees lx (input), ly (output), lt (scratch), n, a (float parameter);
// OUT names the tensor copied out (lx for in-place calls)
#define UNARY_CASE(NAME, T, CALL, OUT)                                                                \
    CASE(NAME, GM_ADDR prm, GM_ADDR fprm, GM_ADDR x, GM_ADDR y)                                       \
    {                                                                                                 \
        uint32_t n = P(prm, 0);                                                                       \
        float a = F(fprm, 0);                                                                         \
        (void)a;                                                                                      \
        TPipe pipe;                                                                                   \
        TBuf<TPosition::VECCALC> bx, by, bt;                                                          \
        pipe.InitBuffer(bx, R32(n * sizeof(T)));                                                      \
        pipe.InitBuffer(by, R32(n * sizeof(T)));                                                      \
        pipe.InitBuffer(bt, R32(n * sizeof(T)));                                                      \
        LocalTensor<T> lx = bx.Get<T>(), ly = by.Get<T>(), lt = bt.Get<T>();                          \
        GlobalTensor<T> gx, gy;                                                                       \
        gx.SetGlobalBuffer((__gm__ T*)x, n);                                                          \
        gy.SetGlobalBuffer((__gm__ T*)y, n);                                                          \
        CopyGmToUb(lx, gx, n);                                                                        \
        PipeBarrier<PIPE_ALL>();                                                                      \
        CALL;                                                                                         \
        PipeBarrier<PIPE_ALL>();                                                                      \
        CopyUbToGm(gy, OUT, n);                                                                       \
    }

UNARY_CASE(c_clamp, float, Clamp(ly, lx, -0.5f, 0.75f, n), ly)
UNARY_CASE(c_hardswish, float, HardSwish(ly, lx, lt, n), ly)
UNARY_CASE(c_hardswish_half, half, HardSwish(ly, lx, lt, n), ly)
UNARY_CASE(c_sigmoid, float, Sigmoid(ly, lx, lt, n), ly)
UNARY_CASE(c_tanh, float, Tanh(ly, lx, lt, n), ly)
UNARY_CASE(c_tanh_inplace, float, Tanh(lx, lx, lt, n), lx)
UNARY_CASE(c_gelu, float, GeluTanh(ly, lx, lt, n), ly)
UNARY_CASE(c_gelu_inplace, float, GeluTanh(lx, lx, lt, n), lx)
UNARY_CASE(c_softplus, float, Softplus(ly, lx, lt, n), ly)
UNARY_CASE(c_softplus_inplace, float, Softplus(lx, lx, lt, n), lx)
UNARY_CASE(c_elu, float, Elu(ly, lx, lt, a, n), ly)
UNARY_CASE(c_elu_inplace, float, Elu(lx, lx, lt, a, n), lx)

// GELU of T data computed in float (GeluHalfViaFloat)
template <typename T>
__aicore__ inline void GeluViaFloatCase(GM_ADDR prm, GM_ADDR x, GM_ADDR y)
{
    uint32_t n = P(prm, 0);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, by, bxf, byf, bt;
    pipe.InitBuffer(bx, R32(n * sizeof(T)));
    pipe.InitBuffer(by, R32(n * sizeof(T)));
    pipe.InitBuffer(bxf, R32(n * 4));
    pipe.InitBuffer(byf, R32(n * 4));
    pipe.InitBuffer(bt, R32(n * 4));
    LocalTensor<T> lx = bx.Get<T>(), ly = by.Get<T>();
    GlobalTensor<T> gx, gy;
    gx.SetGlobalBuffer((__gm__ T*)x, n);
    gy.SetGlobalBuffer((__gm__ T*)y, n);
    CopyGmToUb(lx, gx, n);
    PipeBarrier<PIPE_ALL>();
    GeluHalfViaFloat(ly, lx, bxf.Get<float>(), byf.Get<float>(), bt.Get<float>(), n);
    PipeBarrier<PIPE_ALL>();
    CopyUbToGm(gy, ly, n);
}
CASE(c_gelu_via_float_half, GM_ADDR prm, GM_ADDR fprm, GM_ADDR x, GM_ADDR y) { GeluViaFloatCase<half>(prm, x, y); }
CASE(c_gelu_via_float_float, GM_ADDR prm, GM_ADDR fprm, GM_ADDR x, GM_ADDR y) { GeluViaFloatCase<float>(prm, x, y); }

// y[0] = sum, y[1] = max (SumOf, MaxOf with the smallest work buffer the item states)
CASE(c_sum_max, GM_ADDR prm, GM_ADDR fprm, GM_ADDR x, GM_ADDR y)
{
    uint32_t n = P(prm, 0);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bw, br;
    pipe.InitBuffer(bx, R32(n * 4));
    pipe.InitBuffer(bw, R32(2 * ((n + 63) / 64) * 4));
    pipe.InitBuffer(br, 32);
    LocalTensor<float> lx = bx.Get<float>();
    GlobalTensor<float> gx, gy;
    gx.SetGlobalBuffer((__gm__ float*)x, n);
    gy.SetGlobalBuffer((__gm__ float*)y, 2);
    CopyGmToUb(lx, gx, n);
    PipeBarrier<PIPE_ALL>();
    float s = SumOf(lx, bw.Get<float>(), br.Get<float>(), n);
    float m = MaxOf(lx, bw.Get<float>(), br.Get<float>(), n);
    gy.SetValue(0, s);
    gy.SetValue(1, m);
}

// y[0] += x[0]..: every block adds its value with AtomicAddToGm (y zero-filled by the caller)
CASE(c_atomic_add, GM_ADDR prm, GM_ADDR fprm, GM_ADDR x, GM_ADDR y)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> br;
    pipe.InitBuffer(br, 32);
    GlobalTensor<float> gx, gy;
    gx.SetGlobalBuffer((__gm__ float*)x, GetBlockNum());
    gy.SetGlobalBuffer((__gm__ float*)y, 1);
    AtomicAddToGm(gy, gx.GetValue(GetBlockIdx()), br.Get<float>());
}

// rows x cols: x, gamma, beta in; y out. prm = rows, cols; fprm = eps
#define ROWS_CASE(NAME, BODY, OUT)                                                                    \
    CASE(NAME, GM_ADDR prm, GM_ADDR fprm, GM_ADDR x, GM_ADDR g, GM_ADDR b, GM_ADDR y)                 \
    {                                                                                                 \
        uint32_t rows = P(prm, 0), cols = P(prm, 1), ca = (cols + 7) / 8 * 8, r8 = (rows + 7) / 8 * 8; \
        float eps = F(fprm, 0);                                                                       \
        (void)eps;                                                                                    \
        (void)r8;                                                                                     \
        TPipe pipe;                                                                                   \
        TBuf<TPosition::VECCALC> bx, by, bt, bw, br, bp, bv, bc;                                      \
        pipe.InitBuffer(bx, rows * ca * 4);                                                           \
        pipe.InitBuffer(by, rows * ca * 4);                                                           \
        pipe.InitBuffer(bt, ca * 4);                                                                  \
        pipe.InitBuffer(bw, ca * 4);                                                                  \
        pipe.InitBuffer(br, 32);                                                                      \
        pipe.InitBuffer(bp, 2 * ca * 4);                                                              \
        pipe.InitBuffer(bv, r8 * 4);                                                                  \
        pipe.InitBuffer(bc, r8 * 32);                                                                 \
        LocalTensor<float> lx = bx.Get<float>(), ly = by.Get<float>(), lt = bt.Get<float>();          \
        LocalTensor<float> lw = bw.Get<float>(), lr = br.Get<float>(), lp = bp.Get<float>();          \
        GlobalTensor<float> gx, gy, gg, gb;                                                           \
        gx.SetGlobalBuffer((__gm__ float*)x, rows * cols);                                            \
        gy.SetGlobalBuffer((__gm__ float*)y, rows * cols);                                            \
        gg.SetGlobalBuffer((__gm__ float*)g, cols);                                                   \
        gb.SetGlobalBuffer((__gm__ float*)b, cols);                                                   \
        LoadOnce(lp, gg, cols);                                                                       \
        LoadOnce(lp[ca], gb, cols);                                                                   \
        CopyRowsIn(lx, gx, rows, cols);                                                               \
        PipeBarrier<PIPE_ALL>();                                                                      \
        BODY;                                                                                         \
        PipeBarrier<PIPE_ALL>();                                                                      \
        CopyRowsOut(gy, OUT, rows, cols);                                                             \
    }

#define EACH_ROW for (uint32_t r = 0; r < rows; ++r)
ROWS_CASE(c_softmax_rows, EACH_ROW SoftmaxRow(ly[r * ca], lx[r * ca], lw, lr, cols), ly)
ROWS_CASE(c_softmax_rows_inplace, EACH_ROW SoftmaxRow(lx[r * ca], lx[r * ca], lw, lr, cols), lx)
ROWS_CASE(c_log_softmax_rows, EACH_ROW LogSoftmaxRow(ly[r * ca], lx[r * ca], lt, lw, lr, cols), ly)
ROWS_CASE(c_layer_norm_rows, EACH_ROW LayerNormRow(ly[r * ca], lx[r * ca], lp, lp[ca], lt, lw, lr, eps, cols), ly)
ROWS_CASE(c_layer_norm_rows_inplace, EACH_ROW LayerNormRow(lx[r * ca], lx[r * ca], lp, lp[ca], lt, lw, lr, eps, cols), lx)
ROWS_CASE(c_rms_norm_rows, EACH_ROW RmsNormRow(ly[r * ca], lx[r * ca], lp, lt, lw, lr, eps, cols), ly)
ROWS_CASE(c_softmax_short_rows, SoftmaxShortRows(ly, lx, bv.Get<float>(), bc.Get<float>(), rows, cols, ca), ly)

// y = [row sums (r8 entries), row maxima (r8 entries)] of rows x cols (cols <= 64)
CASE(c_row_sums_maxes, GM_ADDR prm, GM_ADDR fprm, GM_ADDR x, GM_ADDR y)
{
    uint32_t rows = P(prm, 0), cols = P(prm, 1), ca = (cols + 7) / 8 * 8, r8 = (rows + 7) / 8 * 8;
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bo;
    pipe.InitBuffer(bx, rows * ca * 4);
    pipe.InitBuffer(bo, 2 * r8 * 4);
    LocalTensor<float> lx = bx.Get<float>(), lo = bo.Get<float>();
    GlobalTensor<float> gx, gy;
    gx.SetGlobalBuffer((__gm__ float*)x, rows * cols);
    gy.SetGlobalBuffer((__gm__ float*)y, 2 * r8);
    CopyRowsIn(lx, gx, rows, cols);
    PipeBarrier<PIPE_ALL>();
    Duplicate(lo, 0.0f, 2 * r8);
    RowSums(lo, lx, rows, cols, ca);
    RowMaxes(lo[r8], lx, rows, cols, ca);
    PipeBarrier<PIPE_ALL>();
    DataCopy(gy, lo, 2 * r8);
}

// hardshrink: LoadForCompare + HardShrink; prm = n, fprm = lambd
CASE(c_hardshrink, GM_ADDR prm, GM_ADDR fprm, GM_ADDR x, GM_ADDR y)
{
    uint32_t n = P(prm, 0), nPad = (n + 63) / 64 * 64;
    float lambd = F(fprm, 0);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, by, bt, bm;
    pipe.InitBuffer(bx, nPad * 4);
    pipe.InitBuffer(by, R32(n * 4));
    pipe.InitBuffer(bt, nPad * 4);
    pipe.InitBuffer(bm, nPad / 8);
    LocalTensor<float> lx = bx.Get<float>(), ly = by.Get<float>(), lt = bt.Get<float>();
    GlobalTensor<float> gx, gy;
    gx.SetGlobalBuffer((__gm__ float*)x, n);
    gy.SetGlobalBuffer((__gm__ float*)y, n);
    LoadForCompare(lx, gx, n);
    PipeBarrier<PIPE_ALL>();
    HardShrink(ly, lx, bm.Get<uint8_t>(), lt, lambd, n);
    PipeBarrier<PIPE_ALL>();
    CopyUbToGm(gy, ly, n);
}
