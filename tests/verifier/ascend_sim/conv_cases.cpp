// LoadData 3D v2 (img2col) tests for the Ascend C emulator: kernels written against the documented public API
// (DataCopy ND2NZ into L1 as NC1HWC0, SetFmatrix / SetLoadDataPaddingValue, LoadData(LoadData3DParamsV2) into
// L0A / L0B, Mmad, Fixpipe), direct launch.
using namespace AscendC;

__aicore__ inline int32_t P(GM_ADDR prm, int i) {
    GlobalTensor<int32_t> g;
    g.SetGlobalBuffer((__gm__ int32_t*)prm);
    return g.GetValue(i);
}
__aicore__ inline int32_t Ceil(int32_t a, int32_t b) { return (a + b - 1) / b; }

// prm: 0 H, 1 W, 2 C, 3 Kh, 4 Kw, 5 sH, 6 sW, 7 dH, 8 dW, 9 padL, 10 padR, 11 padT, 12 padB, 13 mStart, 14 mExt,
//      15 kStart, 16 kExt, 17 mode (0 L0A, 1 L0A transposed, 2 L0B), 18 use SetFmatrix/SetLoadDataPaddingValue,
//      19 pad value x 1000
// fm: the feature map, NHWC (H*W rows of C); eye: an identity matrix of side `side`; out: float, the loaded
// sub-matrix S (mExt x kExt; mode 1: S^T) read back through Mmad with the identity as the other operand.
constexpr IsResetLoad3dConfig REGS_CFG = {false, false};

