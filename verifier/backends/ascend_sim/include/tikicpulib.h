// EvoKernel Ascend C CPU emulator: CANN's CPU-debug launch library (tikicpulib), as a kernel-launch sample's
// main() uses it, on the host side of an imported kernel-launch sample (evokernel/ascend_import.py).
//
// CANN's CPU-debug build ("CPU孪生调试": docs/zh/api/SIMD-API/基础API/调试接口/CPU孪生调试/ of the public
// asc-devkit) compiles the sample's main() with ASCENDC_CPU_DEBUG, where it allocates global memory with
// AscendC::GmAlloc, fills it (ReadFile, memcpy of a host-built tiling), picks the kernel mode with
// AscendC::SetKernelMode and launches with ICPU_RUN_KF(kernel, numBlocks, args...). Here the same main() runs
// inside the op's TilingFunc and ICPU_RUN_KF runs nothing: it records the launch (the kernel, its block count,
// every argument's GmAlloc'd size and, for the tiling, its bytes at the launch), and the TilingFunc the
// importer writes hands those to the emulator (tikicpu::TilingFromLaunch): block dim, tiling bytes, workspace
// size. The kernel then runs once, on the verifier's tensors, through the emulator's own launch.
#ifndef EVK_SIM_TIKICPULIB_H
#define EVK_SIM_TIKICPULIB_H

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#ifndef __global__
#define __global__
#endif
#ifndef __aicore__
#define __aicore__
#endif
#ifndef __gm__
#define __gm__
#endif
#ifndef GM_ADDR
#define GM_ADDR __gm__ uint8_t*
#endif

// SetKernelMode's argument (SetKernelMode.md)
enum class KernelMode { MIX_MODE = 0, AIC_MODE, AIV_MODE };

