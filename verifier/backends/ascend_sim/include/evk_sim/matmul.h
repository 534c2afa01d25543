// EvoKernel Ascend C CPU emulator: the high-level Matmul API (lib/matmul_intf.h), our own implementation of
// its documented behaviour, built on the emulator's cube unit (evk_sim/cube.h).
//
// What runs where (the 910B's separated cube and vector cores, as CANN's Matmul works there):
//   * In a MIX kernel (what a kernel with Matmul and vector code is) every AI core runs the kernel on its AIC and
//     its two AIVs. On the AIC, REGIST_MATMUL_OBJ becomes the Matmul *server*: it allocates the L1/L0A/L0B/L0C/
//     bias-table buffers the tiling asks for from the kernel's TPipe, then serves its AIVs' requests until both
//     have finished, and returns from the kernel. On an AIV the object is a *client*: SetTensorA/B, SetBias,
//     SetTail... are kept on the AIV; IterateAll / GetTensorC post a request to the AIC (a cross-core flag) and
//     wait for its answer (another flag). A C tile meant for the Unified Buffer (GetTensorC to a LocalTensor)
//     goes through the system workspace in GM, as on the separated architecture (AIC Fixpipe -> GM, AIV
//     DataCopy GM -> UB).
//   * In a cube-only kernel the object computes on the core that calls it.
// The server computes every baseM x baseN tile the way CANN's implementation conceptually does: A and B blocks
// GM (ND) -> L1 (NZ) by DataCopy(Nd2NzParams) (stepKa/stepKb K blocks at a time), L1 -> L0A/L0B by LoadData
// (transposing B, or A when isTransposeA), Mmad over K accumulating in L0C (the first step from the bias table
// when there is a bias), then Fixpipe L0C -> GM (float, or half/bfloat16 by F322F16/F322BF16). So the memory
// limits, the checks and the cube pipes' latency are the emulator's own.
// Float B in row-major ND and transposed float A are loaded into L1 in Zz (16-row bands) and moved to L0B/L0A by
// LoadDataWithTranspose (16 x 16 float squares), as CANN does for 32-bit data; they need baseK % 16 == 0.
// Not emulated (a clear error instead): A/B/C in L1/UB/NZ formats, int8, batch matmul, atomic accumulation into C, split K across cores, REGIST_MATMUL_OBJ without a
// tiling. Asynchronous IterateAll runs synchronously; asynchronous Iterate (Iterate<false>) computes every block into
// the workspace SetWorkspace gave, which GetTensorC<false> then reads block after block (below); MDL/IBShare
// configs compute as NORM.
#ifndef EVK_SIM_MATMUL_H
#define EVK_SIM_MATMUL_H

#include <cstdint>
#include <deque>
#include <exception>
#include <type_traits>

#include "evk_sim/kernel.h"
#include "evk_sim/matmul_tiling.h"

// The matrix formats, at global scope as CANN's adv_api/matmul/matmul_config.h declares them (kernels write
// CubeFormat::ND with or without AscendC::; AscendC::CubeFormat is kept for code written against the emulator).
enum class CubeFormat : int32_t { ND = 0, NZ, ZN, ZZ, NN, ND_ALIGN, SCALAR, VECTOR, ROW_MAJOR = ND, COLUMN_MAJOR = 8 };

// A kernel with the Matmul API is a MIX kernel (the AIC serves, the AIVs compute the rest), as CANN builds
// it unless ASCENDC_CUBE_ONLY is defined; a build that decided otherwise (EVK_SIM_MIX, build.py) is followed.
// ASCENDC_CUBE_ONLY: the Matmul runs on the cube core that calls it, even in a MIX kernel (CANN's "bare mix":
// the kernel's own AIC code drives it and hands results to its AIVs itself).
#if defined(ASCENDC_CUBE_ONLY)
#define EVK_MM_MIX 0
#define EVK_MM_RATIO 2
#elif defined(EVK_SIM_MIX)
#define EVK_MM_MIX (EVK_SIM_MIX > 0)
#define EVK_MM_RATIO (EVK_SIM_MIX > 0 ? EVK_SIM_MIX : 2)
#else
#define EVK_MM_MIX 1
#define EVK_MM_RATIO 2
namespace evk_sim {
static const int evk_matmul_mix_registration_ = (set_mix_ratio(2), 0);
}
#endif


namespace AscendC {
#ifndef EVK_SIM_TOTAL_VEC_LOCAL_SIZE
#define EVK_SIM_TOTAL_VEC_LOCAL_SIZE
// The 910B's (arch 2201) Unified Buffer space a kernel may take for the Matmul API's local workspace
// (SetLocalWorkspace), a documented basic-API constant: 184 KiB.
const int32_t TOTAL_VEC_LOCAL_SIZE = 184 * 1024;
#endif
using ::CubeFormat;
enum class LayoutMode : int32_t { NONE = 0, BSNGD, SBNGD, BNGS1S2, NORMAL };

}  // namespace AscendC

