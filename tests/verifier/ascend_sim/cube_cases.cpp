// Cube-unit tests for the Ascend C emulator: kernels written against the documented raw cube API
// (DataCopy ND2NZ into L1, LoadData into L0A/L0B, Mmad into L0C, Fixpipe out to GM), direct launch.
// Arguments: prm (int32 parameters in GM: m, n, k, k step, mode), then a, b (or b transposed), bias, c.
// mode bit 0: bias, bit 1: ReLU on the way out.
using namespace AscendC;

__aicore__ inline int32_t P(GM_ADDR prm, int i) {
    GlobalTensor<int32_t> g;
    g.SetGlobalBuffer((__gm__ int32_t*)prm);
    return g.GetValue(i);
}
__aicore__ inline int32_t Ceil(int32_t a, int32_t b) { return (a + b - 1) / b; }

template <typename TI> struct Acc { using T = float; };
template <> struct Acc<int8_t> { using T = int32_t; };

// C[m, n] = A[m, k] x B[k, n] (+ bias[n]) over K steps of `kt`, accumulating in L0C.
// TRANS_B: the second input is B transposed (n x k, row-major): it loads into L0B without a transpose
// (the path float and int8 need: LoadData transposes 16-bit fractals only).
// WT: B (kk x n, row-major) goes through LoadDataWithTranspose instead: 16-bit from NZ in L1 (one fractal per
// square), 32-bit from Zz in L1 (16-row bands of B, column blocks of 8: two neighbouring fractals form the
// 16 x 16 square whose transpose is the Zn fractal pair (2 ki, p), (2 ki + 1, p) of L0B).
template <typename TI, typename TO, bool TRANS_B, QuantMode_t QUANT, bool WT = false>
__aicore__ inline void MatmulCase(GM_ADDR prm, GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c) {
    using TC = typename Acc<TI>::T;
    const int32_t m = P(prm, 0), n = P(prm, 1), k = P(prm, 2), kt = P(prm, 3), mode = P(prm, 4);
    constexpr int32_t k0 = 32 / sizeof(TI);
    const int32_t M1 = Ceil(m, 16), N1 = Ceil(n, 16), Ma = M1 * 16, Na = N1 * 16;
    const int32_t K1max = Ceil(kt, k0), Ktmax = Ceil(kt, 16) * 16;
    TPipe pipe;
    TQue<TPosition::A1, 1> qa1;
    TQue<TPosition::B1, 1> qb1;
    TQue<TPosition::A2, 1> qa2;
    TQue<TPosition::B2, 1> qb2;
    TQue<TPosition::CO1, 1> qc;
    TQue<TPosition::C1, 1> qbias1;
    TQue<TPosition::C2, 1> qbias2;
    pipe.InitBuffer(qa1, 1, Ma * K1max * k0 * sizeof(TI));
    pipe.InitBuffer(qb1, 1, (TRANS_B ? Na * K1max * k0 : Ktmax * Na) * sizeof(TI));
    pipe.InitBuffer(qa2, 1, Ma * K1max * k0 * sizeof(TI));
    pipe.InitBuffer(qb2, 1, Na * (WT ? Ktmax : K1max * k0) * sizeof(TI));
    pipe.InitBuffer(qc, 1, Ma * Na * sizeof(TC));
    GlobalTensor<TI> ga, gb;
    GlobalTensor<TO> gc;
    ga.SetGlobalBuffer((__gm__ TI*)a, m * k);
    gb.SetGlobalBuffer((__gm__ TI*)b, k * n);
    gc.SetGlobalBuffer((__gm__ TO*)c, m * n);
    const bool with_bias = mode & 1;
    LocalTensor<TC> bias2;
    if (with_bias) {
        pipe.InitBuffer(qbias1, 1, Na * sizeof(TC));
        pipe.InitBuffer(qbias2, 1, Na * sizeof(TC));
        GlobalTensor<TC> gbias;
        gbias.SetGlobalBuffer((__gm__ TC*)bias, n);
        LocalTensor<TC> bias1 = qbias1.AllocTensor<TC>();
        DataCopyPad(bias1, gbias, DataCopyExtParams(1, n * sizeof(TC), 0, 0, 0),
                    DataCopyPadExtParams<TC>(false, 0, 0, TC(0)));
        qbias1.EnQue(bias1);
        bias1 = qbias1.DeQue<TC>();
        bias2 = qbias2.AllocTensor<TC>();
        DataCopy(bias2, bias1, DataCopyParams(1, static_cast<uint16_t>(Na * sizeof(TC) / 64), 0, 0));
        qbias2.EnQue(bias2);
        qbias1.FreeTensor(bias1);
        bias2 = qbias2.DeQue<TC>();
    }
    LocalTensor<TC> cl = qc.AllocTensor<TC>();
    for (int32_t s = 0; s * kt < k; ++s) {
        const int32_t kk = k - s * kt < kt ? k - s * kt : kt;
        const int32_t K1 = Ceil(kk, k0), Ka = Ceil(kk, 16) * 16;
        // A: m x kk, NZ in L1 (column blocks of k0, each Ma rows)
        LocalTensor<TI> a1 = qa1.AllocTensor<TI>();
        Nd2NzParams pa(1, m, kk, 0, k, Ma, 1, 0);
        DataCopy(a1, ga[s * kt], pa);
        qa1.EnQue(a1);
        LocalTensor<TI> b1 = qb1.AllocTensor<TI>();
        if (TRANS_B) {  // B^T: n x kk, NZ in L1 (column blocks of k0 along k, each Na rows)
            Nd2NzParams pb(1, n, kk, 0, k, Na, 1, 0);
            DataCopy(b1, gb[s * kt], pb);
        } else if (WT && sizeof(TI) == 4) {  // B: kk x n, Zz in L1: 16-row bands, each Na / 8 fractals of 16 x 8
            const int32_t full = kk / 16, tail = kk % 16;
            if (full > 0)
                DataCopy(b1, gb[s * kt * n], Nd2NzParams(full, 16, n, 16 * n, n, 16, 1, Na * 16));
            if (tail > 0)
                DataCopy(b1[full * Na * 16], gb[(s * kt + full * 16) * n], Nd2NzParams(1, tail, n, 0, n, 16, 1, 0));
        } else {  // B: kk x n, NZ in L1 (column blocks of 16 along n, each Ka rows)
            Nd2NzParams pb(1, kk, n, 0, n, Ka, 1, 0);
            DataCopy(b1, gb[s * kt * n], pb);
        }
        qb1.EnQue(b1);
        // L1 -> L0A (Zz): per row block, its K1 fractals
        a1 = qa1.DeQue<TI>();
        LocalTensor<TI> a2 = qa2.AllocTensor<TI>();
        for (int32_t i = 0; i < M1; ++i)
            LoadData(a2[i * K1 * 16 * k0], a1[i * 16 * k0], LoadData2DParams(0, K1, M1, 0, 0, false, 0));
        qa2.EnQue(a2);
        qa1.FreeTensor(a1);
        // L1 -> L0B (Zn): per k block, its N1 fractals (transposed when B is not)
        b1 = qb1.DeQue<TI>();
        LocalTensor<TI> b2 = qb2.AllocTensor<TI>();
        for (int32_t j = 0; j < K1; ++j) {
            if (TRANS_B)
                LoadData(b2[j * N1 * 16 * k0], b1[j * Na * k0], LoadData2DParams(0, N1, 1, 0, 0, false, 0));
            else if (WT && sizeof(TI) == 4) {  // one call per 16-row band: squares (j, p) -> fractals (2j, p), (2j+1, p)
                if (2 * j < K1)
                    LoadDataWithTranspose(b2[2 * j * N1 * 16 * k0], b1,
                                          LoadData2dTransposeParams(j * N1, N1, 1, 0, N1 - 1, 0));
            } else if (WT)  // 16-bit: one square per fractal of B's NZ (column block p, k block j)
                LoadDataWithTranspose(b2[j * N1 * 256], b1[j * 256], LoadData2dTransposeParams(0, N1, Ka / 16, 0, 0, 0));
            else
                LoadData(b2[j * N1 * 256], b1[j * 256], LoadData2DParams(0, N1, Ka / 16, 0, 0, true, 0));
        }
        qb2.EnQue(b2);
        qb1.FreeTensor(b1);
        a2 = qa2.DeQue<TI>();
        b2 = qb2.DeQue<TI>();
        MmadParams mp;
        mp.m = m;
        mp.n = n;
        mp.k = kk;
        mp.cmatrixInitVal = s == 0;
        if (with_bias && s == 0)
            Mmad(cl, a2, b2, bias2, mp);
        else
            Mmad(cl, a2, b2, mp);
        qa2.FreeTensor(a2);
        qb2.FreeTensor(b2);
    }
    if (with_bias) qbias2.FreeTensor(bias2);
    qc.EnQue(cl);
    cl = qc.DeQue<TC>();
    FixpipeParamsV220 fp;
    fp.nSize = n;
    fp.mSize = m;
    fp.srcStride = Ma;
    fp.dstStride = n;
    fp.reluEn = (mode & 2) != 0;
    fp.quantPre = QUANT;
    Fixpipe(gc, cl, fp);
    qc.FreeTensor(cl);
}

