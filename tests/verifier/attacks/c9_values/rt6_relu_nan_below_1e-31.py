"""ReLU answering NaN for non-zero |x| < 1e-31 (normal floats, not subnormals).

The trick: tiny values are planted log-uniform in [1e-30, 1e-10] (TINY_MIN); normal float32 values in
[1.2e-38, 1e-30] and all subnormals are never drawn, so a kernel that answers NaN there passes (NaN where
PyTorch gives a finite value is wrong by any tolerance).

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
        if (v != 0.0f && a < 1e-31f) { y[i] = NAN; continue; }   // the lie: only on values no trial draws
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
