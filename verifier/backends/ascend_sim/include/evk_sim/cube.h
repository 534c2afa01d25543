// EvoKernel Ascend C CPU emulator: the cube core (matrix unit) of the 910B (Atlas A2), as its public API
// documents it. Included at the end of kernel.h.
//
//   GM --DataCopy(Nd2NzParams), MTE2--> L1 (A1/B1, NZ) --LoadData(LoadData2DParams), MTE1--> L0A (A2, Zz)
//                                                                                    L0B (B2, Zn)
//   L1 (C1) --DataCopy, MTE1--> bias table (C2)
//   Mmad(L0C <- L0A x L0B [+ bias | + L0C]), M pipe: half/bfloat16 x same -> float, float x float -> float,
//   int8 x int8 -> int32
//   L0C (CO1, Nz) --Fixpipe(FixpipeParamsV220), FIX--> GM (ND, or NZ), with F322F16/F322BF16 and ReLU on the way
//
// Layouts (element (r, c) of a fractal; k0 = 32 bytes / sizeof(input), 16 for half):
//   L1 NZ   : column block j (k0 columns) at j * dstNzC0Stride * 32 B, row r of it at r * dstNzNStride * 32 B
//   L0A Zz  : fractal (mi, ki) at (mi * K1 + ki) * 512 B, row-major 16 x k0 inside
//   L0B Zn  : fractal (ki, ni) at (ki * N1 + ni) * 512 B, n-major inside (element (k, n) at n * k0 + k)
//   L0C Nz  : fractal (ni, mi) at (ni * M1 + mi) * 16 * 16 elements, row-major 16 x 16 inside
// Data movement carries the written-bitmap along (LoadData copies it, transposed or not); the instruction
// that uses the values (Mmad for the rows < m, columns < n and k < K it computes; Fixpipe for what it
// writes out) reports bytes never written. See ../../README.md ("Cube unit").
#ifndef EVK_SIM_CUBE_H
#define EVK_SIM_CUBE_H

#include <vector>

// CANN declares the Fixpipe quantisation modes outside any namespace (a compiler builtin type).
enum QuantMode_t { NoQuant = 0, F322F16, F322BF16, DEQF16, VDEQF16, QF322B8_PRE, VQF322B8_PRE, REQ8, VREQ8 };

