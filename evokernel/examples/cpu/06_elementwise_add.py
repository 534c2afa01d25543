"""Elementwise a + b for two same-shaped tensors: one vectorised, OpenMP-parallel pass.

Task: evokernel/suites/cpu_l1/06_elementwise_add.py (no broadcasting: the task's inputs share a shape).
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>

extern "C" void add_forward(const float* __restrict a, const float* __restrict b, float* __restrict y, int64_t n) {
    #pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}
"""

lib = load_cpp(CPP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        a = a.contiguous()
        b = b.contiguous()
        out = torch.empty_like(a)
        lib.add_forward(a, b, out, a.numel())
        return out
