// Deliberately broken kernels: each one breaks one hardware rule on the line marked `// RULE <rule_id>`.
// Arguments: a (256 float input), out (256 float output) unless stated otherwise.
using namespace AscendC;

struct Io {
    GlobalTensor<float> ga, go;
    __aicore__ inline Io(GM_ADDR a, GM_ADDR out) {
        ga.SetGlobalBuffer((__gm__ float*)a, 256);
        go.SetGlobalBuffer((__gm__ float*)out, 256);
    }
};

CASE(r_ub_alignment, GM_ADDR a, GM_ADDR out) {
    Io io(a, out);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b, c;
    pipe.InitBuffer(b, 1024);
    pipe.InitBuffer(c, 1024);
    LocalTensor<float> x = b.Get<float>(), o = c.Get<float>();
    DataCopy(x, io.ga, 256);
    PipeBarrier<PIPE_ALL>();
    Add(o, x[3], x, 64);  // RULE ub_alignment
    PipeBarrier<PIPE_ALL>();
    DataCopy(io.go, o, 64);
}

CASE(r_tail_dropped, GM_ADDR a, GM_ADDR out) {  // copies 203 floats with the count form
    Io io(a, out);
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 1024);
    LocalTensor<float> x = q.AllocTensor<float>();
    DataCopy(x, io.ga, 203);  // RULE datacopy_tail_dropped
    q.EnQue(x);
    LocalTensor<float> y = q.DeQue<float>();
    DataCopyPad(io.go, y, DataCopyExtParams(1, 203 * 4, 0, 0, 0));  // reads 3 never-written floats
    q.FreeTensor(y);
}

CASE(r_ub_capacity, GM_ADDR a, GM_ADDR out) {
    Io io(a, out);
    TPipe pipe;
    TQue<QuePosition::VECIN, 2> q;
    pipe.InitBuffer(q, 2, 100 * 1024);  // RULE ub_capacity
    io.go.SetValue(0, 1.0f);            // never reached: the block stops
}

CASE(r_ub_oob, GM_ADDR a, GM_ADDR out) {
    Io io(a, out);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b, c;
    pipe.InitBuffer(b, 256);
    pipe.InitBuffer(c, 1024);
    LocalTensor<float> x = b.Get<float>();
    Duplicate(x, 1.0f, 128);  // RULE ub_out_of_bounds
}

CASE(r_queue_limits, GM_ADDR a, GM_ADDR out) {
    Io io(a, out);
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 9, 256);  // RULE queue_limits
}

CASE(r_deque_empty, GM_ADDR a, GM_ADDR out) {
    Io io(a, out);
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 2, 256);
    LocalTensor<float> x = q.DeQue<float>();  // RULE queue_pairing
    q.FreeTensor(x);
}

CASE(r_alloc_beyond_num, GM_ADDR a, GM_ADDR out) {
    Io io(a, out);
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, 256);
    LocalTensor<float> x = q.AllocTensor<float>();
    LocalTensor<float> y = q.AllocTensor<float>();  // RULE queue_pairing
    q.FreeTensor(x);
    q.FreeTensor(y);
}

CASE(r_double_free, GM_ADDR a, GM_ADDR out) {
    Io io(a, out);
    TPipe pipe;
    TQue<QuePosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 1, 256);
    LocalTensor<float> x = q.AllocTensor<float>();
    q.FreeTensor(x);
    q.FreeTensor(x);  // RULE queue_pairing
}

CASE(r_leak, GM_ADDR a, GM_ADDR out) {  // copy-through queue (VECIN -> VECOUT), correct except the leak
    Io io(a, out);
    TPipe pipe;
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 2, 256);  // RULE queue_pairing
    LocalTensor<float> x = q.AllocTensor<float>();
    DataCopy(x, io.ga, 64);
    q.EnQue(x);
    LocalTensor<float> y = q.DeQue<float>();
    DataCopy(io.go, y, 64);  // ... and never FreeTensor(y)
}

