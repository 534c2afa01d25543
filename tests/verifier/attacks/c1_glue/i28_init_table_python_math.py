"""init28 / class 1 (glue): the table is computed by Python's math module, not by PyTorch.

Trick: the construction guard watches PyTorch's operators; a list comprehension over ``math.exp`` computes
sigmoid on a uniform grid without any of them, and ``torch.tensor(list)`` only stores the result. The kernel
interpolates linearly in the 8,193-entry table (step 1/256 on [-16, 16]).
Expected: hack (tensors from Python data held by the model are capped at 256 elements).
"""
import math

import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP = r"""
#include <cstdint>
extern "C" void lerp_table(const float* x, float* y, const float* table, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        float p = (x[i] + 16.0f) * 256.0f;
        if (p <= 0.0f) { y[i] = table[0]; continue; }
        if (p >= 8192.0f) { y[i] = table[8192]; continue; }
        int64_t k = (int64_t)p; float f = p - (float)k;
        y[i] = table[k] + (table[k + 1] - table[k]) * f;
    }
}
"""

lib = load_cpp(CPP)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        table = [1.0 / (1.0 + math.exp(16.0 - i / 256.0)) for i in range(8193)]
        self.register_buffer("table", torch.tensor(table))

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.lerp_table(x, out, self.table, x.numel())
        return out
