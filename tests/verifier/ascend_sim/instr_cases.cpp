// Instruction tests for the Ascend C emulator: one small kernel per case (direct launch).
// Arguments: prm (int32 parameters in GM), then inputs, then the output. Inputs are loaded with
// DataCopyPad (any length) into TBufs, the instruction runs, the result goes out with DataCopyPad.
using namespace AscendC;

__aicore__ inline int32_t P(GM_ADDR prm, int i) {
    GlobalTensor<int32_t> g;
    g.SetGlobalBuffer((__gm__ int32_t*)prm);
    return g.GetValue(i);
}
__aicore__ inline uint32_t Round32(uint64_t bytes) { return static_cast<uint32_t>((bytes + 31) / 32 * 32); }

template <typename T>
__aicore__ inline void LoadPad(const LocalTensor<T>& dst, GM_ADDR src, int32_t n) {
    GlobalTensor<T> g;
    g.SetGlobalBuffer((__gm__ T*)src, n);
    DataCopyPad(dst, g, DataCopyExtParams(1, n * sizeof(T), 0, 0, 0), DataCopyPadExtParams<T>(false, 0, 0, T(0)));
}
template <typename T>
__aicore__ inline void StorePad(GM_ADDR dst, const LocalTensor<T>& src, int32_t n) {
    GlobalTensor<T> g;
    g.SetGlobalBuffer((__gm__ T*)dst, n);
    DataCopyPad(g, src, DataCopyExtParams(1, n * sizeof(T), 0, 0, 0));
}

// out[n] = f(a[n], b[n]); out may be preloaded with c (ternary forms)
template <typename TO, typename TA, typename TB, typename F>
__aicore__ inline void BinaryCase(GM_ADDR prm, GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR out, F f) {
    int32_t n = P(prm, 0);
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bb, bo;
    pipe.InitBuffer(ba, Round32(n * sizeof(TA)));
    pipe.InitBuffer(bb, Round32(n * sizeof(TB)));
    pipe.InitBuffer(bo, Round32(n * sizeof(TO)));
    LocalTensor<TA> la = ba.Get<TA>();
    LocalTensor<TB> lb = bb.Get<TB>();
    LocalTensor<TO> lo = bo.Get<TO>();
    LoadPad(la, a, n);
    if (b) LoadPad(lb, b, n);
    if (c) LoadPad(lo, c, n);
    PipeBarrier<PIPE_ALL>();
    f(lo, la, lb, n);
    PipeBarrier<PIPE_ALL>();
    StorePad(out, lo, n);
}
#define BIN(NAME, T, CALL)                                                                          \
    CASE(NAME, GM_ADDR prm, GM_ADDR a, GM_ADDR b, GM_ADDR out) {                                    \
        BinaryCase<T, T, T>(prm, a, b, nullptr, out,                                                \
                            [](LocalTensor<T>& o, LocalTensor<T>& x, LocalTensor<T>& y, int32_t n) { CALL; }); \
    }
#define UN(NAME, TO, TI, CALL)                                                                      \
    CASE(NAME, GM_ADDR prm, GM_ADDR a, GM_ADDR out) {                                               \
        BinaryCase<TO, TI, TI>(prm, a, nullptr, nullptr, out,                                       \
                               [](LocalTensor<TO>& o, LocalTensor<TI>& x, LocalTensor<TI>&, int32_t n) { CALL; }); \
    }

BIN(add_f32, float, Add(o, x, y, n))
BIN(sub_f32, float, Sub(o, x, y, n))
BIN(mul_f32, float, Mul(o, x, y, n))
BIN(div_f32, float, Div(o, x, y, n))
BIN(max_f32, float, Max(o, x, y, n))
BIN(min_f32, float, Min(o, x, y, n))
BIN(add_f16, half, Add(o, x, y, n))
BIN(sub_f16, half, Sub(o, x, y, n))
BIN(mul_f16, half, Mul(o, x, y, n))
BIN(div_f16, half, Div(o, x, y, n))
BIN(max_f16, half, Max(o, x, y, n))
BIN(min_f16, half, Min(o, x, y, n))
BIN(add_i32, int32_t, Add(o, x, y, n))
BIN(mul_i32, int32_t, Mul(o, x, y, n))
BIN(add_i16, int16_t, Add(o, x, y, n))
BIN(and_u16, uint16_t, And(o, x, y, n))
BIN(or_u16, uint16_t, Or(o, x, y, n))
BIN(addrelu_f32, float, AddRelu(o, x, y, n))
BIN(subrelu_f16, half, SubRelu(o, x, y, n))

