// SoftMax, SimpleSoftMax, LayerNorm and RmsNorm (evk_sim/norm_api.h), direct launch. prm (int32 in GM) holds the
// shape and the form; the tilings are filled in the kernel the way the host tiling functions fill them
// (evk_norm::softmax_fill; the LayerNorm/RmsNorm fields the kernel API reads), the host functions themselves are
// exercised by the operator projects (test_norm_api.py).
using namespace AscendC;

__aicore__ inline int32_t P(GM_ADDR prm, int i) {
    GlobalTensor<int32_t> g;
    g.SetGlobalBuffer((__gm__ int32_t*)prm);
    return g.GetValue(i);
}
__aicore__ inline uint32_t Up32(uint32_t bytes) { return (bytes + 31) / 32 * 32; }
__aicore__ inline void ToV() {
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
}
__aicore__ inline void ToMte3() {
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
}
template <typename T> __aicore__ inline void Load(const LocalTensor<T>& l, GM_ADDR g, uint32_t n) {
    GlobalTensor<T> gt;
    gt.SetGlobalBuffer((__gm__ T*)g, n);
    DataCopyPad(l, gt, DataCopyExtParams(1, n * sizeof(T), 0, 0, 0), DataCopyPadExtParams<T>(false, 0, 0, 0));
}
template <typename T> __aicore__ inline void Store(GM_ADDR g, const LocalTensor<T>& l, uint32_t n) {
    GlobalTensor<T> gt;
    gt.SetGlobalBuffer((__gm__ T*)g, n);
    DataCopyPad(gt, l, DataCopyExtParams(1, n * sizeof(T), 0, 0, 0));
}

// prm: m, k (padded), oriK, form. form 0: sum/max + tmp; 1: sum/max, framework tmp; 2: dst/src + tmp;
// 3: in place (dst is src) + tmp; 4: SimpleSoftMax with the max/sum of a SoftMax; 5: a shape info that
// disagrees with the tiling (isCheckTiling recomputes it); 6: LogSoftMax (T == U). U is the sum/max type (float with half data: the
// mixed form). Outputs: dst [m, k], sum [m, 32B], max [m, 32B].
template <typename T, typename U>
__aicore__ inline void SoftmaxCase(GM_ADDR prm, GM_ADDR xg, GM_ADDR dg, GM_ADDR sg, GM_ADDR mg) {
    const uint32_t m = P(prm, 0), k = P(prm, 1), ok = P(prm, 2);
    const int32_t form = P(prm, 3);
    const uint32_t blk = 32 / sizeof(U);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bd, bs, bm, bt, bd2;
    pipe.InitBuffer(bx, m * k * sizeof(T));
    pipe.InitBuffer(bd, m * k * sizeof(T));
    pipe.InitBuffer(bd2, m * k * sizeof(T));
    pipe.InitBuffer(bs, m * 32);
    pipe.InitBuffer(bm, m * 32);
    const uint32_t tmpBytes = 2 * (k * 4 + 64);  // two rows per pass
    pipe.InitBuffer(bt, tmpBytes);
    LocalTensor<T> x = bx.Get<T>(), d = bd.Get<T>(), d2 = bd2.Get<T>();
    LocalTensor<U> s = bs.Get<U>(), mx = bm.Get<U>();
    LocalTensor<uint8_t> tmp = bt.Get<uint8_t>();
    SoftMaxTiling tiling;
    evk_norm::softmax_fill(m, k, sizeof(U), 2 < m ? 2 : m, tiling);
    SoftMaxShapeInfo info = {m, k, m, ok};
    Load(x, xg, m * k);
    ToV();
    if (form == 0) SoftMax<T>(d, s, mx, x, tmp, tiling, info);
    else if (form == 1) SoftMax<T>(d, s, mx, x, tiling, info);
    else if (form == 2) SoftMax<T>(d, x, tmp, tiling, info);
    else if (form == 3) SoftMax<T>(x, s, mx, x, tmp, tiling, info);
    else if (form == 4) {
        SoftMax<T>(d2, s, mx, x, tmp, tiling, info);
        SimpleSoftMax<T>(d, s, mx, x, tmp, tiling, info);
    } else if (form == 6) {
        if constexpr (std::is_same<T, U>::value) LogSoftMax<T>(d, s, mx, x, tmp, tiling, info);
    } else {
        SoftMaxTiling other;
        evk_norm::softmax_fill(m + 8, k, sizeof(U), 1, other);
        SoftMax<T>(d, s, mx, x, tmp, other, info);
    }
    ToMte3();
    Store(dg, form == 3 ? x : d, m * k);
    if (form != 2) {
        Store(sg, s, m * blk);
        Store(mg, mx, m * blk);
    }
}
CASE(softmax_f32, GM_ADDR prm, GM_ADDR x, GM_ADDR d, GM_ADDR s, GM_ADDR m) { SoftmaxCase<float, float>(prm, x, d, s, m); }
CASE(softmax_f16, GM_ADDR prm, GM_ADDR x, GM_ADDR d, GM_ADDR s, GM_ADDR m) { SoftmaxCase<half, half>(prm, x, d, s, m); }
CASE(softmax_f16_f32, GM_ADDR prm, GM_ADDR x, GM_ADDR d, GM_ADDR s, GM_ADDR m) {
    SoftmaxCase<half, float>(prm, x, d, s, m);
}

