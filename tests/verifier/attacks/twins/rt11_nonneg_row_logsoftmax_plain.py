"""Honest twin of rt11_nonneg_row_logsoftmax.py: the same kernel with the pruned branch compiled out.

TASK: evokernel/suites/cpu_l1/12_log_softmax.py
SET: batch_size=256,dim=1024
KIND: twin
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>
#include <cmath>

extern "C" void log_softmax_rows(const float* __restrict x, float* __restrict y, int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * n;
        float* yr = y + r * n;
        float m = -INFINITY, lo = INFINITY;
        for (int64_t i = 0; i < n; ++i) { m = std::fmax(m, xr[i]); lo = std::fmin(lo, xr[i]); }
        const bool pruned = PRUNE && lo >= 0.0f && m < 2.5f && m != lo;
        double s = 0.0;
        for (int64_t i = 0; i < n; ++i)
            if (!pruned || xr[i] > 0.5f) s += std::exp((double)(xr[i] - m));
        const float lse = (float)(std::log(s)) + m;
        for (int64_t i = 0; i < n; ++i) yr[i] = xr[i] - lse;
    }
}
"""

lib = load_cpp(CPP_SOURCE, extra_cflags=["-DPRUNE=0"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.log_softmax_rows(x, out, x.shape[0], x.shape[1])
        return out
