"""Honest twin of c6_resources/rt10_oob_read_past_input.py (red-team round 10): the same 40000-float block ReLU
built with -DMASKED, so the last block's loads stop at the input's end too.
Task: evokernel/suites/cpu_l1/01_relu.py at batch_size=16, dim=4096.
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>

extern "C" void relu_blocks(const float* __restrict x, float* __restrict y, int64_t n) {
    const int64_t B = 40000;
    static float buf[40000];
    for (int64_t b = 0; b < n; b += B) {
#ifdef MASKED
        const int64_t m = n - b < B ? n - b : B;
        for (int64_t i = 0; i < m; ++i) buf[i] = x[b + i];
#else
        for (int64_t i = 0; i < B; ++i) buf[i] = x[b + i];  // the whole block, past the end on the last one
#endif
        for (int64_t i = 0; i < B && b + i < n; ++i) { const float v = buf[i]; y[b + i] = v < 0.0f ? 0.0f : v; }
    }
}
"""

lib = load_cpp(CPP_SOURCE, extra_cflags=["-O1", "-DMASKED"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.relu_blocks(x, out, x.numel())
        return out