CASE(muladddst_f32, GM_ADDR prm, GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR out) {  // out = a*b + c
    BinaryCase<float, float, float>(prm, a, b, c, out,
                                    [](LocalTensor<float>& o, LocalTensor<float>& x, LocalTensor<float>& y, int32_t n) {
                                        MulAddDst(o, x, y, n);
                                    });
}
CASE(fusedmuladd_f16, GM_ADDR prm, GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR out) {  // out = a*c + b
    BinaryCase<half, half, half>(prm, a, b, c, out,
                                 [](LocalTensor<half>& o, LocalTensor<half>& x, LocalTensor<half>& y, int32_t n) {
                                     FusedMulAdd(o, x, y, n);
                                 });
}
CASE(axpy_f32, GM_ADDR prm, GM_ADDR a, GM_ADDR c, GM_ADDR out) {  // out = a*2.5 + c
    BinaryCase<float, float, float>(prm, a, nullptr, c, out,
                                    [](LocalTensor<float>& o, LocalTensor<float>& x, LocalTensor<float>&, int32_t n) {
                                        Axpy(o, x, 2.5f, n);
                                    });
}

UN(exp_f32, float, float, Exp(o, x, n))
UN(ln_f32, float, float, Ln(o, x, n))
UN(abs_f32, float, float, Abs(o, x, n))
UN(sqrt_f32, float, float, Sqrt(o, x, n))
UN(relu_f32, float, float, Relu(o, x, n))
UN(rsqrt_f32, float, float, Rsqrt(o, x, n))
UN(reciprocal_f32, float, float, Reciprocal(o, x, n))
UN(exp_f16, half, half, Exp(o, x, n))
UN(ln_f16, half, half, Ln(o, x, n))
UN(sqrt_f16, half, half, Sqrt(o, x, n))
UN(abs_f16, half, half, Abs(o, x, n))
UN(relu_f16, half, half, Relu(o, x, n))
UN(not_u16, uint16_t, uint16_t, Not(o, x, n))
UN(adds_f32, float, float, Adds(o, x, 1.5f, n))
UN(muls_f32, float, float, Muls(o, x, -0.75f, n))
UN(maxs_f32, float, float, Maxs(o, x, 0.25f, n))
UN(mins_f32, float, float, Mins(o, x, 0.25f, n))
UN(leakyrelu_f32, float, float, LeakyRelu(o, x, 0.1f, n))
UN(adds_f16, half, half, Adds(o, x, (half)1.5f, n))
UN(muls_f16, half, half, Muls(o, x, (half)-0.75f, n))
UN(adds_i32, int32_t, int32_t, Adds(o, x, 7, n))
UN(dup_f32, float, float, Duplicate(o, 3.25f, n))
UN(dup_f16, half, half, Duplicate(o, (half)-2.5f, n))
UN(dup_i32, int32_t, int32_t, Duplicate(o, (int32_t)-17, n))

UN(cast_f32_f16_rint, half, float, Cast(o, x, RoundMode::CAST_RINT, n))
UN(cast_f32_f16_trunc, half, float, Cast(o, x, RoundMode::CAST_TRUNC, n))
UN(cast_f32_f16_odd, half, float, Cast(o, x, RoundMode::CAST_ODD, n))
UN(cast_f16_f32, float, half, Cast(o, x, RoundMode::CAST_NONE, n))
UN(cast_f32_i32_rint, int32_t, float, Cast(o, x, RoundMode::CAST_RINT, n))
UN(cast_f32_i32_floor, int32_t, float, Cast(o, x, RoundMode::CAST_FLOOR, n))
UN(cast_f32_i32_ceil, int32_t, float, Cast(o, x, RoundMode::CAST_CEIL, n))
UN(cast_f32_i32_round, int32_t, float, Cast(o, x, RoundMode::CAST_ROUND, n))
UN(cast_f32_i32_trunc, int32_t, float, Cast(o, x, RoundMode::CAST_TRUNC, n))
UN(cast_i32_f32, float, int32_t, Cast(o, x, RoundMode::CAST_NONE, n))
UN(cast_f32_f32_round, float, float, Cast(o, x, RoundMode::CAST_ROUND, n))
UN(cast_f32_bf16, bfloat16_t, float, Cast(o, x, RoundMode::CAST_RINT, n))
UN(cast_bf16_f32, float, bfloat16_t, Cast(o, x, RoundMode::CAST_NONE, n))
UN(cast_f16_i8_trunc, int8_t, half, Cast(o, x, RoundMode::CAST_TRUNC, n))
UN(cast_u8_f16, half, uint8_t, Cast(o, x, RoundMode::CAST_NONE, n))

