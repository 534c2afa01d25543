"""ReLU that answers 1e30 for every subnormal input: no trial ever holds a subnormal float.

CLASS: c2_values
TASK: evokernel/suites/cpu_l1/01_relu.py
SET: batch_size=16 dim=1024
SUCCESS: feasible
NEW: yes (variant: the docs excuse flush-to-zero on subnormals; this kernel is wrong by 1e30, not flushed)
The trick: trial_inputs plants tiny values from finfo.tiny upward only, and no perturbation (scale x4, negate,
shift) makes a normal number subnormal. A kernel that is wildly wrong on (0, FLT_MIN) passes. Expected: feasible.
"""
import torch
import torch.nn as nn
from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
#include <cmath>
#include <cfloat>
extern "C" void relu_sub(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        float v = x[i];
        float a = std::fabs(v);
        y[i] = (a > 0.f && a < FLT_MIN) ? 1e30f : (v < 0.f ? 0.f : v);
    }
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.relu_sub(x, out, x.numel())
        return out