template <typename T>
__aicore__ inline void Img2colCase(GM_ADDR prm, GM_ADDR fm, GM_ADDR eye, GM_ADDR out) {
    const int32_t H = P(prm, 0), W = P(prm, 1), C = P(prm, 2);
    const int32_t mS = P(prm, 13), mE = P(prm, 14), kS = P(prm, 15), kE = P(prm, 16), mode = P(prm, 17);
    const bool regs = P(prm, 18) != 0;
    const T padv = static_cast<T>(static_cast<float>(P(prm, 19)) / 1000.0f);
    constexpr int32_t k0 = 32 / sizeof(T);
    // the identity multiplies from the right (modes 0, 1) or the left (mode 2)
    const int32_t side = mode == 0 ? kE : mE;          // identity is side x side
    const int32_t rows = mode == 1 ? kE : mE;          // result rows
    const int32_t cols = mode == 1 ? mE : kE;          // result columns
    const int32_t Sa = Ceil(side, 16) * 16, K1 = Ceil(side, k0);
    TPipe pipe;
    TQue<TPosition::A1, 1> qfm;
    TQue<TPosition::B1, 1> qeye;
    TQue<TPosition::A2, 1> qa2;
    TQue<TPosition::B2, 1> qb2;
    TQue<TPosition::CO1, 1> qc;
    pipe.InitBuffer(qfm, 1, Ceil(H * W * C * sizeof(T), 32) * 32);
    pipe.InitBuffer(qeye, 1, Sa * K1 * k0 * sizeof(T));
    pipe.InitBuffer(qa2, 1, 64 * 1024);
    pipe.InitBuffer(qb2, 1, 64 * 1024);
    pipe.InitBuffer(qc, 1, Ceil(rows, 16) * 16 * Ceil(cols, 16) * 16 * sizeof(float));
    GlobalTensor<T> gfm, geye;
    GlobalTensor<float> gout;
    gfm.SetGlobalBuffer((__gm__ T*)fm, H * W * C);
    geye.SetGlobalBuffer((__gm__ T*)eye, side * side);
    gout.SetGlobalBuffer((__gm__ float*)out, rows * cols);
    // GM NHWC -> L1 NC1HWC0: each C0 block of channels is one NZ column block of H*W rows
    LocalTensor<T> f1 = qfm.AllocTensor<T>();
    DataCopy(f1, gfm, Nd2NzParams(1, H * W, C, 0, C, H * W, 1, 0));
    qfm.EnQue(f1);
    // the identity -> L1 NZ (side rows, column blocks of k0)
    LocalTensor<T> e1 = qeye.AllocTensor<T>();
    DataCopy(e1, geye, Nd2NzParams(1, side, side, 0, side, Sa, 1, 0));
    qeye.EnQue(e1);
    f1 = qfm.DeQue<T>();
    e1 = qeye.DeQue<T>();
    LocalTensor<T> a2 = qa2.AllocTensor<T>();
    LocalTensor<T> b2 = qb2.AllocTensor<T>();
    LoadData3DParamsV2<T> p;
    p.l1H = H;
    p.l1W = W;
    p.padList[0] = P(prm, 9);
    p.padList[1] = P(prm, 10);
    p.padList[2] = P(prm, 11);
    p.padList[3] = P(prm, 12);
    p.channelSize = C;
    p.kStartPt = kS;
    p.kExtension = kE;
    p.mStartPt = mS;
    p.mExtension = mE;
    p.filterH = P(prm, 3);
    p.filterW = P(prm, 4);
    p.strideH = P(prm, 5);
    p.strideW = P(prm, 6);
    p.dilationFilterH = P(prm, 7);
    p.dilationFilterW = P(prm, 8);
    p.padValue = padv;
    p.enTranspose = mode == 1;
    LocalTensor<T>& img = mode == 2 ? b2 : a2;
    if (regs) {
        SetFmatrix(H, W, p.padList, FmatrixMode::FMATRIX_LEFT);
        SetLoadDataPaddingValue<T>(padv);
        p.l1H = 1;  // ignored with isSetFMatrix = false
        p.l1W = 1;
        p.padValue = T(0);
        LoadData<T, REGS_CFG>(img, f1, p);
    } else {
        LoadData(img, f1, p);
    }
    // the identity into the other L0 buffer (LoadData 2D; symmetric, so no transpose is needed)
    const int32_t S1 = Sa / 16;
    if (mode == 2) {  // A = I (side x side) in L0A, Zz
        for (int32_t i = 0; i < S1; ++i)
            LoadData(a2[i * K1 * 16 * k0], e1[i * 16 * k0], LoadData2DParams(0, K1, S1, 0, 0, false, 0));
    } else {  // B = I in L0B, Zn: the NZ of I^T = I per k block
        for (int32_t j = 0; j < K1; ++j)
            LoadData(b2[j * S1 * 16 * k0], e1[j * Sa * k0], LoadData2DParams(0, S1, 1, 0, 0, false, 0));
    }
    qa2.EnQue(a2);
    qb2.EnQue(b2);
    a2 = qa2.DeQue<T>();
    b2 = qb2.DeQue<T>();
    LocalTensor<float> c = qc.AllocTensor<float>();
    MmadParams mp;
    mp.m = rows;
    mp.n = cols;
    mp.k = side;
    Mmad(c, a2, b2, mp);
    qc.EnQue(c);
    c = qc.DeQue<float>();
    FixpipeParamsV220 fp;
    fp.nSize = cols;
    fp.mSize = rows;
    fp.srcStride = Ceil(rows, 16) * 16;
    fp.dstStride = cols;
    Fixpipe(gout, c, fp);
    qc.FreeTensor(c);
    qa2.FreeTensor(a2);
    qb2.FreeTensor(b2);
    qfm.FreeTensor(f1);
    qeye.FreeTensor(e1);
}

CASE(img2col_f16, GM_ADDR prm, GM_ADDR fm, GM_ADDR eye, GM_ADDR out) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    Img2colCase<half>(prm, fm, eye, out);
}
CASE(img2col_f32, GM_ADDR prm, GM_ADDR fm, GM_ADDR eye, GM_ADDR out) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    Img2colCase<float>(prm, fm, eye, out);
}

