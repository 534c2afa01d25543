// EvoKernel Ascend C emulator: the high-level last-axis reductions of CANN's advanced API, `Sum` and `Mean`
// (lib/reduce), written from the API documentation: a source of `outter` rows of `inner` elements each (the row
// length `n` rounded up to 32 bytes), one result per row. Summation follows the documented order, the basic
// ReduceSum's: pairwise within each 256-byte repeat, then pairwise over the partials, rounding to T at every
// step; Mean divides the sum by n, in accType when it is wider than T (half inputs summed in float). Checked:
// inner must be n rounded up to 32 bytes (the documentation says the result is wrong otherwise), the source,
// destination and sharedTmpBuffer must not overlap, half/float only. Counted as one reduce-class instruction
// over the rows (plus one per further level of partials), Mean adding a Muls (and two Casts with a wider
// accType): an assumption about CANN's implementation until measured.
#ifndef EVK_SIM_REDUCE_API_H
#define EVK_SIM_REDUCE_API_H

#include "evk_sim/common.h"
#include "evk_sim/math_api.h"

namespace AscendC {

struct SumParams {
    uint32_t outter = 1;
    uint32_t inner;
    uint32_t n;
};

struct MeanParams {
    uint32_t outter = 1;
    uint32_t inner;
    uint32_t n;
};

namespace evk_detail {

// the sums of the rows, in T (or in Acc when it is wider), into dst (scaled by `scale` when mean)
template <typename T, typename Acc>
inline void row_sums(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src,
                     const LocalTensor<uint8_t>* tmp, uint32_t outter, uint32_t inner, uint32_t n, bool mean,
                     ::evk_sim::SrcLoc loc) {
    using CT = typename ::evk_sim::Ty<T>::C;
    ::evk_sim::begin_instr(::evk_sim::PID_V);
    ::evk_sim::dtype_check(api, ::evk_sim::Ty<T>::kind, ::evk_sim::DT_HF, loc.file, loc.line);
    valid(dst.buf_, api, loc);
    valid(src.buf_, api, loc);
    if (tmp) valid(tmp->buf_, api, loc);
    ::evk_sim::ub_align(api, "dst", dst.off_, 32, loc.file, loc.line);
    ::evk_sim::ub_align(api, "src", src.off_, 32, loc.file, loc.line);
    const uint32_t padded = (n * sizeof(T) + 31) / 32 * 32 / sizeof(T);
    if (n == 0 || outter == 0 || inner != padded) {
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: params outter=%u inner=%u n=%u: inner must be n rounded up to 32 bytes (%u for this "
                             "type) and outter, n at least 1; otherwise the API's result is wrong",
                             api, outter, inner, n, padded);
        if (n == 0 || outter == 0 || inner < n) return;
    }
    const ::evk_sim::TD d = dst.td(), s = src.td();
    if (overlaps(d, outter, s, static_cast<int64_t>(outter) * inner))
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: the source and destination overlap; the API does not support it", api);
    if (tmp) {
        const ::evk_sim::TD t = ::evk_sim::TD{tmp->buf_, tmp->off_, 1};
        const int64_t tb = static_cast<int64_t>(tmp->GetSize());
        if (overlaps(t, tb, s, static_cast<int64_t>(outter) * inner) || overlaps(t, tb, d, outter))
            ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                                 "%s: sharedTmpBuffer overlaps the source or destination; the API does not support it",
                                 api);
    }
    for (uint32_t r = 0; r < outter; ++r)  // the n real elements of each row are read, not its padding
        ::evk_sim::ub_access(api, src.buf_, src.off_ + static_cast<int64_t>(r) * inner * sizeof(T),
                             static_cast<uint64_t>(n) * sizeof(T), false, ::evk_sim::PID_V, loc.file, loc.line);
    ::evk_sim::ub_access(api, dst.buf_, dst.off_, static_cast<uint64_t>(outter) * sizeof(T), true, ::evk_sim::PID_V,
                         loc.file, loc.line);
    // counting: one reduce instruction over the rows' repeats, one per further level of partials
    constexpr bool wide = sizeof(Acc) > sizeof(T);
    const uint32_t lanes = 256 / sizeof(Acc);
    const uint64_t per_row = (n + lanes - 1) / lanes;
    if (wide) ::evk_sim::count_vec("Cast", "half->float", static_cast<uint64_t>(outter) * n, outter * per_row);
    ::evk_sim::count_vec("RepeatReduceSum", ::evk_sim::Ty<Acc>::name, static_cast<uint64_t>(outter) * n,
                         outter * per_row);
    for (uint64_t p = per_row; p > 1; p = (p + lanes - 1) / lanes) {
        ::evk_sim::begin_instr(::evk_sim::PID_V);
        ::evk_sim::count_vec("RepeatReduceSum", ::evk_sim::Ty<Acc>::name, outter * p, outter * ((p + lanes - 1) / lanes));
    }
    if (mean) {
        ::evk_sim::begin_instr(::evk_sim::PID_V);
        ::evk_sim::count_vec("Muls", ::evk_sim::Ty<Acc>::name, outter, (outter * sizeof(Acc) + 255) / 256);
    }
    if (wide) ::evk_sim::count_vec("Cast", "float->half", outter, (outter * sizeof(T) + 255) / 256);
    using CA = typename ::evk_sim::Ty<Acc>::C;
    uint64_t ovf = 0;
    CA vals[256];
    CA* part = new CA[per_row + 1];
    for (uint32_t r = 0; r < outter; ++r) {
        const int64_t row = src.off_ + static_cast<int64_t>(r) * inner * sizeof(T);
        int np = 0;
        for (uint32_t i = 0; i < n; i += lanes) {
            const uint32_t k = n - i < lanes ? n - i : lanes;
            for (uint32_t l = 0; l < lanes; ++l)
                vals[l] = l < k ? static_cast<CA>(static_cast<float>(::evk_sim::ld<T>(row + (i + l) * sizeof(T)))) : CA(0);
            part[np++] = tree<Acc>(vals, static_cast<int>(lanes), RED_SUM, ovf);
        }
        while (np > 1) {
            int out = 0;
            for (int g = 0; g < np; g += static_cast<int>(lanes)) {
                const int k = np - g < static_cast<int>(lanes) ? np - g : static_cast<int>(lanes);
                for (int j = 0; j < k; ++j) vals[j] = part[g + j];
                part[out++] = tree<Acc>(vals, k, RED_SUM, ovf);
            }
            np = out;
        }
        CA v = part[0];
        if (mean) v = static_cast<CA>(static_cast<float>(v) * (1.0f / static_cast<float>(n)));
        ::evk_sim::st<T>(dst.off_ + static_cast<int64_t>(r) * sizeof(T), static_cast<CT>(static_cast<float>(v)), ovf);
    }
    delete[] part;
    if (ovf) ::evk_sim::report_half_overflow(api, ovf, loc.file, loc.line);
}

}  // namespace evk_detail