namespace matmul {
using namespace AscendC;

template <TPosition POSITION, CubeFormat FORMAT, typename TYPE, bool ISTRANS = false,
          LayoutMode LAYOUT = LayoutMode::NONE, bool IBSHARE = false>
struct MatmulType {
    constexpr static TPosition pos = POSITION;
    constexpr static CubeFormat format = FORMAT;
    using T = TYPE;
    constexpr static bool isTrans = ISTRANS;
    constexpr static LayoutMode layout = LAYOUT;
    constexpr static bool ibShare = IBSHARE;
};

struct MatmulConfig {
    bool doNorm = true;
    bool doBasicBlock = false;
    bool doMultiDataLoad = false;
    uint32_t basicM = 0, basicN = 0, basicK = 0;
    bool intrinsicsCheck = false;
    bool isNBatch = false;
    bool enVecND2NZ = false;
    bool doSpecialBasicBlock = false;
    uint32_t doMTE2Preload = 0;
    uint32_t singleCoreM = 0, singleCoreN = 0, singleCoreK = 0;
    uint32_t stepM = 0, stepN = 0;
    uint32_t baseMN = 0;
    uint32_t singleCoreMN = 0;
    bool enUnitFlag = true;
    bool isPerTensor = false;
    bool hasAntiQuantOffset = false;
    bool doIBShareNorm = false;
    bool doSpecialMDL = false;
    bool enableInit = true;
    int batchMode = 0;
    bool enableEnd = true;
    bool enableGetTensorC = true;
    bool enableSetOrgShape = true;
    bool enableSetBias = true;
    bool enableSetTail = true;
    bool enableQuantVector = true;
    bool enableSetDefineData = true;
    uint8_t iterateMode = 0;
    bool enableReuse = true;
};
constexpr MatmulConfig CFG_NORM = {};
constexpr MatmulConfig CFG_MDL = {false, false, true};
constexpr MatmulConfig CFG_IBSHARE_NORM = {};
inline constexpr MatmulConfig GetNormalConfig() { return CFG_NORM; }
// CANN's GetMDLConfig (adv_api/matmul/tiling.h) takes the MDL template's switches (preload, unit flag, message
// reuse...): performance options of CANN's implementation; the emulator computes every config as NORM.
inline constexpr MatmulConfig GetMDLConfig(const bool intrinsicsLimit = false, const bool batchLoop = false,
                                           const uint32_t doMTE2Preload = 0, const bool isVecND2NZ = false,
                                           bool isPerTensor = false, bool hasAntiQuantOffset = false,
                                           const bool enUnitFlag = false, const bool isMsgReuse = true,
                                           const bool enableUBReuse = true, const bool enableL1CacheUB = false,
                                           const bool enableMixDualMaster = false,
                                           const bool enableKdimReorderLoad = false,
                                           const bool enableL1BankConflictOptimise = false) {
    (void)intrinsicsLimit, (void)batchLoop, (void)doMTE2Preload, (void)isVecND2NZ, (void)isPerTensor;
    (void)hasAntiQuantOffset, (void)enUnitFlag, (void)isMsgReuse, (void)enableUBReuse, (void)enableL1CacheUB;
    (void)enableMixDualMaster, (void)enableKdimReorderLoad, (void)enableL1BankConflictOptimise;
    return CFG_MDL;
}
// User callbacks of the Matmul (impl/adv_api/detail/matmul/utils/matmul_call_back.h): the copy-out and the A/B
// loads replaced by the kernel's own functions. The emulator takes the default (all nullptr) only; a Matmul
// given callbacks is refused when it runs (MatmulImpl::check_callbacks).
template <void (*DataCopyOut)(const __gm__ void* gm, const LocalTensor<int8_t>& co1Local, const void* dataCopyOutParams,
                              const uint64_t tilingPtr, const uint64_t dataPtr) = nullptr,
          void (*CopyA1)(const LocalTensor<int8_t>& aMatrix, const __gm__ void* gm, int row, int col, int useM,
                         int useK, const uint64_t tilingPtr, const uint64_t dataPtr) = nullptr,
          void (*CopyB1)(const LocalTensor<int8_t>& bMatrix, const __gm__ void* gm, int row, int col, int useK,
                         int useN, const uint64_t tilingPtr, const uint64_t dataPtr) = nullptr>
struct MatmulCallBackFunc {
    static constexpr bool evk_has_callbacks = DataCopyOut != nullptr || CopyA1 != nullptr || CopyB1 != nullptr;
};

// Constant tiling (CANN's "Matmul API constant" feature): shapes known at compile time.
enum class MatmulConfigMode : int32_t { CONFIG_NORM = 0, CONFIG_MDL, CONFIG_SPECIALMDL, CONFIG_IBSHARE };
struct MatmulShapeParams {
    uint32_t singleCoreM = 0, singleCoreN = 0, singleCoreK = 0, basicM = 0, basicN = 0, basicK = 0;
};
namespace evk_mm {
constexpr void apply(MatmulConfig& c, const MatmulShapeParams& p) {
    c.singleCoreM = p.singleCoreM;
    c.singleCoreN = p.singleCoreN;
    c.singleCoreK = p.singleCoreK;
    c.basicM = p.basicM;
    c.basicN = p.basicN;
    c.basicK = p.basicK;
}
template <class T> constexpr void apply(MatmulConfig&, const T&) {}  // the other parameter groups: as NORM
}  // namespace evk_mm
template <MatmulConfigMode mode, typename... Args> constexpr MatmulConfig GetMMConfig(Args&&... args) {
    MatmulConfig c = mode == MatmulConfigMode::CONFIG_MDL ? CFG_MDL : CFG_NORM;
    (evk_mm::apply(c, args), ...);
    return c;
}
struct MatmulApiStaticTiling {
    int32_t usedCoreNum = -1, M = -1, N = -1, Ka = -1, Kb = -1, singleCoreM = -1, singleCoreN = -1, singleCoreK = -1;
    int32_t baseM = -1, baseN = -1, baseK = -1, depthA1 = -1, depthB1 = -1, stepM = -1, stepN = -1, isBias = -1;
    int32_t transLength = -1, iterateOrder = -1, stepKa = -1, stepKb = -1, dbL0A = -1, dbL0B = -1, dbL0C = -1;
    MatmulConfig cfg = CFG_NORM;
};
// The compile-time part of a tiling: the shapes and base block of the config (the rest comes at run time).
template <class A_TYPE, class B_TYPE, class C_TYPE, class BIAS_TYPE>
constexpr MatmulApiStaticTiling GetMatmulApiTiling(const MatmulConfig& mmCFG, int32_t l1Size = 512 * 1024) {
    (void)l1Size;
    MatmulApiStaticTiling t;
    t.cfg = mmCFG;
    if (mmCFG.singleCoreM) t.singleCoreM = static_cast<int32_t>(mmCFG.singleCoreM);
    if (mmCFG.singleCoreN) t.singleCoreN = static_cast<int32_t>(mmCFG.singleCoreN);
    if (mmCFG.singleCoreK) t.singleCoreK = static_cast<int32_t>(mmCFG.singleCoreK);
    if (mmCFG.basicM) t.baseM = static_cast<int32_t>(mmCFG.basicM);
    if (mmCFG.basicN) t.baseN = static_cast<int32_t>(mmCFG.basicN);
    if (mmCFG.basicK) t.baseK = static_cast<int32_t>(mmCFG.basicK);
    return t;
}

namespace evk_mm {
constexpr int REQ_FLAG = 12;    // AIV -> AIC: a request is in the mailbox
constexpr int REPLY_FLAG = 13;  // AIC -> AIV sub s: REPLY_FLAG + s

enum Kind { ITERATE_ALL = 0, TILE = 1, QUIT = 2 };
class ClientBase;
struct Msg {
    Kind kind;
    int sub;
    int obj;                 // which registered object of the kernel
    ClientBase* client;      // the AIV's object (its state is read by the server)
    int tile;                // TILE: the tile index
    const void* dst;         // where C goes (a GM address)
    int64_t dst_row;         // elements per destination row
    ::evk_sim::SrcLoc loc;   // the kernel line that asked
};
inline std::deque<Msg>& mailbox(int aicore) {
    static std::deque<Msg> boxes[1024];
    return boxes[aicore & 1023];
}
// AI core of the calling core (MIX: AIC b and its AIVs 2b, 2b+1 share b)
inline int aicore_of_caller() {
    const int64_t idx = ::evk_sim::block_idx();
    return static_cast<int>(::evk_sim::core_type() == 1 ? idx : idx / (::evk_sim::sub_block_num() ? ::evk_sim::sub_block_num() : 1));
}

class ClientBase {
public:
    virtual ~ClientBase() = default;
    int mode_ = 0;   // 0 not registered, 1 computes itself (cube core), 2 client of the AIC (vector core)
    int obj_ = 0;    // index in REGIST_MATMUL_OBJ
    volatile bool done_ = false;
};
}  // namespace evk_mm

template <class A_TYPE, class B_TYPE, class C_TYPE, class BIAS_TYPE = MatmulType<TPosition::GM, CubeFormat::ND, float>,
          const auto& MM_CFG = CFG_NORM, class MM_CB = void, class MATMUL_POLICY = void>
class MatmulImpl : public evk_mm::ClientBase {
public:
    using SrcT = typename A_TYPE::T;
    using SrcBT = typename B_TYPE::T;
    using DstT = typename C_TYPE::T;
    using BiasT = typename BIAS_TYPE::T;
    static_assert(std::is_same<SrcT, SrcBT>::value, "Matmul: A and B must have the same type");

    static constexpr bool has_callbacks() {
        if constexpr (std::is_class<MM_CB>::value) return MM_CB::evk_has_callbacks;
        return false;
    }
    MatmulImpl() = default;
    ~MatmulImpl() override {
        // a client tells its AIC it is done (the AIC serves until every client has said so)
        if (mode_ == 2 && std::uncaught_exceptions() == 0) post({evk_mm::QUIT, sub_, obj_, this, 0, nullptr, 0, ::evk_sim::SrcLoc{__FILE__, __LINE__}});
    }

