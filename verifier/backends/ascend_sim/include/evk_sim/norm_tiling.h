// EvoKernel Ascend C emulator: the tiling structures of the high-level SoftMax / SimpleSoftMax, LayerNorm and
// RmsNorm APIs (host and kernel side) and, on the host, their tiling functions (GetSoftMaxMaxTmpSize,
// GetSoftMaxMinTmpSize, SoftMaxTilingFunc, GetLayerNormMaxMinTmpSize, GetLayerNormNDTilingInfo,
// GetRmsNormMaxMinTmpSize, GetRmsNormTilingInfo).
//
// The structs carry the field names and order CANN's documentation gives (SoftMaxTiling, LayerNormTiling,
// LayerNormSeparateTiling, RmsNormTiling), with set_/get_ accessors, so they work as a
// TILING_DATA_FIELD_DEF_STRUCT member (optiling::X), as AscendC::tiling::X and as the unqualified X.
//
// The tiling algorithm and the temporary-space sizes are OUR OWN model (documented here and in
// docs/ascend-sim.md "Normalisation APIs"), not CANN's numbers: each API works on blocks of whole rows, and one row
// needs `row bytes` of float scratch:
//   SoftMax/SimpleSoftMax  K*4 + 64          (a float copy of the row, the max and sum blocks of 32 bytes)
//   LayerNorm (both forms) 3*H*4 + 64        (three float rows: x-mean, its square, the result; mean/var blocks)
//   RmsNorm                H*4 + 32          (the float row of squares; one 32-byte sum block)
// The minimum temporary space is one row, the maximum all rows; a tiling function given `n` bytes processes
// floor(n / row bytes) rows per pass (at most all), and the kernel API checks a sharedTmpBuffer against that.
#ifndef EVK_SIM_NORM_TILING_H
#define EVK_SIM_NORM_TILING_H

#include <cstddef>
#include <cstdint>
#include <cstdio>

namespace evk_sim {
void tiling_save(const void* obj, size_t size, void* buf, size_t cap, const char* cls);
}

#define EVK_SOFTMAX_TILING_FIELDS(X, F)                                                                      \
    X(srcM) X(srcK) X(srcSize) X(outMaxM) X(outMaxK) X(outMaxSize) X(splitM) X(splitK) X(splitSize) X(reduceM) \
    X(reduceK) X(reduceSize) X(rangeM) X(tailM) X(tailSplitSize) X(tailReduceSize)
#define EVK_LAYERNORM_TILING_FIELDS(X, F)                                                                    \
    X(bLength) X(sLength) X(hLength) X(originalHLength) X(inputXSize) X(meanVarSize) X(numberOfTmpBuf)       \
    X(meanTmpTensorPos) X(meanTmpTensorSize) X(varianceTmpTensorPos) X(varianceTmpTensorSize) X(tmpBufSize)  \
    X(oneTmpSize) X(firstTmpStartPos) X(secondTmpStartPos) X(thirdTmpStartPos) X(loopRound)                 \
    X(inputRoundSize) X(inputTailSize) X(inputTailPos) X(meanVarRoundSize) X(meanVarTailSize)               \
    X(meanVarTailPos) X(bshCurLength) X(bsCurLength) F(lastDimValueBack)
#define EVK_LAYERNORM_SEP_TILING_FIELDS(X, F)                                                                \
    X(aLength) X(rLength) X(halfAddRepeatTimes) X(rHeadLength) F(k2Rec) F(k2RRec) X(inputXSize)              \
    X(meanVarSize) X(numberOfTmpBuf) X(varianceTmpTensorPos) X(varianceTmpTensorSize) X(tmpBufSize)         \
    X(oneTmpSize) X(firstTmpStartPos) X(secondTmpStartPos) X(thirdTmpStartPos) X(loopRound)                 \
    X(inputRoundSize) X(inputTailSize) X(inputTailPos) X(meanVarRoundSize) X(meanVarTailSize)               \
    X(meanVarTailPos) X(arCurLength) X(aCurLength) F(rValueBack)
#define EVK_RMSNORM_TILING_FIELDS(X, F)                                                                      \
    X(bLength) X(sLength) X(hLength) X(originalHLength) F(reciprocalOfHLength) X(mainBshLength)              \
    X(mainBsLength) X(mainBsLengthAlign) X(loopRound) X(inputTailPos) X(tailBshLength) X(tailBsLength)

