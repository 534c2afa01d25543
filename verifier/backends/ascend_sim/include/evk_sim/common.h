// EvoKernel Ascend C CPU emulator: pieces shared by the kernel side and the host side.
//
// Written for EvoKernel from the public description of the Ascend C programming model
// (behaviour only). Nothing here is Huawei code.
//
// What lives here: the device qualifiers defined away, the scalar types (half, bfloat16_t),
// the pipe/event enums, and the declarations of the runtime hooks that every kernel-side API
// call goes through (implemented in runtime.cpp, so the headers stay light and fast to compile).
#ifndef EVK_SIM_COMMON_H
#define EVK_SIM_COMMON_H

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <type_traits>

// ---------------------------------------------------------------------------------------------
// Device qualifiers: empty on the CPU (as in Huawei's CPU twin-debug mode).
// ---------------------------------------------------------------------------------------------
#ifndef __aicore__
#define __aicore__
#endif
#ifndef __global__
#define __global__
#endif
#ifndef __gm__
#define __gm__
#endif
#ifndef __ubuf__
#define __ubuf__
#endif
#ifndef __cbuf__
#define __cbuf__
#endif
#ifndef __ca__
#define __ca__
#endif
#ifndef __cb__
#define __cb__
#endif
#ifndef __cc__
#define __cc__
#endif
#ifndef __fbuf__
#define __fbuf__
#endif
#ifndef __in_pipe__
#define __in_pipe__(x)
#endif
#ifndef __out_pipe__
#define __out_pipe__(x)
#endif
#ifndef __inout_pipe__
#define __inout_pipe__(x)
#endif
#ifndef __sync_alias__
#define __sync_alias__
#endif
#ifndef __sync_noalias__
#define __sync_noalias__
#endif
#ifndef __check_sync_alias__
#define __check_sync_alias__
#endif
#ifndef GM_ADDR
#define GM_ADDR __gm__ uint8_t*
#endif

// ---------------------------------------------------------------------------------------------
// Scalar types
// ---------------------------------------------------------------------------------------------
// IEEE binary16 with GCC's _Float16: conversions from float round to nearest even.
using half = _Float16;