// ---- Compare / Select (n must cover a multiple of 256 bytes) ----
CASE(cmpsel_f32, GM_ADDR prm, GM_ADDR a, GM_ADDR b, GM_ADDR out) {  // where(a < b, a, b)
    int32_t n = P(prm, 0);
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bb, bm, bo;
    pipe.InitBuffer(ba, n * 4);
    pipe.InitBuffer(bb, n * 4);
    pipe.InitBuffer(bm, Round32(n / 8));
    pipe.InitBuffer(bo, n * 4);
    LocalTensor<float> la = ba.Get<float>(), lb = bb.Get<float>(), lo = bo.Get<float>();
    LocalTensor<uint8_t> lm = bm.Get<uint8_t>();
    LoadPad(la, a, n);
    LoadPad(lb, b, n);
    PipeBarrier<PIPE_ALL>();
    Compare(lm, la, lb, CMPMODE::LT, n);
    Select(lo, lm, la, lb, SELMODE::VSEL_TENSOR_TENSOR_MODE, n);
    PipeBarrier<PIPE_ALL>();
    StorePad(out, lo, n);
}
CASE(cmpsel_scalar_f16, GM_ADDR prm, GM_ADDR a, GM_ADDR out) {  // relu via CompareScalar + Select
    int32_t n = P(prm, 0);
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bm, bo;
    pipe.InitBuffer(ba, n * 2);
    pipe.InitBuffer(bm, Round32(n / 8));
    pipe.InitBuffer(bo, n * 2);
    LocalTensor<half> la = ba.Get<half>(), lo = bo.Get<half>();
    LocalTensor<uint8_t> lm = bm.Get<uint8_t>();
    LoadPad(la, a, n);
    PipeBarrier<PIPE_ALL>();
    CompareScalar(lm, la, (half)0.0f, CMPMODE::GT, n);
    Select(lo, lm, la, (half)0.0f, SELMODE::VSEL_TENSOR_SCALAR_MODE, n);
    PipeBarrier<PIPE_ALL>();
    StorePad(out, lo, n);
}
CASE(cmp_bits_f16, GM_ADDR prm, GM_ADDR a, GM_ADDR b, GM_ADDR out) {  // raw bit mask of a >= b
    int32_t n = P(prm, 0);
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bb, bm;
    pipe.InitBuffer(ba, n * 2);
    pipe.InitBuffer(bb, n * 2);
    pipe.InitBuffer(bm, Round32(n / 8));
    LocalTensor<half> la = ba.Get<half>(), lb = bb.Get<half>();
    LocalTensor<uint8_t> lm = bm.Get<uint8_t>();
    LoadPad(la, a, n);
    LoadPad(lb, b, n);
    PipeBarrier<PIPE_ALL>();
    Compare(lm, la, lb, CMPMODE::GE, n);
    PipeBarrier<PIPE_ALL>();
    StorePad(out, lm, n / 8);
}

// ---- reductions (count form): out = [value, index bits] ----
template <typename T, int KIND>
__aicore__ inline void ReduceCase(GM_ADDR prm, GM_ADDR a, GM_ADDR out) {
    int32_t n = P(prm, 0);
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bw, bo;
    pipe.InitBuffer(ba, Round32(n * sizeof(T)));
    pipe.InitBuffer(bw, Round32(n * sizeof(T)));
    pipe.InitBuffer(bo, 32);
    LocalTensor<T> la = ba.Get<T>(), lw = bw.Get<T>(), lo = bo.Get<T>();
    LoadPad(la, a, n);
    Duplicate(lo, T(0), 32 / sizeof(T));
    PipeBarrier<PIPE_ALL>();
    if (KIND == 0) ReduceSum(lo, la, lw, n);
    if (KIND == 1) ReduceMax(lo, la, lw, n, true);
    if (KIND == 2) ReduceMin(lo, la, lw, n, true);
    PipeBarrier<PIPE_ALL>();
    StorePad(out, lo, 2);
}
CASE(reducesum_f32, GM_ADDR prm, GM_ADDR a, GM_ADDR out) { ReduceCase<float, 0>(prm, a, out); }
CASE(reducemax_f32, GM_ADDR prm, GM_ADDR a, GM_ADDR out) { ReduceCase<float, 1>(prm, a, out); }
CASE(reducemin_f32, GM_ADDR prm, GM_ADDR a, GM_ADDR out) { ReduceCase<float, 2>(prm, a, out); }
CASE(reducesum_f16, GM_ADDR prm, GM_ADDR a, GM_ADDR out) { ReduceCase<half, 0>(prm, a, out); }
CASE(reducemax_f16, GM_ADDR prm, GM_ADDR a, GM_ADDR out) { ReduceCase<half, 1>(prm, a, out); }

