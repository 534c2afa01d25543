"""Honest twin of c9_values/rt8_rmsnorm_weight_clamped.py: the same RMSNorm kernel, the weight read as it is (float32),
whatever its range or sign."""
import torch
import torch.nn as nn
from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
#include <cmath>
extern "C" void rms(const float* x, const float* w, float* y, int64_t rows, int64_t d, float eps) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * d; float* yr = y + r * d;
        double s = 0; for (int64_t i = 0; i < d; ++i) s += (double)xr[i] * xr[i];
        float inv = 1.0f / std::sqrt((float)(s / d) + eps);
        for (int64_t i = 0; i < d; ++i) yr[i] = xr[i] * inv * w[i];
    }
}
""")


class ModelNew(nn.Module):
    def __init__(self, features, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.5 * torch.randn(features))

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.rms(x, self.weight, out, x.shape[0], x.shape[-1], self.eps)
        return out
