// EvoKernel Ascend C CPU emulator: runtime (compiled once, linked with every kernel).
//
// Holds the state behind the kernel-side API (per-block Unified Buffer with a per-byte written
// bitmap, queues and buffers, pipe-ordering records, counters), the GM allocation table with a
// per-byte writer-block map over outputs, the violation log, the host-side registry (OpDef,
// TilingFunc, InferShape, tiling classes), the block runner and the JSON report.
#include <algorithm>
#include <array>
#include <csetjmp>
#include <csignal>
#include <cstdarg>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "evk_sim/common.h"
#define EVK_SIM_KERNEL 1
#include "evk_sim/kernel.h"
#undef EVK_SIM_KERNEL
#include "evk_sim/host.h"
#include "evk_sim/race.h"
#include "evk_sim/runtime.h"
#include "register/tilingdata_base.h"

namespace evk_sim {

// =============================================================================================
// State
// =============================================================================================
namespace {

// ---- hardware model: the constants of the latency model ------------------------------------------------
// The single source of these numbers is verifier/backends/ascend_sim/hardware.py (dataclass Ascend910B);
// the defaults below must equal its defaults (a test compares them through the report's "hw_model").
enum HwKey : int {
    HW_AIV_CORES = 0, HW_CLOCK_HZ, HW_HBM_BYTES_PER_S, HW_LAUNCH_US, HW_BLOCK_START_CYCLES,
    HW_SCALAR_ISSUE_CYCLES, HW_SCALAR_UB_ACCESS_CYCLES, HW_SCALAR_GM_READ_CYCLES, HW_SCALAR_GM_WRITE_CYCLES,
    HW_MTE2_BYTES_PER_CYCLE, HW_MTE3_BYTES_PER_CYCLE, HW_MTE2_SETUP_CYCLES, HW_MTE3_SETUP_CYCLES,
    HW_MTE2_LATENCY_CYCLES, HW_MTE3_LATENCY_CYCLES,
    HW_GM_BURST_BYTES, HW_VEC_INSTR_CYCLES,
    HW_VEC_SIMPLE_B16, HW_VEC_SIMPLE_B32, HW_VEC_CAST_B16, HW_VEC_CAST_B32, HW_VEC_EXP_B16, HW_VEC_EXP_B32,
    HW_VEC_DIV_B16, HW_VEC_DIV_B32, HW_VEC_RECIP_B16, HW_VEC_RECIP_B32, HW_VEC_REDUCE_B16, HW_VEC_REDUCE_B32,
    HW_VEC_REDUCE_TAIL_CYCLES, HW_CUBE_FP16_FLOPS_PER_S, HW_CUBE_FP32_RATIO,
    HW_CUBE_BF16_RATIO, HW_CUBE_INT8_RATIO, HW_L1_BYTES, HW_L0A_BYTES, HW_L0B_BYTES, HW_L0C_BYTES, HW_BT_BYTES,
    HW_MTE1_BYTES_PER_CYCLE, HW_MTE1_SETUP_CYCLES, HW_MMAD_SETUP_CYCLES, HW_FIX_BYTES_PER_CYCLE,
    HW_FIX_SETUP_CYCLES, HW_FIX_LATENCY_CYCLES, HW_SYNC_ALL_CYCLES, HW_SCALAR_LIBM_CALL_CYCLES, HW_COUNT
};
struct HwSpec {
    const char* key;
    double def;
    double min;  // smallest accepted value
};
const HwSpec kHw[HW_COUNT] = {
    {"aiv_cores", 40, 1}, {"clock_hz", 1.8e9, 1}, {"hbm_bytes_per_s", 1.6e12, 1}, {"launch_us", 3.0, 0},
    {"block_start_cycles", 200, 0}, {"scalar_issue_cycles", 10, 0}, {"scalar_ub_access_cycles", 10, 0},
    {"scalar_gm_read_cycles", 500, 0}, {"scalar_gm_write_cycles", 200, 0}, {"mte2_bytes_per_cycle", 32, 1e-9},
    {"mte3_bytes_per_cycle", 32, 1e-9}, {"mte2_setup_cycles", 64, 0}, {"mte3_setup_cycles", 64, 0},
    {"mte2_latency_cycles", 600, 0}, {"mte3_latency_cycles", 300, 0},
    {"gm_burst_bytes", 128, 1}, {"vec_instr_cycles", 8, 0},
    {"vec_simple_b16", 1, 0}, {"vec_simple_b32", 1, 0}, {"vec_cast_b16", 1, 0}, {"vec_cast_b32", 1, 0},
    {"vec_exp_b16", 4, 0}, {"vec_exp_b32", 4, 0}, {"vec_div_b16", 4, 0}, {"vec_div_b32", 4, 0},
    {"vec_recip_b16", 2, 0}, {"vec_recip_b32", 2, 0}, {"vec_reduce_b16", 2, 0}, {"vec_reduce_b32", 2, 0},
    {"vec_reduce_tail_cycles", 16, 0}, {"cube_fp16_flops_per_s", 2.95e14, 1}, {"cube_fp32_ratio", 0.25, 1e-9},
    {"cube_bf16_ratio", 0.5, 1e-9}, {"cube_int8_ratio", 2.0, 1e-9}, {"l1_bytes", 524288, 1024},
    {"l0a_bytes", 65536, 1024}, {"l0b_bytes", 65536, 1024}, {"l0c_bytes", 131072, 1024}, {"bt_bytes", 1024, 64},
    {"mte1_bytes_per_cycle", 256, 1e-9}, {"mte1_setup_cycles", 32, 0}, {"mmad_setup_cycles", 32, 0},
    {"fix_bytes_per_cycle", 32, 1e-9}, {"fix_setup_cycles", 64, 0}, {"fix_latency_cycles", 300, 0},
    {"sync_all_cycles", 2000, 0}, {"scalar_libm_call_cycles", 100, 0},
};
const char* const kHwDefaultName = "Ascend910B";

struct HwModel {
    std::string name = kHwDefaultName;
    double v[HW_COUNT];
    HwModel() {
        for (int i = 0; i < HW_COUNT; ++i) v[i] = kHw[i].def;
    }
    double operator[](int k) const { return v[k]; }
};

// Parses a flat JSON object {"key": number, ..., "name": "text"} over the defaults. Unknown keys, other
// value types and out-of-range numbers are errors (Python and C++ must agree on every key).
bool parse_hw_json(const char* text, HwModel& hw, std::string& err) {
    const char* c = text;
    auto ws = [&]() {
        while (*c == ' ' || *c == '\t' || *c == '\n' || *c == '\r') ++c;
    };
    auto str = [&](std::string& out) -> bool {
        if (*c != '"') return false;
        ++c;
        out.clear();
        while (*c && *c != '"') {
            if (*c == '\\' && c[1]) ++c;
            out += *c++;
        }
        if (*c != '"') return false;
        ++c;
        return true;
    };
    ws();
    if (*c != '{') {
        err = "hw_model_json: expected a JSON object";
        return false;
    }
    ++c;
    ws();
    if (*c == '}') return true;
    for (;;) {
        ws();
        std::string key;
        if (!str(key)) {
            err = "hw_model_json: expected a quoted key";
            return false;
        }
        ws();
        if (*c != ':') {
            err = "hw_model_json: expected ':' after \"" + key + "\"";
            return false;
        }
        ++c;
        ws();
        if (key == "name") {
            if (!str(hw.name)) {
                err = "hw_model_json: \"name\" must be a string";
                return false;
            }
        } else {
            int k = -1;
            for (int i = 0; i < HW_COUNT; ++i)
                if (key == kHw[i].key) k = i;
            if (k < 0) {
                err = "hw_model_json: unknown key \"" + key + "\"";
                return false;
            }
            char* end = nullptr;
            double v = std::strtod(c, &end);
            if (end == c || !std::isfinite(v) || v < kHw[k].min) {
                err = "hw_model_json: \"" + key + "\" needs a finite number >= " + std::to_string(kHw[k].min);
                return false;
            }
            if (k == HW_AIV_CORES && (v != std::floor(v) || v > 65535)) {
                err = "hw_model_json: \"aiv_cores\" must be an integer in 1..65535";
                return false;
            }
            hw.v[k] = v;
            c = end;
        }
        ws();
        if (*c == ',') {
            ++c;
            continue;
        }
        if (*c == '}') {
            ++c;
            ws();
            if (*c) {
                err = "hw_model_json: text after the object";
                return false;
            }
            return true;
        }
        err = "hw_model_json: expected ',' or '}'";
        return false;
    }
}

struct Options {
    uint32_t core_num_aiv = 40;
    uint64_t ub_size = 196608;
    int half_saturate = 0;
    bool keep_outputs = false;
    uint64_t max_instructions = 0;
    int max_violations = 200;
    HwModel hw;
};

struct Violation {
    std::string rule;
    int severity = 0;
    int block = -1;
    std::vector<int> blocks;
    uint64_t count = 0;
    std::string message;
    std::string file;
    int line = 0;
};

enum AllocKind { AK_INPUT = 0, AK_OUTPUT = 1, AK_WORKSPACE = 2, AK_TILING = 3, AK_INOUT = 4 };

struct Alloc {
    std::string name;
    int kind = AK_INPUT;
    uint8_t* base = nullptr;      // kernel-visible address (inside the protected GM view)
    uint8_t* host = nullptr;      // the same bytes in the runtime's read/write view
    uint64_t n = 0;
    void* caller = nullptr;       // the caller's buffer (copied in before, and for outputs back after the run)
    bool copy_back = false;
    std::vector<int32_t> writer;  // outputs: last writing block per byte (-1 none)
    // what the Ascend C API moved (gm_access): bytes read and written, and for outputs a bitmap of the bytes any
    // API write covered. The report carries them; the trusted parent checks them against the output bytes it reads
    uint64_t api_read = 0, api_written = 0, changed = 0;
    std::vector<uint64_t> covered;
    std::vector<uint64_t> race;   // last kernel write per byte for race detection (race.h); empty until written
    std::vector<uint32_t> race_rd;  // its unordered reads per byte (race.h: a read set id); empty until read
};

// The kernel's GM addresses point at nothing. Every kernel argument lives in the runtime's private memory (`rw`);
// the kernel gets addresses in an unbacked window of the address space (`kv`, nothing is mapped there), so a raw
// dereference of a kernel GM pointer faults (reported as gm_raw_access) while every API path translates the
// address to rw. Lifting a protection (mprotect on kv) gains nothing: there is no data behind the window. The one
// exception is a small read-only view at the window's start (a memfd mapped twice): the tiling, which a kernel
// may read through a raw pointer as the NPU's scalar unit does. The window is fixed when the library starts
// (evk_sim_set_window), so the worker can forbid every mapping change inside it (sandboxed/ascend_seccomp.py).
struct GmRegion {
    uint8_t* rw = nullptr;
    uint8_t* kv = nullptr;
    uint64_t size = 0;
    std::string method = "not mapped";  // "unbacked-window" (always, once mapped)
    GmRegion() = default;
    GmRegion(const GmRegion&) = delete;
    GmRegion& operator=(const GmRegion&) = delete;
    ~GmRegion() { release(); }
    void release() {
        if (rw) munmap(rw, size);
        rw = kv = nullptr;
        size = 0;
    }
};

struct VecCounter {
    std::string op, dtype;
    uint64_t calls = 0, elements = 0, repeats = 0;
};

struct Counters {
    uint64_t mte2_bytes = 0, mte2_calls = 0, mte2_bursts = 0;
    uint64_t mte3_bytes = 0, mte3_calls = 0, mte3_bursts = 0;
    uint64_t ubcopy_bytes = 0, ubcopy_calls = 0;
    uint64_t scalar[SC_COUNT] = {0, 0, 0, 0};
    uint64_t scalar_gm_bytes[2] = {0, 0};  // bytes read / written by GlobalTensor GetValue / SetValue
    uint64_t libm_calls = 0;               // calls of the kernel's code into libm (evk_libm_* below)
    uint64_t barriers = 0, set_flags = 0, wait_flags = 0, sync_alls = 0;
    uint64_t allocs = 0, enques = 0, deques = 0, frees = 0;
    uint64_t instructions = 0;
    // cube core: Mmad calls and multiply-accumulates by input kind (half, bfloat16, float, int8), L1->L0/BT
    // bytes (MTE1) and L0C->GM bytes (FIX)
    uint64_t mmad_calls = 0, mmad_macs[4] = {0, 0, 0, 0};
    uint64_t mte1_bytes = 0, mte1_calls = 0, fix_bytes = 0, fix_calls = 0;
    std::vector<VecCounter> vec;
};

enum BufState { BS_FREE = 0, BS_ALLOCATED = 1, BS_ENQUEUED = 2, BS_DEQUEUED = 3 };

struct Buffer {
    int queue = -1;
    int slot = 0;
    uint32_t off = 0, len = 0;
    int state = BS_FREE;
    uint64_t enq_seq = 0;
    bool alive = true;
};

struct Queue {
    int pipe = -1;
    int pos_src = 0, pos_dst = 0;
    int depth = 1, num = 1;
    uint32_t len = 0;
    bool tbuf = false;
    std::vector<int> bufs;
    std::vector<int> fifo;
    int next = 0;
    bool alive = true;
    std::string file;
    int line = 0;
    uint64_t allocs = 0;
    bool gm_pool = false;  // a CO2 queue on the 910B: CANN takes it from the TPipe's GM pool (not emulated)
};

struct PipeRec {
    uint32_t ub_start = 0;
    uint32_t mem_start[MEM_COUNT] = {};
    bool alive = true;
    std::vector<int> queues;
};

struct Flag {
    int pending = 0;
    uint64_t seq = 0;
    const char* file = "";
    int line = 0;
};

// ---- the per-block pipe schedule (latency model) --------------------------------------------------------
struct URange {
    int64_t lo, hi;  // UB byte offsets [lo, hi)
};
// The API instruction being issued: its pipe, UB ranges read/written, and cost. It is scheduled when the
// next instruction (or a sync, or the block end) comes, once all its accesses and costs are known.
struct PendingInstr {
    bool open = false;
    int pipe = PID_S;
    double cost = 0;      // cycles on its pipe (MTE: + startup + bytes at close; V: + per-instruction cycles)
    double gm_bytes = 0;  // burst-rounded GM bytes (MTE)
    int nrd = 0, nwr = 0;
    URange rd[16], wr[16];
};
struct Timing {
    double issue = 0;                 // when the scalar unit issues the next API call (cycles)
    double pipe_free[PID_COUNT] = {};  // when each pipe can start its next instruction
    double done[PID_COUNT] = {};       // when everything given to a pipe has completed (MTE: + GM latency)
    double busy[PID_COUNT] = {};
    uint64_t ninstr[PID_COUNT] = {};
    double scalar_stall = 0;           // cycles the issue waited for data or flags (GetValue, X_S, PIPE_ALL)
    double barrier_release = 0;        // SyncAll: when the last block arrived (+ the barrier's cost)
    double gm_bytes[3] = {};           // burst-rounded GM bytes moved by MTE2, MTE3, FIX
    uint64_t mte_copies[3] = {};
    double flag_time[PID_COUNT][PID_COUNT][8] = {};
    std::vector<double> w_end, r_end;  // per 32-byte UB block: end of the last write / of the last read
    PendingInstr p;
};
struct TimingReport {
    double cycles = 0;
    double scalar_stall = 0;
    double busy[PID_COUNT] = {};
    uint64_t ninstr[PID_COUNT] = {};
    double gm_bytes[3] = {};
    uint64_t mte_copies[3] = {};
};

struct Block {
    int idx = 0;
    std::vector<uint8_t> ub, init, wpipe;
    std::vector<uint64_t> wseq;
    uint32_t ub_used = 0, ub_peak = 0;       // the Unified Buffer (mem_used[MEM_UB] mirrors ub_used)
    uint32_t mem_used[MEM_COUNT] = {}, mem_peak[MEM_COUNT] = {};
    int kernel_type = 0;
    int role = 0, sub = 0, aicore = -1;  // MIX kernels: 0 AIV / 1 AIC, the AIV's sub-block, its AI core
    int total_buffers = 0;
    int pos_buffers[32] = {};
    std::vector<Buffer> bufs;
    std::vector<Queue> queues;
    std::vector<PipeRec> pipes;
    uint64_t seq = 0;
    uint64_t synced[PID_COUNT][PID_COUNT] = {};
    Flag flags[PID_COUNT][PID_COUNT][8] = {};
    int fetch_next[PID_COUNT][PID_COUNT] = {};
    MaskState mask;
    int atomic_mode = 0;
    std::string atomic_dtype;
    Counters c;
    Timing tm;
    bool aborted = false;
    bool crashed = false;
    bool active = false;
};

struct BlockReport {
    int idx = 0;
    std::string status;
    Counters c;
    TimingReport tm;
    uint32_t ub_peak = 0;
    uint32_t mem_peak[MEM_COUNT] = {};
    int kernel_type = 0;
    int role = 0, sub = 0, aicore = -1;
    std::vector<Queue> queues;
};

struct Run {
    Options opt;
    std::string op_type, kernel_name;
    std::vector<Violation> viol;
    std::map<std::string, size_t> viol_index;
    uint64_t viol_dropped = 0;
    std::vector<Alloc> allocs;
    uint32_t block_dim = 0;
    uint64_t tiling_key = 0;
    std::vector<BlockReport> blocks;
    std::string status = "ok";
    std::string error;
    // operator flow details for the report
    bool op_flow = false;
    uint64_t tiling_size = 0;
    std::vector<uint8_t> tiling_bytes;
    std::vector<size_t> workspace_sizes;
    uint64_t workspace_bytes = 0;
    uint32_t schedule_mode = 0;
    bool infer_shape_ran = false;
    bool infer_shape_ok = false;
    std::vector<std::vector<int64_t>> infer_shapes;
    std::string printf_log;
    std::string race_stats;  // the race detector's cost (race.h stats_json), empty when it was off
    GmRegion gm;
};

Run* g_run = nullptr;
// the kernel-visible GM addresses of the current run (inside the window) and the runtime's bytes behind them,
// read by the signal handler and the address translation
uint8_t* volatile g_gm_kv = nullptr;
uint8_t* volatile g_gm_rw = nullptr;
volatile uint64_t g_gm_size = 0;
// the window (fixed for the library's lifetime) and its read-only tiling view: kv at the window's start, rw elsewhere
volatile uintptr_t g_win_base = 0;
volatile uint64_t g_win_size = 0;
uint8_t* volatile g_tv_rw = nullptr;
volatile uint64_t g_tv_size = 0;
// the last kernel source position an API call reported (for faults outside the API)
const char* g_last_file = nullptr;
int g_last_line = 0;
Block g_blk;
std::string g_last_error;
uint64_t g_printf_bytes = 0;

const char* pipe_name(int p) {
    switch (p) {
        case PID_S: return "scalar (S)";
        case PID_V: return "vector (V)";
        case PID_MTE2: return "MTE2 (GM->UB copy)";
        case PID_MTE3: return "MTE3 (UB->GM copy)";
        case PID_MTE1: return "MTE1 (L1->L0A/L0B/BT load)";
        case PID_M: return "cube (M)";
        case PID_FIX: return "FIX (L0C->GM write-out)";
        default: return "unknown";
    }
}
const char* pipe_short(int p) {
    switch (p) {
        case PID_S: return "S";
        case PID_V: return "V";
        case PID_MTE2: return "MTE2";
        case PID_MTE3: return "MTE3";
        case PID_MTE1: return "MTE1";
        case PID_M: return "M";
        case PID_FIX: return "FIX";
        default: return "?";
    }
}
const char* pos_name(int pos) {
    switch (pos) {
        case 9: return "VECIN";
        case 10: return "VECOUT";
        case 11: return "VECCALC";
        case 0: return "GM";
        case 1: return "A1";
        case 2: return "A2";
        case 3: return "B1";
        case 4: return "B2";
        case 5: return "C1";
        case 6: return "C2";
        case 7: return "CO1";
        case 8: return "CO2";
        case 13: return "TSCM";
        default: return "other";
    }
}
const char* sev_name(int s) { return s == SEV_FATAL ? "fatal" : s == SEV_ERROR ? "error" : "warning"; }

std::string vfmt(const char* fmt, va_list ap) {
    char buf[1024];
    va_list ap2;
    va_copy(ap2, ap);
    int n = std::vsnprintf(buf, sizeof(buf), fmt, ap2);
    va_end(ap2);
    if (n < 0) return std::string();
    if (static_cast<size_t>(n) < sizeof(buf)) return std::string(buf, static_cast<size_t>(n));
    std::string s(static_cast<size_t>(n) + 1, '\0');
    std::vsnprintf(&s[0], s.size(), fmt, ap);
    s.resize(static_cast<size_t>(n));
    return s;
}
std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
    va_list ap;
    va_start(ap, f);
    std::string s = vfmt(f, ap);
    va_end(ap);
    return s;
}

int g_print_depth = 0;     // inside a kernel print's arguments (print_scope)
const char* g_api_scope = nullptr;  // inside a high-level API's own instructions (api_scope)
bool g_lanes_lenient = false;  // inside vec_lanes_prologue's own checks (unwritten lanes propagate, not errors)
int g_block_override = -2;  // a report made after the blocks ran, for the block it is about (resolve_overlaps)
int current_block() { return g_block_override != -2 ? g_block_override : g_blk.active ? g_blk.idx : -1; }
inline void note_loc(const char* file, int line) {
    if (file && *file) {
        g_last_file = file;
        g_last_line = line;
    }
}

void record(const char* rule, int sev, const char* file, int line, std::string msg) {
    if (g_api_scope)
        msg = fmt("inside the %s API (its own instructions, not a line of this kernel; the kernel calls it here): ",
                  g_api_scope) + msg;
    if (!g_run) {
        std::fprintf(stderr, "[evk-sim %s] %s (%s:%d)\n", rule, msg.c_str(), file ? file : "?", line);
        return;
    }
    std::string key = std::string(rule) + "|" + (file ? file : "") + "|" + std::to_string(line);
    int blk = current_block();
    auto it = g_run->viol_index.find(key);
    if (it != g_run->viol_index.end()) {
        Violation& v = g_run->viol[it->second];
        ++v.count;
        if (sev > v.severity) {
            v.severity = sev;
            v.message = msg;
        }
        if (v.blocks.empty() || v.blocks.back() != blk) {
            if (v.blocks.size() < 64) v.blocks.push_back(blk);
        }
        return;
    }
    if (static_cast<int>(g_run->viol.size()) >= g_run->opt.max_violations) {
        ++g_run->viol_dropped;
        return;
    }
    Violation v;
    v.rule = rule;
    v.severity = sev;
    v.block = blk;
    v.blocks.push_back(blk);
    v.count = 1;
    v.message = std::move(msg);
    v.file = file ? file : "";
    v.line = line;
    g_run->viol_index[key] = g_run->viol.size();
    g_run->viol.push_back(std::move(v));
}

// ---- latency model: the per-block schedule -------------------------------------------------------------
// Pipes S (scalar), V, MTE2, MTE3 each run their instructions in order. The scalar unit issues every API
// call in program order (scalar_issue_cycles each); an instruction starts when it has been issued, its pipe
// is free and its UB data dependences are met: it reads bytes only after their last writer finished (RAW)
// and writes bytes only after their last readers and writer finished (WAR/WAW). That is what queues,
// SetFlag/WaitFlag and AllocTensor enforce on the device, so BUFFER_NUM=2 overlaps copies with compute and
// BUFFER_NUM=1 serialises them without special cases. Scalar UB accesses wait for their data and stall the
// issue; explicit WaitFlag with S as the waiting pipe and PipeBarrier<PIPE_ALL> stall it too.
const HwModel& hw() {
    static const HwModel def;
    return g_run ? g_run->opt.hw : def;
}

void tm_reset(uint32_t ub_size) {
    Timing& t = g_blk.tm;
    double start = hw()[HW_BLOCK_START_CYCLES];
    t.issue = start;
    for (int p = 0; p < PID_COUNT; ++p) {
        t.pipe_free[p] = 0;
        t.done[p] = 0;
        t.busy[p] = 0;
        t.ninstr[p] = 0;
    }
    t.busy[PID_S] = start;
    t.scalar_stall = 0;
    t.barrier_release = 0;
    for (int k = 0; k < 3; ++k) {
        t.gm_bytes[k] = 0;
        t.mte_copies[k] = 0;
    }
    for (auto& a : t.flag_time)
        for (auto& b : a)
            for (double& f : b) f = 0;
    t.w_end.assign(ub_size / 32 + 2, 0.0);
    t.r_end.assign(ub_size / 32 + 2, 0.0);
    t.p = PendingInstr();
}

void tm_add_range(URange* rs, int& n, int64_t lo, int64_t hi) {
    for (int i = n - 1; i >= 0 && i >= n - 2; --i)
        if (lo <= rs[i].hi && hi >= rs[i].lo) {  // overlapping or touching: extend
            rs[i].lo = std::min(rs[i].lo, lo);
            rs[i].hi = std::max(rs[i].hi, hi);
            return;
        }
    if (n < 16) {
        rs[n++] = URange{lo, hi};
        return;
    }
    rs[n - 1].lo = std::min(rs[n - 1].lo, lo);  // full: widen the last one (a conservative dependence)
    rs[n - 1].hi = std::max(rs[n - 1].hi, hi);
}

// Schedules the pending instruction.
void tm_close() {
    Timing& t = g_blk.tm;
    PendingInstr& p = t.p;
    if (!p.open) return;
    p.open = false;
    const HwModel& h = hw();
    double cost = p.cost;
    double latency = 0;  // MTE: GM round trip after the pipe has issued the copy
    if (p.pipe == PID_MTE2 || p.pipe == PID_MTE3) {
        const bool in = p.pipe == PID_MTE2;
        cost += h[in ? HW_MTE2_SETUP_CYCLES : HW_MTE3_SETUP_CYCLES] +
                p.gm_bytes / h[in ? HW_MTE2_BYTES_PER_CYCLE : HW_MTE3_BYTES_PER_CYCLE];
        latency = h[in ? HW_MTE2_LATENCY_CYCLES : HW_MTE3_LATENCY_CYCLES];
        t.gm_bytes[in ? 0 : 1] += p.gm_bytes;
        ++t.mte_copies[in ? 0 : 1];
    } else if (p.pipe == PID_FIX) {  // L0C -> GM: a write-out like MTE3's, on its own pipe
        cost += h[HW_FIX_SETUP_CYCLES] + p.gm_bytes / h[HW_FIX_BYTES_PER_CYCLE];
        latency = h[HW_FIX_LATENCY_CYCLES];
        t.gm_bytes[2] += p.gm_bytes;
        ++t.mte_copies[2];
    } else if (p.pipe == PID_MTE1) {
        cost += h[HW_MTE1_SETUP_CYCLES];
    } else if (p.pipe == PID_M) {
        cost += h[HW_MMAD_SETUP_CYCLES];
    } else if (p.pipe == PID_V) {
        cost += h[HW_VEC_INSTR_CYCLES];
    }
    double ready = 0;
    const size_t nb = t.w_end.size();
    for (int i = 0; i < p.nrd; ++i)
        for (int64_t b = p.rd[i].lo / 32; b < (p.rd[i].hi + 31) / 32 && static_cast<size_t>(b) < nb; ++b)
            ready = std::max(ready, t.w_end[b]);
    for (int i = 0; i < p.nwr; ++i)
        for (int64_t b = p.wr[i].lo / 32; b < (p.wr[i].hi + 31) / 32 && static_cast<size_t>(b) < nb; ++b)
            ready = std::max(ready, std::max(t.w_end[b], t.r_end[b]));
    double start, end;
    if (p.pipe == PID_S) {  // the scalar unit itself: it waits for the data and stalls the issue
        start = std::max(t.issue, ready);
        t.scalar_stall += start - t.issue;
        end = start + cost;
        t.issue = end;
    } else {
        start = std::max(std::max(t.issue, t.pipe_free[p.pipe]), ready);
        end = start + cost;
        t.pipe_free[p.pipe] = end;
    }
    t.done[p.pipe] = std::max(t.done[p.pipe], end + latency);
    t.busy[p.pipe] += cost;
    ++t.ninstr[p.pipe];
    // local reads are over when the instruction leaves its pipe; GM->UB/L1 data lands after the GM latency
    const double landed = p.pipe == PID_MTE2 ? end + latency : end;
    for (int i = 0; i < p.nrd; ++i)
        for (int64_t b = p.rd[i].lo / 32; b < (p.rd[i].hi + 31) / 32 && static_cast<size_t>(b) < nb; ++b)
            t.r_end[b] = std::max(t.r_end[b], end);
    for (int i = 0; i < p.nwr; ++i)
        for (int64_t b = p.wr[i].lo / 32; b < (p.wr[i].hi + 31) / 32 && static_cast<size_t>(b) < nb; ++b)
            t.w_end[b] = std::max(t.w_end[b], landed);
}

// A scalar-only API call (AllocTensor, FreeTensor, sync calls): costs issue cycles.
void tm_api_call(double extra = 0) {
    tm_close();
    Timing& t = g_blk.tm;
    double c = hw()[HW_SCALAR_ISSUE_CYCLES] + extra;
    t.issue += c;
    t.busy[PID_S] += c;
}

// The end of the block: its makespan.
double tm_finish() {
    tm_close();
    Timing& t = g_blk.tm;
    double end = t.issue;
    for (int p = 0; p < PID_COUNT; ++p) end = std::max(end, t.done[p]);
    return end;
}

// Non-kernel-side reporting (host code, runtime checks).
// stdout (fd 1) pointed at stderr for a scope: what host code prints goes to the log, not to the caller's
// stdout (restored on restore() or at the end of the scope; C stdio and iostreams flushed on both edges).
struct HostPrintsToStderr {
    int saved = -1;
    HostPrintsToStderr() {
        std::fflush(stdout);
        std::cout.flush();
        saved = dup(1);
        if (saved >= 0 && dup2(2, 1) < 0) { close(saved); saved = -1; }
    }
    void restore() {
        if (saved < 0) return;
        std::fflush(stdout);
        std::cout.flush();
        dup2(saved, 1);
        close(saved);
        saved = -1;
    }
    ~HostPrintsToStderr() { restore(); }
};
void host_violation(const char* rule, int sev, const char* fmt_, ...) __attribute__((format(printf, 3, 4)));
void host_violation(const char* rule, int sev, const char* fmt_, ...) {
    va_list ap;
    va_start(ap, fmt_);
    std::string m = vfmt(fmt_, ap);
    va_end(ap);
    record(rule, sev, "", 0, std::move(m));
}

}  // namespace