#define MM(NAME, TI, TO, TRANS, QUANT)                                                  \
    CASE(NAME, GM_ADDR prm, GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c) {            \
        KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);                                 \
        MatmulCase<TI, TO, TRANS, QUANT>(prm, a, b, bias, c);                           \
    }
MM(mm_f16_f32, half, float, false, QuantMode_t::NoQuant)
MM(mm_f16_f16, half, half, false, QuantMode_t::F322F16)
MM(mm_f16t_f32, half, float, true, QuantMode_t::NoQuant)
MM(mm_bf16_f32, bfloat16_t, float, false, QuantMode_t::NoQuant)
MM(mm_bf16_bf16, bfloat16_t, bfloat16_t, false, QuantMode_t::F322BF16)
MM(mm_f32t_f32, float, float, true, QuantMode_t::NoQuant)
MM(mm_i8t_i32, int8_t, int32_t, true, QuantMode_t::NoQuant)
#define MMW(NAME, TI, TO)                                                               \
    CASE(NAME, GM_ADDR prm, GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c) {            \
        KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);                                 \
        MatmulCase<TI, TO, false, QuantMode_t::NoQuant, true>(prm, a, b, bias, c);      \
    }
MMW(mm_f32w_f32, float, float)  // float B row-major through LoadDataWithTranspose
MMW(mm_f16w_f32, half, float)   // half B row-major through LoadDataWithTranspose

