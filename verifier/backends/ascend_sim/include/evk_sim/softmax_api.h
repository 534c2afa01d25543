// EvoKernel Ascend C emulator: the high-level SoftMax, SimpleSoftMax and LogSoftMax APIs of CANN's advanced
// API (lib/activation), with their tiling structs (evk_sim/norm_tiling.h). Written from the API documentation;
// the checks and the counting are described in evk_sim/norm_common.h.
#ifndef EVK_SIM_SOFTMAX_API_H
#define EVK_SIM_SOFTMAX_API_H

#include "evk_sim/norm_common.h"

namespace AscendC {
namespace evk_norm {

// ---- SoftMax / SimpleSoftMax ----
template <typename T, typename U>
inline void softmax(const char* api, int mode, const LocalTensor<T>& dst, const LocalTensor<U>* sum,
                    const LocalTensor<U>* max, const LocalTensor<T>& src, const LocalTensor<uint8_t>* tmp,
                    const ::AscendC::tiling::SoftMaxTiling& tl, const SoftMaxShapeInfo& si, const SoftmaxConfig& cfg,
                    bool basic, ::evk_sim::SrcLoc loc) {
    const bool simple = mode == 1, lg = mode == 2;
    ::evk_sim::begin_instr(::evk_sim::PID_V);
    ::evk_sim::dtype_check(api, ::evk_sim::Ty<T>::kind, ::evk_sim::DT_HF, loc.file, loc.line);
    const uint32_t m = si.srcM ? si.srcM : cfg.oriSrcM ? cfg.oriSrcM : tl.srcM;
    const uint32_t k = si.srcK ? si.srcK : cfg.oriSrcK ? cfg.oriSrcK : tl.srcK;
    const uint32_t om = si.oriSrcM ? si.oriSrcM : m, ok = si.oriSrcK ? si.oriSrcK : k;
    if (m == 0 || k == 0) {
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: no shape: the tiling (srcM=%u, srcK=%u) was never filled by SoftMaxTilingFunc and "
                             "no SoftMaxShapeInfo was given",
                             api, tl.srcM, tl.srcK);
        return;
    }
    last_axis(api, "srcK", k, sizeof(T), loc);
    if (om > m || ok > k)
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: oriSrcM=%u, oriSrcK=%u exceed srcM=%u, srcK=%u", api, om, ok, m, k);
    // isBasicBlock: the documented condition on the shape (it is ignored when config fixes oriSrcM/oriSrcK)
    if (basic && !cfg.oriSrcM && !cfg.oriSrcK && (k >= 2048 || k < 256 / sizeof(T) || k % 64 != 0 || m % 8 != 0))
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: isBasicBlock=true needs srcK a multiple of 64 in [%u, 2048) and srcM a multiple of "
                             "8; got [%u, %u]",
                             api, static_cast<unsigned>(256 / sizeof(T)), m, k);
    // rows per pass: the tiling's, or (shape and tiling disagree, isCheckTiling) recomputed from the tmp buffer
    uint32_t rows = tl.splitM;
    const uint64_t rb = softmax_row_bytes(k);
    if (tl.srcM != m || tl.srcK != k) {
        if (!cfg.isCheckTiling) {
            ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                                 "%s: the shape [%u, %u] disagrees with the tiling [%u, %u] and isCheckTiling is "
                                 "false: the API uses the tiling as it is",
                                 api, m, k, tl.srcM, tl.srcK);
        }
        rows = tmp ? rows_for(tmp->GetSize(), rb, m) : m;
        if (tmp && rows == 0)
            tmp_check(api, tmp, rb, "one row of the recomputed tiling", loc);
    } else if (rows == 0) {
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: the tiling has splitM=0: SoftMaxTilingFunc was given less than "
                             "GetSoftMaxMinTmpSize bytes",
                             api);
    } else {
        tmp_check(api, tmp, rows * rb, "the tiling (splitM rows x row bytes)", loc);
    }
    const uint32_t blk = 32 / sizeof(U);
    bool ok_sizes = holds(api, "dst", dst, uint64_t(m) * k, loc) & holds(api, "src", src, uint64_t(m) * k, loc);
    if (sum) ok_sizes &= holds(api, simple ? "inSumTensor" : "sumTensor", *sum, uint64_t(m) * blk, loc);
    if (max) ok_sizes &= holds(api, simple ? "inMaxTensor" : "maxTensor", *max, uint64_t(m) * blk, loc);
    if (!ok_sizes) return;
    ::evk_sim::ub_align(api, "dst", dst.off_, 32, loc.file, loc.line);
    ::evk_sim::ub_align(api, "src", src.off_, 32, loc.file, loc.line);
    const Reg rd = reg("dst", dst, uint64_t(m) * k), rs = reg("src", src, uint64_t(m) * k), rt = tmp_reg(tmp);
    no_overlap(api, rd, rs, !lg, loc);  // LogSoftMax: no reuse at all
    no_overlap(api, rt, rd, false, loc);
    no_overlap(api, rt, rs, false, loc);
    Reg r2[2];
    int n2 = 0;
    if (sum) r2[n2++] = reg(simple ? "inSumTensor" : "sumTensor", *sum, uint64_t(m) * blk);
    if (max) r2[n2++] = reg(simple ? "inMaxTensor" : "maxTensor", *max, uint64_t(m) * blk);
    for (int i = 0; i < n2; ++i) {
        ::evk_sim::ub_align(api, r2[i].name, r2[i].off, 32, loc.file, loc.line);
        no_overlap(api, r2[i], rd, false, loc);
        no_overlap(api, r2[i], rs, false, loc);
        no_overlap(api, r2[i], rt, false, loc);
    }
    if (n2 == 2) no_overlap(api, r2[0], r2[1], false, loc);
    access(api, src, uint64_t(m) * k, false, loc);
    if (simple) {
        access(api, *sum, uint64_t(m) * blk, false, loc);
        access(api, *max, uint64_t(m) * blk, false, loc);
    }
    access(api, dst, uint64_t(m) * k, true, loc);
    if (!simple && sum) access(api, *sum, uint64_t(m) * blk, true, loc);
    if (!simple && max) access(api, *max, uint64_t(m) * blk, true, loc);
    // counting (the documented steps, in float): [Cast] ReduceMax Brcb Sub Exp ReduceSum Brcb Div [Cast];
    // SimpleSoftMax: [Cast] Sub Exp Div [Cast]
    const uint64_t n = uint64_t(m) * k;
    constexpr bool hf = sizeof(T) == 2;
    if (hf) step("Cast", "half->float", n, 4);
    if (!simple) step("WholeReduceMax", "float", n, 4), step("Brcb", "float", uint64_t(m) * 8, 4);
    step("Sub", "float", n, 4);
    step("Exp", "float", n, 4);
    if (!simple) step("WholeReduceSum", "float", n, 4), step("Brcb", "float", uint64_t(m) * 8, 4);
    step("Div", "float", n, 4);
    if (lg) step("Ln", "float", n, 4), step("Muls", "float", n, 4);  // log10 x = ln x / ln 10
    if (hf) step("Cast", "float->half", n, 4);
    // compute
    uint64_t ovf = 0;
    std::vector<double> row(k);
    for (uint32_t r = 0; r < m; ++r) {
        const int64_t so = src.off_ + int64_t(r) * k * sizeof(T), d0 = dst.off_ + int64_t(r) * k * sizeof(T);
        for (uint32_t c = 0; c < k; ++c) row[c] = ld<T>(so + c * sizeof(T));
        double mx, s;
        if (simple) {
            mx = ld<U>(max->off_ + int64_t(r) * blk * sizeof(U));
            s = ld<U>(sum->off_ + int64_t(r) * blk * sizeof(U));
        } else {
            mx = -INFINITY;
            for (uint32_t c = 0; c < ok; ++c) mx = row[c] > mx ? row[c] : mx;
            s = 0;
            for (uint32_t c = 0; c < ok; ++c) s += ::evk_sim::m::exp(row[c] - mx);
        }
        if (lg)  // the documented log10 of the softmax, as (x - max - ln sum) / ln 10 (no underflow to log 0)
            for (uint32_t c = 0; c < k; ++c) st<T>(d0 + c * sizeof(T), (row[c] - mx - ::evk_sim::m::log(s)) / ::evk_sim::m::log(10.0), ovf);
        else
            for (uint32_t c = 0; c < k; ++c) st<T>(d0 + c * sizeof(T), ::evk_sim::m::exp(row[c] - mx) / s, ovf);
        if (!simple)
            for (uint32_t j = 0; j < blk; ++j) {
                if (sum) st<U>(sum->off_ + (int64_t(r) * blk + j) * sizeof(U), s, ovf);
                if (max) st<U>(max->off_ + (int64_t(r) * blk + j) * sizeof(U), mx, ovf);
            }
    }
    if (ovf) ::evk_sim::report_half_overflow(api, ovf, loc.file, loc.line);
}
}  // namespace evk_norm

