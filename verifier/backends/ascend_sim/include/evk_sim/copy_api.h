// EvoKernel Ascend C CPU emulator: data movement and fill forms beyond kernel.h's core set, as community
// operators call them (issue 29). Each form is built from kernel.h's checked copies, so alignment, bounds,
// uninitialised-read and block-overlap rules and the latency counters apply unchanged.
//
// Sources (CANN's public asc-devkit, docs/zh/api/SIMD-API/基础API and include/basic_api):
//   - DataCopy with SliceInfo (GM<->UB slice copies): "DataCopy（GM与UB切片数据搬运）.md"; the A2 (dav_c220)
//     implementation issues one DataCopy per outer slice, or a DataCopyPad when the dim-0 stride is not a whole
//     number of 32-byte blocks (impl/basic_api/kernel_operator_data_copy_intf_impl.h, DataCopySliceGm2UBImpl);
//   - DataCopy with DataCopyEnhancedParams (include/basic_api/kernel_struct_data_copy.h): on GM<->UB the
//     normal block mode is the plain DataCopyParams copy; the other modes (matrix, depthwise, on-the-fly
//     dequantisation, ReLU) belong to L0C->UB paths the Atlas A2 does not have (its cube results leave L0C
//     through Fixpipe), refused when run;
//   - Copy (UB->UB, mask form, CopyRepeatParams): "Copy（UBToUB掩码式高维数据搬运）.md" (A2: b16/b32 types; the
//     count form is documented for the Ascend 950 only and is not provided);
//   - CreateVecIndex (count form): "CreateVecIndex.md" (A2: int16, half, int32, float; count 0 is a NOP);
//   - DataCacheCleanAndInvalid: "缓存控制/DataCacheCleanAndInvalid.md" and include/basic_api/
//     kernel_operator_cache_intf.h: <T, CacheLine, DcciDst> on GlobalTensor or LocalTensor, and <T, CacheLine>
//     on GlobalTensor. The emulator has no scalar data cache (GM reads and writes are immediate), so flushing
//     it changes nothing here.
#ifndef EVK_SIM_COPY_API_H
#define EVK_SIM_COPY_API_H

#include <vector>

#include "evk_sim/kernel.h"

