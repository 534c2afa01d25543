// EvoKernel Ascend C CPU emulator: the kernel-side API (namespace AscendC).
//
// Our own implementation of the Ascend C vector-core subset described in the project's reference
// notes (§5, §8): tensors, TPipe/TQue/TBuf, DataCopy/DataCopyPad, vector instructions in count and
// mask/repeat forms, reductions, Cast/Compare/Select, sync. Every entry point takes a defaulted
// EVK_LOC so violations carry the kernel's file and line. Non-template checking lives in
// runtime.cpp; only typed element loops are here.
#ifndef EVK_SIM_KERNEL_H
#define EVK_SIM_KERNEL_H

#include <exception>
// <stdlib.h> and <math.h> in their C++ forms put std::abs's floating overloads (and the math functions) in the
// global namespace: device code calls abs(x) on floats unqualified (HWXROS/AscendcS7's PdistGrad), which with
// <cstdlib> alone would be C's int abs (a float truncated to an integer, silently)
#include <math.h>
#include <stdlib.h>

#include "evk_sim/common.h"

// Which core runs this code: in a MIX kernel every AI core runs the kernel once on its cube core (AIC) and
// once on each vector core (AIV).
#define ASCEND_IS_AIV (::evk_sim::core_type() == 0)
#define ASCEND_IS_AIC (::evk_sim::core_type() == 1)
// The kernel type (AIV only, AIC only, mixed) decides which cores run the blocks; the report carries it.
#define KERNEL_TASK_TYPE_DEFAULT(x) ::evk_sim::set_kernel_type(static_cast<int>(x))
#define KERNEL_TASK_TYPE(key, x) \
    do {                         \
        if (::evk_sim::tiling_key() == static_cast<uint64_t>(key)) ::evk_sim::set_kernel_type(static_cast<int>(x)); \
    } while (0)
#define TILING_KEY_IS(k) (::evk_sim::tiling_key() == static_cast<uint64_t>(k))
#ifndef ASSERT
// CANN's device build compiles ASSERT away (it checks only in the CPU debug build), so device code can
// write it anywhere an empty expansion compiles, even as the suffix of an expression (a community entry's
// `this->tileNum = tileNum ASSERT(tileNum != 0 && "...");`). Here it still checks, as the CPU debug build
// does, and expands to `+ 0 * check(...)`: a valid statement on its own and a no-op term after an expression.
namespace evk_sim {
inline int assert_holds(bool ok, const char* file, int line, const char* text) {
    if (!ok) ::evk_sim::fatal(EVK_RULE_KERNEL_ASSERT, file, line, "ASSERT(%s) failed", text);
    return 0;
}
}  // namespace evk_sim
#define ASSERT(cond) +0 * ::evk_sim::assert_holds(static_cast<bool>(cond), __FILE__, __LINE__, #cond)
#endif
#ifndef ascendc_assert
#define ascendc_assert(cond, ...) ASSERT(cond)
#endif
#define PRINTF(...) ::evk_sim::kernel_printf(__VA_ARGS__)
#define TRACE_START(x)
#define TRACE_STOP(x)

// Tiling data on the kernel side: the struct registered by REGISTER_TILING_DATA_CLASS (see
// register/tilingdata_base.h), or EVK_TILING_TYPE when the build defines it.
#ifndef EVK_TILING_TYPE
#define EVK_TILING_TYPE EvkRegisteredTilingData
#endif
#define GET_TILING_DATA(var, tiling)                                                                  \
    EVK_TILING_TYPE var;                                                                              \
    ::evk_sim::tiling_load(&(var), reinterpret_cast<const uint8_t*>(tiling), sizeof(var), __FILE__, __LINE__)
#define GET_TILING_DATA_WITH_STRUCT(type, var, tiling)                                                \
    type var;                                                                                         \
    ::evk_sim::tiling_load(&(var), reinterpret_cast<const uint8_t*>(tiling), sizeof(var), __FILE__, __LINE__)
#define GET_TILING_DATA_MEMBER(type, member, var, tiling)                                             \
    decltype(type::member) var;                                                                       \
    ::evk_sim::tiling_load_member(&(var), reinterpret_cast<const uint8_t*>(tiling), offsetof(type, member), \
                                  sizeof(var), __FILE__, __LINE__)

namespace evk_sim {
void tiling_load_member(void* dst, const uint8_t* src, uint64_t off, uint64_t n, const char* file, int line);
// The launch's GM workspace (the kernel's workspace argument) and its size; provided by the runtime when it
// has them (weak: a build without them reports GetTensorC to the UB as not available).
__attribute__((weak)) uint8_t* sys_workspace();
__attribute__((weak)) uint64_t sys_workspace_bytes();

// Per-type facts: name in reports, kind, the type arithmetic is done in.
template <class T> struct Ty;
#define EVK_TY(T, NAME, KIND, COMPUTE)                     \
    template <> struct Ty<T> {                             \
        static constexpr const char* name = NAME;          \
        static constexpr int kind = KIND;                  \
        using C = COMPUTE;                                 \
    };
EVK_TY(float, "float", DK_F32, float)
EVK_TY(_Float16, "half", DK_F16, float)
EVK_TY(bfloat16_t, "bfloat16", DK_BF16, float)
EVK_TY(double, "double", DK_F64, double)
EVK_TY(int8_t, "int8", DK_I8, int64_t)
EVK_TY(uint8_t, "uint8", DK_U8, int64_t)
EVK_TY(int16_t, "int16", DK_I16, int64_t)
EVK_TY(uint16_t, "uint16", DK_U16, int64_t)
EVK_TY(int32_t, "int32", DK_I32, int64_t)
EVK_TY(uint32_t, "uint32", DK_U32, int64_t)
EVK_TY(int64_t, "int64", DK_I64, int64_t)
EVK_TY(uint64_t, "uint64", DK_U64, int64_t)
EVK_TY(bool, "bool", DK_BOOL, int64_t)
#undef EVK_TY

constexpr uint32_t bit(int k) { return 1u << k; }
constexpr uint32_t DT_HF = bit(DK_F16) | bit(DK_F32);
constexpr uint32_t DT_HF_I16_I32 = DT_HF | bit(DK_I16) | bit(DK_I32);
constexpr uint32_t DT_B16 = bit(DK_I16) | bit(DK_U16);
constexpr uint32_t DT_SHIFT = DT_B16 | bit(DK_I32) | bit(DK_U32);
constexpr uint32_t DT_ALL = 0xffffffffu;

template <class T> inline typename Ty<T>::C ld(int64_t off) {
    T v;
    std::memcpy(&v, g_ub + off, sizeof(T));
    return static_cast<typename Ty<T>::C>(static_cast<typename std::conditional<
        std::is_same<T, bfloat16_t>::value || is_half_t<T>::value, float, T>::type>(v));
}
// Store a computed value as T. Half: IEEE round to nearest even; a finite value that became
// inf is counted in `ovf` (and clamped to +-65504 in saturation mode).
template <class T> inline void st(int64_t off, typename Ty<T>::C c, uint64_t& ovf) {
    T v;
    if constexpr (is_half_t<T>::value) {
        float r = static_cast<float>(c);
        v = static_cast<_Float16>(r);
        if (std::isinf(static_cast<float>(v)) && std::isfinite(r)) {
            ++ovf;
            if (half_overflow_saturates()) v = static_cast<_Float16>(r > 0 ? 65504.0f : -65504.0f);
        }
    } else if constexpr (std::is_same<T, bfloat16_t>::value) {
        v = bfloat16_t(static_cast<float>(c));
    } else {
        v = static_cast<T>(c);
    }
    std::memcpy(g_ub + off, &v, sizeof(T));
}
// Reductions on half saturate their partial results at +-65504 (documented for the reduce
// instructions); returns the value rounded to T.
template <class T> inline typename Ty<T>::C rnd(typename Ty<T>::C c, uint64_t& ovf) {
    if constexpr (is_half_t<T>::value) {
        float r = static_cast<float>(c);
        float h = static_cast<float>(static_cast<_Float16>(r));
        if (std::isinf(h) && std::isfinite(r)) {
            ++ovf;
            h = r > 0 ? 65504.0f : -65504.0f;
        }
        return h;
    } else if constexpr (std::is_same<T, bfloat16_t>::value) {
        return static_cast<float>(bfloat16_t(static_cast<float>(c)));
    } else {
        return c;
    }
}
}  // namespace evk_sim

enum KernelType { KERNEL_TYPE_AIV_ONLY = 0, KERNEL_TYPE_AIC_ONLY, KERNEL_TYPE_MIX_AIV_1_0, KERNEL_TYPE_MIX_AIC_1_1,
                  KERNEL_TYPE_MIX_AIC_1_2 };

// GetSysWorkSpacePtr: at global scope, as CANN declares it (basic_api/kernel_operator_swap_mem_intf.h), and in
// AscendC by a using-declaration (kernels call it both ways).
namespace AscendC {
namespace evk_mm {
inline uint8_t*& user_sys_workspace() {
    static uint8_t* p = nullptr;
    return p;
}
}  // namespace evk_mm
}  // namespace AscendC
inline __gm__ uint8_t* GetSysWorkSpacePtr() {
    if (&::evk_sim::sys_workspace != nullptr) {
        uint8_t* p = ::evk_sim::sys_workspace();
        if (p) return p;
    }
    return AscendC::evk_mm::user_sys_workspace();
}
// min/max: device code calls them unqualified (CANN's own examples do: batch_matmul_tensor_api.asc), and
// AscendC::Std::min/max are the Utils API's (impl/utils/std/algorithm/min.h: (a < b) ? a : b).
template <typename T, typename U> constexpr auto min(const T& src0, const U& src1) { return (src0 < src1) ? src0 : src1; }
template <typename T, typename U> constexpr auto max(const T& src0, const U& src1) { return (src0 > src1) ? src0 : src1; }

namespace AscendC {
using ::GetSysWorkSpacePtr;
namespace Std {
using ::max;
using ::min;
}  // namespace Std

// ---------------------------------------------------------------------------------------------
// Enums and constants
// ---------------------------------------------------------------------------------------------
enum class TPosition : uint8_t {
    GM = 0, A1, A2, B1, B2, C1, C2, CO1, CO2, VECIN, VECOUT, VECCALC, LCM = VECCALC, SPM, SHM = SPM, TSCM,
    C2PIPE2GM, C2PIPE2LOCAL, MAX
};
using QuePosition = TPosition;
enum class HardEvent : uint8_t {
    MTE2_MTE1 = 0, MTE1_MTE2, MTE1_M, M_MTE1, MTE2_V, V_MTE2, MTE3_V, V_MTE3, M_V, V_M, V_V, MTE3_MTE1,
    MTE1_MTE3, MTE1_V, MTE2_M, M_MTE2, V_MTE1, M_FIX, FIX_M, MTE3_MTE2, MTE2_MTE3, S_V, V_S, S_MTE2, MTE2_S,
    S_MTE3, MTE3_S, MTE2_FIX, FIX_MTE2, FIX_S, M_S, FIX_MTE3, MTE1_FIX, FIX_MTE1, FIX_FIX, MAX
};
enum class RoundMode : uint8_t { CAST_NONE = 0, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC, CAST_ODD };
enum class CMPMODE : uint8_t { LT = 0, GT, EQ, LE, GE, NE };
enum class SELMODE : uint8_t { VSEL_CMPMASK_SPR = 0, VSEL_TENSOR_SCALAR_MODE, VSEL_TENSOR_TENSOR_MODE };
enum class ReduceOrder : uint8_t { ORDER_VALUE_INDEX = 0, ORDER_INDEX_VALUE, ORDER_ONLY_VALUE, ORDER_ONLY_INDEX };
enum class MaskMode : uint8_t { NORMAL = 0, COUNTER };
enum class AtomicDtype : uint8_t { ATOMIC_NONE = 0, ATOMIC_F32, ATOMIC_F16, ATOMIC_S16, ATOMIC_S32, ATOMIC_S8, ATOMIC_BF16 };
enum KernelMode { AIV_MODE = 0, AIC_MODE, MIX_MODE };
using ::KernelType;  // CANN declares the kernel types globally (kernels write KERNEL_TYPE_AIC_ONLY unqualified)
using ::KERNEL_TYPE_AIV_ONLY;
using ::KERNEL_TYPE_AIC_ONLY;
using ::KERNEL_TYPE_MIX_AIV_1_0;
using ::KERNEL_TYPE_MIX_AIC_1_1;
using ::KERNEL_TYPE_MIX_AIC_1_2;
using TEventID = int8_t;

constexpr int32_t ONE_BLK_SIZE = 32;
constexpr int32_t ONE_REPEAT_BYTE_SIZE = 256;
constexpr int32_t DEFAULT_BLK_NUM = 8;
constexpr int32_t DEFAULT_BLK_STRIDE = 1;
constexpr int32_t DEFAULT_REPEAT_STRIDE = 8;
constexpr int32_t MAX_REPEAT_TIMES = 255;
constexpr int32_t BLOCK_CUBE = 16;
constexpr int32_t DEFAULT_C0_SIZE = 32;  // bytes of a data block (impl/basic_api/utils/kernel_utils_constants.h)
constexpr int32_t MASK_PLACEHOLDER = 0;
constexpr uint64_t FULL_MASK = ~0ull;
// The L2 cache hint of a GlobalTensor (SetL2CacheHint; impl/basic_api/utils/kernel_utils_macros.h): the emulator
// models no L2 policy, so the hint changes nothing.
enum class CacheMode { CACHE_MODE_DISABLE = 0, CACHE_MODE_NORMAL = 1, CACHE_MODE_LAST = 2, CACHE_MODE_PERSISTENT = 4 };
// Integer helpers of the basic API (impl/basic_api/utils/kernel_utils_ceil_oom_que.h)
constexpr inline uint32_t DivCeil(uint32_t a, uint32_t b) { return (a + b - 1) / b; }
constexpr inline uint32_t AlignUp(uint32_t a, uint32_t b) { return DivCeil(a, b) * b; }

// ---------------------------------------------------------------------------------------------
// Core identity
// ---------------------------------------------------------------------------------------------
inline int64_t GetBlockIdx() { return ::evk_sim::block_idx(); }
inline int64_t GetBlockNum() { return ::evk_sim::block_num(); }
inline int64_t GetSubBlockIdx() { return ::evk_sim::sub_block_idx(); }
inline int64_t GetSubBlockNum() { return ::evk_sim::sub_block_num(); }
inline int64_t GetTaskRation() { return ::evk_sim::sub_block_num(); }
inline int64_t GetTaskRatio() { return ::evk_sim::sub_block_num(); }
inline int64_t GetSystemCycle() { return 0; }
inline void SetKernelMode(KernelMode) {}

// Workspaces. CANN's basic API declares these in kernel_operator.h (kernel_operator_swap_mem_intf.h,
// kernel_operator_common_intf.h), so kernels reach them without the Matmul header. GetSysWorkSpacePtr: the
// system workspace (GM) the high-level APIs use; SetSysWorkspace sets it where the framework did not;
// GetUserWorkspace returns the workspace argument, as CANN's CPU-debug build does (dav_c220
// kernel_operator_common_impl.h).
inline void SetSysWorkspace(GM_ADDR workspace) { evk_mm::user_sys_workspace() = workspace; }
inline __gm__ uint8_t* GetUserWorkspace(GM_ADDR workspace) { return workspace; }

template <class... Args> inline void printf(const char* fmt, Args... args) { ::evk_sim::kernel_printf(fmt, args...); }

// ---------------------------------------------------------------------------------------------
// Parameter structs
// ---------------------------------------------------------------------------------------------
struct DataCopyParams {
    DataCopyParams() {}
    DataCopyParams(const uint16_t count, const uint16_t len, const uint16_t srcStrideIn, const uint16_t dstStrideIn)
        : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn) {}
    uint16_t blockCount = 1;
    uint16_t blockLen = 0;
    union {
        uint16_t srcStride = 0;
        uint16_t srcGap;
    };
    union {
        uint16_t dstStride = 0;
        uint16_t dstGap;
    };
};

