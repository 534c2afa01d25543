// EvoKernel Ascend C CPU emulator: the matmul tiling structure (host and kernel side) and, on the host, the
// matmul_tiling API (MatmulApiTiling, MultiCoreMatmulTiling) with a tiling algorithm of our own.
//
// TCubeTiling carries CANN's documented fields in CANN's order (all int32), so a tiling struct that embeds it
// has the layout the sample kernels expect. One type serves every spelling CANN uses: optiling::TCubeTiling
// (the host's TILING_DATA_FIELD_DEF_STRUCT member, with set_/get_ accessors), AscendC::tiling::TCubeTiling
// (kernel_tiling/kernel_tiling.h) and the unqualified TCubeTiling kernels name.
//
// The algorithm (GetTiling): split M x N over at most SetDim cores (or take SetSingleShape), then the
// largest base block (or SetFixSplit's) that fits L0A/L0B (double-buffered) and L0C, then how many K blocks
// of A and B are staged in L1 (stepKa/stepKb, depthA1/B1) within L1 (or SetBufferSpace's limit). Base sizes
// are multiples of 16 (M, N) and of one fractal's K (32 bytes / element size). Impossible requests return
// -1 with a message on stderr. See docs/ascend-sim.md ("Matmul tiling").
#ifndef EVK_SIM_MATMUL_TILING_H
#define EVK_SIM_MATMUL_TILING_H

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>

#define EVK_TCUBE_FIELDS(X)                                                                                  \
    X(usedCoreNum) X(M) X(N) X(Ka) X(Kb) X(singleCoreM) X(singleCoreN) X(singleCoreK) X(baseM) X(baseN)      \
    X(baseK) X(depthA1) X(depthB1) X(stepM) X(stepN) X(isBias) X(transLength) X(iterateOrder) X(shareMode)   \
    X(shareL1Size) X(shareL0CSize) X(shareUbSize) X(batchM) X(batchN) X(singleBatchM) X(singleBatchN)       \
    X(stepKa) X(stepKb) X(depthAL1CacheUB) X(depthBL1CacheUB) X(dbL0A) X(dbL0B) X(dbL0C) X(ALayoutInfoB)     \
    X(ALayoutInfoS) X(ALayoutInfoN) X(ALayoutInfoG) X(ALayoutInfoD) X(BLayoutInfoB) X(BLayoutInfoS)         \
    X(BLayoutInfoN) X(BLayoutInfoG) X(BLayoutInfoD) X(CLayoutInfoB) X(CLayoutInfoS1) X(CLayoutInfoN)        \
    X(CLayoutInfoG) X(CLayoutInfoS2) X(BatchNum) X(mxTypePara)

namespace evk_sim {
void tiling_save(const void* obj, size_t size, void* buf, size_t cap, const char* cls);
}

namespace AscendC {
namespace tiling {
struct TCubeTiling {
#define EVK_TCUBE_DECL(f) int32_t f = 0;
    EVK_TCUBE_FIELDS(EVK_TCUBE_DECL)
#undef EVK_TCUBE_DECL
#define EVK_TCUBE_ACC(f)                           \
    void set_##f(int32_t v) { f = v; }             \
    int32_t get_##f() const { return f; }
    EVK_TCUBE_FIELDS(EVK_TCUBE_ACC)
#undef EVK_TCUBE_ACC
    static constexpr const char* EvkClassName() { return "TCubeTiling"; }
#ifndef EVK_SIM_KERNEL
    void SaveToBuffer(void* buf, size_t cap) const { ::evk_sim::tiling_save(this, sizeof(*this), buf, cap, "TCubeTiling"); }
#endif
    size_t GetDataSize() const { return sizeof(*this); }
};
static_assert(sizeof(TCubeTiling) == 50 * sizeof(int32_t), "TCubeTiling: 50 int32 fields");
}  // namespace tiling
}  // namespace AscendC

namespace optiling {
using TCubeTiling = ::AscendC::tiling::TCubeTiling;
}
using TCubeTiling = ::AscendC::tiling::TCubeTiling;

#ifndef EVK_SIM_KERNEL
#include "evk_sim/host.h"

