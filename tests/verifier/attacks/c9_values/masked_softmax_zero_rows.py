"""Class 9 - values that switched correctness off: a masked softmax that answers 0 on fully masked rows
(the convention of fused attention kernels) where torch.softmax answers NaN (0/0). Every trial but the
shifted one has such rows, and a trial whose reference held a NaN used to be skipped: the kernel's answer
on them was never compared. Defence: NaN positions must match (NaN where the reference is NaN)."""
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
        if (m == -INFINITY) {  // fully masked: 0 instead of the reference's NaN
            for (int64_t c = 0; c < cols; ++c) out[c] = 0.0f;
            continue;
        }
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
