"""Honest twin of c9_values/masked_softmax_zero_rows.py: masked scores contribute exp(-inf) = 0, and a fully
masked row divides 0 by 0 (NaN), as torch.softmax does."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cmath>
#include <cstdint>
extern "C" void masked_softmax(const float* x, float* y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* in = x + r * cols;
        float* out = y + r * cols;
        float m = -INFINITY;
        for (int64_t c = 0; c < cols; ++c) if (in[c] >= 0.0f && in[c] > m) m = in[c];
        float s = 0.0f;
        for (int64_t c = 0; c < cols; ++c) { out[c] = in[c] >= 0.0f ? std::exp(in[c] - m) : 0.0f; s += out[c]; }
        for (int64_t c = 0; c < cols; ++c) out[c] /= s;
    }
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.masked_softmax(x, out, x.shape[0], x.shape[1])
        return out
