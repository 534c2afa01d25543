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
    DataCopy(ga, y, 8);  // every block's add
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

// ---- write after read (reads are recorded too) ----

// MIX: the AIC of each AI core writes tile 0 into its workspace slot (64 floats) and flags its AIVs (mode 2,
// flag 0); each AIV copies its half of the slot to UB and out; then the AIC rewrites the slot with tile 1 and
// flags again. BACK 1: each AIV flags back (mode 2, flag 1) after its read and the AIC waits for both before
// the rewrite (correct). BACK 0: no flag back: the AIC waits only for the AIVs' start-up signal (flag 3, set
// before their loop), which says nothing about their reads. BACK 2: the AIVs flag back BEFORE they read.
// The emulator runs the AIVs' reads before the rewrite in all three, so every output is right here.
template <int BACK> __aicore__ inline void SlotReuse(GM_ADDR ws, GM_ADDR out) {
    const int32_t blk = ASCEND_IS_AIC ? GetBlockIdx() : GetBlockIdx() / 2;
    GlobalTensor<float> gws, gout;
    gws.SetGlobalBuffer((__gm__ float*)ws + blk * 64, 64);
    gout.SetGlobalBuffer((__gm__ float*)out + blk * 128, 128);
    if ASCEND_IS_AIC {
        for (int t = 0; t < 2; ++t) {
            if (t > 0) CrossCoreWaitFlag(BACK == 0 ? 3 : 1);
            for (int i = 0; i < 64; ++i) gws.SetValue(i, static_cast<float>(t * 1000 + blk * 64 + i));  // rewrite
            CrossCoreSetFlag<2, PIPE_S>(0);
        }
    } else {
        TPipe pipe;
        TQue<TPosition::VECIN, 1> qin;
        TQue<TPosition::VECOUT, 1> qout;
        pipe.InitBuffer(qin, 1, 32 * 4);
        pipe.InitBuffer(qout, 1, 32 * 4);
        if (BACK == 0) CrossCoreSetFlag<2, PIPE_S>(3);
        const int32_t off = GetSubBlockIdx() * 32;
        for (int t = 0; t < 2; ++t) {
            CrossCoreWaitFlag(0);
            if (BACK == 2) CrossCoreSetFlag<2, PIPE_S>(1);
            LocalTensor<float> x = qin.AllocTensor<float>();
            DataCopy(x, gws[off], 32);  // the slot read the rewrite races with
            if (BACK == 1) CrossCoreSetFlag<2, PIPE_MTE2>(1);
            qin.EnQue(x);
            x = qin.DeQue<float>();
            LocalTensor<float> y = qout.AllocTensor<float>();
            Adds(y, x, 0.0f, 32);
            qout.EnQue(y);
            qin.FreeTensor(x);
            y = qout.DeQue<float>();
            DataCopy(gout[t * 64 + off], y, 32);
            qout.FreeTensor(y);
        }
    }
}
CASE(race_slot_noback, GM_ADDR ws, GM_ADDR out) { SlotReuse<0>(ws, out); }
CASE(race_slot_back, GM_ADDR ws, GM_ADDR out) { SlotReuse<1>(ws, out); }
CASE(race_slot_back_early, GM_ADDR ws, GM_ADDR out) { SlotReuse<2>(ws, out); }