    // ---- set-up ----
    void Init(const TCubeTiling* tiling, TPipe* tpipe = nullptr, EVK_LOC) {
        if (!tiling) ::evk_sim::fatal(EVK_RULE_INVALID_ARGUMENT, loc.file, loc.line, "Matmul Init: no tiling");
        if constexpr (has_callbacks())
            ::evk_sim::fatal(EVK_RULE_UNSUPPORTED_API, loc.file, loc.line,
                             "Matmul with user callbacks (MatmulCallBackFunc with a copy-out or A/B load function) is "
                             "not emulated");
        tiling_ = *tiling;
        // a constant tiling (MatmulApiStaticTiling) fixes the shapes and base block at compile time
        using CfgT = std::remove_cv_t<std::remove_reference_t<decltype(MM_CFG)>>;
        if constexpr (std::is_same<CfgT, MatmulApiStaticTiling>::value) {
            if (MM_CFG.singleCoreM > 0) tiling_.singleCoreM = MM_CFG.singleCoreM;
            if (MM_CFG.singleCoreN > 0) tiling_.singleCoreN = MM_CFG.singleCoreN;
            if (MM_CFG.singleCoreK > 0) tiling_.singleCoreK = MM_CFG.singleCoreK;
            if (MM_CFG.baseM > 0) tiling_.baseM = MM_CFG.baseM;
            if (MM_CFG.baseN > 0) tiling_.baseN = MM_CFG.baseN;
            if (MM_CFG.baseK > 0) tiling_.baseK = MM_CFG.baseK;
        }
        pipe_ = tpipe ? tpipe : GetTPipePtr();
        org_m_ = tiling_.M;
        org_n_ = tiling_.N;
        org_ka_ = tiling_.Ka;
        org_kb_ = tiling_.Kb;
        single_m_ = tiling_.singleCoreM;
        single_n_ = tiling_.singleCoreN;
        single_k_ = tiling_.singleCoreK;
        inited_ = true;
    }
    void SetOrgShape(int orgM, int orgN, int orgK) { SetOrgShape(orgM, orgN, orgK, orgK); }
    void SetOrgShape(int orgM, int orgN, int orgKa, int orgKb, int orgKc = 0) {
        (void)orgKc;
        org_m_ = orgM;
        org_n_ = orgN;
        org_ka_ = orgKa;
        org_kb_ = orgKb;
    }
    void SetSingleShape(int singleM, int singleN, int singleK) { SetTail(singleM, singleN, singleK); }
    void SetTail(int tailM = -1, int tailN = -1, int tailK = -1) {
        if (tailM > 0) single_m_ = tailM;
        if (tailN > 0) single_n_ = tailN;
        if (tailK > 0) single_k_ = tailK;
        cursor_ = -1;
    }
    void SetTensorA(const GlobalTensor<SrcT>& gm, bool isTransposeA = false) {
        a_ = gm;
        trans_a_ = isTransposeA;
        has_a_ = true;
        cursor_ = -1;
    }
    void SetTensorB(const GlobalTensor<SrcT>& gm, bool isTransposeB = false) {
        b_ = gm;
        trans_b_ = isTransposeB;
        has_b_ = true;
        cursor_ = -1;
    }
    void SetTensorA(const LocalTensor<SrcT>&, bool = false, EVK_LOC) { local_input(loc, "SetTensorA"); }
    void SetTensorB(const LocalTensor<SrcT>&, bool = false, EVK_LOC) { local_input(loc, "SetTensorB"); }
    void SetTensorA(SrcT, EVK_LOC) { local_input(loc, "SetTensorA (scalar)"); }
    void SetTensorB(SrcT, EVK_LOC) { local_input(loc, "SetTensorB (scalar)"); }
    void SetBias(const GlobalTensor<BiasT>& gm, EVK_LOC) {
        bias_ = gm;
        has_bias_ = true;
        if (inited_ && !tiling_.isBias)
            ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                                 "Matmul SetBias: the tiling was made without a bias (SetBias(true) on the host's "
                                 "MatmulApiTiling sets isBias); the bias would not be added");
    }
    void SetBias(const LocalTensor<BiasT>&, EVK_LOC) { local_input(loc, "SetBias"); }
    void DisableBias() { has_bias_ = false; }
    void ClearBias() { has_bias_ = false; }
    void SetLocalWorkspace(const LocalTensor<uint8_t>& tmp) { (void)tmp; }  // 310P's UB scratch; unused on 910B
    // The GM cache of the asynchronous Iterate (CANN's matmul_client.h keeps it as cacheWorkspaceAddr).
    void SetWorkspace(GM_ADDR addr, int size) {
        cache_ws_ = reinterpret_cast<uint8_t*>(addr);
        cache_ws_bytes_ = size > 0 ? static_cast<uint64_t>(size) : 0;
    }
    template <class T> void SetWorkspace(const GlobalTensor<T>& g) {
        cache_ws_ = reinterpret_cast<uint8_t*>(g.address_);
        cache_ws_bytes_ = g.tensor_bytes_();
    }
    void SetSubBlockIdx(uint8_t) {}
    void SetHF32(bool = false, int32_t = 0) {}
    void End() {
        cursor_ = -1;
        async_ = false;
    }

    // ---- compute ----
    template <bool sync = true>
    void IterateAll(const GlobalTensor<DstT>& gm, uint8_t enAtomic = 0, bool enSequentialWrite = false,
                    bool waitIterateAll = false, bool fakeMsg = false, EVK_LOC) {
        (void)waitIterateAll;
        (void)fakeMsg;
        if (!ready("IterateAll", loc)) return;
        check_atomic(enAtomic, loc);
        const int64_t row = enSequentialWrite ? single_n_ : org_n_;
        request({evk_mm::ITERATE_ALL, sub_, obj_, this, 0, gm.address_, row, loc}, gm.address_, loc);
    }
    void WaitIterateAll() {}

