// MIX kernels (launched with --option mix=2): per block one cube core (AIC) and two vector cores (AIV) run
// the same kernel function; ASCEND_IS_AIC/AIV pick the part; CrossCoreSetFlag/WaitFlag hand data over.
using namespace AscendC;

// ids[3 * GetBlockNum() * 3]: per core (AIC b at 3b, AIV (b, s) at 3b + 1 + s): GetBlockIdx, GetSubBlockIdx,
// GetTaskRation
CASE(mix_identity, GM_ADDR ids) {
    GlobalTensor<int32_t> g;
    g.SetGlobalBuffer((__gm__ int32_t*)ids, GetBlockNum() * 9);
    int64_t slot = ASCEND_IS_AIC ? GetBlockIdx() * 3 : (GetBlockIdx() / 2) * 3 + 1 + GetSubBlockIdx();
    g.SetValue(slot * 3 + 0, static_cast<int32_t>(GetBlockIdx()));
    g.SetValue(slot * 3 + 1, static_cast<int32_t>(GetSubBlockIdx()));
    g.SetValue(slot * 3 + 2, static_cast<int32_t>(GetTaskRation()));
}

// out = leaky_relu(a @ b, 0.1): the AIC computes its block's 32 x 32 tile into the workspace ws, flag 0 (mode 2)
// tells its AIVs, each AIV applies LeakyRelu to 16 rows; flag 1 (mode 2) tells the AIC both are done, and it
// writes done[block] = 1.
CASE(mix_mm_leaky, GM_ADDR a, GM_ADDR b, GM_ADDR ws, GM_ADDR out, GM_ADDR done) {
    const int32_t blk = ASCEND_IS_AIC ? GetBlockIdx() : GetBlockIdx() / 2;
    GlobalTensor<float> gws, gout;
    gws.SetGlobalBuffer((__gm__ float*)ws + blk * 1024, 1024);
    gout.SetGlobalBuffer((__gm__ float*)out + blk * 1024, 1024);
    TPipe pipe;
    if ASCEND_IS_AIC {
        GlobalTensor<half> ga, gb;
        ga.SetGlobalBuffer((__gm__ half*)a + blk * 1024, 1024);
        gb.SetGlobalBuffer((__gm__ half*)b, 1024);
        TQue<TPosition::A1, 1> qa1;
        TQue<TPosition::B1, 1> qb1;
        TQue<TPosition::A2, 1> qa2;
        TQue<TPosition::B2, 1> qb2;
        TQue<TPosition::CO1, 1> qc;
        pipe.InitBuffer(qa1, 1, 2048);
        pipe.InitBuffer(qb1, 1, 2048);
        pipe.InitBuffer(qa2, 1, 2048);
        pipe.InitBuffer(qb2, 1, 2048);
        pipe.InitBuffer(qc, 1, 4096);
        LocalTensor<half> a1 = qa1.AllocTensor<half>();
        LocalTensor<half> b1 = qb1.AllocTensor<half>();
        DataCopy(a1, ga, Nd2NzParams(1, 32, 32, 0, 32, 32, 1, 0));
        DataCopy(b1, gb, Nd2NzParams(1, 32, 32, 0, 32, 32, 1, 0));
        qa1.EnQue(a1);
        qb1.EnQue(b1);
        a1 = qa1.DeQue<half>();
        b1 = qb1.DeQue<half>();
        LocalTensor<half> a2 = qa2.AllocTensor<half>();
        LocalTensor<half> b2 = qb2.AllocTensor<half>();
        for (int i = 0; i < 2; ++i) {
            LoadData(a2[i * 512], a1[i * 256], LoadData2DParams(0, 2, 2, 0, 0, false, 0));
            LoadData(b2[i * 512], b1[i * 256], LoadData2DParams(0, 2, 2, 0, 0, true, 0));
        }
        qa2.EnQue(a2);
        qb2.EnQue(b2);
        qa1.FreeTensor(a1);
        qb1.FreeTensor(b1);
        a2 = qa2.DeQue<half>();
        b2 = qb2.DeQue<half>();
        LocalTensor<float> c = qc.AllocTensor<float>();
        Mmad(c, a2, b2, MmadParams(32, 32, 32, 0, false, true));
        qc.EnQue(c);
        c = qc.DeQue<float>();
        Fixpipe(gws, c, FixpipeParamsV220(32, 32, 32, 32, false));
        qc.FreeTensor(c);
        qa2.FreeTensor(a2);
        qb2.FreeTensor(b2);
        CrossCoreSetFlag<2, PIPE_FIX>(0);  // the tile is in GM: the AIVs may read it
        CrossCoreWaitFlag(1);               // both AIVs are done
        GlobalTensor<int32_t> gd;
        gd.SetGlobalBuffer((__gm__ int32_t*)done + blk, 1);
        gd.SetValue(0, 1);
    } else {
        const int32_t rows = 16, off = GetSubBlockIdx() * rows * 32;
        TQue<TPosition::VECIN, 1> qin;
        TQue<TPosition::VECOUT, 1> qout;
        pipe.InitBuffer(qin, 1, rows * 32 * 4);
        pipe.InitBuffer(qout, 1, rows * 32 * 4);
        CrossCoreWaitFlag(0);  // the AIC's tile
        LocalTensor<float> x = qin.AllocTensor<float>();
        DataCopy(x, gws[off], rows * 32);
        qin.EnQue(x);
        x = qin.DeQue<float>();
        LocalTensor<float> y = qout.AllocTensor<float>();
        LeakyRelu(y, x, 0.1f, rows * 32);
        qout.EnQue(y);
        qin.FreeTensor(x);
        y = qout.DeQue<float>();
        DataCopy(gout[off], y, rows * 32);
        qout.FreeTensor(y);
        CrossCoreSetFlag<2, PIPE_MTE3>(1);
    }
}