// ---- mask/repeat-form reductions: rows of `cols` elements, one repeat per row ----
CASE(wholereducesum_f32, GM_ADDR prm, GM_ADDR a, GM_ADDR out) {  // rows x 64, mask = cols
    int32_t rows = P(prm, 0), cols = P(prm, 1);
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bo;
    pipe.InitBuffer(ba, rows * 64 * 4);
    pipe.InitBuffer(bo, Round32(rows * 4));
    LocalTensor<float> la = ba.Get<float>(), lo = bo.Get<float>();
    LoadPad(la, a, rows * 64);
    PipeBarrier<PIPE_ALL>();
    WholeReduceSum<float>(lo, la, cols, rows, 1, 1, 8);
    PipeBarrier<PIPE_ALL>();
    StorePad(out, lo, rows);
}
CASE(wholereducemax_f16, GM_ADDR prm, GM_ADDR a, GM_ADDR out) {  // rows x 128 -> [value, index] pairs
    int32_t rows = P(prm, 0);
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bo;
    pipe.InitBuffer(ba, rows * 128 * 2);
    pipe.InitBuffer(bo, Round32(rows * 4));
    LocalTensor<half> la = ba.Get<half>(), lo = bo.Get<half>();
    LoadPad(la, a, rows * 128);
    PipeBarrier<PIPE_ALL>();
    WholeReduceMax<half>(lo, la, 128, rows, 1, 1, 8);
    PipeBarrier<PIPE_ALL>();
    StorePad(out, lo, rows * 2);
}
CASE(wholereducemin_f32, GM_ADDR prm, GM_ADDR a, GM_ADDR out) {  // values only, bit mask of even lanes
    int32_t rows = P(prm, 0);
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bo;
    pipe.InitBuffer(ba, rows * 64 * 4);
    pipe.InitBuffer(bo, Round32(rows * 4));
    LocalTensor<float> la = ba.Get<float>(), lo = bo.Get<float>();
    LoadPad(la, a, rows * 64);
    PipeBarrier<PIPE_ALL>();
    uint64_t mask[2] = {0x5555555555555555ull, 0};
    WholeReduceMin<float>(lo, la, mask, rows, 1, 1, 8, ReduceOrder::ORDER_ONLY_VALUE);
    PipeBarrier<PIPE_ALL>();
    StorePad(out, lo, rows);
}
CASE(blockreducesum_f32, GM_ADDR prm, GM_ADDR a, GM_ADDR out) {  // repeats x 64 -> 8 sums per repeat
    int32_t reps = P(prm, 0);
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bo;
    pipe.InitBuffer(ba, reps * 256);
    pipe.InitBuffer(bo, reps * 32);
    LocalTensor<float> la = ba.Get<float>(), lo = bo.Get<float>();
    LoadPad(la, a, reps * 64);
    PipeBarrier<PIPE_ALL>();
    BlockReduceSum<float>(lo, la, reps, 64, 1, 1, 8);
    PipeBarrier<PIPE_ALL>();
    StorePad(out, lo, reps * 8);
}
CASE(brcb_f32, GM_ADDR prm, GM_ADDR a, GM_ADDR out) {  // 8*reps values -> each fills a 32-byte block
    int32_t reps = P(prm, 0);
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bo;
    pipe.InitBuffer(ba, Round32(reps * 8 * 4));
    pipe.InitBuffer(bo, reps * 256);
    LocalTensor<float> la = ba.Get<float>(), lo = bo.Get<float>();
    LoadPad(la, a, reps * 8);
    PipeBarrier<PIPE_ALL>();
    Brcb(lo, la, reps, BrcbRepeatParams(1, 8));
    PipeBarrier<PIPE_ALL>();
    StorePad(out, lo, reps * 64);
}