    // Next baseM x baseN block of C (iterateOrder 0: M fastest); false after the last one.
    // Asynchronous (sync = false), as CANN's documentation (Matmul-Kernel侧接口/Iterate.md: "mm.template
    // Iterate<false>(); ... for (i < singleM/baseM*singleN/baseN) mm.template GetTensorC<false>(ub)") and its client
    // (include/adv_api/matmul/matmul_client.h) do it: the first call has the cube compute every block of the
    // single-core C into the workspace given by SetWorkspace, one baseM x baseN block after the other in the
    // iteration order; the next calls only count (false after the last block); each GetTensorC to the UB copies
    // the next block from there.
    template <bool sync = true> bool Iterate(bool enPartialSum = false, EVK_LOC) {
        if (enPartialSum)
            ::evk_sim::violation(EVK_RULE_UNSUPPORTED_API, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                                 "Matmul Iterate(enPartialSum=true) is not emulated");
        if (!ready("Iterate", loc)) return false;
        const int n = tiles_m() * tiles_n();
        if constexpr (!sync) {
            if (cursor_ < 0) {
                iterate_async(loc);
                cursor_ = 0;
                return true;
            }
        } else {
            if (cursor_ < 0) async_ = false;
        }
        ++cursor_;
        if (cursor_ >= n) {
            cursor_ = -1;
            return false;
        }
        return true;
    }
    // The current block to GM: at its place in C (row stride orgN), or packed (baseN per row) with
    // enSequentialWrite.
    template <bool sync = true>
    void GetTensorC(const GlobalTensor<DstT>& gm, uint8_t enAtomic = 0, bool enSequentialWrite = false, EVK_LOC) {
        if (async_)
            ::evk_sim::fatal(EVK_RULE_UNSUPPORTED_API, loc.file, loc.line,
                             "Matmul GetTensorC to GM after an asynchronous Iterate<false>: CANN's client asserts the "
                             "synchronous mode there (matmul_client.h); the asynchronous blocks are read into the "
                             "UB (GetTensorC to a LocalTensor)");
        if (!current("GetTensorC", loc)) return;
        check_atomic(enAtomic, loc);
        const int mi = tile_m(cursor_), ni = tile_n(cursor_);
        DstT* dst = gm.address_;
        int64_t row = tiling_.baseN;
        if (!enSequentialWrite) {
            dst += static_cast<int64_t>(mi) * tiling_.baseM * org_n_ + static_cast<int64_t>(ni) * tiling_.baseN;
            row = org_n_;
        }
        request({evk_mm::TILE, sub_, obj_, this, cursor_, dst, row, loc}, gm.address_, loc);
    }
    // The current block to the Unified Buffer (VECIN/VECCALC/VECOUT), rows of baseN elements: through the GM
    // system workspace (AIC Fixpipe -> GM, then DataCopy GM -> UB on this core).
    template <bool sync = true>
    void GetTensorC(const LocalTensor<DstT>& ub, uint8_t enAtomic = 0, bool enSequentialWrite = false, EVK_LOC) {
        (void)enSequentialWrite;
        if (async_) {
            get_async(ub, enAtomic, loc);
            return;
        }
        if (!current("GetTensorC", loc)) return;
        check_atomic(enAtomic, loc);
        uint8_t* ws = GetSysWorkSpacePtr();
        const uint64_t tile_bytes = static_cast<uint64_t>(tiling_.baseM) * tiling_.baseN * sizeof(DstT);
        if (!ws)
            ::evk_sim::fatal(EVK_RULE_UNSUPPORTED_API, loc.file, loc.line,
                             "Matmul GetTensorC to a LocalTensor: the C block travels through the system workspace "
                             "(GetSysWorkSpacePtr), which this launch does not have (the host must ask for "
                             "GetLibApiWorkSpaceSize() bytes of workspace; kernel-launch programs call "
                             "SetSysWorkspace)");
        // one slot per AIV and object (two per AIV) after the first 64 KiB
        const int64_t slot = static_cast<int64_t>(::evk_sim::block_idx()) * 2 + obj_ % 2;
        const uint64_t at = 65536 + static_cast<uint64_t>(slot) * ((tile_bytes + 511) / 512 * 512);
        if (&::evk_sim::sys_workspace_bytes != nullptr && ::evk_sim::sys_workspace() == ws &&
            at + tile_bytes > ::evk_sim::sys_workspace_bytes())
            ::evk_sim::fatal(EVK_RULE_GM_OOB, loc.file, loc.line,
                             "Matmul GetTensorC to a LocalTensor: block %lld's C tile needs bytes [%llu, %llu) of the "
                             "system workspace, which has %llu (ask for GetLibApiWorkSpaceSize() bytes on the host)",
                             static_cast<long long>(::evk_sim::block_idx()), static_cast<unsigned long long>(at),
                             static_cast<unsigned long long>(at + tile_bytes),
                             static_cast<unsigned long long>(::evk_sim::sys_workspace_bytes()));
        DstT* dst = reinterpret_cast<DstT*>(ws + at);
        request({evk_mm::TILE, sub_, obj_, this, cursor_, dst, tiling_.baseN, loc}, dst, loc);
        const int cm = tile_rows(tile_m(cursor_)), cn = tile_cols(tile_n(cursor_));
        (void)cn;
        GlobalTensor<DstT> g;
        g.SetGlobalBuffer(dst, static_cast<uint64_t>(tiling_.baseM) * tiling_.baseN);
        const uint32_t count = static_cast<uint32_t>(cm) * tiling_.baseN;
        DataCopy(ub, g, count, loc);
        // synchronous (sync = true): the block is in the UB when GetTensorC returns, for the vector pipe and
        // for the copies out
        TPipe* p = GetTPipePtr();
        const TEventID ev = p ? p->FetchEventID(HardEvent::MTE2_V) : 0;
        SetFlag<HardEvent::MTE2_V>(ev, loc);
        WaitFlag<HardEvent::MTE2_V>(ev, loc);
        const TEventID ev3 = p ? p->FetchEventID(HardEvent::MTE2_MTE3) : 0;
        SetFlag<HardEvent::MTE2_MTE3>(ev3, loc);
        WaitFlag<HardEvent::MTE2_MTE3>(ev3, loc);
    }
    template <bool sync = true> LocalTensor<DstT> GetTensorC(uint8_t enAtomic = 0, bool enSequentialWrite = false,
                                                             EVK_LOC) {
        (void)enAtomic;
        (void)enSequentialWrite;
        ::evk_sim::fatal(EVK_RULE_UNSUPPORTED_API, loc.file, loc.line,
                         "Matmul GetTensorC() returning a LocalTensor (C in CO2/VECIN owned by the API) is not "
                         "emulated; pass the destination tensor");
    }

    // ---- registration (REGIST_MATMUL_OBJ) ----
    void evk_register(TPipe* pipe, const TCubeTiling* tiling, int obj, bool server, ::evk_sim::SrcLoc loc) {
        if (!tiling)
            ::evk_sim::fatal(EVK_RULE_INVALID_ARGUMENT, loc.file, loc.line, "REGIST_MATMUL_OBJ: no tiling for object %d",
                             obj);
        Init(tiling, pipe, loc);
        obj_ = obj;
        const bool mix = EVK_MM_MIX;
        (void)server;
        if (::evk_sim::core_type() == 1) {
            mode_ = 1;
            alloc_buffers(loc);  // the AIC (a server, or a cube-only kernel) owns the cube buffers
        } else {
            mode_ = mix ? 2 : 3;
            sub_ = static_cast<int>(::evk_sim::sub_block_idx());
        }
    }
    // The AIC's service loop: one request at a time from its AIVs, until all clients said QUIT.
    static void evk_serve(evk_mm::ClientBase** objs, int nobj, ::evk_sim::SrcLoc loc) {
        const int ratio = EVK_MM_RATIO;  // AIVs per AI core, each with its clients
        int quits = 0;
        const int core = evk_mm::aicore_of_caller();
        while (quits < ratio * nobj) {
            CrossCoreWaitFlag(evk_mm::REQ_FLAG, loc);
            auto& box = evk_mm::mailbox(core);
            if (box.empty())
                ::evk_sim::fatal(EVK_RULE_SYNC_PAIRING, loc.file, loc.line,
                                 "Matmul server: flag %d arrived with no request (the kernel uses cross-core flag %d, "
                                 "which the Matmul API reserves)",
                                 evk_mm::REQ_FLAG, evk_mm::REQ_FLAG);
            evk_mm::Msg m = box.front();
            box.pop_front();
            if (m.kind == evk_mm::QUIT) {
                ++quits;
                continue;
            }
            auto* self = static_cast<MatmulImpl*>(objs[m.obj]);
            self->serve(*static_cast<MatmulImpl*>(m.client), m);
            m.client->done_ = true;
            if (m.sub == 0)
                CrossCoreSetFlag<2, PIPE_FIX>(evk_mm::REPLY_FLAG, loc);
            else
                CrossCoreSetFlag<2, PIPE_FIX>(evk_mm::REPLY_FLAG + 1, loc);
        }
    }

    // ---- state (read by the server) ----
    TCubeTiling tiling_{};
    TPipe* pipe_ = nullptr;
    GlobalTensor<SrcT> a_, b_;
    GlobalTensor<BiasT> bias_;
    bool has_a_ = false, has_b_ = false, has_bias_ = false, trans_a_ = false, trans_b_ = false, inited_ = false;
    int64_t org_m_ = 0, org_n_ = 0, org_ka_ = 0, org_kb_ = 0, single_m_ = 0, single_n_ = 0, single_k_ = 0;
    int cursor_ = -1, sub_ = 0;

private:
    // the asynchronous Iterate: the GM cache (SetWorkspace), whether it holds this run's blocks, the next to read
    uint8_t* cache_ws_ = nullptr;
    uint64_t cache_ws_bytes_ = 0;
    bool async_ = false;
    int async_next_ = 0;

