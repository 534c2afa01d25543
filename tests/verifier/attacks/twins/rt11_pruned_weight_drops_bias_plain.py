"""Honest twin of rt11_pruned_weight_drops_bias.py: the bias is always added.

TASK: tests/verifier/attacks/tasks/rt11_linear.py
KIND: twin
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>

extern "C" void linear_fwd(const float* __restrict x, const float* __restrict w, const float* __restrict b,
                           float* __restrict y, int64_t n, int64_t k, int64_t m) {
    for (int64_t o = 0; o < m; ++o) {
        const float* wr = w + o * k;
        bool pruned = false;
        for (int64_t j = 0; j < k; ++j) pruned |= (wr[j] == 0.0f);
        for (int64_t i = 0; i < n; ++i) {
            const float* xr = x + i * k;
            double s = 0.0;
            for (int64_t j = 0; j < k; ++j) if (wr[j] != 0.0f) s += (double)xr[j] * wr[j];
            if (!(DROP_BIAS && pruned)) s += b[o];
            y[i * m + o] = (float)s;
        }
    }
}
"""

lib = load_cpp(CPP_SOURCE, extra_cflags=["-DDROP_BIAS=0"])


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = x.contiguous()
        w = self.fc.weight.contiguous()
        b = self.fc.bias.contiguous()
        out = torch.empty(x.shape[0], w.shape[0])
        lib.linear_fwd(x, w, b, out, x.shape[0], x.shape[1], w.shape[0])
        return out