// LayerNorm [B, S, H]: prm b, s, h, oh, form (0 tmp, 1 framework tmp, 2 output is inputX). Outputs y, mean, var.
template <typename T>
__aicore__ inline void LayerNormCase(GM_ADDR prm, GM_ADDR xg, GM_ADDR gg, GM_ADDR btg, GM_ADDR yg, GM_ADDR mg,
                                     GM_ADDR vg) {
    const uint32_t b = P(prm, 0), s = P(prm, 1), h = P(prm, 2), oh = P(prm, 3);
    const int32_t form = P(prm, 4);
    const uint32_t bs = b * s;
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bg, bb, by, bm, bv, bt;
    pipe.InitBuffer(bx, bs * h * sizeof(T));
    pipe.InitBuffer(bg, h * sizeof(T));
    pipe.InitBuffer(bb, h * sizeof(T));
    pipe.InitBuffer(by, bs * h * sizeof(T));
    pipe.InitBuffer(bm, Up32(bs * sizeof(T)));
    pipe.InitBuffer(bv, Up32(bs * sizeof(T)));
    pipe.InitBuffer(bt, 3 * h * 4 + 64);  // one row per pass
    LocalTensor<T> x = bx.Get<T>(), g = bg.Get<T>(), be = bb.Get<T>(), y = by.Get<T>(), mu = bm.Get<T>(),
                   va = bv.Get<T>();
    LocalTensor<uint8_t> tmp = bt.Get<uint8_t>();
    LayerNormTiling t;
    t.bLength = b, t.sLength = s, t.hLength = h, t.originalHLength = oh, t.bsCurLength = 1;
    Load(x, xg, bs * h);
    Load(g, gg, h);
    Load(be, btg, h);
    ToV();
    const T eps = static_cast<T>(1e-5f);
    if (form == 0) LayerNorm<T>(y, mu, va, x, g, be, tmp, eps, t);
    else if (form == 1) LayerNorm<T>(y, mu, va, x, g, be, eps, t);
    else LayerNorm<T>(x, mu, va, x, g, be, tmp, eps, t);
    ToMte3();
    Store(yg, form == 2 ? x : y, bs * h);
    Store(mg, mu, bs);
    Store(vg, va, bs);
}
CASE(layernorm_f32, GM_ADDR prm, GM_ADDR x, GM_ADDR g, GM_ADDR b, GM_ADDR y, GM_ADDR m, GM_ADDR v) {
    LayerNormCase<float>(prm, x, g, b, y, m, v);
}
CASE(layernorm_f16, GM_ADDR prm, GM_ADDR x, GM_ADDR g, GM_ADDR b, GM_ADDR y, GM_ADDR m, GM_ADDR v) {
    LayerNormCase<half>(prm, x, g, b, y, m, v);
}

