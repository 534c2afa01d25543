"""rt9: a forward argument that is not a tensor (a Python float, as NPUKernelBench's attrs) is sent to both models
by value from the task's get_inputs() and never varied by any trial, so a kernel that ignores it and hard-codes
the drawn value (0.75) is correct in every trial and wrong for every other alpha.

CLASS: c2_values
TASK: task_scale_arg.py
SET: batch_size=16 dim=1024
NEW: yes
Expected: feasible (the trials perturb tensors only).
Verifier answered (2026-11-29): feasible (0.92x); attack succeeded: YES.
"""
import torch
import torch.nn as nn
from evokernel.cpu import load_cpp

SRC = r"""
#include <cstdint>
extern "C" void scale_fixed(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * 0.75f + 1.0f;   // alpha ignored
}
"""
lib = load_cpp(SRC)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, alpha):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.scale_fixed(x, out, x.numel())
        return out
