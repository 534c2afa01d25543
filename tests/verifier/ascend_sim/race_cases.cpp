// Cross-core races on GM (rule cross_core_race): a core reads bytes another core wrote with nothing ordering the
// write before the read. The emulator runs the cores one after another, so every case computes the right
// numbers here; on the NPU the racy ones read stale data. Each racy case marks the access that must be named.
using namespace AscendC;

// (a)/(d) MIX: the AIC writes its block's 64 floats into the workspace, flag 0 (mode 2) tells its AIVs; each AIV
// copies its 32 into UB and writes 2 * x to out. ORDER 0: write, then set, the AIVs wait (correct); 1: the AIVs
// do not wait; 2: the AIC sets the flag before it writes.
template <int ORDER> __aicore__ inline void Handoff(GM_ADDR ws, GM_ADDR out) {
    const int32_t blk = ASCEND_IS_AIC ? GetBlockIdx() : GetBlockIdx() / 2;
    GlobalTensor<float> gws, gout;
    gws.SetGlobalBuffer((__gm__ float*)ws + blk * 64, 64);
    gout.SetGlobalBuffer((__gm__ float*)out + blk * 64, 64);
    if ASCEND_IS_AIC {
        if (ORDER == 2) CrossCoreSetFlag<2, PIPE_S>(0);
        for (int i = 0; i < 64; ++i) gws.SetValue(i, static_cast<float>(blk * 64 + i));
        if (ORDER != 2) CrossCoreSetFlag<2, PIPE_S>(0);
    } else {
        TPipe pipe;
        TQue<TPosition::VECIN, 1> qin;
        TQue<TPosition::VECOUT, 1> qout;
        pipe.InitBuffer(qin, 1, 32 * 4);
        pipe.InitBuffer(qout, 1, 32 * 4);
        if (ORDER != 1) CrossCoreWaitFlag(0);
        const int32_t off = GetSubBlockIdx() * 32;
        LocalTensor<float> x = qin.AllocTensor<float>();
        DataCopy(x, gws[off], 32);  // the racy read when ORDER != 0
        qin.EnQue(x);
        x = qin.DeQue<float>();
        LocalTensor<float> y = qout.AllocTensor<float>();
        Muls(y, x, 2.0f, 32);
        qout.EnQue(y);
        qin.FreeTensor(x);
        y = qout.DeQue<float>();
        DataCopy(gout[off], y, 32);
        qout.FreeTensor(y);
    }
}
CASE(race_handoff_ok, GM_ADDR ws, GM_ADDR out) { Handoff<0>(ws, out); }
CASE(race_handoff_nowait, GM_ADDR ws, GM_ADDR out) { Handoff<1>(ws, out); }
CASE(race_handoff_set_first, GM_ADDR ws, GM_ADDR out) { Handoff<2>(ws, out); }

// (b) two blocks: block b writes b + 1 into part[8b .. 8b + 8) (DataCopy from UB); then block b reads the other
// block's part and writes it to out[8b ..). SYNC: a SyncAll between the two phases.
template <bool SYNC> __aicore__ inline void Exchange(GM_ADDR part, GM_ADDR out) {
    const int32_t b = GetBlockIdx(), n = GetBlockNum();
    GlobalTensor<float> gp, go;
    gp.SetGlobalBuffer((__gm__ float*)part, n * 8);
    go.SetGlobalBuffer((__gm__ float*)out, n * 8);
    TPipe pipe;
    TQue<TPosition::VECIN, 1> qin;
    TQue<TPosition::VECOUT, 1> qout;
    pipe.InitBuffer(qin, 1, 32);
    pipe.InitBuffer(qout, 1, 32);
    LocalTensor<float> y = qout.AllocTensor<float>();
    Duplicate(y, static_cast<float>(b + 1), 8);
    qout.EnQue(y);
    y = qout.DeQue<float>();
    DataCopy(gp[b * 8], y, 8);
    qout.FreeTensor(y);
    if (SYNC) SyncAll();
    LocalTensor<float> x = qin.AllocTensor<float>();
    DataCopy(x, gp[((b + 1) % n) * 8], 8);  // the racy read without SYNC
    qin.EnQue(x);
    x = qin.DeQue<float>();
    y = qout.AllocTensor<float>();
    Adds(y, x, 0.0f, 8);
    qout.EnQue(y);
    qin.FreeTensor(x);
    y = qout.DeQue<float>();
    DataCopy(go[b * 8], y, 8);
    qout.FreeTensor(y);
}
CASE(race_exchange_sync, GM_ADDR part, GM_ADDR out) { Exchange<true>(part, out); }
CASE(race_exchange_nosync, GM_ADDR part, GM_ADDR out) { Exchange<false>(part, out); }

// (c) every block adds b + 1 into acc[0 .. 8) with SetAtomicAdd (acc zero-filled by the host); SYNC: SyncAll;
// then every block copies acc into out[8b ..).
template <bool SYNC> __aicore__ inline void AtomicSum(GM_ADDR acc, GM_ADDR out) {
    const int32_t b = GetBlockIdx();
    GlobalTensor<float> ga, go;
    ga.SetGlobalBuffer((__gm__ float*)acc, 8);
    go.SetGlobalBuffer((__gm__ float*)out, GetBlockNum() * 8);
    TPipe pipe;
    TQue<TPosition::VECIN, 1> qin;
    TQue<TPosition::VECOUT, 1> qout;
    pipe.InitBuffer(qin, 1, 32);
    pipe.InitBuffer(qout, 1, 32);
    LocalTensor<float> y = qout.AllocTensor<float>();
    Duplicate(y, static_cast<float>(b + 1), 8);
    qout.EnQue(y);
    y = qout.DeQue<float>();
    SetAtomicAdd<float>();
    DataCopy(ga, y, 8);
    SetAtomicNone();
    qout.FreeTensor(y);
    if (SYNC) SyncAll();
    LocalTensor<float> x = qin.AllocTensor<float>();
    DataCopy(x, ga, 8);  // the racy read without SYNC
    qin.EnQue(x);
    x = qin.DeQue<float>();
    y = qout.AllocTensor<float>();
    Adds(y, x, 0.0f, 8);
    qout.EnQue(y);
    qin.FreeTensor(x);
    y = qout.DeQue<float>();
    DataCopy(go[b * 8], y, 8);
    qout.FreeTensor(y);
}
CASE(race_atomic_sync, GM_ADDR acc, GM_ADDR out) { AtomicSum<true>(acc, out); }
CASE(race_atomic_nosync, GM_ADDR acc, GM_ADDR out) { AtomicSum<false>(acc, out); }

// a workspace reused by another block without a barrier (write after write): block 1 overwrites what block 0
// wrote, then block 0 reads its own slot back (SYNC: SyncAll after block 0's write and before block 1's).
template <bool SYNC> __aicore__ inline void Reuse(GM_ADDR ws, GM_ADDR out) {
    const int32_t b = GetBlockIdx();
    GlobalTensor<float> gw, go;
    gw.SetGlobalBuffer((__gm__ float*)ws, 8);
    go.SetGlobalBuffer((__gm__ float*)out, GetBlockNum());
    if (b == 0) gw.SetValue(0, 1.0f);
    if (SYNC) SyncAll();
    if (b == 1) gw.SetValue(0, 2.0f);  // the racy write without SYNC
    go.SetValue(b, 1.0f);
}
CASE(race_reuse_sync, GM_ADDR ws, GM_ADDR out) { Reuse<true>(ws, out); }
CASE(race_reuse_nosync, GM_ADDR ws, GM_ADDR out) { Reuse<false>(ws, out); }