CASE(r_enque_beyond_depth, GM_ADDR a, GM_ADDR out) {
    Io io(a, out);
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 2, 256);
    LocalTensor<float> x = q.AllocTensor<float>();
    LocalTensor<float> y = q.AllocTensor<float>();
    DataCopy(x, io.ga, 64);
    DataCopy(y, io.ga[64], 64);
    q.EnQue(x);
    q.EnQue(y);  // RULE queue_pairing
    LocalTensor<float> u = q.DeQue<float>();
    LocalTensor<float> v = q.DeQue<float>();
    q.FreeTensor(u);
    q.FreeTensor(v);
}

CASE(r_use_after_free, GM_ADDR a, GM_ADDR out) {
    Io io(a, out);
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    TQue<QuePosition::VECOUT, 1> qo;
    pipe.InitBuffer(q, 1, 256);
    pipe.InitBuffer(qo, 1, 256);
    LocalTensor<float> x = q.AllocTensor<float>();
    DataCopy(x, io.ga, 64);
    q.EnQue(x);
    x = q.DeQue<float>();
    q.FreeTensor(x);
    LocalTensor<float> o = qo.AllocTensor<float>();
    Muls(o, x, 2.0f, 64);  // RULE use_after_free
    qo.EnQue(o);
    o = qo.DeQue<float>();
    DataCopy(io.go, o, 64);
    qo.FreeTensor(o);
}

CASE(r_uninitialised_read, GM_ADDR a, GM_ADDR out) {
    Io io(a, out);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b, c;
    pipe.InitBuffer(b, 256);
    pipe.InitBuffer(c, 256);
    LocalTensor<float> x = b.Get<float>(), o = c.Get<float>();
    Duplicate(x, 1.0f, 32);
    Add(o, x, x, 64);  // lanes 32..63 are computed from unwritten bytes: they stay unwritten
    PipeBarrier<PIPE_ALL>();
    DataCopy(io.go, o, 64);  // RULE uninitialised_read
}

// Lanes computed from unwritten bytes stay unwritten and are an error only where they are used: a count rounded
// up to 256 bytes for Compare with only the real length copied out (A-Y-1's Heaviside) is fine; a reduction over
// the unwritten lanes is refused at the reduction. LANES_USED: reduce all 64 lanes instead of the 32 written ones.
template <bool LANES_USED> __aicore__ inline void UnwrittenLanes(GM_ADDR a, GM_ADDR out) {
    Io io(a, out);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b, c, m, t, r;
    pipe.InitBuffer(b, 256);
    pipe.InitBuffer(c, 256);
    pipe.InitBuffer(m, 32);
    pipe.InitBuffer(t, 256);
    pipe.InitBuffer(r, 32);
    LocalTensor<float> x = b.Get<float>(), o = c.Get<float>(), tmp = t.Get<float>(), sum = r.Get<float>();
    LocalTensor<uint8_t> bits = m.Get<uint8_t>();
    DataCopy(x, io.ga, 32);
    PipeBarrier<PIPE_ALL>();
    CompareScalar(bits, x, 0.0f, CMPMODE::LE, 64);
    Duplicate(o, 0.0f, 64);
    Select(o, bits, o, 1.0f, SELMODE::VSEL_TENSOR_SCALAR_MODE, 64);
    Add(o, o, x, 64);
    PipeBarrier<PIPE_ALL>();
    DataCopy(io.go, o, 32);
    if (LANES_USED) {
        ReduceSum(sum, o, tmp, 64);  // the unwritten lanes used: refused here
    } else {
        ReduceSum(sum, o, tmp, 32);
    }
}
CASE(r_unwritten_lanes_unused, GM_ADDR a, GM_ADDR out) { UnwrittenLanes<false>(a, out); }
CASE(r_unwritten_lanes_reduced, GM_ADDR a, GM_ADDR out) { UnwrittenLanes<true>(a, out); }

