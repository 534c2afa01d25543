// SyncAll tests (direct launch): blocks run as fibers and meet at the barrier.
using namespace AscendC;

// Phase 1: block b writes b + 1 to part[b]. SyncAll. Phase 2: every block sums all parts into out[b].
// Run one after another without a real barrier, block 0 would read zeros for the later blocks.
template <bool SOFT> __aicore__ inline void TwoPhase(GM_ADDR part, GM_ADDR sync, GM_ADDR out, int32_t slowWork) {
    int32_t b = GetBlockIdx(), n = GetBlockNum();
    GlobalTensor<float> gp, go;
    gp.SetGlobalBuffer((__gm__ float*)part, n);
    go.SetGlobalBuffer((__gm__ float*)out, n);
    TPipe pipe;
    TBuf<TPosition::VECCALC> work, ubSync;
    pipe.InitBuffer(work, 4096);
    pipe.InitBuffer(ubSync, n * 32);
    if (b == 0 && slowWork) {  // a slow block: everyone waits for it at the barrier
        LocalTensor<float> w = work.Get<float>();
        Duplicate(w, 1.0f, 1024);
        for (int32_t i = 0; i < slowWork; ++i) Exp(w, w, 1024);
    }
    gp.SetValue(b, static_cast<float>(b + 1));
    if (SOFT) {
        GlobalTensor<int32_t> gs;
        gs.SetGlobalBuffer((__gm__ int32_t*)sync, n * 8);
        SyncAll(gs, ubSync.Get<int32_t>());
    } else {
        SyncAll();
    }
    float sum = 0;
    for (int32_t i = 0; i < n; ++i) sum += gp.GetValue(i);
    go.SetValue(b, sum);
}
CASE(sync_hard, GM_ADDR prm, GM_ADDR part, GM_ADDR sync, GM_ADDR out) {
    GlobalTensor<int32_t> p;
    p.SetGlobalBuffer((__gm__ int32_t*)prm, 1);
    TwoPhase<false>(part, sync, out, p.GetValue(0));
}
CASE(sync_soft, GM_ADDR prm, GM_ADDR part, GM_ADDR sync, GM_ADDR out) {
    GlobalTensor<int32_t> p;
    p.SetGlobalBuffer((__gm__ int32_t*)prm, 1);
    TwoPhase<true>(part, sync, out, p.GetValue(0));
}
// two barriers in a row, then the sums
CASE(sync_twice, GM_ADDR prm, GM_ADDR part, GM_ADDR sync, GM_ADDR out) {
    SyncAll();
    TwoPhase<false>(part, sync, out, 0);
}
// block 1 crashes while block 0 waits at the barrier: the run stops, nothing hangs
CASE(sync_crash_while_waiting, GM_ADDR prm, GM_ADDR part, GM_ADDR sync, GM_ADDR out) {
    if (GetBlockIdx() == 1) {
        volatile int* p = nullptr;
        *p = 1;
    }
    SyncAll();
}
