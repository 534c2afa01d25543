"""Class 8 - the sandbox sees the host: the build's own path, printed at run time. `__FILE__` expands to the
source's full path in the build folder inside the verifier's build cache (under $HOME by default); the kernel
prints it to stderr (allowed) and then crashes, and the `runtime` verdict quotes the last lines of stderr.
Defence: every verdict's feedback and details pass a final scrub that replaces the build cache, the package
folder and $HOME with placeholders (<cache>, <evokernel>, ~)."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
#include <cstdio>

extern "C" void relu(const float* x, float* y, int64_t n) {
    fprintf(stderr, "built at %s\n", __FILE__);
    fflush(stderr);
    volatile float* nowhere = nullptr;
    *nowhere = 1.0f;   // the crash makes the verdict quote stderr
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