namespace matmul_tiling {

enum class DataType : int32_t {
    DT_FLOAT = 0, DT_FLOAT16 = 1, DT_INT8 = 2, DT_INT32 = 3, DT_UINT8 = 4, DT_INT16 = 6, DT_UINT16 = 7,
    DT_UINT32 = 8, DT_INT64 = 9, DT_UINT64 = 10, DT_DOUBLE = 11, DT_BOOL = 12, DT_STRING = 13, DT_BF16 = 27,
    DT_UNDEFINED = 28, DT_INT4 = 29, DT_BFLOAT16 = 33, DT_MAX = 40
};
enum class TPosition : int32_t {
    GM, A1, A2, B1, B2, C1, C2, CO1, CO2, VECIN, VECOUT, VECCALC, LCM = VECCALC, SPM, SHM = SPM, TSCM, MAX
};
enum class CubeFormat : int32_t { ND = 0, NZ, ZN, ZZ, NN, ND_ALIGN, SCALAR, VECTOR, ROW_MAJOR = ND, COLUMN_MAJOR = 8 };
enum class MatrixTraverse : int32_t { NOSET = 0, FIRSTM = 1, FIRSTN = 2 };
enum class MatrixMadType : int32_t { NORMAL = 0, HF32 = 1 };

struct PlatformInfo {
    platform_ascendc::SocVersion socVersion = platform_ascendc::SocVersion::ASCEND910B;
    uint64_t l1Size = 0, l0CSize = 0, ubSize = 0, l0ASize = 0, l0BSize = 0;
};

namespace evk_detail {
struct TypeInfo {
    TPosition pos = TPosition::GM;
    CubeFormat format = CubeFormat::ND;
    DataType dtype = DataType::DT_FLOAT16;
    bool trans = false;
    bool set = false;
};
inline int dtype_bytes(DataType d) {
    switch (d) {
        case DataType::DT_FLOAT: case DataType::DT_INT32: case DataType::DT_UINT32: return 4;
        case DataType::DT_FLOAT16: case DataType::DT_BF16: case DataType::DT_BFLOAT16: case DataType::DT_INT16:
        case DataType::DT_UINT16: return 2;
        case DataType::DT_INT8: case DataType::DT_UINT8: return 1;
        default: return 0;
    }
}
inline int64_t align_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }
inline int64_t ceil_div(int64_t x, int64_t a) { return (x + a - 1) / a; }
}  // namespace evk_detail

class MatmulApiTilingBase {
public:
    MatmulApiTilingBase() { from_platform(); }
    explicit MatmulApiTilingBase(const platform_ascendc::PlatformAscendC&) { from_platform(); }
    explicit MatmulApiTilingBase(const PlatformInfo& p) {
        from_platform();
        if (p.l1Size) l1_ = p.l1Size;
        if (p.l0CSize) l0c_ = p.l0CSize;
        if (p.ubSize) ub_ = p.ubSize;
        if (p.l0ASize) l0a_ = p.l0ASize;
        if (p.l0BSize) l0b_ = p.l0BSize;
    }
    virtual ~MatmulApiTilingBase() = default;

    int32_t SetAType(TPosition pos, CubeFormat type, DataType dataType, bool isTrans = false) {
        a_ = {pos, type, dataType, isTrans, true};
        return 0;
    }
    int32_t SetBType(TPosition pos, CubeFormat type, DataType dataType, bool isTrans = false) {
        b_ = {pos, type, dataType, isTrans, true};
        return 0;
    }
    int32_t SetCType(TPosition pos, CubeFormat type, DataType dataType) {
        c_ = {pos, type, dataType, false, true};
        return 0;
    }
    int32_t SetBiasType(TPosition pos, CubeFormat type, DataType dataType) {
        bias_ = {pos, type, dataType, false, true};
        return 0;
    }
    virtual int32_t SetShape(int32_t m, int32_t n, int32_t k) {
        m_ = m;
        n_ = n;
        k_ = k;
        return 0;
    }
    int32_t SetOrgShape(int32_t orgMIn, int32_t orgNIn, int32_t orgKIn) { return SetOrgShape(orgMIn, orgNIn, orgKIn, orgKIn); }
    int32_t SetOrgShape(int32_t orgMIn, int32_t orgNIn, int32_t orgKaIn, int32_t orgKbIn) {
        org_m_ = orgMIn;
        org_n_ = orgNIn;
        org_ka_ = orgKaIn;
        org_kb_ = orgKbIn;
        return 0;
    }
    int32_t EnableBias(bool isBiasIn = false) { return SetBias(isBiasIn); }
    int32_t SetBias(bool isBiasIn = false) {
        is_bias_ = isBiasIn;
        return 0;
    }
    int32_t SetFixSplit(int32_t baseMIn = -1, int32_t baseNIn = -1, int32_t baseKIn = -1) {
        fix_m_ = baseMIn;
        fix_n_ = baseNIn;
        fix_k_ = baseKIn;
        return 0;
    }
    int32_t SetBufferSpace(int32_t l1Size = -1, int32_t l0CSize = -1, int32_t ubSize = -1, int32_t btSize = -1) {
        space_l1_ = l1Size;
        space_l0c_ = l0CSize;
        space_ub_ = ubSize;
        (void)btSize;
        return 0;
    }
    int32_t SetTraverse(MatrixTraverse traverse) {
        traverse_ = traverse;
        return 0;
    }
    int32_t SetMadType(MatrixMadType) { return 0; }
    int32_t SetDoubleBuffer(bool a, bool b, bool c, bool bias, bool transND2NZ = true, bool transNZ2ND = true) {
        (void)a; (void)b; (void)bias; (void)transND2NZ; (void)transNZ2ND;
        db_l0c_ = c;
        return 0;
    }