namespace evk_sim {
inline uint32_t f32_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float bits_f32(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
inline uint16_t f32_to_bf16_rne(float f) {
    uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>(((u >> 16) & 0x8000u) | 0x7fc0u);  // NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>(u >> 16);
}
template <class T> struct is_half_t : std::false_type {};
template <> struct is_half_t<_Float16> : std::true_type {};
}  // namespace evk_sim

// bfloat16: 16-bit storage, float arithmetic (values convert to float implicitly; results are
// converted back with round-to-nearest-even when stored).
struct bfloat16_t {
    uint16_t bits_ = 0;
    bfloat16_t() = default;
    bfloat16_t(float v) : bits_(evk_sim::f32_to_bf16_rne(v)) {}
    bfloat16_t(double v) : bits_(evk_sim::f32_to_bf16_rne(static_cast<float>(v))) {}
    bfloat16_t(_Float16 v) : bits_(evk_sim::f32_to_bf16_rne(static_cast<float>(v))) {}
    bfloat16_t(int v) : bits_(evk_sim::f32_to_bf16_rne(static_cast<float>(v))) {}
    bfloat16_t(int64_t v) : bits_(evk_sim::f32_to_bf16_rne(static_cast<float>(v))) {}
    bfloat16_t(uint32_t v) : bits_(evk_sim::f32_to_bf16_rne(static_cast<float>(v))) {}
    bfloat16_t(uint64_t v) : bits_(evk_sim::f32_to_bf16_rne(static_cast<float>(v))) {}
    operator float() const { return evk_sim::bits_f32(static_cast<uint32_t>(bits_) << 16); }
    static bfloat16_t FromBits(uint16_t b) { bfloat16_t r; r.bits_ = b; return r; }
    bfloat16_t& operator+=(float v) { *this = bfloat16_t(float(*this) + v); return *this; }
    bfloat16_t& operator-=(float v) { *this = bfloat16_t(float(*this) - v); return *this; }
    bfloat16_t& operator*=(float v) { *this = bfloat16_t(float(*this) * v); return *this; }
    bfloat16_t& operator/=(float v) { *this = bfloat16_t(float(*this) / v); return *this; }
};
static_assert(sizeof(bfloat16_t) == 2, "bfloat16_t must be 16 bits");

namespace evk_sim {
// The element types of Ascend C tensors (LocalTensor<T>, GlobalTensor<T>): the scalar types the API documents.
// A positive list: a struct or array type would make one GetValue/SetValue move many elements (a whole tile)
// for the price of one scalar access, which the scalar unit (8 bytes per load/store at most) cannot do.
template <class T> struct is_ascend_elem : std::false_type {};
template <> struct is_ascend_elem<half> : std::true_type {};
template <> struct is_ascend_elem<bfloat16_t> : std::true_type {};
template <> struct is_ascend_elem<float> : std::true_type {};
template <> struct is_ascend_elem<bool> : std::true_type {};
template <> struct is_ascend_elem<int8_t> : std::true_type {};
template <> struct is_ascend_elem<uint8_t> : std::true_type {};
template <> struct is_ascend_elem<int16_t> : std::true_type {};
template <> struct is_ascend_elem<uint16_t> : std::true_type {};
template <> struct is_ascend_elem<int32_t> : std::true_type {};
template <> struct is_ascend_elem<uint32_t> : std::true_type {};
template <> struct is_ascend_elem<int64_t> : std::true_type {};
template <> struct is_ascend_elem<uint64_t> : std::true_type {};
template <class T> struct is_ascend_elem<const T> : is_ascend_elem<T> {};
template <class T> struct is_ascend_elem<volatile T> : is_ascend_elem<T> {};
template <class T> struct is_ascend_elem<const volatile T> : is_ascend_elem<T> {};
}  // namespace evk_sim
// libm for the emulator's own headers. The build renames the kernel object's references to tanhf, expf ... to
// counting wrappers (a libm call from the candidate's scalar code is charged, runtime.cpp count_libm); the API's
// implementations in these headers compile into the same object and call libm through these uncharged names.
// (defined in runtime.cpp; C++ names, which the renaming of C names leaves alone). Integer arguments go to the double
// form, as <cmath>'s do.
#define EVK_RT_LIBM(M1, M2)                                                                                          \
    M1(exp) M1(exp2) M1(exp10) M1(expm1) M1(log) M1(log2) M1(log10) M1(log1p) M1(sin) M1(cos) M1(tan) M1(asin)        \
    M1(acos) M1(atan) M1(sinh) M1(cosh) M1(tanh) M1(asinh) M1(acosh) M1(atanh) M1(erf) M1(erfc) M1(tgamma) M1(lgamma) \
    M1(cbrt) M2(pow) M2(atan2) M2(hypot) M2(fmod) M2(remainder)
namespace evk_sim {
namespace m {
template <class T> using if_int = typename std::enable_if<std::is_integral<T>::value, double>::type;
#define EVK_RT_M1(name)       \
    float name(float x);      \
    double name(double x);    \
    template <class T> inline if_int<T> name(T x) { return name(static_cast<double>(x)); }
#define EVK_RT_M2(name)                 \
    float name(float x, float y);       \
    double name(double x, double y);
EVK_RT_LIBM(EVK_RT_M1, EVK_RT_M2)
#undef EVK_RT_M1
#undef EVK_RT_M2
}  // namespace m
}  // namespace evk_sim
#define EVK_ELEM_TYPE_RULE "an Ascend C element type (half, bfloat16_t, float, bool, int8_t, uint8_t, int16_t, " \
    "uint16_t, int32_t, uint32_t, int64_t, uint64_t): a struct or array element would let one scalar " \
    "GetValue/SetValue move many elements at once"

// Pipes and event ids (global names, as kernels spell them without a namespace).
enum pipe_t : int {
    PIPE_S = 0,
    PIPE_V,
    PIPE_M,
    PIPE_MTE1,
    PIPE_MTE2,
    PIPE_MTE3,
    PIPE_ALL,
    PIPE_V2,
    PIPE_FIX,
};
enum event_t : int {
    EVENT_ID0 = 0,
    EVENT_ID1,
    EVENT_ID2,
    EVENT_ID3,
    EVENT_ID4,
    EVENT_ID5,
    EVENT_ID6,
    EVENT_ID7,
};

// ---------------------------------------------------------------------------------------------
// Runtime hooks (runtime.cpp)
// ---------------------------------------------------------------------------------------------
namespace evk_sim {

// The kernel source position of an API call: a defaulted last parameter `EVK_LOC` on every
// entry point captures the caller's file and line (not constructible from user arguments).
struct SrcLoc {
    const char* file;
    int line;
    static SrcLoc cur(const char* f = __builtin_FILE(), int l = __builtin_LINE()) { return SrcLoc{f, l}; }
};
#define EVK_LOC ::evk_sim::SrcLoc loc = ::evk_sim::SrcLoc::cur()

enum Severity : int { SEV_WARNING = 0, SEV_ERROR = 1, SEV_FATAL = 2 };

// The pipes whose ordering the emulator tracks: scalar, vector, GM->UB/L1 (MTE2), UB->GM (MTE3), and the cube
// core's L1->L0A/L0B/BT loads (MTE1), matrix unit (M) and L0C->GM write-out (FIX).
enum PipeId : int {
    PID_S = 0, PID_V = 1, PID_MTE2 = 2, PID_MTE3 = 3, PID_MTE1 = 4, PID_M = 5, PID_FIX = 6, PID_COUNT = 7,
    PID_NONE = 255
};

// The core's local memories. One arena holds them all (UB first, then the cube core's buffers); a LocalTensor
// is a byte offset into it, and TPosition decides the memory (mem_of_position).
enum MemKind : int { MEM_UB = 0, MEM_L1, MEM_L0A, MEM_L0B, MEM_L0C, MEM_BT, MEM_COUNT, MEM_NONE = -1 };
// TPosition numbering as in kernel.h: VECIN/VECOUT/VECCALC -> UB; A1/B1/C1/TSCM -> L1; A2 -> L0A; B2 -> L0B;
// CO1 -> L0C; C2 -> the bias table. GM, CO2 (GM on 910B), SPM and the C2PIPE positions hold no local buffer.
constexpr int mem_of_position(int pos) {
    return pos == 9 || pos == 10 || pos == 11 ? MEM_UB
         : pos == 1 || pos == 3 || pos == 5 || pos == 13 ? MEM_L1
         : pos == 2 ? MEM_L0A
         : pos == 4 ? MEM_L0B
         : pos == 7 ? MEM_L0C
         : pos == 6 ? MEM_BT
         : MEM_NONE;
}
const char* mem_name(int mem);
uint32_t mem_base(int mem);  // the memory's byte offset in the arena
int mem_of_buf(int buf);  // MEM_NONE for an invalid buffer

// Stable rule ids (also listed in the README).
#define EVK_RULE_UB_ALIGNMENT "ub_alignment"
#define EVK_RULE_TAIL_DROPPED "datacopy_tail_dropped"
#define EVK_RULE_UB_CAPACITY "ub_capacity"
#define EVK_RULE_UB_OOB "ub_out_of_bounds"
#define EVK_RULE_QUEUE_LIMITS "queue_limits"
#define EVK_RULE_QUEUE_PAIRING "queue_pairing"
#define EVK_RULE_USE_AFTER_FREE "use_after_free"
#define EVK_RULE_UNINIT_READ "uninitialised_read"
#define EVK_RULE_GM_OOB "gm_out_of_bounds"
#define EVK_RULE_GM_ALIGNMENT "gm_alignment"
#define EVK_RULE_OVERLAP "block_write_overlap"
#define EVK_RULE_OVERLAP_SAME "block_write_identical"
#define EVK_RULE_RACE "cross_core_race"
#define EVK_RULE_INPUT_WRITTEN "input_written"
#define EVK_RULE_COMPARE_GRANULARITY "compare_granularity"
#define EVK_RULE_HALF_OVERFLOW "half_overflow"
#define EVK_RULE_MISSING_SYNC "missing_sync"
#define EVK_RULE_SYNC_PAIRING "sync_pairing"
#define EVK_RULE_INVALID_ARGUMENT "invalid_argument"
#define EVK_RULE_UNSUPPORTED_DTYPE "unsupported_dtype"
#define EVK_RULE_UNSUPPORTED_API "unsupported_api"
#define EVK_RULE_INVALID_TENSOR "invalid_tensor"
#define EVK_RULE_LOW_PRECISION "low_precision"
#define EVK_RULE_TILING_SIZE "tiling_size"
#define EVK_RULE_KERNEL_ASSERT "kernel_assert"
#define EVK_RULE_TENSOR_POSITION "tensor_position"

// Record a violation; severity SEV_FATAL stops the current block (throws BlockAbort).
void violation(const char* rule, int severity, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));
[[noreturn]] void fatal(const char* rule, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));

