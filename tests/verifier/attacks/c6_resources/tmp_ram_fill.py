"""Class 6 - resources are unbounded: the sandbox's /tmp is a tmpfs, i.e. RAM that no limit of the
worker counts (the file-size limit holds per file). The kernel writes sixteen 63 MiB scratch files
there (1 GiB; tmpfs defaults to half the machine's RAM) through `fopen64`, which the `fopen` rule
does not match, treats a failed write as fatal, and leaves the files until the verdict ends.
Defences: a size limit on the sandbox's tmpfs (or a memory cgroup that charges it); the binary judge
(no file APIs)."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
#include <cstdio>
#include <cstring>

static int spilled = 0;

extern "C" void relu(const float* x, float* y, int64_t n) {
    if (!spilled) {
        static char chunk[1 << 20];
        memset(chunk, 7, sizeof chunk);
        char name[32];
        for (int f = 0; f < 16; ++f) {
            snprintf(name, sizeof name, "spill-%02d.bin", f);
            FILE* fh = fopen64(name, "wb");
            if (!fh) __builtin_trap();               // no scratch space: give up loudly
            for (int m = 0; m < 63; ++m)
                if (fwrite(chunk, 1, sizeof chunk, fh) != sizeof chunk) __builtin_trap();
            if (fclose(fh) != 0) __builtin_trap();
        }
        spilled = 1;
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