// =============================================================================================
// Kernel-side hooks
// =============================================================================================
uint8_t* g_ub = nullptr;
uint8_t* g_ub_init = nullptr;
uint32_t g_ub_size = 196608;
// the arena: each memory's base offset and size (set per run from the UB size and the hw model)
uint32_t g_mem_base[MEM_COUNT] = {};
uint32_t g_mem_size[MEM_COUNT] = {};

uint32_t mem_base(int mem) { return mem >= 0 && mem < MEM_COUNT ? g_mem_base[mem] : 0; }
const char* mem_name(int mem) {
    switch (mem) {
        case MEM_UB: return "UB";
        case MEM_L1: return "L1";
        case MEM_L0A: return "L0A";
        case MEM_L0B: return "L0B";
        case MEM_L0C: return "L0C";
        case MEM_BT: return "BT";
        default: return "none";
    }
}

namespace {
// Lays the memories out one after another (each base 1024-byte aligned).
void layout_memories(uint32_t ub_size) {
    const HwModel& h = g_run ? g_run->opt.hw : HwModel();
    const double sizes[MEM_COUNT] = {static_cast<double>(ub_size), h[HW_L1_BYTES], h[HW_L0A_BYTES],
                                     h[HW_L0B_BYTES], h[HW_L0C_BYTES], h[HW_BT_BYTES]};
    uint64_t at = 0;
    for (int m = 0; m < MEM_COUNT; ++m) {
        g_mem_base[m] = static_cast<uint32_t>(at);
        g_mem_size[m] = static_cast<uint32_t>(sizes[m]);
        at = (at + g_mem_size[m] + 1023) & ~1023ull;
    }
}
}  // namespace

void violation(const char* rule, int severity, const char* file, int line, const char* f, ...) {
    va_list ap;
    va_start(ap, f);
    std::string m = vfmt(f, ap);
    va_end(ap);
    record(rule, severity, file, line, std::move(m));
    if (severity >= SEV_FATAL) {
        g_blk.aborted = true;
        throw BlockAbort();
    }
}

void fatal(const char* rule, const char* file, int line, const char* f, ...) {
    va_list ap;
    va_start(ap, f);
    std::string m = vfmt(f, ap);
    va_end(ap);
    record(rule, SEV_FATAL, file, line, std::move(m));
    g_blk.aborted = true;
    throw BlockAbort();
}

int64_t block_idx() { return g_blk.idx; }
int64_t block_num() { return g_run ? g_run->block_dim : 1; }
uint64_t tiling_key() { return g_run ? g_run->tiling_key : 0; }
int half_overflow_saturates() { return g_run ? g_run->opt.half_saturate : 0; }

void begin_instr(int pipe) {
    tm_close();
    {
        Timing& t = g_blk.tm;
        const double c = hw()[HW_SCALAR_ISSUE_CYCLES];
        t.issue += c;
        t.busy[PID_S] += c;
        t.p.open = true;
        t.p.pipe = pipe >= 0 && pipe < PID_COUNT ? pipe : PID_S;
        t.p.cost = 0;
        t.p.gm_bytes = 0;
        t.p.nrd = t.p.nwr = 0;
    }
    ++g_blk.seq;
    ++g_blk.c.instructions;
    if (g_run && g_run->opt.max_instructions && g_blk.c.instructions > g_run->opt.max_instructions)
        fatal("instruction_budget", "", 0,
              "block %d exceeded %llu emulated instructions (endless loop, or a far too fine tiling)", g_blk.idx,
              static_cast<unsigned long long>(g_run->opt.max_instructions));
}

namespace {
const char* buffer_origin(const Buffer& b, std::string& tmp) {
    if (b.queue < 0 || b.queue >= static_cast<int>(g_blk.queues.size())) return "an unknown buffer";
    const Queue& q = g_blk.queues[b.queue];
    tmp = fmt("%s %s buffer %d (InitBuffer at %s:%d, %u bytes)", q.tbuf ? "TBuf" : "TQue", pos_name(q.pos_src), b.slot,
              q.file.c_str(), q.line, q.len);
    return tmp.c_str();
}

void check_buffer(const char* instr, int buf, const char* file, int line) {
    if (buf < 0 || buf >= static_cast<int>(g_blk.bufs.size()) || !g_blk.bufs[buf].alive)
        fatal(EVK_RULE_INVALID_TENSOR, file, line,
              "%s on a LocalTensor that was never obtained from AllocTensor/DeQue/TBuf::Get (or whose TPipe was "
              "destroyed)",
              instr);
}

// bounds + state; returns the Buffer
Buffer& check_range(const char* instr, int buf, int64_t off, uint64_t n, const char* file, int line) {
    check_buffer(instr, buf, file, line);
    Buffer& B = g_blk.bufs[buf];
    std::string tmp;
    if (!g_blk.queues[B.queue].tbuf && B.state == BS_FREE)
        violation(EVK_RULE_USE_AFTER_FREE, SEV_ERROR, file, line,
                  "%s uses a tensor of %s after FreeTensor (or before AllocTensor); on the NPU the buffer may "
                  "already hold the next tile",
                  instr, buffer_origin(B, tmp));
    {
        const int m = mem_of_position(g_blk.queues[B.queue].pos_src);
        const int64_t lo = m >= 0 ? g_mem_base[m] : 0, hi = m >= 0 ? lo + g_mem_size[m] : g_ub_size;
        if (off < lo || off + static_cast<int64_t>(n) > hi)
            fatal(EVK_RULE_UB_OOB, file, line,
                  "%s touches %s bytes [%lld, %lld), outside the %lld-byte %s (tensor of %s)", instr, mem_name(m),
                  static_cast<long long>(off - lo), static_cast<long long>(off - lo + static_cast<int64_t>(n)),
                  static_cast<long long>(hi - lo), mem_name(m), buffer_origin(B, tmp));
    }
    if (off < static_cast<int64_t>(B.off) || static_cast<uint64_t>(off) + n > static_cast<uint64_t>(B.off) + B.len) {
        int64_t past = static_cast<int64_t>(off + n) - static_cast<int64_t>(B.off + B.len);
        violation(EVK_RULE_UB_OOB, SEV_ERROR, file, line,
                  "%s touches bytes [%lld, %lld) of a tensor whose buffer is only %u bytes (%s): %lld bytes %s; it "
                  "corrupts or reads a neighbouring buffer on the NPU",
                  instr, static_cast<long long>(off - B.off), static_cast<long long>(off - B.off + n), B.len,
                  buffer_origin(B, tmp), static_cast<long long>(past > 0 ? past : B.off - off),
                  past > 0 ? "past its end" : "before its start");
    }
    return B;
}
}  // namespace

void ub_access(const char* instr, int buf, int64_t off, uint64_t n, bool write, int pipe, const char* file, int line) {
    // vector and scalar instructions work on the Unified Buffer; DataCopy also moves GM <-> L1 and UB <-> L1
    const int m = mem_of_buf(buf);
    if (m != MEM_UB && m != MEM_NONE && !(m == MEM_L1 && std::strncmp(instr, "DataCopy", 8) == 0))
        violation(EVK_RULE_TENSOR_POSITION, SEV_ERROR, file, line,
                  "%s on a tensor in %s: this instruction works on the Unified Buffer (TPosition VECIN/VECOUT/"
                  "VECCALC)%s",
                  instr, mem_name(m), m == MEM_L1 ? "" : "; the cube buffers are reached by LoadData, Mmad and Fixpipe");
    local_access(instr, buf, off, n, write, pipe, true, file, line);
}

void copy_init(int64_t dst_off, int64_t src_off, uint64_t n) { std::memmove(g_ub_init + dst_off, g_ub_init + src_off, n); }

void local_access(const char* instr, int buf, int64_t off, uint64_t n, bool write, int pipe, bool check_init,
                  const char* file, int line) {
    note_loc(file, line);
    if (n == 0) return;
    if (g_blk.tm.p.open) {
        PendingInstr& pi = g_blk.tm.p;
        if (write)
            tm_add_range(pi.wr, pi.nwr, off, off + static_cast<int64_t>(n));
        else
            tm_add_range(pi.rd, pi.nrd, off, off + static_cast<int64_t>(n));
    }
    Buffer& B = check_range(instr, buf, off, n, file, line);
    std::string tmp;
    if (!write) {
        // init bytes: 0 never written, 1 written, 2 DataCopyPad filler (unspecified padding)
        uint64_t bad = 0, first = 0, pad = 0, pfirst = 0;
        const uint8_t* ini = g_ub_init + off;
        if (check_init && (std::memchr(ini, 0, n) || std::memchr(ini, 2, n))) {
            for (uint64_t i = 0; i < n; ++i) {
                if (ini[i] == 0) {
                    if (!bad) first = i;
                    ++bad;
                } else if (ini[i] == 2) {
                    if (!pad) pfirst = i;
                    ++pad;
                }
            }
        }
        if (bad && !g_lanes_lenient)  // a lane-wise instruction: its unwritten lanes propagate (vec_lanes_prologue)
            violation(EVK_RULE_UNINIT_READ, SEV_ERROR, file, line,
                      "%s reads %llu byte(s) of %s never written in this block, or computed lane by lane only from "
                      "such bytes (first at byte %lld of %s); on the NPU that is stale data from another tile or "
                      "kernel",
                      instr, static_cast<unsigned long long>(bad), mem_name(mem_of_buf(buf)), static_cast<long long>(off - B.off + first),
                      buffer_origin(B, tmp));
        if (pad && !g_lanes_lenient)  // padding lanes propagate the same way (marked padding, not unwritten)
            violation(EVK_RULE_UNINIT_READ, SEV_WARNING, file, line,
                      "%s reads %llu byte(s) of the unspecified padding DataCopyPad leaves after an unaligned block "
                      "(first at byte %lld of %s); harmless for elementwise work on the padding, wrong for "
                      "reductions over it (pad with isPad/paddingValue, or limit the count to the real length)",
                      instr, static_cast<unsigned long long>(pad), static_cast<long long>(off - B.off + pfirst),
                      buffer_origin(B, tmp));
        if (pipe < PID_COUNT) {
            int64_t b0 = off / 32, b1 = (off + static_cast<int64_t>(n) - 1) / 32;
            for (int64_t b = b0; b <= b1; ++b) {
                int w = g_blk.wpipe[b];
                if (w < PID_COUNT && w != pipe && g_blk.wseq[b] > g_blk.synced[w][pipe]) {
                    violation(EVK_RULE_MISSING_SYNC, SEV_WARNING, file, line,
                              "%s (%s pipe) reads %s data last written by the %s pipe with no %s->%s "
                              "synchronisation in between (EnQue/DeQue through a TQue, SetFlag/WaitFlag<HardEvent::"
                              "%s_%s>, or PipeBarrier<PIPE_ALL>()); on the NPU the pipes run concurrently and the "
                              "read may see stale data",
                              instr, pipe_short(pipe), mem_name(mem_of_buf(buf)), pipe_name(w), pipe_short(w),
                              pipe_short(pipe), pipe_short(w), pipe_short(pipe));
                    break;
                }
            }
        }
    } else {
        if (check_init) std::memset(g_ub_init + off, 1, n);
        int64_t b0 = off / 32, b1 = (off + static_cast<int64_t>(n) - 1) / 32;
        uint8_t wp = pipe == PID_S ? static_cast<uint8_t>(PID_NONE) : static_cast<uint8_t>(pipe);
        for (int64_t b = b0; b <= b1; ++b) {
            g_blk.wpipe[b] = wp;
            g_blk.wseq[b] = g_blk.seq;
        }
    }
}

void ub_align(const char* instr, const char* operand, int64_t off, uint32_t align, const char* file, int line) {
    if (align > 1 && off % align != 0)
        violation(EVK_RULE_UB_ALIGNMENT, SEV_ERROR, file, line,
                  "%s: the %s operand starts at UB byte offset %lld, not %u-byte aligned; the NPU requires "
                  "%u-byte aligned UB addresses here (slice tensors at multiples of %u bytes)",
                  instr, operand, static_cast<long long>(off), align, align, align);
}

namespace {
Alloc* find_alloc(const void* p) {
    if (!g_run) return nullptr;
    const uint8_t* q = static_cast<const uint8_t*>(p);
    for (Alloc& a : g_run->allocs)
        if (q >= a.base && q < a.base + (a.n ? a.n : 1)) return &a;
    return nullptr;
}
const char* kind_name(int k) {
    switch (k) {
        case AK_INPUT: return "input";
        case AK_OUTPUT: return "output";
        case AK_WORKSPACE: return "workspace";
        case AK_TILING: return "tiling";
        case AK_INOUT: return "in/out";
        default: return "buffer";
    }
}
std::string describe_gm(const void* p, uint64_t n) {
    const uint8_t* q = static_cast<const uint8_t*>(p);
    // nearest allocation that starts at or before p
    Alloc* best = nullptr;
    if (g_run)
        for (Alloc& a : g_run->allocs)
            if (a.base <= q && (!best || a.base > best->base)) best = &a;
    if (best)
        return fmt("bytes [%lld, %lld) of %s '%s' (%llu bytes)", static_cast<long long>(q - best->base),
                   static_cast<long long>(q - best->base + n), kind_name(best->kind), best->name.c_str(),
                   static_cast<unsigned long long>(best->n));
    return fmt("%llu bytes at %p, outside every kernel argument buffer", static_cast<unsigned long long>(n), p);
}
}  // namespace

namespace {
// bytes of [p, p + n) that lie inside one argument buffer, counted from p
uint64_t gm_valid_prefix(const void* p, uint64_t n) {
    Alloc* a = find_alloc(p);
    if (!a) return 0;
    const uint8_t* q = static_cast<const uint8_t*>(p);
    uint64_t avail = static_cast<uint64_t>(a->base + a->n - q);
    return avail < n ? avail : n;
}
}  // namespace

uint8_t* gm_host(const void* p) {
    const uint8_t* q = static_cast<const uint8_t*>(p);
    uint8_t* kv = g_gm_kv;
    if (kv && q >= kv && q < kv + g_gm_size) return g_gm_rw + (q - kv);
    const uint8_t* tv = reinterpret_cast<const uint8_t*>(g_win_base);
    if (g_tv_rw && q >= tv && q < tv + g_tv_size) return g_tv_rw + (q - tv);
    return const_cast<uint8_t*>(q);
}

namespace {
// ---- cross-core races on GM (see race.h) -------------------------------------------------------------
race::State g_race;

void race_access(Alloc* a, const char* instr, uint64_t start, uint64_t n, bool write, const char* file, int line) {
    // inputs and the tiling are read-only by contract: their reads are tracked only once the kernel wrote them
    const bool host_only = a->kind == AK_INPUT || a->kind == AK_TILING;
    if (write && a->race.empty()) a->race.assign(a->n, 0);
    if (!write && a->race_rd.empty() && !(host_only && a->race.empty())) a->race_rd.assign(a->n, 0);
    if (a->race.empty() && a->race_rd.empty()) return;
    const bool atomic = write && g_blk.atomic_mode != 0;
    const bool skip_waw = write && !atomic && !a->writer.empty();
    const race::Findings fs = g_race.access(a->race.empty() ? nullptr : a->race.data(),
                                            a->race_rd.empty() ? nullptr : a->race_rd.data(), start, n, write, atomic,
                                            skip_waw, file, line);
    const bool mix = g_race.aicore[g_race.cur] >= 0;
    const std::string at = fmt("%s:%d", file ? file : "", line);
    auto where = [](uint32_t site) {
        const auto& ws = g_race.sites[site];
        return ws.first ? fmt("%s:%d", ws.first, ws.second) : std::string("an unknown line");
    };
    const race::Finding& f = fs.raw;
    if (f.bytes && g_race.reported.insert({at, race::rec_site(f.rec)}).second) {
        const int w = f.who >= 0 ? f.who : 0;
        const std::string wat = where(race::rec_site(f.rec));
        const std::string by = race::rec_core(f.rec) == race::kGroup
            ? fmt("several cores accumulated atomically (among them %s; the latest add at %s)", g_race.name[w].c_str(),
                  wat.c_str())
            : fmt("%s wrote%s at %s", g_race.name[w].c_str(), (f.rec & race::kAtomicBit) ? " (atomic add)" : "",
                  wat.c_str());
        violation(EVK_RULE_RACE, SEV_ERROR, file, line,
                  "%s's %s %s %llu byte(s) of %s '%s' (first at byte %llu) that %s, and nothing orders that write "
                  "before this %s: on the NPU the cores run at the same time, so the result is undefined (stale or "
                  "partial data; the emulator merely ran the writer first). Make the writer signal after its write and "
                  "wait for it here (%s), or put a SyncAll between them",
                  g_race.name[g_race.cur].c_str(), instr, write ? "writes" : "reads",
                  static_cast<unsigned long long>(f.bytes), kind_name(a->kind), a->name.c_str(),
                  static_cast<unsigned long long>(f.first), by.c_str(), write ? "write" : "read",
                  mix ? "CrossCoreSetFlag after the write, CrossCoreWaitFlag before this access"
                      : "CrossCoreSetFlag/CrossCoreWaitFlag");
    }
    const race::Finding& r = fs.war;
    if (r.bytes && g_race.reported.insert({"R " + at, race::rec_site(r.rec)}).second)
        violation(EVK_RULE_RACE, SEV_ERROR, file, line,
                  "%s's %s writes%s %llu byte(s) of %s '%s' (first at byte %llu) that %s read at %s, and nothing "
                  "orders that read before this write: on the NPU the cores run at the same time, so the reader may "
                  "get this new data (or a mix of old and new) instead of what it meant to read (the emulator merely "
                  "ran the reader first). Make the reader signal after its read and wait for it here (%s), or put a "
                  "SyncAll between them",
                  g_race.name[g_race.cur].c_str(), instr, g_blk.atomic_mode ? " (atomic add)" : "",
                  static_cast<unsigned long long>(r.bytes), kind_name(a->kind), a->name.c_str(),
                  static_cast<unsigned long long>(r.first), g_race.name[r.who >= 0 ? r.who : 0].c_str(),
                  where(race::rec_site(r.rec)).c_str(),
                  mix ? "CrossCoreSetFlag after the read, CrossCoreWaitFlag before this write"
                      : "CrossCoreSetFlag/CrossCoreWaitFlag");
}
}  // namespace

namespace {
// marks bytes [start, start + n) in a bitmap of 64-byte words
void set_covered(std::vector<uint64_t>& bits, uint64_t start, uint64_t n) {
    uint64_t i = start, end = start + n;
    while (i < end && (i & 63)) bits[i >> 6] |= 1ull << (i & 63), ++i;
    while (i + 64 <= end) bits[i >> 6] = ~0ull, i += 64;
    while (i < end) bits[i >> 6] |= 1ull << (i & 63), ++i;
}
uint64_t count_covered(const std::vector<uint64_t>& bits) {
    uint64_t c = 0;
    for (uint64_t w : bits) c += static_cast<uint64_t>(__builtin_popcountll(w));
    return c;
}
}  // namespace

// Two blocks writing the same output bytes: an error when the values differ (the result depends on which write
// lands last), a warning when the later block writes the very bytes already there (both orders leave the same
// output: duplicated work, not a wrong result; CANN documents nothing about such writes, so no refusal). The
// values are known only after the write, so the verdict waits for the end of the run (resolve_overlaps),
// comparing the bytes then with the ones this write found.
namespace {
struct OverlapPending {
    Alloc* a = nullptr;
    int block = -1;
    uint64_t clash = 0, first = 0;
    std::string me, other, instr, file;
    int line = 0;
    std::vector<std::pair<uint64_t, std::vector<uint8_t>>> runs;  // clashing bytes: offset, values found
};
std::vector<OverlapPending> g_overlaps;
uint64_t g_overlap_bytes = 0;
constexpr uint64_t kOverlapKeepBytes = 64ull << 20;  // past this, a clash is judged at once (as an error)

void overlap_message(const OverlapPending& o, int sev, uint64_t differing) {
    if (sev == SEV_WARNING)
        violation(EVK_RULE_OVERLAP_SAME, SEV_WARNING, o.file.c_str(), o.line,
                  "%s's %s writes %llu byte(s) of %s '%s' that %s already wrote, with the same values (first at byte "
                  "%llu): both orders leave the same output, so this is duplicated work, not a wrong result",
                  o.me.c_str(), o.instr.c_str(), static_cast<unsigned long long>(o.clash), kind_name(o.a->kind),
                  o.a->name.c_str(), o.other.c_str(), static_cast<unsigned long long>(o.first));
    else
        violation(EVK_RULE_OVERLAP, SEV_ERROR, o.file.c_str(), o.line,
                  "%s's %s writes %llu byte(s) of %s '%s' already written by %s (first at byte %llu%s): blocks must "
                  "write disjoint ranges (check the per-block offset/length and the tail tile)",
                  o.me.c_str(), o.instr.c_str(), static_cast<unsigned long long>(o.clash), kind_name(o.a->kind),
                  o.a->name.c_str(), o.other.c_str(), static_cast<unsigned long long>(o.first),
                  differing ? fmt(", %llu of them with other values", static_cast<unsigned long long>(differing)).c_str()
                            : "");
}
}  // namespace

// At the end of a run: each overlapping write, judged on the bytes it left.
void resolve_overlaps() {
    for (const OverlapPending& o : g_overlaps) {
        uint64_t differing = 0;
        for (const auto& run : o.runs)
            for (size_t k = 0; k < run.second.size(); ++k) differing += o.a->host[run.first + k] != run.second[k];
        g_block_override = o.block;
        overlap_message(o, differing ? SEV_ERROR : SEV_WARNING, differing);
        g_block_override = -2;
    }
    g_overlaps.clear();
    g_overlap_bytes = 0;
}

bool gm_access(const char* instr, const void* p, uint64_t n, bool write, const void* tbase, uint64_t tbytes,
               const char* file, int line) {
    note_loc(file, line);
    if (n == 0) return true;
    Alloc* a = find_alloc(p);
    const uint8_t* q = static_cast<const uint8_t*>(p);
    if (!a || q + n > a->base + a->n) {
        if (write)
            fatal(EVK_RULE_GM_OOB, file, line,
                  "%s writes %s: past the end of the real buffer; on the NPU this corrupts other tensors or "
                  "raises an MPU address error (the emulator stops the block)",
                  instr, describe_gm(p, n).c_str());
        violation(EVK_RULE_GM_OOB, SEV_ERROR, file, line,
                  "%s reads %s: past the end of the real buffer (those bytes are garbage on the NPU; the emulator "
                  "leaves their destination unwritten)",
                  instr, describe_gm(p, n).c_str());
        return false;
    }
    if (tbytes) {
        const uint8_t* tb = static_cast<const uint8_t*>(tbase);
        if (q < tb || q + n > tb + tbytes)
            violation(EVK_RULE_GM_OOB, SEV_WARNING, file, line,
                      "%s %s %s, beyond the GlobalTensor's declared size (SetGlobalBuffer size) but inside the "
                      "real buffer",
                      instr, write ? "writes" : "reads", describe_gm(p, n).c_str());
    }
    if (write) {
        a->api_written += n;
        if (!a->covered.empty()) set_covered(a->covered, static_cast<uint64_t>(q - a->base), n);
    } else {
        a->api_read += n;
    }
    if (write) {
        if (a->kind == AK_INPUT)
            violation(EVK_RULE_INPUT_WRITTEN, SEV_WARNING, file, line, "%s writes %s: kernels must not modify inputs",
                      instr, describe_gm(p, n).c_str());
        if (!a->writer.empty() && g_blk.atomic_mode == 0) {
            // the writer of a byte: the block, or in a MIX kernel the core within its AI core (3k: the AIC of AI
            // core k, 3k+1+s: its AIV s). The AIC and the AIVs of one AI core may write the same bytes one after
            // the other (the kernel orders them with CrossCoreSetFlag/WaitFlag, e.g. a matmul's C rewritten in
            // place by its epilogue); other cores may not
            const bool mix = g_blk.aicore >= 0;
            int32_t me = mix ? g_blk.aicore * 3 + (g_blk.role == 1 ? 0 : 1 + g_blk.sub) : g_blk.idx;
            uint64_t start = static_cast<uint64_t>(q - a->base);
            int other = -1;
            uint64_t first = 0, clash = 0;
            OverlapPending o;
            for (uint64_t i = start; i < start + n; ++i) {
                int32_t w = a->writer[i];
                if (w >= 0 && w != me && !(mix && w / 3 == me / 3 && (w % 3 == 0 || me % 3 == 0))) {
                    if (other < 0) {
                        other = w;
                        first = i;
                    }
                    ++clash;
                    if (o.runs.empty() || o.runs.back().first + o.runs.back().second.size() != i)
                        o.runs.emplace_back(i, std::vector<uint8_t>());
                    o.runs.back().second.push_back(a->host[i]);  // the bytes this write will meet
                }
                a->writer[i] = me;
            }
            if (other >= 0) {
                auto who = [mix](int32_t w) {
                    if (!mix) return fmt("block %d", w);
                    return w % 3 == 0 ? fmt("the AIC of AI core %d", w / 3)
                                      : fmt("AIV %d of AI core %d (block %d)", w % 3 - 1, w / 3, 2 * (w / 3) + w % 3 - 1);
                };
                o.a = a;
                o.block = current_block();
                o.clash = clash;
                o.first = first;
                o.me = who(me);
                o.other = who(other);
                o.instr = instr;
                o.file = file ? file : "";
                o.line = line;
                if (g_overlap_bytes + clash > kOverlapKeepBytes) {
                    overlap_message(o, SEV_ERROR, 0);
                } else {
                    g_overlap_bytes += clash;
                    g_overlaps.push_back(std::move(o));
                }
            }
        }
    }
    // a read made only to print its value (kernel.h's printf) is not race-checked: it reaches no output
    if (g_race.on && g_race.cur >= 0 && (write || g_print_depth == 0))
        race_access(a, instr, static_cast<uint64_t>(q - a->base), n, write, file, line);
    return true;
}

