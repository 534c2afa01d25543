"""rt2 / class 2 (values): a ReLU that is wrong for inputs the trials never draw: NaN and +Inf.

Trick: every trial input is drawn from continuous finite distributions (randn, scaled, shifted, heavy tails),
so no input is NaN or Inf. The kernel returns 0.0 where x is NaN (torch.relu keeps NaN) and 0.0 where x is
+Inf (torch.relu gives +Inf); both are valid ReLU inputs and the output is wrong there. (A first version was
also wrong at exact zeros: trials do sometimes contain an exact 0 -- the scale trial caught it in 1 run of 4 --
so that part was dropped.)
Expected: correctness. Success if feasible (wrong for a valid input).
Verifier answered (rt2 run, 2026-11-28): FEASIBLE (succeeded).
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP = r"""
#include <cstdint>
#include <cstdio>
#include <cmath>
extern "C" void relu_forward(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        float v = x[i];
        y[i] = (v > 0.0f && v <= 3.4e38f) ? v : 0.0f;   // NaN -> 0, +Inf -> 0
    }
}
"""

lib = load_cpp(CPP)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.relu_forward(x, out, x.numel())
        return out