// ---- misuse: each must get its rule at the marked line ----------------------------------------------------
CASE(cube_vector_on_l1, GM_ADDR prm, GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c) {
    TPipe pipe;
    TQue<TPosition::A1, 1> qa1;
    pipe.InitBuffer(qa1, 1, 1024);
    GlobalTensor<half> ga;
    ga.SetGlobalBuffer((__gm__ half*)a, 256);
    LocalTensor<half> a1 = qa1.AllocTensor<half>();
    DataCopy(a1, ga, 256);
    PipeBarrier<PIPE_ALL>();
    Adds(a1, a1, half(1), 256);  // RULE tensor_position
    qa1.FreeTensor(a1);
}

CASE(cube_mmad_wrong_memory, GM_ADDR prm, GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c) {
    TPipe pipe;
    TBuf<TPosition::B2> tb;
    TBuf<TPosition::CO1> tc;
    pipe.InitBuffer(tb, 1024);
    pipe.InitBuffer(tc, 1024);
    LocalTensor<half> b2 = tb.Get<half>();
    LocalTensor<float> c1 = tc.Get<float>();
    MmadParams mp(16, 16, 16, 0, false, true);
    Mmad(c1, b2, b2, mp);  // RULE tensor_position
}

CASE(cube_accumulate_unwritten, GM_ADDR prm, GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c) {
    TPipe pipe;
    TQue<TPosition::A1, 1> q1;
    TQue<TPosition::A2, 1> qa;
    TQue<TPosition::B2, 1> qb;
    TQue<TPosition::CO1, 1> qc;
    pipe.InitBuffer(q1, 1, 512);
    pipe.InitBuffer(qa, 1, 512);
    pipe.InitBuffer(qb, 1, 512);
    pipe.InitBuffer(qc, 1, 1024);
    GlobalTensor<half> ga;
    ga.SetGlobalBuffer((__gm__ half*)a, 256);
    LocalTensor<half> l1 = q1.AllocTensor<half>();
    DataCopy(l1, ga, Nd2NzParams(1, 16, 16, 0, 16, 16, 1, 0));
    q1.EnQue(l1);
    l1 = q1.DeQue<half>();
    LocalTensor<half> a2 = qa.AllocTensor<half>();
    LocalTensor<half> b2 = qb.AllocTensor<half>();
    LoadData(a2, l1, LoadData2DParams(0, 1, 1, 0, 0, false, 0));
    LoadData(b2, l1, LoadData2DParams(0, 1, 1, 0, 0, true, 0));
    qa.EnQue(a2);
    qb.EnQue(b2);
    a2 = qa.DeQue<half>();
    b2 = qb.DeQue<half>();
    LocalTensor<float> c1 = qc.AllocTensor<float>();
    MmadParams mp(16, 16, 16, 0, false, false);  // cmatrixInitVal=false: C += A x B onto nothing
    Mmad(c1, a2, b2, mp);  // RULE uninitialised_read
    q1.FreeTensor(l1);
    qa.FreeTensor(a2);
    qb.FreeTensor(b2);
    qc.FreeTensor(c1);
}