struct BlockAbort {};  // thrown by fatal(); caught by the runtime per block

// The current block's local memory arena (the Unified Buffer at offset 0, then L1, L0A, L0B, L0C, BT) and its
// per-byte "written" bitmap. g_ub_size is the UB's size.
extern uint8_t* g_ub;
extern uint8_t* g_ub_init;
extern uint32_t g_ub_size;

int64_t block_idx();
int64_t block_num();
uint64_t tiling_key();
int half_overflow_saturates();  // 0: IEEE inf (910B default), 1: saturate to +-65504

// Instruction bookkeeping: every API instruction starts with begin_instr(pipe).
void begin_instr(int pipe);

// UB access check for one contiguous byte range of buffer `buf` (as returned by the queue/TBuf
// functions): state (use after free), bounds (buffer and physical UB), written-before-read,
// pipe ordering. Writes mark the bytes as initialised. Throws on fatal.
void ub_access(const char* instr, int buf, int64_t off, uint64_t nbytes, bool write, int pipe,
               const char* file, int line);
// ub_access for any local memory; check_init=false for pure data movement (LoadData, Nd2Nz rows), which
// carries the written-bitmap along (copy_init) so the instruction that finally uses the bytes is judged.
void local_access(const char* instr, int buf, int64_t off, uint64_t nbytes, bool write, int pipe, bool check_init,
                  const char* file, int line);
