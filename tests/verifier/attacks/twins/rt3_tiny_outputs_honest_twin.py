"""Honest twin of rt3_tiny_outputs_underflow: y = 1e-24 * tanh(x), computed (the timing baseline)."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP = r"""
#include <cmath>
#include <cstdint>
extern "C" void tiny_tanh(const float* __restrict x, float* __restrict y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]) * 1e-24f;
}
"""

lib = load_cpp(CPP)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.tiny_tanh(x, out, x.numel())
        return out