namespace AscendC {

// ---- DataCopy with SliceInfo ------------------------------------------------------------------------------
struct SliceInfo {
    SliceInfo() {}
    SliceInfo(const uint32_t startIndexIn, const uint32_t endIndexIn, const uint32_t strideIn,
              const uint32_t burstLenIn, const uint32_t shapeValueIn = 0)
        : startIndex(startIndexIn), endIndex(endIndexIn), stride(strideIn), burstLen(burstLenIn),
          shapeValue(shapeValueIn) {}
    uint32_t startIndex = 0;
    uint32_t endIndex = ONE_BLK_SIZE - 1;
    uint32_t stride = 0;
    uint32_t burstLen = ONE_BLK_SIZE;
    uint32_t shapeValue = 0;
};

namespace evk_detail {
constexpr uint32_t kMaxSliceDims = 8;  // K_MAX_SHAPE_DIM: "不超过8"

// The element offsets of the outer slices (dims 1..dimValue-1), in CANN's order: dim 1 fastest.
inline std::vector<uint64_t> slice_offsets(const SliceInfo s[], const uint32_t shape[], uint32_t dims) {
    std::vector<uint64_t> out{0};
    uint64_t plane = 1;
    for (uint32_t i = 1; i < dims; ++i) {
        plane *= shape[i - 1];
        const uint64_t step = 1ull + s[i].stride;
        const uint64_t n = (static_cast<uint64_t>(s[i].endIndex) - s[i].startIndex + step) / step;
        const size_t base = out.size();
        for (uint64_t k = 1; k < n; ++k)
            for (size_t j = 0; j < base; ++j) out.push_back(out[j] + k * step * plane);
    }
    return out;
}
inline uint64_t slice_start(const SliceInfo s[], const uint32_t shape[], uint32_t dims) {
    uint64_t start = s[0].startIndex, plane = 1;
    for (uint32_t i = 1; i < dims; ++i) {
        plane *= shape[i - 1];
        start += plane * s[i].startIndex;
    }
    return start;
}
// The documented constraints a slice copy's arguments must meet; false (after an error) when it cannot run.
template <typename T>
inline bool slice_check(const char* op, const SliceInfo d[], const SliceInfo s[], uint32_t dims, ::evk_sim::SrcLoc loc) {
    auto bad = [&](const char* what, uint32_t i, uint32_t a, uint32_t b) {
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: %s (dim %u: %u vs %u); DataCopy with SliceInfo requires it", op, what, i, a, b);
        return false;
    };
    if (dims == 0 || dims > kMaxSliceDims) return bad("dimValue must be 1..8", 0, dims, kMaxSliceDims);
    if (s[0].shapeValue == 0)
        return bad("SliceInfo.shapeValue is 0 (CANN then takes the tensors' ShapeInfo, which the emulator does not "
                   "keep): give every dimension's shapeValue", 0, 0, 0);
    for (uint32_t i = 0; i < dims; ++i) {
        if (s[i].burstLen != d[i].burstLen) return bad("source and destination burstLen differ", i, s[i].burstLen, d[i].burstLen);
        if (i > 0 && s[i].burstLen != 1) return bad("burstLen of an outer dimension must be 1", i, s[i].burstLen, 1);
        for (const SliceInfo* x : {&s[i], &d[i]}) {
            if (x->startIndex > x->endIndex || x->endIndex > x->shapeValue)
                return bad("startIndex <= endIndex <= shapeValue does not hold", i, x->startIndex, x->endIndex);
        }
    }
    const uint64_t c0 = 32 / sizeof(T);
    for (const SliceInfo* x : {&s[0], &d[0]}) {
        const uint64_t span = static_cast<uint64_t>(x->endIndex) - x->startIndex + 1 + x->stride;
        const uint64_t one = static_cast<uint64_t>(x->burstLen) * c0 + x->stride;
        if (one == 0 || span % one != 0)
            return bad("endIndex - startIndex + 1 is not (N-1) x stride + N x burstLen x 32/sizeof(T)", 0,
                       x->endIndex - x->startIndex + 1, static_cast<uint32_t>(one));
    }
    return true;
}
}  // namespace evk_detail

template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const SliceInfo dstSliceInfo[],
                     const SliceInfo srcSliceInfo[], const uint32_t dimValue = 1, EVK_LOC) {
    const char* op = "DataCopy GM->UB (SliceInfo)";
    if (!evk_detail::slice_check<T>(op, dstSliceInfo, srcSliceInfo, dimValue, loc)) return;
    uint32_t ss[evk_detail::kMaxSliceDims], ds[evk_detail::kMaxSliceDims];
    for (uint32_t i = 0; i < dimValue; ++i) {
        ss[i] = srcSliceInfo[i].shapeValue;
        ds[i] = dstSliceInfo[i].shapeValue;
    }
    const auto so = evk_detail::slice_offsets(srcSliceInfo, ss, dimValue);
    const auto dof = evk_detail::slice_offsets(dstSliceInfo, ds, dimValue);
    if (so.size() != dof.size()) {
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: the source slices %zu outer pieces, the destination %zu", op, so.size(), dof.size());
        return;
    }
    const uint64_t s0 = evk_detail::slice_start(srcSliceInfo, ss, dimValue);
    const uint64_t d0 = evk_detail::slice_start(dstSliceInfo, ds, dimValue);
    const uint32_t c0 = 32 / sizeof(T);
    const uint16_t len = static_cast<uint16_t>(srcSliceInfo[0].burstLen);
    const uint16_t count = static_cast<uint16_t>((srcSliceInfo[0].endIndex - srcSliceInfo[0].startIndex + 1 +
                                                  srcSliceInfo[0].stride) / (len * c0 + srcSliceInfo[0].stride));
    const uint32_t dstStride = dstSliceInfo[0].stride * sizeof(T) / 32;
    const bool aligned = (srcSliceInfo[0].stride * sizeof(T)) % 32 == 0;
    for (size_t i = 0; i < so.size(); ++i) {
        LocalTensor<T> d = dst[static_cast<uint32_t>(d0 + dof[i])];
        GlobalTensor<T> g = src[s0 + so[i]];
        if (aligned) {
            DataCopy(d, g, DataCopyParams(count, len, static_cast<uint16_t>(srcSliceInfo[0].stride * sizeof(T) / 32),
                                          static_cast<uint16_t>(dstStride)), loc);
        } else {  // dav_c220: a DataCopyPad with the byte stride on the GM side
            DataCopyPad(d, g, DataCopyExtParams(count, len * 32u, srcSliceInfo[0].stride * sizeof(T), dstStride, 0),
                        DataCopyPadExtParams<T>(false, 0, 0, T(0)), loc);
        }
    }
}

