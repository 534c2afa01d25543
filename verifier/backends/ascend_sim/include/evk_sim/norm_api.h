// EvoKernel Ascend C emulator: the high-level LayerNorm (the [B, S, H] form with mean and variance, the [A, R]
// form with mean and rstd) and RmsNorm APIs of CANN's advanced API (lib/normalization), with their tiling
// structs (evk_sim/norm_tiling.h). Written from the API documentation; the checks and the counting are
// described in evk_sim/norm_common.h. The SoftMax family is in evk_sim/softmax_api.h.
#ifndef EVK_SIM_NORM_API_H
#define EVK_SIM_NORM_API_H

#include "evk_sim/norm_common.h"
#include "evk_sim/softmax_api.h"

namespace AscendC {
namespace evk_norm {

// ---- LayerNorm and RmsNorm: one pass over `rows` rows of `h` stored elements, statistics over the first `n` ----
// kind 0: LayerNorm [B,S,H] (mean, variance in Tm), 1: LayerNorm [A,R] (mean, rstd in float), 2: RmsNorm
template <typename T, typename U, typename Tm>
inline void norm_rows(int kind, const LocalTensor<T>& out, const LocalTensor<Tm>* mean, const LocalTensor<Tm>* var,
                      const LocalTensor<T>& x, const LocalTensor<U>* gamma, const LocalTensor<U>* beta, double eps,
                      uint32_t rows, uint32_t h, uint32_t n, uint32_t wcols, bool out_rstd,
                      ::evk_sim::SrcLoc loc) {
    uint64_t ovf = 0;
    std::vector<double> v(h), g(h, 1.0), b(h, 0.0);
    for (uint32_t c = 0; c < h; ++c) {
        if (gamma) g[c] = ld<U>(gamma->off_ + int64_t(c) * sizeof(U));
        if (beta) b[c] = ld<U>(beta->off_ + int64_t(c) * sizeof(U));
    }
    for (uint32_t r = 0; r < rows; ++r) {
        const int64_t xo = x.off_ + int64_t(r) * h * sizeof(T), oo = out.off_ + int64_t(r) * h * sizeof(T);
        for (uint32_t c = 0; c < h; ++c) v[c] = ld<T>(xo + c * sizeof(T));
        double mu = 0, s2 = 0;
        if (kind != 2) {
            for (uint32_t c = 0; c < n; ++c) mu += v[c];
            mu /= n;
            for (uint32_t c = 0; c < n; ++c) s2 += (v[c] - mu) * (v[c] - mu);
        } else {
            for (uint32_t c = 0; c < n; ++c) s2 += v[c] * v[c];
        }
        const double va = s2 / n, rstd = 1.0 / std::sqrt(va + eps);
        for (uint32_t c = 0; c < wcols; ++c) st<T>(oo + c * sizeof(T), (v[c] - mu) * rstd * g[c] + b[c], ovf);
        if (mean) st<Tm>(mean->off_ + int64_t(r) * sizeof(Tm), mu, ovf);
        if (var) st<Tm>(var->off_ + int64_t(r) * sizeof(Tm), out_rstd ? rstd : va, ovf);
    }
    if (ovf) ::evk_sim::report_half_overflow(kind == 2 ? "RmsNorm" : "LayerNorm", ovf, loc.file, loc.line);
}

template <typename T>
inline void layernorm_bsh(const LocalTensor<T>& out, const LocalTensor<T>& mean, const LocalTensor<T>& var,
                          const LocalTensor<T>& x, const LocalTensor<T>& gamma, const LocalTensor<T>& beta,
                          const LocalTensor<uint8_t>* tmp, double eps, const ::AscendC::tiling::LayerNormTiling& tl,
                          ::evk_sim::SrcLoc loc) {
    const char* api = "LayerNorm";
    ::evk_sim::begin_instr(::evk_sim::PID_V);
    ::evk_sim::dtype_check(api, ::evk_sim::Ty<T>::kind, ::evk_sim::DT_HF, loc.file, loc.line);
    const uint32_t bs = tl.bLength * tl.sLength, h = tl.hLength, oh = tl.originalHLength ? tl.originalHLength : h;
    if (bs == 0 || h == 0) {
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: the tiling (bLength=%u, sLength=%u, hLength=%u) was never filled by "
                             "GetLayerNormNDTilingInfo",
                             api, tl.bLength, tl.sLength, h);
        return;
    }
    last_axis(api, "H", h, sizeof(T), loc);
    if (oh > h)
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: originalHLength %u exceeds hLength %u", api, oh, h);
    if (tl.bsCurLength == 0)
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: the tiling has bsCurLength=0: GetLayerNormNDTilingInfo was given less than the "
                             "minimum of GetLayerNormMaxMinTmpSize",
                             api);
    else
        tmp_check(api, tmp, uint64_t(tl.bsCurLength) * layernorm_row_bytes(h), "the tiling (bsCurLength rows)", loc);
    bool okz = holds(api, "output", out, uint64_t(bs) * h, loc) & holds(api, "inputX", x, uint64_t(bs) * h, loc) &
               holds(api, "outputMean", mean, bs, loc) & holds(api, "outputVariance", var, bs, loc) &
               holds(api, "gamma", gamma, h, loc) & holds(api, "beta", beta, h, loc);
    if (!okz) return;
    const Reg ro = reg("output", out, uint64_t(bs) * h), rx = reg("inputX", x, uint64_t(bs) * h),
              rm = reg("outputMean", mean, bs), rv = reg("outputVariance", var, bs), rg = reg("gamma", gamma, h),
              rbt = reg("beta", beta, h), rt = tmp_reg(tmp);
    const Reg all[] = {ro, rx, rm, rv, rg, rbt, rt};
    for (const Reg& a : all) ::evk_sim::ub_align(api, a.name, a.off, 32, loc.file, loc.line);
    no_overlap(api, ro, rx, true, loc);  // output and inputX may be the same tensor
    for (int i = 0; i < 7; ++i)
        for (int j = i + 1; j < 7; ++j)
            if (!(i == 0 && j == 1) && !(i >= 4 && j <= 5)) no_overlap(api, all[i], all[j], false, loc);
    access(api, x, uint64_t(bs) * h, false, loc);
    access(api, gamma, h, false, loc);
    access(api, beta, h, false, loc);
    access(api, out, uint64_t(bs) * h, true, loc);
    access(api, mean, bs, true, loc);
    access(api, var, bs, true, loc);
    // counting (the documented steps): [Cast] Muls ReduceSum | Sub Mul Muls ReduceSum | Duplicate Adds Ln Muls Exp
    // | Mul Mul Add [Cast], in float
    const uint64_t e = uint64_t(bs) * h;
    constexpr bool hf = sizeof(T) == 2;
    if (hf) step("Cast", "half->float", e, 4);
    for (const char* op : {"Muls", "WholeReduceSum", "Sub", "Mul", "Muls", "WholeReduceSum"}) step(op, "float", e, 4);
    step("Brcb", "float", uint64_t(bs) * 8, 4);
    for (const char* op : {"Adds", "Ln", "Muls", "Exp", "Mul", "Mul", "Add"}) step(op, "float", e, 4);
    if (hf) step("Cast", "float->half", e, 4);
    norm_rows<T, T, T>(0, out, &mean, &var, x, &gamma, &beta, eps, bs, h, oh, h, false, loc);
}

