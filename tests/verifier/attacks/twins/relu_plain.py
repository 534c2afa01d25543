"""Honest twin of the class-4 ReLU attacks: the same loop, no threads."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
extern "C" void relu(const float* x, float* y, int64_t n) {
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