    uint64_t tile_bytes() const { return static_cast<uint64_t>(tiling_.baseM) * tiling_.baseN * sizeof(DstT); }
    void iterate_async(::evk_sim::SrcLoc loc) {
        const int n = tiles_m() * tiles_n();
        if (!cache_ws_)
            ::evk_sim::fatal(EVK_RULE_INVALID_ARGUMENT, loc.file, loc.line,
                             "Matmul Iterate<false> (asynchronous) without SetWorkspace: CANN computes the blocks "
                             "into that GM cache and GetTensorC<false> reads them from it (matmul_client.h asserts "
                             "it is set; GetTensorC.md: SetWorkspace must come before Iterate)");
        if (cache_ws_bytes_ && static_cast<uint64_t>(n) * tile_bytes() > cache_ws_bytes_)
            ::evk_sim::fatal(EVK_RULE_GM_OOB, loc.file, loc.line,
                             "Matmul Iterate<false>: %d blocks of %llu bytes do not fit the %llu-byte workspace given "
                             "to SetWorkspace", n, static_cast<unsigned long long>(tile_bytes()),
                             static_cast<unsigned long long>(cache_ws_bytes_));
        for (int t = 0; t < n; ++t) {
            DstT* dst = reinterpret_cast<DstT*>(cache_ws_ + static_cast<uint64_t>(t) * tile_bytes());
            request({evk_mm::TILE, sub_, obj_, this, t, dst, tiling_.baseN, loc}, dst, loc);
        }
        async_ = true;
        async_next_ = 0;
    }
    void get_async(const LocalTensor<DstT>& ub, uint8_t enAtomic, ::evk_sim::SrcLoc loc) {
        check_atomic(enAtomic, loc);
        const int n = tiles_m() * tiles_n();
        if (async_next_ >= n)
            ::evk_sim::fatal(EVK_RULE_INVALID_ARGUMENT, loc.file, loc.line,
                             "Matmul GetTensorC<false>: all %d blocks of the asynchronous Iterate were already read",
                             n);
        // CANN copies the destination's size from the block's place in the cache (CopyToUB(c, cache + cOffset_,
        // c.GetSize())) and moves on by one block
        GlobalTensor<DstT> g;
        g.SetGlobalBuffer(reinterpret_cast<DstT*>(cache_ws_ + static_cast<uint64_t>(async_next_) * tile_bytes()),
                          static_cast<uint64_t>(n - async_next_) * tiling_.baseM * tiling_.baseN);
        DataCopy(ub, g, ub.GetSize(), loc);
        ++async_next_;
        TPipe* p = GetTPipePtr();
        const TEventID ev = p ? p->FetchEventID(HardEvent::MTE2_V) : 0;
        SetFlag<HardEvent::MTE2_V>(ev, loc);
        WaitFlag<HardEvent::MTE2_V>(ev, loc);
        const TEventID ev3 = p ? p->FetchEventID(HardEvent::MTE2_MTE3) : 0;
        SetFlag<HardEvent::MTE2_MTE3>(ev3, loc);
        WaitFlag<HardEvent::MTE2_MTE3>(ev3, loc);
    }

    static constexpr int kSize = static_cast<int>(sizeof(SrcT));
    static constexpr int k0 = 32 / kSize;
    static constexpr bool kHalfLike = ::evk_sim::is_half_t<SrcT>::value || std::is_same<SrcT, bfloat16_t>::value;

    int64_t align(int64_t x, int64_t a) const { return (x + a - 1) / a * a; }
    int tiles_m() const { return static_cast<int>((single_m_ + tiling_.baseM - 1) / tiling_.baseM); }
    int tiles_n() const { return static_cast<int>((single_n_ + tiling_.baseN - 1) / tiling_.baseN); }
    int tile_m(int t) const { return tiling_.iterateOrder == 1 ? t / tiles_n() : t % tiles_m(); }
    int tile_n(int t) const { return tiling_.iterateOrder == 1 ? t % tiles_n() : t / tiles_m(); }
    int tile_rows(int mi) const { return static_cast<int>(std::min<int64_t>(tiling_.baseM, single_m_ - mi * tiling_.baseM)); }
    int tile_cols(int ni) const { return static_cast<int>(std::min<int64_t>(tiling_.baseN, single_n_ - ni * tiling_.baseN)); }

    void local_input(::evk_sim::SrcLoc loc, const char* what) {
        ::evk_sim::fatal(EVK_RULE_UNSUPPORTED_API, loc.file, loc.line,
                         "Matmul %s with a LocalTensor/scalar (A/B/bias in L1 or the UB) is not emulated; the "
                         "emulator's Matmul reads A, B and the bias from GM (TPosition::GM, CubeFormat::ND)", what);
    }
    void check_atomic(uint8_t enAtomic, ::evk_sim::SrcLoc loc) {
        if (enAtomic)
            ::evk_sim::violation(EVK_RULE_UNSUPPORTED_API, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                                 "Matmul with enAtomic=%u (accumulating into C) is not emulated", enAtomic);
    }
    bool ready(const char* what, ::evk_sim::SrcLoc loc) {
        if (mode_ == 0)
            ::evk_sim::fatal(EVK_RULE_INVALID_TENSOR, loc.file, loc.line,
                             "Matmul %s on an object never registered: REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), "
                             "obj, &tiling) must come first (it gives the object its tiling and, on the cube core, "
                             "its L1/L0 buffers)", what);
        if (mode_ == 3)
            ::evk_sim::fatal(EVK_RULE_UNSUPPORTED_API, loc.file, loc.line,
                             "Matmul %s on a vector core of a vector-only kernel: the Matmul API needs the cube "
                             "core (a MIX kernel, or a cube-only one)", what);
        if (!has_a_ || !has_b_)
            ::evk_sim::fatal(EVK_RULE_INVALID_TENSOR, loc.file, loc.line, "Matmul %s before %s%s%s", what,
                             has_a_ ? "" : "SetTensorA", !has_a_ && !has_b_ ? " and " : "", has_b_ ? "" : "SetTensorB");
        if (single_m_ <= 0 || single_n_ <= 0 || single_k_ <= 0 || tiling_.baseM <= 0 || tiling_.baseN <= 0 ||
            tiling_.baseK <= 0)
            ::evk_sim::fatal(EVK_RULE_INVALID_ARGUMENT, loc.file, loc.line,
                             "Matmul %s: singleCore %lldx%lldx%lld with base %dx%dx%d: a zero or negative size (an "
                             "empty tiling?)", what, static_cast<long long>(single_m_), static_cast<long long>(single_n_),
                             static_cast<long long>(single_k_), tiling_.baseM, tiling_.baseN, tiling_.baseK);
        return true;
    }
    bool current(const char* what, ::evk_sim::SrcLoc loc) {
        if (!ready(what, loc)) return false;
        if (cursor_ < 0)
            ::evk_sim::fatal(EVK_RULE_INVALID_ARGUMENT, loc.file, loc.line,
                             "Matmul %s without a block: call Iterate() first (and only while it returns true)", what);
        return true;
    }

