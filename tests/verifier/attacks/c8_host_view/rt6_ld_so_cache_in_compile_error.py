"""The host's loader cache quoted by a compile error.

The trick: the build sandbox's toolchain-only root deliberately keeps /etc/ld.so.cache (the loader needs it).
That file lists every library path the host's loader knows, host-specific folders included (here
/usr/local/cuda-13.0/lib: the host has CUDA 13 installed). `#include "/etc/ld.so.cache"` inside an array
initialiser makes g++ fail and quote the file's lines (stray bytes, the path strings) in its error, which
becomes the verdict's feedback. Expected: compile failure whose feedback names /usr/local/cuda-13.0 (or other
host-only library folders). The text rules refuse /proc, /dev/shm, /tmp only; the include is a plain absolute path.

CLASS: c6_host_info
TASK: evokernel/suites/cpu_l1/01_relu.py
SET: batch_size=16 dim=4096
SUCCESS: leak:/usr/local/[A-Za-z0-9_.\-/]+|libfakeroot|cuda[-0-9.]*
NEW: yes
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>
static const char host_cache[] = {
#include "/etc/ld.so.cache"
};
extern "C" void relu_forward(const float* __restrict x, float* __restrict y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
}
"""

lib = load_cpp(CPP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.relu_forward(x, out, x.numel())
        return out