template <typename T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const SliceInfo dstSliceInfo[],
                     const SliceInfo srcSliceInfo[], const uint32_t dimValue = 1, EVK_LOC) {
    const char* op = "DataCopy UB->GM (SliceInfo)";
    if (!evk_detail::slice_check<T>(op, dstSliceInfo, srcSliceInfo, dimValue, loc)) return;
    uint32_t ss[evk_detail::kMaxSliceDims], ds[evk_detail::kMaxSliceDims];
    for (uint32_t i = 0; i < dimValue; ++i) {
        ss[i] = srcSliceInfo[i].shapeValue;
        ds[i] = dstSliceInfo[i].shapeValue;
    }
    const auto so = evk_detail::slice_offsets(srcSliceInfo, ss, dimValue);
    const auto dof = evk_detail::slice_offsets(dstSliceInfo, ds, dimValue);
    if (so.size() != dof.size()) {
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: the source slices %zu outer pieces, the destination %zu", op, so.size(), dof.size());
        return;
    }
    const uint64_t s0 = evk_detail::slice_start(srcSliceInfo, ss, dimValue);
    const uint64_t d0 = evk_detail::slice_start(dstSliceInfo, ds, dimValue);
    const uint32_t c0 = 32 / sizeof(T);
    const uint16_t len = static_cast<uint16_t>(srcSliceInfo[0].burstLen);
    const uint16_t count = static_cast<uint16_t>((srcSliceInfo[0].endIndex - srcSliceInfo[0].startIndex + 1 +
                                                  srcSliceInfo[0].stride) / (len * c0 + srcSliceInfo[0].stride));
    const uint32_t srcStride = srcSliceInfo[0].stride * sizeof(T) / 32;
    const bool aligned = (dstSliceInfo[0].stride * sizeof(T)) % 32 == 0;
    for (size_t i = 0; i < so.size(); ++i) {
        GlobalTensor<T> g = dst[d0 + dof[i]];
        LocalTensor<T> s = src[static_cast<uint32_t>(s0 + so[i])];
        if (aligned) {
            DataCopy(g, s, DataCopyParams(count, len, static_cast<uint16_t>(srcStride),
                                          static_cast<uint16_t>(dstSliceInfo[0].stride * sizeof(T) / 32)), loc);
        } else {  // dav_c220: a DataCopyPad with the byte stride on the GM side
            DataCopyPad(g, s, DataCopyExtParams(count, len * 32u, srcStride, dstSliceInfo[0].stride * sizeof(T), 0),
                        loc);
        }
    }
}

// ---- DataCopy with DataCopyEnhancedParams -----------------------------------------------------------------
enum class BlockMode : uint8_t { BLOCK_MODE_NORMAL = 0, BLOCK_MODE_MATRIX, BLOCK_MODE_VECTOR, BLOCK_MODE_SMALL_CHANNEL,
                                 BLOCK_MODE_DEPTHWISE };
enum class DeqScale : uint8_t { DEQ_NONE = 0, DEQ, VDEQ, DEQ8, VDEQ8, DEQ16, VDEQ16 };
enum class pad_t : uint8_t { PAD_NONE = 0, PAD_MODE1, PAD_MODE2, PAD_MODE3, PAD_MODE4, PAD_MODE5, PAD_MODE6,
                             PAD_MODE7, PAD_MODE8 };