    virtual int64_t GetTiling(optiling::TCubeTiling& tiling) = 0;

    // the last tiling, as CANN's MatmulApiTilingBase keeps it public
    optiling::TCubeTiling tiling_;

protected:
    void from_platform() {
        const auto& p = ::evk_sim::platform();
        l1_ = p.l1_size;
        l0a_ = p.l0a_size;
        l0b_ = p.l0b_size;
        l0c_ = p.l0c_size;
        ub_ = p.ub_size;
    }
    int64_t fail(const char* fmt_msg, long long a = 0, long long b = 0, long long c = 0, long long d = 0) {
        std::fprintf(stderr, "matmul_tiling GetTiling: ");
        std::fprintf(stderr, fmt_msg, a, b, c, d);
        std::fprintf(stderr, "\n");
        return -1;
    }
    // Fills tiling_ for singleM x singleN x singleK per core over mDim x nDim cores; -1 if it cannot.
    int64_t compute_core(int64_t singleM, int64_t singleN, int64_t singleK, int64_t used) {
        using namespace evk_detail;
        const int sa = dtype_bytes(a_.dtype), sb = dtype_bytes(b_.dtype);
        const int k0 = 32 / sa;
        // base M/N: multiples of 16, at most 256 (or what is fixed); base K: multiples of k0
        const int64_t am = align_up(singleM, 16), an = align_up(singleN, 16), ak = align_up(singleK, k0);
        const uint64_t l0c = space_l0c_ > 0 ? static_cast<uint64_t>(space_l0c_) : l0c_;
        const uint64_t l1 = space_l1_ > 0 ? static_cast<uint64_t>(space_l1_) : l1_;
        int64_t best_m = 0, best_n = 0, best_k = 0;
        double best_cost = 0;
        auto candidates = [](int64_t fixed, int64_t limit, int64_t step, int64_t cap, int64_t* out) {
            int n = 0;
            if (fixed > 0) {
                out[n++] = fixed;
                return n;
            }
            for (int64_t v = step; v <= cap && n < 64; v += step)
                if (v <= limit || v == step) out[n++] = v;
            return n;
        };
        int64_t cm[64], cn[64], ck[64];
        const int nm = candidates(fix_m_, am, 16, 256, cm);
        const int nn = candidates(fix_n_, an, 16, 256, cn);
        // float with B in row-major ND or A transposed: the kernel moves them with LoadDataWithTranspose, whose
        // 16 x 16 float squares span two 8-wide K fractals, so base K is a multiple of 16 there
        const int kstep = (sa == 4 && (!b_.trans || a_.trans)) ? 16 : k0;
        const int nk = candidates(fix_k_, align_up(singleK, kstep), kstep, 512 / sa, ck);
        for (int i = 0; i < nm; ++i)
            for (int j = 0; j < nn; ++j)
                for (int t = 0; t < nk; ++t) {
                    const int64_t bm = cm[i], bn = cn[j], bk = ck[t];
                    if (static_cast<uint64_t>(bm * bk * sa * 2) > l0a_ || static_cast<uint64_t>(bk * bn * sb * 2) > l0b_)
                        continue;  // L0A / L0B, double-buffered
                    if (static_cast<uint64_t>(bm * bn * 4) > l0c) continue;
                    // cost: cube cycles of padded tiles + a per-tile overhead; prefer fewer, fuller tiles
                    const double tiles = static_cast<double>(ceil_div(singleM, bm) * ceil_div(singleN, bn));
                    const double ksteps = static_cast<double>(ceil_div(singleK, bk));
                    const double padded = tiles * bm * bn * ksteps * bk;
                    const double cost = padded / 4096.0 + tiles * ksteps * 40.0 + tiles * 200.0;
                    if (best_m == 0 || cost < best_cost - 1e-9) {
                        best_m = bm, best_n = bn, best_k = bk, best_cost = cost;
                    }
                }
        if (best_m == 0)
            return fail("no base block fits: baseM=%lld baseN=%lld baseK=%lld (fixed: -1 = free) against L0A/L0B "
                        "(double-buffered) and L0C=%lld bytes",
                        fix_m_, fix_n_, fix_k_, static_cast<long long>(l0c));
        // L1: stepKa/stepKb K blocks of A and B, double-buffered when they fit; the bias row
        const int64_t kblocks = ceil_div(singleK, best_k);
        const int64_t a_blk = best_m * best_k * sa, b_blk = best_k * best_n * sb;
        const int64_t bias_l1 = is_bias_ ? best_n * 4 : 0;
        int64_t step = kblocks;
        while (step > 1 && (2 * step * (a_blk + b_blk) + bias_l1) > static_cast<int64_t>(l1)) --step;
        int64_t depth = 2 * step;
        if (depth * (a_blk + b_blk) + bias_l1 > static_cast<int64_t>(l1)) depth = step;
        if (depth * (a_blk + b_blk) + bias_l1 > static_cast<int64_t>(l1))
            return fail("baseM=%lld baseN=%lld baseK=%lld: one A and one B block (+ bias) need more than L1 (%lld "
                        "bytes)",
                        best_m, best_n, best_k, static_cast<long long>(l1));
        optiling::TCubeTiling t;
        t.usedCoreNum = static_cast<int32_t>(used);
        t.M = m_;
        t.N = n_;
        t.Ka = org_ka_ > 0 ? org_ka_ : k_;
        t.Kb = org_kb_ > 0 ? org_kb_ : k_;
        if (org_m_ > 0) t.M = org_m_;
        if (org_n_ > 0) t.N = org_n_;
        t.singleCoreM = static_cast<int32_t>(singleM);
        t.singleCoreN = static_cast<int32_t>(singleN);
        t.singleCoreK = static_cast<int32_t>(singleK);
        t.baseM = static_cast<int32_t>(best_m);
        t.baseN = static_cast<int32_t>(best_n);
        t.baseK = static_cast<int32_t>(best_k);
        t.depthA1 = static_cast<int32_t>(depth);
        t.depthB1 = static_cast<int32_t>(depth);
        t.stepM = 1;
        t.stepN = 1;
        t.stepKa = static_cast<int32_t>(step);
        t.stepKb = static_cast<int32_t>(step);
        t.isBias = is_bias_ ? 1 : 0;
        t.iterateOrder = traverse_ == MatrixTraverse::FIRSTN ? 1 : 0;
        t.transLength = (c_.pos == TPosition::VECIN || c_.pos == TPosition::VECCALC || c_.pos == TPosition::VECOUT)
                            ? static_cast<int32_t>(best_m * best_n * 4) : 0;
        t.shareL1Size = static_cast<int32_t>(depth * (a_blk + b_blk) + bias_l1);
        t.shareL0CSize = static_cast<int32_t>(best_m * best_n * 4);
        t.shareUbSize = 0;
        t.batchM = t.batchN = t.singleBatchM = t.singleBatchN = 1;
        t.dbL0A = 2;
        t.dbL0B = 2;
        t.dbL0C = (db_l0c_ && static_cast<uint64_t>(2 * best_m * best_n * 4) <= l0c) ? 2 : 1;
        tiling_ = t;
        return 0;
    }
    int64_t check_common() {
        using namespace evk_detail;
        if (m_ <= 0 || n_ <= 0 || k_ <= 0)
            return fail("SetShape(M=%lld, N=%lld, K=%lld): every size must be positive", m_, n_, k_);
        const int sa = dtype_bytes(a_.dtype), sb = dtype_bytes(b_.dtype);
        const bool half_like = (a_.dtype == DataType::DT_FLOAT16 || a_.dtype == DataType::DT_BF16 ||
                                a_.dtype == DataType::DT_BFLOAT16);
        const bool ok = a_.dtype == b_.dtype &&
                        (half_like || a_.dtype == DataType::DT_FLOAT || a_.dtype == DataType::DT_INT8) &&
                        (c_.dtype == DataType::DT_FLOAT || c_.dtype == DataType::DT_FLOAT16 ||
                         c_.dtype == DataType::DT_BF16 || c_.dtype == DataType::DT_INT32);
        if (!ok || sa == 0 || sb == 0)
            return fail("A/B/C types %lld/%lld/%lld (DataType codes): the 910B cube takes half, bfloat16, float or "
                        "int8 (A and B alike) into float/half/bfloat16 (int8: int32)",
                        static_cast<int>(a_.dtype), static_cast<int>(b_.dtype), static_cast<int>(c_.dtype));
        const int k0 = 32 / sa;
        if (fix_m_ > 0 && fix_m_ % 16) return fail("SetFixSplit baseM=%lld: must be a multiple of 16", fix_m_);
        if (fix_n_ > 0 && fix_n_ % 16) return fail("SetFixSplit baseN=%lld: must be a multiple of 16", fix_n_);
        if (fix_k_ > 0 && fix_k_ % k0)
            return fail("SetFixSplit baseK=%lld: must be a multiple of %lld (32 bytes of the input type)", fix_k_, k0);
        if ((org_ka_ > 0 && org_ka_ < k_) || (org_m_ > 0 && org_m_ < m_) || (org_n_ > 0 && org_n_ < n_))
            return fail("SetOrgShape(M=%lld, N=%lld, Ka=%lld) is smaller than SetShape's", org_m_, org_n_, org_ka_);
        return 0;
    }


public:
    // inputs, readable (CANN keeps them public too)
    evk_detail::TypeInfo a_, b_, c_, bias_;
    int64_t m_ = -1, n_ = -1, k_ = -1, org_m_ = -1, org_n_ = -1, org_ka_ = -1, org_kb_ = -1;
    int64_t fix_m_ = -1, fix_n_ = -1, fix_k_ = -1;
    int64_t space_l1_ = -1, space_l0c_ = -1, space_ub_ = -1;
    bool is_bias_ = false, db_l0c_ = false;
    MatrixTraverse traverse_ = MatrixTraverse::NOSET;
    uint64_t l1_ = 0, l0a_ = 0, l0b_ = 0, l0c_ = 0, ub_ = 0;
};