// ---- SoftMax<T, isReuseSource, isBasicBlock, isDataFormatNZ, config> ----
#define EVK_SM_TPL template <typename T, bool isReuseSource = false, bool isBasicBlock = false, \
                             bool isDataFormatNZ = false, const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
#define EVK_SM_NZ                                                                                                  \
    if (isDataFormatNZ)                                                                                            \
        ::evk_sim::violation(EVK_RULE_UNSUPPORTED_API, ::evk_sim::SEV_ERROR, loc.file, loc.line,                   \
                             "SoftMax: the NZ data format (isDataFormatNZ=true) is not emulated; use ND");
EVK_SM_TPL
inline void SoftMax(const LocalTensor<T>& dstTensor, const LocalTensor<T>& sumTensor, const LocalTensor<T>& maxTensor,
                    const LocalTensor<T>& srcTensor, const LocalTensor<uint8_t>& sharedTmpBuffer,
                    const ::AscendC::tiling::SoftMaxTiling& tiling, const SoftMaxShapeInfo& softmaxShapeInfo = {},
                    EVK_LOC) {
    EVK_SM_NZ
    evk_norm::softmax<T, T>("SoftMax", 0, dstTensor, &sumTensor, &maxTensor, srcTensor, &sharedTmpBuffer, tiling,
                            softmaxShapeInfo, config, isBasicBlock, loc);
}
EVK_SM_TPL
inline void SoftMax(const LocalTensor<half>& dstTensor, const LocalTensor<float>& sumTensor,
                    const LocalTensor<float>& maxTensor, const LocalTensor<half>& srcTensor,
                    const LocalTensor<uint8_t>& sharedTmpBuffer, const ::AscendC::tiling::SoftMaxTiling& tiling,
                    const SoftMaxShapeInfo& softmaxShapeInfo = {}, EVK_LOC) {
    EVK_SM_NZ
    evk_norm::softmax<half, float>("SoftMax", 0, dstTensor, &sumTensor, &maxTensor, srcTensor, &sharedTmpBuffer,
                                   tiling, softmaxShapeInfo, config, isBasicBlock, loc);
}
EVK_SM_TPL
inline void SoftMax(const LocalTensor<T>& dstTensor, const LocalTensor<T>& sumTensor, const LocalTensor<T>& maxTensor,
                    const LocalTensor<T>& srcTensor, const ::AscendC::tiling::SoftMaxTiling& tiling,
                    const SoftMaxShapeInfo& softmaxShapeInfo = {}, EVK_LOC) {
    EVK_SM_NZ
    evk_norm::softmax<T, T>("SoftMax", 0, dstTensor, &sumTensor, &maxTensor, srcTensor, nullptr, tiling,
                            softmaxShapeInfo, config, isBasicBlock, loc);
}
EVK_SM_TPL
inline void SoftMax(const LocalTensor<half>& dstTensor, const LocalTensor<float>& sumTensor,
                    const LocalTensor<float>& maxTensor, const LocalTensor<half>& srcTensor,
                    const ::AscendC::tiling::SoftMaxTiling& tiling, const SoftMaxShapeInfo& softmaxShapeInfo = {},
                    EVK_LOC) {
    EVK_SM_NZ
    evk_norm::softmax<half, float>("SoftMax", 0, dstTensor, &sumTensor, &maxTensor, srcTensor, nullptr, tiling,
                                   softmaxShapeInfo, config, isBasicBlock, loc);
}
template <typename T, bool isReuseSource = false, bool isBasicBlock = false,
          const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