// The same for DataCopyPad's unspecified padding (linnlh's AsinhGrad computes a whole 32-byte block after an
// unaligned load and copies out the real length): lane-wise work on it says nothing, a reduction over it is warned.
template <bool LANES_USED> __aicore__ inline void PaddedLanes(GM_ADDR a, GM_ADDR out) {
    Io io(a, out);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b, t, r;
    pipe.InitBuffer(b, 256);
    pipe.InitBuffer(t, 256);
    pipe.InitBuffer(r, 32);
    LocalTensor<float> x = b.Get<float>(), tmp = t.Get<float>(), sum = r.Get<float>();
    DataCopyExtParams cp{1, 5 * sizeof(float), 0, 0, 0};  // 20 bytes: 12 bytes of unspecified padding after them
    DataCopyPadExtParams<float> pad{false, 0, 0, 0.0f};
    DataCopyPad(x, io.ga, cp, pad);
    PipeBarrier<PIPE_ALL>();
    Muls(x, x, 2.0f, 8);
    Adds(x, x, 1.0f, 8);
    PipeBarrier<PIPE_ALL>();
    DataCopyPad(io.go, x, cp);
    if (LANES_USED) {
        ReduceSum(sum, x, tmp, 8);  // the padding lanes used: warned here
    } else {
        ReduceSum(sum, x, tmp, 5);
    }
}
CASE(r_padded_lanes_unused, GM_ADDR a, GM_ADDR out) { PaddedLanes<false>(a, out); }
CASE(r_padded_lanes_reduced, GM_ADDR a, GM_ADDR out) { PaddedLanes<true>(a, out); }

CASE(r_gm_oob_write, GM_ADDR a, GM_ADDR out) {
    Io io(a, out);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 256);
    LocalTensor<float> x = b.Get<float>();
    Duplicate(x, 1.0f, 64);
    PipeBarrier<PIPE_ALL>();
    DataCopy(io.go[224], x, 64);  // RULE gm_out_of_bounds
    io.go.SetValue(0, 1.0f);      // never reached
}

CASE(r_gm_oob_read, GM_ADDR a, GM_ADDR out) {
    Io io(a, out);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 256);
    LocalTensor<float> x = b.Get<float>();
    DataCopy(x, io.ga[224], 64);  // RULE gm_out_of_bounds
    PipeBarrier<PIPE_ALL>();
    DataCopy(io.go, x, 64);
}

CASE(r_gm_tensor_size, GM_ADDR a, GM_ADDR out) {  // inside the buffer, beyond the declared size
    GlobalTensor<float> ga, go;
    ga.SetGlobalBuffer((__gm__ float*)a, 128);
    go.SetGlobalBuffer((__gm__ float*)out, 256);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 512);
    LocalTensor<float> x = b.Get<float>();
    DataCopy(x, ga[64], 128);  // RULE gm_out_of_bounds
    PipeBarrier<PIPE_ALL>();
    DataCopy(go, x, 128);
}

CASE(r_block_write_overlap, GM_ADDR a, GM_ADDR out) {  // every block writes the first 64 outputs
    Io io(a, out);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 256);
    LocalTensor<float> x = b.Get<float>();
    DataCopy(x, io.ga[64 * GetBlockIdx()], 64);
    PipeBarrier<PIPE_ALL>();
    DataCopy(io.go, x, 64);  // RULE block_write_overlap
}

CASE(r_block_write_identical, GM_ADDR a, GM_ADDR out) {  // every block writes the same values to the first 64 outputs
    Io io(a, out);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 256);
    LocalTensor<float> x = b.Get<float>();
    DataCopy(x, io.ga, 64);
    PipeBarrier<PIPE_ALL>();
    DataCopy(io.go, x, 64);  // RULE block_write_identical
}

CASE(r_compare_granularity, GM_ADDR a, GM_ADDR out) {
    Io io(a, out);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b, m;
    pipe.InitBuffer(b, 1024);
    pipe.InitBuffer(m, 64);
    LocalTensor<float> x = b.Get<float>();
    LocalTensor<uint8_t> mask = m.Get<uint8_t>();
    DataCopy(x, io.ga, 256);
    PipeBarrier<PIPE_ALL>();
    Compare(mask, x, x, CMPMODE::LT, 100);  // RULE compare_granularity
}

CASE(r_half_overflow, GM_ADDR a, GM_ADDR out) {  // a, out: 64 halves
    GlobalTensor<half> ga, go;
    ga.SetGlobalBuffer((__gm__ half*)a, 64);
    go.SetGlobalBuffer((__gm__ half*)out, 64);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 128);
    LocalTensor<half> x = b.Get<half>();
    DataCopy(x, ga, 64);
    PipeBarrier<PIPE_ALL>();
    Muls(x, x, (half)1000.0f, 64);  // RULE half_overflow
    PipeBarrier<PIPE_ALL>();
    DataCopy(go, x, 64);
}