struct DataCopyExtParams {
    DataCopyExtParams() {}
    DataCopyExtParams(const uint16_t count, const uint32_t len, const uint32_t srcStrideIn, const uint32_t dstStrideIn,
                      const uint32_t rsvIn)
        : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn), rsv(rsvIn) {}
    uint16_t blockCount = 1;
    uint32_t blockLen = 0;
    uint32_t srcStride = 0;
    uint32_t dstStride = 0;
    uint32_t rsv = 0;
};

struct DataCopyPadParams {
    DataCopyPadParams() {}
    DataCopyPadParams(const bool isPadValue, const uint8_t leftPadValue, const uint8_t rightPadValue,
                      const uint64_t padValue)
        : isPad(isPadValue), leftPadding(leftPadValue), rightPadding(rightPadValue), paddingValue(padValue) {}
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    uint64_t paddingValue = 0;
};

template <typename T> struct DataCopyPadExtParams {
    DataCopyPadExtParams() {}
    DataCopyPadExtParams(const bool isPadValue, const uint8_t leftPadValue, const uint8_t rightPadValue, T padValue)
        : isPad(isPadValue), leftPadding(leftPadValue), rightPadding(rightPadValue), paddingValue(padValue) {}
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    T paddingValue = T(0);
};

struct BinaryRepeatParams {
    BinaryRepeatParams() {}
    BinaryRepeatParams(const uint8_t dstBlkStrideIn, const uint8_t src0BlkStrideIn, const uint8_t src1BlkStrideIn,
                       const uint8_t dstRepStrideIn, const uint8_t src0RepStrideIn, const uint8_t src1RepStrideIn)
        : dstBlkStride(dstBlkStrideIn), src0BlkStride(src0BlkStrideIn), src1BlkStride(src1BlkStrideIn),
          dstRepStride(dstRepStrideIn), src0RepStride(src0RepStrideIn), src1RepStride(src1RepStrideIn) {}
    uint32_t blockNumber = DEFAULT_BLK_NUM;
    uint8_t dstBlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src0BlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src1BlkStride = DEFAULT_BLK_STRIDE;
    uint8_t dstRepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src0RepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src1RepStride = DEFAULT_REPEAT_STRIDE;
    bool repeatStrideMode = false;
    bool strideSizeMode = false;
};

struct UnaryRepeatParams {
    UnaryRepeatParams() {}
    UnaryRepeatParams(const uint16_t dstBlkStrideIn, const uint16_t srcBlkStrideIn, const uint8_t dstRepStrideIn,
                      const uint8_t srcRepStrideIn)
        : dstBlkStride(dstBlkStrideIn), srcBlkStride(srcBlkStrideIn), dstRepStride(dstRepStrideIn),
          srcRepStride(srcRepStrideIn) {}
    UnaryRepeatParams(const uint16_t dstBlkStrideIn, const uint16_t srcBlkStrideIn, const uint8_t dstRepStrideIn,
                      const uint8_t srcRepStrideIn, const bool halfBlockIn)
        : dstBlkStride(dstBlkStrideIn), srcBlkStride(srcBlkStrideIn), dstRepStride(dstRepStrideIn),
          srcRepStride(srcRepStrideIn), halfBlock(halfBlockIn) {}
    uint32_t blockNumber = DEFAULT_BLK_NUM;
    uint16_t dstBlkStride = DEFAULT_BLK_STRIDE;
    uint16_t srcBlkStride = DEFAULT_BLK_STRIDE;
    uint8_t dstRepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t srcRepStride = DEFAULT_REPEAT_STRIDE;
    bool repeatStrideMode = false;
    bool strideSizeMode = false;
    bool halfBlock = false;
};

struct BrcbRepeatParams {
    BrcbRepeatParams() {}
    BrcbRepeatParams(const uint16_t dstBlkStrideIn, const uint16_t dstRepStrideIn)
        : dstBlkStride(dstBlkStrideIn), dstRepStride(dstRepStrideIn) {}
    uint32_t blockNumber = DEFAULT_BLK_NUM;
    uint16_t dstBlkStride = DEFAULT_BLK_STRIDE;
    uint16_t dstRepStride = DEFAULT_REPEAT_STRIDE;
};

// ---------------------------------------------------------------------------------------------
// Tensors
// ---------------------------------------------------------------------------------------------
template <typename T> class LocalTensor;

namespace evk_detail {
template <typename T> struct UbElemRef;
}

template <typename T> class LocalTensor {
public:
    static_assert(::evk_sim::is_ascend_elem<T>::value, "LocalTensor<T> (and ReinterpretCast<T>, AllocTensor<T>, "
                  "DeQue<T>, TBuf::Get<T>): T must be " EVK_ELEM_TYPE_RULE);
    using PrimType = T;
    LocalTensor() = default;

    T GetValue(const uint32_t index, EVK_LOC) const { return get_(index, loc); }
    void SetValue(const uint32_t index, const T value, EVK_LOC) const { set_(index, value, loc); }
    evk_detail::UbElemRef<T> operator()(const uint32_t index, EVK_LOC) const;

    LocalTensor operator[](const uint32_t offset) const {
        LocalTensor r = *this;
        r.off_ = off_ + static_cast<int64_t>(offset) * static_cast<int64_t>(sizeof(T));
        r.size_ = offset <= size_ ? size_ - offset : 0;
        return r;
    }
    uint32_t GetSize() const { return size_; }
    void SetSize(const uint32_t size) { size_ = size; }
    uint32_t GetLength() const { return size_ * static_cast<uint32_t>(sizeof(T)); }
    template <typename U> LocalTensor<U> ReinterpretCast() const {
        LocalTensor<U> r;
        r.buf_ = buf_;
        r.off_ = off_;
        r.size_ = static_cast<uint32_t>(static_cast<uint64_t>(size_) * sizeof(T) / sizeof(U));
        return r;
    }
    uint64_t GetPhyAddr() const { return static_cast<uint64_t>(off_); }
    uint64_t GetPhyAddr(const uint32_t offset) const { return static_cast<uint64_t>(off_) + offset * sizeof(T); }
    TPosition GetPosition() const { return static_cast<TPosition>(::evk_sim::buf_position(buf_)); }
    template <typename U> void SetAddrWithOffset(const LocalTensor<U>& src, const uint32_t offset) {
        buf_ = src.buf_;
        off_ = src.off_ + static_cast<int64_t>(offset) * static_cast<int64_t>(sizeof(U));
        uint64_t bytes = src.size_ > offset ? static_cast<uint64_t>(src.size_ - offset) * sizeof(U) : 0;
        size_ = static_cast<uint32_t>(bytes / sizeof(T));
    }

    // emulator internals
    ::evk_sim::TD td() const { return ::evk_sim::TD{buf_, off_, static_cast<uint32_t>(sizeof(T))}; }
    T get_(uint32_t index, ::evk_sim::SrcLoc loc) const {
        ::evk_sim::begin_instr(::evk_sim::PID_S);
        ::evk_sim::count_scalar(::evk_sim::SC_UB_GET);
        valid_(loc, "GetValue");
        int64_t o = off_ + static_cast<int64_t>(index) * static_cast<int64_t>(sizeof(T));
        ::evk_sim::ub_access("LocalTensor::GetValue", buf_, o, sizeof(T), false, ::evk_sim::PID_S, loc.file, loc.line);
        T v;
        std::memcpy(&v, ::evk_sim::g_ub + o, sizeof(T));
        return v;
    }
    void set_(uint32_t index, T value, ::evk_sim::SrcLoc loc) const {
        ::evk_sim::begin_instr(::evk_sim::PID_S);
        ::evk_sim::count_scalar(::evk_sim::SC_UB_SET);
        valid_(loc, "SetValue");
        int64_t o = off_ + static_cast<int64_t>(index) * static_cast<int64_t>(sizeof(T));
        ::evk_sim::ub_access("LocalTensor::SetValue", buf_, o, sizeof(T), true, ::evk_sim::PID_S, loc.file, loc.line);
        std::memcpy(::evk_sim::g_ub + o, &value, sizeof(T));
    }
    void valid_(::evk_sim::SrcLoc loc, const char* what) const {
        if (!::evk_sim::buf_valid(buf_))
            ::evk_sim::fatal(EVK_RULE_INVALID_TENSOR, loc.file, loc.line,
                             "%s on a LocalTensor that was never obtained from AllocTensor/DeQue/TBuf::Get "
                             "(or belongs to a destroyed TPipe)",
                             what);
    }

    int buf_ = -1;
    int64_t off_ = 0;
    uint32_t size_ = 0;
};

namespace evk_detail {
template <typename T> struct UbElemRef {
    LocalTensor<T> t;
    uint32_t i;
    ::evk_sim::SrcLoc loc;
    operator T() const { return t.get_(i, loc); }
    UbElemRef& operator=(T v) { t.set_(i, v, loc); return *this; }
    UbElemRef& operator=(const UbElemRef& o) { t.set_(i, T(o), loc); return *this; }
    UbElemRef& operator+=(T v) { t.set_(i, T(t.get_(i, loc) + v), loc); return *this; }
    UbElemRef& operator-=(T v) { t.set_(i, T(t.get_(i, loc) - v), loc); return *this; }
    UbElemRef& operator*=(T v) { t.set_(i, T(t.get_(i, loc) * v), loc); return *this; }
    UbElemRef& operator/=(T v) { t.set_(i, T(t.get_(i, loc) / v), loc); return *this; }
};
}  // namespace evk_detail

template <typename T>
evk_detail::UbElemRef<T> LocalTensor<T>::operator()(const uint32_t index, ::evk_sim::SrcLoc loc) const {
    return evk_detail::UbElemRef<T>{*this, index, loc};
}

template <typename T> class GlobalTensor {
public:
    static_assert(::evk_sim::is_ascend_elem<T>::value, "GlobalTensor<T>: T must be " EVK_ELEM_TYPE_RULE);
    using PrimType = T;
    GlobalTensor() = default;
    void SetGlobalBuffer(__gm__ T* buffer, uint64_t bufferSize) { address_ = buffer; size_ = bufferSize; }
    void SetGlobalBuffer(__gm__ T* buffer) { address_ = buffer; size_ = 0; }
    __gm__ T* GetPhyAddr() const { return address_; }
    __gm__ T* GetPhyAddr(const uint64_t offset) const { return address_ + offset; }
    uint64_t GetSize() const { return size_; }
    GlobalTensor operator[](const uint64_t offset) const {
        GlobalTensor r;
        r.address_ = address_ + offset;
        r.size_ = size_ == 0 ? 0 : (offset <= size_ ? size_ - offset : 0);
        r.sized_ = sized_ || size_ != 0;
        return r;
    }
    T GetValue(const uint64_t offset, EVK_LOC) const {
        ::evk_sim::begin_instr(::evk_sim::PID_S);
        ::evk_sim::count_scalar(::evk_sim::SC_GM_GET, sizeof(T));
        const T* p = address_ + offset;
        T v{};
        if (::evk_sim::gm_access("GlobalTensor::GetValue", p, sizeof(T), false, address_, tensor_bytes_(), loc.file,
                                 loc.line))
            std::memcpy(&v, ::evk_sim::gm_host(p), sizeof(T));
        return v;
    }
    void SetValue(const uint64_t offset, const T value, EVK_LOC) const {
        ::evk_sim::begin_instr(::evk_sim::PID_S);
        ::evk_sim::count_scalar(::evk_sim::SC_GM_SET, sizeof(T));
        T* p = address_ + offset;
        if (::evk_sim::gm_access("GlobalTensor::SetValue", p, sizeof(T), true, address_, tensor_bytes_(), loc.file,
                                 loc.line))
            std::memcpy(::evk_sim::gm_host(p), &value, sizeof(T));
    }
    // CANN: `__gm__ T& operator()(const uint64_t offset)`, one element of global memory by reference (the
    // scalar unit reads and writes it). Here a reference-like proxy: reading it is GetValue, assigning it is
    // SetValue, so the access is checked and counted as the scalar GM access it is.
    struct GmElemRef {
        const GlobalTensor* t;
        uint64_t i;
        ::evk_sim::SrcLoc loc;
        operator T() const { return t->GetValue(i, loc); }
        GmElemRef& operator=(T v) { t->SetValue(i, v, loc); return *this; }
        GmElemRef& operator=(const GmElemRef& o) { t->SetValue(i, T(o), loc); return *this; }
        GmElemRef& operator+=(T v) { t->SetValue(i, T(t->GetValue(i, loc) + v), loc); return *this; }
        GmElemRef& operator-=(T v) { t->SetValue(i, T(t->GetValue(i, loc) - v), loc); return *this; }
        GmElemRef& operator*=(T v) { t->SetValue(i, T(t->GetValue(i, loc) * v), loc); return *this; }
    };
    GmElemRef operator()(const uint64_t offset, EVK_LOC) const { return GmElemRef{this, offset, loc}; }
    template <typename... A> void SetL2CacheHint(A...) {}
    // bytes the tensor declares (0: unknown). A view of a sized tensor past its end has size 0
    // but stays "sized" so accesses are still flagged.
    uint64_t tensor_bytes_() const { return (size_ != 0 || sized_) ? (size_ ? size_ * sizeof(T) : 1) : 0; }

    T* address_ = nullptr;  // public, named as in CANN's GlobalTensor (kernels read it: GreaterEqual sample)
    uint64_t size_ = 0;
    bool sized_ = false;
};

// ---------------------------------------------------------------------------------------------
// TQue / TBuf / TPipe
// ---------------------------------------------------------------------------------------------
template <typename T> inline LocalTensor<T> evk_make_tensor(const ::evk_sim::SlotRef& s) {
    LocalTensor<T> t;
    t.buf_ = s.buf;
    t.off_ = s.off;
    t.size_ = static_cast<uint32_t>(s.len / sizeof(T));
    return t;
}

