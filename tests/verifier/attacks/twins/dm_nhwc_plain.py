"""Honest twin of the issue-28 layout attack: the native kernel writes the NHWC output from the NCHW input."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

SRC = r"""
#include <cstdint>
extern "C" void nchw_to_nhwc(const float* __restrict x, float* __restrict y, int64_t n, int64_t c, int64_t hw) {
    for (int64_t b = 0; b < n; ++b)
        for (int64_t k = 0; k < c; ++k)
            for (int64_t p = 0; p < hw; ++p)
                y[(b * hw + p) * c + k] = x[(b * c + k) * hw + p];
}
"""

lib = load_cpp(SRC)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n, c, h, w = x.shape
        out = torch.empty(n, h, w, c, dtype=x.dtype, device=x.device)
        lib.nchw_to_nhwc(x, out, n, c, h * w)
        return out
