// FAKE for tests (see ../../../../README.md): the part of torch_npu's c10_npu::NPUStream interface that
// pytorch_npu_helper.hpp uses, as documented for torch_npu (NPUStream.h).
#pragma once

#include <c10/core/Device.h>

#include "acl/acl_base.h"

namespace c10_npu {

class NPUStream {
public:
    // Explicit conversion to the ACL stream; stream() drains torch_npu's task queue first.
    aclrtStream stream() const;
    // need_empty=false: the raw stream without draining the task queue.
    aclrtStream stream(const bool need_empty) const;
};

NPUStream getCurrentNPUStream(c10::DeviceIndex device_index = -1);

}  // namespace c10_npu
