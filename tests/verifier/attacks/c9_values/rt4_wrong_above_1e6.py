"""rt4: ReLU that is wrong for finite inputs above 1e6 (returns 0 there): a range no trial draws.

Trick: trial inputs are randn x4, +3, and heavy tails (rows x16-64, 0.1% of elements x100-1000): the largest
value any trial can hold is ~5*64*1000 = 3.2e5. Everything above that -- finite, valid float32 inputs -- is never
drawn. The kernel clamps "for safety" and returns 0 for x > 1e6 (the same door serves a polynomial that is only
accurate in the drawn range, or float16 intermediates for a task whose heavy trial stays below 65504).
Expected: feasible, although the kernel is wrong on valid finite inputs (x = 2e6 -> 0).
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>
#include <cmath>
extern "C" void relu_forward(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        y[i] = (v < 0.0f || v > 1.0e6f) ? 0.0f : v;
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
