// Correct kernels with different performance shapes, for the latency model's tests (direct launch).
// Tiling (16 bytes): elements per block, tile length (elements), buffers per queue, passes.
using namespace AscendC;

struct LatTiling {
    uint32_t perBlock;
    uint32_t tile;
    uint32_t bufNum;
    uint32_t passes;
};

// z = x + y over this block's range, tiled through VECIN/VECOUT queues with bufNum buffers each.
CASE(l_copy_add, GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR tiling) {
    GET_TILING_DATA_WITH_STRUCT(LatTiling, t, tiling);
    const uint32_t base = t.perBlock * GetBlockIdx();
    GlobalTensor<float> xg, yg, zg;
    xg.SetGlobalBuffer((__gm__ float*)x + base, t.perBlock);
    yg.SetGlobalBuffer((__gm__ float*)y + base, t.perBlock);
    zg.SetGlobalBuffer((__gm__ float*)z + base, t.perBlock);
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> qx, qy;
    TQue<QuePosition::VECOUT, 1> qz;
    pipe.InitBuffer(qx, t.bufNum, t.tile * sizeof(float));
    pipe.InitBuffer(qy, t.bufNum, t.tile * sizeof(float));
    pipe.InitBuffer(qz, t.bufNum, t.tile * sizeof(float));
    for (uint32_t off = 0; off < t.perBlock; off += t.tile) {
        LocalTensor<float> a = qx.AllocTensor<float>(), b = qy.AllocTensor<float>();
        DataCopy(a, xg[off], t.tile);
        DataCopy(b, yg[off], t.tile);
        qx.EnQue(a);
        qy.EnQue(b);
        a = qx.DeQue<float>();
        b = qy.DeQue<float>();
        LocalTensor<float> c = qz.AllocTensor<float>();
        Add(c, a, b, t.tile);
        qz.EnQue(c);
        qx.FreeTensor(a);
        qy.FreeTensor(b);
        c = qz.DeQue<float>();
        DataCopy(zg[off], c, t.tile);
        qz.FreeTensor(c);
    }
}

// The same add with TBufs and PipeBarrier<PIPE_ALL> between the stages: nothing overlaps.
CASE(l_barrier_add, GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR tiling) {
    GET_TILING_DATA_WITH_STRUCT(LatTiling, t, tiling);
    const uint32_t base = t.perBlock * GetBlockIdx();
    GlobalTensor<float> xg, yg, zg;
    xg.SetGlobalBuffer((__gm__ float*)x + base, t.perBlock);
    yg.SetGlobalBuffer((__gm__ float*)y + base, t.perBlock);
    zg.SetGlobalBuffer((__gm__ float*)z + base, t.perBlock);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, by, bz;
    pipe.InitBuffer(bx, t.tile * sizeof(float));
    pipe.InitBuffer(by, t.tile * sizeof(float));
    pipe.InitBuffer(bz, t.tile * sizeof(float));
    LocalTensor<float> a = bx.Get<float>(), b = by.Get<float>(), c = bz.Get<float>();
    for (uint32_t off = 0; off < t.perBlock; off += t.tile) {
        DataCopy(a, xg[off], t.tile);
        DataCopy(b, yg[off], t.tile);
        PipeBarrier<PIPE_ALL>();
        Add(c, a, b, t.tile);
        PipeBarrier<PIPE_ALL>();
        DataCopy(zg[off], c, t.tile);
        PipeBarrier<PIPE_ALL>();
    }
}

// z = exp applied `passes` times (vector-heavy), double-buffered.
CASE(l_exp_heavy, GM_ADDR x, GM_ADDR z, GM_ADDR tiling) {
    GET_TILING_DATA_WITH_STRUCT(LatTiling, t, tiling);
    const uint32_t base = t.perBlock * GetBlockIdx();
    GlobalTensor<float> xg, zg;
    xg.SetGlobalBuffer((__gm__ float*)x + base, t.perBlock);
    zg.SetGlobalBuffer((__gm__ float*)z + base, t.perBlock);
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> qx;
    TQue<QuePosition::VECOUT, 1> qz;
    pipe.InitBuffer(qx, t.bufNum, t.tile * sizeof(float));
    pipe.InitBuffer(qz, t.bufNum, t.tile * sizeof(float));
    for (uint32_t off = 0; off < t.perBlock; off += t.tile) {
        LocalTensor<float> a = qx.AllocTensor<float>();
        DataCopy(a, xg[off], t.tile);
        qx.EnQue(a);
        a = qx.DeQue<float>();
        LocalTensor<float> c = qz.AllocTensor<float>();
        Exp(c, a, t.tile);
        for (uint32_t p = 1; p < t.passes; ++p) Exp(c, c, t.tile);
        qz.EnQue(c);
        qx.FreeTensor(a);
        c = qz.DeQue<float>();
        DataCopy(zg[off], c, t.tile);
        qz.FreeTensor(c);
    }
}

// z = 2 x element by element with LocalTensor GetValue/SetValue (scalar-heavy).
CASE(l_scalar_loop, GM_ADDR x, GM_ADDR z, GM_ADDR tiling) {
    GET_TILING_DATA_WITH_STRUCT(LatTiling, t, tiling);
    const uint32_t base = t.perBlock * GetBlockIdx();
    GlobalTensor<float> xg, zg;
    xg.SetGlobalBuffer((__gm__ float*)x + base, t.perBlock);
    zg.SetGlobalBuffer((__gm__ float*)z + base, t.perBlock);
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> qx;
    TQue<QuePosition::VECOUT, 1> qz;
    pipe.InitBuffer(qx, t.bufNum, t.tile * sizeof(float));
    pipe.InitBuffer(qz, t.bufNum, t.tile * sizeof(float));
    for (uint32_t off = 0; off < t.perBlock; off += t.tile) {
        LocalTensor<float> a = qx.AllocTensor<float>();
        DataCopy(a, xg[off], t.tile);
        qx.EnQue(a);
        a = qx.DeQue<float>();
        LocalTensor<float> c = qz.AllocTensor<float>();
        for (uint32_t i = 0; i < t.tile; ++i) c.SetValue(i, a.GetValue(i) * 2.0f);
        qz.EnQue(c);
        qx.FreeTensor(a);
        c = qz.DeQue<float>();
        DataCopy(zg[off], c, t.tile);
        qz.FreeTensor(c);
    }
}

// z = x + 1 through GlobalTensor GetValue/SetValue only (each a GM round trip).
CASE(l_gm_scalar, GM_ADDR x, GM_ADDR z, GM_ADDR tiling) {
    GET_TILING_DATA_WITH_STRUCT(LatTiling, t, tiling);
    const uint32_t base = t.perBlock * GetBlockIdx();
    GlobalTensor<float> xg, zg;
    xg.SetGlobalBuffer((__gm__ float*)x + base, t.perBlock);
    zg.SetGlobalBuffer((__gm__ float*)z + base, t.perBlock);
    for (uint32_t i = 0; i < t.perBlock; ++i) zg.SetValue(i, xg.GetValue(i) + 1.0f);
}