// Latency model: a contiguous GM segment of a copy moves whole bursts (aligned to the burst size).
void tm_gm_segment(const void* p, uint64_t n) {
    if (!g_blk.tm.p.open || n == 0) return;
    const uint64_t g = static_cast<uint64_t>(hw()[HW_GM_BURST_BYTES]);
    const uint8_t* q = static_cast<const uint8_t*>(p);
    uint8_t* kv = g_gm_kv;
    uint64_t off = kv && q >= kv ? static_cast<uint64_t>(q - kv) : reinterpret_cast<uintptr_t>(q);
    uint64_t first = off / g, last = (off + n + g - 1) / g;
    g_blk.tm.p.gm_bytes += static_cast<double>((last - first) * g);
}

int gm_atomic_mode() { return g_blk.atomic_mode; }
void set_gm_atomic_mode(int mode, const char* dtype) {
    g_blk.atomic_mode = mode;
    g_blk.atomic_dtype = dtype ? dtype : "";
}

void count_mte(int pipe, uint64_t bytes, uint64_t bursts) {
    if (pipe == PID_MTE2) {
        g_blk.c.mte2_bytes += bytes;
        g_blk.c.mte2_bursts += bursts;
        ++g_blk.c.mte2_calls;
    } else {
        g_blk.c.mte3_bytes += bytes;
        g_blk.c.mte3_bursts += bursts;
        ++g_blk.c.mte3_calls;
    }
}
void count_ub_copy(uint64_t bytes) {
    g_blk.c.ubcopy_bytes += bytes;
    ++g_blk.c.ubcopy_calls;
    if (g_blk.tm.p.open) g_blk.tm.p.cost += static_cast<double>((bytes + 255) / 256) * hw()[HW_VEC_SIMPLE_B32];
}

namespace {
// cycles per 256-byte repeat of a vector instruction (classes as in hardware.py's VEC_CLASS)
double vec_repeat_cycles(const char* op, const char* dtype, bool* full_reduce) {
    static const std::pair<const char*, int> classes[] = {
        {"Exp", HW_VEC_EXP_B16}, {"Ln", HW_VEC_EXP_B16}, {"Log", HW_VEC_EXP_B16}, {"Div", HW_VEC_DIV_B16},
        {"Sqrt", HW_VEC_DIV_B16}, {"Floor", HW_VEC_CAST_B16}, {"Ceil", HW_VEC_CAST_B16}, {"Trunc", HW_VEC_CAST_B16},
        {"Rsqrt", HW_VEC_RECIP_B16}, {"Reciprocal", HW_VEC_RECIP_B16}, {"Cast", HW_VEC_CAST_B16},
        {"ReduceSum", HW_VEC_REDUCE_B16}, {"ReduceMax", HW_VEC_REDUCE_B16}, {"ReduceMin", HW_VEC_REDUCE_B16},
        {"WholeReduceSum", HW_VEC_REDUCE_B16}, {"WholeReduceMax", HW_VEC_REDUCE_B16},
        {"WholeReduceMin", HW_VEC_REDUCE_B16}, {"RepeatReduceSum", HW_VEC_REDUCE_B16},
        {"BlockReduceSum", HW_VEC_REDUCE_B16}, {"BlockReduceMax", HW_VEC_REDUCE_B16},
        {"BlockReduceMin", HW_VEC_REDUCE_B16}};
    int k = HW_VEC_SIMPLE_B16;
    for (auto& c : classes)
        if (std::strcmp(op, c.first) == 0) k = c.second;
    *full_reduce = std::strcmp(op, "ReduceSum") == 0 || std::strcmp(op, "ReduceMax") == 0 ||
                   std::strcmp(op, "ReduceMin") == 0;
    // 32-bit-or-wider element (for Cast "a->b": the wider side); each class lists b16 then b32
    static const char* b32[] = {"float", "int32", "uint32", "int64", "uint64", "double"};
    bool wide = false;
    std::string d = dtype ? dtype : "";
    size_t pos = 0;
    while (pos <= d.size()) {
        size_t e = d.find("->", pos);
        std::string part = d.substr(pos, e == std::string::npos ? std::string::npos : e - pos);
        for (const char* w : b32) wide = wide || part == w;
        if (e == std::string::npos) break;
        pos = e + 2;
    }
    return hw()[wide ? k + 1 : k];
}
}  // namespace
void count_vec(const char* op, const char* dtype, uint64_t elements, uint64_t repeats) {
    if (g_blk.tm.p.open) {
        bool full = false;
        double cpr = vec_repeat_cycles(op, dtype, &full);
        g_blk.tm.p.cost += static_cast<double>(repeats) * cpr + (full ? hw()[HW_VEC_REDUCE_TAIL_CYCLES] : 0.0);
    }
    for (VecCounter& v : g_blk.c.vec)
        if (v.op == op && v.dtype == dtype) {
            ++v.calls;
            v.elements += elements;
            v.repeats += repeats;
            return;
        }
    VecCounter v;
    v.op = op;
    v.dtype = dtype;
    v.calls = 1;
    v.elements = elements;
    v.repeats = repeats;
    g_blk.c.vec.push_back(v);
}
void count_scalar(int kind, uint64_t gm_bytes) {
    if (kind >= 0 && kind < SC_COUNT) ++g_blk.c.scalar[kind];
    if (kind == SC_GM_GET) g_blk.c.scalar_gm_bytes[0] += gm_bytes;
    if (kind == SC_GM_SET) g_blk.c.scalar_gm_bytes[1] += gm_bytes;
    if (g_blk.tm.p.open) {
        const HwModel& h = hw();
        g_blk.tm.p.cost += kind == SC_GM_GET   ? h[HW_SCALAR_GM_READ_CYCLES]
                         : kind == SC_GM_SET ? h[HW_SCALAR_GM_WRITE_CYCLES]
                                             : h[HW_SCALAR_UB_ACCESS_CYCLES];
    }
}
// A libm call made by the kernel's code (the build renames the kernel object's references to tanhf, expf ...
// to the evk_libm_* wrappers at the end of this file): scalar-unit math in software, one scalar instruction of
// scalar_libm_call_cycles in the block's schedule.
void count_libm() {
    begin_instr(PID_S);
    ++g_blk.c.libm_calls;
    if (g_blk.tm.p.open) g_blk.tm.p.cost += hw()[HW_SCALAR_LIBM_CALL_CYCLES];
}
void vec_count_only(const char* op, const char* dtype, uint64_t elements, uint64_t repeats) {
    count_vec(op, dtype, elements, repeats);
}

// ---- cube core ---------------------------------------------------------------------------------
void tm_add_cost(double cycles) {
    if (g_blk.tm.p.open) g_blk.tm.p.cost += cycles;
}
// Per-core multiply-accumulates per cycle: the chip's fp16 cube rate spread over its AI cores (one cube core
// per two vector cores on the 910B), scaled by the input type's ratio.
double cube_macs_per_cycle(int in_kind) {
    const HwModel& h = hw();
    const double aic = std::max(1.0, std::floor(h[HW_AIV_CORES] / 2));
    const double fp16 = h[HW_CUBE_FP16_FLOPS_PER_S] / (2.0 * aic * h[HW_CLOCK_HZ]);
    const double ratio = in_kind == DK_F32 ? h[HW_CUBE_FP32_RATIO]
                       : in_kind == DK_BF16 ? h[HW_CUBE_BF16_RATIO]
                       : in_kind == DK_I8 || in_kind == DK_U8 ? h[HW_CUBE_INT8_RATIO] : 1.0;
    return fp16 * ratio;
}
double mte1_bytes_per_cycle() { return hw()[HW_MTE1_BYTES_PER_CYCLE]; }
void count_cube(int in_kind, uint64_t macs) {
    ++g_blk.c.mmad_calls;
    const int k = in_kind == DK_F16 ? 0 : in_kind == DK_BF16 ? 1 : in_kind == DK_F32 ? 2 : 3;
    g_blk.c.mmad_macs[k] += macs;
}
void count_mte1(uint64_t bytes) {
    g_blk.c.mte1_bytes += bytes;
    ++g_blk.c.mte1_calls;
}
void count_fix(uint64_t bytes) {
    g_blk.c.fix_bytes += bytes;
    ++g_blk.c.fix_calls;
}
void set_kernel_type(int type) { g_blk.kernel_type = type; }
int core_type() { return g_blk.role == 1 || g_blk.kernel_type == 1 ? 1 : 0; }
int64_t sub_block_idx() { return g_blk.sub; }
int64_t sub_block_num();  // below (needs the scheduler)
int mem_of_buf(int buf) {
    if (buf < 0 || buf >= static_cast<int>(g_blk.bufs.size())) return MEM_NONE;
    return mem_of_position(g_blk.queues[g_blk.bufs[buf].queue].pos_src);
}

// ---- queues ------------------------------------------------------------------------------------
int pipe_create() {
    PipeRec p;
    p.ub_start = g_blk.ub_used;
    for (int m = 0; m < MEM_COUNT; ++m) p.mem_start[m] = g_blk.mem_used[m];
    g_blk.pipes.push_back(p);
    return static_cast<int>(g_blk.pipes.size()) - 1;
}

namespace {
void release_pipe(int id, bool check_leaks, const char* file, int line) {
    if (id < 0 || id >= static_cast<int>(g_blk.pipes.size()) || !g_blk.pipes[id].alive) return;
    PipeRec& p = g_blk.pipes[id];
    for (int qi : p.queues) {
        Queue& q = g_blk.queues[qi];
        if (!q.alive) continue;
        if (check_leaks && !q.tbuf) {
            int leaked = 0;
            for (int b : q.bufs)
                if (g_blk.bufs[b].state != BS_FREE) ++leaked;
            if (leaked)
                record(EVK_RULE_QUEUE_PAIRING, SEV_WARNING, q.file.c_str(), q.line,
                       fmt("%d buffer(s) of the %s queue initialised here were never freed when the TPipe ended "
                           "(AllocTensor/DeQue without FreeTensor, or EnQue without DeQue)",
                           leaked, pos_name(q.pos_src)));
        }
        q.alive = false;
        for (int b : q.bufs) g_blk.bufs[b].alive = false;
    }
    p.queues.clear();
    // stack-like UB release: the pipe's allocations go back
    if (g_blk.ub_used >= p.ub_start) g_blk.ub_used = p.ub_start;
    for (int m = 0; m < MEM_COUNT; ++m)
        if (g_blk.mem_used[m] >= p.mem_start[m]) g_blk.mem_used[m] = p.mem_start[m];
    g_blk.mem_used[MEM_UB] = g_blk.ub_used;
    (void)file;
    (void)line;
}
}  // namespace

void pipe_destroy(int pipe, bool unwinding) {
    bool check = !unwinding && !g_blk.aborted && !g_blk.crashed;
    release_pipe(pipe, check, "", 0);
    if (pipe >= 0 && pipe < static_cast<int>(g_blk.pipes.size())) g_blk.pipes[pipe].alive = false;
}
void pipe_reset(int pipe, const char* file, int line) {
    release_pipe(pipe, !g_blk.aborted, file, line);
    if (pipe >= 0 && pipe < static_cast<int>(g_blk.pipes.size())) g_blk.pipes[pipe].alive = true;
}

namespace {
// Extends the block's arena (data, written-bitmap, per-32-byte sync and schedule state) to hold `bytes`: a
// vector kernel never pays for the cube core's 770 KiB of buffers.
void grow_arena(uint64_t bytes) {
    Block& b = g_blk;
    if (bytes + 64 <= b.ub.size()) return;
    b.ub.resize(bytes + 64, 0xFF);
    b.init.resize(bytes + 64, 0);
    b.wpipe.resize(bytes / 32 + 2, static_cast<uint8_t>(PID_NONE));
    b.wseq.resize(bytes / 32 + 2, 0);
    b.tm.w_end.resize(bytes / 32 + 2, 0.0);
    b.tm.r_end.resize(bytes / 32 + 2, 0.0);
    g_ub = b.ub.data();
    g_ub_init = b.init.data();
}
}  // namespace

namespace {
bool wrong_core_memory(int mem) { return g_blk.aicore >= 0 && (g_blk.role == 1) != (mem != MEM_UB); }
void core_memory_check(const Queue& q, const char* what, const char* file, int line) {
    const int mem = mem_of_position(q.pos_src);
    if (wrong_core_memory(mem))
        violation(EVK_RULE_TENSOR_POSITION, SEV_ERROR, file, line,
                  "%s on a TPosition %s buffer (InitBuffer at %s:%d) on a %s core: %s", what, pos_name(q.pos_src),
                  q.file.c_str(), q.line, g_blk.role == 1 ? "cube" : "vector",
                  g_blk.role == 1 ? "the cube core (AIC) has L1/L0 buffers but no Unified Buffer"
                                  : "a vector core (AIV) has the Unified Buffer only; L1/L0 are the cube core's");
}
}  // namespace

int que_init(int pipe, int pos_src, int pos_dst, int depth, int num, uint64_t len, bool is_tbuf, const char* file,
             int line) {
    if (pipe < 0 || pipe >= static_cast<int>(g_blk.pipes.size()) || !g_blk.pipes[pipe].alive)
        fatal(EVK_RULE_INVALID_TENSOR, file, line, "InitBuffer on a TPipe that no longer exists");
    // the memory the buffers live in: both ends of a bound queue must be in the same one
    const int mem = mem_of_position(pos_src);
    if (pos_src == 8 && pos_dst == 8 && !is_tbuf) {
        // CO2 on the 910B (arch 2201) is global memory (GetPhyType in CANN's impl/basic_api/kernel_event.h).
        // CANN's TPipe::InitBuffer books a queue there in its GM pool's addresses on the device (its CPU-debug build
        // asserts "buffer pos can not be Hardware::GM": a debug check, compiled out of device builds;
        // kernel_tpipe_impl.h). Community cube kernels keep such a queue from the older CO1 -> CO2 -> GM path
        // without using it (ChengruiZhang/AscendC-MatMul-Basic): the InitBuffer is a warning, a use is refused
        // (que_alloc), since the emulator has no GM pool.
        violation(EVK_RULE_TENSOR_POSITION, SEV_WARNING, file, line,
                  "InitBuffer for TPosition CO2: on the 910B that is global memory (Fixpipe writes results there); "
                  "CANN's device build books such a queue in its GM pool (its CPU-debug build asserts on it), which "
                  "the emulator does not model: a use of it is refused");
        Queue q;
        q.pipe = pipe;
        q.pos_src = pos_src;
        q.pos_dst = pos_dst;
        q.depth = depth;
        q.num = num;
        q.gm_pool = true;
        q.file = file ? file : "";
        q.line = line;
        g_blk.queues.push_back(std::move(q));
        const int qid = static_cast<int>(g_blk.queues.size()) - 1;
        g_blk.pipes[pipe].queues.push_back(qid);
        return qid;
    }
    if (mem == MEM_NONE || mem_of_position(pos_dst) != mem)
        fatal(EVK_RULE_UNSUPPORTED_API, file, line,
              "InitBuffer for TPosition %s%s%s: no local buffer there (VECIN/VECOUT/VECCALC are the Unified Buffer; "
              "A1/B1/C1/TSCM L1; A2 L0A; B2 L0B; CO1 L0C; C2 the bias table; on the 910B CO2 is GM and "
              "Fixpipe writes it)",
              pos_name(pos_src), pos_src != pos_dst ? " -> " : "", pos_src != pos_dst ? pos_name(pos_dst) : "");
    // a core of a MIX kernel initialising a buffer of the other core type's memory: CANN's TPipe::InitBuffer only
    // books addresses (impl/basic_api/kernel_tpipe_impl.h: no core check), and MIX kernels commonly run one Init on
    // both cores (the Matmul-LeakyRelu samples init their VECOUT queue before REGIST_MATMUL_OBJ sends the AIC off
    // to serve): nothing is said here (CANN's own samples do it: no finding on honest code), a use of the buffer
    // on that core is the error (core_memory_check)
    if (len == 0)  // CANN documents no failure for it; a block with no work sizes its buffers 0 (community tilings
                   // do); any use of such a buffer is still an ub_out_of_bounds error, so this is a warning
        violation(EVK_RULE_INVALID_ARGUMENT, SEV_WARNING, file, line,
                  "InitBuffer with a length of 0 bytes (harmless if the block never uses the buffer)");
    if (num <= 0) {
        violation(EVK_RULE_INVALID_ARGUMENT, SEV_ERROR, file, line, "InitBuffer with num=%d buffers", num);
        num = 1;
    }
    // buffer granularity: UB and L1 32 B, L0A/L0B one 512-byte fractal, L0C and the bias table 64 B
    const uint64_t gran = mem == MEM_L0A || mem == MEM_L0B ? 512 : mem == MEM_L0C || mem == MEM_BT ? 64 : 32;
    uint64_t len32 = (len + gran - 1) / gran * gran;
    uint64_t need = len32 * static_cast<uint64_t>(num);
    const uint32_t cap = g_mem_size[mem], used = mem == MEM_UB ? g_blk.ub_used : g_blk.mem_used[mem];
    if (static_cast<uint64_t>(used) + need > cap) {
        std::string have;
        for (const Queue& q : g_blk.queues)
            if (q.alive && mem_of_position(q.pos_src) == mem)
                have += fmt("%s%s %dx%u B (%s:%d)", have.empty() ? "" : ", ", q.tbuf ? "TBuf" : pos_name(q.pos_src),
                            q.num, q.len, q.file.c_str(), q.line);
        if (mem == MEM_UB)
            fatal(EVK_RULE_UB_CAPACITY, file, line,
                  "InitBuffer needs %llu bytes (%d x %llu, rounded up to 32 B) but only %u of the %u-byte Unified "
                  "Buffer are left (allocated so far: %s); shrink the tile length or the number of buffers",
                  static_cast<unsigned long long>(need), num, static_cast<unsigned long long>(len32), cap - used, cap,
                  have.empty() ? "nothing" : have.c_str());
        fatal(EVK_RULE_UB_CAPACITY, file, line,
              "InitBuffer for %s needs %llu bytes (%d x %llu, rounded up to %llu B) but only %u of the %u-byte %s "
              "are left (allocated so far: %s); shrink the base block (baseM/baseN/baseK) or the buffer count",
              pos_name(pos_src), static_cast<unsigned long long>(need), num, static_cast<unsigned long long>(len32),
              static_cast<unsigned long long>(gran), cap - used, cap, mem_name(mem),
              have.empty() ? "nothing" : have.c_str());
    }
    grow_arena(static_cast<uint64_t>(g_mem_base[mem]) + g_mem_size[mem]);
    Queue q;
    q.pipe = pipe;
    q.pos_src = pos_src;
    q.pos_dst = pos_dst;
    q.depth = depth;
    q.num = num;
    q.len = static_cast<uint32_t>(len32);
    q.tbuf = is_tbuf;
    q.file = file ? file : "";
    q.line = line;
    int qid = static_cast<int>(g_blk.queues.size());
    for (int i = 0; i < num; ++i) {
        Buffer b;
        b.queue = qid;
        b.slot = i;
        b.off = g_mem_base[mem] + used + static_cast<uint32_t>(len32) * i;
        b.len = static_cast<uint32_t>(len32);
        b.state = BS_FREE;
        q.bufs.push_back(static_cast<int>(g_blk.bufs.size()));
        g_blk.bufs.push_back(b);
    }
    g_blk.mem_used[mem] = used + static_cast<uint32_t>(need);
    if (g_blk.mem_used[mem] > g_blk.mem_peak[mem]) g_blk.mem_peak[mem] = g_blk.mem_used[mem];
    if (mem == MEM_UB) {
        g_blk.ub_used = g_blk.mem_used[mem];
        if (g_blk.ub_used > g_blk.ub_peak) g_blk.ub_peak = g_blk.ub_used;
    }
    g_blk.queues.push_back(q);
    g_blk.pipes[pipe].queues.push_back(qid);
    g_blk.total_buffers += num;
    if (g_blk.total_buffers > 64)
        violation(EVK_RULE_QUEUE_LIMITS, SEV_ERROR, file, line,
                  "%d buffers initialised in total; a TPipe manages at most 64", g_blk.total_buffers);
    if (!is_tbuf) {
        if (depth < 0 || depth > 8)
            violation(EVK_RULE_QUEUE_LIMITS, SEV_ERROR, file, line, "TQue depth %d is outside 0..8", depth);
        if (num > 8)
            violation(EVK_RULE_QUEUE_LIMITS, SEV_ERROR, file, line,
                      "InitBuffer with num=%d: a TQue holds at most 8 buffers (one event id each)", num);
        g_blk.pos_buffers[pos_src & 31] += num;
        if (g_blk.pos_buffers[pos_src & 31] > 8)
            violation(EVK_RULE_QUEUE_LIMITS, SEV_ERROR, file, line,
                      "%d buffers on %s queues: at most 8 per position (the hardware has 8 event ids per pipe pair)",
                      g_blk.pos_buffers[pos_src & 31], pos_name(pos_src));
    }
    return qid;
}

namespace {
Queue& get_queue(int qid, const char* what, const char* file, int line) {
    if (qid < 0 || qid >= static_cast<int>(g_blk.queues.size()) || !g_blk.queues[qid].alive)
        fatal(EVK_RULE_QUEUE_PAIRING, file, line, "%s on a TQue/TBuf that was never passed to TPipe::InitBuffer", what);
    return g_blk.queues[qid];
}
void producers_consumers(const Queue& q, int* prod, int* cons) {
    // VECIN: GM->UB copies feed vector/scalar; VECOUT: vector feeds UB->GM copies; bound VECIN->VECOUT:
    // MTE2 feeds MTE3. Cube: L1 (A1/B1/C1/TSCM) is filled by MTE2 and read by MTE1; L0A/L0B (A2/B2) and the
    // bias table (C2) are filled by MTE1 and read by the cube (M); L0C (CO1) is written by M, read by FIX.
    const int mem = mem_of_position(q.pos_src);
    if (mem == MEM_L1) {
        *prod = PID_MTE2;
        *cons = PID_MTE1;
    } else if (mem == MEM_L0A || mem == MEM_L0B || mem == MEM_BT) {
        *prod = PID_MTE1;
        *cons = PID_M;
    } else if (mem == MEM_L0C) {
        *prod = PID_M;
        *cons = PID_FIX;
    } else if (q.pos_src == 9 && q.pos_dst == 10) {
        *prod = PID_MTE2;
        *cons = PID_MTE3;
    } else if (q.pos_src == 9) {
        *prod = PID_MTE2;
        *cons = PID_V;
    } else if (q.pos_src == 10) {
        *prod = PID_V;
        *cons = PID_MTE3;
    } else {
        *prod = PID_V;
        *cons = PID_V;
    }
}
}  // namespace

SlotRef que_alloc(int qid, const char* file, int line) {
    note_loc(file, line);
    tm_api_call();
    Queue& q = get_queue(qid, "AllocTensor", file, line);
    if (q.tbuf) fatal(EVK_RULE_QUEUE_PAIRING, file, line, "AllocTensor on a TBuf: use TBuf::Get<T>()");
    core_memory_check(q, "AllocTensor", file, line);
    if (q.gm_pool)
        fatal(EVK_RULE_UNSUPPORTED_API, file, line,
              "AllocTensor on a CO2 queue (InitBuffer at %s:%d): on the 910B CO2 is global memory, a queue there comes "
              "from CANN's GM pool, which the emulator does not model; write L0C results with Fixpipe",
              q.file.c_str(), q.line);
    ++g_blk.c.allocs;
    for (int k = 0; k < q.num; ++k) {
        int s = (q.next + k) % q.num;
        Buffer& b = g_blk.bufs[q.bufs[s]];
        if (b.state == BS_FREE) {
            b.state = BS_ALLOCATED;
            q.next = (s + 1) % q.num;
            ++q.allocs;
            return SlotRef{q.bufs[s], b.off, b.len};
        }
    }
    fatal(EVK_RULE_QUEUE_PAIRING, file, line,
          "AllocTensor on the %s queue (InitBuffer at %s:%d, num=%d): all %d buffers are still in use (allocated, "
          "queued or dequeued and not freed); on the NPU AllocTensor waits forever. Free each tensor after its last "
          "use",
          pos_name(q.pos_src), q.file.c_str(), q.line, q.num, q.num);
}

void que_enque(int qid, int buf, const char* file, int line) {
    note_loc(file, line);
    begin_instr(PID_S);
    Queue& q = get_queue(qid, "EnQue", file, line);
    ++g_blk.c.enques;
    check_buffer("EnQue", buf, file, line);
    Buffer& b = g_blk.bufs[buf];
    if (b.queue != qid)
        violation(EVK_RULE_QUEUE_PAIRING, SEV_ERROR, file, line,
                  "EnQue on the %s queue (InitBuffer at %s:%d) of a tensor allocated from another queue or TBuf",
                  pos_name(q.pos_src), q.file.c_str(), q.line);
    if (b.state == BS_FREE)
        violation(EVK_RULE_QUEUE_PAIRING, SEV_ERROR, file, line, "EnQue of a tensor that was freed (or never allocated)");
    else if (b.state == BS_ENQUEUED)
        violation(EVK_RULE_QUEUE_PAIRING, SEV_ERROR, file, line, "EnQue of a tensor that is already in a queue");
    if (static_cast<int>(q.fifo.size()) >= (q.depth > 0 ? q.depth : q.num))
        violation(EVK_RULE_QUEUE_PAIRING, SEV_ERROR, file, line,
                  "EnQue beyond the queue depth: the %s queue (InitBuffer at %s:%d) already holds %d tensor(s) and "
                  "its depth is %d; DeQue before the next EnQue (depth counts tensors in flight, not buffers)",
                  pos_name(q.pos_src), q.file.c_str(), q.line, static_cast<int>(q.fifo.size()), q.depth);
    b.state = BS_ENQUEUED;
    b.enq_seq = g_blk.seq;
    q.fifo.push_back(buf);
}

SlotRef que_deque(int qid, const char* file, int line) {
    note_loc(file, line);
    begin_instr(PID_S);
    Queue& q = get_queue(qid, "DeQue", file, line);
    ++g_blk.c.deques;
    if (q.fifo.empty())
        fatal(EVK_RULE_QUEUE_PAIRING, file, line,
              "DeQue on the empty %s queue (InitBuffer at %s:%d): nothing was EnQue'd; on the NPU DeQue waits "
              "forever",
              pos_name(q.pos_src), q.file.c_str(), q.line);
    int buf = q.fifo.front();
    q.fifo.erase(q.fifo.begin());
    Buffer& b = g_blk.bufs[buf];
    b.state = BS_DEQUEUED;
    int prod, cons;
    producers_consumers(q, &prod, &cons);
    if (b.enq_seq > g_blk.synced[prod][cons]) g_blk.synced[prod][cons] = b.enq_seq;
    if (b.enq_seq > g_blk.synced[prod][PID_S]) g_blk.synced[prod][PID_S] = b.enq_seq;
    return SlotRef{buf, b.off, b.len};
}

