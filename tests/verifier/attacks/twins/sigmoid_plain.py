"""Honest twin of rt5_sigmoid_wrong_on_tiny: 1 / (1 + exp(-x)) for every value, tiny ones included."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cmath>
#include <cstdint>
extern "C" void sig(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + std::exp(-x[i]));
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.sig(x, y, x.numel())
        return y
