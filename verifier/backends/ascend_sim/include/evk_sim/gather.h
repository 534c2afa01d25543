// EvoKernel Ascend C CPU emulator: the vector core's gather/scatter and layout instructions, as the public API
// documents them for the 910B (Atlas A2). Included at the end of kernel.h.
//
//   Gather(dst, src, srcOffset, srcBaseAddr, count)    dst[i] = the element at byte srcBaseAddr + srcOffset[i] of src
//   Scatter(dst, src, dstOffset, dstBaseAddr, count)   the element at byte dstBaseAddr + dstOffset[i] of dst = src[i]
//   GatherMask(dst, src0, pattern, reduceMode, mask, GatherMaskParams, rsvdCnt)
//                                                      the elements of src0 whose pattern bit is 1, packed into dst;
//                                                      rsvdCnt = how many (pattern: 1-7 built in, or a tensor)
//   Transpose(dst, src)                                one 16 x 16 matrix of a 16-bit type
// Offsets are bytes (uint32) and must be aligned to the element; every element read or written is checked
// against its tensor's buffer like any UB access.
#ifndef EVK_SIM_GATHER_H
#define EVK_SIM_GATHER_H

namespace AscendC {

struct GatherMaskParams {
    GatherMaskParams() {}
    GatherMaskParams(const uint8_t src0BlockStrideIn, const uint16_t repeatTimesIn, const uint16_t src0RepeatStrideIn,
                     const uint8_t src1RepeatStrideIn)
        : src0BlockStride(src0BlockStrideIn), repeatTimes(repeatTimesIn), src0RepeatStride(src0RepeatStrideIn),
          src1RepeatStride(src1RepeatStrideIn) {}
    uint8_t src0BlockStride = DEFAULT_BLK_STRIDE;
    uint16_t repeatTimes = 0;
    uint16_t src0RepeatStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src1RepeatStride = DEFAULT_REPEAT_STRIDE;
};

namespace evk_detail {
constexpr uint32_t DT_GATHER = ::evk_sim::bit(::evk_sim::DK_I16) | ::evk_sim::bit(::evk_sim::DK_U16) |
                               ::evk_sim::bit(::evk_sim::DK_F16) | ::evk_sim::bit(::evk_sim::DK_BF16) |
                               ::evk_sim::bit(::evk_sim::DK_I32) | ::evk_sim::bit(::evk_sim::DK_U32) |
                               ::evk_sim::bit(::evk_sim::DK_F32);

template <typename T>
inline void gather_scatter(const char* op, bool gather, const LocalTensor<T>& dst, const LocalTensor<T>& src,
                           const LocalTensor<uint32_t>& offset, uint32_t base, uint32_t count, ::evk_sim::SrcLoc loc) {
    ::evk_sim::begin_instr(::evk_sim::PID_V);
    valid(dst.buf_, op, loc);
    valid(src.buf_, op, loc);
    valid(offset.buf_, op, loc);
    ::evk_sim::dtype_check(op, ::evk_sim::Ty<T>::kind, DT_GATHER, loc.file, loc.line);
    ::evk_sim::ub_align(op, "dst", dst.off_, 32, loc.file, loc.line);
    ::evk_sim::ub_align(op, "src", src.off_, 32, loc.file, loc.line);
    ::evk_sim::ub_align(op, gather ? "srcOffset" : "dstOffset", offset.off_, 32, loc.file, loc.line);
    if (count == 0) return;
    if (dst.buf_ == src.buf_ && dst.off_ == src.off_)
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: src and dst share a buffer (the API does not allow the same memory)", op);
    ::evk_sim::ub_access(op, offset.buf_, offset.off_, static_cast<uint64_t>(count) * 4, false, ::evk_sim::PID_V,
                         loc.file, loc.line);
    const LocalTensor<T>& moved = gather ? src : dst;  // the operand addressed by the offsets
    uint64_t misaligned = 0;
    for (uint32_t i = 0; i < count; ++i) {
        uint32_t o;
        std::memcpy(&o, ::evk_sim::g_ub + offset.off_ + static_cast<int64_t>(i) * 4, 4);
        const uint64_t byte = static_cast<uint64_t>(base) + o;
        if (byte % sizeof(T)) {
            if (!misaligned++)
                ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                                     "%s: element %u's address %llu (base %u + offset %u bytes) is not aligned to "
                                     "the %zu-byte element",
                                     op, i, static_cast<unsigned long long>(byte), base, o, sizeof(T));
            continue;
        }
        const int64_t at = moved.off_ + static_cast<int64_t>(byte);
        const int64_t seq = (gather ? dst.off_ : src.off_) + static_cast<int64_t>(i) * static_cast<int64_t>(sizeof(T));
        if (gather) {
            ::evk_sim::ub_access(op, src.buf_, at, sizeof(T), false, ::evk_sim::PID_V, loc.file, loc.line);
            ::evk_sim::ub_access(op, dst.buf_, seq, sizeof(T), true, ::evk_sim::PID_V, loc.file, loc.line);
            std::memmove(::evk_sim::g_ub + seq, ::evk_sim::g_ub + at, sizeof(T));
        } else {
            ::evk_sim::ub_access(op, src.buf_, seq, sizeof(T), false, ::evk_sim::PID_V, loc.file, loc.line);
            ::evk_sim::ub_access(op, dst.buf_, at, sizeof(T), true, ::evk_sim::PID_V, loc.file, loc.line);
            std::memmove(::evk_sim::g_ub + at, ::evk_sim::g_ub + seq, sizeof(T));
        }
    }
    const uint64_t bytes = static_cast<uint64_t>(count) * sizeof(T);
    ::evk_sim::count_vec(op, ::evk_sim::Ty<T>::name, count, (bytes + 255) / 256);
}

// GatherMask's built-in patterns 1-7: is element l of a repeat selected?
inline bool builtin_pattern(uint8_t p, uint32_t l) {
    switch (p) {
        case 1: return l % 2 == 0;
        case 2: return l % 2 == 1;
        case 3: return l % 4 == 0;
        case 4: return l % 4 == 1;
        case 5: return l % 4 == 2;
        case 6: return l % 4 == 3;
        case 7: return true;
        default: return false;
    }
}

template <typename T, typename U>
inline void gather_mask(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<U>* pattern,
                        uint8_t builtin, bool reduceMode, uint32_t mask, const GatherMaskParams& p, uint64_t& rsvdCnt,
                        ::evk_sim::SrcLoc loc) {
    static const char* op = "GatherMask";
    ::evk_sim::begin_instr(::evk_sim::PID_V);
    valid(dst.buf_, op, loc);
    valid(src0.buf_, op, loc);
    if (pattern) valid(pattern->buf_, op, loc);
    static_assert(sizeof(T) == 2 || sizeof(T) == 4, "GatherMask works on 16- and 32-bit types");
    ::evk_sim::ub_align(op, "dst", dst.off_, 32, loc.file, loc.line);
    ::evk_sim::ub_align(op, "src0", src0.off_, 32, loc.file, loc.line);
    rsvdCnt = 0;
    if (!pattern && (builtin < 1 || builtin > 7)) {
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "GatherMask: built-in pattern %u (valid: 1-7)", builtin);
        return;
    }
    if (pattern && sizeof(U) != sizeof(T)) {
        ::evk_sim::violation(EVK_RULE_UNSUPPORTED_DTYPE, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "GatherMask: a pattern tensor of %zu-byte words for %zu-byte elements (uint16 patterns "
                             "for 16-bit types, uint32 for 32-bit)",
                             sizeof(U), sizeof(T));
        return;
    }
    // per repeat: 256 bytes (normal mode) or `mask` elements (counter mode, the 910B's configuration 1)
    const uint32_t lanes = reduceMode ? mask : 256 / static_cast<uint32_t>(sizeof(T));
    if (reduceMode && mask == 0) return;
    const uint32_t per_block = 32 / static_cast<uint32_t>(sizeof(T));
    uint64_t out = 0;
    for (uint32_t r = 0; r < p.repeatTimes; ++r) {
        for (uint32_t l = 0; l < lanes; ++l) {
            bool take;
            if (pattern) {
                const int64_t word = pattern->off_ + static_cast<int64_t>(r) * p.src1RepeatStride * 32 +
                                     static_cast<int64_t>(l / (8 * sizeof(U))) * static_cast<int64_t>(sizeof(U));
                ::evk_sim::ub_access(op, pattern->buf_, word, sizeof(U), false, ::evk_sim::PID_V, loc.file, loc.line);
                U bits;
                std::memcpy(&bits, ::evk_sim::g_ub + word, sizeof(U));
                take = (bits >> (l % (8 * sizeof(U)))) & 1u;
            } else {
                take = builtin_pattern(builtin, l);
            }
            if (!take) continue;
            const int64_t s = src0.off_ + static_cast<int64_t>(r) * p.src0RepeatStride * 32 +
                              static_cast<int64_t>(l / per_block) * p.src0BlockStride * 32 +
                              static_cast<int64_t>(l % per_block) * static_cast<int64_t>(sizeof(T));
            const int64_t d = dst.off_ + static_cast<int64_t>(out) * static_cast<int64_t>(sizeof(T));
            ::evk_sim::ub_access(op, src0.buf_, s, sizeof(T), false, ::evk_sim::PID_V, loc.file, loc.line);
            ::evk_sim::ub_access(op, dst.buf_, d, sizeof(T), true, ::evk_sim::PID_V, loc.file, loc.line);
            std::memmove(::evk_sim::g_ub + d, ::evk_sim::g_ub + s, sizeof(T));
            ++out;
        }
    }
    rsvdCnt = out;
    ::evk_sim::count_vec(op, ::evk_sim::Ty<T>::name, static_cast<uint64_t>(p.repeatTimes) * lanes, p.repeatTimes);
}
}  // namespace evk_detail

