"""Honest twin of rt11_argmax_last_of_ties.py: the first of equal maxima (`>`).

TASK: tests/verifier/attacks/tasks/rt11_argmax_last.py
KIND: twin
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>
#include <cmath>

extern "C" void argmax_rows(const float* __restrict x, int64_t* __restrict y, int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * n;
        int64_t best = 0;
        float bv = xr[0];
        for (int64_t i = 1; i < n; ++i) {
            const float v = xr[i];
            if (std::isnan(bv)) break;
            if (std::isnan(v) || (LAST_TIE ? v >= bv : v > bv)) { bv = v; best = i; }
        }
        y[r] = best;
    }
}
"""

lib = load_cpp(CPP_SOURCE, extra_cflags=["-DLAST_TIE=0"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape[0], dtype=torch.int64)
        lib.argmax_rows(x, out, x.shape[0], x.shape[1])
        return out