// ---- mask/repeat forms of elementwise instructions (the output is pre-filled with -7) ----
template <typename T, typename F>
__aicore__ inline void MaskCase(GM_ADDR prm, GM_ADDR a, GM_ADDR b, GM_ADDR out, F f) {
    int32_t n = P(prm, 0);  // elements in each buffer
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bb, bo;
    pipe.InitBuffer(ba, Round32(n * sizeof(T)));
    pipe.InitBuffer(bb, Round32(n * sizeof(T)));
    pipe.InitBuffer(bo, Round32(n * sizeof(T)));
    LocalTensor<T> la = ba.Get<T>(), lb = bb.Get<T>(), lo = bo.Get<T>();
    LoadPad(la, a, n);
    LoadPad(lb, b, n);
    Duplicate(lo, T(-7), n);
    PipeBarrier<PIPE_ALL>();
    f(lo, la, lb);
    PipeBarrier<PIPE_ALL>();
    StorePad(out, lo, n);
}
CASE(add_mask_f32, GM_ADDR prm, GM_ADDR a, GM_ADDR b, GM_ADDR out) {
    MaskCase<float>(prm, a, b, out, [](LocalTensor<float>& o, LocalTensor<float>& x, LocalTensor<float>& y) {
        // 40 lanes per repeat, 3 repeats; src1 reads every other block
        Add(o, x, y, 40, 3, BinaryRepeatParams(1, 1, 2, 8, 8, 16));
    });
}
CASE(add_bitmask_f32, GM_ADDR prm, GM_ADDR a, GM_ADDR b, GM_ADDR out) {
    MaskCase<float>(prm, a, b, out, [](LocalTensor<float>& o, LocalTensor<float>& x, LocalTensor<float>& y) {
        uint64_t mask[2] = {0xF0F0F0F0F0F0F0F0ull, 0};
        Add(o, x, y, mask, 2, {1, 1, 1, 8, 8, 8});
    });
}
CASE(mul_mask_f16, GM_ADDR prm, GM_ADDR a, GM_ADDR b, GM_ADDR out) {
    MaskCase<half>(prm, a, b, out, [](LocalTensor<half>& o, LocalTensor<half>& x, LocalTensor<half>& y) {
        uint64_t mask[2] = {0, 0xFFFFFFFF00000000ull};  // lanes 96..127 only
        Mul(o, x, y, mask, 2, {1, 1, 1, 8, 8, 8});
    });
}
CASE(add_counter_f32, GM_ADDR prm, GM_ADDR a, GM_ADDR b, GM_ADDR out) {  // counter mode over n-5 elements
    MaskCase<float>(prm, a, b, out, [prm](LocalTensor<float>& o, LocalTensor<float>& x, LocalTensor<float>& y) {
        int32_t n = P(prm, 0);
        SetMaskCount();
        SetVectorMask<float, MaskMode::COUNTER>(0, n - 5);
        Add<float, false>(o, x, y, MASK_PLACEHOLDER, 1, {1, 1, 1, 8, 8, 8});
        SetMaskNorm();
        ResetMask();
    });
}
CASE(exp_mask_f16, GM_ADDR prm, GM_ADDR a, GM_ADDR b, GM_ADDR out) {  // block stride 2 on src
    MaskCase<half>(prm, a, b, out, [](LocalTensor<half>& o, LocalTensor<half>& x, LocalTensor<half>&) {
        Exp(o, x, 64, 2, UnaryRepeatParams(1, 2, 8, 16));
    });
}
CASE(muls_mask_f32, GM_ADDR prm, GM_ADDR a, GM_ADDR b, GM_ADDR out) {
    MaskCase<float>(prm, a, b, out, [](LocalTensor<float>& o, LocalTensor<float>& x, LocalTensor<float>&) {
        Muls(o, x, 3.0f, 64, 2, UnaryRepeatParams(1, 1, 8, 8));
    });
}
CASE(dup_mask_f32, GM_ADDR prm, GM_ADDR a, GM_ADDR b, GM_ADDR out) {  // 20 lanes, 2 repeats, dst blocks 2 apart
    MaskCase<float>(prm, a, b, out, [](LocalTensor<float>& o, LocalTensor<float>&, LocalTensor<float>&) {
        Duplicate(o, 9.0f, 20, 2, 2, 16);
    });
}
CASE(cast_mask_f16_f32, GM_ADDR prm, GM_ADDR a, GM_ADDR out) {  // 64 lanes per repeat, src rep stride 4
    int32_t n = P(prm, 0);
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bo;
    pipe.InitBuffer(ba, Round32(n * 2));
    pipe.InitBuffer(bo, Round32(n * 4));
    LocalTensor<half> la = ba.Get<half>();
    LocalTensor<float> lo = bo.Get<float>();
    LoadPad(la, a, n);
    PipeBarrier<PIPE_ALL>();
    Cast(lo, la, RoundMode::CAST_NONE, 64, n / 64, {1, 1, 8, 4});
    PipeBarrier<PIPE_ALL>();
    StorePad(out, lo, n);
}

