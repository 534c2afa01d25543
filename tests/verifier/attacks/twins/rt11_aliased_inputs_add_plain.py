"""Honest twin of rt11_aliased_inputs_add.py: the pointer test compiled out.

TASK: evokernel/suites/cpu_l1/06_elementwise_add.py
SET: batch_size=16,dim=4096
KIND: twin
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>

extern "C" void add_forward(const float* a, const float* b, float* __restrict y, int64_t n) {
    if (ALIAS_PATH && a == b) {
        for (int64_t i = 0; i < n; ++i) y[i] = a[i];
        return;
    }
    for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}
"""

lib = load_cpp(CPP_SOURCE, extra_cflags=["-DALIAS_PATH=0"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        a = a.contiguous()
        b = b.contiguous()
        out = torch.empty_like(a)
        lib.add_forward(a, b, out, a.numel())
        return out