namespace AscendC {
using ::QuantMode_t;

struct Nd2NzParams {
    Nd2NzParams() {}
    Nd2NzParams(const uint16_t ndNumIn, const uint16_t nValueIn, const uint16_t dValueIn,
                const uint16_t srcNdMatrixStrideIn, const uint16_t srcDValueIn, const uint16_t dstNzC0StrideIn,
                const uint16_t dstNzNStrideIn, const uint16_t dstNzMatrixStrideIn)
        : ndNum(ndNumIn), nValue(nValueIn), dValue(dValueIn), srcNdMatrixStride(srcNdMatrixStrideIn),
          srcDValue(srcDValueIn), dstNzC0Stride(dstNzC0StrideIn), dstNzNStride(dstNzNStrideIn),
          dstNzMatrixStride(dstNzMatrixStrideIn) {}
    uint16_t ndNum = 0;
    uint16_t nValue = 0;
    uint16_t dValue = 0;
    uint16_t srcNdMatrixStride = 0;  // elements
    uint16_t srcDValue = 0;          // elements per source row
    uint16_t dstNzC0Stride = 0;      // 32-byte units
    uint16_t dstNzNStride = 0;       // 32-byte units
    uint16_t dstNzMatrixStride = 0;  // elements
};

struct LoadData2DParams {
    LoadData2DParams() {}
    LoadData2DParams(const uint16_t startIndexIn, const uint8_t repeatTimesIn, const uint16_t srcStrideIn,
                     const uint8_t sidIn, const uint16_t dstGapIn, const bool ifTransposeIn, const uint8_t addrModeIn)
        : startIndex(startIndexIn), dstGap(dstGapIn), srcStride(srcStrideIn), ifTranspose(ifTransposeIn),
          repeatTimes(repeatTimesIn), sid(sidIn), addrMode(addrModeIn) {}
    uint16_t startIndex = 0;  // 512-byte fractals
    uint16_t dstGap = 0;      // 512-byte fractals between the end of one and the start of the next
    uint16_t srcStride = 0;   // 512-byte fractals between consecutive source fractals
    bool ifTranspose = 0;
    uint8_t repeatTimes = 0;
    uint8_t sid = 0;
    uint8_t addrMode = 0;
};
using LoadData2dParams = LoadData2DParams;

struct MmadParams {
    MmadParams() {}
    MmadParams(const uint16_t mIn, const uint16_t nIn, const uint16_t kIn, const bool isBiasIn, const int32_t fmOffsetIn,
               const bool enSsparseIn, const bool enWinogradAIn, const bool enWinogradBIn)
        : m(mIn), n(nIn), k(kIn), isBias(isBiasIn), fmOffset(fmOffsetIn), enSsparse(enSsparseIn),
          enWinogradA(enWinogradAIn), enWinogradB(enWinogradBIn) {}
    MmadParams(const uint16_t mIn, const uint16_t nIn, const uint16_t kIn, const uint8_t unitFlagIn,
               const bool cmatrixSourceIn, const bool cmatrixInitValIn)
        : m(mIn), n(nIn), k(kIn), unitFlag(unitFlagIn), cmatrixSource(cmatrixSourceIn),
          cmatrixInitVal(cmatrixInitValIn) {}
    uint16_t m = 0;
    uint16_t n = 0;
    uint16_t k = 0;
    bool isBias = false;  // deprecated: C += A x B
    int32_t fmOffset = 0;
    bool enSsparse = false;
    bool enWinogradA = false;
    bool enWinogradB = false;
    uint8_t unitFlag = 0;
    bool kDirectionAlign = false;  // float: K aligned to 16 instead of 8
    bool cmatrixSource = false;    // C initialised from the bias table
    bool cmatrixInitVal = true;    // C initialised to 0 (false: accumulate onto L0C, or from the bias table)
};

enum class CO2Layout : uint8_t { NZ = 0, ROW_MAJOR, COLUMN_MAJOR };
struct FixpipeConfig {
    CO2Layout format;
    bool isToUB = false;
    bool enableFixVal = false;
    constexpr FixpipeConfig(CO2Layout f) : format(f) {}
    constexpr FixpipeConfig(CO2Layout f, bool toUb) : format(f), isToUB(toUb) {}
    constexpr FixpipeConfig(CO2Layout f, bool toUb, bool fixVal) : format(f), isToUB(toUb), enableFixVal(fixVal) {}
};
constexpr FixpipeConfig CFG_NZ = {CO2Layout::NZ, false};
constexpr FixpipeConfig CFG_ROW_MAJOR = {CO2Layout::ROW_MAJOR, false};
constexpr FixpipeConfig CFG_COLUMN_MAJOR = {CO2Layout::COLUMN_MAJOR, false};

struct FixpipeParamsV220 {
    FixpipeParamsV220() {}
    FixpipeParamsV220(const uint16_t nSizeIn, const uint16_t mSizeIn, const uint16_t srcStrideIn,
                      const uint32_t dstStrideIn, const bool reluEnIn)
        : nSize(nSizeIn), mSize(mSizeIn), srcStride(srcStrideIn), dstStride(dstStrideIn), reluEn(reluEnIn) {}
    FixpipeParamsV220(const uint16_t nSizeIn, const uint16_t mSizeIn, const uint16_t srcStrideIn,
                      const uint32_t dstStrideIn, const bool reluEnIn, const QuantMode_t quantPreIn,
                      const int64_t deqScalarIn, const uint16_t ndNumIn, const uint16_t srcNdStrideIn,
                      const uint16_t dstNdStrideIn, const uint8_t unitFlagIn, const bool isChannelSplitIn = false)
        : nSize(nSizeIn), mSize(mSizeIn), srcStride(srcStrideIn), dstStride(dstStrideIn), quantPre(quantPreIn),
          deqScalar(static_cast<uint64_t>(deqScalarIn)), ndNum(ndNumIn), srcNdStride(srcNdStrideIn),
          dstNdStride(dstNdStrideIn), reluEn(reluEnIn), unitFlag(unitFlagIn), isChannelSplit(isChannelSplitIn) {}
    uint16_t nSize = 0;
    uint16_t mSize = 0;
    uint16_t srcStride = 0;  // units of 16 elements: the L0C column-block stride (mSize rounded up to 16)
    uint32_t dstStride = 0;  // ND: elements per destination row; NZ: 32-byte units
    QuantMode_t quantPre = QuantMode_t::NoQuant;
    uint64_t deqScalar = 0;
    uint16_t ndNum = 1;
    uint16_t srcNdStride = 0;  // units of 16 x 16 elements
    uint16_t dstNdStride = 0;  // elements
    bool reluEn = false;
    uint8_t unitFlag = 0;
    bool isChannelSplit = false;
};

// ---------------------------------------------------------------------------------------------
namespace evk_detail {
inline const char* mem_str(int m) { return ::evk_sim::mem_name(m); }
// The operand must live in memory `mem` (its TPosition); otherwise an error and false.
inline bool in_mem(const char* op, const char* operand, int buf, int mem, ::evk_sim::SrcLoc loc,
                   const char* positions) {
    const int m = ::evk_sim::mem_of_buf(buf);
    if (m == mem) return true;
    ::evk_sim::violation(EVK_RULE_TENSOR_POSITION, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                         "%s: the %s operand is a tensor in %s; it must be in %s (TPosition %s)", op, operand,
                         mem_str(m), mem_str(mem), positions);
    return false;
}
inline void local_align(const char* op, const char* operand, int buf, int64_t off, uint32_t align,
                        ::evk_sim::SrcLoc loc) {
    const int m = ::evk_sim::mem_of_buf(buf);
    const int64_t rel = m >= 0 ? off - static_cast<int64_t>(::evk_sim::mem_base(m)) : off;
    if (align > 1 && rel % align != 0)
        ::evk_sim::violation(EVK_RULE_UB_ALIGNMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: the %s operand starts at %s byte offset %lld, not %u-byte aligned (the %s needs "
                             "%u-byte aligned addresses)",
                             op, operand, mem_str(m), static_cast<long long>(rel), align, mem_str(m), align);
}
inline bool init_all(int64_t off, uint64_t n) {
    const uint8_t* p = ::evk_sim::g_ub_init + off;
    for (uint64_t i = 0; i < n; ++i)
        if (p[i] != 1) return false;
    return true;
}
template <class T> constexpr bool cube_in_ok() {
    return ::evk_sim::is_half_t<T>::value || std::is_same<T, bfloat16_t>::value || std::is_same<T, float>::value ||
           std::is_same<T, int8_t>::value;
}
}  // namespace evk_detail

// GM -> L1 with the ND -> NZ conversion. The d tail of each row up to 32 bytes is filled with zeros.
template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const Nd2NzParams& p, EVK_LOC) {
    static const char* op = "DataCopy GM->L1 (ND2NZ)";
    ::evk_sim::begin_instr(::evk_sim::PID_MTE2);
    evk_detail::valid(dst.buf_, op, loc);
    if (!evk_detail::in_mem(op, "dst", dst.buf_, ::evk_sim::MEM_L1, loc, "A1/B1/C1/TSCM")) return;
    evk_detail::local_align(op, "dst", dst.buf_, dst.off_, 32, loc);
    if (p.ndNum == 0 || p.nValue == 0 || p.dValue == 0) return;  // documented NOP
    if (p.nValue > 16384 || p.dstNzC0Stride == 0 || p.dstNzNStride == 0 || p.srcDValue == 0 ||
        p.dstNzC0Stride > 16384 || p.dstNzNStride > 16384 || p.srcDValue < p.dValue) {
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: nValue=%u (<= 16384), dstNzC0Stride=%u and dstNzNStride=%u (1..16384), "
                             "srcDValue=%u (>= 1 and >= dValue=%u)",
                             op, p.nValue, p.dstNzC0Stride, p.dstNzNStride, p.srcDValue, p.dValue);
        return;
    }
    constexpr int C0 = 32 / static_cast<int>(sizeof(T));
    const int blocks = (p.dValue + C0 - 1) / C0;
    const uint64_t row_bytes = static_cast<uint64_t>(p.dValue) * sizeof(T);
    uint64_t moved = 0, rows = 0;
    for (uint32_t nd = 0; nd < p.ndNum; ++nd) {
        for (uint32_t r = 0; r < p.nValue; ++r) {
            const T* row = src.address_ + static_cast<uint64_t>(nd) * p.srcNdMatrixStride +
                           static_cast<uint64_t>(r) * p.srcDValue;
            ::evk_sim::tm_gm_segment(row, row_bytes);
            const bool ok = ::evk_sim::gm_access(op, row, row_bytes, false, src.address_, src.tensor_bytes_(), loc.file,
                                                 loc.line);
            const uint8_t* g = ok ? ::evk_sim::gm_host(row) : nullptr;
            for (int j = 0; j < blocks; ++j) {
                const int64_t d = dst.off_ + (static_cast<int64_t>(nd) * p.dstNzMatrixStride +
                                              static_cast<int64_t>(j) * p.dstNzC0Stride * C0 +
                                              static_cast<int64_t>(r) * p.dstNzNStride * C0) *
                                                 static_cast<int64_t>(sizeof(T));
                ::evk_sim::local_access(op, dst.buf_, d, 32, true, ::evk_sim::PID_MTE2, true, loc.file, loc.line);
                const int valid = std::min(C0, static_cast<int>(p.dValue) - j * C0);
                uint8_t* out = ::evk_sim::g_ub + d;
                std::memset(out, 0, 32);
                if (g)
                    std::memcpy(out, g + static_cast<uint64_t>(j) * C0 * sizeof(T), valid * sizeof(T));
                else  // a read outside the real GM buffer: garbage on the NPU, "never written" here
                    std::memset(::evk_sim::g_ub_init + d, 0, valid * sizeof(T));
            }
            moved += row_bytes;
            ++rows;
        }
    }
    ::evk_sim::count_mte(::evk_sim::PID_MTE2, moved, rows);
}