    // Post a request: computed here (cube core) or by the AIC (client), waiting for it either way.
    void request(const evk_mm::Msg& m, const void* dst, ::evk_sim::SrcLoc loc) {
        (void)dst;
        if (mode_ == 1) {
            serve(*this, m);
            return;
        }
        done_ = false;
        post(m);
        while (!done_) CrossCoreWaitFlag(evk_mm::REPLY_FLAG + sub_, loc);
    }
    void post(const evk_mm::Msg& m) {
        evk_mm::mailbox(evk_mm::aicore_of_caller()).push_back(m);
        // mode 2 from an AIV reaches the AIC once the AIVs of the core have set it `ratio` times in all;
        // setting it that often here (no other core runs in between) notifies the AIC of this one request
        for (int i = 0; i < EVK_MM_RATIO; ++i) CrossCoreSetFlag<2, PIPE_S>(evk_mm::REQ_FLAG, m.loc);
    }

    // ---- the cube side ----
    TQue<TPosition::A1, 1> qa1_;
    TQue<TPosition::B1, 1> qb1_;
    TQue<TPosition::A2, 1> qa2_;
    TQue<TPosition::B2, 1> qb2_;
    TQue<TPosition::CO1, 1> qc_;
    TQue<TPosition::C1, 1> qbias1_;
    TQue<TPosition::C2, 1> qbias2_;
    bool buffers_ = false;
    int64_t step_ka_ = 1, step_kb_ = 1;

    void alloc_buffers(::evk_sim::SrcLoc loc) {
        if (!pipe_) ::evk_sim::fatal(EVK_RULE_INVALID_ARGUMENT, loc.file, loc.line, "REGIST_MATMUL_OBJ: no TPipe");
        const TCubeTiling& t = tiling_;
        if (t.baseM <= 0 || t.baseN <= 0 || t.baseK <= 0 || t.baseM % 16 || t.baseN % 16 || t.baseK % k0)
            ::evk_sim::fatal(EVK_RULE_INVALID_ARGUMENT, loc.file, loc.line,
                             "Matmul tiling: baseM=%d, baseN=%d (multiples of 16) and baseK=%d (a multiple of %d for "
                             "%s) are not a cube block: was the tiling filled (GetTiling returned 0)?",
                             t.baseM, t.baseN, t.baseK, k0, ::evk_sim::Ty<SrcT>::name);
        step_ka_ = t.stepKa > 0 ? t.stepKa : 1;
        step_kb_ = t.stepKb > 0 ? t.stepKb : 1;
        const int nbuf_a = t.depthA1 > step_ka_ ? 2 : 1, nbuf_b = t.depthB1 > step_kb_ ? 2 : 1;
        // L1: depthA1 (depthB1) blocks of baseM x baseK (baseK x baseN), in stepKa (stepKb) K blocks per load
        pipe_->InitBuffer(qa1_, nbuf_a, static_cast<uint32_t>(step_ka_ * t.baseM * t.baseK * kSize), loc);
        pipe_->InitBuffer(qb1_, nbuf_b, static_cast<uint32_t>(step_kb_ * t.baseK * t.baseN * kSize), loc);
        pipe_->InitBuffer(qa2_, t.dbL0A > 1 ? 2 : 1, static_cast<uint32_t>(t.baseM * t.baseK * kSize), loc);
        pipe_->InitBuffer(qb2_, t.dbL0B > 1 ? 2 : 1, static_cast<uint32_t>(t.baseK * t.baseN * kSize), loc);
        pipe_->InitBuffer(qc_, t.dbL0C > 1 ? 2 : 1, static_cast<uint32_t>(t.baseM * t.baseN * 4), loc);
        if (t.isBias) {
            pipe_->InitBuffer(qbias1_, 1, static_cast<uint32_t>(align(t.baseN, 16) * sizeof(BiasT)), loc);
            pipe_->InitBuffer(qbias2_, 1, static_cast<uint32_t>(align(t.baseN, 16) * 4), loc);
        }
        buffers_ = true;
    }

