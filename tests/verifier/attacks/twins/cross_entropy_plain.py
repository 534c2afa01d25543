"""Honest twin of c4_timing/shift_cross_entropy.py (the same per-row loss, no cache) and of
c9_values/rt6_cross_entropy_ignores_ignore_index.py: a target of -100 (F.cross_entropy's ignore_index) is left out
of the sum and of the count."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cmath>
#include <cstdint>
extern "C" void cross_entropy(const float* x, const int64_t* y, float* out, int64_t B, int64_t D) {
    double loss = 0.0;
    int64_t count = 0;
    for (int64_t b = 0; b < B; ++b) {
        if (y[b] == -100) continue;  // ignore_index
        ++count;
        const float* r = x + b * D;
        float m = -INFINITY;
        for (int64_t c = 0; c < D; ++c) m = r[c] > m ? r[c] : m;
        double acc = 0.0;
        for (int64_t c = 0; c < D; ++c) acc += std::exp((double)(r[c] - m));
        loss += m + std::log(acc) - r[y[b]];
    }
    out[0] = (float)(loss / (double)count);  // every target ignored: 0/0, NaN as in PyTorch
}
""")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits, targets):
        x, y = logits.contiguous(), targets.contiguous()
        out = torch.empty(())
        lib.cross_entropy(x, y, out, x.shape[0], x.shape[1])
        return out