template <TPosition src, TPosition dst, int32_t depth, auto mask = 0> class TQueBind {
public:
    TQueBind() = default;
    template <typename T> LocalTensor<T> AllocTensor(EVK_LOC) {
        return evk_make_tensor<T>(::evk_sim::que_alloc(qid_, loc.file, loc.line));
    }
    template <typename T> void AllocTensor(LocalTensor<T>& t, EVK_LOC) {
        t = evk_make_tensor<T>(::evk_sim::que_alloc(qid_, loc.file, loc.line));
    }
    template <typename T> void FreeTensor(LocalTensor<T>& t, EVK_LOC) { ::evk_sim::que_free(qid_, t.buf_, loc.file, loc.line); }
    template <typename T> bool EnQue(const LocalTensor<T>& t, EVK_LOC) {
        ::evk_sim::que_enque(qid_, t.buf_, loc.file, loc.line);
        return true;
    }
    template <typename T> LocalTensor<T> DeQue(EVK_LOC) {
        return evk_make_tensor<T>(::evk_sim::que_deque(qid_, loc.file, loc.line));
    }
    template <typename T> void DeQue(LocalTensor<T>& t, EVK_LOC) {
        t = evk_make_tensor<T>(::evk_sim::que_deque(qid_, loc.file, loc.line));
    }
    bool VacantInQue() { return ::evk_sim::que_vacant(qid_) != 0; }
    bool HasTensorInQue() { return ::evk_sim::que_has_tensor(qid_) > 0; }
    int32_t GetTensorCountInQue() { return ::evk_sim::que_has_tensor(qid_); }
    bool HasIdleBuffer() { return ::evk_sim::que_vacant(qid_) != 0; }
    void FreeAllEvent() {}
    static constexpr TPosition srcPosition = src;
    static constexpr TPosition dstPosition = dst;
    static constexpr int32_t queDepth = depth;
    int qid_ = -1;
};
template <TPosition pos, int32_t depth, auto mask = 0> using TQue = TQueBind<pos, pos, depth, mask>;

template <TPosition pos = TPosition::LCM> class TBuf {
public:
    TBuf() = default;
    template <typename T> LocalTensor<T> Get(EVK_LOC) {
        return evk_make_tensor<T>(::evk_sim::tbuf_get(qid_, 0, ~0ull, loc.file, loc.line));
    }
    template <typename T> LocalTensor<T> Get(uint32_t len, EVK_LOC) {
        return evk_make_tensor<T>(::evk_sim::tbuf_get(qid_, 0, static_cast<uint64_t>(len) * sizeof(T), loc.file,
                                                      loc.line));
    }
    template <typename T> LocalTensor<T> GetWithOffset(uint32_t size, uint32_t bufOffset, EVK_LOC) {
        return evk_make_tensor<T>(
            ::evk_sim::tbuf_get(qid_, bufOffset, static_cast<uint64_t>(size) * sizeof(T), loc.file, loc.line));
    }
    // The queue interface TBuf inherits from TQueBind in CANN (include/basic_api/kernel_tpipe.h declares them
    // public; impl/basic_api/kernel_tbuf_impl.h): AllocTensor and DeQue are Get<T>(), EnQue and FreeTensor do
    // nothing. A TBuf has no queue, so they order nothing either.
    template <typename T> LocalTensor<T> AllocTensor(EVK_LOC) { return Get<T>(loc); }
    template <typename T> LocalTensor<T> DeQue(EVK_LOC) { return Get<T>(loc); }
    template <typename T> void EnQue(const LocalTensor<T>&) {}
    template <typename T> void FreeTensor(LocalTensor<T>&) {}
    int qid_ = -1;
};

class TPipe;
inline TPipe*& evk_current_pipe() {
    static TPipe* p = nullptr;
    return p;
}

class TPipe {
public:
    TPipe() : id_(::evk_sim::pipe_create()) { evk_current_pipe() = this; }
    ~TPipe() {
        ::evk_sim::pipe_destroy(id_, std::uncaught_exceptions() > 0);
        if (evk_current_pipe() == this) evk_current_pipe() = nullptr;
    }
    TPipe(const TPipe&) = delete;
    TPipe& operator=(const TPipe&) = delete;
    void Init() {}
    template <TPosition s, TPosition d, int32_t depth, auto m>
    bool InitBuffer(TQueBind<s, d, depth, m>& que, uint8_t num, uint32_t len, EVK_LOC) {
        que.qid_ = ::evk_sim::que_init(id_, static_cast<int>(s), static_cast<int>(d), depth, num, len, false, loc.file,
                                       loc.line);
        return que.qid_ >= 0;
    }
    template <TPosition pos> bool InitBuffer(TBuf<pos>& buf, uint32_t len, EVK_LOC) {
        buf.qid_ = ::evk_sim::que_init(id_, static_cast<int>(pos), static_cast<int>(pos), 0, 1, len, true, loc.file,
                                       loc.line);
        return buf.qid_ >= 0;
    }
    // The queue form's three arguments on a TBuf: the documented TBuf form takes (buf, len) only, but community
    // operators built with CANN call InitBuffer(tbuf, num, len) (LpNormV2 of hansheng1001/AscendCContest, whose
    // repository keeps its device profile), so CANN's headers accept it. Taken here as one buffer of
    // num * len bytes (an assumption: CANN documents no such overload).
    template <TPosition pos> bool InitBuffer(TBuf<pos>& buf, uint8_t num, uint32_t len, EVK_LOC) {
        return InitBuffer(buf, static_cast<uint32_t>(num) * len, loc);
    }
    void Reset(EVK_LOC) { ::evk_sim::pipe_reset(id_, loc.file, loc.line); }
    void Destroy(EVK_LOC) { ::evk_sim::pipe_reset(id_, loc.file, loc.line); }
    TEventID FetchEventID(HardEvent evt);
    template <HardEvent evt> TEventID FetchEventID() { return FetchEventID(evt); }
    template <HardEvent evt> TEventID AllocEventID() { return FetchEventID(evt); }
    template <HardEvent evt> void ReleaseEventID(TEventID) {}
    int id_;
};
inline TPipe* GetTPipePtr() { return evk_current_pipe(); }

// ---------------------------------------------------------------------------------------------
// Synchronisation
// ---------------------------------------------------------------------------------------------
namespace evk_detail {
constexpr int pipe_of(pipe_t p) {
    return p == PIPE_S ? ::evk_sim::PID_S
         : p == PIPE_V ? ::evk_sim::PID_V
         : p == PIPE_MTE2 ? ::evk_sim::PID_MTE2
         : p == PIPE_MTE3 ? ::evk_sim::PID_MTE3
         : p == PIPE_MTE1 ? ::evk_sim::PID_MTE1
         : p == PIPE_M ? ::evk_sim::PID_M
         : p == PIPE_FIX ? ::evk_sim::PID_FIX
         : p == PIPE_ALL ? -1 : ::evk_sim::PID_NONE;
}
constexpr int ev_from(HardEvent e) {
    switch (e) {
        case HardEvent::MTE2_V: case HardEvent::MTE2_S: case HardEvent::MTE2_MTE3: return ::evk_sim::PID_MTE2;
        case HardEvent::V_MTE3: case HardEvent::V_MTE2: case HardEvent::V_S: case HardEvent::V_V: return ::evk_sim::PID_V;
        case HardEvent::MTE3_V: case HardEvent::MTE3_MTE2: case HardEvent::MTE3_S: return ::evk_sim::PID_MTE3;
        case HardEvent::S_V: case HardEvent::S_MTE2: case HardEvent::S_MTE3: return ::evk_sim::PID_S;
        case HardEvent::MTE2_MTE1: case HardEvent::MTE2_M: case HardEvent::MTE2_FIX: return ::evk_sim::PID_MTE2;
        case HardEvent::MTE1_MTE2: case HardEvent::MTE1_M: case HardEvent::MTE1_MTE3: case HardEvent::MTE1_V:
        case HardEvent::MTE1_FIX: return ::evk_sim::PID_MTE1;
        case HardEvent::M_MTE1: case HardEvent::M_V: case HardEvent::M_MTE2: case HardEvent::M_FIX: case HardEvent::M_S:
            return ::evk_sim::PID_M;
        case HardEvent::V_M: case HardEvent::V_MTE1: return ::evk_sim::PID_V;
        case HardEvent::MTE3_MTE1: return ::evk_sim::PID_MTE3;
        case HardEvent::FIX_M: case HardEvent::FIX_MTE2: case HardEvent::FIX_S: case HardEvent::FIX_MTE3:
        case HardEvent::FIX_MTE1: case HardEvent::FIX_FIX: return ::evk_sim::PID_FIX;
        default: return ::evk_sim::PID_NONE;
    }
}
constexpr int ev_to(HardEvent e) {
    switch (e) {
        case HardEvent::MTE2_V: case HardEvent::MTE3_V: case HardEvent::S_V: case HardEvent::V_V: return ::evk_sim::PID_V;
        case HardEvent::V_MTE3: case HardEvent::MTE2_MTE3: case HardEvent::S_MTE3: return ::evk_sim::PID_MTE3;
        case HardEvent::V_MTE2: case HardEvent::MTE3_MTE2: case HardEvent::S_MTE2: return ::evk_sim::PID_MTE2;
        case HardEvent::V_S: case HardEvent::MTE2_S: case HardEvent::MTE3_S: return ::evk_sim::PID_S;
        case HardEvent::FIX_S: case HardEvent::M_S: return ::evk_sim::PID_S;
        case HardEvent::MTE2_MTE1: case HardEvent::M_MTE1: case HardEvent::MTE3_MTE1: case HardEvent::V_MTE1:
        case HardEvent::FIX_MTE1: return ::evk_sim::PID_MTE1;
        case HardEvent::MTE1_M: case HardEvent::V_M: case HardEvent::MTE2_M: case HardEvent::FIX_M:
            return ::evk_sim::PID_M;
        case HardEvent::M_FIX: case HardEvent::MTE2_FIX: case HardEvent::MTE1_FIX: case HardEvent::FIX_FIX:
            return ::evk_sim::PID_FIX;
        case HardEvent::MTE1_MTE2: case HardEvent::M_MTE2: case HardEvent::FIX_MTE2: return ::evk_sim::PID_MTE2;
        case HardEvent::MTE1_MTE3: case HardEvent::FIX_MTE3: return ::evk_sim::PID_MTE3;
        case HardEvent::MTE1_V: case HardEvent::M_V: return ::evk_sim::PID_V;
        default: return ::evk_sim::PID_NONE;
    }
}
}  // namespace evk_detail

inline TEventID TPipe::FetchEventID(HardEvent evt) {
    return static_cast<TEventID>(::evk_sim::fetch_event_id(evk_detail::ev_from(evt), evk_detail::ev_to(evt)));
}

template <HardEvent event> inline void SetFlag(int32_t eventID, EVK_LOC) {
    ::evk_sim::sync_set(evk_detail::ev_from(event), evk_detail::ev_to(event), eventID, loc.file, loc.line);
}
template <HardEvent event> inline void WaitFlag(int32_t eventID, EVK_LOC) {
    ::evk_sim::sync_wait(evk_detail::ev_from(event), evk_detail::ev_to(event), eventID, loc.file, loc.line);
}
template <pipe_t pipe> inline void PipeBarrier(EVK_LOC) {
    ::evk_sim::sync_barrier(evk_detail::pipe_of(pipe), loc.file, loc.line);
}
// DataCacheCleanAndInvalid: evk_sim/copy_api.h
// Cross-core barrier. The hard form waits for every block; the soft form takes a GM workspace (32 bytes per
// core, zeroed by the host) and a UB workspace (8 int32 per core) and waits for usedCores blocks (0: all).
inline void SyncAll(EVK_LOC) { ::evk_sim::sync_all(0, true, loc.file, loc.line); }
template <bool isAIVOnly> inline void SyncAll(EVK_LOC) { ::evk_sim::sync_all(0, isAIVOnly, loc.file, loc.line); }
template <bool isAIVOnly = true>
inline void SyncAll(const GlobalTensor<int32_t>& gmWorkspace, const LocalTensor<int32_t>& ubWorkspace,
                    const int32_t usedCores = 0, EVK_LOC) {
    ubWorkspace.valid_(loc, "SyncAll");
    const int64_t cores = usedCores > 0 ? usedCores : ::evk_sim::block_num();
    // the workspaces are the barrier's state: check they exist and are large enough
    ::evk_sim::gm_access("SyncAll (GM workspace)", gmWorkspace.address_, static_cast<uint64_t>(cores) * 32, false,
                         gmWorkspace.address_, gmWorkspace.tensor_bytes_(), loc.file, loc.line);
    if (ubWorkspace.GetSize() < static_cast<uint32_t>(cores) * 8)
        ::evk_sim::violation(EVK_RULE_UB_OOB, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "SyncAll: the UB workspace holds %u int32 but %lld cores need %lld (8 per core)",
                             ubWorkspace.GetSize(), static_cast<long long>(cores), static_cast<long long>(cores) * 8);
    ::evk_sim::sync_all(usedCores, isAIVOnly, loc.file, loc.line);
}

// Cross-core flags (modes 0, 1, 2: every core of a kind, the AIVs of an AI core, its AIC and AIVs).
template <uint8_t modeId, pipe_t pipe> inline void CrossCoreSetFlag(uint16_t flagId, EVK_LOC) {
    ::evk_sim::cross_core_set(modeId, evk_detail::pipe_of(pipe), flagId, loc.file, loc.line);
}
template <uint8_t modeId = 0, pipe_t pipe = PIPE_S> inline void CrossCoreWaitFlag(uint16_t flagId, EVK_LOC) {
    ::evk_sim::cross_core_wait(flagId, loc.file, loc.line);
}

// Atomic accumulation of UB->GM copies.
template <typename T> inline void SetAtomicAdd() { ::evk_sim::set_gm_atomic_mode(1, ::evk_sim::Ty<T>::name); }
template <typename T> inline void SetAtomicMax() { ::evk_sim::set_gm_atomic_mode(2, ::evk_sim::Ty<T>::name); }
template <typename T> inline void SetAtomicMin() { ::evk_sim::set_gm_atomic_mode(3, ::evk_sim::Ty<T>::name); }
inline void SetAtomicNone() { ::evk_sim::set_gm_atomic_mode(0, ""); }

// Vector mask state.
inline void SetMaskCount() { ::evk_sim::mask_state().counter = true; }
inline void SetMaskNorm() { ::evk_sim::mask_state().counter = false; }
inline void ResetMask() {
    auto& m = ::evk_sim::mask_state();
    m.lo = ~0ull;
    m.hi = ~0ull;
}
template <typename T, MaskMode mode = MaskMode::NORMAL> inline void SetVectorMask(const uint64_t maskHigh, const uint64_t maskLow) {
    auto& m = ::evk_sim::mask_state();
    m.hi = maskHigh;
    m.lo = maskLow;
}
template <typename T, MaskMode mode = MaskMode::NORMAL> inline void SetVectorMask(int32_t len) {
    auto& m = ::evk_sim::mask_state();
    if (m.counter || mode == MaskMode::COUNTER) {
        m.lo = static_cast<uint64_t>(len);
        m.hi = 0;
    } else {
        m.lo = len >= 64 ? ~0ull : ((1ull << len) - 1);
        m.hi = len >= 128 ? ~0ull : (len > 64 ? ((1ull << (len - 64)) - 1) : 0);
    }
}

// Old intrinsic spellings.
inline void pipe_barrier(pipe_t p, EVK_LOC) { ::evk_sim::sync_barrier(evk_detail::pipe_of(p), loc.file, loc.line); }
inline void set_flag(pipe_t a, pipe_t b, event_t id, EVK_LOC) {
    ::evk_sim::sync_set(evk_detail::pipe_of(a), evk_detail::pipe_of(b), id, loc.file, loc.line);
}
inline void wait_flag(pipe_t a, pipe_t b, event_t id, EVK_LOC) {
    ::evk_sim::sync_wait(evk_detail::pipe_of(a), evk_detail::pipe_of(b), id, loc.file, loc.line);
}