struct DataCopyEnhancedParams {
    DataCopyEnhancedParams() {}
    DataCopyEnhancedParams(const BlockMode blockModeIn, const DeqScale deqScaleIn, const uint64_t deqValueIn,
                           const uint8_t sidStoreModeIn, const bool isReluIn, const pad_t padModeIn,
                           const uint64_t padValueIn)
        : blockMode(blockModeIn), deqScale(deqScaleIn), deqValue(deqValueIn), sidStoreMode(sidStoreModeIn),
          isRelu(isReluIn), padMode(padModeIn), padValue(padValueIn) {}
    BlockMode blockMode = BlockMode::BLOCK_MODE_NORMAL;
    DeqScale deqScale = DeqScale::DEQ_NONE;
    uint64_t deqValue = 0;
    uint8_t sidStoreMode = 0;
    bool isRelu = false;
    pad_t padMode = pad_t::PAD_NONE;
    uint64_t padValue = 0;
    uint64_t deqTensorAddr = 0;
};

namespace evk_detail {
// true when the enhanced parameters ask for nothing beyond the plain copy
inline bool enhanced_plain(const char* op, const DataCopyEnhancedParams& e, ::evk_sim::SrcLoc loc) {
    if (e.blockMode == BlockMode::BLOCK_MODE_NORMAL && e.deqScale == DeqScale::DEQ_NONE && !e.isRelu &&
        e.padMode == pad_t::PAD_NONE)
        return true;
    ::evk_sim::violation(EVK_RULE_UNSUPPORTED_API, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                         "%s with DataCopyEnhancedParams (blockMode %d, deqScale %d, isRelu %d): the matrix, "
                         "depthwise, dequantising and ReLU modes are L0C->UB paths, which the Atlas A2 does not have "
                         "(its cube results leave L0C through Fixpipe); only the normal block mode copies here",
                         op, static_cast<int>(e.blockMode), static_cast<int>(e.deqScale), e.isRelu ? 1 : 0);
    return false;
}
}  // namespace evk_detail

template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& intriParams,
                     const DataCopyEnhancedParams& enhancedParams, EVK_LOC) {
    if (evk_detail::enhanced_plain("DataCopy GM->UB", enhancedParams, loc)) DataCopy(dst, src, intriParams, loc);
}
template <typename T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& intriParams,
                     const DataCopyEnhancedParams& enhancedParams, EVK_LOC) {
    if (evk_detail::enhanced_plain("DataCopy UB->GM", enhancedParams, loc)) DataCopy(dst, src, intriParams, loc);
}
template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& intriParams,
                     const DataCopyEnhancedParams& enhancedParams, EVK_LOC) {
    if (evk_detail::enhanced_plain("DataCopy local->local", enhancedParams, loc)) DataCopy(dst, src, intriParams, loc);
}

// ---- Copy: UB -> UB with a mask and block/repeat strides --------------------------------------------------
struct CopyRepeatParams {
    CopyRepeatParams() {}
    CopyRepeatParams(const uint16_t dstStrideIn, const uint16_t srcStrideIn, uint16_t dstRepeatSizeIn,
                     uint16_t srcRepeatSizeIn)
        : dstStride(dstStrideIn), srcStride(srcStrideIn), dstRepeatSize(dstRepeatSizeIn),
          srcRepeatSize(srcRepeatSizeIn) {}
    uint16_t dstStride = 0;
    uint16_t srcStride = 0;
    uint16_t dstRepeatSize = DEFAULT_REPEAT_STRIDE;
    uint16_t srcRepeatSize = DEFAULT_REPEAT_STRIDE;
};