#define EVK_NT_U32(f) uint32_t f = 0;
#define EVK_NT_F32(f) float f = 0;
#define EVK_NT_U32_ACC(f)                 \
    void set_##f(uint32_t v) { f = v; }   \
    uint32_t get_##f() const { return f; }
#define EVK_NT_F32_ACC(f)                 \
    void set_##f(float v) { f = v; }      \
    float get_##f() const { return f; }
#ifndef EVK_SIM_KERNEL
#define EVK_NT_SAVE(NAME) \
    void SaveToBuffer(void* buf, size_t cap) const { ::evk_sim::tiling_save(this, sizeof(*this), buf, cap, #NAME); }
#else
#define EVK_NT_SAVE(NAME)
#endif
#define EVK_NT_STRUCT(NAME, FIELDS)                                                       \
    struct NAME {                                                                         \
        FIELDS(EVK_NT_U32, EVK_NT_F32)                                                    \
        FIELDS(EVK_NT_U32_ACC, EVK_NT_F32_ACC)                                            \
        static constexpr const char* EvkClassName() { return #NAME; }                     \
        EVK_NT_SAVE(NAME)                                                                 \
        size_t GetDataSize() const { return sizeof(*this); }                              \
    };

namespace AscendC {
namespace tiling {
EVK_NT_STRUCT(SoftMaxTiling, EVK_SOFTMAX_TILING_FIELDS)
EVK_NT_STRUCT(LayerNormTiling, EVK_LAYERNORM_TILING_FIELDS)
EVK_NT_STRUCT(LayerNormSeparateTiling, EVK_LAYERNORM_SEP_TILING_FIELDS)
EVK_NT_STRUCT(RmsNormTiling, EVK_RMSNORM_TILING_FIELDS)
static_assert(sizeof(SoftMaxTiling) == 16 * 4, "SoftMaxTiling: 16 uint32 fields");
// LogSoftMaxTiling: its fields are not documented; assumed to be SoftMaxTiling's (the same tiling functions' shape)
using LogSoftMaxTiling = SoftMaxTiling;
static_assert(sizeof(LayerNormTiling) == 26 * 4, "LayerNormTiling: 26 fields");
static_assert(sizeof(LayerNormSeparateTiling) == 26 * 4, "LayerNormSeparateTiling: 26 fields");
static_assert(sizeof(RmsNormTiling) == 12 * 4, "RmsNormTiling: 12 fields");
}  // namespace tiling

namespace evk_norm {
// the row-bytes model above (shared by the host tiling functions and the kernel checks)
inline uint64_t softmax_row_bytes(uint64_t k) { return k * 4 + 64; }
inline uint64_t layernorm_row_bytes(uint64_t h) { return 3 * h * 4 + 64; }
inline uint64_t rmsnorm_row_bytes(uint64_t h) { return h * 4 + 32; }

// SoftMax tiling for m rows of k elements with `rows` rows per pass (the kernel recomputes it the same way)
inline void softmax_fill(uint32_t m, uint32_t k, uint32_t dataTypeSize, uint32_t rows,
                         ::AscendC::tiling::SoftMaxTiling& t) {
    const uint32_t blk = dataTypeSize ? 32 / dataTypeSize : 8;
    t = ::AscendC::tiling::SoftMaxTiling{};
    t.srcM = m, t.srcK = k, t.srcSize = m * k;
    t.outMaxM = m, t.outMaxK = blk, t.outMaxSize = m * blk;
    t.splitM = rows, t.splitK = k, t.splitSize = rows * k;
    t.reduceM = rows, t.reduceK = 8, t.reduceSize = rows * 8;  // float reduce blocks
    t.rangeM = rows ? m / rows : 0, t.tailM = rows ? m % rows : 0;
    t.tailSplitSize = t.tailM * k, t.tailReduceSize = t.tailM * 8;
}
inline uint32_t rows_for(uint64_t bytes, uint64_t row_bytes, uint32_t rows) {
    const uint64_t r = row_bytes ? bytes / row_bytes : 0;
    return static_cast<uint32_t>(r < rows ? r : rows);
}
}  // namespace evk_norm
}  // namespace AscendC

namespace optiling {
using SoftMaxTiling = ::AscendC::tiling::SoftMaxTiling;
using LogSoftMaxTiling = ::AscendC::tiling::LogSoftMaxTiling;
using LayerNormTiling = ::AscendC::tiling::LayerNormTiling;
using LayerNormSeparateTiling = ::AscendC::tiling::LayerNormSeparateTiling;
using RmsNormTiling = ::AscendC::tiling::RmsNormTiling;
}  // namespace optiling
using SoftMaxTiling = ::AscendC::tiling::SoftMaxTiling;
using LogSoftMaxTiling = ::AscendC::tiling::LogSoftMaxTiling;
using LayerNormTiling = ::AscendC::tiling::LayerNormTiling;
using LayerNormSeparateTiling = ::AscendC::tiling::LayerNormSeparateTiling;
using RmsNormTiling = ::AscendC::tiling::RmsNormTiling;

#undef EVK_NT_STRUCT
#undef EVK_NT_SAVE
#undef EVK_NT_U32
#undef EVK_NT_F32
#undef EVK_NT_U32_ACC
#undef EVK_NT_F32_ACC

// The tiling functions are host code, but a tiling header may define its own host helpers that call them, and
// the emulator's kernel translation unit includes the tiling header (CANN's kernel build reads only the tiling
// data's definition from it); so they compile on both sides (pure arithmetic on the structs above).
#include <vector>
#ifndef EVK_SIM_KERNEL
#include "evk_sim/host.h"
#endif

// ge::Shape (graph/tensor.h): the shape type of the high-level APIs' host tiling functions
#ifndef EVK_SIM_GE_SHAPE
#define EVK_SIM_GE_SHAPE
namespace ge {
class Shape {
public:
    Shape() = default;
    explicit Shape(const std::vector<int64_t>& dims) : dims_(dims) {}
    size_t GetDimNum() const { return dims_.size(); }
    int64_t GetDim(size_t i) const { return i < dims_.size() ? dims_[i] : 0; }
    std::vector<int64_t> GetDims() const { return dims_; }
    int64_t GetShapeSize() const {
        if (dims_.empty()) return 0;
        int64_t n = 1;
        for (int64_t d : dims_) n *= d;
        return n;
    }
    void SetDimNum(size_t n) { dims_.resize(n, 0); }
    void SetDim(size_t i, int64_t v) {
        if (i < dims_.size()) dims_[i] = v;
    }

private:
    std::vector<int64_t> dims_;
};
}  // namespace ge
#endif

namespace AscendC {
namespace evk_norm {
// the product of all dims but the last, and the last
inline void split_shape(const ge::Shape& s, uint64_t& m, uint64_t& k) {
    const size_t n = s.GetDimNum();
    m = 1, k = n ? static_cast<uint64_t>(s.GetDim(n - 1)) : 0;
    for (size_t i = 0; i + 1 < n; ++i) m *= static_cast<uint64_t>(s.GetDim(i));
}
inline uint32_t clamp32(uint64_t v) { return v > 0xffffffffull ? 0xffffffffu : static_cast<uint32_t>(v); }
}  // namespace evk_norm

// ---- SoftMax / SimpleSoftMax ----
inline uint32_t GetSoftMaxMinTmpSize(const ge::Shape& srcShape, const uint32_t dataTypeSize, const bool isReuseSource) {
    (void)dataTypeSize, (void)isReuseSource;
    uint64_t m, k;
    evk_norm::split_shape(srcShape, m, k);
    return m && k ? evk_norm::clamp32(evk_norm::softmax_row_bytes(k)) : 0;
}
inline uint32_t GetSoftMaxMaxTmpSize(const ge::Shape& srcShape, const uint32_t dataTypeSize, const bool isReuseSource) {
    (void)dataTypeSize, (void)isReuseSource;
    uint64_t m, k;
    evk_norm::split_shape(srcShape, m, k);
    return m && k ? evk_norm::clamp32(m * evk_norm::softmax_row_bytes(k)) : 0;
}
inline void SoftMaxTilingFunc(const ge::Shape& srcShape, const uint32_t dataTypeSize, const uint32_t localWorkSpaceSize,
                              ::AscendC::tiling::SoftMaxTiling& softmaxTiling) {
    uint64_t m, k;
    evk_norm::split_shape(srcShape, m, k);
    const uint32_t rows = evk_norm::rows_for(localWorkSpaceSize, evk_norm::softmax_row_bytes(k), evk_norm::clamp32(m));
    if (rows == 0 && m && k)
        std::fprintf(stderr, "SoftMaxTilingFunc: localWorkSpaceSize %u is below GetSoftMaxMinTmpSize (%llu bytes)\n",
                     localWorkSpaceSize, static_cast<unsigned long long>(evk_norm::softmax_row_bytes(k)));
    evk_norm::softmax_fill(evk_norm::clamp32(m), evk_norm::clamp32(k), dataTypeSize, rows, softmaxTiling);
}
// LogSoftMax: the same model (a float row, the max and sum blocks)
inline uint32_t GetLogSoftMaxMinTmpSize(const ge::Shape srcShape, const uint32_t dataTypeSize, const bool isReuseSource) {
    return GetSoftMaxMinTmpSize(srcShape, dataTypeSize, isReuseSource);
}
inline uint32_t GetLogSoftMaxMaxTmpSize(const ge::Shape srcShape, const uint32_t dataTypeSize, const bool isReuseSource) {
    return GetSoftMaxMaxTmpSize(srcShape, dataTypeSize, isReuseSource);
}
inline void LogSoftMaxTilingFunc(const ge::Shape srcShape, const uint32_t dataTypeSize, const uint32_t localWorkSpaceSize,
                                 ::AscendC::tiling::LogSoftMaxTiling& softmaxTiling) {
    SoftMaxTilingFunc(srcShape, dataTypeSize, localWorkSpaceSize, softmaxTiling);
}
inline bool IsBasicBlockInSoftMax(::AscendC::tiling::SoftMaxTiling& tiling, const uint32_t dataTypeSize = 2) {
    const uint32_t lanes = 256 / (dataTypeSize ? dataTypeSize : 2);
    return tiling.splitM % 8 == 0 && tiling.splitM > 0 && tiling.srcK % 64 == 0 && tiling.srcK >= lanes &&
           tiling.srcK < 2048;
}

// ---- LayerNorm, the [B, S, H] form (mean and variance): srcShape {B, S, storageH, originH} ----
inline void GetLayerNormMaxMinTmpSize(const ge::Shape& srcShape, const uint32_t typeSize, const bool isReuseSource,
                                      uint32_t& maxValue, uint32_t& minValue) {
    (void)typeSize, (void)isReuseSource;
    const size_t n = srcShape.GetDimNum();
    const uint64_t b = n > 0 ? srcShape.GetDim(0) : 0, s = n > 1 ? srcShape.GetDim(1) : 0,
                   h = n > 2 ? srcShape.GetDim(2) : 0;
    minValue = b && s && h ? evk_norm::clamp32(evk_norm::layernorm_row_bytes(h)) : 0;
    maxValue = evk_norm::clamp32(b * s * evk_norm::layernorm_row_bytes(h));
}
inline void GetLayerNormNDTilingInfo(const ge::Shape& srcShape, const uint32_t stackBufferSize, const uint32_t typeSize,
                                     const bool isReuseSource, ::AscendC::tiling::LayerNormTiling& tiling) {
    (void)typeSize, (void)isReuseSource;
    const size_t n = srcShape.GetDimNum();
    const uint32_t b = n > 0 ? srcShape.GetDim(0) : 0, s = n > 1 ? srcShape.GetDim(1) : 0,
                   h = n > 2 ? srcShape.GetDim(2) : 0, oh = n > 3 ? srcShape.GetDim(3) : h;
    const uint32_t bs = b * s;
    const uint32_t rows = evk_norm::rows_for(stackBufferSize, evk_norm::layernorm_row_bytes(h), bs);
    if (rows == 0 && bs && h)
        std::fprintf(stderr, "GetLayerNormNDTilingInfo: stackBufferSize %u is below the minimum (%llu bytes)\n",
                     stackBufferSize, static_cast<unsigned long long>(evk_norm::layernorm_row_bytes(h)));
    tiling = ::AscendC::tiling::LayerNormTiling{};
    tiling.bLength = b, tiling.sLength = s, tiling.hLength = h, tiling.originalHLength = oh;
    tiling.inputXSize = bs * h, tiling.meanVarSize = bs;
    tiling.numberOfTmpBuf = 3;
    tiling.tmpBufSize = stackBufferSize / 4;
    tiling.oneTmpSize = rows * h;
    tiling.firstTmpStartPos = 0, tiling.secondTmpStartPos = rows * h, tiling.thirdTmpStartPos = 2 * rows * h;
    tiling.meanTmpTensorPos = 3 * rows * h, tiling.meanTmpTensorSize = rows * 8;
    tiling.varianceTmpTensorPos = 3 * rows * h + rows * 8, tiling.varianceTmpTensorSize = rows * 8;
    tiling.loopRound = rows ? bs / rows : 0;
    tiling.inputRoundSize = rows * h, tiling.inputTailSize = rows ? (bs % rows) * h : 0;
    tiling.inputTailPos = tiling.loopRound * tiling.inputRoundSize;
    tiling.meanVarRoundSize = rows, tiling.meanVarTailSize = rows ? bs % rows : 0;
    tiling.meanVarTailPos = tiling.loopRound * rows;
    tiling.bshCurLength = rows * h, tiling.bsCurLength = rows;
    tiling.lastDimValueBack = oh ? 1.0f / static_cast<float>(oh) : 0.0f;
}
inline void GetLayerNormNDTillingInfo(const ge::Shape& srcShape, const uint32_t stackBufferSize, const uint32_t typeSize,
                                      const bool isReuseSource, ::AscendC::tiling::LayerNormTiling& tilling) {
    GetLayerNormNDTilingInfo(srcShape, stackBufferSize, typeSize, isReuseSource, tilling);
}

// ---- LayerNorm, the [A, R] form (mean and rstd): srcShape {A, R} ----
inline void GetLayerNormMaxMinTmpSize(const ge::Shape& srcShape, const uint32_t typeSize, const bool isReuseSource,
                                      const bool isComputeRstd, const bool isOnlyOutput, uint32_t& maxValue,
                                      uint32_t& minValue) {
    (void)typeSize, (void)isReuseSource, (void)isComputeRstd, (void)isOnlyOutput;
    const size_t n = srcShape.GetDimNum();
    const uint64_t a = n > 0 ? srcShape.GetDim(0) : 0, r = n > 1 ? srcShape.GetDim(1) : 0;
    const uint64_t rp = (r + 7) / 8 * 8;
    minValue = a && r ? evk_norm::clamp32(evk_norm::layernorm_row_bytes(rp)) : 0;
    maxValue = evk_norm::clamp32(a * evk_norm::layernorm_row_bytes(rp));
}
inline void GetLayerNormNDTilingInfo(const ge::Shape& srcShape, const uint32_t stackBufferSize, const uint32_t typeSize,
                                     const bool isReuseSource, const bool isComputeRstd,
                                     ::AscendC::tiling::LayerNormSeparateTiling& tiling) {
    (void)isReuseSource, (void)isComputeRstd;
    const size_t n = srcShape.GetDimNum();
    const uint32_t a = n > 0 ? srcShape.GetDim(0) : 0, r = n > 1 ? srcShape.GetDim(1) : 0;
    const uint32_t per = typeSize ? 32 / typeSize : 8;
    const uint32_t rp = (r + per - 1) / per * per;
    const uint32_t rows = evk_norm::rows_for(stackBufferSize, evk_norm::layernorm_row_bytes((r + 7) / 8 * 8), a);
    if (rows == 0 && a && r)
        std::fprintf(stderr, "GetLayerNormNDTilingInfo: stackBufferSize %u is below the minimum (%llu bytes)\n",
                     stackBufferSize,
                     static_cast<unsigned long long>(evk_norm::layernorm_row_bytes((r + 7) / 8 * 8)));
    uint32_t head = 1;
    while (head * 2 <= r) head *= 2;
    tiling = ::AscendC::tiling::LayerNormSeparateTiling{};
    tiling.aLength = a, tiling.rLength = r, tiling.rHeadLength = r ? head : 0;
    tiling.halfAddRepeatTimes = r ? (r - head) * 4 / 256 : 0;
    tiling.k2Rec = r ? 1.0f / static_cast<float>(head) : 0.0f;
    tiling.k2RRec = r ? static_cast<float>(head) / static_cast<float>(r) : 0.0f;
    tiling.inputXSize = a * rp, tiling.meanVarSize = a;
    tiling.numberOfTmpBuf = 3, tiling.tmpBufSize = stackBufferSize / 4;
    tiling.oneTmpSize = rows * rp;
    tiling.firstTmpStartPos = 0, tiling.secondTmpStartPos = rows * rp, tiling.thirdTmpStartPos = 2 * rows * rp;
    tiling.varianceTmpTensorPos = 3 * rows * rp, tiling.varianceTmpTensorSize = rows * 8;
    tiling.loopRound = rows ? a / rows : 0;
    tiling.inputRoundSize = rows * rp, tiling.inputTailSize = rows ? (a % rows) * rp : 0;
    tiling.inputTailPos = tiling.loopRound * tiling.inputRoundSize;
    tiling.meanVarRoundSize = rows, tiling.meanVarTailSize = rows ? a % rows : 0;
    tiling.meanVarTailPos = tiling.loopRound * rows;
    tiling.arCurLength = rows * rp, tiling.aCurLength = rows;
    tiling.rValueBack = r ? 1.0f / static_cast<float>(r) : 0.0f;
}

// ---- RmsNorm: srcShape {B, S, H} (H rounded up to 32 bytes), originSrcShape {B, S, originH} ----
inline bool GetRmsNormMaxMinTmpSize(const ge::Shape& srcShape, const uint32_t typeSize, uint32_t& maxValue,
                                    uint32_t& minValue, const bool isBasicBlock = false) {
    (void)isBasicBlock;
    maxValue = minValue = 0;
    uint64_t m, h;
    evk_norm::split_shape(srcShape, m, h);
    if (!m || !h || !typeSize || h * typeSize % 32 != 0) {
        std::fprintf(stderr, "GetRmsNormMaxMinTmpSize: the last axis must be positive and 32-byte aligned\n");
        return false;
    }
    minValue = evk_norm::clamp32(evk_norm::rmsnorm_row_bytes(h));
    maxValue = evk_norm::clamp32(m * evk_norm::rmsnorm_row_bytes(h));
    return true;
}
inline bool GetRmsNormTilingInfo(const ge::Shape& srcShape, const ge::Shape& originSrcShape,
                                 const uint32_t stackBufferByteSize, const uint32_t typeSize,
                                 ::AscendC::tiling::RmsNormTiling& tiling, const bool isBasicBlock = false) {
    uint64_t m, h, om, oh;
    evk_norm::split_shape(srcShape, m, h);
    evk_norm::split_shape(originSrcShape, om, oh);
    const size_t n = srcShape.GetDimNum();
    if (!m || !h || !typeSize || h * typeSize % 32 != 0 || om != m || oh > h || oh == 0) {
        std::fprintf(stderr, "GetRmsNormTilingInfo: srcShape must be originSrcShape with H rounded up to 32 bytes\n");
        return false;
    }
    uint32_t rows = evk_norm::rows_for(stackBufferByteSize, evk_norm::rmsnorm_row_bytes(h), evk_norm::clamp32(m));
    if (isBasicBlock) {
        if (h % 64 != 0 || h >= 2048 || m % 8 != 0 || oh != h) {
            std::fprintf(stderr, "GetRmsNormTilingInfo: isBasicBlock needs H a multiple of 64 below 2048 (origin H "
                                 "aligned too) and B*S a multiple of 8\n");
            return false;
        }
        rows = rows / 8 * 8;
    }
    if (rows == 0) {
        std::fprintf(stderr, "GetRmsNormTilingInfo: stackBufferByteSize %u is below the minimum (%llu bytes)\n",
                     stackBufferByteSize, static_cast<unsigned long long>(evk_norm::rmsnorm_row_bytes(h)));
        return false;
    }
    tiling = ::AscendC::tiling::RmsNormTiling{};
    tiling.bLength = n >= 3 ? static_cast<uint32_t>(srcShape.GetDim(n - 3)) : 1;
    tiling.sLength = n >= 2 ? static_cast<uint32_t>(m / tiling.bLength) : 1;
    tiling.hLength = static_cast<uint32_t>(h), tiling.originalHLength = static_cast<uint32_t>(oh);
    tiling.reciprocalOfHLength = 1.0f / static_cast<float>(oh);
    tiling.mainBsLength = rows, tiling.mainBshLength = rows * tiling.hLength;
    tiling.mainBsLengthAlign = (rows + 7) / 8 * 8;
    tiling.loopRound = static_cast<uint32_t>(m / rows);
    tiling.inputTailPos = tiling.loopRound * tiling.mainBshLength;
    tiling.tailBsLength = static_cast<uint32_t>(m % rows), tiling.tailBshLength = tiling.tailBsLength * tiling.hLength;
    return true;
}
}  // namespace AscendC

namespace optiling {
using ::AscendC::GetLayerNormMaxMinTmpSize;
using ::AscendC::GetLayerNormNDTilingInfo;
using ::AscendC::GetLayerNormNDTillingInfo;
using ::AscendC::GetRmsNormMaxMinTmpSize;
using ::AscendC::GetRmsNormTilingInfo;
using ::AscendC::GetLogSoftMaxMaxTmpSize;
using ::AscendC::GetLogSoftMaxMinTmpSize;
using ::AscendC::LogSoftMaxTilingFunc;
using ::AscendC::GetSoftMaxMaxTmpSize;
using ::AscendC::GetSoftMaxMinTmpSize;
using ::AscendC::IsBasicBlockInSoftMax;
using ::AscendC::SoftMaxTilingFunc;
}  // namespace optiling
#endif
