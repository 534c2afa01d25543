// EvoKernel Ascend C emulator: the high-level normalisation APIs of CANN's advanced API: SoftMax,
// SimpleSoftMax and LogSoftMax (lib/activation), LayerNorm (the [B, S, H] form with mean and variance, the [A, R] form with
// mean and rstd) and RmsNorm (lib/normalization), with their tiling structs (evk_sim/norm_tiling.h).
//
// Written from the API documentation (signatures, the documented formulas, layout and reuse rules), not from
// CANN's code. Each call computes its formula per row in double from the stored elements and rounds each output
// once to its type (a precise implementation; CANN computes half inputs in float, so a device result may differ
// by the last bit). Checked, as named violations at the caller's line:
//   - half/float only; the last axis (srcK, H, rLengthWithPadding) a multiple of 32 bytes; operands 32-byte aligned;
//   - an operand holding fewer elements than the shape the tiling / shape info describes (invalid_argument);
//   - overlap where the documentation forbids it (SoftMax: src and dst may be the same tensor, nothing else may
//     overlap; LayerNorm [B,S,H]: output may be inputX; LayerNorm [A,R]: no reuse; RmsNorm: dst may be src, not
//     gamma; a sharedTmpBuffer never overlaps an operand);
//   - a sharedTmpBuffer smaller than the tiling's rows per pass times the row bytes of norm_tiling.h (our tiling
//     model; the framework-allocated forms reserve their space outside the emulator's view and are not checked);
//   - a tiling that was never filled, or whose shape disagrees with the call (SoftMax with isCheckTiling=false;
//     with the default isCheckTiling=true the API recomputes the tiling from the shape, as documented, and only
//     the tmp buffer is checked against the recomputed need).
// Counted as the basic vector instructions the documented algorithm issues (the steps listed at each API; an
// assumption about CANN's implementation until measured on a device).
#ifndef EVK_SIM_NORM_API_H
#define EVK_SIM_NORM_API_H

#include <cmath>
#include <vector>

#include "evk_sim/common.h"
#include "evk_sim/math_api.h"
#include "evk_sim/norm_tiling.h"