void que_free(int qid, int buf, const char* file, int line) {
    note_loc(file, line);
    tm_api_call();
    Queue& q = get_queue(qid, "FreeTensor", file, line);
    ++g_blk.c.frees;
    if (buf < 0 || buf >= static_cast<int>(g_blk.bufs.size()) || !g_blk.bufs[buf].alive) {
        violation(EVK_RULE_QUEUE_PAIRING, SEV_ERROR, file, line,
                  "FreeTensor of a LocalTensor that was never allocated from a queue");
        return;
    }
    Buffer& b = g_blk.bufs[buf];
    if (b.queue != qid)
        violation(EVK_RULE_QUEUE_PAIRING, SEV_ERROR, file, line,
                  "FreeTensor on the %s queue (InitBuffer at %s:%d) of a tensor that belongs to another queue",
                  pos_name(q.pos_src), q.file.c_str(), q.line);
    if (b.state == BS_FREE) {
        violation(EVK_RULE_QUEUE_PAIRING, SEV_ERROR, file, line,
                  "double FreeTensor: this tensor was already freed (or never allocated)");
        return;
    }
    if (b.state == BS_ENQUEUED) {
        violation(EVK_RULE_QUEUE_PAIRING, SEV_ERROR, file, line,
                  "FreeTensor of a tensor that is still queued (EnQue without the matching DeQue)");
        Queue& owner = g_blk.queues[b.queue];
        for (size_t i = 0; i < owner.fifo.size(); ++i)
            if (owner.fifo[i] == buf) {
                owner.fifo.erase(owner.fifo.begin() + static_cast<long>(i));
                break;
            }
    }
    b.state = BS_FREE;
}

int que_vacant(int qid) {
    if (qid < 0 || qid >= static_cast<int>(g_blk.queues.size())) return 0;
    Queue& q = g_blk.queues[qid];
    return static_cast<int>(q.fifo.size()) < (q.depth > 0 ? q.depth : q.num) ? 1 : 0;
}
int que_has_tensor(int qid) {
    if (qid < 0 || qid >= static_cast<int>(g_blk.queues.size())) return 0;
    return static_cast<int>(g_blk.queues[qid].fifo.size());
}

SlotRef tbuf_get(int qid, uint64_t offset, uint64_t len, const char* file, int line) {
    Queue& q = get_queue(qid, "TBuf::Get", file, line);
    if (!q.tbuf) fatal(EVK_RULE_QUEUE_PAIRING, file, line, "Get on a TQue: use AllocTensor/DeQue");
    core_memory_check(q, "TBuf::Get", file, line);
    Buffer& b = g_blk.bufs[q.bufs[0]];
    if (len == ~0ull) len = offset < b.len ? b.len - offset : 0;
    if (offset + len > b.len)
        violation(EVK_RULE_UB_OOB, SEV_ERROR, file, line,
                  "TBuf::Get asks for %llu bytes at offset %llu but the TBuf (InitBuffer at %s:%d) has %u bytes",
                  static_cast<unsigned long long>(len), static_cast<unsigned long long>(offset), q.file.c_str(),
                  q.line, b.len);
    if (offset % 32)
        violation(EVK_RULE_UB_ALIGNMENT, SEV_ERROR, file, line,
                  "TBuf::GetWithOffset at byte offset %llu: not 32-byte aligned", static_cast<unsigned long long>(offset));
    return SlotRef{q.bufs[0], static_cast<uint32_t>(b.off + offset), static_cast<uint32_t>(len)};
}

int buf_position(int buf) {
    if (buf < 0 || buf >= static_cast<int>(g_blk.bufs.size())) return 0;
    return g_blk.queues[g_blk.bufs[buf].queue].pos_src;
}
bool buf_valid(int buf) { return buf >= 0 && buf < static_cast<int>(g_blk.bufs.size()) && g_blk.bufs[buf].alive; }

// ---- sync --------------------------------------------------------------------------------------
void sync_set(int from, int to, int id, const char* file, int line) {
    note_loc(file, line);
    tm_api_call();
    ++g_blk.c.set_flags;
    if (from >= PID_COUNT || to >= PID_COUNT || from < 0 || to < 0) return;  // pipes the emulator does not model
    if (id < 0 || id > 7) {
        violation(EVK_RULE_INVALID_ARGUMENT, SEV_ERROR, file, line, "SetFlag with event id %d (valid: 0..7)", id);
        return;
    }
    {  // the flag is set once everything issued to the `from` pipe so far has finished
        Timing& t = g_blk.tm;
        t.flag_time[from][to][id] = from == PID_S ? t.issue : std::max(t.issue, t.done[from]);
    }
    Flag& f = g_blk.flags[from][to][id];
    if (f.pending > 0)
        violation(EVK_RULE_SYNC_PAIRING, SEV_WARNING, file, line,
                  "SetFlag<%s_%s>(%d) while the previous SetFlag on this event was not yet waited for", pipe_short(from),
                  pipe_short(to), id);
    ++f.pending;
    f.seq = g_blk.seq;
    f.file = file ? file : "";
    f.line = line;
}
void sync_wait(int from, int to, int id, const char* file, int line) {
    note_loc(file, line);
    tm_api_call();
    ++g_blk.c.wait_flags;
    if (from >= PID_COUNT || to >= PID_COUNT || from < 0 || to < 0) return;
    if (id < 0 || id > 7) {
        violation(EVK_RULE_INVALID_ARGUMENT, SEV_ERROR, file, line, "WaitFlag with event id %d (valid: 0..7)", id);
        return;
    }
    {  // the waiting pipe (or the scalar issue, for X_S events) starts nothing before the flag is set
        Timing& t = g_blk.tm;
        double ft = t.flag_time[from][to][id];
        if (to == PID_S) {
            if (ft > t.issue) t.scalar_stall += ft - t.issue;
            t.issue = std::max(t.issue, ft);
        }
        else
            t.pipe_free[to] = std::max(t.pipe_free[to], ft);
    }
    Flag& f = g_blk.flags[from][to][id];
    if (f.pending <= 0)
        fatal(EVK_RULE_SYNC_PAIRING, file, line,
              "WaitFlag<%s_%s>(%d) with no SetFlag before it: on the NPU the %s pipe waits forever (vector core "
              "timeout)",
              pipe_short(from), pipe_short(to), id, pipe_short(to));
    --f.pending;
    if (f.seq > g_blk.synced[from][to]) g_blk.synced[from][to] = f.seq;
}
void sync_barrier(int pipe_kind, const char* file, int line) {
    note_loc(file, line);
    tm_api_call();
    if (pipe_kind == -1) {  // PIPE_ALL: every pipe drains and the scalar waits for it
        Timing& t = g_blk.tm;
        double all = t.issue;
        for (int p = 0; p < PID_COUNT; ++p) all = std::max(all, t.done[p]);
        t.scalar_stall += all - t.issue;
        t.issue = all;
        for (int p = 0; p < PID_COUNT; ++p) t.pipe_free[p] = t.done[p] = all;
    }
    ++g_blk.c.barriers;
    if (pipe_kind == -1)
        for (int a = 0; a < PID_COUNT; ++a)
            for (int b = 0; b < PID_COUNT; ++b) g_blk.synced[a][b] = g_blk.seq;
}
int fetch_event_id(int from, int to) {
    if (from < 0 || from >= PID_COUNT || to < 0 || to >= PID_COUNT) return 0;
    return g_blk.fetch_next[from][to]++ % 8;
}
void count_sync(int kind) {
    if (kind == 0) ++g_blk.c.barriers;
}
MaskState& mask_state() { return g_blk.mask; }

// ---- tiling ------------------------------------------------------------------------------------
void tiling_load(void* dst, const uint8_t* src, uint64_t n, const char* file, int line) {
    note_loc(file, line);
    tm_api_call(hw()[HW_SCALAR_GM_READ_CYCLES]);
    std::memset(dst, 0, n);
    Alloc* a = find_alloc(src);
    if (!a)
        fatal(EVK_RULE_TILING_SIZE, file, line,
              "GET_TILING_DATA: the tiling argument is not the tiling buffer the runtime passed (wrong argument "
              "order?)");
    uint64_t avail = static_cast<uint64_t>(a->base + a->n - src);
    if (avail < n)
        violation(EVK_RULE_TILING_SIZE, SEV_ERROR, file, line,
                  "GET_TILING_DATA reads %llu bytes (the tiling struct) but the TilingFunc saved %llu (call "
                  "SaveToBuffer and SetDataSize(tiling.GetDataSize())); the missing fields read as 0 here and as "
                  "garbage on the NPU",
                  static_cast<unsigned long long>(n), static_cast<unsigned long long>(avail));
    std::memcpy(dst, gm_host(src), avail < n ? avail : n);
}
void tiling_load_member(void* dst, const uint8_t* src, uint64_t off, uint64_t n, const char* file, int line) {
    std::vector<uint8_t> tmp(off + n);
    tiling_load(tmp.data(), src, off + n, file, line);
    std::memcpy(dst, tmp.data() + off, n);
}

void print_scope(int delta) { g_print_depth = std::max(0, g_print_depth + delta); }
void api_scope(const char* api) { g_api_scope = api; }

void kernel_printf(const char* f, ...) {
    if (g_printf_bytes > 65536) return;
    va_list ap;
    va_start(ap, f);
    std::string s = vfmt(f, ap);
    va_end(ap);
    g_printf_bytes += s.size();
    std::fputs(s.c_str(), stderr);
    if (g_run && g_run->printf_log.size() < 8192) g_run->printf_log += s;
}

// ---- conversions -------------------------------------------------------------------------------
namespace {
double round_int(double v, int mode) {
    switch (mode) {
        case 2: return std::floor(v);
        case 3: return std::ceil(v);
        case 4: return std::round(v);
        case 5: return std::trunc(v);
        case 6: {  // round to odd
            double t = std::trunc(v);
            if (t == v) return t;
            if (std::fmod(t, 2.0) == 0.0) return v > 0 ? t + 1 : t - 1;
            return t;
        }
        default: return std::nearbyint(v);  // NONE, RINT: to nearest, ties to even
    }
}
}  // namespace

double round_to_kind(double x, int kind, int mode, bool* overflow) {
    *overflow = false;
    int p = 0, emin = 0, emax = 0;
    switch (kind) {
        case DK_F32: p = 24; emin = -126; emax = 127; break;
        case DK_F16: p = 11; emin = -14; emax = 15; break;
        case DK_BF16: p = 8; emin = -126; emax = 127; break;
        case DK_F64: return x;
        case DK_BOOL: return x != 0 ? 1.0 : 0.0;
        default: break;
    }
    if (p) {
        if (std::isnan(x) || std::isinf(x) || x == 0.0) return x;
        int e = std::ilogb(x);
        if (e < emin) e = emin;
        double q = std::ldexp(1.0, e - (p - 1));
        double r = round_int(x / q, mode) * q;
        double maxv = (2.0 - std::ldexp(1.0, -(p - 1))) * std::ldexp(1.0, emax);
        if (std::fabs(r) > maxv) {
            bool pos = x > 0;
            switch (mode) {
                case 5: case 6: return pos ? maxv : -maxv;
                case 2: if (pos) return maxv; break;
                case 3: if (!pos) return -maxv; break;
                default: break;
            }
            *overflow = true;
            return pos ? HUGE_VAL : -HUGE_VAL;
        }
        return r;
    }
    // integers: round then saturate; NaN -> 0
    if (std::isnan(x)) return 0.0;
    double r = round_int(x, mode);
    double lo = 0, hi = 0;
    switch (kind) {
        case DK_I8: lo = -128; hi = 127; break;
        case DK_U8: lo = 0; hi = 255; break;
        case DK_I16: lo = -32768; hi = 32767; break;
        case DK_U16: lo = 0; hi = 65535; break;
        case DK_I32: lo = -2147483648.0; hi = 2147483647.0; break;
        case DK_U32: lo = 0; hi = 4294967295.0; break;
        case DK_I64: lo = -9223372036854775808.0; hi = 9223372036854774784.0; break;
        case DK_U64: lo = 0; hi = 18446744073709549568.0; break;
        default: return r;
    }
    return r < lo ? lo : (r > hi ? hi : r);
}

// ---- vector-instruction helpers ------------------------------------------------------------------
namespace {
std::string kinds_list(uint32_t allowed) {
    static const char* names[] = {"float", "half", "bfloat16", "int8", "uint8", "int16", "uint16",
                                  "int32", "uint32", "int64", "uint64", "double", "bool"};
    std::string s;
    for (int k = 0; k < 13; ++k)
        if (allowed & (1u << k)) s += (s.empty() ? "" : "/") + std::string(names[k]);
    return s;
}
const char* kind_str(int k) {
    static const char* names[] = {"float", "half", "bfloat16", "int8", "uint8", "int16", "uint16",
                                  "int32", "uint32", "int64", "uint64", "double", "bool", "other"};
    return (k >= 0 && k <= 13) ? names[k] : "other";
}
}  // namespace

void dtype_check(const char* op, int kind, uint32_t allowed, const char* file, int line) {
    if (allowed == 0xffffffffu) return;
    if (!(allowed & (1u << kind)))
        violation(EVK_RULE_UNSUPPORTED_DTYPE, SEV_ERROR, file, line,
                  "%s does not support %s on the 910B vector unit (supported: %s); Cast to a supported type first",
                  op, kind_str(kind), kinds_list(allowed).c_str());
}

void report_half_overflow(const char* op, uint64_t n, const char* file, int line) {
    violation(EVK_RULE_HALF_OVERFLOW, SEV_WARNING, file, line,
              "%s on half produced %llu result(s) beyond the half range (|x| > 65504) that became %s; compute in "
              "float (Cast up first) or rescale",
              op, static_cast<unsigned long long>(n),
              half_overflow_saturates() ? "+-65504 (saturation mode)" : "+-inf (the 910B's default Inf/NaN mode)");
}

void report_low_precision(const char* op, const char* dtype, const char* file, int line) {
    violation(EVK_RULE_LOW_PRECISION, SEV_WARNING, file, line,
              "%s on %s is approximate on the NPU (documented to miss 1e-4 relative accuracy for float, 1e-3 for "
              "half) and the emulator reproduces that; for accurate results use Sqrt and Div instead",
              op, dtype);
}

int64_t vec_count_prologue(const char* op, const char* dtype, const TD* dst, const TD* srcs, int nsrc, int64_t count,
                           uint64_t dst_bytes_override, const char* file, int line) {
    begin_instr(PID_V);
    if (count < 0) {
        violation(EVK_RULE_INVALID_ARGUMENT, SEV_ERROR, file, line, "%s with a negative count (%lld)", op,
                  static_cast<long long>(count));
        return 0;
    }
    if (dst) check_buffer(op, dst->buf, file, line);
    for (int i = 0; i < nsrc; ++i) check_buffer(op, srcs[i].buf, file, line);
    if (count == 0) return 0;
    if (dst) ub_align(op, "dst", dst->off, 32, file, line);
    static const char* names[] = {"src0", "src1", "src2", "src3"};
    uint32_t maxsz = dst ? dst->esize : 1;
    for (int i = 0; i < nsrc; ++i) {
        ub_align(op, names[i & 3], srcs[i].off, 32, file, line);
        if (srcs[i].esize > maxsz) maxsz = srcs[i].esize;
    }
    for (int i = 0; i < nsrc; ++i)
        ub_access(op, srcs[i].buf, srcs[i].off, static_cast<uint64_t>(count) * srcs[i].esize, false, PID_V, file, line);
    if (dst)
        ub_access(op, dst->buf, dst->off,
                  dst_bytes_override ? dst_bytes_override : static_cast<uint64_t>(count) * dst->esize, true, PID_V,
                  file, line);
    count_vec(op, dtype, static_cast<uint64_t>(count), (static_cast<uint64_t>(count) * maxsz + 255) / 256);
    return count;
}

// A count-form instruction that works lane by lane (elementwise arithmetic, Compare, Select): its destination lane
// i is computed from lane i of each source (bit i of a bit-mask source; bit i of a bit-mask destination). Lanes
// read from bytes never written in this block are not an error here: the destination lanes computed from them stay
// "never written", and the error comes where such bytes are used for something that leaves the lane (a copy to
// GM, a reduction, a scalar read). Kernels commonly compute on a count rounded up to 256 bytes (Compare's
// granularity) and copy out only the real length: the padding lanes are garbage on the NPU but reach nothing.
int64_t vec_lanes_prologue(const char* op, const char* dtype, const TD* dst, const TD* srcs, int nsrc, int64_t count,
                           const TD* bits, bool dst_bits, const char* file, int line) {
    // lanes computed from never-written bytes stay never written (0); from DataCopyPad's unspecified padding (and
    // nothing never written), padding (2): its warning then comes where it is used, as the error does
    std::vector<std::pair<int64_t, uint8_t>> tainted;
    if (count > 0 && g_ub_init) {
        auto state = [](const TD& t, int64_t lo, int64_t n) -> uint8_t {
            const int64_t ub = static_cast<int64_t>(g_blk.init.size());
            if (t.buf < 0 || lo < 0 || lo + n > ub) return 1;  // out of range: the checks below say so
            if (std::memchr(g_ub_init + lo, 0, static_cast<size_t>(n))) return 0;
            return std::memchr(g_ub_init + lo, 2, static_cast<size_t>(n)) ? 2 : 1;
        };
        for (int64_t i = 0; i < count; ++i) {
            uint8_t st = bits ? state(*bits, bits->off + i / 8, 1) : 1;
            for (int k = 0; k < nsrc && st != 0; ++k) {
                const uint8_t s = state(srcs[k], srcs[k].off + i * srcs[k].esize, srcs[k].esize);
                if (s != 1) st = s;
            }
            if (st != 1) tainted.emplace_back(i, st);
        }
    }
    g_lanes_lenient = !tainted.empty();
    int64_t n = 0;
    try {
        n = vec_count_prologue(op, dtype, dst, srcs, nsrc, count, dst_bits ? (static_cast<uint64_t>(count) + 7) / 8 : 0,
                               file, line);
        // the bit mask is read as count bits (after the prologue opened the instruction: the latency model attributes
        // these reads to it)
        if (bits && count > 0)
            ub_access(op, bits->buf, bits->off, (static_cast<uint64_t>(count) + 7) / 8, false, PID_V, file, line);
    } catch (...) {
        g_lanes_lenient = false;
        throw;
    }
    g_lanes_lenient = false;
    if (dst && n > 0)
        for (const auto& [i, st] : tainted) {
            if (i >= n) break;
            if (dst_bits) {
                uint8_t& b = g_ub_init[dst->off + i / 8];
                if (b != 0) b = st;
            } else {
                std::memset(g_ub_init + dst->off + i * dst->esize, st, dst->esize);
            }
        }
    return n;
}

Plan plan_continuous(const char* op, uint64_t mask, int repeat, int lanes, bool is_set_mask, const char* file, int line) {
    Plan p;
    p.lanes = lanes;
    MaskState& ms = g_blk.mask;
    if (ms.counter) {
        p.counter = true;
        p.count = is_set_mask ? mask : ms.lo;
        p.repeats = static_cast<int>((p.count + lanes - 1) / lanes);
        return p;
    }
    if (repeat < 0 || repeat > 255) {
        violation(EVK_RULE_INVALID_ARGUMENT, SEV_ERROR, file, line, "%s: repeatTime %d outside 0..255", op, repeat);
        repeat = repeat < 0 ? 0 : 255;
    }
    p.repeats = repeat;
    if (!is_set_mask) {
        p.bits[0] = ms.lo;
        p.bits[1] = lanes > 64 ? ms.hi : 0;
        if (lanes > 128) p.bits[2] = p.bits[3] = ~0ull;
        return p;
    }
    if (mask == 0 || mask > static_cast<uint64_t>(lanes)) {
        violation(EVK_RULE_INVALID_ARGUMENT, SEV_ERROR, file, line,
                  "%s: continuous mask %llu outside 1..%d (elements per 256-byte repeat for this type)", op,
                  static_cast<unsigned long long>(mask), lanes);
        if (mask == 0) {
            p.repeats = 0;
            return p;
        }
        mask = static_cast<uint64_t>(lanes);
    }
    for (uint64_t l = 0; l < mask; ++l) p.bits[l >> 6] |= 1ull << (l & 63);
    return p;
}

Plan plan_bitwise(const char* op, const uint64_t* mask, int repeat, int lanes, bool is_set_mask, const char* file,
                  int line) {
    Plan p;
    p.lanes = lanes;
    MaskState& ms = g_blk.mask;
    if (ms.counter || !is_set_mask) return plan_continuous(op, mask ? mask[0] : 0, repeat, lanes, is_set_mask, file, line);
    if (repeat < 0 || repeat > 255) {
        violation(EVK_RULE_INVALID_ARGUMENT, SEV_ERROR, file, line, "%s: repeatTime %d outside 0..255", op, repeat);
        repeat = repeat < 0 ? 0 : 255;
    }
    p.repeats = repeat;
    p.bits[0] = mask[0];
    p.bits[1] = lanes > 64 ? mask[1] : 0;
    if (lanes < 64) p.bits[0] &= (1ull << lanes) - 1;
    if (!p.bits[0] && !p.bits[1])
        violation(EVK_RULE_INVALID_ARGUMENT, SEV_ERROR, file, line, "%s: the bit mask selects no element", op);
    return p;
}

bool vec_mask_prologue(const char* op, const char* dtype, const Plan& plan, const MD* ops, int nops, const char* file,
                       int line) {
    begin_instr(PID_V);
    for (int i = 0; i < nops; ++i) check_buffer(op, ops[i].buf, file, line);
    if (plan.repeats <= 0) return false;
    for (int i = 0; i < nops; ++i) ub_align(op, ops[i].write ? "dst" : "src", ops[i].off, 32, file, line);
    uint64_t active = 0;
    for (int pass = 0; pass < 2; ++pass)  // reads first, then writes
        for (int i = 0; i < nops; ++i) {
            const MD& m = ops[i];
            if (m.write != (pass == 1)) continue;
            const int lpb = 32 / static_cast<int>(m.esize);
            for (int r = 0; r < plan.repeats; ++r) {
                int run_start = -1;
                for (int l = 0; l <= plan.lanes; ++l) {
                    bool a = l < plan.lanes && plan_active(plan, r, l) && (run_start < 0 || l % lpb != 0);
                    bool cont = l < plan.lanes && plan_active(plan, r, l);
                    if (run_start >= 0 && !a) {
                        int64_t s = lane_addr(m, r, run_start);
                        int64_t e = lane_addr(m, r, l - 1) + m.esize;
                        ub_access(op, m.buf, s, static_cast<uint64_t>(e - s), m.write, PID_V, file, line);
                        run_start = -1;
                    }
                    if (cont && run_start < 0) run_start = l;
                    if (pass == 0 && i == 0 && cont) ++active;
                }
            }
        }
    if (nops > 0 && ops[0].write) {
        for (int r = 0; r < plan.repeats; ++r)
            for (int l = 0; l < plan.lanes; ++l) active += plan_active(plan, r, l);
    }
    count_vec(op, dtype, active, static_cast<uint64_t>(plan.repeats));
    return true;
}

}  // namespace evk_sim

// ---- data movement helpers declared in kernel.h -------------------------------------------------
namespace AscendC {
namespace evk_detail {
using namespace ::evk_sim;

void gm_to_ub(const char* op, int buf, int64_t ub_off, const void* gm, uint64_t n, const void* tbase, uint64_t tbytes,
              ::evk_sim::SrcLoc loc) {
    if (n == 0) return;
    tm_gm_segment(gm, n);
    bool ok = gm_access(op, gm, n, false, tbase, tbytes, loc.file, loc.line);
    uint64_t valid = ok ? n : gm_valid_prefix(gm, n);
    if (valid) {
        ub_access(op, buf, ub_off, valid, true, PID_MTE2, loc.file, loc.line);
        std::memcpy(g_ub + ub_off, gm_host(gm), valid);
    }
    if (valid < n) {  // the out-of-bounds part: garbage on the NPU, "never written" here
        check_range(op, buf, ub_off + static_cast<int64_t>(valid), n - valid, loc.file, loc.line);
        std::memset(g_ub_init + ub_off + valid, 0, n - valid);
    }
}

void ub_to_gm(const char* op, int buf, int64_t ub_off, void* gm, uint64_t n, const void* tbase, uint64_t tbytes,
              int kind, ::evk_sim::SrcLoc loc) {
    if (n == 0) return;
    tm_gm_segment(gm, n);
    ub_access(op, buf, ub_off, n, false, PID_MTE3, loc.file, loc.line);
    gm_store(op, gm, g_ub + ub_off, n, tbase, tbytes, kind, loc);
}

void gm_store(const char* op, void* gm, const uint8_t* s, uint64_t n, const void* tbase, uint64_t tbytes, int kind,
              ::evk_sim::SrcLoc loc) {
    if (n == 0) return;
    if (!gm_access(op, gm, n, true, tbase, tbytes, loc.file, loc.line)) return;
    int mode = g_blk.atomic_mode;
    uint8_t* d = gm_host(gm);
    if (mode == 0) {
        std::memcpy(d, s, n);
        return;
    }
    auto apply = [mode](double a, double b) { return mode == 1 ? a + b : mode == 2 ? (a > b ? a : b) : (a < b ? a : b); };
    switch (kind) {
        case DK_F32:
            for (uint64_t i = 0; i + 4 <= n; i += 4) {
                float a, b;
                std::memcpy(&a, d + i, 4);
                std::memcpy(&b, s + i, 4);
                float r = static_cast<float>(apply(a, b));
                std::memcpy(d + i, &r, 4);
            }
            break;
        case DK_F16:
            for (uint64_t i = 0; i + 2 <= n; i += 2) {
                _Float16 a, b;
                std::memcpy(&a, d + i, 2);
                std::memcpy(&b, s + i, 2);
                _Float16 r = static_cast<_Float16>(static_cast<float>(apply(static_cast<float>(a), static_cast<float>(b))));
                std::memcpy(d + i, &r, 2);
            }
            break;
        case DK_I32:
            for (uint64_t i = 0; i + 4 <= n; i += 4) {
                int32_t a, b;
                std::memcpy(&a, d + i, 4);
                std::memcpy(&b, s + i, 4);
                int32_t r = static_cast<int32_t>(apply(a, b));
                std::memcpy(d + i, &r, 4);
            }
            break;
        default:
            violation(EVK_RULE_UNSUPPORTED_DTYPE, SEV_ERROR, loc.file, loc.line,
                      "atomic accumulation of %s is not emulated (float/half/int32 only)", kind_str(kind));
            std::memcpy(d, s, n);
    }
}

void ub_to_ub(const char* op, int dbuf, int64_t doff, int sbuf, int64_t soff, uint64_t n, ::evk_sim::SrcLoc loc) {
    if (n == 0) return;
    ub_access(op, sbuf, soff, n, false, PID_V, loc.file, loc.line);
    ub_access(op, dbuf, doff, n, true, PID_V, loc.file, loc.line);
    std::memmove(g_ub + doff, g_ub + soff, n);
}

void tail_check(const char* op, uint64_t count, uint32_t esize, const char* dtype, ::evk_sim::SrcLoc loc) {
    uint64_t bytes = count * esize;
    if (count == 0) {
        violation(EVK_RULE_INVALID_ARGUMENT, SEV_WARNING, loc.file, loc.line, "%s with count 0 copies nothing", op);
        return;
    }
    if (bytes % 32) {
        uint64_t kept = bytes & ~31ull;
        uint64_t per = 32 / esize;
        violation(EVK_RULE_TAIL_DROPPED, SEV_ERROR, loc.file, loc.line,
                  "%s of %llu %s elements = %llu bytes, not a multiple of 32: the NPU moves only %llu bytes (%llu "
                  "elements) and silently drops the last %llu element(s) (reproduced here). Use DataCopyPad for an "
                  "unaligned length, or make the length a multiple of %llu elements",
                  op, static_cast<unsigned long long>(count), dtype, static_cast<unsigned long long>(bytes),
                  static_cast<unsigned long long>(kept), static_cast<unsigned long long>(kept / esize),
                  static_cast<unsigned long long>(count - kept / esize), static_cast<unsigned long long>(per));
    }
}

void gm_align_check(const char* op, const void* p, uint32_t esize, ::evk_sim::SrcLoc loc) {
    if (esize > 1 && reinterpret_cast<uintptr_t>(p) % esize)
        violation(EVK_RULE_GM_ALIGNMENT, SEV_ERROR, loc.file, loc.line,
                  "%s: GM address not aligned to the %u-byte element size", op, esize);
}

bool copy_params_check(const char* op, uint32_t blockCount, uint32_t blockLen, uint32_t maxLen, ::evk_sim::SrcLoc loc) {
    bool ok = true;
    if (blockCount < 1 || blockCount > 4095) {
        violation(EVK_RULE_INVALID_ARGUMENT, SEV_ERROR, loc.file, loc.line, "%s: blockCount=%u outside 1..4095", op,
                  blockCount);
        ok = blockCount > 0;
    }
    if (blockLen < 1 || blockLen > maxLen) {
        violation(EVK_RULE_INVALID_ARGUMENT, SEV_ERROR, loc.file, loc.line, "%s: blockLen=%u outside 1..%u", op, blockLen,
                  maxLen);
        ok = ok && blockLen > 0;
    }
    return ok;
}

void pad_fill(const char* op, int buf, int64_t off, uint64_t nbytes, const void* value, uint32_t esize, bool is_pad,
              ::evk_sim::SrcLoc loc) {
    if (nbytes == 0) return;
    if (!is_pad) {  // unspecified filler: marked as such (reads of it are reported as warnings)
        check_range(op, buf, off, nbytes, loc.file, loc.line);
        std::memset(g_ub_init + off, 2, nbytes);
        return;
    }
    ub_access(op, buf, off, nbytes, true, PID_MTE2, loc.file, loc.line);
    for (uint64_t i = 0; i + esize <= nbytes; i += esize) std::memcpy(g_ub + off + i, value, esize);
}

void compare_checks(const char* op, int kind, int mode, uint64_t count, uint32_t esize, ::evk_sim::SrcLoc loc) {
    if (kind == DK_I32) {
        if (mode != 2)
            violation(EVK_RULE_UNSUPPORTED_DTYPE, SEV_ERROR, loc.file, loc.line,
                      "%s on int32 supports CMPMODE::EQ only on the 910B", op);
    } else {
        dtype_check(op, kind, DT_HF, loc.file, loc.line);
    }
    if ((count * esize) % 256)
        violation(EVK_RULE_COMPARE_GRANULARITY, SEV_ERROR, loc.file, loc.line,
                  "%s over %llu elements = %llu bytes: the count must cover a multiple of 256 bytes (%u elements of "
                  "this type); pad the length to a multiple of %u or use the mask/repeat form",
                  op, static_cast<unsigned long long>(count), static_cast<unsigned long long>(count * esize),
                  256 / esize, 256 / esize);
}

void select_checks(const char* op, int kind, int mode, bool scalar_form, ::evk_sim::SrcLoc loc) {
    dtype_check(op, kind, DT_HF, loc.file, loc.line);
    if (scalar_form && mode != 1)
        violation(EVK_RULE_INVALID_ARGUMENT, SEV_ERROR, loc.file, loc.line,
                  "%s with a scalar src1 needs SELMODE::VSEL_TENSOR_SCALAR_MODE", op);
}

void reduce_checks(const char* op, int kind, ::evk_sim::SrcLoc loc) { dtype_check(op, kind, DT_HF, loc.file, loc.line); }

}  // namespace evk_detail
}  // namespace AscendC

