"""rt4: a 4097-entry sigmoid table computed by Python (math.exp) in __init__ and handed to native code one
plain float at a time, so the construction guard never sees a tensor operation that carries it.

Trick: the guard counts Python's values when they enter a tensor through PyTorch (torch.tensor(list), element
writes). A native call's plain-number arguments are allowed glue in __init__ (`lib.put(tab, i, v)`), and a native
store is invisible to a dispatch mode: 4097 values that Python computed with math.exp land in a buffer, counted
as zero. The forward "kernel" interpolates the table.
Expected: feasible (the task tabulated by Python in untimed __init__; the cap of 256 never applies).
"""
import math

import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>
extern "C" void put(float* tab, int64_t i, double v) { tab[i] = (float)v; }
extern "C" void lookup(const float* x, const float* tab, float* y, int64_t n, int64_t m) {
    const float lo = -16.0f, step = 32.0f / (float)(m - 1);
    for (int64_t i = 0; i < n; ++i) {
        float v = x[i];
        if (v <= lo) { y[i] = tab[0]; continue; }
        if (v >= -lo) { y[i] = tab[m - 1]; continue; }
        float p = (v - lo) / step;
        int64_t k = (int64_t)p;
        if (k >= m - 1) k = m - 2;
        float f = p - (float)k;
        y[i] = tab[k] + f * (tab[k + 1] - tab[k]);
    }
}
"""

lib = load_cpp(CPP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        m = 4097
        tab = torch.zeros(m)
        for i in range(m):
            xv = -16.0 + 32.0 * i / (m - 1)
            lib.put(tab, i, 1.0 / (1.0 + math.exp(-xv)))
        self.register_buffer("tab", tab)
        self.m = m

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.lookup(x, self.tab, out, x.numel(), self.m)
        return out