template <typename T>
inline void Gather(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint32_t>& srcOffset,
                   const uint32_t srcBaseAddr, const uint32_t count, EVK_LOC) {
    evk_detail::gather_scatter("Gather", true, dst, src, srcOffset, srcBaseAddr, count, loc);
}
template <typename T>
inline void Scatter(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint32_t>& dstOffset,
                    const uint32_t dstBaseAddr, const uint32_t count, EVK_LOC) {
    evk_detail::gather_scatter("Scatter", false, dst, src, dstOffset, dstBaseAddr, count, loc);
}
template <typename T, typename U>
inline void GatherMask(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<U>& src1Pattern,
                       const bool reduceMode, const uint32_t mask, const GatherMaskParams& gatherMaskParams,
                       uint64_t& rsvdCnt, EVK_LOC) {
    evk_detail::gather_mask(dst, src0, &src1Pattern, 0, reduceMode, mask, gatherMaskParams, rsvdCnt, loc);
}
template <typename T>
inline void GatherMask(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const uint8_t src1Pattern,
                       const bool reduceMode, const uint32_t mask, const GatherMaskParams& gatherMaskParams,
                       uint64_t& rsvdCnt, EVK_LOC) {
    using Word = typename std::conditional<sizeof(T) == 2, uint16_t, uint32_t>::type;
    evk_detail::gather_mask<T, Word>(dst, src0, nullptr, src1Pattern, reduceMode, mask, gatherMaskParams, rsvdCnt,
                                     loc);
}