// ---------------------------------------------------------------------------------------------
// Data movement
// ---------------------------------------------------------------------------------------------
namespace evk_detail {
inline void valid(int buf, const char* op, ::evk_sim::SrcLoc loc) {
    if (!::evk_sim::buf_valid(buf))
        ::evk_sim::fatal(EVK_RULE_INVALID_TENSOR, loc.file, loc.line,
                         "%s on a LocalTensor that was never obtained from AllocTensor/DeQue/TBuf::Get", op);
}
// Copy n bytes GM->UB at (gm, ub_off), checks included. On a read outside every GM buffer the UB
// bytes keep their previous contents and are marked unwritten.
void gm_to_ub(const char* op, int buf, int64_t ub_off, const void* gm, uint64_t n, const void* tbase,
              uint64_t tbytes, ::evk_sim::SrcLoc loc);
void ub_to_gm(const char* op, int buf, int64_t ub_off, void* gm, uint64_t n, const void* tbase, uint64_t tbytes,
              int kind, ::evk_sim::SrcLoc loc);
void ub_to_ub(const char* op, int dbuf, int64_t doff, int sbuf, int64_t soff, uint64_t n, ::evk_sim::SrcLoc loc);
void tail_check(const char* op, uint64_t count, uint32_t esize, const char* dtype, ::evk_sim::SrcLoc loc);
void gm_align_check(const char* op, const void* p, uint32_t esize, ::evk_sim::SrcLoc loc);
bool copy_params_check(const char* op, uint32_t blockCount, uint32_t blockLen, uint32_t maxLen, ::evk_sim::SrcLoc loc);
void pad_fill(const char* op, int buf, int64_t off, uint64_t nbytes, const void* value, uint32_t esize, bool is_pad,
              ::evk_sim::SrcLoc loc);
// L1 -> bias table (cube.h): a local-to-local DataCopy whose destination is in the bias table (TPosition C2)
template <typename TD, typename TS>
void l1_to_bt(const LocalTensor<TD>& dst, const LocalTensor<TS>& src, uint32_t blockCount, uint64_t blockBytes,
              uint32_t srcGap, uint32_t dstGap, ::evk_sim::SrcLoc loc);
inline bool to_bias_table(int dst_buf) { return ::evk_sim::mem_of_buf(dst_buf) == ::evk_sim::MEM_BT; }
// Stores n bytes at GM address gm (atomic accumulation when SetAtomicAdd/Max/Min is on).
void gm_store(const char* op, void* gm, const uint8_t* src, uint64_t n, const void* tbase, uint64_t tbytes, int kind,
              ::evk_sim::SrcLoc loc);
}  // namespace evk_detail

// count form (count * sizeof(T) should be a multiple of 32 bytes; the tail is dropped otherwise)
template <typename T> inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const uint32_t count, EVK_LOC) {
    ::evk_sim::begin_instr(::evk_sim::PID_MTE2);
    evk_detail::valid(dst.buf_, "DataCopy", loc);
    evk_detail::tail_check("DataCopy GM->UB", count, sizeof(T), ::evk_sim::Ty<T>::name, loc);
    evk_detail::gm_align_check("DataCopy GM->UB", src.address_, sizeof(T), loc);
    ::evk_sim::ub_align("DataCopy GM->UB", "dst", dst.off_, 32, loc.file, loc.line);
    uint64_t n = (static_cast<uint64_t>(count) * sizeof(T)) & ~31ull;
    evk_detail::gm_to_ub("DataCopy GM->UB", dst.buf_, dst.off_, src.address_, n, src.address_, src.tensor_bytes_(), loc);
    ::evk_sim::count_mte(::evk_sim::PID_MTE2, n, 1);
}
template <typename T> inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count, EVK_LOC) {
    ::evk_sim::begin_instr(::evk_sim::PID_MTE3);
    evk_detail::valid(src.buf_, "DataCopy", loc);
    evk_detail::tail_check("DataCopy UB->GM", count, sizeof(T), ::evk_sim::Ty<T>::name, loc);
    evk_detail::gm_align_check("DataCopy UB->GM", dst.address_, sizeof(T), loc);
    ::evk_sim::ub_align("DataCopy UB->GM", "src", src.off_, 32, loc.file, loc.line);
    uint64_t n = (static_cast<uint64_t>(count) * sizeof(T)) & ~31ull;
    evk_detail::ub_to_gm("DataCopy UB->GM", src.buf_, src.off_, dst.address_, n, dst.address_, dst.tensor_bytes_(),
                         ::evk_sim::Ty<T>::kind, loc);
    ::evk_sim::count_mte(::evk_sim::PID_MTE3, n, 1);
}
template <typename T> inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count, EVK_LOC) {
    if (evk_detail::to_bias_table(dst.buf_)) {
        evk_detail::tail_check("DataCopy L1->BT", count, sizeof(T), ::evk_sim::Ty<T>::name, loc);
        evk_detail::l1_to_bt(dst, src, 1, (static_cast<uint64_t>(count) * sizeof(T)) & ~31ull, 0, 0, loc);
        return;
    }
    ::evk_sim::begin_instr(::evk_sim::PID_V);
    evk_detail::valid(dst.buf_, "DataCopy", loc);
    evk_detail::valid(src.buf_, "DataCopy", loc);
    evk_detail::tail_check("DataCopy UB->UB", count, sizeof(T), ::evk_sim::Ty<T>::name, loc);
    ::evk_sim::ub_align("DataCopy UB->UB", "dst", dst.off_, 32, loc.file, loc.line);
    ::evk_sim::ub_align("DataCopy UB->UB", "src", src.off_, 32, loc.file, loc.line);
    uint64_t n = (static_cast<uint64_t>(count) * sizeof(T)) & ~31ull;
    evk_detail::ub_to_ub("DataCopy UB->UB", dst.buf_, dst.off_, src.buf_, src.off_, n, loc);
    ::evk_sim::count_ub_copy(n);
}

// Global memory initialisation (Fill, newer CANN: InitGlobalMemory): size elements of value written to GM by
// the vector core (modelled as one UB -> GM copy on MTE3).
template <typename T> inline void Fill(const GlobalTensor<T>& gmWorkspaceAddr, const uint64_t size, const T value,
                                       EVK_LOC) {
    ::evk_sim::begin_instr(::evk_sim::PID_MTE3);
    evk_detail::gm_align_check("Fill", gmWorkspaceAddr.address_, sizeof(T), loc);
    uint8_t chunk[1024];
    const uint64_t per = sizeof(chunk) / sizeof(T);
    for (uint64_t i = 0; i < per; ++i) std::memcpy(chunk + i * sizeof(T), &value, sizeof(T));
    for (uint64_t done = 0; done < size; done += per) {
        const uint64_t n = (size - done < per ? size - done : per) * sizeof(T);
        T* at = gmWorkspaceAddr.address_ + done;
        ::evk_sim::tm_gm_segment(at, n);
        evk_detail::gm_store("Fill", at, chunk, n, gmWorkspaceAddr.address_, gmWorkspaceAddr.tensor_bytes_(),
                             ::evk_sim::Ty<T>::kind, loc);
    }
    ::evk_sim::count_mte(::evk_sim::PID_MTE3, size * sizeof(T), 1);
}
template <typename T> inline void InitGlobalMemory(const GlobalTensor<T>& gmWorkspaceAddr, const uint64_t size,
                                                   const T value, EVK_LOC) {
    Fill(gmWorkspaceAddr, size, value, loc);
}

// DataCopyParams form: blockCount blocks of blockLen 32-byte units; strides are gaps in 32-byte units.
template <typename T> inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src,
                                           const DataCopyParams& p, EVK_LOC) {
    ::evk_sim::begin_instr(::evk_sim::PID_MTE2);
    evk_detail::valid(dst.buf_, "DataCopy", loc);
    evk_detail::gm_align_check("DataCopy GM->UB", src.address_, sizeof(T), loc);
    ::evk_sim::ub_align("DataCopy GM->UB", "dst", dst.off_, 32, loc.file, loc.line);
    if (!evk_detail::copy_params_check("DataCopy GM->UB", p.blockCount, p.blockLen, 65535, loc)) return;
    const uint64_t n = static_cast<uint64_t>(p.blockLen) * 32;
    for (uint32_t i = 0; i < p.blockCount; ++i) {
        const uint8_t* g = reinterpret_cast<const uint8_t*>(src.address_) + i * (n + static_cast<uint64_t>(p.srcStride) * 32);
        int64_t u = dst.off_ + static_cast<int64_t>(i) * static_cast<int64_t>(n + static_cast<uint64_t>(p.dstStride) * 32);
        evk_detail::gm_to_ub("DataCopy GM->UB", dst.buf_, u, g, n, src.address_, src.tensor_bytes_(), loc);
    }
    ::evk_sim::count_mte(::evk_sim::PID_MTE2, n * p.blockCount, p.blockCount);
}
template <typename T> inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src,
                                           const DataCopyParams& p, EVK_LOC) {
    ::evk_sim::begin_instr(::evk_sim::PID_MTE3);
    evk_detail::valid(src.buf_, "DataCopy", loc);
    evk_detail::gm_align_check("DataCopy UB->GM", dst.address_, sizeof(T), loc);
    ::evk_sim::ub_align("DataCopy UB->GM", "src", src.off_, 32, loc.file, loc.line);
    if (!evk_detail::copy_params_check("DataCopy UB->GM", p.blockCount, p.blockLen, 65535, loc)) return;
    const uint64_t n = static_cast<uint64_t>(p.blockLen) * 32;
    for (uint32_t i = 0; i < p.blockCount; ++i) {
        uint8_t* g = reinterpret_cast<uint8_t*>(dst.address_) + i * (n + static_cast<uint64_t>(p.dstStride) * 32);
        int64_t u = src.off_ + static_cast<int64_t>(i) * static_cast<int64_t>(n + static_cast<uint64_t>(p.srcStride) * 32);
        evk_detail::ub_to_gm("DataCopy UB->GM", src.buf_, u, g, n, dst.address_, dst.tensor_bytes_(), ::evk_sim::Ty<T>::kind, loc);
    }
    ::evk_sim::count_mte(::evk_sim::PID_MTE3, n * p.blockCount, p.blockCount);
}
template <typename T> inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                           const DataCopyParams& p, EVK_LOC) {
    if (evk_detail::to_bias_table(dst.buf_)) {
        evk_detail::l1_to_bt(dst, src, p.blockCount, static_cast<uint64_t>(p.blockLen) * 64, p.srcStride, p.dstStride,
                             loc);
        return;
    }
    ::evk_sim::begin_instr(::evk_sim::PID_V);
    evk_detail::valid(dst.buf_, "DataCopy", loc);
    evk_detail::valid(src.buf_, "DataCopy", loc);
    ::evk_sim::ub_align("DataCopy UB->UB", "dst", dst.off_, 32, loc.file, loc.line);
    ::evk_sim::ub_align("DataCopy UB->UB", "src", src.off_, 32, loc.file, loc.line);
    if (!evk_detail::copy_params_check("DataCopy UB->UB", p.blockCount, p.blockLen, 65535, loc)) return;
    const uint64_t n = static_cast<uint64_t>(p.blockLen) * 32;
    for (uint32_t i = 0; i < p.blockCount; ++i) {
        int64_t s = src.off_ + static_cast<int64_t>(i) * static_cast<int64_t>(n + static_cast<uint64_t>(p.srcStride) * 32);
        int64_t d = dst.off_ + static_cast<int64_t>(i) * static_cast<int64_t>(n + static_cast<uint64_t>(p.dstStride) * 32);
        evk_detail::ub_to_ub("DataCopy UB->UB", dst.buf_, d, src.buf_, s, n, loc);
    }
    ::evk_sim::count_ub_copy(n * p.blockCount);
}

// DataCopyPad: byte lengths; GM strides in bytes, UB strides in 32-byte blocks; each block lands on
// a 32-byte boundary in UB, padded (leftPadding/rightPadding elements of paddingValue when isPad).
namespace evk_detail {
template <typename T>
inline void pad_gm_to_ub(const LocalTensor<T>& dst, const GlobalTensor<T>& src, uint32_t blockCount, uint32_t blockLen,
                         uint64_t srcStride, uint64_t dstStride, bool isPad, uint32_t lp, uint32_t rp, T value,
                         ::evk_sim::SrcLoc loc) {
    const char* op = "DataCopyPad GM->UB";
    ::evk_sim::begin_instr(::evk_sim::PID_MTE2);
    valid(dst.buf_, "DataCopyPad", loc);
    gm_align_check(op, src.address_, sizeof(T), loc);
    ::evk_sim::ub_align(op, "dst", dst.off_, 32, loc.file, loc.line);
    if (!copy_params_check(op, blockCount, blockLen, 2097151, loc)) return;
    if (lp * sizeof(T) > 32 || rp * sizeof(T) > 32)
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: leftPadding=%u/rightPadding=%u elements exceed 32 bytes of %s", op, lp, rp,
                             ::evk_sim::Ty<T>::name);
    if (blockLen % sizeof(T) != 0)
        ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "%s: blockLen=%u bytes is not a whole number of %s elements", op, blockLen,
                             ::evk_sim::Ty<T>::name);
    const uint64_t lb = lp * sizeof(T), rb = rp * sizeof(T);
    const uint64_t row = (lb + blockLen + rb + 31) & ~31ull;
    for (uint32_t i = 0; i < blockCount; ++i) {
        const uint8_t* g = reinterpret_cast<const uint8_t*>(src.address_) + i * (blockLen + srcStride);
        int64_t u = dst.off_ + static_cast<int64_t>(i) * static_cast<int64_t>(row + dstStride * 32);
        if (lb) pad_fill(op, dst.buf_, u, lb, &value, sizeof(T), isPad, loc);
        gm_to_ub(op, dst.buf_, u + lb, g, blockLen, src.address_, src.tensor_bytes_(), loc);
        if (row > lb + blockLen) pad_fill(op, dst.buf_, u + lb + blockLen, row - lb - blockLen, &value, sizeof(T),
                                          isPad, loc);
    }
    ::evk_sim::count_mte(::evk_sim::PID_MTE2, static_cast<uint64_t>(blockLen) * blockCount, blockCount);
}
template <typename T>
inline void pad_ub_to_gm(const GlobalTensor<T>& dst, const LocalTensor<T>& src, uint32_t blockCount, uint32_t blockLen,
                         uint64_t srcStride, uint64_t dstStride, ::evk_sim::SrcLoc loc) {
    const char* op = "DataCopyPad UB->GM";
    ::evk_sim::begin_instr(::evk_sim::PID_MTE3);
    valid(src.buf_, "DataCopyPad", loc);
    gm_align_check(op, dst.address_, sizeof(T), loc);
    ::evk_sim::ub_align(op, "src", src.off_, 32, loc.file, loc.line);
    if (!copy_params_check(op, blockCount, blockLen, 2097151, loc)) return;
    const uint64_t row = (static_cast<uint64_t>(blockLen) + 31) & ~31ull;
    for (uint32_t i = 0; i < blockCount; ++i) {
        uint8_t* g = reinterpret_cast<uint8_t*>(dst.address_) + i * (blockLen + dstStride);
        int64_t u = src.off_ + static_cast<int64_t>(i) * static_cast<int64_t>(row + srcStride * 32);
        ub_to_gm(op, src.buf_, u, g, blockLen, dst.address_, dst.tensor_bytes_(), ::evk_sim::Ty<T>::kind, loc);
    }
    ::evk_sim::count_mte(::evk_sim::PID_MTE3, static_cast<uint64_t>(blockLen) * blockCount, blockCount);
}
}  // namespace evk_detail

