"""rt10 (issue 28) leaky_slope_hardcoded -- value coverage: constructor arguments are never varied.

Trick: the kernel ignores ModelNew's negative_slope and hard-codes the task's 0.1. The constructor arguments of
every trial, perturbed-parameter trial and timed round are get_init_inputs() as written (only tensor parameters
are perturbed), so a model built with negative_slope=0.2 by a user is silently wrong. (Round 9 found the same for a
scalar *forward* argument; this is the constructor's channel.)
Task: tasks/rt10_leaky.py (16 x 4096, negative_slope=0.1). Expected: correctness (closed by val11; open, it was feasible).
Twin: twins/leaky_plain.py (passes self.negative_slope to the kernel).
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>

extern "C" void leaky(const float* __restrict x, float* __restrict y, int64_t n, double slope) {
    const float s = 0.1f;  // the task's default, the argument never read
    (void)slope;
    for (int64_t i = 0; i < n; ++i) { const float v = x[i]; y[i] = v > 0.0f ? v : v * s; }
}
"""

lib = load_cpp(CPP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self, negative_slope):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.leaky(x, out, x.numel(), self.negative_slope)
        return out