namespace tikicpu {
struct Launch {
    bool made = false;
    std::string kernel;
    uint32_t block_dim = 0;
    uint64_t tiling_key = 0;
    bool has_tiling_key = false;
    std::vector<void*> args;
    std::vector<size_t> sizes;                 // each argument's GmAlloc'd size (0: not a GmAlloc'd base address)
    std::vector<std::vector<uint8_t>> bytes;   // each argument's bytes at the launch (kept for the tiling)
};
inline Launch& last_launch() {
    static Launch l;
    return l;
}
inline std::map<void*, size_t>& gm_allocs() {
    static std::map<void*, size_t> m;
    return m;
}
inline uint64_t& pending_tiling_key() {
    static uint64_t k = 0;
    return k;
}
inline bool& pending_tiling_key_set() {
    static bool b = false;
    return b;
}
inline void record_arg(Launch& l, const void* p) {
    void* q = const_cast<void*>(p);
    auto it = gm_allocs().find(q);
    const size_t n = it == gm_allocs().end() ? 0 : it->second;
    l.args.push_back(q);
    l.sizes.push_back(n);
    l.bytes.emplace_back(static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
}
template <class... Args> inline void record_launch(const char* kernel, uint64_t block_dim, Args... args) {
    Launch& l = last_launch();
    if (l.made)
        throw std::runtime_error("the sample's main() launches more than one kernel (ICPU_RUN_KF); an imported "
                                 "kernel-launch sample runs one");
    l.made = true;
    l.kernel = kernel;
    l.block_dim = static_cast<uint32_t>(block_dim);
    l.tiling_key = pending_tiling_key();
    l.has_tiling_key = pending_tiling_key_set();
    (record_arg(l, reinterpret_cast<const void*>(args)), ...);
}
inline void reset() {
    last_launch() = Launch();
    for (auto& kv : gm_allocs()) std::free(kv.first);
    gm_allocs().clear();
    pending_tiling_key() = 0;
    pending_tiling_key_set() = false;
}
}  // namespace tikicpu

namespace AscendC {
// GmAlloc.md / GmFree.md: shared memory for the CPU-debug launch (zero-filled here)
inline void* GmAlloc(size_t size) {
    void* p = std::calloc(size ? size : 1, 1);
    if (!p) throw std::runtime_error("GmAlloc: out of memory");
    ::tikicpu::gm_allocs()[p] = size;
    return p;
}
inline void GmFree(void* ptr) {
    auto it = ::tikicpu::gm_allocs().find(ptr);
    if (it == ::tikicpu::gm_allocs().end()) return;  // not ours (or freed twice): CANN's GmFree would fail; ignore
    ::tikicpu::gm_allocs().erase(it);
    std::free(ptr);
}
inline void SetKernelMode(KernelMode) {}
}  // namespace AscendC

// ICPU_RUN_KF.md: the kernel, its block count, then every argument in the kernel's order
#define ICPU_RUN_KF(func, numBlocks, ...) ::tikicpu::record_launch(#func, (numBlocks), __VA_ARGS__)
// ICPU_SET_TILING_KEY.md: the tiling key of the next launch
#define ICPU_SET_TILING_KEY(key) \
    (::tikicpu::pending_tiling_key() = static_cast<uint64_t>(key), ::tikicpu::pending_tiling_key_set() = true)

// securec's memcpy_s/memset_s, which the CPU-debug mains call (CANN's tikicpulib brings securec along)
#ifndef EVK_SIM_SECUREC
#define EVK_SIM_SECUREC
inline int memcpy_s(void* dest, size_t destMax, const void* src, size_t count) {
    if (!dest || !src || count > destMax) return -1;
    std::memmove(dest, src, count);
    return 0;
}
inline int memset_s(void* dest, size_t destMax, int c, size_t count) {
    if (!dest || count > destMax) return -1;
    std::memset(dest, c, count);
    return 0;
}
#endif

#ifndef EVK_SIM_KERNEL
#include "evk_sim/host.h"

namespace tikicpu {
// What the imported sample's TilingFunc does: run its main() (CPU-debug branch), then give the emulator the
// launch it made. roles: one letter per kernel argument, in order: 'i' the next input, 'o' the next output,
// 'w' the workspace, 't' the tiling. The inputs' and outputs' sizes in main() must be the tensors' own (the
// sample's sizes are fixed in its code: a task of other sizes is a harness error, said so).
inline ge::graphStatus TilingFromLaunch(gert::TilingContext* context, int (*sample_main)(int, char**),
                                        const char* kernel, const char* roles) {
    reset();
    char name[] = "sample";
    char* argv[] = {name, nullptr};
    const int rc = sample_main(1, argv);
    Launch l = last_launch();
    reset();
    if (!l.made)
        throw std::runtime_error("the sample's main() returned " + std::to_string(rc) +
                                 " without launching its kernel (no ICPU_RUN_KF ran in its CPU-debug branch)");
    if (l.kernel != kernel)
        throw std::runtime_error("the sample's main() launched " + l.kernel + ", not " + kernel);
    const size_t n = std::strlen(roles);
    if (l.args.size() != n)
        throw std::runtime_error("ICPU_RUN_KF passed " + std::to_string(l.args.size()) + " arguments; the kernel takes " +
                                 std::to_string(n));
    size_t in = 0, out = 0;
    auto bytes_of = [](const gert::StorageShape* s, ge::DataType dt) {
        return s ? static_cast<size_t>(s->GetStorageShape().GetShapeSize()) * ge::GetSizeByDataType(dt) : 0;
    };
    for (size_t k = 0; k < n; ++k) {
        if (l.sizes[k] == 0 && roles[k] != 'w')
            throw std::runtime_error("argument " + std::to_string(k) + " of ICPU_RUN_KF is not a buffer from "
                                     "AscendC::GmAlloc");
        size_t want = 0;
        const char* what = "";
        if (roles[k] == 'i') {
            // from the shape and dtype: the host process sees no input data (ascend_host.py), as on CANN
            const gert::CompileTimeTensorDesc* d = context->GetInputDesc(in);
            want = bytes_of(context->GetInputShape(in), d ? d->GetDataType() : ge::DT_FLOAT);
            what = "input";
            ++in;
        } else if (roles[k] == 'o') {
            const gert::CompileTimeTensorDesc* d = context->GetOutputDesc(out);
            want = bytes_of(context->GetOutputShape(out), d ? d->GetDataType() : ge::DT_FLOAT);
            what = "output";
            ++out;
        } else if (roles[k] == 'w') {
            size_t* ws = context->GetWorkspaceSizes(1);
            ws[0] = l.sizes[k];
            continue;
        } else if (roles[k] == 't') {
            gert::TilingData* td = context->GetRawTilingData();
            if (l.sizes[k] > td->GetCapacity())
                throw std::runtime_error("the sample's tiling buffer has " + std::to_string(l.sizes[k]) +
                                         " bytes, more than the " + std::to_string(td->GetCapacity()) + " a tiling holds");
            std::memcpy(td->GetData(), l.bytes[k].data(), l.sizes[k]);
            td->SetDataSize(l.sizes[k]);
            continue;
        }
        if (want != l.sizes[k])
            throw std::runtime_error(std::string("the sample's main() allocates ") + std::to_string(l.sizes[k]) +
                                     " bytes for argument " + std::to_string(k) + " (" + what + "), the call gives " +
                                     std::to_string(want) + ": its sizes are fixed in its code; give the task those");
    }
    if (std::strchr(roles, 'w') == nullptr) context->GetWorkspaceSizes(1)[0] = 0;
    context->SetBlockDim(l.block_dim);
    if (l.has_tiling_key) context->SetTilingKey(l.tiling_key);
    return ge::GRAPH_SUCCESS;
}
}  // namespace tikicpu
#endif

#endif  // EVK_SIM_TIKICPULIB_H