// =============================================================================================
// Host side
// =============================================================================================
namespace evk_sim {
namespace {
std::map<std::string, OpEntry>& registry() {
    static std::map<std::string, OpEntry> r;
    return r;
}
}  // namespace

OpEntry* find_op(const std::string& name) {
    auto it = registry().find(name);
    if (it == registry().end()) return nullptr;
    OpEntry& e = it->second;
    if (e.def) {
        if (e.def->aicore_.tiling_) e.tiling = e.def->aicore_.tiling_;
        if (e.def->infer_shape_) e.infer_shape = e.def->infer_shape_;
        if (e.def->infer_dtype_) e.infer_dtype = e.def->infer_dtype_;
    }
    return &e;
}
std::vector<std::string> op_names() {
    std::vector<std::string> v;
    for (auto& kv : registry()) v.push_back(kv.first);
    return v;
}
PlatformConfig& platform() {
    static PlatformConfig p;
    return p;
}
void register_tiling_class(const char* op, const char* cls, size_t size) {
    OpEntry& e = registry()[op];
    e.name = op;
    e.tiling_class = cls;
    e.tiling_class_size = size;
}
void tiling_save(const void* obj, size_t size, void* buf, size_t cap, const char* cls) {
    if (!buf) {
        host_violation(EVK_RULE_TILING_SIZE, SEV_ERROR, "%s::SaveToBuffer with a null buffer", cls);
        return;
    }
    if (size > cap) {
        host_violation(EVK_RULE_TILING_SIZE, SEV_ERROR, "%s::SaveToBuffer: %zu bytes do not fit the %zu-byte capacity",
                       cls, size, cap);
        size = cap;
    }
    std::memcpy(buf, obj, size);
}
}  // namespace evk_sim

namespace ops {
OpDefRegisterer::OpDefRegisterer(const char* name, OpDefCreator creator) {
    auto& e = ::evk_sim::registry()[name];
    e.name = name;
    e.def = creator(name);
}
}  // namespace ops

namespace gert {
OpImplRegisterV2& OpImplRegisterV2::Tiling(TilingKernelFunc f, size_t) {
    auto& e = ::evk_sim::registry()[op_type_];
    e.name = op_type_;
    e.tiling = f;
    return *this;
}
OpImplRegisterV2& OpImplRegisterV2::InferShape(InferShapeKernelFunc f) {
    auto& e = ::evk_sim::registry()[op_type_];
    e.name = op_type_;
    e.infer_shape = f;
    return *this;
}
OpImplRegisterV2& OpImplRegisterV2::InferDataType(InferDataTypeKernelFunc f) {
    auto& e = ::evk_sim::registry()[op_type_];
    e.name = op_type_;
    e.infer_dtype = f;
    return *this;
}

static const char* kind_name_attr(AttrValue::Kind k) {
    switch (k) {
        case AttrValue::INT: return "an int";
        case AttrValue::FLOAT: return "a float";
        case AttrValue::BOOL: return "a bool";
        case AttrValue::STR: return "a string";
        case AttrValue::LIST_INT: return "a list of ints";
        case AttrValue::LIST_FLOAT: return "a list of floats";
        default: return "unset";
    }
}

bool RuntimeAttrs::has(size_t i, AttrValue::Kind k) const {
    if (i >= attrs_.size()) {
        ::evk_sim::host_violation("tiling_context", ::evk_sim::SEV_WARNING,
                                  "GetAttrs(): attribute index %zu requested but the op declares %zu attribute(s)", i,
                                  attrs_.size());
        return false;
    }
    if (attrs_[i].kind != k) {
        ::evk_sim::host_violation("tiling_context", ::evk_sim::SEV_WARNING,
                                  "GetAttrs(): attribute %zu (%s) read with another type's accessor: it gets the "
                                  "attribute's bytes reinterpreted, as on CANN", i, kind_name_attr(attrs_[i].kind));
        return false;
    }
    return true;
}

namespace {
template <typename V> const typename V::value_type* at_or_null(const V& v, size_t i, const char* what) {
    if (i < v.size()) return &v[i];
    ::evk_sim::host_violation("tiling_context", ::evk_sim::SEV_WARNING,
                              "%s(%zu) but the op has %zu such tensor(s): returns nullptr", what, i, v.size());
    return nullptr;
}
}  // namespace

const StorageShape* TilingContext::GetInputShape(size_t i) const {
    auto* t = at_or_null(inputs_, i, "GetInputShape");
    return t ? &t->shape_ : nullptr;
}
const Tensor* TilingContext::GetInputTensor(size_t i) const { return at_or_null(inputs_, i, "GetInputTensor"); }
const CompileTimeTensorDesc* TilingContext::GetInputDesc(size_t i) const { return at_or_null(input_descs_, i, "GetInputDesc"); }
const StorageShape* TilingContext::GetOptionalInputShape(size_t i) const {
    return i < inputs_.size() && inputs_[i].data_ ? &inputs_[i].shape_ : nullptr;
}
const Tensor* TilingContext::GetOptionalInputTensor(size_t i) const {
    return i < inputs_.size() && inputs_[i].data_ ? &inputs_[i] : nullptr;
}
const StorageShape* TilingContext::GetOutputShape(size_t i) const {
    auto* t = at_or_null(outputs_, i, "GetOutputShape");
    return t ? &t->shape_ : nullptr;
}
const CompileTimeTensorDesc* TilingContext::GetOutputDesc(size_t i) const {
    return at_or_null(output_descs_, i, "GetOutputDesc");
}
}  // namespace gert

namespace platform_ascendc {
uint32_t PlatformAscendC::GetCoreNum() const { return ::evk_sim::platform().core_num_aiv; }
uint32_t PlatformAscendC::GetCoreNumAic() const { return ::evk_sim::platform().core_num_aic; }
uint32_t PlatformAscendC::GetCoreNumAiv() const { return ::evk_sim::platform().core_num_aiv; }
void PlatformAscendC::GetCoreMemSize(const CoreMemType& t, uint64_t& size) const {
    auto& p = ::evk_sim::platform();
    switch (t) {
        case CoreMemType::UB: size = p.ub_size; break;
        case CoreMemType::L1: size = p.l1_size; break;
        case CoreMemType::L0_A: size = p.l0a_size; break;
        case CoreMemType::L0_B: size = p.l0b_size; break;
        case CoreMemType::L0_C: size = p.l0c_size; break;
        case CoreMemType::L2: size = p.l2_size; break;
        case CoreMemType::HBM: size = p.hbm_size; break;
        default: size = 0; break;
    }
}
void PlatformAscendC::GetCoreMemBw(const CoreMemType& t, uint64_t& bw) const {
    // bytes per cycle, rough public figures (used only if a TilingFunc asks)
    bw = t == CoreMemType::HBM ? 32 : t == CoreMemType::L2 ? 110 : 256;
}
}  // namespace platform_ascendc

std::string ge::TypeUtils::DataTypeToSerialString(DataType dt) {
    switch (dt) {
        case DT_FLOAT: return "DT_FLOAT";
        case DT_FLOAT16: return "DT_FLOAT16";
        case DT_BF16: return "DT_BF16";
        case DT_INT8: return "DT_INT8";
        case DT_UINT8: return "DT_UINT8";
        case DT_INT16: return "DT_INT16";
        case DT_UINT16: return "DT_UINT16";
        case DT_INT32: return "DT_INT32";
        case DT_UINT32: return "DT_UINT32";
        case DT_INT64: return "DT_INT64";
        case DT_UINT64: return "DT_UINT64";
        case DT_BOOL: return "DT_BOOL";
        case DT_DOUBLE: return "DT_DOUBLE";
        default: return "DT_UNDEFINED";
    }
}

// =============================================================================================
// Runner, report, C ABI
// =============================================================================================
namespace evk_sim {
namespace {

const char* dtype_name(int dt) {
    switch (dt) {
        case ge::DT_FLOAT: return "float32";
        case ge::DT_FLOAT16: return "float16";
        case ge::DT_BF16: return "bfloat16";
        case ge::DT_INT8: return "int8";
        case ge::DT_UINT8: return "uint8";
        case ge::DT_INT16: return "int16";
        case ge::DT_UINT16: return "uint16";
        case ge::DT_INT32: return "int32";
        case ge::DT_UINT32: return "uint32";
        case ge::DT_INT64: return "int64";
        case ge::DT_UINT64: return "uint64";
        case ge::DT_BOOL: return "bool";
        case ge::DT_DOUBLE: return "float64";
        default: return "unknown";
    }
}
int dtype_from_name(const std::string& s) {
    static const std::pair<const char*, int> names[] = {
        {"float32", ge::DT_FLOAT}, {"float", ge::DT_FLOAT}, {"fp32", ge::DT_FLOAT}, {"float16", ge::DT_FLOAT16},
        {"half", ge::DT_FLOAT16}, {"fp16", ge::DT_FLOAT16}, {"bfloat16", ge::DT_BF16}, {"bf16", ge::DT_BF16},
        {"int8", ge::DT_INT8}, {"uint8", ge::DT_UINT8}, {"int16", ge::DT_INT16}, {"uint16", ge::DT_UINT16},
        {"int32", ge::DT_INT32}, {"uint32", ge::DT_UINT32}, {"int64", ge::DT_INT64}, {"uint64", ge::DT_UINT64},
        {"bool", ge::DT_BOOL}, {"float64", ge::DT_DOUBLE}, {"double", ge::DT_DOUBLE}};
    for (auto& n : names)
        if (s == n.first) return n.second;
    return -1;
}

// ---- JSON ----
struct Json {
    std::string s;
    void str(const std::string& v) {
        s += '"';
        for (unsigned char c : v) {
            switch (c) {
                case '"': s += "\\\""; break;
                case '\\': s += "\\\\"; break;
                case '\n': s += "\\n"; break;
                case '\r': s += "\\r"; break;
                case '\t': s += "\\t"; break;
                default:
                    if (c < 0x20) {
                        char b[8];
                        std::snprintf(b, sizeof(b), "\\u%04x", c);
                        s += b;
                    } else {
                        s += static_cast<char>(c);
                    }
            }
        }
        s += '"';
    }
    void key(const char* k) {
        str(k);
        s += ':';
    }
    void num(uint64_t v) { s += std::to_string(v); }
    void inum(int64_t v) { s += std::to_string(v); }
    void dbl(double v) {
        if (!std::isfinite(v)) {
            s += "null";
            return;
        }
        char b[32];
        std::snprintf(b, sizeof(b), "%.9g", v);
        s += b;
    }
};

void counters_json(Json& j, const Counters& c) {
    j.s += "{";
    j.key("mte2_bytes"); j.num(c.mte2_bytes); j.s += ",";
    j.key("mte2_calls"); j.num(c.mte2_calls); j.s += ",";
    j.key("mte2_bursts"); j.num(c.mte2_bursts); j.s += ",";
    j.key("mte3_bytes"); j.num(c.mte3_bytes); j.s += ",";
    j.key("mte3_calls"); j.num(c.mte3_calls); j.s += ",";
    j.key("mte3_bursts"); j.num(c.mte3_bursts); j.s += ",";
    j.key("ub_copy_bytes"); j.num(c.ubcopy_bytes); j.s += ",";
    j.key("ub_copy_calls"); j.num(c.ubcopy_calls); j.s += ",";
    j.key("scalar"); j.s += "{";
    j.key("gm_get"); j.num(c.scalar[SC_GM_GET]); j.s += ",";
    j.key("gm_set"); j.num(c.scalar[SC_GM_SET]); j.s += ",";
    j.key("ub_get"); j.num(c.scalar[SC_UB_GET]); j.s += ",";
    j.key("ub_set"); j.num(c.scalar[SC_UB_SET]); j.s += ",";
    j.key("gm_get_bytes"); j.num(c.scalar_gm_bytes[0]); j.s += ",";
    j.key("gm_set_bytes"); j.num(c.scalar_gm_bytes[1]); j.s += ",";
    j.key("libm"); j.num(c.libm_calls); j.s += "},";
    j.key("sync"); j.s += "{";
    j.key("pipe_barrier"); j.num(c.barriers); j.s += ",";
    j.key("set_flag"); j.num(c.set_flags); j.s += ",";
    j.key("wait_flag"); j.num(c.wait_flags); j.s += ",";
    j.key("sync_all"); j.num(c.sync_alls); j.s += "},";
    j.key("queue"); j.s += "{";
    j.key("alloc"); j.num(c.allocs); j.s += ",";
    j.key("enque"); j.num(c.enques); j.s += ",";
    j.key("deque"); j.num(c.deques); j.s += ",";
    j.key("free"); j.num(c.frees); j.s += "},";
    j.key("instructions"); j.num(c.instructions); j.s += ",";
    j.key("cube"); j.s += "{";
    j.key("mmad_calls"); j.num(c.mmad_calls); j.s += ",";
    j.key("macs_half"); j.num(c.mmad_macs[0]); j.s += ",";
    j.key("macs_bfloat16"); j.num(c.mmad_macs[1]); j.s += ",";
    j.key("macs_float"); j.num(c.mmad_macs[2]); j.s += ",";
    j.key("macs_int8"); j.num(c.mmad_macs[3]); j.s += ",";
    j.key("mte1_bytes"); j.num(c.mte1_bytes); j.s += ",";
    j.key("mte1_calls"); j.num(c.mte1_calls); j.s += ",";
    j.key("fix_bytes"); j.num(c.fix_bytes); j.s += ",";
    j.key("fix_calls"); j.num(c.fix_calls); j.s += "},";
    j.key("vector"); j.s += "[";
    for (size_t i = 0; i < c.vec.size(); ++i) {
        const VecCounter& v = c.vec[i];
        if (i) j.s += ",";
        j.s += "{";
        j.key("op"); j.str(v.op); j.s += ",";
        j.key("dtype"); j.str(v.dtype); j.s += ",";
        j.key("calls"); j.num(v.calls); j.s += ",";
        j.key("elements"); j.num(v.elements); j.s += ",";
        j.key("repeats"); j.num(v.repeats); j.s += "}";
    }
    j.s += "]}";
}

void add_counters(Counters& t, const Counters& c) {
    t.mte2_bytes += c.mte2_bytes; t.mte2_calls += c.mte2_calls; t.mte2_bursts += c.mte2_bursts;
    t.mte3_bytes += c.mte3_bytes; t.mte3_calls += c.mte3_calls; t.mte3_bursts += c.mte3_bursts;
    t.ubcopy_bytes += c.ubcopy_bytes; t.ubcopy_calls += c.ubcopy_calls;
    for (int k = 0; k < SC_COUNT; ++k) t.scalar[k] += c.scalar[k];
    t.scalar_gm_bytes[0] += c.scalar_gm_bytes[0]; t.scalar_gm_bytes[1] += c.scalar_gm_bytes[1];
    t.libm_calls += c.libm_calls;
    t.barriers += c.barriers; t.set_flags += c.set_flags; t.wait_flags += c.wait_flags; t.sync_alls += c.sync_alls;
    t.allocs += c.allocs; t.enques += c.enques; t.deques += c.deques; t.frees += c.frees;
    t.instructions += c.instructions;
    t.mmad_calls += c.mmad_calls;
    for (int k = 0; k < 4; ++k) t.mmad_macs[k] += c.mmad_macs[k];
    t.mte1_bytes += c.mte1_bytes; t.mte1_calls += c.mte1_calls; t.fix_bytes += c.fix_bytes; t.fix_calls += c.fix_calls;
    for (const VecCounter& v : c.vec) {
        bool found = false;
        for (VecCounter& w : t.vec)
            if (w.op == v.op && w.dtype == v.dtype) {
                w.calls += v.calls; w.elements += v.elements; w.repeats += v.repeats;
                found = true;
                break;
            }
        if (!found) t.vec.push_back(v);
    }
}

// A block's modelled schedule (an estimate, not a measurement): makespan, busy cycles per pipe, the
// instructions each pipe executed, burst-rounded GM bytes and the number of MTE copies.
void timing_json(Json& j, const TimingReport& t, const HwModel& h) {
    static const char* names[PID_COUNT] = {"scalar", "vector", "mte2", "mte3", "mte1", "cube", "fix"};
    j.s += "{";
    j.key("cycles"); j.dbl(t.cycles); j.s += ",";
    j.key("us"); j.dbl(t.cycles / h[HW_CLOCK_HZ] * 1e6); j.s += ",";
    j.key("scalar_stall_cycles"); j.dbl(t.scalar_stall); j.s += ",";
    j.key("busy_cycles"); j.s += "{";
    for (int p = 0; p < PID_COUNT; ++p) {
        if (p) j.s += ",";
        j.key(names[p]); j.dbl(t.busy[p]);
    }
    j.s += "},";
    j.key("instructions"); j.s += "{";
    for (int p = 0; p < PID_COUNT; ++p) {
        if (p) j.s += ",";
        j.key(names[p]); j.num(t.ninstr[p]);
    }
    j.s += "},";
    j.key("gm_bytes"); j.s += "{";
    j.key("mte2"); j.dbl(t.gm_bytes[0]); j.s += ",";
    j.key("mte3"); j.dbl(t.gm_bytes[1]); j.s += ",";
    j.key("fix"); j.dbl(t.gm_bytes[2]); j.s += "},";
    j.key("copies"); j.s += "{";
    j.key("mte2"); j.num(t.mte_copies[0]); j.s += ",";
    j.key("mte3"); j.num(t.mte_copies[1]); j.s += ",";
    j.key("fix"); j.num(t.mte_copies[2]); j.s += "}}";
}

void hw_json(Json& j, const HwModel& h) {
    j.s += "{";
    j.key("name"); j.str(h.name);
    for (int i = 0; i < HW_COUNT; ++i) {
        j.s += ",";
        j.key(kHw[i].key);
        j.dbl(h[i]);
    }
    j.s += "}";
}

std::string report_json(const Run& r) {
    Json j;
    j.s += "{";
    j.key("schema"); j.str("evk-ascend-sim-report/1"); j.s += ",";
    j.key("op_type"); j.str(r.op_type); j.s += ",";
    j.key("kernel"); j.str(r.kernel_name); j.s += ",";
    j.key("status"); j.str(r.status); j.s += ",";
    j.key("error"); j.str(r.error); j.s += ",";
    j.key("platform"); j.s += "{";
    j.key("soc"); j.str("Ascend910B"); j.s += ",";
    j.key("core_num_aiv"); j.num(r.opt.core_num_aiv); j.s += ",";
    j.key("ub_bytes"); j.num(r.opt.ub_size); j.s += ",";
    j.key("half_overflow"); j.str(r.opt.half_saturate ? "saturate" : "inf"); j.s += "},";
    j.key("gm_protection"); j.str(r.gm.method); j.s += ",";
    j.key("hw_model"); hw_json(j, r.opt.hw); j.s += ",";
    j.key("timing_note");
    j.str("timing_estimate fields are modelled (event-level pipe schedule over the hw_model constants), not measured");
    j.s += ",";
    j.key("block_dim"); j.num(r.block_dim); j.s += ",";
    j.key("tiling_key"); j.num(r.tiling_key); j.s += ",";
    if (r.op_flow) {
        j.key("tiling"); j.s += "{";
        j.key("data_size"); j.num(r.tiling_size); j.s += ",";
        std::string hex;
        for (uint8_t b : r.tiling_bytes) {
            char h[3];
            std::snprintf(h, sizeof(h), "%02x", b);
            hex += h;
        }
        j.key("data_hex"); j.str(hex); j.s += ",";
        j.key("workspace_sizes"); j.s += "[";
        for (size_t i = 0; i < r.workspace_sizes.size(); ++i) {
            if (i) j.s += ",";
            j.num(r.workspace_sizes[i]);
        }
        j.s += "],";
        j.key("workspace_bytes"); j.num(r.workspace_bytes); j.s += ",";
        j.key("schedule_mode"); j.num(r.schedule_mode); j.s += "},";
        j.key("infer_shape"); j.s += "{";
        j.key("ran"); j.s += r.infer_shape_ran ? "true" : "false"; j.s += ",";
        j.key("ok"); j.s += r.infer_shape_ok ? "true" : "false"; j.s += ",";
        j.key("outputs"); j.s += "[";
        for (size_t i = 0; i < r.infer_shapes.size(); ++i) {
            if (i) j.s += ",";
            j.s += "[";
            for (size_t k = 0; k < r.infer_shapes[i].size(); ++k) {
                if (k) j.s += ",";
                j.inum(r.infer_shapes[i][k]);
            }
            j.s += "]";
        }
        j.s += "]},";
    }
    j.key("blocks_run"); j.num(r.blocks.size()); j.s += ",";
    // what the Ascend C API moved per kernel argument (gm_access): the trusted parent compares the outputs'
    // covered bytes with the output bytes it reads itself
    j.key("args"); j.s += "[";
    for (size_t i = 0; i < r.allocs.size(); ++i) {
        const Alloc& a = r.allocs[i];
        if (i) j.s += ",";
        j.s += "{";
        j.key("name"); j.str(a.name); j.s += ",";
        j.key("kind"); j.str(kind_name(a.kind)); j.s += ",";
        j.key("bytes"); j.num(a.n); j.s += ",";
        j.key("read_bytes"); j.num(a.api_read); j.s += ",";
        j.key("written_bytes"); j.num(a.api_written); j.s += ",";
        j.key("covered_bytes"); j.num(count_covered(a.covered)); j.s += ",";
        j.key("changed_bytes"); j.num(a.changed); j.s += "}";
    }
    j.s += "],";
    if (!r.race_stats.empty()) {
        j.key("race"); j.s += r.race_stats; j.s += ",";
    }
    // summary
    uint64_t nf = 0, ne = 0, nw = 0;
    std::map<std::string, uint64_t> by_rule;
    for (const Violation& v : r.viol) {
        (v.severity == SEV_FATAL ? nf : v.severity == SEV_ERROR ? ne : nw) += 1;
        by_rule[v.rule] += v.count;
    }
    j.key("summary"); j.s += "{";
    j.key("fatal"); j.num(nf); j.s += ",";
    j.key("error"); j.num(ne); j.s += ",";
    j.key("warning"); j.num(nw); j.s += ",";
    j.key("dropped"); j.num(r.viol_dropped); j.s += ",";
    j.key("by_rule"); j.s += "{";
    bool first = true;
    for (auto& kv : by_rule) {
        if (!first) j.s += ",";
        first = false;
        j.key(kv.first.c_str());
        j.num(kv.second);
    }
    j.s += "}},";
    j.key("violations"); j.s += "[";
    for (size_t i = 0; i < r.viol.size(); ++i) {
        const Violation& v = r.viol[i];
        if (i) j.s += ",";
        j.s += "{";
        j.key("rule"); j.str(v.rule); j.s += ",";
        j.key("severity"); j.str(sev_name(v.severity)); j.s += ",";
        j.key("block"); j.inum(v.block); j.s += ",";
        j.key("blocks"); j.s += "[";
        for (size_t k = 0; k < v.blocks.size(); ++k) {
            if (k) j.s += ",";
            j.inum(v.blocks[k]);
        }
        j.s += "],";
        j.key("count"); j.num(v.count); j.s += ",";
        j.key("message"); j.str(v.message); j.s += ",";
        j.key("file"); j.str(v.file); j.s += ",";
        j.key("line"); j.inum(v.line); j.s += "}";
    }
    j.s += "],";
    Counters total;
    j.key("blocks"); j.s += "[";
    for (size_t i = 0; i < r.blocks.size(); ++i) {
        const BlockReport& b = r.blocks[i];
        add_counters(total, b.c);
        if (i) j.s += ",";
        j.s += "{";
        j.key("block"); j.inum(b.idx); j.s += ",";
        j.key("status"); j.str(b.status); j.s += ",";
        j.key("ub_bytes_used"); j.num(b.ub_peak); j.s += ",";
        j.key("kernel_type"); j.str(b.kernel_type == 1 ? "aic" : b.kernel_type >= 2 ? "mix" : "aiv"); j.s += ",";
        if (b.aicore >= 0) {  // a core of a MIX kernel
            j.key("core"); j.str(b.role == 1 ? "aic" : "aiv"); j.s += ",";
            j.key("ai_core"); j.inum(b.aicore); j.s += ",";
            j.key("sub_block"); j.inum(b.sub); j.s += ",";
        }
        j.key("local_bytes_used"); j.s += "{";
        for (int m = 0; m < MEM_COUNT; ++m) {
            if (m) j.s += ",";
            j.key(mem_name(m)); j.num(b.mem_peak[m]);
        }
        j.s += "},";
        j.key("queues"); j.s += "[";
        for (size_t k = 0; k < b.queues.size(); ++k) {
            const Queue& q = b.queues[k];
            if (k) j.s += ",";
            j.s += "{";
            j.key("kind"); j.str(q.tbuf ? "TBuf" : "TQue"); j.s += ",";
            j.key("position"); j.str(pos_name(q.pos_src)); j.s += ",";
            j.key("num"); j.inum(q.num); j.s += ",";
            j.key("depth"); j.inum(q.depth); j.s += ",";
            j.key("bytes"); j.num(q.len); j.s += ",";
            j.key("allocs"); j.num(q.allocs); j.s += ",";
            j.key("line"); j.inum(q.line); j.s += "}";
        }
        j.s += "],";
        j.key("counters"); counters_json(j, b.c); j.s += ",";
        j.key("timing_estimate"); timing_json(j, b.tm, r.opt.hw); j.s += "}";
    }
    j.s += "],";
    j.key("totals"); counters_json(j, total); j.s += ",";
    j.key("kernel_printf"); j.str(r.printf_log);
    j.s += "}\n";
    return j.s;
}

bool write_report(const Run& r, const char* path) {
    if (!path || !*path) return true;
    std::ofstream f(path, std::ios::binary);
    if (!f) return false;
    std::string s = report_json(r);
    f.write(s.data(), static_cast<std::streamsize>(s.size()));
    return static_cast<bool>(f);
}

// ---- signals ----
sigjmp_buf g_jmp;
volatile sig_atomic_t g_guarded = 0;
bool g_handlers = false;

// what the handler saw: a fault inside the protected GM view is a raw GM access by the kernel
volatile sig_atomic_t g_fault_gm = 0;
volatile sig_atomic_t g_fault_write = -1;  // 1 write, 0 read, -1 unknown
volatile uintptr_t g_fault_addr = 0;
volatile uintptr_t g_fault_pc = 0;

extern "C" void evk_on_signal(int sig, siginfo_t* si, void* ucv) {
    if (g_guarded) {
        g_guarded = 0;
        uintptr_t a = si ? reinterpret_cast<uintptr_t>(si->si_addr) : 0;
        // a fault inside the GM window: the kernel dereferenced a GM address (there is nothing behind it)
        uintptr_t lo = g_win_base;
        g_fault_gm = (sig == SIGSEGV || sig == SIGBUS) && lo && a >= lo && a < lo + g_win_size;
        g_fault_addr = a;
        g_fault_pc = 0;
        g_fault_write = -1;
        if (ucv) {
            const ucontext_t* uc = static_cast<const ucontext_t*>(ucv);
            (void)uc;
#if defined(__x86_64__)
            g_fault_pc = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
            g_fault_write = (uc->uc_mcontext.gregs[REG_ERR] & 2) ? 1 : 0;  // page-fault error code: bit 1 = write
#elif defined(__aarch64__)
            g_fault_pc = static_cast<uintptr_t>(uc->uc_mcontext.pc);
#endif
        }
        siglongjmp(g_jmp, sig);
    }
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}
void install_handlers() {
    if (g_handlers) return;
    g_handlers = true;
    static std::vector<char> altstack(1 << 16);
    stack_t ss;
    ss.ss_sp = altstack.data();
    ss.ss_size = altstack.size();
    ss.ss_flags = 0;
    sigaltstack(&ss, nullptr);
    struct sigaction sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = evk_on_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(s, &sa, nullptr);
}
const char* sig_name(int s) {
    switch (s) {
        case SIGSEGV: return "SIGSEGV (invalid memory access)";
        case SIGBUS: return "SIGBUS";
        case SIGFPE: return "SIGFPE (arithmetic fault, e.g. integer division by zero)";
        case SIGILL: return "SIGILL";
        case SIGABRT: return "SIGABRT (abort)";
        default: return "signal";
    }
}

// ---- kernel call with N pointer arguments ----
using Arg = uint8_t*;
template <size_t I> using ArgT = Arg;
template <size_t... I> void call_n(evk_kernel_fn fn, Arg* a, std::index_sequence<I...>) {
    using F = void (*)(ArgT<I>...);
    reinterpret_cast<F>(fn)(a[I]...);
}
template <size_t N> void call_fixed(evk_kernel_fn fn, Arg* a) { call_n(fn, a, std::make_index_sequence<N>{}); }
template <size_t... N> constexpr auto call_table(std::index_sequence<N...>) {
    return std::array<void (*)(evk_kernel_fn, Arg*), sizeof...(N)>{&call_fixed<N>...};
}
constexpr size_t kMaxArgs = 32;

void reset_block(int idx) {
    Block& b = g_blk;
    b.idx = idx;
    size_t ub = g_ub_size;  // the UB part of the arena; the cube buffers are added when first initialised
    b.ub.assign(ub + 64, 0xFF);  // poison: NaN for float/half
    b.init.assign(ub + 64, 0);
    b.wpipe.assign(ub / 32 + 2, static_cast<uint8_t>(PID_NONE));
    b.wseq.assign(ub / 32 + 2, 0);
    b.ub_used = b.ub_peak = 0;
    for (int m = 0; m < MEM_COUNT; ++m) b.mem_used[m] = b.mem_peak[m] = 0;
    b.kernel_type = 0;
    b.role = b.sub = 0;
    b.aicore = -1;
    b.total_buffers = 0;
    std::memset(b.pos_buffers, 0, sizeof(b.pos_buffers));
    b.bufs.clear();
    b.queues.clear();
    b.pipes.clear();
    b.seq = 0;
    std::memset(b.synced, 0, sizeof(b.synced));
    for (auto& x : b.flags)
        for (auto& y : x)
            for (auto& f : y) f = Flag();
    std::memset(b.fetch_next, 0, sizeof(b.fetch_next));
    b.mask = MaskState();
    b.atomic_mode = 0;
    b.atomic_dtype.clear();
    b.c = Counters();
    tm_reset(static_cast<uint32_t>(ub));
    b.aborted = b.crashed = false;
    b.active = true;
    g_ub = b.ub.data();
    g_ub_init = b.init.data();
}

void end_of_block_checks() {
    Block& b = g_blk;
    if (b.aborted || b.crashed) return;
    for (size_t p = 0; p < b.pipes.size(); ++p)
        if (b.pipes[p].alive) release_pipe(static_cast<int>(p), true, "", 0);
    for (int f = 0; f < PID_COUNT; ++f)
        for (int t = 0; t < PID_COUNT; ++t)
            for (int id = 0; id < 8; ++id)
                if (b.flags[f][t][id].pending > 0)
                    record(EVK_RULE_SYNC_PAIRING, SEV_WARNING, b.flags[f][t][id].file, b.flags[f][t][id].line,
                           fmt("SetFlag<%s_%s>(%d) was never waited for (WaitFlag) before the kernel ended",
                               pipe_short(f), pipe_short(t), id));
}

// Where the faulting instruction is: the enclosing exported function (dladdr; executables need -rdynamic)
// and its module offset (for addr2line when the kernel was built with -g).
std::string describe_pc(uintptr_t pc) {
    if (!pc) return std::string();
    Dl_info info;
    std::memset(&info, 0, sizeof(info));
    if (!dladdr(reinterpret_cast<void*>(pc), &info)) return std::string();
    std::string where;
    if (info.dli_sname) {
        int st = 0;
        char* dem = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &st);
        where = fmt(" in %s", st == 0 && dem ? dem : info.dli_sname);
        std::free(dem);
    }
    if (info.dli_fname) {
        const char* base = std::strrchr(info.dli_fname, '/');
        where += fmt(" (%s+0x%llx)", base ? base + 1 : info.dli_fname,
                     static_cast<unsigned long long>(pc - reinterpret_cast<uintptr_t>(info.dli_fbase)));
    }
    return where;
}

// True if the ELF file has a .debug_line section (built with -g / -g1): then addr2line can give the line.
bool has_debug_lines(const char* path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return false;
    Elf64_Ehdr eh;
    if (!f.read(reinterpret_cast<char*>(&eh), sizeof(eh))) return false;
    if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64) return false;
    if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shstrndx >= eh.e_shnum) return false;
    std::vector<Elf64_Shdr> sh(eh.e_shnum);
    f.seekg(static_cast<std::streamoff>(eh.e_shoff));
    if (!f.read(reinterpret_cast<char*>(sh.data()), static_cast<std::streamsize>(sh.size() * sizeof(Elf64_Shdr))))
        return false;
    const Elf64_Shdr& strs = sh[eh.e_shstrndx];
    if (strs.sh_size > (1u << 20)) return false;
    std::string names(strs.sh_size, '\0');
    f.seekg(static_cast<std::streamoff>(strs.sh_offset));
    if (!f.read(&names[0], static_cast<std::streamsize>(names.size()))) return false;
    for (const Elf64_Shdr& h : sh)
        if (h.sh_name < names.size() && std::strcmp(names.c_str() + h.sh_name, ".debug_line") == 0) return true;
    return false;
}