// mode 1: the two AIVs of an AI core swap values through GM; the AIC does nothing
CASE(mix_aiv_pair, GM_ADDR vals, GM_ADDR got) {
    if ASCEND_IS_AIV {
        GlobalTensor<float> gv, gg;
        gv.SetGlobalBuffer((__gm__ float*)vals, GetBlockNum() * 2);
        gg.SetGlobalBuffer((__gm__ float*)got, GetBlockNum() * 2);
        const int64_t me = GetBlockIdx(), other = me ^ 1;
        gv.SetValue(me, static_cast<float>(me + 1) * 10.0f);
        CrossCoreSetFlag<1, PIPE_S>(2);
        CrossCoreWaitFlag(2);
        gg.SetValue(me, gv.GetValue(other));
    }
}

// an AIV waits for a flag nobody sets: the NPU hangs
CASE(mix_wait_forever, GM_ADDR x) {
    if ASCEND_IS_AIV {
        CrossCoreWaitFlag(3);  // RULE sync_all
    }
}

// who may write the same output bytes: mode 0 -- the AIC writes out[blk*8 .. +8], then (flag 0, mode 2) each AIV
// of its AI core rewrites half of them in place (allowed: one AI core, ordered by the flag); mode 1 -- both AIVs
// of a core write the same 8 values (a race); mode 2 -- AIV 0 of every core writes out[0 .. 8] (cores race)
CASE(mix_write_owner, GM_ADDR mode_gm, GM_ADDR out) {
    GlobalTensor<int32_t> gm;
    gm.SetGlobalBuffer((__gm__ int32_t*)mode_gm, 1);
    const int32_t mode = gm.GetValue(0);
    const int32_t blk = ASCEND_IS_AIC ? GetBlockIdx() : GetBlockIdx() / 2;
    GlobalTensor<float> g;
    g.SetGlobalBuffer((__gm__ float*)out, GetBlockNum() * 8);
    if ASCEND_IS_AIC {
        if (mode == 0) {
            for (int i = 0; i < 8; ++i) g.SetValue(blk * 8 + i, 1.0f);
            CrossCoreSetFlag<0x2, PIPE_S>(0);
        }
    }
    if ASCEND_IS_AIV {
        if (mode == 0) {
            CrossCoreWaitFlag(0);
            for (int i = 0; i < 4; ++i) g.SetValue(blk * 8 + GetSubBlockIdx() * 4 + i, 2.0f);
        } else if (mode == 1) {  // other values per writer: an overlap whose result depends on the order
            for (int i = 0; i < 8; ++i) g.SetValue(blk * 8 + i, 3.0f + GetSubBlockIdx());
        } else if (GetSubBlockIdx() == 0) {
            for (int i = 0; i < 8; ++i) g.SetValue(i, 4.0f + blk);
        }
    }
}

// One Init for every core of a MIX kernel, as the Matmul-LeakyRelu samples write it: each core initialises a VECOUT
// queue (CANN's InitBuffer only books addresses). USE 0: only the AIVs use it (fine); 1: the AIC allocates from it
// (the cube core has no Unified Buffer: refused at that use).
template <int USE> __aicore__ inline void SharedInit(GM_ADDR out) {
    TPipe pipe;
    TQue<TPosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 1, 256);
    if (ASCEND_IS_AIV || USE) {
        LocalTensor<float> t = q.AllocTensor<float>();  // the AIC's use when USE
        if ASCEND_IS_AIV {
            Duplicate(t, 1.0f, 64);
            q.EnQue(t);
            t = q.DeQue<float>();
            GlobalTensor<float> g;
            g.SetGlobalBuffer((__gm__ float*)out + GetBlockIdx() * 64, 64);
            DataCopy(g, t, 64);
        }
        q.FreeTensor(t);
    }
}
CASE(mix_shared_init, GM_ADDR out) { SharedInit<0>(out); }
CASE(mix_shared_init_used, GM_ADDR out) { SharedInit<1>(out); }