    // Runs request m of client c on this (the AIC's) object.
    void serve(MatmulImpl& c, const evk_mm::Msg& m) {
        const ::evk_sim::SrcLoc loc = m.loc;
        // what the emulated Matmul's own copies, loads and Mmads report is said to come from inside the API (it is
        // located at the kernel's call: IterateAll, GetTensorC)
        const ::evk_sim::ApiScope scope("Matmul");
        if (!buffers_)
            ::evk_sim::fatal(EVK_RULE_INVALID_TENSOR, loc.file, loc.line,
                             "Matmul: the cube core has no buffers for this object (REGIST_MATMUL_OBJ did not run "
                             "on it)");
        if constexpr (!kHalfLike && !std::is_same<SrcT, float>::value) {
            ::evk_sim::fatal(EVK_RULE_UNSUPPORTED_DTYPE, loc.file, loc.line,
                             "Matmul with %s inputs is not emulated (half, bfloat16 and float are)",
                             ::evk_sim::Ty<SrcT>::name);
        }
        if constexpr (!kHalfLike) {
            // a row-major float B and a transposed float A go through LoadDataWithTranspose, whose 16 x 16 squares
            // span two 8-wide K fractals: a K block must hold whole squares
            if ((!c.trans_b_ || c.trans_a_) && tiling_.baseK % 16 != 0)
                ::evk_sim::fatal(EVK_RULE_UNSUPPORTED_API, loc.file, loc.line,
                                 "Matmul with float inputs, %s: baseK=%d must be a multiple of 16 here (the "
                                 "transposing load moves 16 x 16 float squares); the emulator does not split them",
                                 c.trans_a_ ? "A transposed" : "B not transposed", tiling_.baseK);
        }
        if (c.has_bias_ && !tiling_.isBias)
            ::evk_sim::fatal(EVK_RULE_INVALID_ARGUMENT, loc.file, loc.line,
                             "Matmul: SetBias on an object whose tiling has isBias=0 (no bias-table buffer)");
        if (c.single_m_ > c.org_m_ || c.single_n_ > c.org_n_ || c.single_k_ > c.org_ka_)
            ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_WARNING, loc.file, loc.line,
                                 "Matmul: the single-core shape %lldx%lldx%lld exceeds the original shape "
                                 "%lldx%lldx%lld (SetOrgShape/SetTail)",
                                 static_cast<long long>(c.single_m_), static_cast<long long>(c.single_n_),
                                 static_cast<long long>(c.single_k_), static_cast<long long>(c.org_m_),
                                 static_cast<long long>(c.org_n_), static_cast<long long>(c.org_ka_));
        if (m.kind == evk_mm::ITERATE_ALL) {
            const int n = c.tiles_m() * c.tiles_n();
            DstT* base = static_cast<DstT*>(const_cast<void*>(m.dst));
            for (int t = 0; t < n; ++t) {
                const int mi = c.tile_m(t), ni = c.tile_n(t);
                compute_tile(c, mi, ni, base + static_cast<int64_t>(mi) * tiling_.baseM * m.dst_row +
                                            static_cast<int64_t>(ni) * tiling_.baseN,
                             m.dst_row, loc);
            }
        } else {
            compute_tile(c, c.tile_m(m.tile), c.tile_n(m.tile), static_cast<DstT*>(const_cast<void*>(m.dst)), m.dst_row,
                         loc);
        }
    }

    // rows x cols of a row-major GM matrix (row stride ld) -> L1 in Zz: 16-row bands one after another, each
    // `width` (cols rounded up to 16) wide in 32-byte column blocks of 16 rows (512-byte fractals side by side).
    void zz_bands(const LocalTensor<SrcT>& dst, const GlobalTensor<SrcT>& src, int64_t rows, int cols, int64_t ld,
                  int64_t width, ::evk_sim::SrcLoc loc) {
        const int64_t full = rows / 16, tail = rows % 16;
        if (full > 0 && 16 * ld <= 65535 && width * 16 <= 65535) {
            DataCopy(dst, src,
                     Nd2NzParams(static_cast<uint16_t>(full), 16, static_cast<uint16_t>(cols),
                                 static_cast<uint16_t>(16 * ld), static_cast<uint16_t>(ld), 16, 1,
                                 static_cast<uint16_t>(width * 16)),
                     loc);
        } else {
            for (int64_t j = 0; j < full; ++j)
                DataCopy(dst[static_cast<uint32_t>(j * width * 16)], src[j * 16 * ld],
                         Nd2NzParams(1, 16, static_cast<uint16_t>(cols), 0, static_cast<uint16_t>(ld), 16, 1, 0), loc);
        }
        if (tail > 0)
            DataCopy(dst[static_cast<uint32_t>(full * width * 16)], src[full * 16 * ld],
                     Nd2NzParams(1, static_cast<uint16_t>(tail), static_cast<uint16_t>(cols), 0,
                                 static_cast<uint16_t>(ld), 16, 1, 0),
                     loc);
    }

    void compute_tile(MatmulImpl& c, int mi, int ni, DstT* dst, int64_t dst_row, ::evk_sim::SrcLoc loc) {
        const TCubeTiling& t = tiling_;
        const int cm = c.tile_rows(mi), cn = c.tile_cols(ni);
        const int64_t m0 = static_cast<int64_t>(mi) * t.baseM, n0 = static_cast<int64_t>(ni) * t.baseN;
        const int M1 = (cm + 15) / 16, N1 = (cn + 15) / 16;
        const int64_t am = static_cast<int64_t>(M1) * 16, an = static_cast<int64_t>(N1) * 16;
        const int64_t K = c.single_k_;
        const int frac = 512 / kSize;  // elements of one L0A/L0B fractal
        const bool bias = c.has_bias_;
        LocalTensor<float> l0c = qc_.AllocTensor<float>(loc);
        LocalTensor<float> bt;
        if (bias) {  // bias GM -> L1 (C1, one ND2NZ row) -> bias table (C2)
            LocalTensor<BiasT> b1 = qbias1_.AllocTensor<BiasT>(loc);
            DataCopy(b1, c.bias_[n0], Nd2NzParams(1, 1, static_cast<uint16_t>(cn), 0, static_cast<uint16_t>(cn), 1, 1, 0),
                     loc);
            qbias1_.EnQue(b1, loc);
            b1 = qbias1_.template DeQue<BiasT>(loc);
            bt = qbias2_.AllocTensor<float>(loc);
            DataCopy(bt, b1, static_cast<uint32_t>(align(cn, 32 / static_cast<int>(sizeof(BiasT)))), loc);
            qbias2_.EnQue(bt, loc);
            bt = qbias2_.template DeQue<float>(loc);
            qbias1_.FreeTensor(b1, loc);
        }
        const int64_t chunk_a = step_ka_ * t.baseK, chunk_b = step_kb_ * t.baseK;
        const int64_t chunk = std::min(chunk_a, chunk_b);  // K loaded into L1 per step
        LocalTensor<SrcT> a1, b1;
        bool first = true;
        for (int64_t kc0 = 0; kc0 < K; kc0 += chunk) {
            const int64_t kc = std::min<int64_t>(chunk, K - kc0);
            const int64_t akc = align(kc, 16);  // K rows of the L1 blocks that are K-major (aligned to 16)
            a1 = qa1_.AllocTensor<SrcT>(loc);
            b1 = qb1_.AllocTensor<SrcT>(loc);
            constexpr bool f32 = std::is_same<SrcT, float>::value;
            if (f32 && c.trans_a_)  // A^T stored (K x M), float: Zz in L1 (16-row K bands, 8-wide M fractals)
                zz_bands(a1, c.a_[kc0 * c.org_m_ + m0], kc, cm, c.org_m_, am, loc);
            else if (!c.trans_a_)  // A (M x K): rows m, K contiguous
                DataCopy(a1, c.a_[(m0)*c.org_ka_ + kc0],
                         Nd2NzParams(1, static_cast<uint16_t>(cm), static_cast<uint16_t>(kc), 0,
                                     static_cast<uint16_t>(c.org_ka_), static_cast<uint16_t>(am), 1, 0),
                         loc);
            else  // A^T stored (K x M)
                DataCopy(a1, c.a_[kc0 * c.org_m_ + m0],
                         Nd2NzParams(1, static_cast<uint16_t>(kc), static_cast<uint16_t>(cm), 0,
                                     static_cast<uint16_t>(c.org_m_), static_cast<uint16_t>(akc), 1, 0),
                         loc);
            if (f32 && !c.trans_b_)  // B (K x N), float: Zz in L1 (16-row K bands, 8-wide N fractals)
                zz_bands(b1, c.b_[kc0 * c.org_n_ + n0], kc, cn, c.org_n_, an, loc);
            else if (!c.trans_b_)  // B (K x N)
                DataCopy(b1, c.b_[kc0 * c.org_n_ + n0],
                         Nd2NzParams(1, static_cast<uint16_t>(kc), static_cast<uint16_t>(cn), 0,
                                     static_cast<uint16_t>(c.org_n_), static_cast<uint16_t>(akc), 1, 0),
                         loc);
            else  // B^T stored (N x K)
                DataCopy(b1, c.b_[n0 * c.org_kb_ + kc0],
                         Nd2NzParams(1, static_cast<uint16_t>(cn), static_cast<uint16_t>(kc), 0,
                                     static_cast<uint16_t>(c.org_kb_), static_cast<uint16_t>(an), 1, 0),
                         loc);
            qa1_.EnQue(a1, loc);
            qb1_.EnQue(b1, loc);
            a1 = qa1_.template DeQue<SrcT>(loc);
            b1 = qb1_.template DeQue<SrcT>(loc);
            for (int64_t k0off = 0; k0off < kc; k0off += t.baseK) {
                const int ck = static_cast<int>(std::min<int64_t>(t.baseK, kc - k0off));
                const int K1 = (ck + k0 - 1) / k0;
                const int KB = (ck + 15) / 16;  // 16-row K bands of a float Zz block
                LocalTensor<SrcT> a2 = qa2_.AllocTensor<SrcT>(loc);
                LocalTensor<SrcT> b2 = qb2_.AllocTensor<SrcT>(loc);
                if (f32 && c.trans_a_) {
                    // square (band j, M pair p) of A^T -> L0A fractals (p, 2j), (p, 2j + 1); L0A rows hold KB * 2
                    // fractals (Mmad's kDirectionAlign: K aligned to 16)
                    for (int j = 0; j < KB; ++j)
                        LoadDataWithTranspose(a2[static_cast<uint32_t>(2 * j * frac)], a1,
                                              LoadData2dTransposeParams(static_cast<uint16_t>((k0off / 16 + j) * M1),
                                                                        static_cast<uint8_t>(M1), 1,
                                                                        static_cast<uint16_t>(2 * KB - 1), 0, 0),
                                              loc);
                } else if (!c.trans_a_) {  // L1 fractal (ki, mi) at ki * M1 + mi -> L0A (mi, ki)
                    for (int i = 0; i < M1; ++i)
                        LoadData(a2[static_cast<uint32_t>(i * K1 * frac)], a1,
                                 LoadData2DParams(static_cast<uint16_t>((k0off / k0) * M1 + i), static_cast<uint8_t>(K1),
                                                  static_cast<uint16_t>(M1), 0, 0, false, 0),
                                 loc);
                } else {  // L1 fractal (mi, ki) at mi * KC1 + ki, K-major: transposed into L0A
                    const int KC1 = static_cast<int>(akc / 16);
                    for (int i = 0; i < M1; ++i)
                        LoadData(a2[static_cast<uint32_t>(i * K1 * frac)], a1,
                                 LoadData2DParams(static_cast<uint16_t>(i * KC1 + k0off / 16), static_cast<uint8_t>(K1), 1,
                                                  0, 0, true, 0),
                                 loc);
                }
                if (f32 && !c.trans_b_) {
                    // square (band j, N pair p) of B -> L0B fractals (2j, p), (2j + 1, p)
                    for (int j = 0; j < KB; ++j)
                        LoadDataWithTranspose(b2[static_cast<uint32_t>(2 * j * N1 * frac)], b1,
                                              LoadData2dTransposeParams(static_cast<uint16_t>((k0off / 16 + j) * N1),
                                                                        static_cast<uint8_t>(N1), 1, 0,
                                                                        static_cast<uint16_t>(N1 - 1), 0),
                                              loc);
                } else if (!c.trans_b_) {  // L1 fractal (ni, ki) at ni * KC1 + ki, K-major: transposed into L0B (ki, ni)
                    const int KC1 = static_cast<int>(akc / 16);
                    for (int j = 0; j < K1; ++j)
                        LoadData(b2[static_cast<uint32_t>(j * N1 * frac)], b1,
                                 LoadData2DParams(static_cast<uint16_t>(k0off / 16 + j), static_cast<uint8_t>(N1),
                                                  static_cast<uint16_t>(KC1), 0, 0, true, 0),
                                 loc);
                } else {  // L1 fractal (ki, ni) at ki * N1 + ni: L0B's order already
                    for (int j = 0; j < K1; ++j)
                        LoadData(b2[static_cast<uint32_t>(j * N1 * frac)], b1,
                                 LoadData2DParams(static_cast<uint16_t>((k0off / k0 + j) * N1), static_cast<uint8_t>(N1), 1,
                                                  0, 0, false, 0),
                                 loc);
                }
                qa2_.EnQue(a2, loc);
                qb2_.EnQue(b2, loc);
                a2 = qa2_.template DeQue<SrcT>(loc);
                b2 = qb2_.template DeQue<SrcT>(loc);
                MmadParams mp(static_cast<uint16_t>(cm), static_cast<uint16_t>(cn), static_cast<uint16_t>(ck), 0, false,
                              first);
                mp.kDirectionAlign = f32 && c.trans_a_;
                if (first && bias) {
                    mp.cmatrixInitVal = false;
                    mp.cmatrixSource = true;
                    Mmad(l0c, a2, b2, bt, mp, loc);
                } else {
                    Mmad(l0c, a2, b2, mp, loc);
                }
                first = false;
                qa2_.FreeTensor(a2, loc);
                qb2_.FreeTensor(b2, loc);
            }
            qa1_.FreeTensor(a1, loc);
            qb1_.FreeTensor(b1, loc);
        }
        if (bias) qbias2_.FreeTensor(bt, loc);
        qc_.EnQue(l0c, loc);
        l0c = qc_.template DeQue<float>(loc);
        FixpipeParamsV220 fp(static_cast<uint16_t>(cn), static_cast<uint16_t>(cm), static_cast<uint16_t>(am),
                             static_cast<uint32_t>(dst_row), false);
        if constexpr (::evk_sim::is_half_t<DstT>::value) fp.quantPre = QuantMode_t::F322F16;
        else if constexpr (std::is_same<DstT, bfloat16_t>::value) fp.quantPre = QuantMode_t::F322BF16;
        GlobalTensor<DstT> out;
        out.SetGlobalBuffer(dst, static_cast<uint64_t>(cm - 1) * dst_row + cn);
        Fixpipe(out, l0c, fp, loc);
        qc_.FreeTensor(l0c, loc);
    }
};