namespace AscendC {

enum class SoftmaxMode { SOFTMAX_NORMAL = 0, SOFTMAX_OUTPUT_WITHOUT_BRC = 1 };
struct SoftmaxConfig {
    bool isCheckTiling = true;
    uint32_t oriSrcM = 0;
    uint32_t oriSrcK = 0;
    SoftmaxMode mode = SoftmaxMode::SOFTMAX_NORMAL;
};
constexpr SoftmaxConfig SOFTMAX_DEFAULT_CFG = {true, 0, 0, SoftmaxMode::SOFTMAX_NORMAL};

struct SoftMaxShapeInfo {
    uint32_t srcM = 0;
    uint32_t srcK = 0;
    uint32_t oriSrcM = 0;
    uint32_t oriSrcK = 0;
    SoftMaxShapeInfo() = default;
    SoftMaxShapeInfo(uint32_t m, uint32_t k, uint32_t om, uint32_t ok) : srcM(m), srcK(k), oriSrcM(om), oriSrcK(ok) {}
};

struct LayerNormConfig {
    bool isNoBeta = false;
    bool isNoGamma = false;
    bool isOnlyOutput = false;
    bool isOutputRstd = true;
};
constexpr LayerNormConfig LNCFG_NORM = {false, false, false, true};

struct LayerNormPara {
    uint32_t aLength;
    uint32_t rLength;
    uint32_t rLengthWithPadding;
};

namespace evk_norm {

struct Reg {  // a UB byte range of one operand
    const char* name;
    int buf;
    int64_t off;
    int64_t bytes;
};
inline bool ovl(const Reg& a, const Reg& b) {
    return a.buf == b.buf && a.bytes > 0 && b.bytes > 0 && a.off < b.off + b.bytes && b.off < a.off + a.bytes;
}
inline void bad(const char* api, ::evk_sim::SrcLoc loc, const char* fmt, const char* a, const char* b) {
    ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line, fmt, api, a, b);
}
// `a` and `b` must not overlap, except being the very same range when `same_ok`
inline void no_overlap(const char* api, const Reg& a, const Reg& b, bool same_ok, ::evk_sim::SrcLoc loc) {
    if (!ovl(a, b)) return;
    if (same_ok && a.off == b.off) return;
    bad(api, loc,
        same_ok ? "%s: %s and %s overlap without being the same tensor; the API allows only full reuse"
                : "%s: %s and %s overlap; the documentation forbids it (the result would be wrong on the NPU)",
        a.name, b.name);
}
template <typename T>
inline Reg reg(const char* name, const LocalTensor<T>& t, uint64_t elems) {
    return Reg{name, t.buf_, t.off_, static_cast<int64_t>(elems * sizeof(T))};
}
// an operand must hold `elems` elements (the shape the tiling or shape info describes)
template <typename T>
inline bool holds(const char* api, const char* name, const LocalTensor<T>& t, uint64_t elems, ::evk_sim::SrcLoc loc) {
    evk_detail::valid(t.buf_, api, loc);
    if (static_cast<uint64_t>(t.GetSize()) >= elems) return true;
    ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                         "%s: %s holds %llu elements but the shape needs %llu: the tiling or shape info disagrees "
                         "with the tensors",
                         api, name, static_cast<unsigned long long>(t.GetSize()), static_cast<unsigned long long>(elems));
    return false;
}
inline void tmp_check(const char* api, const LocalTensor<uint8_t>* tmp, uint64_t need, const char* how,
                      ::evk_sim::SrcLoc loc) {
    if (!tmp) return;
    evk_detail::valid(tmp->buf_, api, loc);
    if (static_cast<uint64_t>(tmp->GetSize()) < need)
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: sharedTmpBuffer holds %llu bytes but %s needs %llu (see the Get*TmpSize host "
                             "function): the API would write past it",
                             api, static_cast<unsigned long long>(tmp->GetSize()), how,
                             static_cast<unsigned long long>(need));
}
inline Reg tmp_reg(const LocalTensor<uint8_t>* tmp) {
    return tmp ? Reg{"sharedTmpBuffer", tmp->buf_, tmp->off_, static_cast<int64_t>(tmp->GetSize())}
               : Reg{"sharedTmpBuffer", -1, 0, 0};
}
inline void last_axis(const char* api, const char* what, uint64_t n, uint32_t esize, ::evk_sim::SrcLoc loc) {
    if (n * esize % 32 != 0)
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: the last axis %s=%llu is not a multiple of 32 bytes; pad each row to 32 bytes "
                             "(the documented layout)",
                             api, what, static_cast<unsigned long long>(n));
}
// count one basic vector instruction over `elems` elements of `esize` bytes
inline void step(const char* op, const char* ty, uint64_t elems, uint32_t esize) {
    ::evk_sim::begin_instr(::evk_sim::PID_V);
    ::evk_sim::count_vec(op, ty, elems, (elems * esize + 255) / 256);
}
template <typename T>
inline double ld(int64_t off) {
    return static_cast<double>(static_cast<float>(::evk_sim::ld<T>(off)));
}
// one rounding from double to T
template <typename T>
inline void st(int64_t off, double v, uint64_t& ovf) {
    using C = typename ::evk_sim::Ty<T>::C;
    if constexpr (::evk_sim::is_half_t<T>::value) {
        const float h = static_cast<float>(static_cast<_Float16>(v));
        ::evk_sim::st<T>(off, static_cast<C>(std::isinf(h) && std::isfinite(v) ? static_cast<float>(v) : h), ovf);
    } else {
        ::evk_sim::st<T>(off, static_cast<C>(v), ovf);
    }
}
template <typename T>
inline void access(const char* api, const LocalTensor<T>& t, uint64_t elems, bool write, ::evk_sim::SrcLoc loc) {
    ::evk_sim::ub_access(api, t.buf_, t.off_, elems * sizeof(T), write, ::evk_sim::PID_V, loc.file, loc.line);
}

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
            for (uint32_t c = 0; c < ok; ++c) s += std::exp(row[c] - mx);
        }
        if (lg)  // the documented log10 of the softmax, as (x - max - ln sum) / ln 10 (no underflow to log 0)
            for (uint32_t c = 0; c < k; ++c) st<T>(d0 + c * sizeof(T), (row[c] - mx - std::log(s)) / std::log(10.0), ovf);
        else
            for (uint32_t c = 0; c < k; ++c) st<T>(d0 + c * sizeof(T), std::exp(row[c] - mx) / s, ovf);
        if (!simple)
            for (uint32_t j = 0; j < blk; ++j) {
                if (sum) st<U>(sum->off_ + (int64_t(r) * blk + j) * sizeof(U), s, ovf);
                if (max) st<U>(max->off_ + (int64_t(r) * blk + j) * sizeof(U), mx, ovf);
            }
    }
    if (ovf) ::evk_sim::report_half_overflow(api, ovf, loc.file, loc.line);
}

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
