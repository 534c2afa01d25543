// EvoKernel Ascend C CPU emulator: LoadData 3D v2 (image to column, for convolutions), L1 -> L0A / L0B, as the
// public API documents it (asc-devkit docs: LoadData（卷积数据搬运）, SetFmatrix, SetLoadDataPaddingValue,
// SetLoadDataRepeat, SetLoadDataBoundary). Written from the documented behaviour; included from cube.h.
//
// Usage (the exact call sequence; half shown, float/bfloat16/int32 alike with C0 = 32 / sizeof(T)):
//   // GM NHWC (one image, C a multiple of C0) -> L1 in NC1HWC0: ND2NZ of the [H*W, C] matrix, each C0 block
//   // of channels one "column block" of H*W rows:
//   DataCopy(fm1, gmX, Nd2NzParams(1, H * W, C, 0, C, H * W, 1, 0));
//   uint8_t pad[4] = {padLeft, padRight, padTop, padBottom};
//   SetFmatrix(H, W, pad, FmatrixMode::FMATRIX_LEFT);            // optional (see isSetFMatrix below)
//   SetLoadDataPaddingValue<half>(half(0));                       // optional (see isSetPadding below)
//   LoadData3DParamsV2<half> p;  // p.padList, l1H, l1W used when the template config's isSetFMatrix = true
//   p.l1H = H; p.l1W = W; p.padList[0..3] = pad; p.channelSize = C;
//   p.kStartPt = 0; p.kExtension = C * Kh * Kw;                   // K of the im2col matrix: (c1, kh, kw, c0)
//   p.mStartPt = 0; p.mExtension = Ceil(Ho * Wo, 16) * 16;        // M: output pixels ho * Wo + wo
//   p.strideH/W, p.filterH/W = Kh/Kw, p.dilationFilterH/W;        // defaults 1
//   LoadData(a2 /*A2, L0A*/, fm1 /*A1, L1*/, p);                  // L0A gets the Zz matrix [M x K]
//   // then Mmad(c, a2, b2, MmadParams(M, Cout, K, ...)) with the weights in L0B as B[K x Cout] (Zn),
//   // K ordered (c1, kh, kw, c0) like the columns above; Fixpipe writes [Ho*Wo x Cout] (NHWC) to GM.
//   LoadData<half, cfg>(..) with `constexpr IsResetLoad3dConfig cfg = {false, false}` takes l1H/l1W/padList
//   from SetFmatrix and the pad value from SetLoadDataPaddingValue instead of the params.
//
// Semantics emulated. The im2col matrix X of the feature map (NC1HWC0 at src, N = 1: element (c1, h, w, c0) at
// ((c1 * l1H + h) * l1W + w) * C0 + c0) has rows m = ho * Wo + wo and columns k = ((c1 * Kh + kh) * Kw + kw) * C0
// + c0, X[m][k] = fm[c1][ho * strideH - padTop + kh * dilationH][wo * strideW - padLeft + kw * dilationW][c0], the
// pad value outside the feature map; Wo = (l1W + padL + padR - ((Kw - 1) * dilationW + 1)) / strideW + 1. The
// instruction writes S = X[mStartPt .. + mExtension, kStartPt .. + kExtension] as
//   L0A:               Zz(S)   (fractals 16 x C0, row-major inside; what Mmad takes as A, m = mExtension)
//   L0A, enTranspose:  Zz(S^T) (b16/b32 only; each fractal and the fractal grid transposed)
//   L0B (always):      Zn(B = S), B's k = S's m, B's n = S's k (what Mmad takes as B)
// Only the mExtension x kExtension elements are written (the rest of the last fractals keeps what it held).
// Rows m >= Ho * Wo (an mExtension rounded up to 16) read rows ho >= Ho: positions outside the feature map are
// the pad value (an assumption: the documentation does not say; such rows are not used by an Mmad of m = Ho*Wo).
// Not emulated (unsupported_api, named): repeatTime > 1 (SetLoadDataRepeat), channelSize forms that are not a
// multiple of C0 (4/8 channels, N*16+4, ...), fMatrixCtrl = true, enSmallK, the v1 and v2 Pro parameter forms,
// int4b_t. SetLoadDataBoundary is accepted and has no effect.
#ifndef EVK_SIM_IMG2COL_H
#define EVK_SIM_IMG2COL_H

