// EvoKernel Ascend C CPU emulator: the helpers CANN's kernel-launch samples keep in their own data_utils.h
// (ReadFile, WriteFile, the log and CHECK_ACL macros), for an imported sample's main() (tikicpulib.h).
// A sample's main() runs inside its op's TilingFunc only to learn its launch; the verifier gives the kernel
// its inputs and reads its outputs itself. So ReadFile leaves the buffer as GmAlloc made it (zeros) and
// WriteFile writes nothing: no file is read or written.
#ifndef EVK_SIM_DATA_UTILS_H
#define EVK_SIM_DATA_UTILS_H

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "tikicpulib.h"

#define INFO_LOG(fmt, args...) std::fprintf(stderr, "[INFO]  " fmt "\n", ##args)
#define WARN_LOG(fmt, args...) std::fprintf(stderr, "[WARN]  " fmt "\n", ##args)
#define ERROR_LOG(fmt, args...) std::fprintf(stderr, "[ERROR]  " fmt "\n", ##args)
#ifndef CHECK_ACL
#define CHECK_ACL(x) (void)(x)
#endif

inline bool ReadFile(const std::string&, size_t, void*, size_t) { return true; }
inline bool WriteFile(const std::string&, const void*, size_t) { return true; }

#endif  // EVK_SIM_DATA_UTILS_H