// A whole convolution on the cube: out[Ho*Wo, Cout] (NHWC) = conv2d(x, w) for one NHWC image x, weights given
// as B^T = [Cout, K] with K ordered (c1, kh, kw, c0) (the filter format of the documentation); the M axis in
// tiles of mt rows (mStartPt), each: LoadData 3D -> L0A, Mmad with the weights in L0B, Fixpipe to GM.
// prm: 0 H, 1 W, 2 C, 3 Kh, 4 Kw, 5 sH, 6 sW, 7 dH, 8 dW, 9 padL, 10 padR, 11 padT, 12 padB, 13 Cout, 14 mt
template <typename T, typename TO, QuantMode_t QUANT>
__aicore__ inline void ConvCase(GM_ADDR prm, GM_ADDR x, GM_ADDR w, GM_ADDR y) {
    const int32_t H = P(prm, 0), W = P(prm, 1), C = P(prm, 2), Kh = P(prm, 3), Kw = P(prm, 4);
    const int32_t sH = P(prm, 5), sW = P(prm, 6), dH = P(prm, 7), dW = P(prm, 8);
    const int32_t pl = P(prm, 9), pr = P(prm, 10), pt = P(prm, 11), pb = P(prm, 12), Cout = P(prm, 13), mt = P(prm, 14);
    const int32_t Ho = (H + pt + pb - ((Kh - 1) * dH + 1)) / sH + 1;
    const int32_t Wo = (W + pl + pr - ((Kw - 1) * dW + 1)) / sW + 1;
    const int32_t M = Ho * Wo, K = C * Kh * Kw;
    constexpr int32_t k0 = 32 / sizeof(T);
    const int32_t K1 = Ceil(K, k0), N1 = Ceil(Cout, 16), Na = N1 * 16;
    TPipe pipe;
    TQue<TPosition::A1, 1> qx;
    TQue<TPosition::B1, 1> qw;
    TQue<TPosition::A2, 2> qa2;
    TQue<TPosition::B2, 1> qb2;
    TQue<TPosition::CO1, 2> qc;
    pipe.InitBuffer(qx, 1, Ceil(H * W * C * sizeof(T), 32) * 32);
    pipe.InitBuffer(qw, 1, Na * K1 * k0 * sizeof(T));
    pipe.InitBuffer(qa2, 2, Ceil(mt, 16) * 16 * K1 * k0 * sizeof(T));
    pipe.InitBuffer(qb2, 1, Na * K1 * k0 * sizeof(T));
    pipe.InitBuffer(qc, 2, Ceil(mt, 16) * 16 * Na * sizeof(float));
    GlobalTensor<T> gx, gw;
    GlobalTensor<TO> gy;
    gx.SetGlobalBuffer((__gm__ T*)x, H * W * C);
    gw.SetGlobalBuffer((__gm__ T*)w, Cout * K);
    gy.SetGlobalBuffer((__gm__ TO*)y, M * Cout);
    LocalTensor<T> x1 = qx.AllocTensor<T>();
    DataCopy(x1, gx, Nd2NzParams(1, H * W, C, 0, C, H * W, 1, 0));  // NHWC -> NC1HWC0
    qx.EnQue(x1);
    LocalTensor<T> w1 = qw.AllocTensor<T>();
    DataCopy(w1, gw, Nd2NzParams(1, Cout, K, 0, K, Na, 1, 0));  // B^T [Cout, K] -> NZ
    qw.EnQue(w1);
    w1 = qw.DeQue<T>();
    LocalTensor<T> b2 = qb2.AllocTensor<T>();
    for (int32_t j = 0; j < K1; ++j)
        LoadData(b2[j * N1 * 16 * k0], w1[j * Na * k0], LoadData2DParams(0, N1, 1, 0, 0, false, 0));
    qb2.EnQue(b2);
    b2 = qb2.DeQue<T>();
    x1 = qx.DeQue<T>();
    uint8_t pad[4] = {static_cast<uint8_t>(pl), static_cast<uint8_t>(pr), static_cast<uint8_t>(pt),
                      static_cast<uint8_t>(pb)};
    SetFmatrix(H, W, pad, FmatrixMode::FMATRIX_LEFT);
    SetLoadDataPaddingValue<T>(T(0));
    for (int32_t m0 = 0; m0 < M; m0 += mt) {
        const int32_t rows = M - m0 < mt ? M - m0 : mt;
        LocalTensor<T> a2 = qa2.AllocTensor<T>();
        LoadData3DParamsV2<T> p;
        p.channelSize = C;
        p.kStartPt = 0;
        p.kExtension = K;
        p.mStartPt = m0;
        p.mExtension = Ceil(rows, 16) * 16;
        p.strideH = sH;
        p.strideW = sW;
        p.filterH = Kh;
        p.filterW = Kw;
        p.dilationFilterH = dH;
        p.dilationFilterW = dW;
        LoadData<T, REGS_CFG>(a2, x1, p);
        qa2.EnQue(a2);
        a2 = qa2.DeQue<T>();
        LocalTensor<float> c = qc.AllocTensor<float>();
        Mmad(c, a2, b2, MmadParams(rows, Cout, K, 0, false, true));
        qa2.FreeTensor(a2);
        qc.EnQue(c);
        c = qc.DeQue<float>();
        FixpipeParamsV220 fp;
        fp.nSize = Cout;
        fp.mSize = rows;
        fp.srcStride = Ceil(rows, 16) * 16;
        fp.dstStride = Cout;
        fp.quantPre = QUANT;
        Fixpipe(gy[m0 * Cout], c, fp);
        qc.FreeTensor(c);
    }
    qb2.FreeTensor(b2);
    qx.FreeTensor(x1);
    qw.FreeTensor(w1);
}

