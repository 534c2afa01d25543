"""ReLU answering NaN for 4.5e5 < |x| < 9.9e5.

The trick: between what the heaviest random draw reaches (heavy: randn x64 x1000 ~ 3.5e5) and where the planted
large values start (LARGE_MIN = 1e6) no trial draws anything: a kernel wrong in that band passes.

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
        if (a > 4.5e5f && a < 0.99e6f) { y[i] = NAN; continue; }   // the lie: only on values no trial draws
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