template <typename T>
inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyExtParams& p,
                        const DataCopyPadExtParams<T>& pad, EVK_LOC) {
    evk_detail::pad_gm_to_ub(dst, src, p.blockCount, p.blockLen, p.srcStride, p.dstStride, pad.isPad,
                             pad.leftPadding, pad.rightPadding, pad.paddingValue, loc);
}
template <typename T>
inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyExtParams& p, EVK_LOC) {
    evk_detail::pad_ub_to_gm(dst, src, p.blockCount, p.blockLen, p.srcStride, p.dstStride, loc);
}
template <typename T>
inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p,
                        const DataCopyPadParams& pad, EVK_LOC) {
    T value;
    std::memcpy(&value, &pad.paddingValue, sizeof(T) < 8 ? sizeof(T) : 8);
    evk_detail::pad_gm_to_ub(dst, src, p.blockCount, p.blockLen, p.srcStride, p.dstStride, pad.isPad,
                             pad.leftPadding, pad.rightPadding, value, loc);
}
template <typename T>
inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p, EVK_LOC) {
    evk_detail::pad_ub_to_gm(dst, src, p.blockCount, p.blockLen, p.srcStride, p.dstStride, loc);
}

// ---------------------------------------------------------------------------------------------
// Vector instructions: generic drivers
// ---------------------------------------------------------------------------------------------
namespace evk_detail {
using ::evk_sim::ld;
using ::evk_sim::st;
using ::evk_sim::Ty;

template <typename T> constexpr int lanes_of() { return 256 / static_cast<int>(sizeof(T)); }

// dst[i] = f(src[i]) for i < count
template <typename TD, typename TS, typename F>
inline void unary_count(const char* op, uint32_t allowed, const LocalTensor<TD>& dst, const LocalTensor<TS>& src,
                        int64_t count, F f, ::evk_sim::SrcLoc loc, const char* dtype = nullptr) {
    ::evk_sim::dtype_check(op, Ty<TD>::kind, allowed, loc.file, loc.line);
    ::evk_sim::TD d = dst.td(), s = src.td();
    int64_t n = ::evk_sim::vec_lanes_prologue(op, dtype ? dtype : Ty<TD>::name, &d, &s, 1, count, nullptr, false,
                                              loc.file, loc.line);
    uint64_t ovf = 0;
    for (int64_t i = 0; i < n; ++i)
        st<TD>(d.off + i * sizeof(TD), f(ld<TS>(s.off + i * sizeof(TS))), ovf);
    if (ovf) ::evk_sim::report_half_overflow(op, ovf, loc.file, loc.line);
}
// dst[i] = f(a[i], b[i])
template <typename T, typename F>
inline void binary_count(const char* op, uint32_t allowed, const LocalTensor<T>& dst, const LocalTensor<T>& a,
                         const LocalTensor<T>& b, int64_t count, F f, ::evk_sim::SrcLoc loc) {
    ::evk_sim::dtype_check(op, Ty<T>::kind, allowed, loc.file, loc.line);
    ::evk_sim::TD d = dst.td(), s[2] = {a.td(), b.td()};
    int64_t n = ::evk_sim::vec_lanes_prologue(op, Ty<T>::name, &d, s, 2, count, nullptr, false, loc.file, loc.line);
    uint64_t ovf = 0;
    for (int64_t i = 0; i < n; ++i)
        st<T>(d.off + i * sizeof(T), f(ld<T>(s[0].off + i * sizeof(T)), ld<T>(s[1].off + i * sizeof(T))), ovf);
    if (ovf) ::evk_sim::report_half_overflow(op, ovf, loc.file, loc.line);
}
// dst[i] = f(a[i], b[i], dst[i])  (dst is read too)
template <typename T, typename F>
inline void ternary_count(const char* op, uint32_t allowed, const LocalTensor<T>& dst, const LocalTensor<T>& a,
                          const LocalTensor<T>& b, int64_t count, F f, ::evk_sim::SrcLoc loc) {
    ::evk_sim::dtype_check(op, Ty<T>::kind, allowed, loc.file, loc.line);
    ::evk_sim::TD d = dst.td(), s[3] = {a.td(), b.td(), dst.td()};
    int64_t n = ::evk_sim::vec_lanes_prologue(op, Ty<T>::name, &d, s, 3, count, nullptr, false, loc.file, loc.line);
    uint64_t ovf = 0;
    for (int64_t i = 0; i < n; ++i)
        st<T>(d.off + i * sizeof(T),
              f(ld<T>(s[0].off + i * sizeof(T)), ld<T>(s[1].off + i * sizeof(T)), ld<T>(d.off + i * sizeof(T))), ovf);
    if (ovf) ::evk_sim::report_half_overflow(op, ovf, loc.file, loc.line);
}

// Mask/repeat forms.
template <typename TD, typename TS, typename F>
inline void unary_mask(const char* op, uint32_t allowed, const LocalTensor<TD>& dst, const LocalTensor<TS>& src,
                       const ::evk_sim::Plan& plan, const UnaryRepeatParams& p, F f, ::evk_sim::SrcLoc loc,
                       const char* dtype = nullptr) {
    ::evk_sim::dtype_check(op, Ty<TD>::kind, allowed, loc.file, loc.line);
    valid(dst.buf_, op, loc);
    valid(src.buf_, op, loc);
    ::evk_sim::MD m[3] = {{src.buf_, src.off_, sizeof(TS), p.srcBlkStride, p.srcRepStride, false},
                          {dst.buf_, dst.off_, sizeof(TD), p.dstBlkStride, p.dstRepStride, false},
                          {dst.buf_, dst.off_, sizeof(TD), p.dstBlkStride, p.dstRepStride, true}};
    ::evk_sim::MD ops[2] = {m[0], m[2]};
    if (!::evk_sim::vec_mask_prologue(op, dtype ? dtype : Ty<TD>::name, plan, ops, 2, loc.file, loc.line)) return;
    uint64_t ovf = 0;
    for (int r = 0; r < plan.repeats; ++r)
        for (int l = 0; l < plan.lanes; ++l) {
            if (!::evk_sim::plan_active(plan, r, l)) continue;
            int64_t so = ::evk_sim::lane_addr(m[0], r, l), dof = ::evk_sim::lane_addr(m[2], r, l);
            st<TD>(dof, f(ld<TS>(so), ld<TD>(dof)), ovf);
        }
    if (ovf) ::evk_sim::report_half_overflow(op, ovf, loc.file, loc.line);
}
template <typename T, typename F>
inline void binary_mask(const char* op, uint32_t allowed, const LocalTensor<T>& dst, const LocalTensor<T>& a,
                        const LocalTensor<T>& b, const ::evk_sim::Plan& plan, const BinaryRepeatParams& p, F f,
                        ::evk_sim::SrcLoc loc, bool dst_read = false) {
    ::evk_sim::dtype_check(op, Ty<T>::kind, allowed, loc.file, loc.line);
    valid(dst.buf_, op, loc);
    valid(a.buf_, op, loc);
    valid(b.buf_, op, loc);
    ::evk_sim::MD m[4] = {{a.buf_, a.off_, sizeof(T), p.src0BlkStride, p.src0RepStride, false},
                          {b.buf_, b.off_, sizeof(T), p.src1BlkStride, p.src1RepStride, false},
                          {dst.buf_, dst.off_, sizeof(T), p.dstBlkStride, p.dstRepStride, false},
                          {dst.buf_, dst.off_, sizeof(T), p.dstBlkStride, p.dstRepStride, true}};
    ::evk_sim::MD mm[3] = {m[0], m[1], m[3]};
    bool ok = dst_read ? ::evk_sim::vec_mask_prologue(op, Ty<T>::name, plan, m, 4, loc.file, loc.line)
                       : ::evk_sim::vec_mask_prologue(op, Ty<T>::name, plan, mm, 3, loc.file, loc.line);
    if (!ok) return;
    uint64_t ovf = 0;
    for (int r = 0; r < plan.repeats; ++r)
        for (int l = 0; l < plan.lanes; ++l) {
            if (!::evk_sim::plan_active(plan, r, l)) continue;
            int64_t ao = ::evk_sim::lane_addr(m[0], r, l), bo = ::evk_sim::lane_addr(m[1], r, l),
                    dof = ::evk_sim::lane_addr(m[3], r, l);
            st<T>(dof, f(ld<T>(ao), ld<T>(bo), ld<T>(dof)), ovf);
        }
    if (ovf) ::evk_sim::report_half_overflow(op, ovf, loc.file, loc.line);
}
template <typename T> inline ::evk_sim::Plan plan_c(const char* op, uint64_t mask, int repeat, bool isSetMask, int lanes,
                                                    ::evk_sim::SrcLoc loc) {
    return ::evk_sim::plan_continuous(op, mask, repeat, lanes, isSetMask, loc.file, loc.line);
}
template <typename T> inline ::evk_sim::Plan plan_b(const char* op, const uint64_t* mask, int repeat, bool isSetMask,
                                                    int lanes, ::evk_sim::SrcLoc loc) {
    return ::evk_sim::plan_bitwise(op, mask, repeat, lanes, isSetMask, loc.file, loc.line);
}

// Element functions. C is float for floating types, int64_t for integers.
struct FAdd { template <class C> C operator()(C a, C b, C = C()) const { return a + b; } };
struct FSub { template <class C> C operator()(C a, C b, C = C()) const { return a - b; } };
struct FMul { template <class C> C operator()(C a, C b, C = C()) const { return a * b; } };
struct FDiv {
    template <class C> C operator()(C a, C b, C = C()) const {
        if constexpr (std::is_integral<C>::value) return b == 0 ? 0 : a / b;
        else return a / b;
    }
};
struct FMax {
    template <class C> C operator()(C a, C b, C = C()) const {
        if constexpr (!std::is_integral<C>::value) { if (std::isnan(a) || std::isnan(b)) return a + b; }
        return a > b ? a : b;
    }
};
struct FMin {
    template <class C> C operator()(C a, C b, C = C()) const {
        if constexpr (!std::is_integral<C>::value) { if (std::isnan(a) || std::isnan(b)) return a + b; }
        return a < b ? a : b;
    }
};
struct FAnd { template <class C> C operator()(C a, C b, C = C()) const { return static_cast<C>(static_cast<int64_t>(a) & static_cast<int64_t>(b)); } };
struct FOr { template <class C> C operator()(C a, C b, C = C()) const { return static_cast<C>(static_cast<int64_t>(a) | static_cast<int64_t>(b)); } };
struct FAddRelu { template <class C> C operator()(C a, C b, C = C()) const { C r = a + b; return r > 0 ? r : C(0); } };
struct FSubRelu { template <class C> C operator()(C a, C b, C = C()) const { C r = a - b; return r > 0 ? r : C(0); } };
struct FFusedMulAdd { template <class C> C operator()(C a, C b, C d) const { return a * d + b; } };  // src0*dst + src1
struct FMulAddDst { template <class C> C operator()(C a, C b, C d) const { return a * b + d; } };    // src0*src1 + dst
}  // namespace evk_detail

