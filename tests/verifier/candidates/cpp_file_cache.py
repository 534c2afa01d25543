"""Hack (static, native): the kernel caches its results on disk in /tmp/cache.bin and replays them
on later calls."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdio>
#include <cstdint>

extern "C" void relu(const float* x, float* y, int64_t n) {
    FILE* f = fopen("/tmp/cache.bin", "rb");
    if (f != nullptr) {
        size_t got = fread(y, sizeof(float), (size_t)n, f);
        fclose(f);
        if ((int64_t)got == n) return;
    }
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
    f = fopen("/tmp/cache.bin", "wb");
    if (f != nullptr) {
        fwrite(y, sizeof(float), (size_t)n, f);
        fclose(f);
    }
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        lib.relu(x.contiguous(), out, x.numel())
        return out