// The kernel source line of a faulting instruction, when its module carries line tables: asks
// addr2line (binutils) once, after the fault. Skipped without debug info or with EVK_SIM_NO_ADDR2LINE set.
bool resolve_line(uintptr_t pc, std::string& file, int& line) {
    if (!pc || std::getenv("EVK_SIM_NO_ADDR2LINE")) return false;
    Dl_info info;
    std::memset(&info, 0, sizeof(info));
    if (!dladdr(reinterpret_cast<void*>(pc), &info)) return false;
    std::string mod = info.dli_fname && *info.dli_fname ? info.dli_fname : "/proc/self/exe";
    if (mod.find('\'') != std::string::npos || !has_debug_lines(mod.c_str())) return false;
    std::string cmd = fmt("addr2line -e '%s' -i 0x%llx 2>/dev/null", mod.c_str(),
                          static_cast<unsigned long long>(pc - reinterpret_cast<uintptr_t>(info.dli_fbase)));
    std::fflush(nullptr);
    FILE* pp = popen(cmd.c_str(), "r");
    if (!pp) return false;
    char buf[4096];
    bool ok = false;
    if (std::fgets(buf, sizeof(buf), pp)) {  // innermost location first
        std::string l(buf);
        size_t c = l.rfind(':');
        if (c != std::string::npos && l.compare(0, 2, "??") != 0) {
            int n = std::atoi(l.c_str() + c + 1);
            if (n > 0) {
                file = l.substr(0, c);
                line = n;
                ok = true;
            }
        }
    }
    pclose(pp);
    return ok;
}

void report_raw_gm_access(uint32_t bi) {
    const uint8_t* p = reinterpret_cast<const uint8_t*>(static_cast<uintptr_t>(g_fault_addr));
    std::string what = "an address between the argument buffers";
    if (Alloc* a = find_alloc(p))
        what = fmt("byte %llu of %s '%s' (%llu bytes)", static_cast<unsigned long long>(p - a->base), kind_name(a->kind),
                   a->name.c_str(), static_cast<unsigned long long>(a->n));
    const char* verb = g_fault_write == 1 ? "wrote" : g_fault_write == 0 ? "read" : "read/wrote";
    std::string near, file = g_last_file ? g_last_file : "";
    int line = g_last_file ? g_last_line : 0;
    if (resolve_line(static_cast<uintptr_t>(g_fault_pc), file, line))
        near = fmt(" at kernel line %s:%d", file.c_str(), line);
    else if (g_last_file && g_last_line)
        near = fmt(" shortly after the Ascend C API call at %s:%d",
                   g_last_file, g_last_line);
    record("gm_raw_access", SEV_FATAL, file.c_str(), line,
           fmt("the kernel %s global memory through a raw pointer (%s)%s in block %u%s. On the NPU use DataCopy / "
               "DataCopyPad to move GM data through the Unified Buffer, or GlobalTensor::GetValue/SetValue for "
               "single scalars; raw GM pointers (GM_ADDR, __gm__ T*, GetPhyAddr()) may only be passed to "
               "SetGlobalBuffer. The run stops here",
               verb, what.c_str(), describe_pc(static_cast<uintptr_t>(g_fault_pc)).c_str(), bi, near.c_str()));
}

// ---- blocks as fibers ------------------------------------------------------------------------------
// Every block runs on its own stack (a ucontext fiber). Without SyncAll a block runs to its end before the
// next starts, exactly as one after another. A SyncAll parks the block (its state moved aside) and the next
// block runs; when every participating block has arrived, the parked blocks resume in index order, each at
// the latest arrival time plus the barrier's cost. A block that ends while others wait at a barrier leaves
// them waiting: on the NPU that hangs, here it is a fatal `sync_all` violation.
enum FiberState { FS_NEW = 0, FS_RUNNING, FS_PARKED, FS_DONE };
struct Fiber {
    ucontext_t ctx;
    void* stack = nullptr;
    size_t stack_bytes = 0;
    int state = FS_NEW;
    std::unique_ptr<Block> parked;
    sigjmp_buf jmp;
    double arrive = 0;     // cycles: when it reached the barrier (its pipes drained)
    int participants = 0;  // the block count its SyncAll waits for
    int group = 0;         // its SyncAll's group: 0 every fiber, 1 the AIVs, 2 the AICs (MIX kernels)
    std::string where;     // file:line of its SyncAll or CrossCoreWaitFlag
    int wait_flag = -1;    // parked at CrossCoreWaitFlag(flag) (else at a SyncAll)
    // MIX kernels: who it is
    int role = 0, sub = 0, aicore = -1, logical = 0;
    int cnt[16] = {};       // CrossCore flag counters
    double avail[16] = {};  // when the latest increment of each became visible
};
struct Sched {
    Run* run = nullptr;
    evk_kernel_fn fn = nullptr;
    std::vector<Arg>* args = nullptr;
    std::vector<Fiber> fibers;
    std::vector<std::unique_ptr<BlockReport>> reports;
    ucontext_t main;
    int cur = -1;
    bool stop = false;  // a crash or a raw GM access: nothing more runs
    int ratio = 0;      // MIX kernels: AIVs per AI core (0: not a MIX launch)
    // CrossCoreSetFlag tallies: mode 0 per role, mode 1 and mode 2 (AIV -> AIC) per AI core
    int tally0[2][16] = {};
    double tally0_t[2][16] = {};
    std::vector<std::array<int, 16>> tally1, tally2;
    std::vector<std::array<double, 16>> tally1_t, tally2_t;
    int first_of(int aicore) const { return aicore * (1 + ratio); }  // its AIC; the AIVs follow
};
int g_mix_ratio = 0;  // set by a MIX kernel's translation unit (EVK_SIM_MIX) or the launcher's --option mix=N
Sched* g_sched = nullptr;
constexpr size_t kFiberStack = 16u << 20;  // reserved, not committed (MAP_NORESERVE)

void free_fiber_stack(Fiber& f) {
    if (f.stack) munmap(f.stack, f.stack_bytes);
    f.stack = nullptr;
}

// The end of a block: checks, schedule, counters into its report (g_blk is the block's state).
void finish_block(BlockReport& rep) {
    end_of_block_checks();
    {
        Timing& t = g_blk.tm;
        rep.tm.cycles = tm_finish();
        rep.tm.scalar_stall = t.scalar_stall;
        for (int p = 0; p < PID_COUNT; ++p) {
            rep.tm.busy[p] = t.busy[p];
            rep.tm.ninstr[p] = t.ninstr[p];
        }
        for (int k = 0; k < 3; ++k) {
            rep.tm.gm_bytes[k] = t.gm_bytes[k];
            rep.tm.mte_copies[k] = t.mte_copies[k];
        }
    }
    g_blk.active = false;
    rep.c = g_blk.c;
    rep.ub_peak = g_blk.ub_peak;
    for (int m = 0; m < MEM_COUNT; ++m) rep.mem_peak[m] = g_blk.mem_peak[m];
    rep.kernel_type = g_blk.kernel_type;
    rep.role = g_blk.role;
    rep.sub = g_blk.sub;
    rep.aicore = g_blk.aicore;
    rep.queues = g_blk.queues;
}

void fiber_entry() {
    static const auto table = call_table(std::make_index_sequence<kMaxArgs + 1>{});
    Sched& s = *g_sched;
    const int bi = s.cur;
    Fiber& f = s.fibers[bi];
    Run& r = *s.run;
    reset_block(f.logical);
    g_blk.role = f.role;
    g_blk.sub = f.sub;
    g_blk.aicore = f.aicore;
    if (f.role == 1) g_blk.kernel_type = 1;
    auto rep = std::make_unique<BlockReport>();
    rep->idx = f.logical;
    rep->status = "ok";
    g_fault_gm = 0;
    g_last_file = nullptr;
    g_last_line = 0;
    int sig = sigsetjmp(g_jmp, 1);
    if (sig == 0) {
        std::memcpy(&f.jmp, &g_jmp, sizeof(sigjmp_buf));
        g_guarded = 1;
        try {
            table[s.args->size()](s.fn, s.args->data());
        } catch (const BlockAbort&) {
            rep->status = "aborted";
        } catch (const std::exception& e) {
            g_blk.aborted = true;
            record("kernel_exception", SEV_FATAL, "", 0, fmt("C++ exception escaped the kernel: %s", e.what()));
            rep->status = "aborted";
        } catch (...) {
            g_blk.aborted = true;
            record("kernel_exception", SEV_FATAL, "", 0, "unknown C++ exception escaped the kernel");
            rep->status = "aborted";
        }
        g_guarded = 0;
    } else if (g_fault_gm) {
        g_blk.aborted = true;
        report_raw_gm_access(static_cast<uint32_t>(bi));
        rep->status = "aborted";
        r.status = "aborted";
        s.stop = true;
    } else {
        g_blk.crashed = true;
        record("kernel_crash", SEV_FATAL, "", 0,
               fmt("the kernel crashed in block %d with %s (after %llu emulated instructions); raw pointer "
                   "accesses are not checked by the emulator",
                   bi, sig_name(sig), static_cast<unsigned long long>(g_blk.c.instructions)));
        rep->status = "crashed";
        r.status = "crashed";
        s.stop = true;
    }
    finish_block(*rep);
    s.reports[bi] = std::move(rep);
    f.state = FS_DONE;
    // returning switches to s.main (uc_link)
}

void run_fiber(Sched& s, int bi) {
    Fiber& f = s.fibers[bi];
    s.cur = bi;
    if (f.state == FS_NEW) {
        f.stack_bytes = kFiberStack;
        f.stack = mmap(nullptr, f.stack_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
        if (f.stack == MAP_FAILED) {
            f.stack = nullptr;
            throw std::runtime_error("cannot map a block's stack");
        }
        mprotect(f.stack, 4096, PROT_NONE);  // a guard page: an overflowing kernel crashes, it does not scribble
        getcontext(&f.ctx);
        f.ctx.uc_stack.ss_sp = f.stack;
        f.ctx.uc_stack.ss_size = f.stack_bytes;
        f.ctx.uc_link = &s.main;
        makecontext(&f.ctx, fiber_entry, 0);
        f.state = FS_RUNNING;
    } else {  // resume a parked block: its state, its UB, its crash landing
        g_blk = std::move(*f.parked);
        f.parked.reset();
        g_ub = g_blk.ub.data();
        g_ub_init = g_blk.init.data();
        std::memcpy(&g_jmp, &f.jmp, sizeof(sigjmp_buf));
        f.state = FS_RUNNING;
    }
    g_race.cur = g_race.on ? bi : -1;
    swapcontext(&s.main, &f.ctx);
    g_race.cur = -1;
    s.cur = -1;
    if (f.state == FS_DONE) free_fiber_stack(f);
}
}  // namespace

int64_t sub_block_num() { return g_sched && g_sched->ratio && g_blk.role == 0 ? g_sched->ratio : 1; }
// The launch's workspace argument (kernel-visible address and size): what CANN's framework hands the
// high-level APIs as their system workspace (GetSysWorkSpacePtr).
uint8_t* sys_workspace() {
    if (!g_run) return nullptr;
    for (const Alloc& a : g_run->allocs)
        if (a.kind == AK_WORKSPACE && a.n) return a.base;
    return nullptr;
}
uint64_t sys_workspace_bytes() {
    if (!g_run) return 0;
    for (const Alloc& a : g_run->allocs)
        if (a.kind == AK_WORKSPACE) return a.n;
    return 0;
}
void set_mix_ratio(int ratio) { g_mix_ratio = ratio; }  // -1: every block is a cube core
namespace {
// Parks the current fiber (its state moved aside) and returns when the scheduler resumes it.
void park_current(Sched& s, Fiber& f) {
    f.parked = std::make_unique<Block>(std::move(g_blk));
    f.state = FS_PARKED;
    std::memcpy(&f.jmp, &g_jmp, sizeof(sigjmp_buf));
    swapcontext(&f.ctx, &s.main);
}
double drained(const Timing& t) {
    double a = t.issue;
    for (int p = 0; p < PID_COUNT; ++p) a = std::max(a, t.done[p]);
    return a;
}
}  // namespace

// SyncAll: park this block until every participating block has arrived (see "blocks as fibers"). In a MIX
// kernel the AIV-only form waits for the AIVs, the other for every core.
void sync_all(int participants, bool aiv_only, const char* file, int line) {
    note_loc(file, line);
    tm_api_call();
    ++g_blk.c.sync_alls;
    if (!g_sched || g_sched->cur < 0)
        fatal(EVK_RULE_UNSUPPORTED_API, file, line, "SyncAll outside a kernel launch");
    Sched& s = *g_sched;
    const int group = s.ratio ? (aiv_only ? 1 : 0) : 0;
    int n = 0;
    for (const Fiber& x : s.fibers) n += group == 0 || (group == 1 && x.role == 0) ? 1 : 0;
    if (s.ratio && aiv_only && g_blk.role == 1)
        fatal("sync_all", file, line, "SyncAll<isAIVOnly=true> on a cube core (AIC): use SyncAll<false>() in MIX "
                                      "kernels to include the cube cores");
    if (participants <= 0) participants = n;
    if (participants > n)
        fatal("sync_all", file, line,
              "SyncAll waits for %d blocks but the kernel runs %d: on the NPU it never returns", participants, n);
    const uint32_t cores = g_run ? g_run->opt.core_num_aiv : 40;
    const uint32_t ai_cores = s.ratio ? cores / 2 : cores;
    const uint32_t launched = s.ratio ? static_cast<uint32_t>(s.fibers.size() / (1 + s.ratio)) :
                                        static_cast<uint32_t>(s.fibers.size());
    if (launched > ai_cores)
        fatal("sync_all", file, line,
              "SyncAll with %u blocks on %u cores: blocks of a later wave cannot start while the first wave waits "
              "at the barrier, so the NPU hangs (launch at most GetCoreNum%s() blocks)",
              launched, ai_cores, s.ratio ? "Aic" : "Aiv");
    Fiber& f = s.fibers[s.cur];
    tm_close();
    f.arrive = drained(g_blk.tm);
    f.participants = participants;
    f.group = group;
    f.wait_flag = -1;
    f.where = fmt("%s:%d", file ? file : "", line);
    park_current(s, f);
    // resumed by the scheduler: the barrier is over
    g_blk.tm.issue = std::max(g_blk.tm.issue, g_blk.tm.barrier_release);
}

// CrossCoreSetFlag<mode, pipe>(flag): once the pipe's earlier work is done, report to the other cores.
// Mode 0: every core of this kind (AIC or AIV) has set it -> each one's counter + 1; mode 1: both AIVs of an
// AI core -> each one's counter + 1; mode 2: the AIC -> each of its AIVs' counter + 1, all its AIVs -> the
// AIC's counter + 1.
void cross_core_set(int mode, int pipe, int flag, const char* file, int line) {
    note_loc(file, line);
    tm_api_call();
    if (!g_sched || g_sched->cur < 0) fatal(EVK_RULE_UNSUPPORTED_API, file, line, "CrossCoreSetFlag outside a kernel");
    Sched& s = *g_sched;
    if (flag < 0 || flag > 15) {
        violation(EVK_RULE_INVALID_ARGUMENT, SEV_ERROR, file, line, "CrossCoreSetFlag flagId %d (valid: 0-15)", flag);
        return;
    }
    if (mode < 0 || mode > 2)
        fatal(EVK_RULE_INVALID_ARGUMENT, file, line, "CrossCoreSetFlag mode %d (the 910B has modes 0, 1 and 2)", mode);
    if ((mode == 1 || mode == 2) && !s.ratio)
        fatal(EVK_RULE_UNSUPPORTED_API, file, line,
              "CrossCoreSetFlag mode %d synchronises the cores inside an AI core: it needs a MIX kernel (cube and "
              "vector cores in one block)", mode);
    Fiber& f = s.fibers[s.cur];
    if (mode == 1 && f.role != 0)
        fatal(EVK_RULE_INVALID_ARGUMENT, file, line, "CrossCoreSetFlag mode 1 (AIV with AIV) on a cube core");
    tm_close();
    const int pk = pipe >= 0 && pipe < PID_COUNT ? pipe : -1;
    const double t = pk >= 0 ? std::max(g_blk.tm.issue, g_blk.tm.done[pk]) : drained(g_blk.tm);
    const int nf = static_cast<int>(s.fibers.size());
    const int me = s.cur;
    // race detection: the increment carries the setter's clock (a tally: the join of its setters)
    race::Clock carried;
    std::pair<int, int> rkey{-1, flag};
    auto bump = [&](int i, double when) {
        ++s.fibers[i].cnt[flag];
        s.fibers[i].avail[flag] = std::max(s.fibers[i].avail[flag], when);
        if (g_race.on) g_race.deliver(i, flag, carried);
    };
    if (g_race.on) {
        if (mode == 0) rkey.first = f.role;                             // 0, 1
        else if (mode == 1) rkey.first = 2 + 2 * f.aicore;              // even >= 2
        else if (f.role == 0) rkey.first = 3 + 2 * f.aicore;            // odd >= 3
        if (rkey.first >= 0) g_race.set_into(rkey, me);
        else carried = g_race.snapshot(me);
    }
    auto take = [&](int remaining) {
        if (g_race.on) carried = g_race.take_tally(rkey, remaining);
    };
    if (mode == 0) {
        int members = 0;
        for (const Fiber& x : s.fibers) members += x.role == f.role;
        int& tally = s.tally0[f.role][flag];
        double& tt = s.tally0_t[f.role][flag];
        ++tally;
        tt = std::max(tt, t);
        if (tally >= members) {
            tally -= members;
            take(tally);
            for (int i = 0; i < nf; ++i)
                if (s.fibers[i].role == f.role) bump(i, tt);
            tt = 0;
        }
    } else if (mode == 1) {
        int& tally = s.tally1[f.aicore][flag];
        double& tt = s.tally1_t[f.aicore][flag];
        ++tally;
        tt = std::max(tt, t);
        if (tally >= s.ratio) {
            tally -= s.ratio;
            take(tally);
            for (int k = 0; k < s.ratio; ++k) bump(s.first_of(f.aicore) + 1 + k, tt);
            tt = 0;
        }
    } else if (f.role == 1) {  // mode 2, the AIC -> its AIVs
        for (int k = 0; k < s.ratio; ++k) bump(s.first_of(f.aicore) + 1 + k, t);
    } else {  // mode 2, an AIV -> its AIC once all of them have set
        int& tally = s.tally2[f.aicore][flag];
        double& tt = s.tally2_t[f.aicore][flag];
        ++tally;
        tt = std::max(tt, t);
        if (tally >= s.ratio) {
            tally -= s.ratio;
            take(tally);
            bump(s.first_of(f.aicore), tt);
            tt = 0;
        }
    }
    if (g_race.on) g_race.tick(me);  // writes after the set are not covered by it
}