#include <map>

namespace AscendC {

#ifndef EVK_SIM_PAD_SIZE_DEFINED
#define EVK_SIM_PAD_SIZE_DEFINED
constexpr int32_t PAD_SIZE = 4;
#endif

struct IsResetLoad3dConfig {
    bool isSetFMatrix = true;
    bool isSetPadding = true;
};
constexpr IsResetLoad3dConfig IS_RESER_LOAD3D_DEFAULT_CONFIG = {true, true};

enum class FmatrixMode : uint8_t { FMATRIX_LEFT = 0, FMATRIX_RIGHT = 1 };

template <typename T>
struct LoadData3DParamsV2 {
    LoadData3DParamsV2() {}
    LoadData3DParamsV2(const uint8_t padListIn[PAD_SIZE], const uint16_t l1HIn, const uint16_t l1WIn,
                       const uint16_t channelSizeIn, const uint16_t kExtensionIn, const uint16_t mExtensionIn,
                       const uint16_t kStartPtIn, const uint16_t mStartPtIn, const uint8_t strideWIn,
                       const uint8_t strideHIn, const uint8_t filterWIn, const uint8_t filterHIn,
                       const uint8_t dilationFilterWIn, const uint8_t dilationFilterHIn, const bool enTransposeIn,
                       const bool enSmallKIn, const T padValueIn, const bool filterSizeWIn = false,
                       const bool filterSizeHIn = false, const bool fMatrixCtrlIn = false)
        : l1H(l1HIn), l1W(l1WIn), channelSize(channelSizeIn), kExtension(kExtensionIn), mExtension(mExtensionIn),
          kStartPt(kStartPtIn), mStartPt(mStartPtIn), strideW(strideWIn), strideH(strideHIn), filterW(filterWIn),
          filterH(filterHIn), dilationFilterW(dilationFilterWIn), dilationFilterH(dilationFilterHIn),
          enTranspose(enTransposeIn), enSmallK(enSmallKIn), padValue(padValueIn), filterSizeW(filterSizeWIn),
          filterSizeH(filterSizeHIn), fMatrixCtrl(fMatrixCtrlIn) {
        for (int i = 0; i < PAD_SIZE; ++i) padList[i] = padListIn[i];
    }
    uint8_t padList[PAD_SIZE] = {0, 0, 0, 0};  // left, right, top, bottom
    uint16_t l1H = 0;
    uint16_t l1W = 0;
    uint16_t channelSize = 0;
    uint16_t kExtension = 0;
    uint16_t mExtension = 0;
    uint16_t kStartPt = 0;
    uint16_t mStartPt = 0;
    uint8_t strideW = 1;
    uint8_t strideH = 1;
    uint8_t filterW = 1;
    uint8_t filterH = 1;
    uint8_t dilationFilterW = 1;
    uint8_t dilationFilterH = 1;
    bool enTranspose = false;
    bool enSmallK = false;
    T padValue = T(0);
    bool filterSizeW = false;
    bool filterSizeH = false;
    bool fMatrixCtrl = false;
};

struct LoadDataRepeatParam {
    LoadDataRepeatParam() {}
    LoadDataRepeatParam(const uint16_t repeatStrideIn, const uint8_t repeatTimeIn, const uint8_t repeatModeIn)
        : repeatStride(repeatStrideIn), repeatTime(repeatTimeIn), repeatMode(repeatModeIn) {}
    uint16_t repeatStride = 0;
    uint8_t repeatTime = 1;
    uint8_t repeatMode = 0;
    uint8_t reserved = 0;
};

namespace evk_detail {
// The load-3D registers of one core (Feature Map and Pad attribute registers, repeat register). Keyed by the
// core's local-memory arena, so each block/core has its own, kept across calls as the hardware keeps them.
struct Load3dRegs {
    bool fm_set = false;
    uint16_t l1H = 0, l1W = 0;
    uint8_t pad[4] = {0, 0, 0, 0};
    bool pad_set = false;
    uint8_t pad_bytes[4] = {0, 0, 0, 0};
    uint32_t pad_size = 0;
    LoadDataRepeatParam repeat;
    uint32_t boundary = 0;
};
inline Load3dRegs& load3d_regs() {
    static std::map<const void*, Load3dRegs> regs;
    return regs[static_cast<const void*>(::evk_sim::g_ub)];
}
}  // namespace evk_detail

inline void SetFmatrix(uint16_t l1H, uint16_t l1W, const uint8_t padList[4], const FmatrixMode& fmatrixMode,
                       EVK_LOC) {
    (void)loc;
    auto& r = evk_detail::load3d_regs();
    if (fmatrixMode != FmatrixMode::FMATRIX_LEFT)
        ::evk_sim::violation(EVK_RULE_UNSUPPORTED_API, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "SetFmatrix: only FmatrixMode::FMATRIX_LEFT is supported (the documentation: left and "
                             "right matrices both use it)");
    if (l1H == 0 || l1W == 0 || l1H > 32767 || l1W > 32767)
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "SetFmatrix: l1H=%u and l1W=%u must be in 1..32767", l1H, l1W);
    r.fm_set = true;
    r.l1H = l1H;
    r.l1W = l1W;
    for (int i = 0; i < 4; ++i) r.pad[i] = padList[i];
}

