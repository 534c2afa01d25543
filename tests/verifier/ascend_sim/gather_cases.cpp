// Gather/Scatter/GatherMask/Transpose tests (direct launch). Arguments: prm (int32 in GM), then inputs, then
// the output; inputs are loaded with DataCopyPad into TBufs, results go out with DataCopyPad.
using namespace AscendC;

__aicore__ inline int32_t P(GM_ADDR prm, int i) {
    GlobalTensor<int32_t> g;
    g.SetGlobalBuffer((__gm__ int32_t*)prm);
    return g.GetValue(i);
}
template <typename T> __aicore__ inline void Load(const LocalTensor<T>& dst, GM_ADDR src, int32_t n) {
    GlobalTensor<T> g;
    g.SetGlobalBuffer((__gm__ T*)src, n);
    DataCopyPad(dst, g, DataCopyExtParams(1, n * sizeof(T), 0, 0, 0), DataCopyPadExtParams<T>(false, 0, 0, T(0)));
}
template <typename T> __aicore__ inline void Store(GM_ADDR dst, const LocalTensor<T>& src, int32_t n) {
    GlobalTensor<T> g;
    g.SetGlobalBuffer((__gm__ T*)dst, n);
    DataCopyPad(g, src, DataCopyExtParams(1, n * sizeof(T), 0, 0, 0));
}

// out[i] = x[(base + off[i]) / sizeof(T)]; prm: n (src elements), count, base
template <typename T> __aicore__ inline void GatherCase(GM_ADDR prm, GM_ADDR x, GM_ADDR off, GM_ADDR out) {
    int32_t n = P(prm, 0), count = P(prm, 1), base = P(prm, 2);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bo, by;
    pipe.InitBuffer(bx, n * sizeof(T) + 32);
    pipe.InitBuffer(bo, count * 4 + 32);
    pipe.InitBuffer(by, count * sizeof(T) + 32);
    LocalTensor<T> lx = bx.Get<T>();
    LocalTensor<uint32_t> lo = bo.Get<uint32_t>();
    LocalTensor<T> ly = by.Get<T>();
    Load(lx, x, n);
    Load(lo, off, count);
    PipeBarrier<PIPE_ALL>();
    Gather(ly, lx, lo, static_cast<uint32_t>(base), static_cast<uint32_t>(count));
    PipeBarrier<PIPE_ALL>();
    Store(out, ly, count);
}
CASE(gather_f32, GM_ADDR prm, GM_ADDR x, GM_ADDR off, GM_ADDR out) { GatherCase<float>(prm, x, off, out); }
CASE(gather_f16, GM_ADDR prm, GM_ADDR x, GM_ADDR off, GM_ADDR out) { GatherCase<half>(prm, x, off, out); }

// out (n elements, preloaded with y) gets out[(base + off[i]) / sizeof(T)] = x[i]; prm: n, count, base
CASE(scatter_f32, GM_ADDR prm, GM_ADDR x, GM_ADDR off, GM_ADDR y, GM_ADDR out) {
    int32_t n = P(prm, 0), count = P(prm, 1), base = P(prm, 2);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bo, by;
    pipe.InitBuffer(bx, count * 4 + 32);
    pipe.InitBuffer(bo, count * 4 + 32);
    pipe.InitBuffer(by, n * 4 + 32);
    LocalTensor<float> lx = bx.Get<float>();
    LocalTensor<uint32_t> lo = bo.Get<uint32_t>();
    LocalTensor<float> ly = by.Get<float>();
    Load(lx, x, count);
    Load(lo, off, count);
    Load(ly, y, n);
    PipeBarrier<PIPE_ALL>();
    Scatter(ly, lx, lo, static_cast<uint32_t>(base), static_cast<uint32_t>(count));
    PipeBarrier<PIPE_ALL>();
    Store(out, ly, n);
}

