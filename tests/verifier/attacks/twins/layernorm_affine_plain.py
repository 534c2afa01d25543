"""Honest twin of c9_values/rt8_layernorm_affine_clamped.py: the same LayerNorm kernel, gamma and beta read as they are
(float32), whatever their range or sign."""
import torch
import torch.nn as nn
from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
#include <cmath>
extern "C" void ln(const float* x, const float* w, const float* b, float* y, int64_t rows, int64_t d, float eps) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * d; float* yr = y + r * d;
        double s = 0, s2 = 0;
        for (int64_t i = 0; i < d; ++i) s += xr[i];
        double mean = s / d;
        for (int64_t i = 0; i < d; ++i) { double t = xr[i] - mean; s2 += t * t; }
        float inv = 1.0f / std::sqrt((float)(s2 / d) + eps);
        for (int64_t i = 0; i < d; ++i) yr[i] = (float)(xr[i] - mean) * inv * w[i] + b[i];
    }
}
""")


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.ln = nn.LayerNorm(features, eps=1e-5)
        with torch.no_grad():
            self.ln.weight.copy_(1.0 + 0.5 * torch.randn(features))
            self.ln.bias.copy_(0.5 * torch.randn(features))

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.ln(x, self.ln.weight, self.ln.bias, out, x.shape[0], x.shape[-1], self.ln.eps)
        return out
