"""Honest twin of c4_timing/shift_prefix_logsumexp.py: the same per-row logsumexp, no cache."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cmath>
#include <cstdint>
extern "C" void logsumexp_rows(const float* x, float* out, int64_t B, int64_t D) {
    for (int64_t b = 0; b < B; ++b) {
        const float* r = x + b * D;
        float m = -INFINITY;
        for (int64_t c = 0; c < D; ++c) m = r[c] > m ? r[c] : m;
        double acc = 0.0;
        for (int64_t c = 0; c < D; ++c) acc += std::exp((double)(r[c] - m));
        out[b] = (float)(m + std::log(acc));
    }
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape[0])
        lib.logsumexp_rows(x, out, x.shape[0], x.shape[1])
        return out