// One core computes the whole (single) shape.
class MatmulApiTiling : public MatmulApiTilingBase {
public:
    using MatmulApiTilingBase::MatmulApiTilingBase;
    int64_t GetTiling(optiling::TCubeTiling& tiling) override {
        if (check_common() != 0) return -1;
        if (compute_core(m_, n_, k_, 1) != 0) return -1;
        tiling = tiling_;
        return 0;
    }
};

// M x N split over up to SetDim cores (SetSingleShape fixes the per-core block).
class MultiCoreMatmulTiling : public MatmulApiTilingBase {
public:
    using MatmulApiTilingBase::MatmulApiTilingBase;
    int32_t SetDim(int32_t dim) {
        dim_ = dim;
        return 0;
    }
    int32_t SetShape(int32_t m, int32_t n, int32_t k) override { return MatmulApiTilingBase::SetShape(m, n, k); }
    int32_t SetSingleShape(int32_t singleMIn = -1, int32_t singleNIn = -1, int32_t singleKIn = -1) {
        single_m_ = singleMIn;
        single_n_ = singleNIn;
        single_k_ = singleKIn;
        return 0;
    }
    int32_t SetSingleRange(int32_t maxM = -1, int32_t maxN = -1, int32_t maxK = -1, int32_t minM = -1,
                           int32_t minN = -1, int32_t minK = -1) {
        (void)maxK; (void)minM; (void)minN; (void)minK;
        max_m_ = maxM;
        max_n_ = maxN;
        return 0;
    }
    int32_t SetAlignSplit(int32_t alignM, int32_t alignN, int32_t alignK) {
        (void)alignK;
        align_m_ = alignM;
        align_n_ = alignN;
        return 0;
    }
    int32_t GetSingleShape(int32_t& shapeM, int32_t& shapeN, int32_t& shapeK) {
        shapeM = tiling_.singleCoreM;
        shapeN = tiling_.singleCoreN;
        shapeK = tiling_.singleCoreK;
        return 0;
    }
    int32_t GetCoreNum(int32_t& dim, int32_t& mDim, int32_t& nDim) {
        dim = tiling_.usedCoreNum;
        mDim = m_dim_;
        nDim = n_dim_;
        return 0;
    }
    void EnableMultiCoreSplitK(bool) {}
    void SetSplitK(bool) {}