void copy_init(int64_t dst_off, int64_t src_off, uint64_t nbytes);
// Latency model: cycles the pending instruction occupies its pipe (on top of what its kind costs).
void tm_add_cost(double cycles);
// Latency model: a contiguous GM segment of the pending copy moves whole bursts.
void tm_gm_segment(const void* p, uint64_t n);
// Cube counters: Mmad MACs by input kind, bytes moved by MTE1 (L1->L0/BT) and FIX (L0C->GM).
void count_cube(int in_kind, uint64_t macs);
void count_mte1(uint64_t bytes);
void count_fix(uint64_t bytes);
double cube_macs_per_cycle(int in_kind);  // the hw model's rate for this input type
double mte1_bytes_per_cycle();
void set_kernel_type(int type);  // KERNEL_TASK_TYPE_DEFAULT: AIV only (0), AIC only (1), mixed (2..4)
// Check that a UB operand starts on an `align`-byte boundary.
void ub_align(const char* instr, const char* operand, int64_t off, uint32_t align, const char* file,
              int line);
// GM access check for one contiguous byte range. Returns true if the memory may be touched
// (false: outside every registered allocation -> the caller skips the read). Fatal on OOB writes.
bool gm_access(const char* instr, const void* p, uint64_t nbytes, bool write, const void* tensor_base,
               uint64_t tensor_bytes, const char* file, int line);