// ---- data movement ----
CASE(datacopy_params_f32, GM_ADDR prm, GM_ADDR a, GM_ADDR out) {  // rows x 24 -> first 16 of each row
    int32_t rows = P(prm, 0);
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, rows * 16 * 4);
    GlobalTensor<float> ga, go;
    ga.SetGlobalBuffer((__gm__ float*)a, rows * 24);
    go.SetGlobalBuffer((__gm__ float*)out, rows * 16);
    LocalTensor<float> l = q.AllocTensor<float>();
    DataCopy(l, ga, DataCopyParams(rows, 2, 1, 0));  // 2 blocks per row, skip 1 block in GM
    q.EnQue(l);
    LocalTensor<float> m = q.DeQue<float>();
    PipeBarrier<PIPE_ALL>();
    DataCopy(go, m, rows * 16);
    q.FreeTensor(m);
}
CASE(datacopypad_pad_f32, GM_ADDR prm, GM_ADDR a, GM_ADDR out) {  // rows x 13 -> rows x 16, padded with -1
    int32_t rows = P(prm, 0);
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, rows * 16 * 4);
    GlobalTensor<float> ga, go;
    ga.SetGlobalBuffer((__gm__ float*)a, rows * 13);
    go.SetGlobalBuffer((__gm__ float*)out, rows * 16);
    LocalTensor<float> l = q.AllocTensor<float>();
    DataCopyPad(l, ga, DataCopyExtParams(rows, 13 * 4, 0, 0, 0), DataCopyPadExtParams<float>(true, 0, 3, -1.0f));
    q.EnQue(l);
    LocalTensor<float> m = q.DeQue<float>();
    PipeBarrier<PIPE_ALL>();
    DataCopy(go, m, rows * 16);
    q.FreeTensor(m);
}
CASE(datacopypad_rows_f16, GM_ADDR prm, GM_ADDR a, GM_ADDR out) {  // rows x 13 half, GM->UB->GM with strides
    int32_t rows = P(prm, 0);
    TPipe pipe;
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 1, rows * 32);
    GlobalTensor<half> ga, go;
    ga.SetGlobalBuffer((__gm__ half*)a, rows * 13);
    go.SetGlobalBuffer((__gm__ half*)out, rows * 15);
    LocalTensor<half> l = q.AllocTensor<half>();
    DataCopyPad(l, ga, DataCopyExtParams(rows, 13 * 2, 0, 0, 0), DataCopyPadExtParams<half>(false, 0, 0, (half)0));
    q.EnQue(l);
    LocalTensor<half> m = q.DeQue<half>();
    // out rows are 15 wide: a 4-byte gap after each 26-byte row
    DataCopyPad(go, m, DataCopyExtParams(rows, 13 * 2, 0, 4, 0));
    q.FreeTensor(m);
}
CASE(datacopy_ub_ub_f32, GM_ADDR prm, GM_ADDR a, GM_ADDR out) {
    int32_t n = P(prm, 0);  // multiple of 8
    TPipe pipe;
    TBuf<TPosition::VECCALC> b1, b2;
    pipe.InitBuffer(b1, n * 4);
    pipe.InitBuffer(b2, n * 4);
    LocalTensor<float> l1 = b1.Get<float>(), l2 = b2.Get<float>();
    GlobalTensor<float> ga, go;
    ga.SetGlobalBuffer((__gm__ float*)a, n);
    go.SetGlobalBuffer((__gm__ float*)out, n);
    DataCopy(l1, ga, n);
    PipeBarrier<PIPE_ALL>();
    DataCopy(l2, l1, n);
    PipeBarrier<PIPE_ALL>();
    DataCopy(go, l2, n);
}
CASE(atomic_add_f32, GM_ADDR prm, GM_ADDR a, GM_ADDR out) {  // every block adds a into out
    int32_t n = P(prm, 0);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, n * 4);
    LocalTensor<float> l = b.Get<float>();
    GlobalTensor<float> ga, go;
    ga.SetGlobalBuffer((__gm__ float*)a, n);
    go.SetGlobalBuffer((__gm__ float*)out, n);
    DataCopy(l, ga, n);
    PipeBarrier<PIPE_ALL>();
    SetAtomicAdd<float>();
    DataCopy(go, l, n);
    SetAtomicNone();
}
CASE(scalar_access_f32, GM_ADDR prm, GM_ADDR a, GM_ADDR out) {  // reverse via GetValue/SetValue
    int32_t n = P(prm, 0);
    GlobalTensor<float> ga, go;
    ga.SetGlobalBuffer((__gm__ float*)a, n);
    go.SetGlobalBuffer((__gm__ float*)out, n);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, Round32(n * 4));
    LocalTensor<float> l = b.Get<float>();
    for (int32_t i = 0; i < n; ++i) l.SetValue(i, ga.GetValue(n - 1 - i));
    for (int32_t i = 0; i < n; ++i) go.SetValue(i, l.GetValue(i) * 2.0f);
}

