"""F.normalize without the eps clamp: x * (1 / sqrt(sum x^2)) answers NaN on an all-zero row, where PyTorch gives 0.

Trick (value coverage): no trial holds a row that is entirely 0. The special trial plants ~1 zero in 1024 and makes
~1/16 of the rows constant, but a constant row holds a randn value rounded to 6 significant bits, never 0. A
padded batch (zero rows for missing items) or a zero initial state is what a user gives every day; the eps in
F.normalize exists for exactly that row. Task: tests/verifier/attacks/tasks/rt11_normalize.py (256 x 512). Expected if no zero row is
drawn: feasible. Twin: twins/rt11_zero_row_normalize_plain.py (the same loop with the clamp).
TASK: tests/verifier/attacks/tasks/rt11_normalize.py
KIND: attack
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

lib = load_cpp(CPP_SOURCE, extra_cflags=["-DCLAMP=0"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.normalize_rows(x, out, x.shape[0], x.shape[1])
        return out
