"""Correctness: sizes hard-coded in the kernel (64 rows of 65536, half the default 128 x 65536), so only
part of the output is computed; the rest stays zero. Bounded by n, so smaller sizes do not crash."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
static const int64_t ROWS = 64, DIM = 65536;
extern "C" void relu(const float* x, float* y, int64_t n) {
    const int64_t m = n < ROWS * DIM ? n / 2 : ROWS * DIM;
    for (int64_t i = 0; i < m; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.zeros_like(x)
        lib.relu(x, out, x.numel())
        return out
