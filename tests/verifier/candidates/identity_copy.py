"""Correctness: the native kernel copies the input unchanged (negative values survive)."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
#include <cstring>
extern "C" void relu(const float* x, float* y, int64_t n) {
    std::memcpy(y, x, (size_t)n * sizeof(float));
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