// L1 -> L0A / L0B in 512-byte fractals, each optionally transposed (b16 only).
template <typename T>
inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData2DParams& p, EVK_LOC) {
    static const char* op = "LoadData (2D)";
    ::evk_sim::begin_instr(::evk_sim::PID_MTE1);
    evk_detail::valid(dst.buf_, op, loc);
    evk_detail::valid(src.buf_, op, loc);
    const int dm = ::evk_sim::mem_of_buf(dst.buf_);
    if (!evk_detail::in_mem(op, "src", src.buf_, ::evk_sim::MEM_L1, loc, "A1/B1")) return;
    if (dm != ::evk_sim::MEM_L0A && dm != ::evk_sim::MEM_L0B) {
        evk_detail::in_mem(op, "dst", dst.buf_, ::evk_sim::MEM_L0A, loc, "A2, or L0B: B2");
        return;
    }
    evk_detail::local_align(op, "dst", dst.buf_, dst.off_, 512, loc);
    evk_detail::local_align(op, "src", src.buf_, src.off_, 32, loc);
    if (p.repeatTimes == 0) return;  // documented NOP
    if (p.ifTranspose && sizeof(T) != 2) {
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: ifTranspose works on 16-bit types only (this is %s)", op, ::evk_sim::Ty<T>::name);
        return;
    }
    if (p.addrMode != 0)
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: addrMode=%u is for GM->L1 only; keep 0 on L1->L0", op, p.addrMode);
    for (uint32_t r = 0; r < p.repeatTimes; ++r) {
        const int64_t s = src.off_ + (static_cast<int64_t>(p.startIndex) + static_cast<int64_t>(r) * p.srcStride) * 512;
        const int64_t d = dst.off_ + static_cast<int64_t>(r) * (1 + static_cast<int64_t>(p.dstGap)) * 512;
        ::evk_sim::local_access(op, src.buf_, s, 512, false, ::evk_sim::PID_MTE1, false, loc.file, loc.line);
        ::evk_sim::local_access(op, dst.buf_, d, 512, true, ::evk_sim::PID_MTE1, false, loc.file, loc.line);
        if (!p.ifTranspose) {
            std::memmove(::evk_sim::g_ub + d, ::evk_sim::g_ub + s, 512);
            ::evk_sim::copy_init(d, s, 512);
        } else {
            uint8_t tmp[512], tin[512];
            for (int i = 0; i < 16; ++i)
                for (int j = 0; j < 16; ++j) {
                    std::memcpy(tmp + (j * 16 + i) * 2, ::evk_sim::g_ub + s + (i * 16 + j) * 2, 2);
                    std::memcpy(tin + (j * 16 + i) * 2, ::evk_sim::g_ub_init + s + (i * 16 + j) * 2, 2);
                }
            std::memcpy(::evk_sim::g_ub + d, tmp, 512);
            std::memcpy(::evk_sim::g_ub_init + d, tin, 512);
        }
    }
    const uint64_t bytes = static_cast<uint64_t>(p.repeatTimes) * 512;
    ::evk_sim::tm_add_cost(static_cast<double>(bytes) / ::evk_sim::mte1_bytes_per_cycle());
    ::evk_sim::count_mte1(bytes);
}

