"""Honest twin of the two-core GELU attacks: the same loop on the one thread it is given."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cmath>
#include <cstdint>
extern "C" void gelu(const float* x, float* y, int64_t n) {
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678f));
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.gelu(x, out, x.numel())
        return out
