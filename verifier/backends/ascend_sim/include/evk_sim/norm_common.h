// EvoKernel Ascend C emulator: what the high-level normalisation APIs share -- the SoftMax and LayerNorm
// configuration and shape types, and the checks and counting helpers of softmax_api.h and norm_api.h.
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
#ifndef EVK_SIM_NORM_COMMON_H
#define EVK_SIM_NORM_COMMON_H

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

}  // namespace evk_norm
}  // namespace AscendC
#endif