// Two blocks: block b writes out[8b ..) = 2 * x[8b ..); then block READER copies the other block's part of out
// into peek. SYNC: a SyncAll between the two. Without it the read races with the other block's write whichever
// the emulator runs first: READER 0 reads before block 1 ran (write after read), READER 1 after block 0 ran.
template <bool SYNC, int READER> __aicore__ inline void Peek(GM_ADDR x, GM_ADDR out, GM_ADDR peek) {
    const int32_t b = GetBlockIdx();
    GlobalTensor<float> gx, go, gp;
    gx.SetGlobalBuffer((__gm__ float*)x, 16);
    go.SetGlobalBuffer((__gm__ float*)out, 16);
    gp.SetGlobalBuffer((__gm__ float*)peek, 8);
    TPipe pipe;
    TQue<TPosition::VECIN, 1> qin;
    TQue<TPosition::VECOUT, 1> qout;
    pipe.InitBuffer(qin, 1, 32);
    pipe.InitBuffer(qout, 1, 32);
    LocalTensor<float> v = qin.AllocTensor<float>();
    DataCopy(v, gx[b * 8], 8);
    qin.EnQue(v);
    v = qin.DeQue<float>();
    LocalTensor<float> y = qout.AllocTensor<float>();
    Muls(y, v, 2.0f, 8);
    qout.EnQue(y);
    qin.FreeTensor(v);
    y = qout.DeQue<float>();
    DataCopy(go[b * 8], y, 8);  // each block's part of out
    qout.FreeTensor(y);
    if (SYNC) SyncAll();
    if (b == READER) {
        v = qin.AllocTensor<float>();
        DataCopy(v, go[(1 - b) * 8], 8);  // the other block's part
        qin.EnQue(v);
        v = qin.DeQue<float>();
        y = qout.AllocTensor<float>();
        Adds(y, v, 0.0f, 8);
        qout.EnQue(y);
        qin.FreeTensor(v);
        y = qout.DeQue<float>();
        DataCopy(gp, y, 8);
        qout.FreeTensor(y);
    }
}
CASE(race_peek_sync, GM_ADDR x, GM_ADDR out, GM_ADDR peek) { Peek<true, 0>(x, out, peek); }
CASE(race_peek_nosync_reader0, GM_ADDR x, GM_ADDR out, GM_ADDR peek) { Peek<false, 0>(x, out, peek); }
CASE(race_peek_nosync_reader1, GM_ADDR x, GM_ADDR out, GM_ADDR peek) { Peek<false, 1>(x, out, peek); }

// Every block reads the same 64 floats of an input and of a workspace table block 0 filled before a SyncAll, and
// writes their sum to out[8b ..). REWRITE 1: the last block then rewrites the table without a barrier (it races
// with the other blocks' reads; only a record of ALL the unordered readers sees it, the last reader being the
// writer itself); REWRITE 2: the same after a second SyncAll, 3: after a mode-0 flag of every core (correct).
template <int REWRITE> __aicore__ inline void Shared(GM_ADDR x, GM_ADDR ws, GM_ADDR out) {
    const int32_t b = GetBlockIdx(), n = GetBlockNum();
    GlobalTensor<float> gx, gw, go;
    gx.SetGlobalBuffer((__gm__ float*)x, 64);
    gw.SetGlobalBuffer((__gm__ float*)ws, 64);
    go.SetGlobalBuffer((__gm__ float*)out, n * 8);
    TPipe pipe;
    TQue<TPosition::VECIN, 1> qa, qb;
    TQue<TPosition::VECOUT, 1> qout;
    pipe.InitBuffer(qa, 1, 256);
    pipe.InitBuffer(qb, 1, 256);
    pipe.InitBuffer(qout, 1, 256);
    if (b == 0)
        for (int i = 0; i < 64; ++i) gw.SetValue(i, static_cast<float>(i % 8));
    SyncAll();
    LocalTensor<float> a = qa.AllocTensor<float>();
    LocalTensor<float> t = qb.AllocTensor<float>();
    DataCopy(a, gx, 64);
    DataCopy(t, gw, 64);  // every block reads the table
    qa.EnQue(a);
    qb.EnQue(t);
    a = qa.DeQue<float>();
    t = qb.DeQue<float>();
    LocalTensor<float> y = qout.AllocTensor<float>();
    Add(y, a, t, 64);
    qout.EnQue(y);
    qa.FreeTensor(a);
    qb.FreeTensor(t);
    y = qout.DeQue<float>();
    DataCopy(go[b * 8], y, 8);
    qout.FreeTensor(y);
    if (REWRITE == 2) SyncAll();
    if (REWRITE == 3) {  // every vector core flags once it read (mode 0), the last one waits for all of them
        CrossCoreSetFlag<0, PIPE_MTE2>(1);
        if (b == n - 1) CrossCoreWaitFlag(1);
    }
    if (REWRITE != 0 && b == n - 1) gw.SetValue(0, -1.0f);  // the rewrite of the table
}
CASE(race_shared_read, GM_ADDR x, GM_ADDR ws, GM_ADDR out) { Shared<0>(x, ws, out); }
CASE(race_shared_rewrite, GM_ADDR x, GM_ADDR ws, GM_ADDR out) { Shared<1>(x, ws, out); }
CASE(race_shared_rewrite_sync, GM_ADDR x, GM_ADDR ws, GM_ADDR out) { Shared<2>(x, ws, out); }
CASE(race_shared_rewrite_flags, GM_ADDR x, GM_ADDR ws, GM_ADDR out) { Shared<3>(x, ws, out); }