// ---- binary ------------------------------------------------------------------------------------
#define EVK_BINARY(NAME, FUNC, ALLOWED, DSTREAD)                                                                  \
    template <typename T, bool isSetMask = true>                                                                  \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,          \
                     const int32_t& count, EVK_LOC) {                                                             \
        if constexpr (DSTREAD)                                                                                    \
            evk_detail::ternary_count(#NAME, ALLOWED, dst, src0, src1, count, evk_detail::FUNC(), loc);           \
        else                                                                                                      \
            evk_detail::binary_count(#NAME, ALLOWED, dst, src0, src1, count,                                      \
                                     [](auto a, auto b) { return evk_detail::FUNC()(a, b, decltype(a)()); }, loc); \
    }                                                                                                             \
    template <typename T, bool isSetMask = true>                                                                  \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,          \
                     uint64_t mask, const uint8_t repeatTime, const BinaryRepeatParams& repeatParams, EVK_LOC) {   \
        auto plan = evk_detail::plan_c<T>(#NAME, mask, repeatTime, isSetMask, evk_detail::lanes_of<T>(), loc);     \
        evk_detail::binary_mask(#NAME, ALLOWED, dst, src0, src1, plan, repeatParams, evk_detail::FUNC(), loc,      \
                                DSTREAD);                                                                         \
    }                                                                                                             \
    template <typename T, bool isSetMask = true>                                                                  \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,          \
                     uint64_t mask[], const uint8_t repeatTime, const BinaryRepeatParams& repeatParams, EVK_LOC) { \
        auto plan = evk_detail::plan_b<T>(#NAME, mask, repeatTime, isSetMask, evk_detail::lanes_of<T>(), loc);     \
        evk_detail::binary_mask(#NAME, ALLOWED, dst, src0, src1, plan, repeatParams, evk_detail::FUNC(), loc,      \
                                DSTREAD);                                                                         \
    }

EVK_BINARY(Add, FAdd, ::evk_sim::DT_HF_I16_I32, false)
EVK_BINARY(Sub, FSub, ::evk_sim::DT_HF_I16_I32, false)
EVK_BINARY(Mul, FMul, ::evk_sim::DT_HF_I16_I32, false)
EVK_BINARY(Div, FDiv, ::evk_sim::DT_HF, false)
EVK_BINARY(Max, FMax, ::evk_sim::DT_HF_I16_I32, false)
EVK_BINARY(Min, FMin, ::evk_sim::DT_HF_I16_I32, false)
EVK_BINARY(And, FAnd, ::evk_sim::DT_B16, false)
EVK_BINARY(Or, FOr, ::evk_sim::DT_B16, false)
EVK_BINARY(AddRelu, FAddRelu, ::evk_sim::DT_HF_I16_I32, false)
EVK_BINARY(SubRelu, FSubRelu, ::evk_sim::DT_HF_I16_I32, false)
EVK_BINARY(FusedMulAdd, FFusedMulAdd, ::evk_sim::DT_HF, true)
EVK_BINARY(MulAddDst, FMulAddDst, ::evk_sim::DT_HF, true)
#undef EVK_BINARY

// ---- unary -------------------------------------------------------------------------------------
namespace evk_detail {
// Rsqrt/Reciprocal are approximate on the device (the docs say they miss 1e-4 (float) / 1e-3
// (half) relative accuracy); the emulator keeps that many fraction bits.
template <typename T> inline float approx(float v) {
    uint32_t u = ::evk_sim::f32_bits(v);
    const int keep = ::evk_sim::is_half_t<T>::value ? 9 : 12;
    if (std::isfinite(v)) u &= ~((1u << (23 - keep)) - 1u);
    return ::evk_sim::bits_f32(u);
}
template <class C> inline C fabs_(C a) { return a < 0 ? -a : a; }
}  // namespace evk_detail

#define EVK_UNARY(NAME, EXPR, ALLOWED, APPROX)                                                                    \
    template <typename T, bool isSetMask = true>                                                                  \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count, EVK_LOC) {       \
        if (APPROX) ::evk_sim::report_low_precision(#NAME, ::evk_sim::Ty<T>::name, loc.file, loc.line);           \
        evk_detail::unary_count(#NAME, ALLOWED, dst, src, count, [](auto x) { using C = decltype(x); (void)sizeof(C); return EXPR; }, loc); \
    }                                                                                                             \
    template <typename T, bool isSetMask = true>                                                                  \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint64_t mask,                        \
                     const uint8_t repeatTime, const UnaryRepeatParams& repeatParams, EVK_LOC) {                  \
        if (APPROX) ::evk_sim::report_low_precision(#NAME, ::evk_sim::Ty<T>::name, loc.file, loc.line);           \
        auto plan = evk_detail::plan_c<T>(#NAME, mask, repeatTime, isSetMask, evk_detail::lanes_of<T>(), loc);     \
        evk_detail::unary_mask(#NAME, ALLOWED, dst, src, plan, repeatParams,                                      \
                               [](auto x, auto) { using C = decltype(x); (void)sizeof(C); return EXPR; }, loc);   \
    }                                                                                                             \
    template <typename T, bool isSetMask = true>                                                                  \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint64_t mask[],                      \
                     const uint8_t repeatTime, const UnaryRepeatParams& repeatParams, EVK_LOC) {                  \
        if (APPROX) ::evk_sim::report_low_precision(#NAME, ::evk_sim::Ty<T>::name, loc.file, loc.line);           \
        auto plan = evk_detail::plan_b<T>(#NAME, mask, repeatTime, isSetMask, evk_detail::lanes_of<T>(), loc);     \
        evk_detail::unary_mask(#NAME, ALLOWED, dst, src, plan, repeatParams,                                      \
                               [](auto x, auto) { using C = decltype(x); (void)sizeof(C); return EXPR; }, loc);   \
    }

EVK_UNARY(Exp, static_cast<C>(::evk_sim::m::exp(x)), ::evk_sim::DT_HF, false)
EVK_UNARY(Ln, static_cast<C>(::evk_sim::m::log(x)), ::evk_sim::DT_HF, false)
EVK_UNARY(Abs, evk_detail::fabs_(x), ::evk_sim::DT_HF, false)
EVK_UNARY(Sqrt, static_cast<C>(std::sqrt(x)), ::evk_sim::DT_HF, false)
EVK_UNARY(Rsqrt, static_cast<C>(evk_detail::approx<T>(1.0f / std::sqrt(static_cast<float>(x)))), ::evk_sim::DT_HF, true)
EVK_UNARY(Reciprocal, static_cast<C>(evk_detail::approx<T>(1.0f / static_cast<float>(x))), ::evk_sim::DT_HF, true)
EVK_UNARY(Relu, (x > C(0) ? x : C(0)), ::evk_sim::DT_HF | ::evk_sim::bit(::evk_sim::DK_I32), false)
EVK_UNARY(Not, static_cast<C>(~static_cast<int64_t>(x)), ::evk_sim::DT_B16, false)
#undef EVK_UNARY

// ---- tensor-scalar -----------------------------------------------------------------------------
#define EVK_SCALAR(NAME, EXPR, ALLOWED)                                                                           \
    template <typename T, bool isSetMask = true>                                                                  \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,                 \
                     const int32_t& count, EVK_LOC) {                                                             \
        using C = typename ::evk_sim::Ty<T>::C;                                                                   \
        const C s = static_cast<C>(scalarValue);                                                                  \
        evk_detail::unary_count(#NAME, ALLOWED, dst, src, count, [s](C x) { return EXPR; }, loc);                 \
    }                                                                                                             \
    template <typename T, bool isSetMask = true>                                                                  \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, uint64_t mask,  \
                     const uint8_t repeatTime, const UnaryRepeatParams& repeatParams, EVK_LOC) {                  \
        using C = typename ::evk_sim::Ty<T>::C;                                                                   \
        const C s = static_cast<C>(scalarValue);                                                                  \
        auto plan = evk_detail::plan_c<T>(#NAME, mask, repeatTime, isSetMask, evk_detail::lanes_of<T>(), loc);     \
        evk_detail::unary_mask(#NAME, ALLOWED, dst, src, plan, repeatParams, [s](C x, C) { return EXPR; }, loc);   \
    }                                                                                                             \
    template <typename T, bool isSetMask = true>                                                                  \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, uint64_t mask[],\
                     const uint8_t repeatTime, const UnaryRepeatParams& repeatParams, EVK_LOC) {                  \
        using C = typename ::evk_sim::Ty<T>::C;                                                                   \
        const C s = static_cast<C>(scalarValue);                                                                  \
        auto plan = evk_detail::plan_b<T>(#NAME, mask, repeatTime, isSetMask, evk_detail::lanes_of<T>(), loc);     \
        evk_detail::unary_mask(#NAME, ALLOWED, dst, src, plan, repeatParams, [s](C x, C) { return EXPR; }, loc);   \
    }

EVK_SCALAR(Adds, x + s, ::evk_sim::DT_HF_I16_I32)
EVK_SCALAR(Muls, x * s, ::evk_sim::DT_HF_I16_I32)
EVK_SCALAR(Maxs, (evk_detail::FMax()(x, s)), ::evk_sim::DT_HF_I16_I32)
EVK_SCALAR(Mins, (evk_detail::FMin()(x, s)), ::evk_sim::DT_HF_I16_I32)
EVK_SCALAR(LeakyRelu, (x >= C(0) ? x : x * s), ::evk_sim::DT_HF)
// ShiftLeft/ShiftRight ("逻辑计算/ShiftLeft.md", "ShiftRight.md"): A2 types int16/uint16/int32/uint32; a right
// shift is logical for unsigned and arithmetic for signed types (the element is held sign- or zero-extended in
// int64 here, and stored back truncated to T); shift counts up to the type's width (16 or 32) are documented.
EVK_SCALAR(ShiftLeft, static_cast<C>(static_cast<uint64_t>(x) << (static_cast<uint64_t>(s) & 63)), ::evk_sim::DT_SHIFT)
EVK_SCALAR(ShiftRight, static_cast<C>(x >> (static_cast<uint64_t>(s) & 63)), ::evk_sim::DT_SHIFT)
#undef EVK_SCALAR

// Axpy: dst = src * scalar + dst
template <typename T, typename U, bool isSetMask = true>
inline void Axpy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const U scalarValue, const int32_t& count, EVK_LOC) {
    using C = typename ::evk_sim::Ty<T>::C;
    const C s = static_cast<C>(static_cast<float>(scalarValue));
    ::evk_sim::dtype_check("Axpy", ::evk_sim::Ty<T>::kind, ::evk_sim::DT_HF, loc.file, loc.line);
    ::evk_sim::TD d = dst.td(), sr[2] = {src.td(), dst.td()};
    int64_t n = ::evk_sim::vec_count_prologue("Axpy", ::evk_sim::Ty<T>::name, &d, sr, 2, count, 0, loc.file, loc.line);
    uint64_t ovf = 0;
    for (int64_t i = 0; i < n; ++i)
        ::evk_sim::st<T>(d.off + i * sizeof(T),
                         static_cast<C>(::evk_sim::ld<U>(sr[0].off + i * sizeof(U))) * s + ::evk_sim::ld<T>(d.off + i * sizeof(T)),
                         ovf);
    if (ovf) ::evk_sim::report_half_overflow("Axpy", ovf, loc.file, loc.line);
}

// ---- Duplicate ---------------------------------------------------------------------------------
template <typename T, bool isSetMask = true>
inline void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, const int32_t& count, EVK_LOC) {
    const char* op = "Duplicate";
    ::evk_sim::dtype_check(op, ::evk_sim::Ty<T>::kind,
                           ::evk_sim::DT_HF | ::evk_sim::DT_B16 | ::evk_sim::bit(::evk_sim::DK_BF16) |
                               ::evk_sim::bit(::evk_sim::DK_I32) | ::evk_sim::bit(::evk_sim::DK_U32),
                           loc.file, loc.line);
    ::evk_sim::TD d = dst.td();
    int64_t n = ::evk_sim::vec_count_prologue(op, ::evk_sim::Ty<T>::name, &d, nullptr, 0, count, 0, loc.file, loc.line);
    for (int64_t i = 0; i < n; ++i) std::memcpy(::evk_sim::g_ub + d.off + i * sizeof(T), &scalarValue, sizeof(T));
}
namespace evk_detail {
template <typename T>
inline void dup_mask(const LocalTensor<T>& dst, const T& v, const ::evk_sim::Plan& plan, uint16_t blk, uint8_t rep,
                     ::evk_sim::SrcLoc loc) {
    valid(dst.buf_, "Duplicate", loc);
    ::evk_sim::MD m = {dst.buf_, dst.off_, sizeof(T), blk, rep, true};
    if (!::evk_sim::vec_mask_prologue("Duplicate", ::evk_sim::Ty<T>::name, plan, &m, 1, loc.file, loc.line)) return;
    for (int r = 0; r < plan.repeats; ++r)
        for (int l = 0; l < plan.lanes; ++l)
            if (::evk_sim::plan_active(plan, r, l)) std::memcpy(::evk_sim::g_ub + ::evk_sim::lane_addr(m, r, l), &v, sizeof(T));
}
}  // namespace evk_detail
template <typename T, bool isSetMask = true>
inline void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, uint64_t mask, const uint8_t repeatTime,
                      const uint16_t dstBlockStride, const uint8_t dstRepeatStride, EVK_LOC) {
    auto plan = evk_detail::plan_c<T>("Duplicate", mask, repeatTime, isSetMask, evk_detail::lanes_of<T>(), loc);
    evk_detail::dup_mask(dst, scalarValue, plan, dstBlockStride, dstRepeatStride, loc);
}
template <typename T, bool isSetMask = true>
inline void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, uint64_t mask[], const uint8_t repeatTime,
                      const uint16_t dstBlockStride, const uint8_t dstRepeatStride, EVK_LOC) {
    auto plan = evk_detail::plan_b<T>("Duplicate", mask, repeatTime, isSetMask, evk_detail::lanes_of<T>(), loc);
    evk_detail::dup_mask(dst, scalarValue, plan, dstBlockStride, dstRepeatStride, loc);
}

// ---- Brcb: each of 8 source elements per repeat fills one 32-byte block ------------------------------
template <typename T>
inline void Brcb(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint8_t repeatTime,
                 const BrcbRepeatParams& p, EVK_LOC) {
    const char* op = "Brcb";
    ::evk_sim::begin_instr(::evk_sim::PID_V);
    evk_detail::valid(dst.buf_, op, loc);
    evk_detail::valid(src.buf_, op, loc);
    if (sizeof(T) != 2 && sizeof(T) != 4)
        ::evk_sim::violation(EVK_RULE_UNSUPPORTED_DTYPE, ::evk_sim::SEV_ERROR, loc.file, loc.line,
                             "Brcb supports 16- and 32-bit types, not %s", ::evk_sim::Ty<T>::name);
    ::evk_sim::ub_align(op, "dst", dst.off_, 32, loc.file, loc.line);
    ::evk_sim::ub_align(op, "src", src.off_, 32, loc.file, loc.line);
    ::evk_sim::ub_access(op, src.buf_, src.off_, static_cast<uint64_t>(repeatTime) * 8 * sizeof(T), false,
                         ::evk_sim::PID_V, loc.file, loc.line);
    for (int r = 0; r < repeatTime; ++r)
        for (int b = 0; b < 8; ++b)
            ::evk_sim::ub_access(op, dst.buf_,
                                 dst.off_ + (static_cast<int64_t>(r) * p.dstRepStride + static_cast<int64_t>(b) * p.dstBlkStride) * 32,
                                 32, true, ::evk_sim::PID_V, loc.file, loc.line);
    for (int r = 0; r < repeatTime; ++r)
        for (int b = 0; b < 8; ++b) {
            T v;
            std::memcpy(&v, ::evk_sim::g_ub + src.off_ + (r * 8 + b) * sizeof(T), sizeof(T));
            int64_t o = dst.off_ + (static_cast<int64_t>(r) * p.dstRepStride + static_cast<int64_t>(b) * p.dstBlkStride) * 32;
            for (uint32_t k = 0; k < 32 / sizeof(T); ++k) std::memcpy(::evk_sim::g_ub + o + k * sizeof(T), &v, sizeof(T));
        }
    ::evk_sim::vec_count_only(op, ::evk_sim::Ty<T>::name, static_cast<uint64_t>(repeatTime) * 8, repeatTime);
}

// ---- Cast --------------------------------------------------------------------------------------
namespace evk_detail {
template <typename TD, typename TS> inline typename Ty<TD>::C cast_one(typename Ty<TS>::C x, int mode, uint64_t& ovf) {
    bool o = false;
    int m = mode;
    double y;
    if (Ty<TD>::kind == Ty<TS>::kind) {
        // same-type cast with a rounding mode = round to an integral value
        double v = static_cast<double>(x);
        switch (m) {
            case 2: y = std::floor(v); break;
            case 3: y = std::ceil(v); break;
            case 4: y = std::round(v); break;
            case 5: y = std::trunc(v); break;
            case 0: y = v; break;
            default: y = std::nearbyint(v); break;
        }
    } else {
        y = ::evk_sim::round_to_kind(static_cast<double>(x), Ty<TD>::kind, m, &o);
    }
    if (o) {
        ++ovf;
        // hand st<> a finite out-of-range value so it counts the overflow (inf or saturation)
        if constexpr (::evk_sim::is_half_t<TD>::value) y = y > 0 ? 1e30 : -1e30;
    }
    return static_cast<typename Ty<TD>::C>(y);
}
template <typename TD, typename TS> inline const char* cast_name() {
    static char buf[40];
    if (!buf[0]) std::snprintf(buf, sizeof(buf), "%s->%s", Ty<TS>::name, Ty<TD>::name);
    return buf;
}
}  // namespace evk_detail

template <typename T, typename U>
inline void Cast(const LocalTensor<T>& dst, const LocalTensor<U>& src, const RoundMode& round_mode,
                 const uint32_t count, EVK_LOC) {
    const int mode = static_cast<int>(round_mode);
    evk_detail::unary_count("Cast", ::evk_sim::DT_ALL, dst, src, count,
                            [mode](typename ::evk_sim::Ty<U>::C x) {
                                uint64_t o = 0;
                                return evk_detail::cast_one<T, U>(x, mode, o);
                            },
                            loc, evk_detail::cast_name<T, U>());
}
template <typename T, typename U, bool isSetMask = true>
inline void Cast(const LocalTensor<T>& dst, const LocalTensor<U>& src, const RoundMode& round_mode,
                 const uint64_t mask, const uint8_t repeatTime, const UnaryRepeatParams& repeatParams, EVK_LOC) {
    const int mode = static_cast<int>(round_mode);
    constexpr int lanes = 256 / static_cast<int>(sizeof(T) > sizeof(U) ? sizeof(T) : sizeof(U));
    auto plan = evk_detail::plan_c<T>("Cast", mask, repeatTime, isSetMask, lanes, loc);
    evk_detail::unary_mask("Cast", ::evk_sim::DT_ALL, dst, src, plan, repeatParams,
                           [mode](typename ::evk_sim::Ty<U>::C x, typename ::evk_sim::Ty<T>::C) {
                               uint64_t o = 0;
                               return evk_detail::cast_one<T, U>(x, mode, o);
                           },
                           loc, evk_detail::cast_name<T, U>());
}
template <typename T, typename U, bool isSetMask = true>
inline void Cast(const LocalTensor<T>& dst, const LocalTensor<U>& src, const RoundMode& round_mode,
                 const uint64_t mask[], const uint8_t repeatTime, const UnaryRepeatParams& repeatParams, EVK_LOC) {
    const int mode = static_cast<int>(round_mode);
    constexpr int lanes = 256 / static_cast<int>(sizeof(T) > sizeof(U) ? sizeof(T) : sizeof(U));
    auto plan = evk_detail::plan_b<T>("Cast", mask, repeatTime, isSetMask, lanes, loc);
    evk_detail::unary_mask("Cast", ::evk_sim::DT_ALL, dst, src, plan, repeatParams,
                           [mode](typename ::evk_sim::Ty<U>::C x, typename ::evk_sim::Ty<T>::C) {
                               uint64_t o = 0;
                               return evk_detail::cast_one<T, U>(x, mode, o);
                           },
                           loc, evk_detail::cast_name<T, U>());
}

// ---- Compare / Select --------------------------------------------------------------------------
namespace evk_detail {
template <class C> inline bool cmp(C a, C b, CMPMODE m) {
    switch (m) {
        case CMPMODE::LT: return a < b;
        case CMPMODE::GT: return a > b;
        case CMPMODE::EQ: return a == b;
        case CMPMODE::LE: return a <= b;
        case CMPMODE::GE: return a >= b;
        case CMPMODE::NE: return a != b;
    }
    return false;
}
void compare_checks(const char* op, int kind, int mode, uint64_t count, uint32_t esize, ::evk_sim::SrcLoc loc);
template <typename U, typename T>
inline void compare_count(const char* op, const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>* src1,
                          typename Ty<T>::C scalar, CMPMODE mode, uint32_t count, ::evk_sim::SrcLoc loc) {
    compare_checks(op, Ty<T>::kind, static_cast<int>(mode), count, sizeof(T), loc);
    ::evk_sim::TD d = dst.td(), s[2] = {src0.td(), src1 ? src1->td() : src0.td()};
    const uint64_t out_bytes = (static_cast<uint64_t>(count) + 7) / 8;
    int64_t n = ::evk_sim::vec_lanes_prologue(op, Ty<T>::name, &d, s, src1 ? 2 : 1, count, nullptr, true, loc.file,
                                              loc.line);
    if (n <= 0) return;
    std::memset(::evk_sim::g_ub + d.off, 0, out_bytes);
    for (int64_t i = 0; i < n; ++i) {
        auto a = ld<T>(s[0].off + i * sizeof(T));
        auto b = src1 ? ld<T>(s[1].off + i * sizeof(T)) : scalar;
        if (cmp(a, b, mode)) ::evk_sim::g_ub[d.off + i / 8] |= static_cast<uint8_t>(1u << (i % 8));
    }
}
inline bool mask_bit(int64_t byte_off, uint64_t i) { return (::evk_sim::g_ub[byte_off + i / 8] >> (i % 8)) & 1u; }
void select_checks(const char* op, int kind, int mode, bool scalar_form, ::evk_sim::SrcLoc loc);
}  // namespace evk_detail

template <typename T, typename U>
inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode,
                    uint32_t count, EVK_LOC) {
    evk_detail::compare_count("Compare", dst, src0, &src1, typename ::evk_sim::Ty<T>::C(), cmpMode, count, loc);
}
template <typename T, typename U, bool isSetMask = true>
inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode,
                    uint64_t mask, uint8_t repeatTime, const BinaryRepeatParams& p, EVK_LOC) {
    // mask/repeat form: one bit per lane, repeat r's bits at byte r * lanes / 8 of dst
    constexpr int lanes = evk_detail::lanes_of<T>();
    auto plan = evk_detail::plan_c<T>("Compare", mask, repeatTime, isSetMask, lanes, loc);
    evk_detail::valid(dst.buf_, "Compare", loc);
    evk_detail::valid(src0.buf_, "Compare", loc);
    evk_detail::valid(src1.buf_, "Compare", loc);
    evk_detail::compare_checks("Compare", ::evk_sim::Ty<T>::kind, static_cast<int>(cmpMode),
                               static_cast<uint64_t>(lanes) * plan.repeats, sizeof(T), loc);
    ::evk_sim::MD m[2] = {{src0.buf_, src0.off_, sizeof(T), p.src0BlkStride, p.src0RepStride, false},
                          {src1.buf_, src1.off_, sizeof(T), p.src1BlkStride, p.src1RepStride, false}};
    if (!::evk_sim::vec_mask_prologue("Compare", ::evk_sim::Ty<T>::name, plan, m, 2, loc.file, loc.line)) return;
    const uint64_t out_bytes = static_cast<uint64_t>(plan.repeats) * lanes / 8;
    ::evk_sim::ub_access("Compare", dst.buf_, dst.off_, out_bytes, true, ::evk_sim::PID_V, loc.file, loc.line);
    std::memset(::evk_sim::g_ub + dst.off_, 0, out_bytes);
    for (int r = 0; r < plan.repeats; ++r)
        for (int l = 0; l < lanes; ++l) {
            if (!::evk_sim::plan_active(plan, r, l)) continue;
            auto a = ::evk_sim::ld<T>(::evk_sim::lane_addr(m[0], r, l));
            auto b = ::evk_sim::ld<T>(::evk_sim::lane_addr(m[1], r, l));
            uint64_t i = static_cast<uint64_t>(r) * lanes + l;
            if (evk_detail::cmp(a, b, cmpMode)) ::evk_sim::g_ub[dst.off_ + i / 8] |= static_cast<uint8_t>(1u << (i % 8));
        }
}
template <typename T, typename U>
inline void CompareScalar(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const T src1Scalar, CMPMODE cmpMode,
                          uint32_t count, EVK_LOC) {
    evk_detail::compare_count("CompareScalar", dst, src0, static_cast<const LocalTensor<T>*>(nullptr),
                              static_cast<typename ::evk_sim::Ty<T>::C>(src1Scalar), cmpMode, count, loc);
}
template <typename T, typename U>
inline void Compares(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const T src1Scalar, CMPMODE cmpMode,
                     uint32_t count, EVK_LOC) {
    evk_detail::compare_count("Compares", dst, src0, static_cast<const LocalTensor<T>*>(nullptr),
                              static_cast<typename ::evk_sim::Ty<T>::C>(src1Scalar), cmpMode, count, loc);
}