template <typename U, typename T, const LayerNormConfig& cfg>
inline void layernorm_ar(const LocalTensor<T>& out, const LocalTensor<float>& mean, const LocalTensor<float>& rstd,
                         const LocalTensor<T>& x, const LocalTensor<U>& gamma, const LocalTensor<U>& beta, float eps,
                         const LocalTensor<uint8_t>* tmp, const LayerNormPara& para,
                         const ::AscendC::tiling::LayerNormSeparateTiling& tl, ::evk_sim::SrcLoc loc) {
    const char* api = "LayerNorm";
    ::evk_sim::begin_instr(::evk_sim::PID_V);
    ::evk_sim::dtype_check(api, ::evk_sim::Ty<T>::kind, ::evk_sim::DT_HF, loc.file, loc.line);
    ::evk_sim::dtype_check(api, ::evk_sim::Ty<U>::kind, ::evk_sim::DT_HF, loc.file, loc.line);
    if (sizeof(U) < sizeof(T))
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: gamma/beta (%s) are less precise than inputX (%s); the documentation requires at "
                             "least the input's precision",
                             api, ::evk_sim::Ty<U>::name, ::evk_sim::Ty<T>::name);
    if (!cfg.isOutputRstd)
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: LayerNormConfig.isOutputRstd=false (variance output) is supported on Ascend 950 "
                             "only, not on the 910B",
                             api);
    const uint32_t a = para.aLength, r = para.rLength, rp = para.rLengthWithPadding;
    const uint32_t per = 32 / sizeof(T);
    if (a == 0 || r == 0 || tl.rLength == 0) {
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: empty shape (aLength=%u, rLength=%u) or a tiling never filled (rLength=%u)", api, a,
                             r, tl.rLength);
        return;
    }
    if (rp != (r + per - 1) / per * per) {
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: rLengthWithPadding=%u must be rLength=%u rounded up to 32 bytes (%u)", api, rp, r,
                             (r + per - 1) / per * per);
        if (rp < r) return;
    }
    if (a > tl.aLength || r != tl.rLength)
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: LayerNormPara [A=%u, R=%u] disagrees with the tiling [A=%u, R=%u] (A may be "
                             "smaller, R must match)",
                             api, a, r, tl.aLength, tl.rLength);
    if (tl.aCurLength == 0)
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: the tiling has aCurLength=0: GetLayerNormNDTilingInfo was given less than the "
                             "minimum of GetLayerNormMaxMinTmpSize",
                             api);
    else
        tmp_check(api, tmp, uint64_t(tl.aCurLength) * layernorm_row_bytes((r + 7) / 8 * 8),
                  "the tiling (aCurLength rows)", loc);
    const bool wstat = !cfg.isOnlyOutput;
    bool okz = holds(api, "output", out, uint64_t(a) * rp, loc) & holds(api, "inputX", x, uint64_t(a) * rp, loc);
    if (wstat) okz &= holds(api, "outputMean", mean, a, loc) & holds(api, "outputRstd", rstd, a, loc);
    if (!cfg.isNoGamma) okz &= holds(api, "gamma", gamma, r, loc);
    if (!cfg.isNoBeta) okz &= holds(api, "beta", beta, r, loc);
    if (!okz) return;
    Reg all[7];
    int na = 0;
    all[na++] = reg("output", out, uint64_t(a) * rp);
    all[na++] = reg("inputX", x, uint64_t(a) * rp);
    if (wstat) all[na++] = reg("outputMean", mean, a), all[na++] = reg("outputRstd", rstd, a);
    if (!cfg.isNoGamma) all[na++] = reg("gamma", gamma, r);
    if (!cfg.isNoBeta) all[na++] = reg("beta", beta, r);
    if (tmp) all[na++] = tmp_reg(tmp);
    for (int i = 0; i < na; ++i) ::evk_sim::ub_align(api, all[i].name, all[i].off, 32, loc.file, loc.line);
    for (int i = 0; i < na; ++i)  // no reuse at all (gamma and beta may share storage: both inputs)
        for (int j = i + 1; j < na; ++j)
            if (!((all[i].name[0] == 'g' || all[i].name[0] == 'b') && (all[j].name[0] == 'g' || all[j].name[0] == 'b')))
                no_overlap(api, all[i], all[j], false, loc);
    for (uint32_t i = 0; i < a; ++i)
        ::evk_sim::ub_access(api, x.buf_, x.off_ + int64_t(i) * rp * sizeof(T), uint64_t(r) * sizeof(T), false,
                             ::evk_sim::PID_V, loc.file, loc.line);
    if (!cfg.isNoGamma) access(api, gamma, r, false, loc);
    if (!cfg.isNoBeta) access(api, beta, r, false, loc);
    for (uint32_t i = 0; i < a; ++i)
        ::evk_sim::ub_access(api, out.buf_, out.off_ + int64_t(i) * rp * sizeof(T), uint64_t(r) * sizeof(T), true,
                             ::evk_sim::PID_V, loc.file, loc.line);
    if (wstat) access(api, mean, a, true, loc), access(api, rstd, a, true, loc);
    // counting (the documented steps): [Cast] Muls Add WholeReduceSum | Sub Mul Muls Add WholeReduceSum Adds Rsqrt |
    // Sub Mul [Mul] [Add] [Cast], in float
    const uint64_t e = uint64_t(a) * rp;
    if (sizeof(T) == 2) step("Cast", "half->float", e, 4);
    for (const char* op : {"Muls", "Add", "WholeReduceSum", "Sub", "Mul", "Muls", "Add", "WholeReduceSum"})
        step(op, "float", e, 4);
    step("Adds", "float", a, 4);
    step("Rsqrt", "float", a, 4);
    step("Sub", "float", e, 4);
    step("Mul", "float", e, 4);
    if (!cfg.isNoGamma) step("Mul", "float", e, 4);
    if (!cfg.isNoBeta) step("Add", "float", e, 4);
    if (sizeof(T) == 2) step("Cast", "float->half", e, 4);
    // rows of rp stored elements; statistics over r, output written over r
    uint64_t ovf = 0;
    for (uint32_t i = 0; i < a; ++i) {
        const int64_t xo = x.off_ + int64_t(i) * rp * sizeof(T), oo = out.off_ + int64_t(i) * rp * sizeof(T);
        double mu = 0, s2 = 0;
        for (uint32_t c = 0; c < r; ++c) mu += ld<T>(xo + c * sizeof(T));
        mu /= r;
        for (uint32_t c = 0; c < r; ++c) {
            const double d = ld<T>(xo + c * sizeof(T)) - mu;
            s2 += d * d;
        }
        const double rs = 1.0 / std::sqrt(s2 / r + static_cast<double>(eps));
        for (uint32_t c = 0; c < r; ++c) {
            const double gv = cfg.isNoGamma ? 1.0 : ld<U>(gamma.off_ + int64_t(c) * sizeof(U));
            const double bv = cfg.isNoBeta ? 0.0 : ld<U>(beta.off_ + int64_t(c) * sizeof(U));
            st<T>(oo + c * sizeof(T), (ld<T>(xo + c * sizeof(T)) - mu) * rs * gv + bv, ovf);
        }
        if (wstat) st<float>(mean.off_ + int64_t(i) * 4, mu, ovf), st<float>(rstd.off_ + int64_t(i) * 4, rs, ovf);
    }
    if (ovf) ::evk_sim::report_half_overflow(api, ovf, loc.file, loc.line);
}

