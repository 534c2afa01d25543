"""Honest twin of c9_values/rt9_scalar_arg_hardcoded.py: the same loop, reading alpha from forward's argument. The
special and distinct trials now give alpha other values (docs/verifier.md); this twin must stay feasible."""
import torch
import torch.nn as nn
from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
extern "C" void scale_arg(const float* x, float* y, int64_t n, double alpha) {
    const float a = (float)alpha;   // PyTorch multiplies a float32 tensor by a Python float in float32
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * a + 1.0f;
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, alpha):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.scale_arg(x, out, x.numel(), alpha)
        return out