template <typename T>
inline void SetLoadDataPaddingValue(const T padValue, EVK_LOC) {
    (void)loc;
    static_assert(sizeof(T) <= 4, "SetLoadDataPaddingValue: 8/16/32-bit types");
    auto& r = evk_detail::load3d_regs();
    std::memcpy(r.pad_bytes, &padValue, sizeof(T));
    r.pad_size = sizeof(T);
    r.pad_set = true;
}

inline void SetLoadDataRepeat(const LoadDataRepeatParam& repeatParams, EVK_LOC) {
    (void)loc;
    evk_detail::load3d_regs().repeat = repeatParams;
}

inline void SetLoadDataBoundary(uint32_t boundaryValue, EVK_LOC) {
    if (boundaryValue > 0 && boundaryValue < 1024)
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "SetLoadDataBoundary(%u): a boundary for LoadData 3D must be 0 (none) or at least 1024 "
                             "bytes; 1..1023 is undefined behaviour",
                             boundaryValue);
    evk_detail::load3d_regs().boundary = boundaryValue;
}

namespace evk_detail {
template <typename T> constexpr bool load3d_type_ok() {
    return ::evk_sim::is_half_t<T>::value || std::is_same<T, bfloat16_t>::value || std::is_same<T, float>::value ||
           std::is_same<T, int32_t>::value || std::is_same<T, uint32_t>::value || std::is_same<T, int8_t>::value ||
           std::is_same<T, uint8_t>::value;
}
inline bool load3d_channels_documented(uint32_t c, uint32_t bytes) {
    if (bytes == 4) return c == 4 || c % 8 == 0 || c % 8 == 4;
    if (bytes == 2) return c == 4 || c == 8 || c % 16 == 0 || c % 16 == 4 || c % 16 == 8;
    return c == 4 || c == 8 || c == 16 || c % 32 == 0 || c % 32 == 4 || c % 32 == 8 || c % 32 == 16;
}
}  // namespace evk_detail