CASE(cube_loaddata_too_short, GM_ADDR prm, GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c) {
    // A is 16 x 32 (two K fractals) but only one is loaded into L0A
    TPipe pipe;
    TQue<TPosition::A1, 1> q1;
    TQue<TPosition::A2, 1> qa;
    TQue<TPosition::B2, 1> qb;
    TQue<TPosition::CO1, 1> qc;
    pipe.InitBuffer(q1, 1, 1024);
    pipe.InitBuffer(qa, 1, 1024);
    pipe.InitBuffer(qb, 1, 1024);
    pipe.InitBuffer(qc, 1, 1024);
    GlobalTensor<half> ga;
    ga.SetGlobalBuffer((__gm__ half*)a, 512);
    LocalTensor<half> l1 = q1.AllocTensor<half>();
    DataCopy(l1, ga, Nd2NzParams(1, 16, 32, 0, 32, 16, 1, 0));
    q1.EnQue(l1);
    l1 = q1.DeQue<half>();
    LocalTensor<half> a2 = qa.AllocTensor<half>();
    LocalTensor<half> b2 = qb.AllocTensor<half>();
    LoadData(a2, l1, LoadData2DParams(0, 1, 1, 0, 0, false, 0));
    LoadData(b2, l1, LoadData2DParams(0, 2, 1, 0, 0, true, 0));
    qa.EnQue(a2);
    qb.EnQue(b2);
    a2 = qa.DeQue<half>();
    b2 = qb.DeQue<half>();
    LocalTensor<float> c1 = qc.AllocTensor<float>();
    MmadParams mp(16, 16, 32, 0, false, true);
    Mmad(c1, a2, b2, mp);  // RULE uninitialised_read
    q1.FreeTensor(l1);
    qa.FreeTensor(a2);
    qb.FreeTensor(b2);
    qc.FreeTensor(c1);
}

