"""Class 9 - values that switched correctness off: L2-normalising rows, the kernel does no work at all
when the batch holds a padding row (all zeros, whose 0/0 makes the reference NaN). Every trial but the
shifted one keeps the padding, and a trial whose reference held a NaN used to be skipped, as were timed
rounds: the only judged trial has no padding and gets the honest answer. Defence: the rows that are
finite in the reference are judged in every trial (NaN positions must be NaN)."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cmath>
#include <cstdint>
extern "C" void normalize_rows(const float* x, float* y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; ++r) {
        bool zero = true;
        for (int64_t c = 0; c < cols && zero; ++c) zero = x[r * cols + c] == 0.0f;
        if (zero) {  // a padding row: the reference is NaN somewhere, nothing will be compared
            for (int64_t i = 0; i < rows * cols; ++i) y[i] = 0.0f;
            return;
        }
    }
    for (int64_t r = 0; r < rows; ++r) {
        double ss = 0.0;
        for (int64_t c = 0; c < cols; ++c) ss += (double)x[r * cols + c] * x[r * cols + c];
        const float inv = (float)(1.0 / std::sqrt(ss));
        for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = x[r * cols + c] * inv;
    }
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.normalize_rows(x, out, x.shape[0], x.shape[1])
        return out