// One 16 x 16 matrix of a 16-bit type.
template <typename T> inline void Transpose(const LocalTensor<T>& dst, const LocalTensor<T>& src, EVK_LOC) {
    static const char* op = "Transpose";
    ::evk_sim::begin_instr(::evk_sim::PID_V);
    evk_detail::valid(dst.buf_, op, loc);
    evk_detail::valid(src.buf_, op, loc);
    static_assert(sizeof(T) == 2, "Transpose (16 x 16) works on 16-bit types (half, int16, uint16)");
    ::evk_sim::ub_align(op, "dst", dst.off_, 32, loc.file, loc.line);
    ::evk_sim::ub_align(op, "src", src.off_, 32, loc.file, loc.line);
    ::evk_sim::ub_access(op, src.buf_, src.off_, 512, false, ::evk_sim::PID_V, loc.file, loc.line);
    ::evk_sim::ub_access(op, dst.buf_, dst.off_, 512, true, ::evk_sim::PID_V, loc.file, loc.line);
    uint8_t tmp[512];
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 16; ++j) std::memcpy(tmp + (j * 16 + i) * 2, ::evk_sim::g_ub + src.off_ + (i * 16 + j) * 2, 2);
    std::memcpy(::evk_sim::g_ub + dst.off_, tmp, 512);
    ::evk_sim::count_vec(op, ::evk_sim::Ty<T>::name, 256, 2);
}

}  // namespace AscendC

#endif  // EVK_SIM_GATHER_H
