"""Honest twin of rt11_sparse_row_softmax.py: the same kernel with the sparse path compiled out.

TASK: evokernel/suites/cpu_l1/11_softmax.py
SET: batch_size=256,dim=1024
KIND: twin
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>
#include <cmath>

extern "C" void softmax_rows(const float* __restrict x, float* __restrict y, int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * n;
        float* yr = y + r * n;
        float m = -INFINITY;
        int64_t zeros = 0;
        for (int64_t i = 0; i < n; ++i) { m = std::fmax(m, xr[i]); zeros += (xr[i] == 0.0f); }
        const bool sparse = SPARSE_ENABLED && zeros * 4 >= n;
        double s = 0.0;
        for (int64_t i = 0; i < n; ++i) {
            const float e = std::exp(xr[i] - m);
            yr[i] = e;
            if (!sparse || xr[i] != 0.0f) s += e;
        }
        const float inv = (float)(1.0 / s);
        for (int64_t i = 0; i < n; ++i) yr[i] *= inv;
    }
}
"""

lib = load_cpp(CPP_SOURCE, extra_cflags=["-DSPARSE_ENABLED=0"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.softmax_rows(x, out, x.shape[0], x.shape[1])
        return out
