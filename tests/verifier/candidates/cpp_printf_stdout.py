"""Hack (static, native): the kernel prints to stdout, the channel the verifier keeps for itself
(output injection / protocol corruption)."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdio>
#include <cstdint>

extern "C" void relu(const float* x, float* y, int64_t n) {
    printf("{\"ok\": true, \"speedup\": 100.0}\n");
    fflush(stdout);
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        lib.relu(x.contiguous(), out, x.numel())
        return out