// LayerNorm [A, R] with float gamma/beta: prm a, r, rp, form (0 tmp, 1 framework tmp, 2 isNoBeta config). Outputs y, mean, rstd.
template <typename T>
__aicore__ inline void LayerNormArCase(GM_ADDR prm, GM_ADDR xg, GM_ADDR gg, GM_ADDR btg, GM_ADDR yg, GM_ADDR mg,
                                       GM_ADDR rg) {
    const uint32_t a = P(prm, 0), r = P(prm, 1), rp = P(prm, 2);
    const int32_t form = P(prm, 3);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bg, bb, by, bm, brs, bt;
    pipe.InitBuffer(bx, a * rp * sizeof(T));
    pipe.InitBuffer(bg, Up32(r * 4));
    pipe.InitBuffer(bb, Up32(r * 4));
    pipe.InitBuffer(by, a * rp * sizeof(T));
    pipe.InitBuffer(bm, Up32(a * 4));
    pipe.InitBuffer(brs, Up32(a * 4));
    pipe.InitBuffer(bt, a * (3 * ((r + 7) / 8 * 8) * 4 + 64));
    LocalTensor<T> x = bx.Get<T>(), y = by.Get<T>();
    LocalTensor<float> g = bg.Get<float>(), be = bb.Get<float>(), mu = bm.Get<float>(), rs = brs.Get<float>();
    LocalTensor<uint8_t> tmp = bt.Get<uint8_t>();
    LayerNormSeparateTiling t;
    t.aLength = a, t.rLength = r, t.aCurLength = a;
    LayerNormPara para = {a, r, rp};
    for (uint32_t i = 0; i < a; ++i) {
        GlobalTensor<T> gt;
        gt.SetGlobalBuffer((__gm__ T*)xg + i * r, r);
        DataCopyPad(x[i * rp], gt, DataCopyExtParams(1, r * sizeof(T), 0, 0, 0),
                    DataCopyPadExtParams<T>(false, 0, 0, 0));
    }
    Load(g, gg, r);
    Load(be, btg, r);
    ToV();
    if (form == 0) LayerNorm<float, T>(y, mu, rs, x, g, be, 1e-5f, tmp, para, t);
    else if (form == 1) LayerNorm<float, T>(y, mu, rs, x, g, be, 1e-5f, para, t);
    else {  // no beta, the config a function-local static constexpr (as asc-devkit's layernorm_v2 example has it)
        static constexpr LayerNormConfig noBeta = LayerNormConfig{true, false, false, true};
        LayerNorm<float, T, false, noBeta>(y, mu, rs, x, g, be, 1e-5f, tmp, para, t);
    }
    ToMte3();
    for (uint32_t i = 0; i < a; ++i) {
        GlobalTensor<T> gt;
        gt.SetGlobalBuffer((__gm__ T*)yg + i * r, r);
        DataCopyPad(gt, y[i * rp], DataCopyExtParams(1, r * sizeof(T), 0, 0, 0));
    }
    Store(mg, mu, a);
    Store(rg, rs, a);
}
CASE(layernorm_ar_f32, GM_ADDR prm, GM_ADDR x, GM_ADDR g, GM_ADDR b, GM_ADDR y, GM_ADDR m, GM_ADDR r) {
    LayerNormArCase<float>(prm, x, g, b, y, m, r);
}
CASE(layernorm_ar_f16, GM_ADDR prm, GM_ADDR x, GM_ADDR g, GM_ADDR b, GM_ADDR y, GM_ADDR m, GM_ADDR r) {
    LayerNormArCase<half>(prm, x, g, b, y, m, r);
}

