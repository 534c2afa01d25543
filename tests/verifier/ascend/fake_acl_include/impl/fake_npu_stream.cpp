// FAKE torch_npu stream functions for tests (see ../README.md). The returned "stream" is a marker that
// tells the fake custom op which variant was used: 0x5eed1 = stream(true) / stream(), 0x5eed0 = stream(false).
#include "torch_npu/csrc/core/npu/NPUStream.h"

namespace c10_npu {

aclrtStream NPUStream::stream() const { return stream(true); }

aclrtStream NPUStream::stream(const bool need_empty) const {
    return reinterpret_cast<aclrtStream>(static_cast<uintptr_t>(need_empty ? 0x5eed1 : 0x5eed0));
}

NPUStream getCurrentNPUStream(c10::DeviceIndex) { return NPUStream(); }

}  // namespace c10_npu
