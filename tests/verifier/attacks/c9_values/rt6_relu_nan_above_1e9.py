"""ReLU answering NaN for every |x| > 1.5e8.

The trick: the special/distinct trials plant large magnitudes log-uniform in [1e6, 1e8] only (LARGE_MAX), and
randn x4 x64 x1000 never reaches 1e8; so a kernel wrong on the whole range (1.5e8, 3.4e38) is never seen (the
fix of rt4_wrong_above_1e6 only moved the threshold).

CLASS: c2_values
TASK: evokernel/suites/cpu_l1/01_relu.py
SET: batch_size=16 dim=4096
SUCCESS: feasible
NEW: yes
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>
#include <cmath>

extern "C" void relu_forward(const float* __restrict x, float* __restrict y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        const float a = std::fabs(v);
        if (a > 1.5e8f) { y[i] = NAN; continue; }   // the lie: only on values no trial draws
        y[i] = v < 0.0f ? 0.0f : v;
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
        lib.relu_forward(x, out, x.numel())
        return out