template <typename T, bool basic>
inline void rmsnorm(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& gamma,
                    const LocalTensor<uint8_t>* tmp, double eps, const ::AscendC::tiling::RmsNormTiling& tl,
                    ::evk_sim::SrcLoc loc) {
    const char* api = "RmsNorm";
    ::evk_sim::begin_instr(::evk_sim::PID_V);
    ::evk_sim::dtype_check(api, ::evk_sim::Ty<T>::kind, ::evk_sim::DT_HF, loc.file, loc.line);
    const uint32_t bs = tl.bLength * tl.sLength, h = tl.hLength, oh = tl.originalHLength ? tl.originalHLength : h;
    if (bs == 0 || h == 0) {
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: the tiling (bLength=%u, sLength=%u, hLength=%u) was never filled by "
                             "GetRmsNormTilingInfo",
                             api, tl.bLength, tl.sLength, h);
        return;
    }
    last_axis(api, "H", h, sizeof(T), loc);
    if (oh > h)
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: originalHLength %u exceeds hLength %u", api, oh, h);
    if (basic && (h % 64 != 0 || h >= 2048 || bs % 8 != 0))
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: isBasicBlock=true needs H a multiple of 64 below 2048 and B*S a multiple of 8; "
                             "got H=%u, B*S=%u",
                             api, h, bs);
    if (tl.mainBsLength == 0)
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: the tiling has mainBsLength=0 (GetRmsNormTilingInfo failed)", api);
    else
        tmp_check(api, tmp, uint64_t(tl.mainBsLength) * rmsnorm_row_bytes(h), "the tiling (mainBsLength rows)", loc);
    const bool okz = holds(api, "dstLocal", dst, uint64_t(bs) * h, loc) &
                     holds(api, "srcLocal", src, uint64_t(bs) * h, loc) & holds(api, "gammaLocal", gamma, h, loc);
    if (!okz) return;
    const Reg rd = reg("dstLocal", dst, uint64_t(bs) * h), rs = reg("srcLocal", src, uint64_t(bs) * h),
              rg = reg("gammaLocal", gamma, h), rt = tmp_reg(tmp);
    for (const Reg& r : {rd, rs, rg, rt}) ::evk_sim::ub_align(api, r.name, r.off, 32, loc.file, loc.line);
    no_overlap(api, rd, rs, true, loc);
    no_overlap(api, rd, rg, false, loc);
    no_overlap(api, rt, rd, false, loc);
    no_overlap(api, rt, rs, false, loc);
    no_overlap(api, rt, rg, false, loc);
    access(api, src, uint64_t(bs) * h, false, loc);
    access(api, gamma, h, false, loc);
    access(api, dst, uint64_t(bs) * h, true, loc);
    // counting (assumed composition): [Cast] Mul WholeReduceSum Muls Adds Sqrt Brcb Div Mul [Cast], in float
    const uint64_t e = uint64_t(bs) * h;
    if (sizeof(T) == 2) step("Cast", "half->float", e, 4);
    step("Mul", "float", e, 4);
    step("WholeReduceSum", "float", e, 4);
    for (const char* op : {"Muls", "Adds", "Sqrt"}) step(op, "float", bs, 4);
    step("Brcb", "float", uint64_t(bs) * 8, 4);
    step("Div", "float", e, 4);
    step("Mul", "float", e, 4);
    if (sizeof(T) == 2) step("Cast", "float->half", e, 4);
    norm_rows<T, T, T>(2, dst, nullptr, nullptr, src, &gamma, nullptr, eps, bs, h, oh, h, false, loc);
}

}  // namespace evk_norm