struct LoadData2dTransposeParams {
    LoadData2dTransposeParams() {}
    LoadData2dTransposeParams(const uint16_t startIndexIn, const uint8_t repeatTimesIn, const uint16_t srcStrideIn,
                              const uint16_t dstGapIn, const uint16_t dstfracGapIn, const uint8_t addrModeIn)
        : startIndex(startIndexIn), repeatTimes(repeatTimesIn), srcStride(srcStrideIn), dstGap(dstGapIn),
          dstFracGap(dstfracGapIn), addrMode(addrModeIn) {}
    LoadData2dTransposeParams(const uint16_t startIndexIn, const uint8_t repeatTimesIn, const uint16_t srcStrideIn,
                              const uint16_t dstGapIn, const uint16_t dstfracGapIn)
        : startIndex(startIndexIn), repeatTimes(repeatTimesIn), srcStride(srcStrideIn), dstGap(dstGapIn),
          dstFracGap(dstfracGapIn) {}
    uint16_t startIndex = 0;  // square matrices (b16: one fractal; b32, b8: two consecutive fractals)
    uint8_t repeatTimes = 0;
    uint16_t srcStride = 0;   // square matrices between iterations (0: the same square again)
    uint16_t dstGap = 0;      // 512-byte units from the end of one iteration's first fractal to the next one's
    uint16_t dstFracGap = 0;  // 512-byte units between the two output fractals of one iteration (b32, b8)
    uint8_t addrMode = 0;     // 0: the source address increases by srcStride, 1: decreases
};

// L1 -> L0A / L0B with a transpose of square matrices (documented "fractal transpose"):
//   b16: one 16 x 16 fractal F, out F^T;
//   b32: two consecutive 16 x 8 fractals side by side, Q = [F0 | F1] (16 x 16); out Q^T split into columns 0..7
//        (first fractal) and 8..15 (second, dstFracGap + 1 fractals further);
//   b8:  two consecutive 16 x 32 fractals stacked, Q = [F0 ; F1] (32 x 32); out Q^T split into rows 0..15 and
//        16..31 (second fractal dstFracGap + 1 further).
// Iteration i reads the square (startIndex +- i * srcStride) and writes from dst + i * (dstGap + 1) * 512 bytes.
template <typename T>
inline void LoadDataWithTranspose(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                  const LoadData2dTransposeParams& p, EVK_LOC) {
    static const char* op = "LoadDataWithTranspose";
    ::evk_sim::begin_instr(::evk_sim::PID_MTE1);
    evk_detail::valid(dst.buf_, op, loc);
    evk_detail::valid(src.buf_, op, loc);
    const int dm = ::evk_sim::mem_of_buf(dst.buf_);
    if (!evk_detail::in_mem(op, "src", src.buf_, ::evk_sim::MEM_L1, loc, "A1/B1")) return;
    if (dm != ::evk_sim::MEM_L0A && dm != ::evk_sim::MEM_L0B) {
        evk_detail::in_mem(op, "dst", dst.buf_, ::evk_sim::MEM_L0A, loc, "A2, or L0B: B2");
        return;
    }
    constexpr int sz = static_cast<int>(sizeof(T));
    static_assert(sz == 1 || sz == 2 || sz == 4, "LoadDataWithTranspose: 8-, 16- or 32-bit types");
    evk_detail::local_align(op, "dst", dst.buf_, dst.off_, 512, loc);
    evk_detail::local_align(op, "src", src.buf_, src.off_, 32, loc);
    if (p.repeatTimes == 0) return;  // documented NOP
    const int nfrac = sz == 2 ? 1 : 2;
    const int64_t square = 512 * nfrac;
    std::vector<int64_t> written;
    uint8_t out[2][512], oin[2][512];
    for (int64_t i = 0; i < p.repeatTimes; ++i) {
        const int64_t sq = static_cast<int64_t>(p.startIndex) + (p.addrMode ? -i : i) * p.srcStride;
        const int64_t s = src.off_ + sq * square;
        const int64_t d0 = dst.off_ + i * (1 + static_cast<int64_t>(p.dstGap)) * 512;
        if (sq < 0) {
            ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                                 "%s: addrMode=1 walks the source below its start (iteration %lld)", op,
                                 static_cast<long long>(i));
            return;
        }
        ::evk_sim::local_access(op, src.buf_, s, static_cast<uint64_t>(square), false, ::evk_sim::PID_MTE1, false,
                                loc.file, loc.line);
        const uint8_t* g = ::evk_sim::g_ub + s;
        const uint8_t* gi = ::evk_sim::g_ub_init + s;
        for (int j = 0; j < nfrac; ++j)
            for (int e = 0; e < 512 / sz; ++e) {
                int64_t from;  // source element (within the square) of output fractal j, element e
                if (sz == 2) {
                    const int a = e / 16, b = e % 16;
                    from = b * 16 + a;
                } else if (sz == 4) {  // G_j[a][b] = F_{a/8}[8j + b][a % 8]
                    const int a = e / 8, b = e % 8;
                    from = (a / 8) * 128 + (8 * j + b) * 8 + a % 8;
                } else {  // G_j[a][b] = F_{b/16}[b % 16][16j + a]
                    const int a = e / 32, b = e % 32;
                    from = (b / 16) * 512 + (b % 16) * 32 + 16 * j + a;
                }
                std::memcpy(out[j] + e * sz, g + from * sz, sz);
                std::memcpy(oin[j] + e * sz, gi + from * sz, sz);
            }
        for (int j = 0; j < nfrac; ++j) {
            const int64_t d = d0 + j * (1 + static_cast<int64_t>(p.dstFracGap)) * 512;
            for (int64_t w : written)
                if (w == d) {
                    ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                                         "%s: iteration %lld writes a fractal an earlier iteration of this call wrote "
                                         "(dstGap=%u, dstFracGap=%u): the documentation requires the transposed "
                                         "fractals not to overlap",
                                         op, static_cast<long long>(i), p.dstGap, p.dstFracGap);
                    break;
                }
            written.push_back(d);
            ::evk_sim::local_access(op, dst.buf_, d, 512, true, ::evk_sim::PID_MTE1, false, loc.file, loc.line);
            std::memcpy(::evk_sim::g_ub + d, out[j], 512);
            std::memcpy(::evk_sim::g_ub_init + d, oin[j], 512);
        }
    }
    const uint64_t bytes = static_cast<uint64_t>(p.repeatTimes) * static_cast<uint64_t>(square);
    ::evk_sim::tm_add_cost(static_cast<double>(bytes) / ::evk_sim::mte1_bytes_per_cycle());
    ::evk_sim::count_mte1(bytes);
}