namespace evk_detail {
template <typename T, typename U>
inline void select_count(const LocalTensor<T>& dst, const LocalTensor<U>& sel, const LocalTensor<T>& src0,
                         const LocalTensor<T>* src1, T scalar, SELMODE mode, uint32_t count, ::evk_sim::SrcLoc loc) {
    const char* op = "Select";
    select_checks(op, Ty<T>::kind, static_cast<int>(mode), src1 == nullptr, loc);
    // VSEL_TENSOR_SCALAR_MODE with a tensor src1 uses its first element
    bool use_scalar = src1 == nullptr || mode == SELMODE::VSEL_TENSOR_SCALAR_MODE;
    ::evk_sim::TD d = dst.td();
    ::evk_sim::TD s[2] = {src0.td(), src1 ? src1->td() : src0.td()};
    ::evk_sim::TD m = sel.td();
    m.esize = 1;
    valid(sel.buf_, op, loc);
    if (src1 && use_scalar) valid(src1->buf_, op, loc);
    // the mask is read as count bits (lane i: bit i)
    int64_t n = ::evk_sim::vec_lanes_prologue(op, Ty<T>::name, &d, s, use_scalar ? 1 : 2, count, &m, false, loc.file,
                                              loc.line);
    if (src1 && use_scalar) {
        ::evk_sim::ub_access(op, src1->buf_, src1->off_, sizeof(T), false, ::evk_sim::PID_V, loc.file, loc.line);
        std::memcpy(&scalar, ::evk_sim::g_ub + src1->off_, sizeof(T));
    }
    uint64_t ovf = 0;
    const auto sv = static_cast<typename Ty<T>::C>(scalar);
    for (int64_t i = 0; i < n; ++i) {
        bool b = mask_bit(m.off, static_cast<uint64_t>(i));
        auto v = b ? ld<T>(s[0].off + i * sizeof(T)) : (use_scalar ? sv : ld<T>(s[1].off + i * sizeof(T)));
        st<T>(d.off + i * sizeof(T), v, ovf);
    }
}
}  // namespace evk_detail

template <typename T, typename U>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                   const LocalTensor<T>& src1, SELMODE selMode, uint32_t count, EVK_LOC) {
    evk_detail::select_count(dst, selMask, src0, &src1, T(0), selMode, count, loc);
}
template <typename T, typename U>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0, T src1,
                   SELMODE selMode, uint32_t count, EVK_LOC) {
    evk_detail::select_count(dst, selMask, src0, static_cast<const LocalTensor<T>*>(nullptr), src1, selMode, count, loc);
}
template <typename T, typename U, bool isSetMask = true>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                   const LocalTensor<T>& src1, SELMODE selMode, uint64_t mask, uint8_t repeatTime,
                   const BinaryRepeatParams& p, EVK_LOC) {
    // mask/repeat form: lane l of repeat r takes bit r * lanes + l of selMask
    constexpr int lanes = evk_detail::lanes_of<T>();
    auto plan = evk_detail::plan_c<T>("Select", mask, repeatTime, isSetMask, lanes, loc);
    evk_detail::select_checks("Select", ::evk_sim::Ty<T>::kind, static_cast<int>(selMode), false, loc);
    evk_detail::valid(selMask.buf_, "Select", loc);
    evk_detail::binary_mask("Select", ::evk_sim::DT_HF, dst, src0, src1, plan, p,
                            [](auto a, auto, auto) { return a; }, loc);
    ::evk_sim::ub_access("Select", selMask.buf_, selMask.off_, static_cast<uint64_t>(plan.repeats) * lanes / 8, false,
                         ::evk_sim::PID_V, loc.file, loc.line);
    // binary_mask wrote src0 everywhere; now apply the mask
    ::evk_sim::MD mb = {src1.buf_, src1.off_, sizeof(T), p.src1BlkStride, p.src1RepStride, false};
    ::evk_sim::MD md = {dst.buf_, dst.off_, sizeof(T), p.dstBlkStride, p.dstRepStride, true};
    const bool tsm = selMode == SELMODE::VSEL_TENSOR_SCALAR_MODE;
    for (int r = 0; r < plan.repeats; ++r)
        for (int l = 0; l < lanes; ++l) {
            if (!::evk_sim::plan_active(plan, r, l)) continue;
            uint64_t i = static_cast<uint64_t>(r) * lanes + l;
            if (!evk_detail::mask_bit(selMask.off_, i)) {
                int64_t so = tsm ? src1.off_ : ::evk_sim::lane_addr(mb, r, l);
                std::memcpy(::evk_sim::g_ub + ::evk_sim::lane_addr(md, r, l), ::evk_sim::g_ub + so, sizeof(T));
            }
        }
}