CASE(conv_f16, GM_ADDR prm, GM_ADDR x, GM_ADDR w, GM_ADDR y) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    ConvCase<half, float, QuantMode_t::NoQuant>(prm, x, w, y);
}
CASE(conv_f16_f16, GM_ADDR prm, GM_ADDR x, GM_ADDR w, GM_ADDR y) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    ConvCase<half, half, QuantMode_t::F322F16>(prm, x, w, y);
}
CASE(conv_f32, GM_ADDR prm, GM_ADDR x, GM_ADDR w, GM_ADDR y) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    ConvCase<float, float, QuantMode_t::NoQuant>(prm, x, w, y);
}

// ---- misuse: each must get its rule at the marked line ----------------------------------------------------
// A 4 x 4 x 16 half feature map in L1 (filled), for the misuse cases.
#define MISUSE_SETUP(T)                                                   \
    TPipe pipe;                                                          \
    TQue<TPosition::A1, 1> q1;                                           \
    TQue<TPosition::A2, 1> qa;                                           \
    TQue<TPosition::B2, 1> qb;                                           \
    TQue<TPosition::CO1, 1> qc;                                          \
    pipe.InitBuffer(q1, 1, 4096);                                        \
    pipe.InitBuffer(qa, 1, 8192);                                        \
    pipe.InitBuffer(qb, 1, 8192);                                        \
    pipe.InitBuffer(qc, 1, 16384);                                       \
    GlobalTensor<T> gx;                                                  \
    gx.SetGlobalBuffer((__gm__ T*)x, 4096 / sizeof(T));                  \
    LocalTensor<T> l1 = q1.AllocTensor<T>();                             \
    DataCopy(l1, gx, Nd2NzParams(1, 16, 32 / sizeof(T), 0, 32 / sizeof(T), 16, 1, 0)); \
    q1.EnQue(l1);                                                        \
    l1 = q1.DeQue<T>();                                                  \
    LocalTensor<T> a2 = qa.AllocTensor<T>();                             \
    LocalTensor<T> b2 = qb.AllocTensor<T>();                             \
    LoadData3DParamsV2<T> p;                                             \
    p.l1H = 4;                                                           \
    p.l1W = 4;                                                           \
    p.channelSize = 32 / sizeof(T);                                      \
    p.kExtension = 32 / sizeof(T);                                       \
    p.mExtension = 16;
#define MISUSE_END()   \
    qa.FreeTensor(a2); \
    qb.FreeTensor(b2); \
    q1.FreeTensor(l1);

CASE(img2col_dst_in_l1, GM_ADDR x, GM_ADDR y) {
    MISUSE_SETUP(half)
    LoadData(l1, l1, p);  // RULE tensor_position
    MISUSE_END()
}

CASE(img2col_kstart_unaligned, GM_ADDR x, GM_ADDR y) {
    MISUSE_SETUP(half)
    p.filterH = 2;  // K = 2 x 16 columns; a start inside a C0 block is not allowed
    p.kStartPt = 8;
    p.kExtension = 16;
    LoadData(a2, l1, p);  // RULE invalid_argument
    MISUSE_END()
}