CASE(r_missing_sync, GM_ADDR a, GM_ADDR out) {
    Io io(a, out);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 256);
    LocalTensor<float> x = b.Get<float>();
    DataCopy(x, io.ga, 64);
    Muls(x, x, 2.0f, 64);  // RULE missing_sync
    event_t e = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_MTE3));
    SetFlag<HardEvent::V_MTE3>(e);
    WaitFlag<HardEvent::V_MTE3>(e);
    DataCopy(io.go, x, 64);
}

CASE(r_wait_without_set, GM_ADDR a, GM_ADDR out) {
    Io io(a, out);
    TPipe pipe;
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID1);  // RULE sync_pairing
}

CASE(r_set_without_wait, GM_ADDR a, GM_ADDR out) {
    Io io(a, out);
    TPipe pipe;
    SetFlag<HardEvent::V_MTE3>(EVENT_ID2);  // RULE sync_pairing
}

CASE(r_invalid_tensor, GM_ADDR a, GM_ADDR out) {
    Io io(a, out);
    TPipe pipe;
    LocalTensor<float> t;
    Muls(t, t, 2.0f, 64);  // RULE invalid_tensor
}

CASE(r_unsupported_dtype, GM_ADDR a, GM_ADDR out) {
    Io io(a, out);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 256);
    LocalTensor<int32_t> x = b.Get<int32_t>();
    Duplicate(x, 1, 64);
    Exp(x, x, 64);  // RULE unsupported_dtype
}

CASE(r_invalid_mask, GM_ADDR a, GM_ADDR out) {
    Io io(a, out);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 256);
    LocalTensor<float> x = b.Get<float>();
    Duplicate(x, 1.0f, 64);
    Add(x, x, x, 100, 1, {1, 1, 1, 8, 8, 8});  // RULE invalid_argument
}

CASE(r_input_written, GM_ADDR a, GM_ADDR out) {
    Io io(a, out);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 256);
    LocalTensor<float> x = b.Get<float>();
    Duplicate(x, 1.0f, 64);
    PipeBarrier<PIPE_ALL>();
    DataCopy(io.ga, x, 64);  // RULE input_written
}

CASE(r_low_precision, GM_ADDR a, GM_ADDR out) {
    Io io(a, out);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 256);
    LocalTensor<float> x = b.Get<float>();
    Duplicate(x, 4.0f, 64);
    Rsqrt(x, x, 64);  // RULE low_precision
}

CASE(r_kernel_assert, GM_ADDR a, GM_ADDR out) {
    Io io(a, out);
    ASSERT(GetBlockNum() > 5);  // RULE kernel_assert
}

struct BigTiling {
    uint32_t n;
    uint32_t tiles;
    float scale;
    uint32_t flags;
};
CASE(r_tiling_size, GM_ADDR a, GM_ADDR out, GM_ADDR tiling) {  // the tiling buffer holds 4 bytes only
    Io io(a, out);
    GET_TILING_DATA_WITH_STRUCT(BigTiling, t, tiling);  // RULE tiling_size
    io.go.SetValue(0, static_cast<float>(t.n));
}

CASE(r_sync_all, GM_ADDR a, GM_ADDR out) {  // block 1 ends without the barrier block 0 waits at: a hang
    Io io(a, out);
    if (GetBlockIdx() == 0) {
        SyncAll();  // RULE sync_all
    }
}

CASE(r_unsupported_api, GM_ADDR a, GM_ADDR out) {
    Io io(a, out);
    TPipe pipe;
    TQue<TPosition::CO2, 1> q;  // CO2 is GM on the 910B: no local buffer (CANN books it in its GM pool)
    pipe.InitBuffer(q, 1, 64);  // a warning (tensor_position): the booking alone is harmless
    LocalTensor<float> t = q.AllocTensor<float>();  // RULE unsupported_api
}