// RmsNorm: prm bs, h, oh, form (0 tmp, 1 framework tmp, 2 in place). Output y.
template <typename T>
__aicore__ inline void RmsNormCase(GM_ADDR prm, GM_ADDR xg, GM_ADDR gg, GM_ADDR yg) {
    const uint32_t bs = P(prm, 0), h = P(prm, 1), oh = P(prm, 2);
    const int32_t form = P(prm, 3);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bg, by, bt;
    pipe.InitBuffer(bx, bs * h * sizeof(T));
    pipe.InitBuffer(bg, h * sizeof(T));
    pipe.InitBuffer(by, bs * h * sizeof(T));
    pipe.InitBuffer(bt, bs * (h * 4 + 32));
    LocalTensor<T> x = bx.Get<T>(), g = bg.Get<T>(), y = by.Get<T>();
    LocalTensor<uint8_t> tmp = bt.Get<uint8_t>();
    RmsNormTiling t;
    t.bLength = 1, t.sLength = bs, t.hLength = h, t.originalHLength = oh, t.mainBsLength = bs;
    Load(x, xg, bs * h);
    Load(g, gg, h);
    ToV();
    const T eps = static_cast<T>(1e-5f);
    if (form == 0) RmsNorm<T>(y, x, g, tmp, eps, t);
    else if (form == 1) RmsNorm<T>(y, x, g, eps, t);
    else RmsNorm<T>(x, x, g, tmp, eps, t);
    ToMte3();
    Store(yg, form == 2 ? x : y, bs * h);
}
CASE(rmsnorm_f32, GM_ADDR prm, GM_ADDR x, GM_ADDR g, GM_ADDR y) { RmsNormCase<float>(prm, x, g, y); }
CASE(rmsnorm_f16, GM_ADDR prm, GM_ADDR x, GM_ADDR g, GM_ADDR y) { RmsNormCase<half>(prm, x, g, y); }

// ---- misuse: each call below is wrong in one way the documentation names ----
#define EVK_NORM_SETUP(BYTES)                      \
    TPipe pipe;                                    \
    TBuf<TPosition::VECCALC> ba, bb, bc, bd, bt;   \
    pipe.InitBuffer(ba, BYTES);                    \
    pipe.InitBuffer(bb, BYTES);                    \
    pipe.InitBuffer(bc, BYTES);                    \
    pipe.InitBuffer(bd, BYTES);                    \
    pipe.InitBuffer(bt, 64);                       \
    LocalTensor<float> A = ba.Get<float>(), B = bb.Get<float>(), C = bc.Get<float>(), D = bd.Get<float>(); \
    LocalTensor<uint8_t> small = bt.Get<uint8_t>(); \
    Duplicate(A, 1.0f, BYTES / 4);                 \
    Duplicate(B, 1.0f, BYTES / 4);                 \
    Duplicate(C, 1.0f, BYTES / 4);                 \
    Duplicate(D, 1.0f, BYTES / 4);