inline void SoftMax(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                    const LocalTensor<uint8_t>& sharedTmpBuffer, const ::AscendC::tiling::SoftMaxTiling& tiling,
                    const SoftMaxShapeInfo& softmaxShapeInfo = {}, EVK_LOC) {
    evk_norm::softmax<T, T>("SoftMax", 0, dstTensor, static_cast<const LocalTensor<T>*>(nullptr),
                            static_cast<const LocalTensor<T>*>(nullptr), srcTensor, &sharedTmpBuffer, tiling,
                            softmaxShapeInfo, config, isBasicBlock, loc);
}
template <typename T, bool isReuseSource = false, bool isBasicBlock = false,
          const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
inline void SoftMax(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                    const ::AscendC::tiling::SoftMaxTiling& tiling, const SoftMaxShapeInfo& softmaxShapeInfo = {},
                    EVK_LOC) {
    evk_norm::softmax<T, T>("SoftMax", 0, dstTensor, static_cast<const LocalTensor<T>*>(nullptr),
                            static_cast<const LocalTensor<T>*>(nullptr), srcTensor, nullptr, tiling, softmaxShapeInfo,
                            config, isBasicBlock, loc);
}

// ---- SimpleSoftMax: dst = exp(src - inMax) / inSum, with the max and sum given (one 32-byte block per row) ----
EVK_SM_TPL
inline void SimpleSoftMax(const LocalTensor<T>& dstTensor, const LocalTensor<T>& inSumTensor,
                          const LocalTensor<T>& inMaxTensor, const LocalTensor<T>& srcTensor,
                          const LocalTensor<uint8_t>& sharedTmpBuffer, const ::AscendC::tiling::SoftMaxTiling& tiling,
                          const SoftMaxShapeInfo& softmaxShapeInfo = {}, EVK_LOC) {
    EVK_SM_NZ
    evk_norm::softmax<T, T>("SimpleSoftMax", 1, dstTensor, &inSumTensor, &inMaxTensor, srcTensor, &sharedTmpBuffer,
                            tiling, softmaxShapeInfo, config, isBasicBlock, loc);
}
EVK_SM_TPL
inline void SimpleSoftMax(const LocalTensor<half>& dstTensor, const LocalTensor<float>& inSumTensor,
                          const LocalTensor<float>& inMaxTensor, const LocalTensor<half>& srcTensor,
                          const LocalTensor<uint8_t>& sharedTmpBuffer, const ::AscendC::tiling::SoftMaxTiling& tiling,
                          const SoftMaxShapeInfo& softmaxShapeInfo = {}, EVK_LOC) {
    EVK_SM_NZ
    evk_norm::softmax<half, float>("SimpleSoftMax", 1, dstTensor, &inSumTensor, &inMaxTensor, srcTensor,
                                   &sharedTmpBuffer, tiling, softmaxShapeInfo, config, isBasicBlock, loc);
}
EVK_SM_TPL
inline void SimpleSoftMax(const LocalTensor<T>& dstTensor, const LocalTensor<T>& inSumTensor,
                          const LocalTensor<T>& inMaxTensor, const LocalTensor<T>& srcTensor,
                          const ::AscendC::tiling::SoftMaxTiling& tiling, const SoftMaxShapeInfo& softmaxShapeInfo = {},
                          EVK_LOC) {
    EVK_SM_NZ
    evk_norm::softmax<T, T>("SimpleSoftMax", 1, dstTensor, &inSumTensor, &inMaxTensor, srcTensor, nullptr, tiling,
                            softmaxShapeInfo, config, isBasicBlock, loc);
}
EVK_SM_TPL
inline void SimpleSoftMax(const LocalTensor<half>& dstTensor, const LocalTensor<float>& inSumTensor,
                          const LocalTensor<float>& inMaxTensor, const LocalTensor<half>& srcTensor,
                          const ::AscendC::tiling::SoftMaxTiling& tiling, const SoftMaxShapeInfo& softmaxShapeInfo = {},
                          EVK_LOC) {
    EVK_SM_NZ
    evk_norm::softmax<half, float>("SimpleSoftMax", 1, dstTensor, &inSumTensor, &inMaxTensor, srcTensor, nullptr,
                                   tiling, softmaxShapeInfo, config, isBasicBlock, loc);
}
// ---- LogSoftMax<T, isReuseSource, isDataFormatNZ>: dst = log10(softmax(src)) (the documented base-10 log), sum and
// max outputs as SoftMax's; src and dst must not overlap ----
template <typename T, bool isReuseSource = false, bool isDataFormatNZ = false>
inline void LogSoftMax(const LocalTensor<T>& dst, const LocalTensor<T>& sum, const LocalTensor<T>& max,
                       const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer,
                       const ::AscendC::tiling::LogSoftMaxTiling& tiling, const SoftMaxShapeInfo& softmaxShapeInfo = {},
                       EVK_LOC) {
    if (isDataFormatNZ)
        ::evk_sim::violation(EVK_RULE_UNSUPPORTED_API, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "LogSoftMax: the NZ data format (isDataFormatNZ=true) is not emulated; use ND");
    evk_norm::softmax<T, T>("LogSoftMax", 2, dst, &sum, &max, src, &sharedTmpBuffer, tiling, softmaxShapeInfo,
                            SOFTMAX_DEFAULT_CFG, false, loc);
}
#undef EVK_SM_TPL
#undef EVK_SM_NZ

}  // namespace AscendC
#endif