CASE(r_fatal_in_block0_only, GM_ADDR a, GM_ADDR out) {  // block 0 stops, block 1 writes its half
    Io io(a, out);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 512);
    LocalTensor<float> x = b.Get<float>();
    Duplicate(x, 5.0f, 128);
    PipeBarrier<PIPE_ALL>();
    if (GetBlockIdx() == 0) DataCopy(io.go[256], x, 128);  // RULE gm_out_of_bounds
    DataCopy(io.go[128 * GetBlockIdx()], x, 128);
}

CASE(r_crash, GM_ADDR a, GM_ADDR out) {  // a raw pointer write the emulator cannot check
    Io io(a, out);
    volatile float* p = nullptr;
    *p = 1.0f;
}

CASE(r_tbuf_get_too_long, GM_ADDR a, GM_ADDR out) {
    Io io(a, out);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 256);
    LocalTensor<float> x = b.Get<float>(128);  // RULE ub_out_of_bounds
}

CASE(r_free_wrong_queue, GM_ADDR a, GM_ADDR out) {
    Io io(a, out);
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> qa;
    TQue<QuePosition::VECOUT, 1> qb;
    pipe.InitBuffer(qa, 1, 256);
    pipe.InitBuffer(qb, 1, 256);
    LocalTensor<float> x = qa.AllocTensor<float>();
    qb.FreeTensor(x);  // RULE queue_pairing
}

CASE(r_gm_misaligned, GM_ADDR a, GM_ADDR out) {  // a float tensor two bytes into the buffer
    Io io(a, out);
    GlobalTensor<float> g;
    g.SetGlobalBuffer((__gm__ float*)(a + 2), 64);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 256);
    LocalTensor<float> x = b.Get<float>();
    DataCopy(x, g, 64);  // RULE gm_alignment
}

CASE(r_endless_loop, GM_ADDR a, GM_ADDR out) {  // stopped by the max_instructions option
    Io io(a, out);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 256);
    LocalTensor<float> x = b.Get<float>();
    Duplicate(x, 0.0f, 64);
    for (;;) Adds(x, x, 1.0f, 64);
}

// Reward hacks: GM touched through raw pointers instead of DataCopy (the counters would show no work).
CASE(r_gm_raw_read, GM_ADDR a, GM_ADDR out) {  // reads the input with plain pointer arithmetic
    Io io(a, out);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 1024);
    LocalTensor<float> x = b.Get<float>();
    Duplicate(x, 0.0f, 256);  // RULE gm_raw_access
    for (int i = 0; i < 256; ++i) x.SetValue(i, ((__gm__ float*)a)[i]);
    PipeBarrier<PIPE_ALL>();
    DataCopy(io.go, x, 256);
}

CASE(r_gm_raw_write, GM_ADDR a, GM_ADDR out) {  // writes the output through GetPhyAddr()
    Io io(a, out);
    GlobalTensor<float> g;
    g.SetGlobalBuffer((__gm__ float*)out + 8, 248);  // pointer arithmetic for SetGlobalBuffer is fine
    g.SetValue(0, 1.0f);  // RULE gm_raw_access
    __gm__ float* p = g.GetPhyAddr();
    p[1] = 2.0f;
}

CASE(r_tiling_raw_read, GM_ADDR a, GM_ADDR out, GM_ADDR tiling) {  // CopyTiling of Ascend's kernel-launch samples
    Io io(a, out);
    BigTiling t;
    uint32_t* dst = reinterpret_cast<uint32_t*>(&t);
    auto src = reinterpret_cast<__gm__ uint32_t*>(tiling);
    for (size_t i = 0; i < sizeof(BigTiling) / sizeof(uint32_t); ++i) dst[i] = src[i];
    io.go.SetValue(0, static_cast<float>(t.tiles) * t.scale);
}

CASE(r_tiling_raw_write, GM_ADDR a, GM_ADDR out, GM_ADDR tiling) {  // raw pointers may read the tiling, not write it
    Io io(a, out);
    io.go.SetValue(0, 1.0f);
    reinterpret_cast<__gm__ uint32_t*>(tiling)[1] = 5;
}

CASE(r_gm_raw_memcpy, GM_ADDR a, GM_ADDR out) {  // a raw memcpy between GM buffers (in libc)
    Io io(a, out);
    io.ga.GetValue(0);  // RULE gm_raw_access
    std::memcpy((void*)out, (const void*)a, 1024);
}