CASE(img2col_k_past_end, GM_ADDR x, GM_ADDR y) {
    MISUSE_SETUP(half)
    p.kExtension = 32;  // K of a 1 x 1 filter on 16 channels is 16
    LoadData(a2, l1, p);  // RULE invalid_argument
    MISUSE_END()
}

CASE(img2col_filter_too_big, GM_ADDR x, GM_ADDR y) {
    MISUSE_SETUP(half)
    p.filterH = 3;
    p.dilationFilterH = 2;  // dilated height 5 > 4 rows, no padding
    p.kExtension = 16;
    LoadData(a2, l1, p);  // RULE invalid_argument
    MISUSE_END()
}

constexpr IsResetLoad3dConfig NO_RESET = {false, true};
CASE(img2col_fmatrix_never_set, GM_ADDR x, GM_ADDR y) {
    MISUSE_SETUP(half)
    LoadData<half, NO_RESET>(a2, l1, p);  // RULE invalid_argument
    MISUSE_END()
}

CASE(img2col_int8_to_l0b, GM_ADDR x, GM_ADDR y) {
    MISUSE_SETUP(int8_t)
    LoadData(b2, l1, p);  // RULE unsupported_dtype
    MISUSE_END()
}

CASE(img2col_small_channels, GM_ADDR x, GM_ADDR y) {
    MISUSE_SETUP(half)
    p.channelSize = 4;  // documented (the 4-channel form), not emulated
    p.kExtension = 4;
    LoadData(a2, l1, p);  // RULE unsupported_api
    MISUSE_END()
}

CASE(img2col_channels_undocumented, GM_ADDR x, GM_ADDR y) {
    MISUSE_SETUP(half)
    p.channelSize = 6;
    LoadData(a2, l1, p);  // RULE invalid_argument
    MISUSE_END()
}

CASE(img2col_l0a_overflow, GM_ADDR x, GM_ADDR y) {
    MISUSE_SETUP(half)
    p.l1H = 16;  // rows beyond the 4 x 4 map are read as padding, but L0A's 8 KiB buffer holds 256 x 16 halves
    p.mExtension = 512;
    p.padList[3] = 0;
    LoadData(a2, l1, p);  // RULE ub_out_of_bounds
    MISUSE_END()
}

CASE(img2col_dst_unaligned, GM_ADDR x, GM_ADDR y) {
    MISUSE_SETUP(half)
    LoadData(a2[16], l1, p);  // RULE ub_alignment
    MISUSE_END()
}

CASE(img2col_short_then_mmad, GM_ADDR x, GM_ADDR y) {
    // the kernel loads 16 rows of A but multiplies 32: Mmad sees the 16 rows LoadData never wrote
    MISUSE_SETUP(half)
    LoadData(a2, l1, p);
    LoadData(b2, l1, LoadData2DParams(0, 1, 1, 0, 0, true, 0));
    qa.EnQue(a2);
    qb.EnQue(b2);
    a2 = qa.DeQue<half>();
    b2 = qb.DeQue<half>();
    LocalTensor<float> c = qc.AllocTensor<float>();
    Mmad(c, a2, b2, MmadParams(32, 16, 16, 0, false, true));  // RULE uninitialised_read
    qc.FreeTensor(c);
    MISUSE_END()
}

CASE(img2col_repeat_unsupported, GM_ADDR x, GM_ADDR y) {
    MISUSE_SETUP(half)
    SetLoadDataRepeat(LoadDataRepeatParam(1, 2, 0));
    LoadData(a2, l1, p);  // RULE unsupported_api
    SetLoadDataRepeat(LoadDataRepeatParam(0, 1, 0));
    MISUSE_END()
}

CASE(img2col_stride_zero, GM_ADDR x, GM_ADDR y) {
    MISUSE_SETUP(half)
    p.strideW = 0;  // no output width can be computed
    LoadData(a2, l1, p);  // RULE invalid_argument
    MISUSE_END()
}

CASE(img2col_boundary_undefined, GM_ADDR x, GM_ADDR y) {
    SetLoadDataBoundary(512);  // RULE invalid_argument
}