template <class A_TYPE, class B_TYPE, class C_TYPE, class BIAS_TYPE = MatmulType<TPosition::GM, CubeFormat::ND, float>,
          const auto& MM_CFG = CFG_NORM, class MM_CB = void, class MATMUL_POLICY = void>
using Matmul = MatmulImpl<A_TYPE, B_TYPE, C_TYPE, BIAS_TYPE, MM_CFG, MM_CB, MATMUL_POLICY>;

namespace evk_mm {
inline void regist_list(TPipe*, int, bool, ClientBase**, int&, ::evk_sim::SrcLoc) {}
template <class Obj, class... Rest>
inline void regist_list(TPipe* pipe, int idx, bool server, ClientBase** objs, int& n, ::evk_sim::SrcLoc loc, Obj& obj,
                        const TCubeTiling* tiling, Rest&&... rest) {
    obj.evk_register(pipe, tiling, idx, server, loc);
    if (n < 8) objs[n++] = &obj;
    regist_list(pipe, idx + 1, server, objs, n, loc, rest...);
}
template <class Obj, class... Rest>
inline void regist_list(TPipe* pipe, int idx, bool server, ClientBase** objs, int& n, ::evk_sim::SrcLoc loc, Obj& obj) {
    // REGIST_MATMUL_OBJ(pipe, ws, obj) without a tiling: Init must follow
    (void)pipe, (void)idx, (void)server, (void)objs, (void)n;
    ::evk_sim::fatal(EVK_RULE_UNSUPPORTED_API, loc.file, loc.line,
                     "REGIST_MATMUL_OBJ without a tiling pointer (and a later Init) is not emulated: pass &tiling");
    (void)obj;
}
// True on the AIC of a MIX kernel once it served its AIVs: the kernel returns there (CANN's AIC does too).
template <class First, class... Rest>
inline bool regist(TPipe* pipe, GM_ADDR workspace, ::evk_sim::SrcLoc loc, First& first, Rest&&... rest) {
    (void)workspace;
    const bool server = EVK_MM_MIX && ::evk_sim::core_type() == 1;
    ClientBase* objs[8];
    int n = 0;
    // a new launch: nothing left over from an earlier one that stopped half-way (the AIC registers before
    // its AIVs run)
    if (server) mailbox(aicore_of_caller()).clear();
    regist_list(pipe, 0, server, objs, n, loc, first, rest...);
    if (!server) return false;
    First::evk_serve(objs, n, loc);
    return true;
}
}  // namespace evk_mm
}  // namespace matmul

// The system workspace of a framework launch. CANN's framework hands the kernel's `workspace` argument to the
// high-level APIs as their system workspace; until the runtime reports it (evk_sim::sys_workspace), the
// registration picks it up the same way: in a kernel entry with msopgen's signature the parameter named
// `workspace` is in scope and shadows this global placeholder (elsewhere the placeholder is found and
// nothing is taken).
namespace matmul {
namespace evk_mm {
struct NoWorkspaceArg {};
inline void take_workspace(GM_ADDR ws) {  // every launch passes its own (a process may run several)
    if (ws) AscendC::evk_mm::user_sys_workspace() = ws;
}
template <class T> inline void take_workspace(const T&) {}
}  // namespace evk_mm
}  // namespace matmul
[[maybe_unused]] static constexpr ::matmul::evk_mm::NoWorkspaceArg workspace{};

// On the AIC of a MIX kernel this serves the AIVs and then returns from the kernel (as CANN's does).
#define REGIST_MATMUL_OBJ(tpipe, sysWorkspace, ...)                                                               \
    do {                                                                                                           \
        ::matmul::evk_mm::take_workspace(workspace);                                                               \
        if (::matmul::evk_mm::regist((tpipe), (sysWorkspace), ::evk_sim::SrcLoc{__FILE__, __LINE__}, __VA_ARGS__)) \
            return;                                                                                                \
    } while (0)

#endif  // EVK_SIM_MATMUL_H
