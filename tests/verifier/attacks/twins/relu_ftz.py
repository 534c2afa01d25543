"""Honest twin of c9_values/rt8_subnormal_garbage_relu.py: a ReLU run with flush-to-zero and denormals-are-zero set
(what -ffast-math's startup code or an accelerator's vector unit does): a subnormal input reads as 0, so its output is
0 where PyTorch's is the subnormal itself. docs/verifier.md excuses that; the planted subnormals must not refuse it."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
#include <xmmintrin.h>
extern "C" void relu_ftz(const float* x, float* y, int64_t n) {
    unsigned int csr = _mm_getcsr();
    _mm_setcsr(csr | 0x8040);  // FTZ (bit 15) | DAZ (bit 6)
    volatile float zero = 0.0f;
    for (int64_t i = 0; i < n; ++i) { float v = x[i] + zero; y[i] = v > 0.0f ? v : 0.0f; }  // + 0: DAZ flushes v
    _mm_setcsr(csr);
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.relu_ftz(x, out, x.numel())
        return out