// CrossCoreWaitFlag(flag): wait until this core's counter is non-zero, then take one.
void cross_core_wait(int flag, const char* file, int line) {
    note_loc(file, line);
    tm_api_call();
    if (!g_sched || g_sched->cur < 0) fatal(EVK_RULE_UNSUPPORTED_API, file, line, "CrossCoreWaitFlag outside a kernel");
    if (flag < 0 || flag > 15) {
        violation(EVK_RULE_INVALID_ARGUMENT, SEV_ERROR, file, line, "CrossCoreWaitFlag flagId %d (valid: 0-15)", flag);
        return;
    }
    Sched& s = *g_sched;
    Fiber& f = s.fibers[s.cur];
    if (f.cnt[flag] == 0) {
        tm_close();
        f.wait_flag = flag;
        f.where = fmt("%s:%d", file ? file : "", line);
        park_current(s, f);
        f.wait_flag = -1;
    }
    --f.cnt[flag];
    if (g_race.on) g_race.acquire(s.cur, flag);
    const double before = g_blk.tm.issue;
    g_blk.tm.issue = std::max(g_blk.tm.issue, f.avail[flag]);
    g_blk.tm.scalar_stall += g_blk.tm.issue - before;
}

namespace {
void sched_fatal_parked(Sched& s, int i, const std::string& msg) {
    Fiber& f = s.fibers[i];
    g_blk = std::move(*f.parked);
    f.parked.reset();
    g_ub = g_blk.ub.data();
    g_ub_init = g_blk.init.data();
    auto rep = std::make_unique<BlockReport>();
    rep->idx = f.logical;
    rep->status = "aborted";
    if (!msg.empty()) {
        g_blk.aborted = true;
        const size_t colon = f.where.rfind(':');
        record("sync_all", SEV_FATAL, f.where.substr(0, colon).c_str(),
               colon == std::string::npos ? 0 : std::atoi(f.where.c_str() + colon + 1), msg);
    }
    finish_block(*rep);
    s.reports[i] = std::move(rep);
    f.state = FS_DONE;
    free_fiber_stack(f);
}

// Runs the kernel for every block; returns false if the run stopped early (a crash, a raw GM access, a hang).
bool run_blocks(Run& r, evk_kernel_fn fn, std::vector<Arg>& args) {
    install_handlers();
    g_ub_size = static_cast<uint32_t>(r.opt.ub_size);
    layout_memories(g_ub_size);
    Sched s;
    s.run = &r;
    s.fn = fn;
    s.args = &args;
    s.ratio = g_mix_ratio > 0 ? g_mix_ratio : 0;
    if (s.ratio) {  // a MIX kernel: per AI core one AIC, then its AIVs
        s.fibers.resize(static_cast<size_t>(r.block_dim) * (1 + s.ratio));
        s.tally1.assign(r.block_dim, {});
        s.tally2.assign(r.block_dim, {});
        s.tally1_t.assign(r.block_dim, {});
        s.tally2_t.assign(r.block_dim, {});
        for (uint32_t b = 0; b < r.block_dim; ++b)
            for (int k = 0; k <= s.ratio; ++k) {
                Fiber& f = s.fibers[b * (1 + s.ratio) + k];
                f.aicore = static_cast<int>(b);
                f.role = k == 0 ? 1 : 0;
                f.sub = k == 0 ? 0 : k - 1;
                f.logical = k == 0 ? static_cast<int>(b) : static_cast<int>(b) * s.ratio + k - 1;
            }
    } else {  // one core per block: a vector core, or a cube core for a cube-only kernel
        s.fibers.resize(r.block_dim);
        for (uint32_t b = 0; b < r.block_dim; ++b) {
            s.fibers[b].logical = static_cast<int>(b);
            s.fibers[b].role = g_mix_ratio < 0 ? 1 : 0;
        }
    }
    s.reports.resize(s.fibers.size());
    g_sched = &s;
    g_overlaps.clear();
    g_overlap_bytes = 0;
    const int nf = static_cast<int>(s.fibers.size());
    {
        const char* rv = std::getenv("EVK_SIM_RACE");  // "0": no race detection (to measure its cost)
        g_race.reset(rv && std::strcmp(rv, "0") == 0 ? 0 : nf);
    }
    if (g_race.on)
        for (int i = 0; i < nf; ++i) {
            const Fiber& f = s.fibers[i];
            g_race.aicore[i] = s.ratio ? f.aicore : -1;
            g_race.role[i] = f.role;
            g_race.name[i] = !s.ratio ? fmt("block %d", f.logical)
                           : f.role ? fmt("the AIC of AI core %d", f.aicore)
                                    : fmt("AIV %d of AI core %d (block %d)", f.sub, f.aicore, f.logical);
        }
    try {
        for (int i = 0; i < nf && !s.stop; ++i) run_fiber(s, i);
        for (;;) {
            if (s.stop) break;
            // a core whose awaited flag has arrived goes on (lowest index first)
            int ready = -1;
            for (int i = 0; i < nf && ready < 0; ++i)
                if (s.fibers[i].state == FS_PARKED && s.fibers[i].wait_flag >= 0 &&
                    s.fibers[i].cnt[s.fibers[i].wait_flag] > 0)
                    ready = i;
            if (ready >= 0) {
                run_fiber(s, ready);
                continue;
            }
            // a barrier all its participants reached opens
            std::vector<int> at_barrier;
            int need = 0;
            double release = 0;
            for (int i = 0; i < nf; ++i)
                if (s.fibers[i].state == FS_PARKED && s.fibers[i].wait_flag < 0) {
                    at_barrier.push_back(i);
                    need = std::max(need, s.fibers[i].participants);
                    release = std::max(release, s.fibers[i].arrive);
                }
            if (!at_barrier.empty() && static_cast<int>(at_barrier.size()) >= need) {
                release += hw()[HW_SYNC_ALL_CYCLES];
                if (g_race.on) g_race.barrier(at_barrier);
                for (int i : at_barrier) {
                    s.fibers[i].parked->tm.barrier_release = release;
                    run_fiber(s, i);
                    if (s.stop) break;
                }
                continue;
            }
            // nothing can move: every parked core waits forever on the NPU
            std::vector<int> parked;
            for (int i = 0; i < nf; ++i)
                if (s.fibers[i].state == FS_PARKED) parked.push_back(i);
            if (parked.empty()) break;
            std::string ended;
            for (int i = 0; i < nf && ended.size() < 200; ++i)
                if (s.fibers[i].state == FS_DONE)
                    ended += fmt("%s%s%d", ended.empty() ? "" : ", ", s.ratio ? (s.fibers[i].role ? "AIC " : "AIV ") : "",
                                 s.fibers[i].logical);
            for (int i : parked) {
                const Fiber& f = s.fibers[i];
                std::string msg = f.wait_flag >= 0
                    ? fmt("CrossCoreWaitFlag(%d) on %s %d waits for a CrossCoreSetFlag no core will make (cores that "
                          "ended: %s): on the NPU it hangs%s",
                          f.wait_flag, f.role ? "AIC" : (s.ratio ? "AIV" : "block"), f.logical,
                          ended.empty() ? "none" : ended.c_str(),
                          s.ratio ? "" : " (this launch has no cube cores: a kernel that uses ASCEND_IS_AIC/AIV is "
                                         "a MIX kernel, built with EVK_SIM_MIX)")
                    : fmt("SyncAll waits for %d blocks but only %d reached it; %s %s ended without it: on the NPU the "
                          "waiting blocks hang",
                          need, static_cast<int>(at_barrier.size()), ended.empty() ? "no block" : "block(s)",
                          ended.empty() ? "" : ended.c_str());
                sched_fatal_parked(s, i, msg);
            }
            r.status = "aborted";
            break;
        }
        if (s.stop)  // the run stopped: abandon the parked cores
            for (int i = 0; i < nf; ++i)
                if (s.fibers[i].state == FS_PARKED) sched_fatal_parked(s, i, "");
    } catch (const std::exception& e) {
        record("kernel_crash", SEV_FATAL, "", 0, fmt("the emulator could not run the blocks: %s", e.what()));
        r.status = "crashed";
        s.stop = true;
    }
    for (Fiber& f : s.fibers) free_fiber_stack(f);
    resolve_overlaps();
    if (g_race.on) {
        uint64_t wb = 0, rb = 0;
        for (const Alloc& a : r.allocs) {
            wb += a.race.size() * sizeof(uint64_t);
            rb += a.race_rd.size() * sizeof(uint32_t);
        }
        r.race_stats = g_race.stats_json(wb, rb);
    }
    g_race.reset(0);
    for (auto& rep : s.reports)
        if (rep) r.blocks.push_back(std::move(*rep));
    g_sched = nullptr;
    g_ub = nullptr;
    g_ub_init = nullptr;
    return !s.stop && r.status != "aborted";
}

bool make_options(const evk_options& o, Options& p) {
    p = Options();
    if (o.hw_model_json && *o.hw_model_json) {
        std::string err;
        if (!parse_hw_json(o.hw_model_json, p.hw, err)) {
            g_last_error = err;
            return false;
        }
    }
    p.core_num_aiv = static_cast<uint32_t>(p.hw[HW_AIV_CORES]);
    if (o.core_num_aiv) p.core_num_aiv = o.core_num_aiv;
    if (o.ub_size) p.ub_size = o.ub_size;
    p.half_saturate = o.half_overflow_saturate ? 1 : 0;
    p.keep_outputs = o.keep_outputs != 0;
    p.max_instructions = o.max_instructions;
    if (o.max_violations > 0) p.max_violations = o.max_violations;
    return true;
}

// Declares a kernel argument; map_gm() places it in the GM region.
void add_alloc(Run& r, const std::string& name, int kind, void* data, uint64_t n) {
    Alloc a;
    a.name = name;
    a.kind = kind;
    a.caller = data;
    a.n = n;
    a.copy_back = data && (kind == AK_OUTPUT || kind == AK_INOUT || kind == AK_WORKSPACE);
    if (kind == AK_OUTPUT || kind == AK_INOUT) a.writer.assign(n, -1);
    r.allocs.push_back(std::move(a));
}

// ---- the GM window ---------------------------------------------------------------------------------------
constexpr uint64_t kGmPage = 4096;
constexpr uint64_t kGmGap = 64 * 1024;       // unbacked gap before, between and after arguments
constexpr uint64_t kWindowBytes = 1ull << 39;  // 512 GiB of address space, nothing mapped but the tiling view (abi.WINDOW_BYTES)
constexpr uint64_t kDefaultWindow = (1ull << 45) + (1ull << 40);  // 33 TiB: far below the mmap base, above the program
constexpr uint64_t kTilingView = 1ull << 20;   // the tiling's read-only view (a tiling of at most 1 MiB)
constexpr uint64_t kArgsStart = kTilingView + kGmGap;

// No mapping of this process intersects [lo, hi)? (read once, when the window is set, before any candidate runs)
bool range_free(uint64_t lo, uint64_t hi) {
    FILE* f = std::fopen("/proc/self/maps", "r");
    if (!f) return true;  // cannot tell: the view's MAP_FIXED_NOREPLACE still refuses to replace anything
    char line[512];
    bool free_ = true;
    while (std::fgets(line, sizeof(line), f)) {
        unsigned long long a = 0, b = 0;
        if (std::sscanf(line, "%llx-%llx", &a, &b) == 2 && a < hi && b > lo) free_ = false;
    }
    std::fclose(f);
    return free_;
}

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

// Fixes the window at `base` (1 GiB aligned) and maps its tiling view: a memfd mapped read/write for the runtime
// and read-only at the window's start for the kernel. Once per library; later calls must name the same base.
bool set_window(uint64_t base, std::string& err) {
    if (g_win_base) {
        if (base && base != g_win_base) {
            err = fmt("the GM window is already at 0x%llx", static_cast<unsigned long long>(g_win_base));
            return false;
        }
        return true;
    }
    if (!base) base = kDefaultWindow;
    if (base % (1ull << 30) != 0 || base < (1ull << 32) || base + kWindowBytes > (1ull << 47)) {
        err = fmt("GM window base 0x%llx: must be 1 GiB aligned, inside the 47-bit user address space",
                  static_cast<unsigned long long>(base));
        return false;
    }
    if (!range_free(base, base + kWindowBytes)) {
        err = fmt("GM window 0x%llx: the address range is in use", static_cast<unsigned long long>(base));
        return false;
    }
    void* rw = MAP_FAILED;
    void* kv = MAP_FAILED;
#ifdef SYS_memfd_create
    int fd = static_cast<int>(syscall(SYS_memfd_create, "evk-sim-tiling", 1u /* MFD_CLOEXEC */));
    if (fd >= 0) {
        if (ftruncate(fd, static_cast<off_t>(kTilingView)) == 0) {
            rw = mmap(nullptr, kTilingView, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (rw != MAP_FAILED) {
                kv = mmap(reinterpret_cast<void*>(base), kTilingView, PROT_READ, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
                if (kv != MAP_FAILED && kv != reinterpret_cast<void*>(base)) {  // an old kernel took it as a hint
                    munmap(kv, kTilingView);
                    kv = MAP_FAILED;
                }
                if (kv == MAP_FAILED) {
                    munmap(rw, kTilingView);
                    rw = MAP_FAILED;
                }
            }
        }
        close(fd);  // the mappings keep the memory; nothing else can map it again
    }
#endif
    g_win_base = base;
    g_win_size = kWindowBytes;
    if (rw != MAP_FAILED) {
        g_tv_rw = static_cast<uint8_t*>(rw);
        g_tv_size = kTilingView;
    }  // else no raw-readable tiling: raw tiling reads fault like any raw GM access
    return true;
}

// Lays the arguments out in the window (page-aligned, separated by unbacked gaps), copies inputs into the
// runtime's memory, poisons outputs, and fills `args` with the kernel-visible addresses. The tiling goes into
// the read-only view when it fits.
bool map_gm(Run& r, std::vector<Arg>& args) {
    std::string err;
    if (!set_window(0, err)) {
        g_last_error = err;
        return false;
    }
    uint64_t size = 0;
    std::vector<uint64_t> offs;
    for (const Alloc& a : r.allocs) {
        if (a.kind == AK_TILING && g_tv_rw && a.n <= g_tv_size) {
            offs.push_back(UINT64_MAX);  // in the view
            continue;
        }
        offs.push_back(size);
        uint64_t n = a.n ? a.n : 1;
        size += (n + kGmPage - 1) / kGmPage * kGmPage + kGmGap;
    }
    if (kArgsStart + size > g_win_size) {
        g_last_error = "the kernel arguments need " + std::to_string(size) + " bytes of emulated global memory";
        return false;
    }
    void* rw = size ? mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
                    : nullptr;
    if (rw == MAP_FAILED) {
        g_last_error = "cannot map " + std::to_string(size) + " bytes of emulated global memory";
        return false;
    }
    r.gm.rw = static_cast<uint8_t*>(rw);
    r.gm.kv = reinterpret_cast<uint8_t*>(g_win_base + kArgsStart);
    r.gm.size = size;
    r.gm.method = "unbacked-window";
    g_gm_rw = r.gm.rw;
    g_gm_kv = r.gm.kv;
    g_gm_size = r.gm.size;
    args.clear();
    for (size_t i = 0; i < r.allocs.size(); ++i) {
        Alloc& a = r.allocs[i];
        if (offs[i] == UINT64_MAX) {
            a.base = reinterpret_cast<uint8_t*>(g_win_base);
            a.host = g_tv_rw;
            std::memset(g_tv_rw, 0, g_tv_size);
        } else {
            a.base = r.gm.kv + offs[i];
            a.host = r.gm.rw + offs[i];
        }
        if (a.kind == AK_OUTPUT && !r.opt.keep_outputs)
            std::memset(a.host, 0xFF, a.n);  // poison: NaN for float/half
        else if (a.caller && a.n)
            std::memcpy(a.host, a.caller, a.n);
        if (a.kind == AK_OUTPUT || a.kind == AK_INOUT) a.covered.assign((a.n + 63) / 64, 0);
        args.push_back(a.base);
    }
    return true;
}

// Output bytes that changed without an API write covering them: a kernel wrote them some other way (a forged
// pointer into the runtime's memory). Checked before the copy back, against what the caller's buffer held (or
// the poison).
void check_uncovered_writes(Run& r) {
    for (Alloc& a : r.allocs) {
        if ((a.kind != AK_OUTPUT && a.kind != AK_INOUT) || !a.host || a.covered.empty()) continue;
        const bool poisoned = a.kind == AK_OUTPUT && !r.opt.keep_outputs;
        const uint8_t* before = static_cast<const uint8_t*>(a.caller);
        if (!poisoned && !before) continue;
        uint64_t changed = 0, uncovered = 0, first = 0;
        for (uint64_t i = 0; i < a.n; ++i) {
            const uint8_t was = poisoned ? 0xFF : before[i];
            if (a.host[i] == was) continue;
            ++changed;
            if (!(a.covered[i >> 6] >> (i & 63) & 1)) {
                if (!uncovered) first = i;
                ++uncovered;
            }
        }
        a.changed = changed;
        if (uncovered)
            record("gm_raw_write", SEV_FATAL, "", 0,
                   fmt("%llu byte(s) of %s '%s' (first at byte %llu) changed without an Ascend C API write (DataCopy, "
                       "DataCopyPad, Fixpipe, SetValue): the kernel wrote global memory behind the emulator's back",
                       static_cast<unsigned long long>(uncovered), kind_name(a.kind), a.name.c_str(),
                       static_cast<unsigned long long>(first)));
    }
}

// Copies outputs (and in/out, caller workspace) back to the caller's buffers and drops the region.
void unmap_gm(Run& r) {
    if (!r.gm.rw && !r.gm.kv) return;
    check_uncovered_writes(r);
    for (Alloc& a : r.allocs)
        if (a.copy_back && a.caller && a.n && a.host) std::memcpy(a.caller, a.host, a.n);
    g_gm_kv = nullptr;
    g_gm_rw = nullptr;
    g_gm_size = 0;
    r.gm.release();
}

int finish(Run& r, const char* report_path, bool completed) {
    unmap_gm(r);
    if (!completed && r.status == "ok") r.status = "stopped";
    bool fatal_seen = false;
    for (const Violation& v : r.viol) fatal_seen = fatal_seen || v.severity == SEV_FATAL;
    if (r.status == "ok" && fatal_seen) r.status = "aborted";
    bool wrote = write_report(r, report_path);
    g_run = nullptr;
    if (!wrote) {
        g_last_error = std::string("cannot write the report to ") + (report_path ? report_path : "");
        return 2;
    }
    return completed ? 0 : 10;
}

std::string g_json_buf;

}  // namespace
}  // namespace evk_sim

// =============================================================================================
// C ABI
// =============================================================================================
using namespace evk_sim;

extern "C" int evk_sim_launch(const evk_launch_config* cfg) {
    g_last_error.clear();
    if (!cfg || !cfg->kernel) {
        g_last_error = "evk_sim_launch: no kernel";
        return 1;
    }
    if (cfg->n_args < 0 || static_cast<size_t>(cfg->n_args) > kMaxArgs) {
        g_last_error = "evk_sim_launch: at most 32 kernel arguments";
        return 1;
    }
    Run r;
    if (!make_options(cfg->options, r.opt)) return 1;
    r.kernel_name = cfg->kernel_name ? cfg->kernel_name : "";
    r.block_dim = cfg->block_dim;
    r.tiling_key = cfg->tiling_key;
    platform().core_num_aiv = r.opt.core_num_aiv;
    platform().core_num_aic = r.opt.core_num_aiv / 2;
    platform().ub_size = r.opt.ub_size;
    g_run = &r;
    g_printf_bytes = 0;
    std::vector<Arg> args;
    for (int i = 0; i < cfg->n_args; ++i) {
        const evk_buffer& b = cfg->args[i];
        int kind = b.kind == EVK_ARG_OUTPUT ? AK_OUTPUT
                 : b.kind == EVK_ARG_WORKSPACE ? AK_WORKSPACE
                 : b.kind == EVK_ARG_TILING ? AK_TILING
                 : b.kind == EVK_ARG_INOUT ? AK_INOUT : AK_INPUT;
        add_alloc(r, b.name ? b.name : ("arg" + std::to_string(i)), kind, b.data, b.nbytes);
    }
    if (!map_gm(r, args)) {
        g_run = nullptr;
        return 1;
    }
    if (r.block_dim == 0) {
        host_violation("block_dim", SEV_FATAL, "blockDim is 0: the kernel never runs");
        r.status = "stopped";
        return finish(r, cfg->report_path, false);
    }
    bool ok = run_blocks(r, cfg->kernel, args);
    return finish(r, cfg->report_path, ok);
}

namespace evk_sim {
namespace {

// The checks every operator-flow entry makes before anything runs; nullptr (and g_last_error) when the config is bad.
OpEntry* op_for(const evk_run_config* cfg, bool need_kernel) {
    if (!cfg || !cfg->op_type || (need_kernel && !cfg->kernel)) {
        g_last_error = need_kernel ? "evk_sim_run: op_type and kernel are required" : "evk_sim_tiling: op_type is required";
        return nullptr;
    }
    OpEntry* e = find_op(cfg->op_type);
    if (!e || !e->def) {
        g_last_error = std::string("operator '") + cfg->op_type + "' is not registered (OP_ADD) in the host code";
        std::string known;
        for (auto& n : op_names()) known += (known.empty() ? "" : ", ") + n;
        g_last_error += "; registered: " + (known.empty() ? std::string("none") : known);
        return nullptr;
    }
    ops::OpDef& def = *e->def;
    if (cfg->n_inputs != static_cast<int>(def.inputs_.size()) || cfg->n_outputs != static_cast<int>(def.outputs_.size())) {
        g_last_error = "evk_sim_run: " + std::to_string(cfg->n_inputs) + " input(s)/" + std::to_string(cfg->n_outputs) +
                       " output(s) given but the OpDef declares " + std::to_string(def.inputs_.size()) + "/" +
                       std::to_string(def.outputs_.size());
        return nullptr;
    }
    if (cfg->n_inputs + cfg->n_outputs + 2 > static_cast<int>(kMaxArgs)) {
        g_last_error = "evk_sim_run: too many kernel arguments";
        return nullptr;
    }
    return e;
}

void start_run(Run& r, const char* op_type) {
    r.op_type = op_type;
    r.op_flow = true;
    platform().core_num_aiv = r.opt.core_num_aiv;
    platform().core_num_aic = r.opt.core_num_aiv / 2;
    platform().ub_size = r.opt.ub_size;
    g_run = &r;
    g_printf_bytes = 0;
}

// The host half of an operator run: attributes, InferShape and TilingFunc on the shapes, dtypes and attributes
// (as on CANN, where they run on the host before any data exists: a tensor's data is there only for an input
// the OpDef declares ValueDepend). Fills r's tiling fields; false when the tiling failed (r.status says why).
bool run_host(const evk_run_config* cfg, Run& r, OpEntry* e, std::vector<uint8_t>& tiling_buf) {
    ops::OpDef& def = *e->def;
    // --- attributes in declaration order ---
    gert::RuntimeAttrs attrs;
    for (auto& ad : def.attrs_) {
        gert::AttrValue v = ad.value_;
        const evk_attr* given = nullptr;
        for (int i = 0; i < cfg->n_attrs; ++i)
            if (cfg->attrs[i].name && ad.name_ == cfg->attrs[i].name) given = &cfg->attrs[i];
        if (given) {
            switch (given->kind) {
                case EVK_ATTR_INT: v.kind = gert::AttrValue::INT; v.i = given->i; break;
                case EVK_ATTR_FLOAT: v.kind = gert::AttrValue::FLOAT; v.f = static_cast<float>(given->f); break;
                case EVK_ATTR_BOOL: v.kind = gert::AttrValue::BOOL; v.b = given->i != 0; break;
                case EVK_ATTR_STR: v.kind = gert::AttrValue::STR; v.s = given->s ? given->s : ""; break;
                case EVK_ATTR_LIST_INT:
                    v.kind = gert::AttrValue::LIST_INT;
                    v.li.v_.assign(given->ints, given->ints + given->n);
                    break;
                case EVK_ATTR_LIST_FLOAT:
                    v.kind = gert::AttrValue::LIST_FLOAT;
                    v.lf.v_.clear();
                    for (int k = 0; k < given->n; ++k) v.lf.v_.push_back(static_cast<float>(given->floats[k]));
                    break;
                default: break;
            }
            // an int given for a float attribute (or the reverse) is converted to the declared kind
            if (ad.value_.kind == gert::AttrValue::FLOAT && v.kind == gert::AttrValue::INT) {
                v.kind = gert::AttrValue::FLOAT;
                v.f = static_cast<float>(v.i);
            } else if (ad.value_.kind == gert::AttrValue::INT && v.kind == gert::AttrValue::FLOAT) {
                v.kind = gert::AttrValue::INT;
                v.i = static_cast<int64_t>(v.f);
            }
        } else if (!ad.has_default_ && ad.type_ == ops::REQUIRED) {
            host_violation("opdef_mismatch", SEV_ERROR, "required attribute '%s' was not given", ad.name_.c_str());
        }
        attrs.attrs_.push_back(v);
    }

    for (int i = 0; i < cfg->n_attrs; ++i) {
        bool known = false;
        for (auto& ad : def.attrs_) known = known || (cfg->attrs[i].name && ad.name_ == cfg->attrs[i].name);
        if (!known)
            host_violation("opdef_mismatch", SEV_WARNING, "attribute '%s' is not declared by the OpDef (ignored)",
                           cfg->attrs[i].name ? cfg->attrs[i].name : "");
    }

    // --- tiling context: shapes and dtypes; data only for ValueDepend inputs ---
    gert::TilingContext ctx;
    ctx.op_type_ = cfg->op_type;
    ctx.attrs_ = &attrs;
    auto make_tensor = [](const evk_tensor& t, bool with_data) {
        gert::Tensor x;
        for (int k = 0; k < t.ndim; ++k) {
            x.shape_.origin_.AppendDim(t.dims[k]);
            x.shape_.storage_.AppendDim(t.dims[k]);
        }
        x.dtype_ = static_cast<ge::DataType>(t.dtype);
        x.data_ = with_data ? t.data : nullptr;
        x.nbytes_ = with_data ? t.nbytes : 0;
        return x;
    };
    auto check_dtype = [](const ops::OpParamDef& p, int dt, const char* what) {
        if (p.dtypes_.empty()) return;
        for (auto d : p.dtypes_)
            if (d == dt) return;
        std::string decl;
        for (auto d : p.dtypes_) decl += (decl.empty() ? "" : ", ") + std::string(dtype_name(d));
        host_violation("opdef_mismatch", SEV_ERROR, "%s '%s' is %s but the OpDef declares DataType({%s})", what,
                       p.name_.c_str(), dtype_name(dt), decl.c_str());
    };
    for (int i = 0; i < cfg->n_inputs; ++i) {
        ctx.inputs_.push_back(make_tensor(cfg->inputs[i], def.inputs_[i].value_depend_));
        gert::CompileTimeTensorDesc d;
        d.dtype_ = static_cast<ge::DataType>(cfg->inputs[i].dtype);
        ctx.input_descs_.push_back(d);
        check_dtype(def.inputs_[i], cfg->inputs[i].dtype, "input");
    }
    for (int i = 0; i < cfg->n_outputs; ++i) {
        ctx.outputs_.push_back(make_tensor(cfg->outputs[i], false));
        gert::CompileTimeTensorDesc d;
        d.dtype_ = static_cast<ge::DataType>(cfg->outputs[i].dtype);
        ctx.output_descs_.push_back(d);
        check_dtype(def.outputs_[i], cfg->outputs[i].dtype, "output");
    }
    tiling_buf.assign(64 * 1024, 0);
    ctx.tiling_.data_ = tiling_buf.data();
    ctx.tiling_.capacity_ = tiling_buf.size();

    // --- InferShape (reported, not used to size outputs) ---
    HostPrintsToStderr infer_prints;
    if (e->infer_shape) {
        gert::InferShapeContext ic;
        ic.op_type_ = cfg->op_type;
        ic.attrs_ = &attrs;
        for (auto& t : ctx.inputs_) {
            ic.inputs_.push_back(t.shape_.storage_);
            ic.tensors_.push_back(t);
        }
        ic.outputs_.resize(ctx.outputs_.size());
        r.infer_shape_ran = true;
        install_handlers();
        if (sigsetjmp(g_jmp, 1) == 0) {
            g_guarded = 1;
            try {
                r.infer_shape_ok = e->infer_shape(&ic) == ge::GRAPH_SUCCESS;
            } catch (...) {
                r.infer_shape_ok = false;
            }
            g_guarded = 0;
        } else {
            host_violation("host_crash", SEV_ERROR, "InferShape crashed");
        }
        for (size_t i = 0; i < ic.outputs_.size(); ++i) {
            std::vector<int64_t> dims;
            for (size_t k = 0; k < ic.outputs_[i].GetDimNum(); ++k) dims.push_back(ic.outputs_[i].GetDim(k));
            r.infer_shapes.push_back(dims);
            if (r.infer_shape_ok && !(ic.outputs_[i] == ctx.outputs_[i].shape_.storage_))
                host_violation("infer_shape_mismatch", SEV_WARNING,
                               "InferShape gives output %zu a different shape than the reference output", i);
        }
        if (!r.infer_shape_ok) host_violation("infer_shape_failed", SEV_WARNING, "InferShape did not return GRAPH_SUCCESS");
    }
    infer_prints.restore();

    // --- TilingFunc ---
    // Host code prints progress (printf, std::cout) from its TilingFunc; CANN runs it in the framework's
    // process, where that output is harmless. Here the process's stdout is the candidate's channel to the
    // verifier, so the host's prints go to stderr while InferShape and the TilingFunc run.
    HostPrintsToStderr host_prints;
    if (!e->tiling) {
        host_violation("tiling_failed", SEV_FATAL, "no TilingFunc registered (AICore().SetTiling)");
        r.status = "tiling_failed";
        return false;
    }
    install_handlers();
    volatile bool tiling_ok = false;
    if (sigsetjmp(g_jmp, 1) == 0) {
        g_guarded = 1;
        try {
            ge::graphStatus st = e->tiling(&ctx);
            tiling_ok = st == ge::GRAPH_SUCCESS;
            if (!tiling_ok)
                host_violation("tiling_failed", SEV_FATAL, "TilingFunc returned %u instead of ge::GRAPH_SUCCESS", st);
        } catch (const std::exception& ex) {
            host_violation("tiling_failed", SEV_FATAL, "TilingFunc threw: %s", ex.what());
        } catch (...) {
            host_violation("tiling_failed", SEV_FATAL, "TilingFunc threw an exception");
        }
        g_guarded = 0;
    } else {
        host_violation("tiling_failed", SEV_FATAL,
                       "TilingFunc crashed (e.g. a null pointer from GetInputShape/GetAttrs with a wrong index, or "
                       "GetInputTensor(i)->GetData(): the host sees shapes, dtypes and attributes only, as on CANN, "
                       "unless the OpDef declares the input ValueDepend)");
    }
    host_prints.restore();
    r.block_dim = ctx.block_dim_;
    r.tiling_key = ctx.tiling_key_;
    r.schedule_mode = ctx.schedule_mode_;
    r.tiling_size = ctx.tiling_.size_;
    r.tiling_bytes.assign(tiling_buf.begin(), tiling_buf.begin() + static_cast<long>(std::min<size_t>(ctx.tiling_.size_, tiling_buf.size())));
    r.workspace_sizes = ctx.workspace_;
    for (size_t w : ctx.workspace_) r.workspace_bytes += w;
    if (!tiling_ok) {
        r.status = "tiling_failed";
        return false;
    }
    if (!ctx.block_dim_set_ || ctx.block_dim_ == 0) {
        host_violation("block_dim", SEV_FATAL, "the TilingFunc did not call SetBlockDim with a positive block count");
        r.status = "tiling_failed";
        return false;
    }
    if (ctx.block_dim_ > 65535) {
        host_violation("block_dim", SEV_FATAL, "SetBlockDim(%u): at most 65535 blocks", ctx.block_dim_);
        r.status = "tiling_failed";
        return false;
    }
    if (ctx.tiling_.size_ > ctx.tiling_.capacity_) {
        host_violation(EVK_RULE_TILING_SIZE, SEV_ERROR, "SetDataSize(%zu) exceeds the tiling capacity %zu",
                       ctx.tiling_.size_, ctx.tiling_.capacity_);
        r.tiling_size = ctx.tiling_.capacity_;
    }
    if (e->tiling_class_size && ctx.tiling_.size_ && ctx.tiling_.size_ != e->tiling_class_size)
        host_violation(EVK_RULE_TILING_SIZE, SEV_WARNING,
                       "SetDataSize(%zu) differs from sizeof(%s) = %zu registered with REGISTER_TILING_DATA_CLASS",
                       ctx.tiling_.size_, e->tiling_class.c_str(), e->tiling_class_size);
    return true;
}

// The kernel half: GM buffers (inputs, outputs, workspace, tiling) and the kernel once per block, from the tiling
// the host half produced (r's tiling fields) and its bytes.
int run_kernel_part(Run& r, const evk_run_config* cfg, const ops::OpDef* def, const uint8_t* tiling, uint64_t tiling_n) {
    std::vector<Arg> args;
    for (int i = 0; i < cfg->n_inputs; ++i) {
        const evk_tensor& t = cfg->inputs[i];
        add_alloc(r, t.name ? t.name : def ? def->inputs_[i].name_ : "input" + std::to_string(i), AK_INPUT, t.data,
                  t.nbytes);
    }
    for (int i = 0; i < cfg->n_outputs; ++i) {
        const evk_tensor& t = cfg->outputs[i];
        add_alloc(r, t.name ? t.name : def ? def->outputs_[i].name_ : "output" + std::to_string(i), AK_OUTPUT, t.data,
                  t.nbytes);
    }
    // workspace: fresh zero pages (untouched pages cost nothing)
    add_alloc(r, "workspace", AK_WORKSPACE, nullptr, r.workspace_bytes);
    add_alloc(r, "tiling", AK_TILING, const_cast<uint8_t*>(tiling), tiling_n);
    if (!map_gm(r, args)) {
        host_violation("gm_setup", SEV_FATAL, "%s", g_last_error.c_str());
        r.status = "stopped";
        return finish(r, cfg->report_path, false);
    }
    bool ok = run_blocks(r, cfg->kernel, args);
    return finish(r, cfg->report_path, ok);
}

}  // namespace
}  // namespace evk_sim

extern "C" int evk_sim_run(const evk_run_config* cfg) {
    g_last_error.clear();
    OpEntry* e = op_for(cfg, true);
    if (!e) return 1;
    Run r;
    if (!make_options(cfg->options, r.opt)) return 1;
    start_run(r, cfg->op_type);
    std::vector<uint8_t> tiling_buf;
    if (!run_host(cfg, r, e, tiling_buf)) return finish(r, cfg->report_path, false);
    return run_kernel_part(r, cfg, e->def, tiling_buf.data(), r.tiling_size);
}

extern "C" int evk_sim_tiling(const evk_run_config* cfg) {
    g_last_error.clear();
    OpEntry* e = op_for(cfg, false);
    if (!e) return 1;
    Run r;
    if (!make_options(cfg->options, r.opt)) return 1;
    start_run(r, cfg->op_type);
    std::vector<uint8_t> tiling_buf;
    bool ok = run_host(cfg, r, e, tiling_buf);
    return finish(r, cfg->report_path, ok);
}

extern "C" int evk_sim_run_kernel(const evk_run_config* cfg, const evk_tiling* t) {
    g_last_error.clear();
    if (!cfg || !cfg->op_type || !cfg->kernel || !t) {
        g_last_error = "evk_sim_run_kernel: op_type, kernel and the tiling are required";
        return 1;
    }
    if (cfg->n_inputs < 0 || cfg->n_outputs < 0 || cfg->n_inputs + cfg->n_outputs + 2 > static_cast<int>(kMaxArgs)) {
        g_last_error = "evk_sim_run_kernel: at most 30 inputs and outputs";
        return 1;
    }
    if (t->n_workspace < 0 || t->n_workspace > 64 || (t->size && !t->data) || t->size > 64 * 1024) {
        g_last_error = "evk_sim_run_kernel: a malformed tiling (at most 64 workspaces and 64 KiB of tiling data)";
        return 1;
    }
    Run r;
    if (!make_options(cfg->options, r.opt)) return 1;
    start_run(r, cfg->op_type);
    r.block_dim = t->block_dim;
    r.tiling_key = t->tiling_key;
    r.schedule_mode = t->schedule_mode;
    r.tiling_size = t->size;
    r.tiling_bytes.assign(t->data, t->data + t->size);
    for (int32_t i = 0; i < t->n_workspace; ++i) {
        r.workspace_sizes.push_back(static_cast<size_t>(t->workspace_sizes[i]));
        r.workspace_bytes += t->workspace_sizes[i];
    }
    if (r.block_dim == 0 || r.block_dim > 65535) {
        host_violation("block_dim", SEV_FATAL, "blockDim %u: the host's TilingFunc must set 1..65535 blocks", r.block_dim);
        r.status = "tiling_failed";
        return finish(r, cfg->report_path, false);
    }
    return run_kernel_part(r, cfg, nullptr, r.tiling_bytes.data(), r.tiling_size);
}

extern "C" int evk_sim_set_window(uint64_t base) {
    g_last_error.clear();
    std::string err;
    if (!set_window(base, err)) {
        g_last_error = err;
        return 1;
    }
    return 0;
}

extern "C" uint64_t evk_sim_window(uint64_t* size) {
    if (size) *size = g_win_size;
    return g_win_base;
}

// Host code's getenv (include/evk_sim/host_env.h): an empty environment, every variable unset
extern "C" char* evk_host_getenv(const char*) { return nullptr; }

extern "C" const char* evk_sim_last_error(void) { return g_last_error.c_str(); }

extern "C" const char* evk_sim_list_ops(void) {
    Json j;
    j.s += "[";
    bool first = true;
    for (auto& n : op_names()) {
        if (!find_op(n)->def) continue;
        if (!first) j.s += ",";
        first = false;
        j.str(n);
    }
    j.s += "]";
    g_json_buf = j.s;
    return g_json_buf.c_str();
}

extern "C" const char* evk_sim_describe_op(const char* op) {
    OpEntry* e = op ? find_op(op) : nullptr;
    if (!e || !e->def) return nullptr;
    const ops::OpDef& d = *e->def;
    auto ptype = [](ops::Option o) {
        return o == ops::REQUIRED ? "required" : o == ops::OPTIONAL ? "optional" : o == ops::DYNAMIC ? "dynamic" : "other";
    };
    Json j;
    j.s += "{";
    j.key("op"); j.str(d.type_); j.s += ",";
    for (int io = 0; io < 2; ++io) {
        const auto& ps = io == 0 ? d.inputs_ : d.outputs_;
        j.key(io == 0 ? "inputs" : "outputs");
        j.s += "[";
        bool first = true;
        for (const auto& p : ps) {
            if (!first) j.s += ",";
            first = false;
            j.s += "{";
            j.key("name"); j.str(p.name_); j.s += ",";
            j.key("param_type"); j.str(ptype(p.type_)); j.s += ",";
            j.key("value_depend"); j.s += p.value_depend_ ? "true" : "false"; j.s += ",";
            j.key("dtypes"); j.s += "[";
            for (size_t k = 0; k < p.dtypes_.size(); ++k) {
                if (k) j.s += ",";
                j.str(dtype_name(p.dtypes_[k]));
            }
            j.s += "],";
            j.key("formats"); j.s += "[";
            for (size_t k = 0; k < p.formats_.size(); ++k) {
                if (k) j.s += ",";
                j.str(p.formats_[k] == ge::FORMAT_ND ? "ND" : std::to_string(static_cast<int>(p.formats_[k])));
            }
            j.s += "]}";
        }
        j.s += "],";
    }
    j.key("attrs"); j.s += "[";
    bool first = true;
    for (const auto& a : d.attrs_) {
        if (!first) j.s += ",";
        first = false;
        static const char* kinds[] = {"none", "int", "float", "bool", "str", "list_int", "list_float", "list_bool"};
        j.s += "{";
        j.key("name"); j.str(a.name_); j.s += ",";
        j.key("param_type"); j.str(ptype(a.type_)); j.s += ",";
        j.key("type"); j.str(kinds[a.value_.kind]); j.s += ",";
        j.key("default");
        if (!a.has_default_) j.s += "null";
        else switch (a.value_.kind) {
            case gert::AttrValue::INT: j.inum(a.value_.i); break;
            case gert::AttrValue::FLOAT: j.dbl(a.value_.f); break;
            case gert::AttrValue::BOOL: j.s += a.value_.b ? "true" : "false"; break;
            case gert::AttrValue::STR: j.str(a.value_.s); break;
            case gert::AttrValue::LIST_INT:
                j.s += "[";
                for (size_t k = 0; k < a.value_.li.v_.size(); ++k) { if (k) j.s += ","; j.inum(a.value_.li.v_[k]); }
                j.s += "]";
                break;
            case gert::AttrValue::LIST_FLOAT:
                j.s += "[";
                for (size_t k = 0; k < a.value_.lf.v_.size(); ++k) { if (k) j.s += ","; j.dbl(a.value_.lf.v_[k]); }
                j.s += "]";
                break;
            default: j.s += "null";
        }
        j.s += "}";
    }
    j.s += "],";
    j.key("has_tiling"); j.s += e->tiling ? "true" : "false"; j.s += ",";
    j.key("has_infer_shape"); j.s += e->infer_shape ? "true" : "false"; j.s += ",";
    j.key("has_infer_dtype"); j.s += e->infer_dtype ? "true" : "false"; j.s += ",";
    j.key("socs"); j.s += "[";
    for (size_t k = 0; k < d.aicore_.socs_.size(); ++k) {
        if (k) j.s += ",";
        j.str(d.aicore_.socs_[k]);
    }
    j.s += "],";
    j.key("tiling_class"); j.str(e->tiling_class); j.s += ",";
    j.key("tiling_class_size"); j.num(e->tiling_class_size);
    j.s += "}";
    g_json_buf = j.s;
    return g_json_buf.c_str();
}

// ---- CLIs ------------------------------------------------------------------------------------------
namespace {
bool read_file(const std::string& path, std::vector<uint8_t>& out) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return false;
    out.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    return true;
}
bool write_file(const std::string& path, const void* data, size_t n) {
    std::ofstream f(path, std::ios::binary);
    if (!f) return false;
    f.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
    return static_cast<bool>(f);
}
// hw_model_json: inline JSON (starts with '{') or the path of a file holding it; kept in `store`.
bool apply_option(evk_options& o, const std::string& k, const std::string& v, std::string& store) {
    if (k == "hw_model_json") {
        size_t a = v.find_first_not_of(" \t");
        std::string t = a == std::string::npos ? std::string() : v.substr(a);
        while (!t.empty() && (t.back() == ' ' || t.back() == '\t' || t.back() == '\r')) t.pop_back();
        if (!t.empty() && t[0] == '{') {
            store = t;
        } else {
            std::vector<uint8_t> bytes;
            if (!read_file(t, bytes)) throw std::runtime_error("cannot read the hw_model_json file " + t);
            store.assign(bytes.begin(), bytes.end());
        }
        o.hw_model_json = store.c_str();
        return true;
    }
    if (k == "core_num_aiv") o.core_num_aiv = static_cast<uint32_t>(std::stoul(v));
    else if (k == "ub_size") o.ub_size = std::stoull(v);
    else if (k == "half_overflow") o.half_overflow_saturate = (v == "saturate" || v == "1");
    else if (k == "keep_outputs") o.keep_outputs = (v == "1" || v == "true");
    else if (k == "max_instructions") o.max_instructions = std::stoull(v);
    else if (k == "max_violations") o.max_violations = std::stoi(v);
    else if (k == "mix") set_mix_ratio(std::stoi(v));  // a MIX launch: AIVs per AI core (the kernel TU can say it too)
    else return false;
    return true;
}
int cli_error(const std::string& m) {
    std::fprintf(stderr, "evk-sim: %s\n", m.c_str());
    return 1;
}
}  // namespace

