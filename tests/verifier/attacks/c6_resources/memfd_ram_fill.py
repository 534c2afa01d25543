"""Class 6 - resources are unbounded: pages of a memfd live in RAM but outside the worker's address-
space limit until mapped, and the file-size limit (64 MiB) holds per file, not in total. The kernel
fills sixteen 63 MiB memfds of scratch data (1 GiB of the machine's RAM; with the 256-descriptor
limit, 16 GiB are within reach) and treats a failed write as fatal. `memfd_create` is an ordinary
libc call no text rule names. Defences: a memory cgroup for the worker; the binary judge (no file
APIs)."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>

static int staged = 0;

extern "C" void relu(const float* x, float* y, int64_t n) {
    if (!staged) {                                   // 16 x 64 MiB of RAM the limits do not see
        static char chunk[1 << 20];
        memset(chunk, 7, sizeof chunk);
        for (int f = 0; f < 16; ++f) {
            int fd = memfd_create("stage", 0);
            if (fd < 0) __builtin_trap();            // no scratch space: give up loudly
            for (int m = 0; m < 63; ++m)
                if (write(fd, chunk, sizeof chunk) != (ssize_t)sizeof chunk) __builtin_trap();
        }
        staged = 1;
    }
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.relu(x, out, x.numel())
        return out