// LoadData 3D v2: L1 (NC1HWC0 feature map) -> L0A (Zz, or Zz of the transpose) / L0B (Zn), image to column.
template <typename T, const IsResetLoad3dConfig& defaultConfig = IS_RESER_LOAD3D_DEFAULT_CONFIG, typename U>
inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData3DParamsV2<U>& p, EVK_LOC) {
    static_assert(std::is_same<T, U>::value,
                  "LoadData 3D: the padValue type of LoadData3DParamsV2<U> must be the tensors' type T");
    static const char* op = "LoadData (3D v2, img2col)";
    ::evk_sim::begin_instr(::evk_sim::PID_MTE1);
    evk_detail::valid(dst.buf_, op, loc);
    evk_detail::valid(src.buf_, op, loc);
    if (!evk_detail::in_mem(op, "src", src.buf_, ::evk_sim::MEM_L1, loc, "A1/B1")) return;
    const int dm = ::evk_sim::mem_of_buf(dst.buf_);
    if (dm != ::evk_sim::MEM_L0A && dm != ::evk_sim::MEM_L0B) {
        evk_detail::in_mem(op, "dst", dst.buf_, ::evk_sim::MEM_L0A, loc, "A2, or L0B: B2");
        return;
    }
    const bool to_b = dm == ::evk_sim::MEM_L0B;
    constexpr uint32_t sz = sizeof(T);
    if (!evk_detail::load3d_type_ok<T>() || (to_b && sz == 1) || (!to_b && p.enTranspose && sz == 1)) {
        ::evk_sim::violation(EVK_RULE_UNSUPPORTED_DTYPE, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: %s %s; the 910B takes int8/uint8/half/bfloat16/int32/uint32/float into L0A, "
                             "half/bfloat16/int32/uint32/float into L0B, and transposes b16/b32 only",
                             op, ::evk_sim::Ty<T>::name,
                             to_b ? "into L0B" : (p.enTranspose ? "transposed into L0A" : "into L0A"));
        return;
    }
    evk_detail::local_align(op, "dst", dst.buf_, dst.off_, 512, loc);
    evk_detail::local_align(op, "src", src.buf_, src.off_, 32, loc);
    auto& regs = evk_detail::load3d_regs();
    // feature-map and pad attributes: from the params, or from SetFmatrix / SetLoadDataPaddingValue
    uint16_t l1H = p.l1H, l1W = p.l1W;
    uint8_t pad[4];
    for (int i = 0; i < 4; ++i) pad[i] = p.padList[i];
    if (!defaultConfig.isSetFMatrix) {
        if (!regs.fm_set) {
            ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                                 "%s: IsResetLoad3dConfig.isSetFMatrix=false takes l1H/l1W/padList from SetFmatrix, "
                                 "which this core never called",
                                 op);
            return;
        }
        l1H = regs.l1H;
        l1W = regs.l1W;
        for (int i = 0; i < 4; ++i) pad[i] = regs.pad[i];
    }
    uint8_t padv[sizeof(T)];
    std::memcpy(padv, &p.padValue, sz);
    if (!defaultConfig.isSetPadding) {
        if (!regs.pad_set) {
            ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                                 "%s: IsResetLoad3dConfig.isSetPadding=false takes the pad value from "
                                 "SetLoadDataPaddingValue, which this core never called",
                                 op);
            return;
        }
        if (regs.pad_size != sz)
            ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_WARNING, loc.file, loc.line,
                                 "%s: the pad value was set as a %u-byte type, the data is %u-byte %s", op,
                                 regs.pad_size, sz, ::evk_sim::Ty<T>::name);
        std::memset(padv, 0, sz);
        std::memcpy(padv, regs.pad_bytes, std::min<uint32_t>(sz, regs.pad_size));
    }
    // documented NOPs
    const uint32_t fw = p.filterW + (p.filterSizeW ? 256u : 0u), fh = p.filterH + (p.filterSizeH ? 256u : 0u);
    if (l1H == 0 || l1W == 0 || p.channelSize == 0 || p.kExtension == 0 || p.mExtension == 0 || fw == 0 || fh == 0 ||
        regs.repeat.repeatTime == 0)
        return;
    if (regs.repeat.repeatTime > 1) {
        ::evk_sim::violation(EVK_RULE_UNSUPPORTED_API, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: SetLoadDataRepeat with repeatTime=%u > 1 is not emulated (one iteration per call is)",
                             op, regs.repeat.repeatTime);
        return;
    }
    if (p.fMatrixCtrl || p.enSmallK) {
        ::evk_sim::violation(EVK_RULE_UNSUPPORTED_API, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: %s is documented as unsupported on this product (keep it false)", op,
                             p.fMatrixCtrl ? "fMatrixCtrl=true" : "enSmallK=true");
        return;
    }
    constexpr uint32_t C0 = 32 / sz;
    bool bad = false;
    if (!evk_detail::load3d_channels_documented(p.channelSize, sz)) {
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: channelSize=%u is not a documented value for a %u-byte type (%s)", op, p.channelSize,
                             sz,
                             sz == 4   ? "4, N*8, N*8+4"
                             : sz == 2 ? "4, 8, N*16, N*16+4, N*16+8"
                                       : "4, 8, 16, N*32, N*32+4, N*32+8, N*32+16");
        return;
    }
    if (p.channelSize % C0 != 0) {
        ::evk_sim::violation(EVK_RULE_UNSUPPORTED_API, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: channelSize=%u: the small-channel forms (not a multiple of C0=%u) are not emulated",
                             op, p.channelSize, C0);
        return;
    }
    if (p.strideW == 0 || p.strideH == 0 || p.strideW > 63 || p.strideH > 63) {
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: strideW=%u, strideH=%u; a stride must be in 1..63", op, p.strideW, p.strideH);
        bad = true;
    }
    if (l1H > 32767 || l1W > 32767 || p.mStartPt > 32767) {
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: l1H=%u, l1W=%u, mStartPt=%u must be at most 32767", op, l1H, l1W, p.mStartPt);
        bad = true;
    }
    if (bad) return;
    const uint32_t C1 = p.channelSize / C0;
    const int64_t dkw = (static_cast<int64_t>(fw) - 1) * p.dilationFilterW + 1;
    const int64_t dkh = (static_cast<int64_t>(fh) - 1) * p.dilationFilterH + 1;
    const int64_t Wo = (static_cast<int64_t>(l1W) + pad[0] + pad[1] - dkw) / p.strideW + 1;
    const int64_t Ho = (static_cast<int64_t>(l1H) + pad[2] + pad[3] - dkh) / p.strideH + 1;
    if (static_cast<int64_t>(l1W) + pad[0] + pad[1] < dkw || static_cast<int64_t>(l1H) + pad[2] + pad[3] < dkh) {
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: the (dilated) filter %lld x %lld is larger than the padded feature map %u x %u "
                             "(l1H x l1W plus padding %u/%u/%u/%u): no output position",
                             op, static_cast<long long>(dkh), static_cast<long long>(dkw), l1H + pad[2] + pad[3],
                             l1W + pad[0] + pad[1], pad[0], pad[1], pad[2], pad[3]);
        return;
    }
    const int64_t Ktot = static_cast<int64_t>(C1) * fh * fw * C0;
    const uint32_t kS = p.kStartPt, kE = p.kExtension, mS = p.mStartPt, mE = p.mExtension;
    if (kS % C0 != 0 || static_cast<int64_t>(kS) + kE > Ktot) {
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: kStartPt=%u must be a multiple of %u (32 bytes of %s) and kStartPt + kExtension=%u "
                             "at most the im2col width channelSize x filterH x filterW = %lld",
                             op, kS, C0, ::evk_sim::Ty<T>::name, kS + kE, static_cast<long long>(Ktot));
        return;
    }
    const bool k_tail = static_cast<int64_t>(kS) + kE == Ktot;
    if (kE % C0 != 0 && !k_tail)
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: kExtension=%u must be a multiple of %u unless it reaches the last column of the "
                             "im2col matrix (%lld)",
                             op, kE, C0, static_cast<long long>(Ktot));
    const bool m_tail = static_cast<int64_t>(mS) + mE >= Ho * Wo;
    if (sz != 4 && mE % 16 != 0 && !m_tail)
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: mExtension=%u must be a multiple of 16 unless it reaches the last row of the "
                             "im2col matrix (Ho x Wo = %lld)",
                             op, mE, static_cast<long long>(Ho * Wo));
    // destination layout
    const bool trans = !to_b && p.enTranspose;
    const int64_t M1 = (mE + 15) / 16, K1 = (kE + C0 - 1) / C0;  // Zz(S)
    const int64_t Kr1 = (kE + 15) / 16, Mc1 = (mE + C0 - 1) / C0;  // Zz(S^T) rows / cols; Zn(S): Mc1 x Kr1
    const int64_t frac_elems = 16 * C0;
    const int64_t nfrac = trans || to_b ? Kr1 * Mc1 : M1 * K1;
    auto dst_index = [&](int64_t m, int64_t k) -> int64_t {
        if (to_b) return ((m / C0) * Kr1 + k / 16) * frac_elems + (k % 16) * C0 + m % C0;
        if (trans) return ((k / 16) * Mc1 + m / C0) * frac_elems + (k % 16) * C0 + m % C0;
        return ((m / 16) * K1 + k / C0) * frac_elems + (m % 16) * C0 + k % C0;
    };
    const int64_t dbytes = nfrac * 512;
    // source: the C1 planes the columns touch must lie inside src's buffer
    const uint64_t plane = static_cast<uint64_t>(l1H) * l1W * C0 * sz;
    const uint32_t c1_first = kS / (fh * fw * C0), c1_last = (kS + kE - 1) / (fh * fw * C0);
    for (uint32_t c1 = c1_first; c1 <= c1_last; ++c1)
        ::evk_sim::local_access(op, src.buf_, src.off_ + static_cast<int64_t>(c1 * plane), plane, false,
                                ::evk_sim::PID_MTE1, false, loc.file, loc.line);
    std::vector<uint8_t> init_before(static_cast<size_t>(dbytes));
    std::memcpy(init_before.data(), ::evk_sim::g_ub_init + dst.off_, static_cast<size_t>(dbytes));
    ::evk_sim::local_access(op, dst.buf_, dst.off_, static_cast<uint64_t>(dbytes), true, ::evk_sim::PID_MTE1, false,
                            loc.file, loc.line);
    std::memcpy(::evk_sim::g_ub_init + dst.off_, init_before.data(), static_cast<size_t>(dbytes));
    for (int64_t mi = 0; mi < mE; ++mi) {
        const int64_t m = mS + mi, ho = m / Wo, wo = m % Wo;
        for (int64_t ki = 0; ki < kE; ++ki) {
            const int64_t k = kS + ki, c0 = k % C0, pos = k / C0;
            const int64_t kw = pos % fw, kh = (pos / fw) % fh, c1 = pos / (static_cast<int64_t>(fw) * fh);
            const int64_t h = ho * p.strideH - pad[2] + kh * p.dilationFilterH;
            const int64_t w = wo * p.strideW - pad[0] + kw * p.dilationFilterW;
            const int64_t d = dst.off_ + dst_index(mi, ki) * sz;
            if (h >= 0 && h < l1H && w >= 0 && w < l1W) {
                const int64_t s = src.off_ + (((c1 * l1H + h) * l1W + w) * C0 + c0) * sz;
                std::memcpy(::evk_sim::g_ub + d, ::evk_sim::g_ub + s, sz);
                std::memcpy(::evk_sim::g_ub_init + d, ::evk_sim::g_ub_init + s, sz);
            } else {
                std::memcpy(::evk_sim::g_ub + d, padv, sz);
                std::memset(::evk_sim::g_ub_init + d, 1, sz);
            }
        }
    }
    ::evk_sim::tm_add_cost(static_cast<double>(dbytes) / ::evk_sim::mte1_bytes_per_cycle());
    ::evk_sim::count_mte1(static_cast<uint64_t>(dbytes));
}

}  // namespace AscendC

#endif  // EVK_SIM_IMG2COL_H