// GatherMask; prm: n, pattern (0: the tensor pat, else built-in 1-7), reduceMode, mask, repeatTimes; out[0..n) gets
// the packed elements, out's last int32 slot... no: the count goes to cnt[0]
template <typename T, typename U>
__aicore__ inline void GatherMaskCase(GM_ADDR prm, GM_ADDR x, GM_ADDR pat, GM_ADDR out, GM_ADDR cnt) {
    int32_t n = P(prm, 0), builtin = P(prm, 1), reduce = P(prm, 2), mask = P(prm, 3), reps = P(prm, 4);
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bp, by, bc;
    pipe.InitBuffer(bx, n * sizeof(T) + 32);
    pipe.InitBuffer(bp, 256);
    pipe.InitBuffer(by, n * sizeof(T) + 32);
    pipe.InitBuffer(bc, 32);
    LocalTensor<T> lx = bx.Get<T>();
    LocalTensor<U> lp = bp.Get<U>();
    LocalTensor<T> ly = by.Get<T>();
    LocalTensor<int32_t> lc = bc.Get<int32_t>();
    Load(lx, x, n);
    Load(lp, pat, 256 / sizeof(U));
    Duplicate(ly, T(0), n);
    PipeBarrier<PIPE_ALL>();
    uint64_t rsvd = 0;
    GatherMaskParams gp(1, static_cast<uint16_t>(reps), 8, 8);
    if (builtin)
        GatherMask(ly, lx, static_cast<uint8_t>(builtin), reduce != 0, static_cast<uint32_t>(mask), gp, rsvd);
    else
        GatherMask(ly, lx, lp, reduce != 0, static_cast<uint32_t>(mask), gp, rsvd);
    PipeBarrier<PIPE_ALL>();
    lc.SetValue(0, static_cast<int32_t>(rsvd));
    PipeBarrier<PIPE_ALL>();
    Store(out, ly, n);
    Store(cnt, lc, 1);
}
CASE(gmask_f32, GM_ADDR prm, GM_ADDR x, GM_ADDR pat, GM_ADDR out, GM_ADDR cnt) {
    GatherMaskCase<float, uint32_t>(prm, x, pat, out, cnt);
}
CASE(gmask_f16, GM_ADDR prm, GM_ADDR x, GM_ADDR pat, GM_ADDR out, GM_ADDR cnt) {
    GatherMaskCase<half, uint16_t>(prm, x, pat, out, cnt);
}

CASE(transpose_f16, GM_ADDR prm, GM_ADDR x, GM_ADDR out) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, by;
    pipe.InitBuffer(bx, 512);
    pipe.InitBuffer(by, 512);
    LocalTensor<half> lx = bx.Get<half>();
    LocalTensor<half> ly = by.Get<half>();
    Load(lx, x, 256);
    PipeBarrier<PIPE_ALL>();
    Transpose(ly, lx);
    PipeBarrier<PIPE_ALL>();
    Store(out, ly, 256);
}

// ---- misuse ----------------------------------------------------------------------------------------------
CASE(gather_misaligned, GM_ADDR prm, GM_ADDR x, GM_ADDR off, GM_ADDR out) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bo, by;
    pipe.InitBuffer(bx, 256);
    pipe.InitBuffer(bo, 32);
    pipe.InitBuffer(by, 32);
    LocalTensor<float> lx = bx.Get<float>();
    LocalTensor<uint32_t> lo = bo.Get<uint32_t>();
    LocalTensor<float> ly = by.Get<float>();
    Duplicate(lx, 1.0f, 64);
    Duplicate(lo, 6u, 8);  // byte 6 of a float tensor
    PipeBarrier<PIPE_ALL>();
    Gather(ly, lx, lo, 0, 8);  // RULE invalid_argument
}
CASE(gather_out_of_src, GM_ADDR prm, GM_ADDR x, GM_ADDR off, GM_ADDR out) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, bo, by;
    pipe.InitBuffer(bx, 256);
    pipe.InitBuffer(bo, 32);
    pipe.InitBuffer(by, 32);
    LocalTensor<float> lx = bx.Get<float>();
    LocalTensor<uint32_t> lo = bo.Get<uint32_t>();
    LocalTensor<float> ly = by.Get<float>();
    Duplicate(lx, 1.0f, 64);
    Duplicate(lo, 256u, 8);  // one past the 256-byte source
    PipeBarrier<PIPE_ALL>();
    Gather(ly, lx, lo, 0, 8);  // RULE ub_out_of_bounds
}
