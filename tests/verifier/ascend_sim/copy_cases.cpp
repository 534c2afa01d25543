// Data movement and fill forms community operators call (evk_sim/copy_api.h, issue 29), direct launch.
// Arguments: the input(s), then the output. Each case is the documented call as a community kernel writes it.
using namespace AscendC;

// The doc's example (DataCopy（GM与UB切片数据搬运）.md): from a 3 x 87 float source, rows 0..2 a row apart (rows 0
// and 2), and in each row the elements 16..70 as 2 slices of 3 blocks (24 floats) 7 elements apart; into a 2 x 48
// destination packed; then the 2 x 48 tile back to GM as it is (same slice info on both sides).
CASE(slice_copy_f32, GM_ADDR x, GM_ADDR out) {
    GlobalTensor<float> xg, og;
    xg.SetGlobalBuffer((__gm__ float*)x, 3 * 87);
    og.SetGlobalBuffer((__gm__ float*)out, 2 * 48);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 2 * 48 * sizeof(float));
    LocalTensor<float> t = b.Get<float>();
    SliceInfo src[] = {{16, 70, 7, 3, 87}, {0, 2, 1, 1, 3}};
    SliceInfo dst[] = {{0, 47, 0, 3, 48}, {0, 1, 0, 1, 2}};
    DataCopy(t, xg, dst, src, 2);
    SetFlag<HardEvent::MTE2_MTE3>(0);
    WaitFlag<HardEvent::MTE2_MTE3>(0);
    DataCopy(og, t, dst, dst, 2);
}

// A slice whose burstLen does not match the span: refused with the documented constraint.
CASE(slice_copy_bad_span, GM_ADDR x, GM_ADDR out) {
    GlobalTensor<float> xg;
    xg.SetGlobalBuffer((__gm__ float*)x, 3 * 87);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 2 * 48 * sizeof(float));
    LocalTensor<float> t = b.Get<float>();
    SliceInfo src[] = {{16, 69, 7, 3, 87}, {0, 2, 1, 1, 3}};
    SliceInfo dst[] = {{0, 47, 0, 3, 48}, {0, 1, 0, 1, 2}};
    DataCopy(t, xg, dst, src, 2);  // RULE invalid_argument
}

// int16 shifts: (x << 8) >> 8 sign-extends the low byte (KiaraStark's Div does this for int8 results).
CASE(shift_i16, GM_ADDR x, GM_ADDR out) {
    GlobalTensor<int16_t> xg, og;
    xg.SetGlobalBuffer((__gm__ int16_t*)x, 128);
    og.SetGlobalBuffer((__gm__ int16_t*)out, 256);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b, c;
    pipe.InitBuffer(b, 128 * sizeof(int16_t));
    pipe.InitBuffer(c, 128 * sizeof(int16_t));
    LocalTensor<int16_t> t = b.Get<int16_t>();
    LocalTensor<int16_t> u = c.Get<int16_t>();
    DataCopy(t, xg, 128);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    ShiftLeft(u, t, int16_t(8), 128);
    ShiftRight(u, u, int16_t(8), 128);
    ShiftRight(t, t, int16_t(3), 128);  // arithmetic for a signed type
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(og, u, 128);
    DataCopy(og[128], t, 128);
}
CASE(shift_u16, GM_ADDR x, GM_ADDR out) {
    GlobalTensor<uint16_t> xg, og;
    xg.SetGlobalBuffer((__gm__ uint16_t*)x, 128);
    og.SetGlobalBuffer((__gm__ uint16_t*)out, 128);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 128 * sizeof(uint16_t));
    LocalTensor<uint16_t> t = b.Get<uint16_t>();
    DataCopy(t, xg, 128);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    ShiftRight(t, t, uint16_t(3), 128);  // logical for an unsigned type
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(og, t, 128);
}
CASE(shift_f32, GM_ADDR x, GM_ADDR out) {  // not a documented type
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 64 * sizeof(float));
    LocalTensor<float> t = b.Get<float>();
    Duplicate(t, 1.0f, 64);
    ShiftLeft(t, t, 1.0f, 64);  // RULE unsupported_dtype
}