// ---- LayerNorm, [B, S, H]: output, outputMean and outputVariance ([B, S]) ----
template <typename T, bool isReuseSource = false>
inline void LayerNorm(const LocalTensor<T>& output, const LocalTensor<T>& outputMean,
                      const LocalTensor<T>& outputVariance, const LocalTensor<T>& inputX, const LocalTensor<T>& gamma,
                      const LocalTensor<T>& beta, const LocalTensor<uint8_t>& sharedTmpBuffer, const T epsilon,
                      const ::AscendC::tiling::LayerNormTiling& tiling, EVK_LOC) {
    evk_norm::layernorm_bsh<T>(output, outputMean, outputVariance, inputX, gamma, beta, &sharedTmpBuffer,
                               static_cast<float>(epsilon), tiling, loc);
}
template <typename T, bool isReuseSource = false>
inline void LayerNorm(const LocalTensor<T>& output, const LocalTensor<T>& outputMean,
                      const LocalTensor<T>& outputVariance, const LocalTensor<T>& inputX, const LocalTensor<T>& gamma,
                      const LocalTensor<T>& beta, const T epsilon, const ::AscendC::tiling::LayerNormTiling& tiling,
                      EVK_LOC) {
    evk_norm::layernorm_bsh<T>(output, outputMean, outputVariance, inputX, gamma, beta, nullptr,
                               static_cast<float>(epsilon), tiling, loc);
}