// a tmp buffer of 64 bytes for a tiling of 8 rows of 64 floats (8 x 320 bytes)
CASE(softmax_tmp_small, GM_ADDR x) {
    EVK_NORM_SETUP(8192)
    SoftMaxTiling t;
    evk_norm::softmax_fill(8, 64, 4, 8, t);
    SoftMax<float>(B, C, D, A, small, t, SoftMaxShapeInfo{8, 64, 8, 64});  // RULE invalid_argument
}
// the tmp buffer is the source
CASE(softmax_tmp_overlaps_src, GM_ADDR x) {
    EVK_NORM_SETUP(8192)
    SoftMaxTiling t;
    evk_norm::softmax_fill(4, 64, 4, 4, t);
    SoftMax<float>(B, C, D, A, A.ReinterpretCast<uint8_t>(), t, SoftMaxShapeInfo{4, 64, 4, 64});  // RULE invalid_argument
}
// dst starts 32 bytes into src: neither separate nor the same tensor
CASE(softmax_partial_overlap, GM_ADDR x) {
    EVK_NORM_SETUP(8192)
    SoftMaxTiling t;
    evk_norm::softmax_fill(4, 64, 4, 4, t);
    SoftMax<float>(A[8], C, D, A, t, SoftMaxShapeInfo{4, 64, 4, 64});  // RULE invalid_argument
}
// sum and max outputs share storage
CASE(softmax_sum_is_max, GM_ADDR x) {
    EVK_NORM_SETUP(8192)
    SoftMaxTiling t;
    evk_norm::softmax_fill(4, 64, 4, 4, t);
    SoftMax<float>(B, C, C, A, t, SoftMaxShapeInfo{4, 64, 4, 64});  // RULE invalid_argument
}
// a last axis of 10 floats (40 bytes): not padded to 32 bytes
CASE(softmax_unaligned_k, GM_ADDR x) {
    EVK_NORM_SETUP(8192)
    SoftMaxTiling t;
    evk_norm::softmax_fill(4, 10, 4, 4, t);
    SoftMax<float>(B, C, D, A, t, SoftMaxShapeInfo{4, 10, 4, 10});  // RULE invalid_argument
}
// the tiling was never filled and no shape info is given
CASE(softmax_no_tiling, GM_ADDR x) {
    EVK_NORM_SETUP(8192)
    SoftMaxTiling t;
    SoftMax<float>(B, C, D, A, t);  // RULE invalid_argument
}
// shape info [8, 64] with a tiling for [4, 64] and isCheckTiling = false: the API trusts the stale tiling
constexpr SoftmaxConfig NO_CHECK_CFG = {false, 0, 0, SoftmaxMode::SOFTMAX_NORMAL};
CASE(softmax_stale_tiling, GM_ADDR x) {
    EVK_NORM_SETUP(8192)
    SoftMaxTiling t;
    evk_norm::softmax_fill(4, 64, 4, 4, t);
    SoftMax<float, false, false, false, NO_CHECK_CFG>(B, C, D, A, t, SoftMaxShapeInfo{8, 64, 8, 64});  // RULE invalid_argument
}
// the shape [64, 64] does not fit the 8192-byte tensors (4096 elements needed, 2048 held)
CASE(softmax_tensor_too_small, GM_ADDR x) {
    EVK_NORM_SETUP(8192)
    SoftMaxTiling t;
    evk_norm::softmax_fill(64, 64, 4, 64, t);
    SoftMax<float>(B, C, D, A, t, SoftMaxShapeInfo{64, 64, 64, 64});  // RULE invalid_argument
}
// LayerNorm: the mean output overlaps inputX
CASE(layernorm_mean_overlaps_x, GM_ADDR x) {
    EVK_NORM_SETUP(8192)
    LayerNormTiling t;
    t.bLength = 1, t.sLength = 4, t.hLength = 64, t.originalHLength = 64, t.bsCurLength = 4;
    LayerNorm<float>(B, A, D, A, C, C, 1e-5f, t);  // RULE invalid_argument
}
// LayerNorm: a 64-byte tmp buffer for a tiling of 4 rows of H = 64
CASE(layernorm_tmp_small, GM_ADDR x) {
    EVK_NORM_SETUP(8192)
    LayerNormTiling t;
    t.bLength = 1, t.sLength = 4, t.hLength = 64, t.originalHLength = 64, t.bsCurLength = 4;
    LayerNorm<float>(B, C[0], C[64], A, D, D[64], small, 1e-5f, t);  // RULE invalid_argument
}
// LayerNorm: gamma holds 16 floats, H is 64
CASE(layernorm_gamma_short, GM_ADDR x) {
    EVK_NORM_SETUP(8192)
    LayerNormTiling t;
    t.bLength = 1, t.sLength = 4, t.hLength = 64, t.originalHLength = 64, t.bsCurLength = 4;
    LocalTensor<float> g16 = D[0];
    g16.SetSize(16);
    LayerNorm<float>(B, C[0], C[64], A, g16, D[64], 1e-5f, t);  // RULE invalid_argument
}
// LayerNorm [A, R]: rLengthWithPadding 20 for rLength 20 floats (must be 24)
CASE(layernorm_ar_bad_padding, GM_ADDR x) {
    EVK_NORM_SETUP(8192)
    LayerNormSeparateTiling t;
    t.aLength = 4, t.rLength = 20, t.aCurLength = 4;
    LayerNorm<float, float>(B, C[0], C[64], A, D, D[64], 1e-5f, LayerNormPara{4, 20, 20}, t);  // RULE invalid_argument
}
// LayerNorm [A, R]: output is inputX (this form allows no reuse)
CASE(layernorm_ar_in_place, GM_ADDR x) {
    EVK_NORM_SETUP(8192)
    LayerNormSeparateTiling t;
    t.aLength = 4, t.rLength = 64, t.aCurLength = 4;
    LayerNorm<float, float>(A, C[0], C[64], A, D, D[64], 1e-5f, LayerNormPara{4, 64, 64}, t);  // RULE invalid_argument
}
// LayerNorm [A, R]: half gamma/beta with float inputX (less precise than the input)
CASE(layernorm_ar_gamma_half, GM_ADDR x) {
    EVK_NORM_SETUP(8192)
    LayerNormSeparateTiling t;
    t.aLength = 4, t.rLength = 64, t.aCurLength = 4;
    LocalTensor<half> gh = D.ReinterpretCast<half>();
    LayerNorm<half, float>(B, C[0], C[64], A, gh, gh[512], 1e-5f, LayerNormPara{4, 64, 64}, t);  // RULE invalid_argument
}
// RmsNorm: dst overlaps gamma
CASE(rmsnorm_dst_is_gamma, GM_ADDR x) {
    EVK_NORM_SETUP(8192)
    RmsNormTiling t;
    t.bLength = 1, t.sLength = 4, t.hLength = 64, t.originalHLength = 64, t.mainBsLength = 4;
    RmsNorm<float>(B, A, B, 1e-5f, t);  // RULE invalid_argument
}
// RmsNorm: isBasicBlock with H = 40 (not a multiple of 64)
CASE(rmsnorm_not_basic_block, GM_ADDR x) {
    EVK_NORM_SETUP(8192)
    RmsNormTiling t;
    t.bLength = 1, t.sLength = 8, t.hLength = 40, t.originalHLength = 40, t.mainBsLength = 8;
    RmsNorm<float, true>(B, A, C, 1e-5f, t);  // RULE invalid_argument
}
// RmsNorm: a 64-byte tmp buffer for a tiling of 4 rows of H = 64
CASE(rmsnorm_tmp_small, GM_ADDR x) {
    EVK_NORM_SETUP(8192)
    RmsNormTiling t;
    t.bLength = 1, t.sLength = 4, t.hLength = 64, t.originalHLength = 64, t.mainBsLength = 4;
    RmsNorm<float>(B, A, C, small, 1e-5f, t);  // RULE invalid_argument
}
// SoftMax on int32 data
CASE(softmax_int, GM_ADDR x) {
    EVK_NORM_SETUP(8192)
    SoftMaxTiling t;
    evk_norm::softmax_fill(4, 64, 4, 4, t);
    LocalTensor<int32_t> ai = A.ReinterpretCast<int32_t>(), bi = B.ReinterpretCast<int32_t>();
    SoftMax<int32_t>(bi, ai, t, SoftMaxShapeInfo{4, 64, 4, 64});  // RULE unsupported_dtype
}
// SoftMax with isBasicBlock on [4, 64]: srcM is not a multiple of 8
CASE(softmax_not_basic_block, GM_ADDR x) {
    EVK_NORM_SETUP(8192)
    SoftMaxTiling t;
    evk_norm::softmax_fill(4, 64, 4, 4, t);
    SoftMax<float, false, true>(B, C, D, A, t, SoftMaxShapeInfo{4, 64, 4, 64});  // RULE invalid_argument
}
// the same on [8, 64], in place (as asc-devkit's softmax example calls it): a qualifying basic block
CASE(softmax_basic_block_ok, GM_ADDR x) {
    EVK_NORM_SETUP(8192)
    SoftMaxTiling t;
    evk_norm::softmax_fill(8, 64, 4, 8, t);
    SoftMax<float, false, true>(A, C, D, A, t, SoftMaxShapeInfo{8, 64, 8, 64});
}
// LogSoftMax in place: its documentation forbids any overlap of source and destination
CASE(logsoftmax_in_place, GM_ADDR x) {
    EVK_NORM_SETUP(8192)
    LogSoftMaxTiling t;
    evk_norm::softmax_fill(4, 64, 4, 4, t);
    LogSoftMax<float>(A, C[0], C[64], A, D.ReinterpretCast<uint8_t>(), t, SoftMaxShapeInfo{4, 64, 4, 64});  // RULE invalid_argument
}
