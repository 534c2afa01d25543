// The high-level math and activation APIs (evk_sim/math_api.h), direct launch. Arguments: prm (int32 in GM: the
// API's number, n, the form), then the inputs x (and y for Power), then the output; loaded and stored with
// DataCopyPad. Forms: 0 (dst, src, calCount); 1 (dst, src, sharedTmpBuffer, calCount); 2 the whole tensor.
using namespace AscendC;

__aicore__ inline int32_t P(GM_ADDR prm, int i) {
    GlobalTensor<int32_t> g;
    g.SetGlobalBuffer((__gm__ int32_t*)prm);
    return g.GetValue(i);
}

template <typename T> __aicore__ inline void Apply(int32_t api, int32_t form, const LocalTensor<T>& dst,
                                                  const LocalTensor<T>& x, const LocalTensor<T>& y,
                                                  const LocalTensor<uint8_t>& tmp, uint32_t n) {
#define EVK_FORMS(F)                    \
    if (form == 0) F(dst, x, n);        \
    else if (form == 1) F(dst, x, tmp, n); \
    else F(dst, x)
    switch (api) {
        case 0: EVK_FORMS(Sigmoid); break;
        case 1: EVK_FORMS(Tanh); break;
        case 2: EVK_FORMS(Erf); break;
        case 3: EVK_FORMS(Sin); break;
        case 4: EVK_FORMS(Cos); break;
        case 5: Log(dst, x, n); break;
        case 6: EVK_FORMS(Log2); break;
        case 7: EVK_FORMS(Log10); break;
        case 8: EVK_FORMS(Sign); break;
        case 9: Floor(dst, x, n); break;
        case 10: Ceil(dst, x, tmp, n); break;
        case 11: Trunc(dst, x, n); break;
        case 12: ClampMax(dst, x, static_cast<T>(0.5f), n); break;
        case 13: ClampMin(dst, x, tmp, static_cast<T>(-0.25f), n); break;
        case 14: Silu(dst, x, n); break;
        case 15: Swish(dst, x, n, static_cast<T>(1.5f)); break;
        case 16: Gelu(dst, x, n); break;
        case 17: FasterGelu(dst, x, tmp, n); break;
        case 18: Power(dst, x, y, n); break;
        case 19: Power(dst, x, static_cast<T>(3.0f), n); break;
        case 20: Power(dst, static_cast<T>(2.0f), y, n); break;
        default: break;
    }
#undef EVK_FORMS
}

template <typename T> __aicore__ inline void MathCase(GM_ADDR prm, GM_ADDR xg, GM_ADDR yg, GM_ADDR out) {
    const int32_t api = P(prm, 0), n = P(prm, 1), form = P(prm, 2);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, by, bz, bt;
    pipe.InitBuffer(bx, n * sizeof(T));
    pipe.InitBuffer(by, n * sizeof(T));
    pipe.InitBuffer(bz, n * sizeof(T));
    pipe.InitBuffer(bt, 1024);
    LocalTensor<T> x = bx.Get<T>(), y = by.Get<T>(), z = bz.Get<T>();
    LocalTensor<uint8_t> tmp = bt.Get<uint8_t>();
    GlobalTensor<T> gx, gy, go;
    gx.SetGlobalBuffer((__gm__ T*)xg, n);
    gy.SetGlobalBuffer((__gm__ T*)yg, n);
    go.SetGlobalBuffer((__gm__ T*)out, n);
    DataCopy(x, gx, n);
    DataCopy(y, gy, n);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Apply(api, form, z, x, y, tmp, n);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(go, z, n);
}

CASE(math_f32, GM_ADDR prm, GM_ADDR x, GM_ADDR y, GM_ADDR out) { MathCase<float>(prm, x, y, out); }
CASE(math_f16, GM_ADDR prm, GM_ADDR x, GM_ADDR y, GM_ADDR out) { MathCase<half>(prm, x, y, out); }

// misuse: the destination is the source (the APIs do not support overlap), and an int32 Sigmoid
CASE(math_in_place, GM_ADDR prm, GM_ADDR x, GM_ADDR y, GM_ADDR out) {
    const int32_t n = P(prm, 1);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx;
    pipe.InitBuffer(bx, n * sizeof(float));
    LocalTensor<float> lx = bx.Get<float>();
    GlobalTensor<float> gx, go;
    gx.SetGlobalBuffer((__gm__ float*)x, n);
    go.SetGlobalBuffer((__gm__ float*)out, n);
    DataCopy(lx, gx, n);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Sigmoid(lx, lx, n);  // RULE invalid_argument
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(go, lx, n);
}
CASE(math_int, GM_ADDR prm, GM_ADDR x, GM_ADDR y, GM_ADDR out) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bz;
    pipe.InitBuffer(bx, 256);
    pipe.InitBuffer(bz, 256);
    LocalTensor<int32_t> lx = bx.Get<int32_t>(), lz = bz.Get<int32_t>();
    Duplicate(lx, 1, 64);
    Sigmoid(lz, lx, 64);  // RULE unsupported_dtype
}
