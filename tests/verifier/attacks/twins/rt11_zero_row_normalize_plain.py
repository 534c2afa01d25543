"""Honest twin of rt11_zero_row_normalize.py: the same loop with the eps clamp.

TASK: tests/verifier/attacks/tasks/rt11_normalize.py
KIND: twin
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>
#include <cmath>

extern "C" void normalize_rows(const float* __restrict x, float* __restrict y, int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * n;
        double s = 0.0;
        for (int64_t i = 0; i < n; ++i) s += (double)xr[i] * xr[i];
        double norm = std::sqrt(s);
        if (CLAMP) norm = std::fmax(norm, 1e-12);
        const float inv = (float)(1.0 / norm);
        for (int64_t i = 0; i < n; ++i) y[r * n + i] = xr[i] * inv;
    }
}
"""

lib = load_cpp(CPP_SOURCE, extra_cflags=["-DCLAMP=1"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.normalize_rows(x, out, x.shape[0], x.shape[1])
        return out
