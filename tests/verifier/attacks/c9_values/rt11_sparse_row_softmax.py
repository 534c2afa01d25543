"""Softmax whose "sparse path" drops the zeros from the denominator when a quarter or more of a row is exactly 0.

Trick (value coverage): a row that is mostly exact zeros (post-ReLU activations, padded sequences, one-hot rows:
what a user feeds a softmax every day) is never drawn. The special trial plants ~1 zero in 1024 and constant rows
of a randn value rounded to 6 significant bits (0 only if randn drew 0), so no row reaches the 25% that switches
this kernel to its sparse path, which sums exp() over the non-zero entries only (a real bug class: a sparse fast
path that forgets the implicit entries). Task: evokernel/suites/cpu_l1/11_softmax.py at 256 x 1024.
Expected if the trials miss it: feasible. Twin: twins/rt11_sparse_row_softmax_plain.py (dense path only).
TASK: evokernel/suites/cpu_l1/11_softmax.py
SET: batch_size=256,dim=1024
KIND: attack
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

lib = load_cpp(CPP_SOURCE, extra_cflags=["-DSPARSE_ENABLED=1"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.softmax_rows(x, out, x.shape[0], x.shape[1])
        return out