namespace evk_detail {
template <typename T>
inline void copy_mask(const LocalTensor<T>& dst, const LocalTensor<T>& src, const ::evk_sim::Plan& plan,
                      const CopyRepeatParams& p, ::evk_sim::SrcLoc loc) {
    const char* op = "Copy";
    ::evk_sim::dtype_check(op, ::evk_sim::Ty<T>::kind,
                           ::evk_sim::DT_HF | ::evk_sim::DT_B16 | ::evk_sim::bit(::evk_sim::DK_BF16) |
                               ::evk_sim::bit(::evk_sim::DK_I32) | ::evk_sim::bit(::evk_sim::DK_U32),
                           loc.file, loc.line);
    valid(dst.buf_, op, loc);
    valid(src.buf_, op, loc);
    for (uint16_t r : {p.dstRepeatSize, p.srcRepeatSize})
        if (r > 4095)
            ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                                 "Copy: a repeat size of %u blocks is past the documented 4095", r);
    ::evk_sim::MD m[2] = {{src.buf_, src.off_, sizeof(T), p.srcStride, p.srcRepeatSize, false},
                          {dst.buf_, dst.off_, sizeof(T), p.dstStride, p.dstRepeatSize, true}};
    if (!::evk_sim::vec_mask_prologue(op, ::evk_sim::Ty<T>::name, plan, m, 2, loc.file, loc.line)) return;
    for (int r = 0; r < plan.repeats; ++r)
        for (int l = 0; l < plan.lanes; ++l)
            if (::evk_sim::plan_active(plan, r, l))
                std::memmove(::evk_sim::g_ub + ::evk_sim::lane_addr(m[1], r, l),
                             ::evk_sim::g_ub + ::evk_sim::lane_addr(m[0], r, l), sizeof(T));
}
}  // namespace evk_detail

template <typename T, bool isSetMask = true>
inline void Copy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask, const uint8_t repeatTime,
                 const CopyRepeatParams& repeatParams, EVK_LOC) {
    auto plan = evk_detail::plan_c<T>("Copy", mask, repeatTime, isSetMask, evk_detail::lanes_of<T>(), loc);
    evk_detail::copy_mask(dst, src, plan, repeatParams, loc);
}
template <typename T, bool isSetMask = true>
inline void Copy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[], const uint8_t repeatTime,
                 const CopyRepeatParams& repeatParams, EVK_LOC) {
    auto plan = evk_detail::plan_b<T>("Copy", mask, repeatTime, isSetMask, evk_detail::lanes_of<T>(), loc);
    evk_detail::copy_mask(dst, src, plan, repeatParams, loc);
}

// ---- CreateVecIndex (count form): dst[i] = firstValue + i -------------------------------------------------
template <typename T>
inline void CreateVecIndex(LocalTensor<T> dst, const T& firstValue, uint32_t count, EVK_LOC) {
    const char* op = "CreateVecIndex";
    ::evk_sim::dtype_check(op, ::evk_sim::Ty<T>::kind,
                           ::evk_sim::DT_HF | ::evk_sim::bit(::evk_sim::DK_I16) | ::evk_sim::bit(::evk_sim::DK_I32),
                           loc.file, loc.line);
    if (count == 0) return;  // documented: a NOP on the A2
    ::evk_sim::TD d = dst.td();
    int64_t n = ::evk_sim::vec_count_prologue(op, ::evk_sim::Ty<T>::name, &d, nullptr, 0, count, 0, loc.file, loc.line);
    using C = typename ::evk_sim::Ty<T>::C;
    const C first = static_cast<C>(static_cast<typename std::conditional<std::is_integral<T>::value, int64_t, float>::type>(firstValue));
    uint64_t ovf = 0;
    for (int64_t i = 0; i < n; ++i) ::evk_sim::st<T>(d.off + i * sizeof(T), first + static_cast<C>(i), ovf);
    if (ovf) ::evk_sim::report_half_overflow(op, ovf, loc.file, loc.line);
}

// ---- DataCacheCleanAndInvalid -----------------------------------------------------------------------------
enum class CacheLine : uint64_t { SINGLE_CACHE_LINE = 0, ENTIRE_DATA_CACHE };
enum class DcciDst : uint64_t { CACHELINE_ALL = 0, CACHELINE_UB, CACHELINE_OUT, CACHELINE_ATOMIC };
template <typename T, CacheLine entireType, DcciDst dcciDst>
inline void DataCacheCleanAndInvalid(const GlobalTensor<T>&) {}
template <typename T, CacheLine entireType, DcciDst dcciDst>
inline void DataCacheCleanAndInvalid(const LocalTensor<T>&) {}
template <typename T, CacheLine entireType>
inline void DataCacheCleanAndInvalid(const GlobalTensor<T>&) {}

}  // namespace AscendC

#endif  // EVK_SIM_COPY_API_H