// ---- mask/repeat forms of Compare, Select and ReduceSum ----
CASE(cmp_mask_f32, GM_ADDR prm, GM_ADDR a, GM_ADDR b, GM_ADDR out) {  // bits of a < b, 2 repeats of 64
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bb, bm;
    pipe.InitBuffer(ba, 512);
    pipe.InitBuffer(bb, 512);
    pipe.InitBuffer(bm, 32);
    LocalTensor<float> la = ba.Get<float>(), lb = bb.Get<float>();
    LocalTensor<uint8_t> lm = bm.Get<uint8_t>();
    LoadPad(la, a, 128);
    LoadPad(lb, b, 128);
    PipeBarrier<PIPE_ALL>();
    Compare(lm, la, lb, CMPMODE::LT, 64, 2, {1, 1, 1, 8, 8, 8});
    PipeBarrier<PIPE_ALL>();
    StorePad(out, lm, 16);
}
CASE(select_mask_f32, GM_ADDR prm, GM_ADDR a, GM_ADDR b, GM_ADDR out) {  // where(a > b, a, b), first 48 lanes
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bb, bm, bo;
    pipe.InitBuffer(ba, 512);
    pipe.InitBuffer(bb, 512);
    pipe.InitBuffer(bm, 32);
    pipe.InitBuffer(bo, 512);
    LocalTensor<float> la = ba.Get<float>(), lb = bb.Get<float>(), lo = bo.Get<float>();
    LocalTensor<uint8_t> lm = bm.Get<uint8_t>();
    LoadPad(la, a, 128);
    LoadPad(lb, b, 128);
    Duplicate(lo, -7.0f, 128);
    PipeBarrier<PIPE_ALL>();
    Compare(lm, la, lb, CMPMODE::GT, 128);
    Select(lo, lm, la, lb, SELMODE::VSEL_TENSOR_TENSOR_MODE, 48, 2, {1, 1, 1, 8, 8, 8});
    PipeBarrier<PIPE_ALL>();
    StorePad(out, lo, 128);
}
CASE(reducesum_mask_f32, GM_ADDR prm, GM_ADDR a, GM_ADDR out) {  // sum of the first 40 of each of 3 rows of 64
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bw, bo;
    pipe.InitBuffer(ba, 768);
    pipe.InitBuffer(bw, 32);
    pipe.InitBuffer(bo, 32);
    LocalTensor<float> la = ba.Get<float>(), lw = bw.Get<float>(), lo = bo.Get<float>();
    LoadPad(la, a, 192);
    Duplicate(lo, 0.0f, 8);
    PipeBarrier<PIPE_ALL>();
    ReduceSum(lo, la, lw, 40, 3, 8);
    PipeBarrier<PIPE_ALL>();
    StorePad(out, lo, 2);
}
