"""rt5 c2: sigmoid that answers 0 for every nonzero |x| < 1e-20 (sigmoid there is 0.5).

Trick: no trial draws tiny nonzero values: randn, its scale/negate/shift/heavy reshapes never land below 1e-20,
and `special` plants exact +-0.0 and large values, not subnormal-scale ones. The kernel special-cases a value
class the verifier never shows it (wrong for valid inputs such as the output of x * 1e-30 upstream).
Expected: feasible. Verifier answered: see run.py output.
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

META = {"task": "evokernel/suites/cpu_l1/04_sigmoid.py", "set": {"batch_size": 16, "dim": 4096},
        "config": {"timing": False}}

SRC = r"""
#include <cstdint>
#include <cmath>
extern "C" void sig(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        float v = x[i];
        if (v != 0.0f && std::fabs(v) < 1e-20f) { y[i] = 0.0f; continue; }
        y[i] = 1.0f / (1.0f + std::exp(-v));
    }
}
"""

lib = load_cpp(SRC)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.sig(x, y, x.numel())
        return y