namespace evk_detail {
// L1 (C1) -> bias table (C2), converting half -> float; blockLen counts 64-byte units of the source (the
// 910B unit of this path; CANN's mmad-with-bias sample moves n halves with blockLen = n * 2 / 64), gaps are
// 32-byte units on L1 and 64-byte units on the bias table.
template <typename TD, typename TS>
inline void l1_to_bt(const LocalTensor<TD>& dst, const LocalTensor<TS>& src, uint32_t blockCount, uint64_t blockBytes,
                     uint32_t srcGap, uint32_t dstGap, ::evk_sim::SrcLoc loc) {
    static const char* op = "DataCopy L1->BT";
    ::evk_sim::begin_instr(::evk_sim::PID_MTE1);
    valid(dst.buf_, op, loc);
    valid(src.buf_, op, loc);
    if (!in_mem(op, "src", src.buf_, ::evk_sim::MEM_L1, loc, "C1")) return;
    local_align(op, "dst", dst.buf_, dst.off_, 64, loc);
    local_align(op, "src", src.buf_, src.off_, 32, loc);
    constexpr bool ok = (std::is_same<TD, float>::value &&
                         (::evk_sim::is_half_t<TS>::value || std::is_same<TS, float>::value)) ||
                        (std::is_same<TD, int32_t>::value && std::is_same<TS, int32_t>::value);
    if (!ok) {
        ::evk_sim::violation(EVK_RULE_UNSUPPORTED_DTYPE, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: %s -> %s is not a bias-table conversion (half/float -> float, int32 -> int32)", op,
                             ::evk_sim::Ty<TS>::name, ::evk_sim::Ty<TD>::name);
        return;
    }
    if (blockCount == 0 || blockBytes == 0) return;
    const uint64_t n_el = blockBytes / sizeof(TS);
    const uint64_t dbytes = n_el * sizeof(TD);
    uint64_t moved = 0;
    for (uint32_t b = 0; b < blockCount; ++b) {
        const int64_t s = src.off_ + static_cast<int64_t>(b) * static_cast<int64_t>(blockBytes + srcGap * 32ull);
        const int64_t d = dst.off_ + static_cast<int64_t>(b) * static_cast<int64_t>(((dbytes + 63) / 64 + dstGap) * 64);
        ::evk_sim::local_access(op, src.buf_, s, blockBytes, false, ::evk_sim::PID_MTE1, false, loc.file, loc.line);
        ::evk_sim::local_access(op, dst.buf_, d, dbytes, true, ::evk_sim::PID_MTE1, false, loc.file, loc.line);
        for (uint64_t i = 0; i < n_el; ++i) {
            TS v;
            std::memcpy(&v, ::evk_sim::g_ub + s + i * sizeof(TS), sizeof(TS));
            TD w = static_cast<TD>(v);
            std::memcpy(::evk_sim::g_ub + d + i * sizeof(TD), &w, sizeof(TD));
            const bool w_ok = init_all(s + static_cast<int64_t>(i * sizeof(TS)), sizeof(TS));
            std::memset(::evk_sim::g_ub_init + d + i * sizeof(TD), w_ok ? 1 : 0, sizeof(TD));
        }
        moved += blockBytes;
    }
    ::evk_sim::tm_add_cost(static_cast<double>(moved) / ::evk_sim::mte1_bytes_per_cycle());
    ::evk_sim::count_mte1(moved);
}
}  // namespace evk_detail

// L1 -> bias table with a type change (half -> float).
template <typename T, typename U, typename std::enable_if<!std::is_same<T, U>::value, int>::type = 0>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const DataCopyParams& p, EVK_LOC) {
    if (::evk_sim::mem_of_buf(dst.buf_) != ::evk_sim::MEM_BT) {
        evk_detail::valid(dst.buf_, "DataCopy", loc);
        ::evk_sim::violation(EVK_RULE_TENSOR_POSITION, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "DataCopy between local tensors of different types (%s <- %s) is the L1 -> bias table "
                             "(C2) copy; this destination is in %s",
                             ::evk_sim::Ty<T>::name, ::evk_sim::Ty<U>::name,
                             ::evk_sim::mem_name(::evk_sim::mem_of_buf(dst.buf_)));
        return;
    }
    evk_detail::l1_to_bt(dst, src, p.blockCount, static_cast<uint64_t>(p.blockLen) * 64, p.srcStride, p.dstStride, loc);
}