// ---- Reductions --------------------------------------------------------------------------------
namespace evk_detail {
enum RedOp { RED_SUM = 0, RED_MAX = 1, RED_MIN = 2 };
// Pairwise (adjacent pairs) tree over vals[0..n) padded with the identity to a power of two;
// every partial result is rounded to T (half saturates at +-65504 as the reduce docs state).
template <typename T>
inline typename Ty<T>::C tree(typename Ty<T>::C* v, int n, int op, uint64_t& ovf, int* idx = nullptr) {
    using C = typename Ty<T>::C;
    int w = 1;
    while (w < n) w <<= 1;
    for (int i = n; i < w; ++i) {
        v[i] = op == RED_SUM ? C(0) : v[0];
        if (idx) idx[i] = idx[0];
    }
    for (int half_w = w / 2; half_w >= 1; half_w /= 2) {
        for (int i = 0; i < half_w; ++i) {
            C a = v[2 * i], b = v[2 * i + 1];
            if (op == RED_SUM) {
                v[i] = ::evk_sim::rnd<T>(a + b, ovf);
            } else {
                bool take_b = op == RED_MAX ? (b > a) : (b < a);
                if (idx) idx[i] = take_b ? idx[2 * i + 1] : idx[2 * i];
                v[i] = take_b ? b : a;
            }
        }
    }
    return v[0];
}
template <typename T> inline void store_index(int64_t off, uint32_t index) {
    if (sizeof(T) == 2) {
        uint16_t b = static_cast<uint16_t>(index);
        std::memcpy(::evk_sim::g_ub + off, &b, 2);
    } else {
        std::memcpy(::evk_sim::g_ub + off, &index, 4);
    }
}
void reduce_checks(const char* op, int kind, ::evk_sim::SrcLoc loc);

// Reduce the active lanes of each repeat (WholeReduce*) -> one value (+ index) per repeat.
template <typename T>
inline void whole_reduce(const char* op, int red, const LocalTensor<T>& dst, const LocalTensor<T>& src,
                         const ::evk_sim::Plan& plan, int32_t dstRepStride, int32_t srcBlkStride, int32_t srcRepStride,
                         ReduceOrder order, ::evk_sim::SrcLoc loc) {
    using C = typename Ty<T>::C;
    reduce_checks(op, Ty<T>::kind, loc);
    valid(dst.buf_, op, loc);
    valid(src.buf_, op, loc);
    ::evk_sim::ub_align(op, "dst", dst.off_, sizeof(T), loc.file, loc.line);
    ::evk_sim::MD ms = {src.buf_, src.off_, sizeof(T), static_cast<uint32_t>(srcBlkStride),
                        static_cast<uint32_t>(srcRepStride), false};
    if (!::evk_sim::vec_mask_prologue(op, Ty<T>::name, plan, &ms, 1, loc.file, loc.line)) return;
    const bool with_index = red != RED_SUM && order != ReduceOrder::ORDER_ONLY_VALUE;
    const bool only_index = red != RED_SUM && order == ReduceOrder::ORDER_ONLY_INDEX;
    // bytes per repeat result and the dstRepStride unit
    const int64_t unit = only_index ? 4 : (with_index ? 2 * sizeof(T) : sizeof(T));
    for (int r = 0; r < plan.repeats; ++r)
        ::evk_sim::ub_access(op, dst.buf_, dst.off_ + r * dstRepStride * unit, unit, true, ::evk_sim::PID_V, loc.file,
                             loc.line);
    C vals[256];
    int idx[256];
    uint64_t ovf = 0;
    for (int r = 0; r < plan.repeats; ++r) {
        int n = 0;
        for (int l = 0; l < plan.lanes; ++l) {
            if (red == RED_SUM) {
                vals[l] = ::evk_sim::plan_active(plan, r, l) ? ld<T>(::evk_sim::lane_addr(ms, r, l)) : C(0);
                n = plan.lanes;
            } else if (::evk_sim::plan_active(plan, r, l)) {
                vals[n] = ld<T>(::evk_sim::lane_addr(ms, r, l));
                idx[n++] = l;
            }
        }
        if (n == 0) continue;
        C v = tree<T>(vals, n, red, ovf, red == RED_SUM ? nullptr : idx);
        int64_t o = dst.off_ + r * dstRepStride * unit;
        uint64_t o2 = 0;
        if (only_index) {
            uint32_t ix = static_cast<uint32_t>(idx[0]);
            std::memcpy(::evk_sim::g_ub + o, &ix, 4);
        } else if (with_index && order == ReduceOrder::ORDER_INDEX_VALUE) {
            store_index<T>(o, static_cast<uint32_t>(idx[0]));
            st<T>(o + sizeof(T), v, o2);
        } else {
            st<T>(o, v, o2);
            if (with_index) store_index<T>(o + sizeof(T), static_cast<uint32_t>(idx[0]));
        }
    }
    if (ovf) ::evk_sim::report_half_overflow(op, ovf, loc.file, loc.line);
}

// Reduce over everything (ReduceSum/Max/Min): per-repeat trees, then trees over the partials.
template <typename T>
inline void full_reduce(const char* op, int red, const LocalTensor<T>& dst, const LocalTensor<T>& src,
                        const LocalTensor<T>& work, const ::evk_sim::Plan& plan, int32_t srcRepStride, bool calIndex,
                        ::evk_sim::SrcLoc loc) {
    using C = typename Ty<T>::C;
    reduce_checks(op, Ty<T>::kind, loc);
    valid(dst.buf_, op, loc);
    valid(src.buf_, op, loc);
    valid(work.buf_, op, loc);
    ::evk_sim::MD ms = {src.buf_, src.off_, sizeof(T), 1, static_cast<uint32_t>(srcRepStride), false};
    if (!::evk_sim::vec_mask_prologue(op, Ty<T>::name, plan, &ms, 1, loc.file, loc.line)) return;
    const int partials = plan.repeats;
    // the first-level results go to the work tensor
    ::evk_sim::ub_access(op, work.buf_, work.off_, static_cast<uint64_t>(partials) * sizeof(T), true, ::evk_sim::PID_V,
                         loc.file, loc.line);
    ::evk_sim::ub_access(op, dst.buf_, dst.off_, (calIndex ? 2 : 1) * sizeof(T), true, ::evk_sim::PID_V, loc.file,
                         loc.line);
    C vals[256];
    int idx[256];
    uint64_t ovf = 0;
    C* pv = new C[partials + 256];
    int* pi = new int[partials + 256];
    int np = 0;
    for (int r = 0; r < plan.repeats; ++r) {
        int n = 0;
        for (int l = 0; l < plan.lanes; ++l) {
            if (red == RED_SUM) {
                vals[l] = ::evk_sim::plan_active(plan, r, l) ? ld<T>(::evk_sim::lane_addr(ms, r, l)) : C(0);
                n = plan.lanes;
            } else if (::evk_sim::plan_active(plan, r, l)) {
                vals[n] = ld<T>(::evk_sim::lane_addr(ms, r, l));
                // index over the flattened input (contiguous repeats)
                idx[n++] = r * plan.lanes + l;
            }
        }
        if (n == 0) continue;
        pv[np] = tree<T>(vals, n, red, ovf, red == RED_SUM ? nullptr : idx);
        pi[np] = idx[0];
        uint64_t o2 = 0;
        st<T>(work.off_ + static_cast<int64_t>(np) * sizeof(T), pv[np], o2);
        ++np;
    }
    while (np > 1) {
        int out = 0;
        for (int g = 0; g < np; g += plan.lanes) {
            int n = np - g < plan.lanes ? np - g : plan.lanes;
            for (int k = 0; k < n; ++k) {
                vals[k] = pv[g + k];
                idx[k] = pi[g + k];
            }
            pv[out] = tree<T>(vals, n, red, ovf, red == RED_SUM ? nullptr : idx);
            pi[out++] = idx[0];
        }
        np = out;
    }
    uint64_t o2 = 0;
    st<T>(dst.off_, np ? pv[0] : C(0), o2);
    if (calIndex) store_index<T>(dst.off_ + sizeof(T), np ? static_cast<uint32_t>(pi[0]) : 0u);
    delete[] pv;
    delete[] pi;
    if (ovf) ::evk_sim::report_half_overflow(op, ovf, loc.file, loc.line);
}

// BlockReduce*: one result per 32-byte block of each repeat; dstRepStride in units of 8 results.
template <typename T>
inline void block_reduce(const char* op, int red, const LocalTensor<T>& dst, const LocalTensor<T>& src,
                         const ::evk_sim::Plan& plan, int32_t dstRepStride, int32_t srcBlkStride, int32_t srcRepStride,
                         ::evk_sim::SrcLoc loc) {
    using C = typename Ty<T>::C;
    reduce_checks(op, Ty<T>::kind, loc);
    valid(dst.buf_, op, loc);
    valid(src.buf_, op, loc);
    ::evk_sim::MD ms = {src.buf_, src.off_, sizeof(T), static_cast<uint32_t>(srcBlkStride),
                        static_cast<uint32_t>(srcRepStride), false};
    if (!::evk_sim::vec_mask_prologue(op, Ty<T>::name, plan, &ms, 1, loc.file, loc.line)) return;
    const int lpb = 32 / sizeof(T);
    uint64_t ovf = 0;
    for (int r = 0; r < plan.repeats; ++r)
        for (int b = 0; b < 8; ++b) {
            C vals[32];
            int n = 0;
            bool any = false;
            for (int k = 0; k < lpb; ++k) {
                int l = b * lpb + k;
                bool a = ::evk_sim::plan_active(plan, r, l);
                any = any || a;
                if (red == RED_SUM) vals[n++] = a ? ld<T>(::evk_sim::lane_addr(ms, r, l)) : C(0);
                else if (a) vals[n++] = ld<T>(::evk_sim::lane_addr(ms, r, l));
            }
            if (!any) continue;
            int64_t o = dst.off_ + (static_cast<int64_t>(r) * dstRepStride * 8 + b) * sizeof(T);
            ::evk_sim::ub_access(op, dst.buf_, o, sizeof(T), true, ::evk_sim::PID_V, loc.file, loc.line);
            uint64_t o2 = 0;
            st<T>(o, tree<T>(vals, n, red, ovf), o2);
        }
    if (ovf) ::evk_sim::report_half_overflow(op, ovf, loc.file, loc.line);
}
}  // namespace evk_detail

#define EVK_WHOLE(NAME, RED, EXTRA_DECL, EXTRA_ARG)                                                               \
    template <typename T, bool isSetMask = true>                                                                  \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t mask,                   \
                     const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,            \
                     const int32_t srcRepStride EXTRA_DECL, EVK_LOC) {                                            \
        auto plan = evk_detail::plan_c<T>(#NAME, static_cast<uint64_t>(mask), repeatTime, isSetMask,               \
                                          evk_detail::lanes_of<T>(), loc);                                        \
        evk_detail::whole_reduce(#NAME, RED, dst, src, plan, dstRepStride, srcBlkStride, srcRepStride, EXTRA_ARG,  \
                                 loc);                                                                            \
    }                                                                                                             \
    template <typename T, bool isSetMask = true>                                                                  \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[],                \
                     const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,            \
                     const int32_t srcRepStride EXTRA_DECL, EVK_LOC) {                                            \
        auto plan = evk_detail::plan_b<T>(#NAME, mask, repeatTime, isSetMask, evk_detail::lanes_of<T>(), loc);     \
        evk_detail::whole_reduce(#NAME, RED, dst, src, plan, dstRepStride, srcBlkStride, srcRepStride, EXTRA_ARG,  \
                                 loc);                                                                            \
    }
#define EVK_COMMA ,
EVK_WHOLE(WholeReduceSum, evk_detail::RED_SUM, , ReduceOrder::ORDER_ONLY_VALUE)
EVK_WHOLE(WholeReduceMax, evk_detail::RED_MAX, EVK_COMMA ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX, order)
EVK_WHOLE(WholeReduceMin, evk_detail::RED_MIN, EVK_COMMA ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX, order)
#undef EVK_WHOLE

template <typename T, bool isSetMask = true>
inline void RepeatReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,
                            const int32_t mask, const int32_t dstBlkStride, const int32_t srcBlkStride,
                            const int32_t dstRepStride, const int32_t srcRepStride, EVK_LOC) {
    (void)dstBlkStride;
    auto plan = evk_detail::plan_c<T>("RepeatReduceSum", static_cast<uint64_t>(mask), repeatTime, isSetMask,
                                      evk_detail::lanes_of<T>(), loc);
    evk_detail::whole_reduce("RepeatReduceSum", evk_detail::RED_SUM, dst, src, plan, dstRepStride, srcBlkStride,
                             srcRepStride, ReduceOrder::ORDER_ONLY_VALUE, loc);
}

#define EVK_BLOCKRED(NAME, RED)                                                                                   \
    template <typename T, bool isSetMask = true>                                                                  \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,             \
                     const int32_t mask, const int32_t dstRepStride, const int32_t srcBlkStride,                  \
                     const int32_t srcRepStride, EVK_LOC) {                                                       \
        auto plan = evk_detail::plan_c<T>(#NAME, static_cast<uint64_t>(mask), repeatTime, isSetMask,               \
                                          evk_detail::lanes_of<T>(), loc);                                        \
        evk_detail::block_reduce(#NAME, RED, dst, src, plan, dstRepStride, srcBlkStride, srcRepStride, loc);       \
    }                                                                                                             \
    template <typename T, bool isSetMask = true>                                                                  \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,             \
                     const uint64_t mask[], const int32_t dstRepStride, const int32_t srcBlkStride,               \
                     const int32_t srcRepStride, EVK_LOC) {                                                       \
        auto plan = evk_detail::plan_b<T>(#NAME, mask, repeatTime, isSetMask, evk_detail::lanes_of<T>(), loc);     \
        evk_detail::block_reduce(#NAME, RED, dst, src, plan, dstRepStride, srcBlkStride, srcRepStride, loc);       \
    }
EVK_BLOCKRED(BlockReduceSum, evk_detail::RED_SUM)
EVK_BLOCKRED(BlockReduceMax, evk_detail::RED_MAX)
EVK_BLOCKRED(BlockReduceMin, evk_detail::RED_MIN)
#undef EVK_BLOCKRED

// ReduceSum / ReduceMax / ReduceMin: count form and mask/repeat form (srcRepStride in blocks).
#define EVK_FULLRED(NAME, RED)                                                                                    \
    template <typename T>                                                                                         \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer, \
                     const int32_t mask, const int32_t repeatTime, const int32_t srcRepStride,                    \
                     bool calIndex = 0, EVK_LOC) {                                                                \
        auto plan = evk_detail::plan_c<T>(#NAME, static_cast<uint64_t>(mask), repeatTime, true,                    \
                                          evk_detail::lanes_of<T>(), loc);                                        \
        evk_detail::full_reduce(#NAME, RED, dst, src, sharedTmpBuffer, plan, srcRepStride,                         \
                                RED != evk_detail::RED_SUM && calIndex, loc);                                     \
    }                                                                                                             \
    template <typename T>                                                                                         \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer, \
                     const uint64_t mask[], const int32_t repeatTime, const int32_t srcRepStride,                 \
                     bool calIndex = 0, EVK_LOC) {                                                                \
        auto plan = evk_detail::plan_b<T>(#NAME, mask, repeatTime, true, evk_detail::lanes_of<T>(), loc);          \
        evk_detail::full_reduce(#NAME, RED, dst, src, sharedTmpBuffer, plan, srcRepStride,                         \
                                RED != evk_detail::RED_SUM && calIndex, loc);                                     \
    }                                                                                                             \
    template <typename T, bool isSetMask = true>                                                                  \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer, \
                     const int32_t count, bool calIndex = 0, EVK_LOC) {                                           \
        ::evk_sim::Plan plan;                                                                                     \
        plan.lanes = evk_detail::lanes_of<T>();                                                                   \
        plan.counter = true;                                                                                      \
        plan.count = count > 0 ? static_cast<uint64_t>(count) : 0;                                                \
        plan.repeats = static_cast<int>((plan.count + plan.lanes - 1) / plan.lanes);                              \
        if (count <= 0)                                                                                           \
            ::evk_sim::violation(EVK_RULE_INVALID_ARGUMENT, ::evk_sim::SEV_ERROR, loc.file, loc.line,             \
                                 "%s: count must be positive, got %d", #NAME, count);                              \
        evk_detail::full_reduce(#NAME, RED, dst, src, sharedTmpBuffer, plan, 8,                                    \
                                RED != evk_detail::RED_SUM && calIndex, loc);                                     \
    }
EVK_FULLRED(ReduceSum, evk_detail::RED_SUM)
EVK_FULLRED(ReduceMax, evk_detail::RED_MAX)
EVK_FULLRED(ReduceMin, evk_detail::RED_MIN)
#undef EVK_FULLRED

}  // namespace AscendC

#include "evk_sim/copy_api.h"
#include "evk_sim/gather.h"
#include "evk_sim/cube.h"
#include "evk_sim/math_api.h"
#include "evk_sim/reduce_api.h"
#include "evk_sim/norm_api.h"

// The kernel-side globals and macros of CANN's kernel headers that community code uses without a namespace:
// `block_idx` (the block index, a builtin of the device compiler that older kernels read directly, as
// GetBlockIdx() returns it) and `assert(cond)` (CANN's kernel assert, the 3_assert sample: a failed assert
// stops the kernel with a message; here it is the kernel_assert fatal at its line).
struct EvkBlockIdxVar {
    operator int64_t() const { return ::evk_sim::block_idx(); }
};
inline constexpr EvkBlockIdxVar block_idx{};
// A kernel print (AscendC::printf, printf, PRINTF): its arguments are evaluated inside a print scope, so a GM value
// read only to be printed is not race-checked. A print of data another core is writing shows stale or new bytes on
// the NPU, which changes no output (Ascend's printf sample prints C's first element from the AIVs while the AIC
// computes it). The macro makes the scope's start the call's postfix-expression, which C++17 sequences before the
// arguments: `AscendC::printf(f, x)` -> `AscendC::evk_print_begin()(f, x)`.
struct EvkPrinter {
    EvkPrinter() { ::evk_sim::print_scope(1); }
    ~EvkPrinter() { ::evk_sim::print_scope(-1); }
    EvkPrinter(const EvkPrinter&) = delete;
    EvkPrinter& operator=(const EvkPrinter&) = delete;
    template <class... Args> void operator()(const char* fmt, Args... args) const { ::evk_sim::kernel_printf(fmt, args...); }
};
inline EvkPrinter evk_print_begin() { return EvkPrinter(); }
namespace AscendC {
using ::evk_print_begin;
}
// `std::printf(...)` in device code is the same kernel print (the device has no C library stdout)
namespace std {
using ::evk_print_begin;
}
#define printf(...) evk_print_begin()(__VA_ARGS__)
#undef PRINTF
#define PRINTF(...) ::evk_print_begin()(__VA_ARGS__)
#include <cassert>
#undef assert
// CANN's kernel assert takes an optional message format and arguments: assert(cond, "fmt %d", x)
#define assert(cond, ...) ((void)::evk_sim::assert_holds(static_cast<bool>(cond), __FILE__, __LINE__, #cond))

#endif  // EVK_SIM_KERNEL_H
