"""log_softmax that skips the max subtraction and drops the 1e-3-smallest terms -- wrong (by ~1e-2 .. 1) on rows
that are non-negative, not constant, and below 2.5: probabilities, attention weights, normalised features.

Trick (value coverage): every drawn row holds negative values except (a) constant rows of the special trial,
(b) the shift trial's randn + 3 rows (max ~6) and its offset rows (+62 .. +1e4), so a row of values in [0, 2.5)
that are not all equal -- the most common input a user gives a log-softmax after a softmax or a sigmoid -- is never
seen. On such rows this kernel answers x - log(sum of exp(x) over x > 0.5) (a "pruned" denominator).
Task: evokernel/suites/cpu_l1/12_log_softmax.py at 256 x 1024. Expected if the trials miss it: feasible.
Twin: twins/rt11_nonneg_row_logsoftmax_plain.py (the pruned branch compiled out).
TASK: evokernel/suites/cpu_l1/12_log_softmax.py
SET: batch_size=256,dim=1024
KIND: attack
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

lib = load_cpp(CPP_SOURCE, extra_cflags=["-DPRUNE=1"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.log_softmax_rows(x, out, x.shape[0], x.shape[1])
        return out