// The runtime's read/write address of kernel-visible GM address p (kernels receive addresses in a
// protected view: every API access to GM goes through this translation; see README "GM protection").
uint8_t* gm_host(const void* p);
int gm_atomic_mode();  // 0 none, 1 add, 2 max, 3 min
void set_gm_atomic_mode(int mode, const char* dtype);

// Counters for the latency model.
enum ScalarKind : int { SC_GM_GET = 0, SC_GM_SET, SC_UB_GET, SC_UB_SET, SC_COUNT };
void count_mte(int pipe, uint64_t bytes, uint64_t bursts);
void count_ub_copy(uint64_t bytes);
void count_vec(const char* op, const char* dtype, uint64_t elements, uint64_t repeats);
void count_scalar(int kind, uint64_t gm_bytes = 0);  // gm_bytes: a GlobalTensor Get/SetValue's element

// Queues, TBufs and pipes: all state lives in the runtime, the C++ objects are handles.
struct SlotRef {
    int buf;        // buffer id (-1 on failure)
    uint32_t off;   // byte offset in UB
    uint32_t len;   // bytes
};
int pipe_create();
void pipe_destroy(int pipe, bool unwinding);
void pipe_reset(int pipe, const char* file, int line);
int que_init(int pipe, int pos_src, int pos_dst, int depth, int num, uint64_t len, bool is_tbuf,
             const char* file, int line);
SlotRef que_alloc(int qid, const char* file, int line);
void que_enque(int qid, int buf, const char* file, int line);
SlotRef que_deque(int qid, const char* file, int line);
void que_free(int qid, int buf, const char* file, int line);
int que_vacant(int qid);
int que_has_tensor(int qid);
SlotRef tbuf_get(int qid, uint64_t offset_bytes, uint64_t len_bytes, const char* file, int line);
int buf_position(int buf);
bool buf_valid(int buf);

// Explicit synchronisation.
void sync_set(int from, int to, int id, const char* file, int line);
void sync_wait(int from, int to, int id, const char* file, int line);
void sync_barrier(int pipe_kind, const char* file, int line);
int fetch_event_id(int from, int to);
void count_sync(int kind);  // 0 barrier
// SyncAll: wait until `participants` blocks (0: all) arrive; blocks run as fibers (runtime.cpp).
void sync_all(int participants, bool aiv_only, const char* file, int line);
// MIX kernels (a cube core and its vector cores per AI core): the launch's ratio, who runs, cross-core flags.
void set_mix_ratio(int ratio);   // AIVs per AI core; 0: not a MIX kernel
int core_type();                 // 1 on a cube core (AIC), else 0
int64_t sub_block_idx();
int64_t sub_block_num();
void cross_core_set(int mode, int pipe, int flag, const char* file, int line);
void cross_core_wait(int flag, const char* file, int line);

// Vector mask state (SetVectorMask / SetMaskCount / SetMaskNorm).
struct MaskState {
    bool counter = false;
    uint64_t lo = ~0ull;
    uint64_t hi = ~0ull;
};
MaskState& mask_state();

// Kernel tiling data copy (GET_TILING_DATA).
void tiling_load(void* dst, const uint8_t* src, uint64_t n, const char* file, int line);
void kernel_printf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// Entering (+1) and leaving (-1) the evaluation of a kernel print's arguments (kernel.h's printf): GM reads made
// only to be printed are not race-checked (runtime.cpp gm_access).
void print_scope(int delta);
// Inside a high-level API's own instructions (the Matmul server computing a request): reports made there say so,
// since the instruction they name is the API's, not a line of the kernel (which is only where the API was called).
void api_scope(const char* api);  // nullptr: leave
struct ApiScope {
    explicit ApiScope(const char* api) { api_scope(api); }
    ~ApiScope() { api_scope(nullptr); }
    ApiScope(const ApiScope&) = delete;
    ApiScope& operator=(const ApiScope&) = delete;
};

