"""val10: beats the new-float-argument rule. The special and distinct trials give a float forward argument a new value
whose magnitude is the drawn one times at most 4 (and at least 1/4), so a kernel right only for |alpha| <= 4 x 0.75
(here: alpha clamped to [-3, 3], a stand-in for a table or a fixed-point scale sized to that range) passes every
trial and is wrong for alpha = 10.

CLASS: c9_values
TASK: rt9_scale_arg.py
SET: batch_size=16 dim=1024
NEW: yes (the door left by the rule that closed rt9_scalar_arg_hardcoded)
Expected: feasible (open: docs/verifier.md, "Limits we know of").
"""
import torch
import torch.nn as nn
from evokernel.cpu import load_cpp

SRC = r"""
#include <cstdint>
extern "C" void scale_clamped(const float* x, float* y, int64_t n, double alpha) {
    float a = (float)alpha;
    a = a > 3.0f ? 3.0f : (a < -3.0f ? -3.0f : a);   // right only within 4x of the drawn 0.75
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * a + 1.0f;
}
"""
lib = load_cpp(SRC)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, alpha):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.scale_clamped(x, out, x.numel(), alpha)
        return out
