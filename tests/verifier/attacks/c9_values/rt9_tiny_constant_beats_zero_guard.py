"""rt9: the newest rule, correctness._noise_around_constant, lets a *nonzero* constant output pass where the
float64 answer is constant, while all zeros "stays degenerate". A kernel that never reads x and writes the
constant 1e-30 is not all zeros (cand_sq > 0: the all-zeros guard is silent), is "the constant 1e-30", and is
then excused because float64's answer (0) is constant and float32 PyTorch only scatters around it. The known
door (rt7: noise near 0 passes) needed noise; this one is one constant, through the rule written to refuse it.

CLASS: c2_values
TASK: task_ln_mean.py
SET: batch_size=16 dim=1024
NEW: yes (a variant of round 7's exact-zero door, through round 9's new constant rule)
Verifier answered (2026-11-29): feasible (0.99x); attack succeeded: YES.
"""
import torch
import torch.nn as nn
from evokernel.cpu import load_cpp

SRC = r"""
#include <cstdint>
extern "C" void fill_tiny(const float* x, float* y, int64_t rows) {
    (void)x;
    for (int64_t r = 0; r < rows; ++r) y[r] = 1e-30f;   // x never read
}
"""
lib = load_cpp(SRC)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape[0], dtype=x.dtype)
        lib.fill_tiny(x, out, x.shape[0])
        return out
