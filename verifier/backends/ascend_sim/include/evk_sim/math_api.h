// EvoKernel Ascend C emulator: the elementwise high-level math and activation APIs of CANN's advanced API
// (lib/math, lib/activation): Sigmoid, Tanh, Erf, Sin, Cos, Log, Log2, Log10, Sign, Floor, Ceil, Trunc,
// ClampMax, ClampMin, Power, Silu, Swish, Gelu, FasterGelu.
//
// Written from the API documentation (signatures, data types, the documented formula and the rule that the
// source and destination must not overlap), not from CANN's code: each call computes its formula elementwise
// in double from the source elements and rounds to T (a precise implementation), and is counted as the basic
// vector instructions a composition of the documented formula issues (`steps` below; the latency model prices
// those by name). How many instructions CANN's own implementation issues is an assumption until measured on a
// device (docs/ascend-sim-latency.md). The optional sharedTmpBuffer must be a live tensor; its size is not
// checked (its minimum comes from the Get*MaxMinTmpSize host APIs, not modelled).
#ifndef EVK_SIM_MATH_API_H
#define EVK_SIM_MATH_API_H

#include <cmath>
#include <initializer_list>

#include "evk_sim/common.h"

namespace AscendC {
namespace evk_detail {

inline bool overlaps(const ::evk_sim::TD& a, int64_t an, const ::evk_sim::TD& b, int64_t bn) {
    return a.buf == b.buf && a.off < b.off + bn * static_cast<int64_t>(b.esize) &&
           b.off < a.off + an * static_cast<int64_t>(a.esize);
}

// dst[i] = f(srcs[0][i], srcs[1][i]) over `count` elements, for an advanced API `api`: dtype and overlap rules, the
// call checked and counted like a basic instruction under its own name (priced as a simple vector op, or as the
// class runtime.cpp and hardware.py give the name: Log an Exp/Ln, Floor/Ceil/Trunc a Cast), then `steps`: the
// other basic instructions of the composition, counted (they re-read the same data)
template <typename T, typename F>
inline void advanced(const char* api, std::initializer_list<const char*> steps, uint32_t allowed,
                     const LocalTensor<T>& dst, const LocalTensor<T>* src0, const LocalTensor<T>* src1,
                     const LocalTensor<uint8_t>* tmp, int64_t count, F f, ::evk_sim::SrcLoc loc) {
    ::evk_sim::dtype_check(api, ::evk_sim::Ty<T>::kind, allowed, loc.file, loc.line);
    if (tmp) valid(tmp->buf_, api, loc);
    ::evk_sim::TD d = dst.td();
    ::evk_sim::TD s[2];
    int ns = 0;
    if (src0) s[ns++] = src0->td();
    if (src1) s[ns++] = src1->td();
    for (int i = 0; i < ns; ++i)
        if (count > 0 && overlaps(d, count, s[i], count)) {
            ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                                 "%s: the source and destination overlap; the API does not support it (its result "
                                 "would be wrong on the NPU): write to another buffer",
                                 api);
            break;
        }
    int64_t n = ::evk_sim::vec_count_prologue(api, ::evk_sim::Ty<T>::name, &d, s, ns, count, 0, loc.file, loc.line);
    if (n <= 0) return;
    const uint64_t repeats = (static_cast<uint64_t>(n) * sizeof(T) + 255) / 256;
    for (const char* step : steps) {
        ::evk_sim::begin_instr(::evk_sim::PID_V);
        ::evk_sim::count_vec(step, ::evk_sim::Ty<T>::name, static_cast<uint64_t>(n), repeats);
    }
    uint64_t ovf = 0;
    for (int64_t i = 0; i < n; ++i) {
        const double a = ns > 0 ? static_cast<double>(::evk_sim::ld<T>(s[0].off + i * sizeof(T))) : 0.0;
        const double b = ns > 1 ? static_cast<double>(::evk_sim::ld<T>(s[1].off + i * sizeof(T))) : 0.0;
        ::evk_sim::st<T>(d.off + i * sizeof(T), static_cast<typename ::evk_sim::Ty<T>::C>(f(a, b)), ovf);
    }
    if (ovf) ::evk_sim::report_half_overflow(api, ovf, loc.file, loc.line);
}

inline double sigmoid_(double x) { return 1.0 / (1.0 + ::evk_sim::m::exp(-x)); }
inline double gelu_(double x) {  // the documented tanh form, written as x / (1 + exp(-2 sqrt(2/pi) (x + 0.044715 x^3)))
    return x / (1.0 + ::evk_sim::m::exp(-1.5957691216057308 * (x + 0.044715 * x * x * x)));
}
inline double sign_(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; }
inline double power_(double a, double b) { return ::evk_sim::m::pow(a, b); }

}  // namespace evk_detail