// Conversions with an explicit rounding mode (Cast). kinds: see DtypeKind.
enum DtypeKind : int {
    DK_F32 = 0, DK_F16, DK_BF16, DK_I8, DK_U8, DK_I16, DK_U16, DK_I32, DK_U32, DK_I64, DK_U64, DK_F64,
    DK_BOOL, DK_OTHER
};
// Round `x` to the value set of `kind` with rounding `mode` (AscendC::RoundMode numbering).
// For float targets, *overflow is set when a finite x became infinite.
double round_to_kind(double x, int kind, int mode, bool* overflow);

// ---- vector-instruction checking helpers (non-template, so kernels compile fast) ----
// A tensor operand of a count-form instruction.
struct TD {
    int buf;
    int64_t off;     // UB byte offset
    uint32_t esize;  // element size in bytes
};
// Checks a count-form vector instruction (validity, 32-byte alignment, bounds, initialised
// reads, pipe ordering), marks the written bytes and counts it. Returns the number of elements
// to compute (0 when nothing can be done).
// vec_count_prologue for an instruction computing lane by lane (runtime.cpp): unwritten source lanes make the
// destination lanes they feed unwritten instead of an error. bits: a bit-mask source (Select); dst_bits: the
// destination is a bit mask (Compare).
int64_t vec_lanes_prologue(const char* op, const char* dtype, const TD* dst, const TD* srcs, int nsrc, int64_t count,
                           const TD* bits, bool dst_bits, const char* file, int line);
int64_t vec_count_prologue(const char* op, const char* dtype, const TD* dst, const TD* srcs, int nsrc,
                           int64_t count, uint64_t dst_bytes_override, const char* file, int line);
// Dtype support check: `allowed` is a bit set over DtypeKind.
void dtype_check(const char* op, int kind, uint32_t allowed, const char* file, int line);
void report_half_overflow(const char* op, uint64_t n, const char* file, int line);
void report_low_precision(const char* op, const char* dtype, const char* file, int line);

// A mask/repeat-form instruction: which lanes of which repeats are active.
struct Plan {
    int lanes = 0;         // lanes per repeat (256 bytes / widest element)
    int repeats = 0;
    bool counter = false;  // counter mode: the first `count` lanes over all repeats
    uint64_t count = 0;
    uint64_t bits[4] = {0, 0, 0, 0};
};
inline bool plan_active(const Plan& p, int r, int l) {
    if (p.counter) return static_cast<uint64_t>(r) * p.lanes + l < p.count;
    return (p.bits[l >> 6] >> (l & 63)) & 1u;
}
// Build a plan from a continuous mask / a bit mask (mask[]) / the SetVectorMask state.
Plan plan_continuous(const char* op, uint64_t mask, int repeat, int lanes, bool is_set_mask, const char* file,
                     int line);
Plan plan_bitwise(const char* op, const uint64_t* mask, int repeat, int lanes, bool is_set_mask, const char* file,
                  int line);
// A strided operand of a mask/repeat-form instruction (strides in 32-byte blocks).
struct MD {
    int buf;
    int64_t off;
    uint32_t esize;
    uint32_t blk;
    uint32_t rep;
    bool write;
};
inline int64_t lane_addr(const MD& m, int r, int l) {
    const int lpb = 32 / static_cast<int>(m.esize);
    return m.off + static_cast<int64_t>(r) * m.rep * 32 + static_cast<int64_t>(l / lpb) * m.blk * 32 +
           static_cast<int64_t>(l % lpb) * m.esize;
}
// Checks the active lanes of every operand (reads before writes) and counts the instruction.
// Returns false when nothing can be computed.
bool vec_mask_prologue(const char* op, const char* dtype, const Plan& plan, const MD* ops, int nops,
                       const char* file, int line);
// Reductions write outside the lane pattern: a single byte range check + counting.
void vec_count_only(const char* op, const char* dtype, uint64_t elements, uint64_t repeats);

}  // namespace evk_sim

#endif  // EVK_SIM_COMMON_H