// Sum<T, reduceDim, isReuseSource, isBasicBlock>(dst, src, [sharedTmpBuffer,] SumParams)
template <typename T, int32_t reduceDim = -1, bool isReuseSource = false, bool isBasicBlock = false>
inline void Sum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer,
                const SumParams& sumParams, EVK_LOC) {
    evk_detail::row_sums<T, T>("Sum", dst, src, &sharedTmpBuffer, sumParams.outter, sumParams.inner, sumParams.n,
                               false, loc);
}
template <typename T, int32_t reduceDim = -1, bool isReuseSource = false, bool isBasicBlock = false>
inline void Sum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const SumParams& sumParams, EVK_LOC) {
    evk_detail::row_sums<T, T>("Sum", dst, src, nullptr, sumParams.outter, sumParams.inner, sumParams.n, false, loc);
}

// Mean<T, accType, isReuseSource, isBasicBlock, reduceDim>(dst, src, [sharedTmpBuffer,] MeanParams)
template <typename T, typename accType = T, bool isReuseSource = false, bool isBasicBlock = false,
          int32_t reduceDim = -1>
inline void Mean(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer,
                 const MeanParams& meanParams, EVK_LOC) {
    evk_detail::row_sums<T, accType>("Mean", dst, src, &sharedTmpBuffer, meanParams.outter, meanParams.inner,
                                     meanParams.n, true, loc);
}
template <typename T, typename accType = T, bool isReuseSource = false, bool isBasicBlock = false,
          int32_t reduceDim = -1>
inline void Mean(const LocalTensor<T>& dst, const LocalTensor<T>& src, const MeanParams& meanParams, EVK_LOC) {
    evk_detail::row_sums<T, accType>("Mean", dst, src, nullptr, meanParams.outter, meanParams.inner, meanParams.n,
                                     true, loc);
}

}  // namespace AscendC
#endif