// Copy, mask form, as KiaraStark's ReplicationPad2d calls it: mask 64 (all b32 lanes), 2 repeats, {1, 1, 8, 8}.
CASE(copy_mask_f32, GM_ADDR x, GM_ADDR out) {
    GlobalTensor<float> xg, og;
    xg.SetGlobalBuffer((__gm__ float*)x, 128);
    og.SetGlobalBuffer((__gm__ float*)out, 128);
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> qi;
    TQue<QuePosition::VECOUT, 1> qo;
    pipe.InitBuffer(qi, 1, 128 * sizeof(float));
    pipe.InitBuffer(qo, 1, 128 * sizeof(float));
    LocalTensor<float> a = qi.AllocTensor<float>();
    DataCopy(a, xg, 128);
    qi.EnQue(a);
    a = qi.DeQue<float>();
    LocalTensor<float> y = qo.AllocTensor<float>();
    Copy(y, a, 64, 2, {1, 1, 8, 8});
    qo.EnQue(y);
    qi.FreeTensor(a);
    y = qo.DeQue<float>();
    DataCopy(og, y, 128);
    qo.FreeTensor(y);
}
// Copy with a half mask leaves the other lanes of y unwritten: copying them out reads unwritten UB.
CASE(copy_mask_half_lanes, GM_ADDR x, GM_ADDR out) {
    GlobalTensor<float> xg, og;
    xg.SetGlobalBuffer((__gm__ float*)x, 64);
    og.SetGlobalBuffer((__gm__ float*)out, 64);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b, c;
    pipe.InitBuffer(b, 64 * sizeof(float));
    pipe.InitBuffer(c, 64 * sizeof(float));
    LocalTensor<float> a = b.Get<float>();
    LocalTensor<float> y = c.Get<float>();
    DataCopy(a, xg, 64);
    PipeBarrier<PIPE_ALL>();
    Copy(y, a, 32, 1, {1, 1, 8, 8});
    PipeBarrier<PIPE_ALL>();
    DataCopy(og, y, 64);  // RULE uninitialised_read
}

// CreateVecIndex (count form) and the TBuf queue interface (AllocTensor/EnQue/DeQue/FreeTensor on a TBuf).
CASE(vec_index_i32, GM_ADDR x, GM_ADDR out) {
    GlobalTensor<int32_t> og;
    og.SetGlobalBuffer((__gm__ int32_t*)out, 64);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 64 * sizeof(int32_t));
    LocalTensor<int32_t> t = b.AllocTensor<int32_t>();
    CreateVecIndex(t, int32_t(5), 64);
    b.EnQue(t);
    t = b.DeQue<int32_t>();
    PipeBarrier<PIPE_ALL>();
    DataCopy(og, t, 64);
    b.FreeTensor(t);
}
CASE(vec_index_f16, GM_ADDR x, GM_ADDR out) {
    GlobalTensor<half> og;
    og.SetGlobalBuffer((__gm__ half*)out, 128);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 128 * sizeof(half));
    LocalTensor<half> t = b.Get<half>();
    CreateVecIndex(t, half(-3.0f), 128);
    PipeBarrier<PIPE_ALL>();
    DataCopy(og, t, 128);
}

// DataCopy with DataCopyEnhancedParams: the normal block mode is the plain copy; the matrix mode is refused.
CASE(enhanced_normal, GM_ADDR x, GM_ADDR out) {
    GlobalTensor<float> xg, og;
    xg.SetGlobalBuffer((__gm__ float*)x, 64);
    og.SetGlobalBuffer((__gm__ float*)out, 64);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 64 * sizeof(float));
    LocalTensor<float> t = b.Get<float>();
    DataCopyEnhancedParams e;
    DataCopy(t, xg, DataCopyParams(1, 8, 0, 0), e);
    PipeBarrier<PIPE_ALL>();
    DataCopy(og, t, DataCopyParams(1, 8, 0, 0), e);
    // the cache maintenance community kernels call after scalar GM writes: nothing to flush here
    DataCacheCleanAndInvalid<float, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(og);
    DataCacheCleanAndInvalid<float, CacheLine::ENTIRE_DATA_CACHE>(og);
    DataCacheCleanAndInvalid<float, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_UB>(t);
}
CASE(enhanced_matrix, GM_ADDR x, GM_ADDR out) {
    GlobalTensor<float> xg;
    xg.SetGlobalBuffer((__gm__ float*)x, 64);
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 64 * sizeof(float));
    LocalTensor<float> t = b.Get<float>();
    DataCopyEnhancedParams e;
    e.blockMode = BlockMode::BLOCK_MODE_MATRIX;
    DataCopy(t, xg, DataCopyParams(1, 8, 0, 0), e);  // RULE unsupported_api
}

// GetUserWorkspace / GetSysWorkSpacePtr without lib/matmul_intf.h (CANN's basic API declares them).
CASE(user_workspace, GM_ADDR x, GM_ADDR out) {
    GM_ADDR w = GetUserWorkspace(out);
    GlobalTensor<float> og;
    og.SetGlobalBuffer((__gm__ float*)w, 8);
    og.SetValue(0, GetSysWorkSpacePtr() == nullptr ? 1.0f : 2.0f);
}

// Scalar code calling abs on floats unqualified, as device code does (HWXROS/AscendcS7's PdistGrad skips pairs whose
// |gradient| < 1e-12): the float abs, not C's int abs of a truncated value.
CASE(scalar_abs_f32, GM_ADDR x, GM_ADDR out) {
    GlobalTensor<float> xg, og;
    xg.SetGlobalBuffer((__gm__ float*)x, 8);
    og.SetGlobalBuffer((__gm__ float*)out, 8);
    for (int i = 0; i < 8; ++i) og.SetValue(i, abs(xg.GetValue(i)));
}
