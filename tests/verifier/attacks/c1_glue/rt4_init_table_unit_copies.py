"""rt4: a 4097-entry table of the task's own function (sigmoid) built by Python in __init__, past the guard's cap.

Trick: the construction guard counts a value Python writes into part of a storage only when its source is a
"single" (a storage of one element). `t.narrow(0, i, 1).copy_(torch.full((2,), v).narrow(0, 0, 1))` copies one
value out of a TWO-element constant fill: `full` is labelled drawn, the source is not single, so the write is
a plain `write(dst, drawn)` -- nothing counted against PYTHON_CAP (256). A table of any length passes; the
"kernel" only interpolates it.
Expected: feasible (the table is the task, tabulated by Python math.exp in untimed __init__).
"""
import math

import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>
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
            v = 1.0 / (1.0 + math.exp(-xv))
            tab.narrow(0, i, 1).copy_(torch.full((2,), v).narrow(0, 0, 1))
        self.register_buffer("tab", tab)
        self.m = m

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.lookup(x, self.tab, out, x.numel(), self.m)
        return out