    int64_t GetTiling(optiling::TCubeTiling& tiling) override {
        using namespace evk_detail;
        if (check_common() != 0) return -1;
        if (dim_ <= 0) return fail("SetDim(%lld): the number of cores must be positive", dim_);
        const int sa = dtype_bytes(a_.dtype);
        const int64_t singleK = single_k_ > 0 ? single_k_ : k_;
        if (single_k_ > 0 && single_k_ != k_)
            return fail("SetSingleShape singleK=%lld: splitting K over cores is not emulated (K=%lld)", single_k_, k_);
        int64_t sm = -1, sn = -1;
        if (single_m_ > 0 || single_n_ > 0) {  // fixed by the caller (the other one free: all of it)
            sm = single_m_ > 0 ? single_m_ : m_;
            sn = single_n_ > 0 ? single_n_ : n_;
            if (sm > m_ || sn > n_)
                return fail("SetSingleShape(%lld, %lld) exceeds the shape M=%lld, N=%lld", sm, sn, m_, n_);
            const int64_t cores = ceil_div(m_, sm) * ceil_div(n_, sn);
            if (cores > dim_)
                return fail("SetSingleShape(%lld, %lld) needs %lld cores, SetDim gave %lld", sm, sn, cores, dim_);
            m_dim_ = ceil_div(m_, sm);
            n_dim_ = ceil_div(n_, sn);
        } else {  // our split: the least modelled time per core (cube + GM traffic), even splits preferred
            double best = 0;
            const int64_t am = align_m_ > 0 ? align_m_ : 16, an = align_n_ > 0 ? align_n_ : 16;
            for (int64_t md = 1; md <= dim_; ++md)
                for (int64_t nd = 1; md * nd <= dim_; ++nd) {
                    int64_t cm = align_up(ceil_div(m_, md), am), cn = align_up(ceil_div(n_, nd), an);
                    if (fix_m_ > 0 && cm > fix_m_) cm = align_up(cm, fix_m_);
                    if (fix_n_ > 0 && cn > fix_n_) cn = align_up(cn, fix_n_);
                    if (max_m_ > 0 && cm > max_m_) continue;
                    if (max_n_ > 0 && cn > max_n_) continue;
                    const int64_t rm = ceil_div(m_, cm), rn = ceil_div(n_, cn);
                    const double macs = static_cast<double>(align_up(cm, 16)) * align_up(cn, 16) * singleK;
                    const double bytes = static_cast<double>(cm + cn) * singleK * sa;
                    const bool even = m_ % cm == 0 && n_ % cn == 0 &&
                                      (fix_m_ <= 0 || cm % fix_m_ == 0) && (fix_n_ <= 0 || cn % fix_n_ == 0);
                    // an even split (every core the same block, whole base blocks) beats any uneven one: kernels
                    // written for the API (CANN's samples) copy whole blocks out
                    const double t = macs / 4096.0 + bytes / 64.0 + 1.0 * (rm * rn) + (even ? 0.0 : 1e12);
                    if (best == 0 || t < best - 1e-9) {
                        best = t;
                        sm = cm;
                        sn = cn;
                        m_dim_ = rm;
                        n_dim_ = rn;
                    }
                }
            if (sm > m_) sm = m_;
            if (sn > n_) sn = n_;
        }
        if (compute_core(sm, sn, singleK, m_dim_ * n_dim_) != 0) return -1;
        tiling = tiling_;
        return 0;
    }

private:
    int64_t dim_ = -1, single_m_ = -1, single_n_ = -1, single_k_ = -1, max_m_ = -1, max_n_ = -1;
    int64_t align_m_ = -1, align_n_ = -1, m_dim_ = 1, n_dim_ = 1;
};

}  // namespace matmul_tiling
#endif  // !EVK_SIM_KERNEL

#endif  // EVK_SIM_MATMUL_TILING_H
