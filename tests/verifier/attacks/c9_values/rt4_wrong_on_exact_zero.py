"""rt4: ReLU that is wrong exactly at 0.0 (returns NaN there), a value no trial ever draws.

Trick: every trial input comes from randn (then x4, negated, +3, heavy-tailed): an exact 0.0 (or -0.0) has
probability zero, yet it is the most common value in real activations (a ReLU'd tensor, padding). The kernel
returns NaN for x == 0 (as a `x / x * x`-style formula would) and is right everywhere else.
Expected: feasible, although the kernel is wrong on a valid, common input.
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
        y[i] = v == 0.0f ? NAN : (v < 0.0f ? 0.0f : v);
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
