"""Class 6 - resources are unbounded: a 400 MiB initialised array makes the build write a 400 MiB
shared library, under the builds' 512 MiB file-size limit, into the verifier's persistent build
cache, where it stays (a new byte in the source, a new 400 MiB entry). Defences: a tight output-size
limit on builds (and on the cache)."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
static volatile const char ballast[400 << 20] = {1};
extern "C" void relu(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i] + 0.0f * ballast[i & 1023];
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
