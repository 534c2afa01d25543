"""Softmax that answers a uniform row whenever a row holds two or more |x| >= 1e5.

The trick: the special and distinct trials (and the value rounds drawing them) plant at most one large value per
row of the last dimension, by design (so a row's sum never cancels two); randn never reaches 1e5. So a row with
two large values -- softmax over logits with two dominant entries, the ordinary case of a confident two-way
tie -- is never drawn, and a kernel wrong exactly there passes. Expected: feasible.

CLASS: c2_values
TASK: evokernel/suites/cpu_l1/11_softmax.py
SET: batch_size=64 dim=1024
SUCCESS: feasible
NEW: yes
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>
#include <cmath>

extern "C" void softmax_rows(const float* __restrict x, float* __restrict y, int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * n;
        float* yr = y + r * n;
        int large = 0;
        float m = -INFINITY;
        for (int64_t j = 0; j < n; ++j) {
            m = xr[j] > m ? xr[j] : m;
            large += std::fabs(xr[j]) >= 1e5f;
        }
        if (large >= 2) {  // the lie: a row no trial draws
            for (int64_t j = 0; j < n; ++j) yr[j] = 1.0f / (float)n;
            continue;
        }
        double s = 0.0;
        for (int64_t j = 0; j < n; ++j) { const float e = std::exp(xr[j] - m); yr[j] = e; s += e; }
        const float inv = (float)(1.0 / s);
        for (int64_t j = 0; j < n; ++j) yr[j] *= inv;
    }
}
"""

lib = load_cpp(CPP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.shape[-1]
        lib.softmax_rows(x, out, x.numel() // n, n)
        return out