// ---- LayerNorm, [A, R]: output, outputMean and outputRstd ([A], float) ----
template <typename U, typename T, bool isReuseSource = false, const LayerNormConfig& config = LNCFG_NORM>
inline void LayerNorm(const LocalTensor<T>& output, const LocalTensor<float>& outputMean,
                      const LocalTensor<float>& outputRstd, const LocalTensor<T>& inputX, const LocalTensor<U>& gamma,
                      const LocalTensor<U>& beta, const float epsilon, const LocalTensor<uint8_t>& sharedTmpBuffer,
                      const LayerNormPara& para, const ::AscendC::tiling::LayerNormSeparateTiling& tiling, EVK_LOC) {
    evk_norm::layernorm_ar<U, T, config>(output, outputMean, outputRstd, inputX, gamma, beta, epsilon,
                                         &sharedTmpBuffer, para, tiling, loc);
}
template <typename U, typename T, bool isReuseSource = false, const LayerNormConfig& config = LNCFG_NORM>
inline void LayerNorm(const LocalTensor<T>& output, const LocalTensor<float>& outputMean,
                      const LocalTensor<float>& outputRstd, const LocalTensor<T>& inputX, const LocalTensor<U>& gamma,
                      const LocalTensor<U>& beta, const float epsilon, const LayerNormPara& para,
                      const ::AscendC::tiling::LayerNormSeparateTiling& tiling, EVK_LOC) {
    evk_norm::layernorm_ar<U, T, config>(output, outputMean, outputRstd, inputX, gamma, beta, epsilon, nullptr, para,
                                         tiling, loc);
}

// ---- RmsNorm<T, isBasicBlock>: dst = src / sqrt(mean(src^2) + epsilon) * gamma over the last axis ----
template <typename T, bool isBasicBlock = false>
inline void RmsNorm(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const LocalTensor<T>& gammaLocal,
                    const LocalTensor<uint8_t>& sharedTmpBuffer, const T epsilon,
                    const ::AscendC::tiling::RmsNormTiling& tiling, EVK_LOC) {
    evk_norm::rmsnorm<T, isBasicBlock>(dstLocal, srcLocal, gammaLocal, &sharedTmpBuffer, static_cast<float>(epsilon),
                                       tiling, loc);
}
template <typename T, bool isBasicBlock = false>
inline void RmsNorm(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const LocalTensor<T>& gammaLocal,
                    const T epsilon, const ::AscendC::tiling::RmsNormTiling& tiling, EVK_LOC) {
    evk_norm::rmsnorm<T, isBasicBlock>(dstLocal, srcLocal, gammaLocal, nullptr, static_cast<float>(epsilon), tiling,
                                       loc);
}

}  // namespace AscendC
#endif