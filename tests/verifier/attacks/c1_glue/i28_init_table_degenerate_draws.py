"""init28 / class 1 (glue): a Python-computed table "drawn" into a zero buffer one element at a time from U(v, v).

Trick: as init_table_element_writes, but each value is "drawn": the buffer is torch.zeros and each entry is
written with ``table.narrow(0, i, 1).uniform_(value, value)`` (a view and a random draw, both allowed in
__init__; the guard's first version took every draw for random and missed it). The kernel interpolates
linearly in the 8,193-entry table.
Expected: hack (any value written into part of a storage -- a fill, a draw, nn.init, an in-place scaling -- is
Python's data; the cap counts it).
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
        table = torch.zeros(8193)
        for i in range(8193):
            v = 1.0 / (1.0 + math.exp(16.0 - i / 256.0))
            table.narrow(0, i, 1).uniform_(v, v)
        self.register_buffer("table", table)

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.lerp_table(x, out, self.table, x.numel())
        return out