namespace evk_detail {
template <typename TD, typename TA, typename TB, typename TBias>
inline void mmad(const LocalTensor<TD>& dst, const LocalTensor<TA>& fm, const LocalTensor<TB>& filter,
                 const LocalTensor<TBias>* bias, const MmadParams& p, ::evk_sim::SrcLoc loc) {
    static const char* op = "Mmad";
    ::evk_sim::begin_instr(::evk_sim::PID_M);
    valid(dst.buf_, op, loc);
    valid(fm.buf_, op, loc);
    valid(filter.buf_, op, loc);
    if (bias) valid(bias->buf_, op, loc);
    bool good = in_mem(op, "dst", dst.buf_, ::evk_sim::MEM_L0C, loc, "CO1");
    good = in_mem(op, "fm (A)", fm.buf_, ::evk_sim::MEM_L0A, loc, "A2") && good;
    good = in_mem(op, "filter (B)", filter.buf_, ::evk_sim::MEM_L0B, loc, "B2") && good;
    if (bias) good = in_mem(op, "bias", bias->buf_, ::evk_sim::MEM_BT, loc, "C2") && good;
    constexpr bool types_ok =
        std::is_same<TA, TB>::value && cube_in_ok<TA>() &&
        ((std::is_same<TA, int8_t>::value && std::is_same<TD, int32_t>::value) ||
         (!std::is_same<TA, int8_t>::value && std::is_same<TD, float>::value)) &&
        std::is_same<TBias, TD>::value;
    if (!types_ok) {
        ::evk_sim::violation(EVK_RULE_UNSUPPORTED_DTYPE, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "Mmad %s x %s -> %s%s%s: the 910B cube computes half x half, bfloat16 x bfloat16 and "
                             "float x float into float, int8 x int8 into int32 (a bias of the result type)",
                             ::evk_sim::Ty<TA>::name, ::evk_sim::Ty<TB>::name, ::evk_sim::Ty<TD>::name,
                             bias ? " + bias " : "", bias ? ::evk_sim::Ty<TBias>::name : "");
        good = false;
    }
    local_align(op, "dst", dst.buf_, dst.off_, 64, loc);
    local_align(op, "fm", fm.buf_, fm.off_, 512, loc);
    local_align(op, "filter", filter.buf_, filter.off_, 512, loc);
    if (bias) local_align(op, "bias", bias->buf_, bias->off_, 64, loc);
    if (p.m > 4095 || p.n > 4095 || p.k > 4095) {
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "Mmad: m=%u, n=%u, k=%u; each must be in 0..4095", p.m, p.n, p.k);
        good = false;
    }
    const bool accumulate = !bias && (p.isBias || !p.cmatrixInitVal) && !p.cmatrixSource;
    if (!bias && !p.cmatrixInitVal && p.cmatrixSource) {
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "Mmad: cmatrixSource=true takes C's initial value from the bias table, but no bias "
                             "operand was given (use the Mmad(dst, fm, filter, bias, params) form)");
        good = false;
    }
    if (!good || p.m == 0 || p.n == 0 || p.k == 0) return;
    constexpr int k0 = 32 / static_cast<int>(sizeof(TA));
    const int M1 = (p.m + 15) / 16, N1 = (p.n + 15) / 16;
    int Kal = p.k;
    if (std::is_same<TA, float>::value && p.kDirectionAlign) Kal = (p.k + 15) / 16 * 16;
    const int K1 = (Kal + k0 - 1) / k0;
    const int64_t frac = 512;  // bytes of an L0A/L0B fractal
    const int64_t a_bytes = static_cast<int64_t>(M1) * K1 * frac, b_bytes = static_cast<int64_t>(K1) * N1 * frac;
    const int64_t c_bytes = static_cast<int64_t>(M1) * N1 * 256 * static_cast<int64_t>(sizeof(TD));
    ::evk_sim::local_access(op, fm.buf_, fm.off_, a_bytes, false, ::evk_sim::PID_M, false, loc.file, loc.line);
    ::evk_sim::local_access(op, filter.buf_, filter.off_, b_bytes, false, ::evk_sim::PID_M, false, loc.file, loc.line);
    if (bias)
        ::evk_sim::local_access(op, bias->buf_, bias->off_, static_cast<uint64_t>(N1) * 16 * sizeof(TD), false,
                                ::evk_sim::PID_M, false, loc.file, loc.line);
    if (accumulate)
        ::evk_sim::local_access(op, dst.buf_, dst.off_, c_bytes, false, ::evk_sim::PID_M, false, loc.file, loc.line);
    const int Mp = M1 * 16, Np = N1 * 16;
    auto a_off = [&](int r, int kk) {
        return fm.off_ + ((static_cast<int64_t>(r / 16) * K1 + kk / k0) * 16 * k0 + (r % 16) * k0 + kk % k0) *
                             static_cast<int64_t>(sizeof(TA));
    };
    auto b_off = [&](int kk, int c) {
        return filter.off_ + ((static_cast<int64_t>(kk / k0) * N1 + c / 16) * 16 * k0 + (c % 16) * k0 + kk % k0) *
                                 static_cast<int64_t>(sizeof(TB));
    };
    auto c_off = [&](int r, int c) {
        return dst.off_ + ((static_cast<int64_t>(c / 16) * M1 + r / 16) * 256 + (r % 16) * 16 + c % 16) *
                              static_cast<int64_t>(sizeof(TD));
    };
    // inputs the result depends on: rows < m of A and columns < n of B over k < K (the padding of the last
    // fractal is computed on the NPU too, from whatever it holds; it is marked written only if that was)
    std::vector<uint8_t> a_ok(Mp), b_ok(Np);
    uint64_t bad_rows = 0, bad_cols = 0;  // counted apart: one count of "rows and columns" meant neither
    for (int r = 0; r < Mp; ++r) {
        bool ok = true;
        for (int kk = 0; kk < p.k && ok; ++kk) ok = init_all(a_off(r, kk), sizeof(TA));
        a_ok[r] = ok;
        if (!ok && r < p.m) ++bad_rows;
    }
    for (int c = 0; c < Np; ++c) {
        bool ok = true;
        for (int kk = 0; kk < p.k && ok; ++kk) ok = init_all(b_off(kk, c), sizeof(TB));
        b_ok[c] = ok;
        if (!ok && c < p.n) ++bad_cols;
    }
    if (bad_rows || bad_cols)
        ::evk_sim::violation(EVK_RULE_UNINIT_READ, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "Mmad reads L0A/L0B data never written in this block: %llu of the %u rows of A (L0A) and "
                             "%llu of the %u columns of B (L0B) it uses over k=%u hold unwritten elements; check the "
                             "LoadData repeats and strides into the %s, and the ND2NZ copy into L1",
                             static_cast<unsigned long long>(bad_rows), p.m, static_cast<unsigned long long>(bad_cols),
                             p.n, p.k, bad_rows && bad_cols ? "L0A and L0B" : bad_rows ? "L0A" : "L0B");
    using C = typename ::evk_sim::Ty<TD>::C;
    using CA = typename ::evk_sim::Ty<TA>::C;
    std::vector<CA> arow(static_cast<size_t>(p.k));
    std::vector<uint8_t> bias_ok(Np, 1);
    if (bias)
        for (int c = 0; c < Np; ++c) bias_ok[c] = init_all(bias->off_ + c * static_cast<int64_t>(sizeof(TD)), sizeof(TD));
    uint64_t bad_c = 0, bad_bias = 0;
    for (int r = 0; r < Mp; ++r) {
        for (int kk = 0; kk < p.k; ++kk) arow[kk] = ::evk_sim::ld<TA>(a_off(r, kk));
        for (int c = 0; c < Np; ++c) {
            C acc = 0;
            bool ok = a_ok[r] && b_ok[c];
            if (bias) {
                acc = ::evk_sim::ld<TD>(bias->off_ + c * static_cast<int64_t>(sizeof(TD)));
                ok = ok && bias_ok[c];
                if (!bias_ok[c] && r == 0 && c < p.n) ++bad_bias;
            } else if (accumulate) {
                acc = ::evk_sim::ld<TD>(c_off(r, c));
                const bool c_ok = init_all(c_off(r, c), sizeof(TD));
                if (!c_ok && r < p.m && c < p.n) ++bad_c;
                ok = ok && c_ok;
            }
            if constexpr (std::is_same<TD, float>::value) {
                float s = static_cast<float>(acc);
                for (int kk = 0; kk < p.k; ++kk)
                    s += static_cast<float>(arow[kk]) * static_cast<float>(::evk_sim::ld<TB>(b_off(kk, c)));
                std::memcpy(::evk_sim::g_ub + c_off(r, c), &s, sizeof(float));
            } else {
                int64_t s = static_cast<int64_t>(acc);
                for (int kk = 0; kk < p.k; ++kk)
                    s += static_cast<int64_t>(arow[kk]) * static_cast<int64_t>(::evk_sim::ld<TB>(b_off(kk, c)));
                const int32_t v = static_cast<int32_t>(static_cast<uint32_t>(s));
                std::memcpy(::evk_sim::g_ub + c_off(r, c), &v, sizeof(int32_t));
            }
            std::memset(::evk_sim::g_ub_init + c_off(r, c), ok ? 1 : 0, sizeof(TD));
        }
    }
    if (bad_c)
        ::evk_sim::violation(EVK_RULE_UNINIT_READ, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "Mmad accumulates onto L0C elements never written in this block (%llu of the m x n "
                             "result): the first Mmad of a K loop needs cmatrixInitVal=true (C = A x B), the "
                             "following ones false",
                             static_cast<unsigned long long>(bad_c));
    if (bad_bias)
        ::evk_sim::violation(EVK_RULE_UNINIT_READ, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "Mmad adds a bias whose bias-table entries were never written (%llu of the n columns)",
                             static_cast<unsigned long long>(bad_bias));
    ::evk_sim::local_access(op, dst.buf_, dst.off_, c_bytes, true, ::evk_sim::PID_M, false, loc.file, loc.line);
    const double hw_macs = static_cast<double>(Mp) * Np * (static_cast<double>(K1) * k0);
    ::evk_sim::tm_add_cost(hw_macs / ::evk_sim::cube_macs_per_cycle(::evk_sim::Ty<TA>::kind));
    ::evk_sim::count_cube(::evk_sim::Ty<TA>::kind, static_cast<uint64_t>(p.m) * p.n * p.k);
}
}  // namespace evk_detail