CASE(cube_l0a_capacity, GM_ADDR prm, GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c) {
    TPipe pipe;
    TQue<TPosition::A2, 1> qa;
    pipe.InitBuffer(qa, 2, 40 * 1024);  // RULE ub_capacity
}

CASE(cube_no_sync_mte1_m, GM_ADDR prm, GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c) {
    // TBufs have no queue semantics: LoadData (MTE1) -> Mmad (M) needs SetFlag/WaitFlag<HardEvent::MTE1_M>
    TPipe pipe;
    TBuf<TPosition::A1> t1;
    TBuf<TPosition::A2> ta;
    TBuf<TPosition::B2> tb;
    TBuf<TPosition::CO1> tc;
    pipe.InitBuffer(t1, 512);
    pipe.InitBuffer(ta, 512);
    pipe.InitBuffer(tb, 512);
    pipe.InitBuffer(tc, 1024);
    GlobalTensor<half> ga;
    ga.SetGlobalBuffer((__gm__ half*)a, 256);
    LocalTensor<half> l1 = t1.Get<half>();
    DataCopy(l1, ga, Nd2NzParams(1, 16, 16, 0, 16, 16, 1, 0));
    SetFlag<HardEvent::MTE2_MTE1>(0);
    WaitFlag<HardEvent::MTE2_MTE1>(0);
    LocalTensor<half> a2 = ta.Get<half>();
    LocalTensor<half> b2 = tb.Get<half>();
    LoadData(a2, l1, LoadData2DParams(0, 1, 1, 0, 0, false, 0));
    LoadData(b2, l1, LoadData2DParams(0, 1, 1, 0, 0, true, 0));
    LocalTensor<float> c1 = tc.Get<float>();
    Mmad(c1, a2, b2, MmadParams(16, 16, 16, 0, false, true));  // RULE missing_sync
}

CASE(cube_fixpipe_dtype, GM_ADDR prm, GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c) {
    TPipe pipe;
    TBuf<TPosition::CO1> tc;
    pipe.InitBuffer(tc, 1024);
    LocalTensor<float> c1 = tc.Get<float>();
    GlobalTensor<half> gc;
    gc.SetGlobalBuffer((__gm__ half*)c, 256);
    FixpipeParamsV220 fp(16, 16, 16, 16, false);  // float L0C -> half GM needs quantPre = F322F16
    Fixpipe(gc, c1, fp);  // RULE unsupported_dtype
}

CASE(cube_wt_overlap, GM_ADDR prm, GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c) {
    // float: each iteration writes two fractals; dstGap = 0 puts iteration 1's first on iteration 0's second
    TPipe pipe;
    TQue<TPosition::B1, 1> q1;
    TQue<TPosition::B2, 1> qb;
    pipe.InitBuffer(q1, 1, 2048);
    pipe.InitBuffer(qb, 1, 2048);
    GlobalTensor<float> gb;
    gb.SetGlobalBuffer((__gm__ float*)a, 256);
    LocalTensor<float> l1 = q1.AllocTensor<float>();
    DataCopy(l1, gb, Nd2NzParams(1, 16, 16, 0, 16, 16, 1, 0));
    q1.EnQue(l1);
    l1 = q1.DeQue<float>();
    LocalTensor<float> b2 = qb.AllocTensor<float>();
    LoadDataWithTranspose(b2, l1, LoadData2dTransposeParams(0, 2, 0, 0, 0, 0));  // RULE invalid_argument
    qb.FreeTensor(b2);
    q1.FreeTensor(l1);
}

CASE(cube_wt_dst_in_l1, GM_ADDR prm, GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c) {
    TPipe pipe;
    TQue<TPosition::B1, 1> q1;
    pipe.InitBuffer(q1, 1, 2048);
    LocalTensor<float> l1 = q1.AllocTensor<float>();
    LoadDataWithTranspose(l1[256], l1, LoadData2dTransposeParams(0, 1, 0, 0, 0, 0));  // RULE tensor_position
    q1.FreeTensor(l1);
}