// Unary APIs with the four documented forms: (dst, src, sharedTmpBuffer, calCount), (dst, src, sharedTmpBuffer),
// (dst, src, calCount), (dst, src) -- the forms without a count take the whole source tensor.
#define EVK_ADV_UNARY(NAME, ALLOWED, EXPR, ...)                                                                    \
    template <typename T, bool isReuseSource = false>                                                              \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer, \
                     const uint32_t calCount, EVK_LOC) {                                                           \
        evk_detail::advanced(#NAME, {__VA_ARGS__}, ALLOWED, dst, &src, static_cast<const LocalTensor<T>*>(nullptr), \
                             &sharedTmpBuffer, calCount, [](double x, double) { return EXPR; }, loc);              \
    }                                                                                                              \
    template <typename T, bool isReuseSource = false>                                                              \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer, \
                     EVK_LOC) {                                                                                    \
        evk_detail::advanced(#NAME, {__VA_ARGS__}, ALLOWED, dst, &src, static_cast<const LocalTensor<T>*>(nullptr), \
                             &sharedTmpBuffer, src.GetSize(), [](double x, double) { return EXPR; }, loc);         \
    }                                                                                                              \
    template <typename T, bool isReuseSource = false>                                                              \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t calCount, EVK_LOC) {      \
        evk_detail::advanced(#NAME, {__VA_ARGS__}, ALLOWED, dst, &src, static_cast<const LocalTensor<T>*>(nullptr), \
                             static_cast<const LocalTensor<uint8_t>*>(nullptr), calCount,                          \
                             [](double x, double) { return EXPR; }, loc);                                          \
    }                                                                                                              \
    template <typename T, bool isReuseSource = false>                                                              \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, EVK_LOC) {                              \
        evk_detail::advanced(#NAME, {__VA_ARGS__}, ALLOWED, dst, &src, static_cast<const LocalTensor<T>*>(nullptr), \
                             static_cast<const LocalTensor<uint8_t>*>(nullptr), src.GetSize(),                     \
                             [](double x, double) { return EXPR; }, loc);                                          \
    }

// the steps: the other basic instructions a composition of the formula issues beyond the one counted under the
// API's name (assumption; see the header comment)
EVK_ADV_UNARY(Sigmoid, ::evk_sim::DT_HF, evk_detail::sigmoid_(x), "Exp", "Adds", "Div")
EVK_ADV_UNARY(Tanh, ::evk_sim::DT_HF, ::evk_sim::m::tanh(x), "Muls", "Exp", "Adds", "Adds", "Div")
EVK_ADV_UNARY(Erf, ::evk_sim::DT_HF, ::evk_sim::m::erf(x), "Maxs", "Mul", "Muls", "Adds", "Mul", "Adds", "Mul",
              "Adds", "Mul", "Muls", "Adds", "Mul", "Adds", "Mul", "Div")
EVK_ADV_UNARY(Sin, ::evk_sim::DT_HF, ::evk_sim::m::sin(x), "Cast", "Cast", "Muls", "Sub", "Mul", "Muls", "Adds",
              "Mul", "Adds", "Mul", "Adds", "Mul", "Adds", "Mul", "Mul")
EVK_ADV_UNARY(Cos, ::evk_sim::DT_HF, ::evk_sim::m::cos(x), "Muls", "Cast", "Cast", "Muls", "Sub", "Mul", "Muls",
              "Adds", "Mul", "Adds", "Mul", "Adds", "Mul", "Adds", "Mul", "Mul")