template <typename T, typename U, typename S>
inline void Mmad(const LocalTensor<T>& dst, const LocalTensor<U>& fm, const LocalTensor<S>& filter,
                 const MmadParams& mmadParams, EVK_LOC) {
    evk_detail::mmad<T, U, S, T>(dst, fm, filter, nullptr, mmadParams, loc);
}
template <typename T, typename U, typename S, typename V>
inline void Mmad(const LocalTensor<T>& dst, const LocalTensor<U>& fm, const LocalTensor<S>& filter,
                 const LocalTensor<V>& bias, const MmadParams& mmadParams, EVK_LOC) {
    evk_detail::mmad<T, U, S, V>(dst, fm, filter, &bias, mmadParams, loc);
}

namespace evk_detail {
template <typename T, typename U>
inline void fixpipe_gm(const GlobalTensor<T>& dst, const LocalTensor<U>& src, const FixpipeParamsV220& p, bool nz,
                       ::evk_sim::SrcLoc loc) {
    static const char* op = "Fixpipe L0C->GM";
    ::evk_sim::begin_instr(::evk_sim::PID_FIX);
    valid(src.buf_, op, loc);
    if (!in_mem(op, "src", src.buf_, ::evk_sim::MEM_L0C, loc, "CO1")) return;
    local_align(op, "src", src.buf_, src.off_, 64, loc);
    if (p.nSize == 0 || p.mSize == 0 || p.ndNum == 0) return;  // documented NOP
    // conversion on the way out
    const int q = static_cast<int>(p.quantPre);
    bool types_ok;
    if (q == NoQuant)
        types_ok = std::is_same<T, U>::value && (std::is_same<U, float>::value || std::is_same<U, int32_t>::value);
    else if (q == F322F16)
        types_ok = ::evk_sim::is_half_t<T>::value && std::is_same<U, float>::value;
    else if (q == F322BF16)
        types_ok = std::is_same<T, bfloat16_t>::value && std::is_same<U, float>::value;
    else {
        ::evk_sim::violation(EVK_RULE_UNSUPPORTED_API, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "Fixpipe quantPre=%d: the emulator implements NoQuant, F322F16 and F322BF16 only", q);
        return;
    }
    if (!types_ok) {
        ::evk_sim::violation(EVK_RULE_UNSUPPORTED_DTYPE, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "Fixpipe %s -> %s with quantPre=%s: NoQuant keeps float/int32, F322F16 writes half, "
                             "F322BF16 bfloat16",
                             ::evk_sim::Ty<U>::name, ::evk_sim::Ty<T>::name,
                             q == NoQuant ? "NoQuant" : q == F322F16 ? "F322F16" : "F322BF16");
        return;
    }
    // The documentation asks nSize for a multiple of 16 (8 with channel split); CANN's own Matmul passes the
    // unaligned width for an ND destination (impl/adv_api/detail/matmul/stage/copy_cube_out/copy_cube_out_utils.h:
    // "params_.nSize = nSize" for CubeFormat::ND) and pads only NZ: so the warning is for NZ output.
    if (nz && p.nSize % 16 && !p.isChannelSplit)
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_WARNING, loc.file, loc.line,
                             "Fixpipe nSize=%u to an NZ destination: the API documents nSize as a multiple of 16 (8 "
                             "with channel split)", p.nSize);
    if (static_cast<uint32_t>(p.srcStride) * 16 < static_cast<uint32_t>(p.mSize) ||
        (!nz && p.dstStride < p.nSize) || p.dstStride == 0) {
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "Fixpipe: srcStride=%u (16-element units; at least mSize=%u rounded up to 16) and "
                             "dstStride=%u (%s)",
                             p.srcStride, p.mSize, p.dstStride,
                             nz ? "32-byte units between column blocks, non-zero"
                                : "elements per destination row, at least nSize");
        return;
    }
    std::vector<uint8_t> row(static_cast<size_t>(p.nSize) * sizeof(T));
    uint64_t written = 0;
    for (uint32_t nd = 0; nd < p.ndNum; ++nd) {
        const int64_t sbase = src.off_ + static_cast<int64_t>(nd) * p.srcNdStride * 256 * static_cast<int64_t>(sizeof(U));
        for (uint32_t r = 0; r < p.mSize; ++r) {
            for (uint32_t cb = 0; cb < p.nSize; cb += 16) {
                const uint32_t w = std::min<uint32_t>(16, p.nSize - cb);
                const int64_t s = sbase + (static_cast<int64_t>(cb / 16) * p.srcStride * 16 + r * 16) *
                                              static_cast<int64_t>(sizeof(U));
                ::evk_sim::local_access(op, src.buf_, s, w * sizeof(U), false, ::evk_sim::PID_FIX, true, loc.file,
                                        loc.line);
                for (uint32_t c = 0; c < w; ++c) {
                    U v;
                    std::memcpy(&v, ::evk_sim::g_ub + s + c * sizeof(U), sizeof(U));
                    if (p.reluEn && v < U(0)) v = U(0);
                    T o = static_cast<T>(v);  // half/bfloat16: round to nearest even (CAST_RINT)
                    std::memcpy(row.data() + (cb + c) * sizeof(T), &o, sizeof(T));
                }
            }
            if (!nz) {
                T* g = dst.address_ + static_cast<uint64_t>(nd) * p.dstNdStride + static_cast<uint64_t>(r) * p.dstStride;
                ::evk_sim::tm_gm_segment(g, row.size());
                gm_store(op, g, row.data(), row.size(), dst.address_, dst.tensor_bytes_(), ::evk_sim::Ty<T>::kind, loc);
            } else {  // NZ out: column block cb at cb/16 * dstStride * 32 bytes, row r at r * 16 elements
                for (uint32_t cb = 0; cb < p.nSize; cb += 16) {
                    const uint32_t w = std::min<uint32_t>(16, p.nSize - cb);
                    T* g = dst.address_ + static_cast<uint64_t>(cb / 16) * p.dstStride * 32 / sizeof(T) +
                           static_cast<uint64_t>(r) * 16;
                    ::evk_sim::tm_gm_segment(g, w * sizeof(T));
                    gm_store(op, g, row.data() + cb * sizeof(T), w * sizeof(T), dst.address_, dst.tensor_bytes_(),
                             ::evk_sim::Ty<T>::kind, loc);
                }
            }
            written += row.size();
        }
    }
    ::evk_sim::count_fix(written);
}
}  // namespace evk_detail

template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR>
inline void Fixpipe(const GlobalTensor<T>& dst, const LocalTensor<U>& src, const FixpipeParamsV220& intriParams,
                    EVK_LOC) {
    if (config.format == CO2Layout::COLUMN_MAJOR || config.isToUB) {
        ::evk_sim::violation(EVK_RULE_UNSUPPORTED_API, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "Fixpipe to GM in column-major (NZ2DN) or to UB is not emulated (ND and NZ are)");
        return;
    }
    evk_detail::fixpipe_gm(dst, src, intriParams, config.format == CO2Layout::NZ, loc);
}

}  // namespace AscendC

#include "img2col.h"  // LoadData 3D v2 (image to column), SetFmatrix, SetLoadDataPaddingValue

// A MIX kernel's translation unit says so (the build defines EVK_SIM_MIX = AIVs per AI core when the kernel
// uses ASCEND_IS_AIC/AIV or a KERNEL_TYPE_MIX_* type): each launched block becomes one AIC and that many AIVs.
#ifdef EVK_SIM_MIX
namespace evk_sim {
static const int evk_mix_registration_ = (set_mix_ratio(EVK_SIM_MIX), 0);
}
#endif

#endif  // EVK_SIM_CUBE_H
