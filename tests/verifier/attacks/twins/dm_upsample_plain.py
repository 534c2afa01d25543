"""Honest twin of the issue-28 upsampling attacks: the native kernel writes each output row from its input row."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

SRC = r"""
#include <cstdint>
extern "C" void upsample2x(const float* __restrict x, float* __restrict y, int64_t planes, int64_t h, int64_t w) {
    #pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < planes; ++p)
        for (int64_t i = 0; i < 2 * h; ++i) {
            const float* src = x + (p * h + i / 2) * w;
            float* dst = y + (p * 2 * h + i) * 2 * w;
            for (int64_t j = 0; j < w; ++j) { dst[2 * j] = src[j]; dst[2 * j + 1] = src[j]; }
        }
}
"""

lib = load_cpp(SRC)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n, c, h, w = x.shape
        out = torch.empty(n, c, 2 * h, 2 * w, dtype=x.dtype, device=x.device)
        lib.upsample2x(x, out, n * c, h, w)
        return out