// Block 0 copies acc (zero-filled by the host) to out; then every block adds b + 1 into acc atomically. SYNC: a
// SyncAll between the read and the adds; without it the other blocks' adds race with block 0's read.
template <bool SYNC> __aicore__ inline void ReadThenAdd(GM_ADDR acc, GM_ADDR out) {
    const int32_t b = GetBlockIdx();
    GlobalTensor<float> ga, go;
    ga.SetGlobalBuffer((__gm__ float*)acc, 8);
    go.SetGlobalBuffer((__gm__ float*)out, 8);
    TPipe pipe;
    TQue<TPosition::VECIN, 1> qin;
    TQue<TPosition::VECOUT, 1> qout;
    pipe.InitBuffer(qin, 1, 32);
    pipe.InitBuffer(qout, 1, 32);
    if (b == 0) {
        LocalTensor<float> x = qin.AllocTensor<float>();
        DataCopy(x, ga, 8);  // block 0 reads acc
        qin.EnQue(x);
        x = qin.DeQue<float>();
        LocalTensor<float> y = qout.AllocTensor<float>();
        Adds(y, x, 0.0f, 8);
        qout.EnQue(y);
        qin.FreeTensor(x);
        y = qout.DeQue<float>();
        DataCopy(go, y, 8);
        qout.FreeTensor(y);
    }
    if (SYNC) SyncAll();
    LocalTensor<float> y = qout.AllocTensor<float>();
    Duplicate(y, static_cast<float>(b + 1), 8);
    qout.EnQue(y);
    y = qout.DeQue<float>();
    SetAtomicAdd<float>();
    DataCopy(ga, y, 8);  // the atomic add after block 0's read
    SetAtomicNone();
    qout.FreeTensor(y);
}
CASE(race_read_then_add_sync, GM_ADDR acc, GM_ADDR out) { ReadThenAdd<true>(acc, out); }
CASE(race_read_then_add_nosync, GM_ADDR acc, GM_ADDR out) { ReadThenAdd<false>(acc, out); }

// (p) Ascend's printf sample: every AIV prints the first element of C before the AIC has written it, with nothing
// ordering the two. PRINT 1: the value only reaches the print (no race: it changes no output); 0: the same read
// is kept and written out (the race).
template <int PRINT> __aicore__ inline void PrintEarly(GM_ADDR ws, GM_ADDR out) {
    const int32_t blk = ASCEND_IS_AIC ? GetBlockIdx() : GetBlockIdx() / 2;
    GlobalTensor<float> gws, gout;
    gws.SetGlobalBuffer((__gm__ float*)ws + blk * 64, 64);
    gout.SetGlobalBuffer((__gm__ float*)out + blk * 64, 64);
    if ASCEND_IS_AIC {
        for (int i = 0; i < 64; ++i) gws.SetValue(i, static_cast<float>(i));
        CrossCoreSetFlag<2, PIPE_S>(0);
    } else {
        if (PRINT) {
            AscendC::printf("first %f\n", gws.GetValue(0));  // read for the print only
            PRINTF("second %f\n", gws.GetValue(1));
        } else {
            const float v = gws.GetValue(0);  // the racy read kept
            gout.SetValue(GetSubBlockIdx(), v);
        }
        CrossCoreWaitFlag(0);
    }
}
CASE(race_print_only, GM_ADDR ws, GM_ADDR out) { PrintEarly<1>(ws, out); }
CASE(race_print_kept, GM_ADDR ws, GM_ADDR out) { PrintEarly<0>(ws, out); }
