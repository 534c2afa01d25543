// Sum and Mean (evk_sim/reduce_api.h), direct launch. prm (int32): outter, inner, n, form (0 Sum with a tmp
// buffer, 1 Sum, 2 Mean, 3 Mean with accType float); x holds outter rows of inner elements (padding included).
using namespace AscendC;

__aicore__ inline int32_t P(GM_ADDR prm, int i) {
    GlobalTensor<int32_t> g;
    g.SetGlobalBuffer((__gm__ int32_t*)prm);
    return g.GetValue(i);
}

template <typename T> __aicore__ inline void RowCase(GM_ADDR prm, GM_ADDR xg, GM_ADDR out) {
    const uint32_t outter = P(prm, 0), inner = P(prm, 1), n = P(prm, 2);
    const int32_t form = P(prm, 3);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bz, bt;
    pipe.InitBuffer(bx, outter * inner * sizeof(T));
    pipe.InitBuffer(bz, (outter * sizeof(T) + 31) / 32 * 32);
    pipe.InitBuffer(bt, 4096);
    LocalTensor<T> x = bx.Get<T>(), z = bz.Get<T>();
    LocalTensor<uint8_t> tmp = bt.Get<uint8_t>();
    GlobalTensor<T> gx, go;
    gx.SetGlobalBuffer((__gm__ T*)xg, outter * inner);
    go.SetGlobalBuffer((__gm__ T*)out, outter);
    DataCopy(x, gx, outter * inner);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    if (form == 0) Sum(z, x, tmp, SumParams{outter, inner, n});
    else if (form == 1) Sum(z, x, SumParams{outter, inner, n});
    else if (form == 2) Mean(z, x, tmp, MeanParams{outter, inner, n});
    else Mean<T, float>(z, x, MeanParams{outter, inner, n});
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopyPad(go, z, DataCopyExtParams(1, outter * sizeof(T), 0, 0, 0));
}

CASE(rows_f32, GM_ADDR prm, GM_ADDR x, GM_ADDR out) { RowCase<float>(prm, x, out); }
CASE(rows_f16, GM_ADDR prm, GM_ADDR x, GM_ADDR out) { RowCase<half>(prm, x, out); }

// inner is n itself, not rounded up to 32 bytes (10 floats: 40 bytes)
CASE(rows_bad_inner, GM_ADDR prm, GM_ADDR x, GM_ADDR out) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bz;
    pipe.InitBuffer(bx, 1024);
    pipe.InitBuffer(bz, 64);
    LocalTensor<float> lx = bx.Get<float>(), lz = bz.Get<float>();
    Duplicate(lx, 1.0f, 256);
    Sum(lz, lx, SumParams{2, 10, 10});  // RULE invalid_argument
}