EVK_ADV_UNARY(Log2, ::evk_sim::DT_HF, ::evk_sim::m::log2(x), "Ln")
EVK_ADV_UNARY(Log10, ::evk_sim::DT_HF, ::evk_sim::m::log10(x), "Ln")
EVK_ADV_UNARY(Sign, ::evk_sim::DT_HF, evk_detail::sign_(x), "Compare", "Select", "Select")
EVK_ADV_UNARY(Floor, ::evk_sim::DT_HF, std::floor(x), "Cast")
EVK_ADV_UNARY(Ceil, ::evk_sim::DT_HF, std::ceil(x), "Cast")
EVK_ADV_UNARY(Trunc, ::evk_sim::DT_HF, std::trunc(x), "Cast")
#undef EVK_ADV_UNARY

// Log: (dst, src, calCount) and (dst, src), the natural logarithm
template <typename T, bool isReuseSource = false>
inline void Log(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint32_t calCount, EVK_LOC) {
    evk_detail::advanced("Log", {}, ::evk_sim::DT_HF, dst, &src, static_cast<const LocalTensor<T>*>(nullptr),
                         static_cast<const LocalTensor<uint8_t>*>(nullptr), calCount,
                         [](double x, double) { return ::evk_sim::m::log(x); }, loc);
}
template <typename T, bool isReuseSource = false>
inline void Log(const LocalTensor<T>& dst, const LocalTensor<T>& src, EVK_LOC) {
    Log<T, isReuseSource>(dst, src, src.GetSize(), loc);
}

// Silu(dst, src, dataSize); Swish(dst, src, dataSize, beta): x * sigmoid(beta x)
template <typename T, bool isReuseSource = false>
inline void Silu(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint32_t dataSize, EVK_LOC) {
    evk_detail::advanced("Silu", {"Exp", "Adds", "Div"}, ::evk_sim::DT_HF, dst, &src,
                         static_cast<const LocalTensor<T>*>(nullptr), static_cast<const LocalTensor<uint8_t>*>(nullptr),
                         dataSize, [](double x, double) { return x * evk_detail::sigmoid_(x); }, loc);
}
template <typename T, bool isReuseSource = false>
inline void Swish(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint32_t dataSize, const T scalarValue,
                  EVK_LOC) {
    const double beta = static_cast<double>(static_cast<typename ::evk_sim::Ty<T>::C>(scalarValue));
    evk_detail::advanced("Swish", {"Exp", "Adds", "Div"}, ::evk_sim::DT_HF, dst, &src,
                         static_cast<const LocalTensor<T>*>(nullptr), static_cast<const LocalTensor<uint8_t>*>(nullptr),
                         dataSize, [beta](double x, double) { return x * evk_detail::sigmoid_(beta * x); }, loc);
}

// Gelu / FasterGelu<T, highPrecision, highPerformance>(dst, src, [sharedTmpBuffer,] dataSize)
#define EVK_ADV_GELU(NAME, EXPR, ...)                                                                              \
    template <typename T, bool highPrecision = false, bool highPerformance = false>                                \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t dataSize, EVK_LOC) {     \
        evk_detail::advanced(#NAME, {__VA_ARGS__}, ::evk_sim::DT_HF, dst, &src,                                   \
                             static_cast<const LocalTensor<T>*>(nullptr),                                          \
                             static_cast<const LocalTensor<uint8_t>*>(nullptr), dataSize,                          \
                             [](double x, double) { return EXPR; }, loc);                                          \
    }                                                                                                              \
    template <typename T, bool highPrecision = false, bool highPerformance = false>                                \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer, \
                     const uint32_t dataSize, EVK_LOC) {                                                           \
        evk_detail::advanced(#NAME, {__VA_ARGS__}, ::evk_sim::DT_HF, dst, &src,                                   \
                             static_cast<const LocalTensor<T>*>(nullptr), &sharedTmpBuffer, dataSize,              \
                             [](double x, double) { return EXPR; }, loc);                                          \
    }
EVK_ADV_GELU(Gelu, evk_detail::gelu_(x), "Mul", "Muls", "Add", "Muls", "Exp", "Adds", "Div")
EVK_ADV_GELU(FasterGelu, x / (1.0 + ::evk_sim::m::exp(-1.702 * x)), "Exp", "Adds", "Div")
#undef EVK_ADV_GELU