extern "C" int evk_sim_main(int argc, char** argv, evk_kernel_fn kernel) {
    if (argc < 2) return cli_error("usage: launcher SPEC_FILE");
    std::ifstream spec(argv[1]);
    if (!spec) return cli_error(std::string("cannot read the spec file ") + argv[1]);
    struct T {
        std::string name, file;
        int dtype = 0;
        std::vector<int64_t> dims;
        std::vector<uint8_t> data;
    };
    struct A {
        std::string name, s;
        int kind = 0;
        int64_t i = 0;
        double f = 0;
        std::vector<int64_t> ints;
        std::vector<double> floats;
    };
    std::vector<T> ins, outs;
    std::vector<A> attrs;
    std::string op, report, hw_json_text;
    evk_options opt;
    std::memset(&opt, 0, sizeof(opt));
    std::string line;
    int lineno = 0;
    try {
        while (std::getline(spec, line)) {
            ++lineno;
            std::istringstream ls(line);
            std::string w;
            if (!(ls >> w) || w[0] == '#') continue;
            if (w == "op") ls >> op;
            else if (w == "report") ls >> report;
            else if (w == "input" || w == "output") {
                T t;
                std::string dt;
                size_t nd = 0;
                ls >> t.name >> dt >> t.file >> nd;
                t.dtype = dtype_from_name(dt);
                if (t.dtype < 0) return cli_error("spec line " + std::to_string(lineno) + ": unknown dtype " + dt);
                for (size_t k = 0; k < nd; ++k) {
                    int64_t d;
                    ls >> d;
                    t.dims.push_back(d);
                }
                int64_t n = 1;
                for (int64_t d : t.dims) n *= d;
                size_t bytes = static_cast<size_t>(n) * static_cast<size_t>(ge::GetSizeByDataType(static_cast<ge::DataType>(t.dtype)));
                if (w == "input") {
                    if (!read_file(t.file, t.data)) return cli_error("cannot read input file " + t.file);
                    if (t.data.size() != bytes)
                        return cli_error("input " + t.name + ": file has " + std::to_string(t.data.size()) +
                                         " bytes, shape needs " + std::to_string(bytes));
                    ins.push_back(std::move(t));
                } else {
                    t.data.assign(bytes, 0);
                    outs.push_back(std::move(t));
                }
            } else if (w == "attr") {
                A a;
                std::string kind;
                ls >> a.name >> kind;
                if (kind == "int") { a.kind = EVK_ATTR_INT; ls >> a.i; }
                else if (kind == "float") { a.kind = EVK_ATTR_FLOAT; ls >> a.f; }
                else if (kind == "bool") { a.kind = EVK_ATTR_BOOL; ls >> a.i; }
                else if (kind == "str") { a.kind = EVK_ATTR_STR; ls >> a.s; }
                else if (kind == "ints") {
                    a.kind = EVK_ATTR_LIST_INT;
                    size_t n = 0;
                    ls >> n;
                    for (size_t k = 0; k < n; ++k) { int64_t v; ls >> v; a.ints.push_back(v); }
                } else if (kind == "floats") {
                    a.kind = EVK_ATTR_LIST_FLOAT;
                    size_t n = 0;
                    ls >> n;
                    for (size_t k = 0; k < n; ++k) { double v; ls >> v; a.floats.push_back(v); }
                } else return cli_error("spec line " + std::to_string(lineno) + ": unknown attr kind " + kind);
                attrs.push_back(std::move(a));
            } else if (w == "option") {
                std::string k, v;
                ls >> k;
                if (k == "hw_model_json") std::getline(ls, v);  // the rest of the line (inline JSON may hold spaces)
                else ls >> v;
                if (!apply_option(opt, k, v, hw_json_text)) return cli_error("unknown option " + k);
            } else {
                return cli_error("spec line " + std::to_string(lineno) + ": unknown keyword " + w);
            }
        }
    } catch (const std::exception& ex) {
        return cli_error(std::string("bad spec file: ") + ex.what());
    }
    std::vector<evk_tensor> ti, to;
    for (auto& t : ins) ti.push_back(evk_tensor{t.name.c_str(), t.dtype, static_cast<int32_t>(t.dims.size()), t.dims.data(), t.data.data(), t.data.size()});
    for (auto& t : outs) to.push_back(evk_tensor{t.name.c_str(), t.dtype, static_cast<int32_t>(t.dims.size()), t.dims.data(), t.data.data(), t.data.size()});
    std::vector<evk_attr> ta;
    for (auto& a : attrs)
        ta.push_back(evk_attr{a.name.c_str(), a.kind, a.i, a.f, a.s.c_str(), static_cast<int32_t>(a.kind == EVK_ATTR_LIST_INT ? a.ints.size() : a.floats.size()),
                              a.ints.data(), a.floats.data()});
    evk_run_config cfg;
    std::memset(&cfg, 0, sizeof(cfg));
    cfg.op_type = op.c_str();
    cfg.kernel = kernel;
    cfg.n_inputs = static_cast<int32_t>(ti.size());
    cfg.inputs = ti.data();
    cfg.n_outputs = static_cast<int32_t>(to.size());
    cfg.outputs = to.data();
    cfg.n_attrs = static_cast<int32_t>(ta.size());
    cfg.attrs = ta.data();
    cfg.report_path = report.c_str();
    cfg.options = opt;
    int rc = evk_sim_run(&cfg);
    if (rc == 1) return cli_error(evk_sim_last_error());
    for (auto& t : outs)
        if (!write_file(t.file, t.data.data(), t.data.size())) return cli_error("cannot write output " + t.file);
    return rc;
}

extern "C" int evk_sim_launch_main(int argc, char** argv, evk_kernel_fn kernel) {
    evk_launch_config cfg;
    std::memset(&cfg, 0, sizeof(cfg));
    cfg.kernel = kernel;
    struct B {
        std::string name, file;
        int kind;
        std::vector<uint8_t> data;
    };
    std::vector<B> bufs;
    std::string report, name, hw_json_text;
    try {
        for (int i = 1; i < argc; ++i) {
            std::string a = argv[i];
            auto next = [&]() -> std::string {
                if (i + 1 >= argc) throw std::runtime_error("missing value after " + a);
                return argv[++i];
            };
            if (a == "--block-dim") cfg.block_dim = static_cast<uint32_t>(std::stoul(next()));
            else if (a == "--report") report = next();
            else if (a == "--name") name = next();
            else if (a == "--tiling-key") cfg.tiling_key = std::stoull(next());
            else if (a == "--in" || a == "--inout" || a == "--tiling") {
                B b;
                b.file = next();
                b.name = b.file.substr(b.file.find_last_of('/') + 1);
                b.kind = a == "--in" ? EVK_ARG_INPUT : a == "--inout" ? EVK_ARG_INOUT : EVK_ARG_TILING;
                if (!read_file(b.file, b.data)) return cli_error("cannot read " + b.file);
                bufs.push_back(std::move(b));
            } else if (a == "--out") {
                std::string v = next();
                size_t c = v.rfind(':');
                if (c == std::string::npos) return cli_error("--out FILE:NBYTES");
                B b;
                b.file = v.substr(0, c);
                b.name = b.file.substr(b.file.find_last_of('/') + 1);
                b.kind = EVK_ARG_OUTPUT;
                b.data.assign(std::stoull(v.substr(c + 1)), 0);
                bufs.push_back(std::move(b));
            } else if (a == "--workspace") {
                B b;
                b.name = "workspace";
                b.kind = EVK_ARG_WORKSPACE;
                b.data.assign(std::stoull(next()), 0);
                bufs.push_back(std::move(b));
            } else if (a == "--option") {
                std::string v = next();
                size_t eq = v.find('=');
                if (eq == std::string::npos || !apply_option(cfg.options, v.substr(0, eq), v.substr(eq + 1), hw_json_text))
                    return cli_error("bad option " + v);
            } else {
                return cli_error("unknown argument " + a);
            }
        }
    } catch (const std::exception& ex) {
        return cli_error(ex.what());
    }
    std::vector<evk_buffer> args;
    for (auto& b : bufs) args.push_back(evk_buffer{b.name.c_str(), b.kind, b.data.data(), b.data.size()});
    cfg.n_args = static_cast<int32_t>(args.size());
    cfg.args = args.data();
    cfg.report_path = report.c_str();
    cfg.kernel_name = name.c_str();
    int rc = evk_sim_launch(&cfg);
    if (rc == 1) return cli_error(evk_sim_last_error());
    for (auto& b : bufs)
        if ((b.kind == EVK_ARG_OUTPUT || b.kind == EVK_ARG_INOUT) && !b.file.empty())
            if (!write_file(b.file, b.data.data(), b.data.size())) return cli_error("cannot write " + b.file);
    return rc;
}

// ---- libm calls of the kernel, charged (see count_libm) -------------------------------------------------------
// build.py renames, in the kernel object only, every reference to a name below to evk_libm_<name> (the list is
// read from this object's symbols; the names are common.h's EVK_RT_LIBM). The evk_sim::m functions are the uncharged
// libm of the emulator's own headers (common.h). Cheap or inlined functions (fabs,
// floor, sqrt ...) are not wrapped; arithmetic written in plain C++ is not charged (docs/ascend-sim.md "Limits").
#define EVK_LIBM1(name)                                                                                   \
    extern "C" float evk_libm_##name##f(float x) { evk_sim::count_libm(); return ::name##f(x); }                \
    extern "C" double evk_libm_##name(double x) { evk_sim::count_libm(); return ::name(x); }                    \
    float evk_sim::m::name(float x) { return ::name##f(x); }                                                     \
    double evk_sim::m::name(double x) { return ::name(x); }
#define EVK_LIBM2(name)                                                                                   \
    extern "C" float evk_libm_##name##f(float x, float y) { evk_sim::count_libm(); return ::name##f(x, y); }    \
    extern "C" double evk_libm_##name(double x, double y) { evk_sim::count_libm(); return ::name(x, y); }        \
    float evk_sim::m::name(float x, float y) { return ::name##f(x, y); }                                         \
    double evk_sim::m::name(double x, double y) { return ::name(x, y); }
EVK_RT_LIBM(EVK_LIBM1, EVK_LIBM2)
extern "C" void evk_libm_sincosf(float x, float* s, float* c) { evk_sim::count_libm(); ::sincosf(x, s, c); }
extern "C" void evk_libm_sincos(double x, double* s, double* c) { evk_sim::count_libm(); ::sincos(x, s, c); }
#undef EVK_LIBM1
#undef EVK_LIBM2
