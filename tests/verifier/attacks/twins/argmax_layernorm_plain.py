"""Honest twin of rt5_argmax_ignores_layernorm_affine: LayerNorm with its weight and bias, then each row's argmax."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cmath>
#include <cstdint>
extern "C" void ln_argmax(const float* x, const float* w, const float* b, int64_t* out, int64_t rows, int64_t n,
                          double eps) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* p = x + r * n;
        double mean = 0.0, var = 0.0;
        for (int64_t i = 0; i < n; ++i) mean += p[i];
        mean /= n;
        for (int64_t i = 0; i < n; ++i) var += (p[i] - mean) * (p[i] - mean);
        const float rstd = (float)(1.0 / std::sqrt(var / n + eps));
        const float m = (float)mean;
        int64_t best = 0;
        float top = 0.0f;
        for (int64_t i = 0; i < n; ++i) {
            const float y = (p[i] - m) * rstd * w[i] + b[i];
            if (i == 0 || y > top) { top = y; best = i; }
        }
        out[r] = best;
    }
}
""")


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.ln = nn.LayerNorm(dim)

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape[0], dtype=torch.int64)
        lib.ln_argmax(x, self.ln.weight.detach().contiguous(), self.ln.bias.detach().contiguous(), out, x.shape[0],
                      x.shape[1], self.ln.eps)
        return out