// ClampMax / ClampMin(dst, src, [sharedTmpBuffer,] scalar, calCount)
#define EVK_ADV_CLAMP(NAME, EXPR)                                                                            \
    template <typename T, bool isReuseSource = false>                                                              \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer, \
                     const T scalar, const uint32_t calCount, EVK_LOC) {                                           \
        const double s = static_cast<double>(static_cast<typename ::evk_sim::Ty<T>::C>(scalar));                  \
        evk_detail::advanced(#NAME, {}, ::evk_sim::DT_HF, dst, &src, static_cast<const LocalTensor<T>*>(nullptr), \
                             &sharedTmpBuffer, calCount, [s](double x, double) { return EXPR; }, loc);             \
    }                                                                                                              \
    template <typename T, bool isReuseSource = false>                                                              \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T scalar, const uint32_t calCount, \
                     EVK_LOC) {                                                                                    \
        const double s = static_cast<double>(static_cast<typename ::evk_sim::Ty<T>::C>(scalar));                  \
        evk_detail::advanced(#NAME, {}, ::evk_sim::DT_HF, dst, &src, static_cast<const LocalTensor<T>*>(nullptr), \
                             static_cast<const LocalTensor<uint8_t>*>(nullptr), calCount,                          \
                             [s](double x, double) { return EXPR; }, loc);                                         \
    }
EVK_ADV_CLAMP(ClampMax, (x > s ? s : x))
EVK_ADV_CLAMP(ClampMin, (x < s ? s : x))
#undef EVK_ADV_CLAMP

// Power(dst, base, exponent, [sharedTmpBuffer,] [calCount]) for tensor^tensor, tensor^scalar and scalar^tensor
// (half and float here; the documented integer forms are not emulated yet and report unsupported_dtype)
#define EVK_POWER_STEPS "Ln", "Mul", "Exp", "Compare", "Select", "Compare", "Select"
template <typename T, bool isReuseSource = false>
inline void Power(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                  const LocalTensor<uint8_t>& sharedTmpBuffer, uint32_t calCount, EVK_LOC) {
    evk_detail::advanced("Power", {EVK_POWER_STEPS}, ::evk_sim::DT_HF, dst, &src0, &src1, &sharedTmpBuffer, calCount,
                         evk_detail::power_, loc);
}
template <typename T, bool isReuseSource = false>
inline void Power(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                  uint32_t calCount, EVK_LOC) {
    evk_detail::advanced("Power", {EVK_POWER_STEPS}, ::evk_sim::DT_HF, dst, &src0, &src1,
                         static_cast<const LocalTensor<uint8_t>*>(nullptr), calCount, evk_detail::power_, loc);
}
template <typename T, bool isReuseSource = false>
inline void Power(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, EVK_LOC) {
    Power<T, isReuseSource>(dst, src0, src1, src0.GetSize(), loc);
}
template <typename T, bool isReuseSource = false>
inline void Power(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const T& src1Scalar, uint32_t calCount,
                  EVK_LOC) {
    const double e = static_cast<double>(static_cast<typename ::evk_sim::Ty<T>::C>(src1Scalar));
    evk_detail::advanced("Power", {EVK_POWER_STEPS}, ::evk_sim::DT_HF, dst, &src0,
                         static_cast<const LocalTensor<T>*>(nullptr), static_cast<const LocalTensor<uint8_t>*>(nullptr),
                         calCount, [e](double x, double) { return ::evk_sim::m::pow(x, e); }, loc);
}
template <typename T, bool isReuseSource = false>
inline void Power(const LocalTensor<T>& dst, const T& src0Scalar, const LocalTensor<T>& src1, uint32_t calCount,
                  EVK_LOC) {
    const double b = static_cast<double>(static_cast<typename ::evk_sim::Ty<T>::C>(src0Scalar));
    evk_detail::advanced("Power", {EVK_POWER_STEPS}, ::evk_sim::DT_HF, dst, &src1,
                         static_cast<const LocalTensor<T>*>(nullptr), static_cast<const LocalTensor<uint8_t>*>(nullptr),
                         calCount, [b](double x, double) { return ::evk_sim::m::pow(b, x); }, loc);
}
#undef EVK_POWER_STEPS

}  // namespace AscendC
#endif
