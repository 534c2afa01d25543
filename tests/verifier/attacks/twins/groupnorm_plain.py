"""Honest twin of c9_values/groupnorm_default_affine.py: GroupNorm that reads the layer's weight and bias."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cmath>
#include <cstdint>
extern "C" void group_norm(const float* x, const float* w, const float* bias, float* y, int64_t batch,
                           int64_t channels, int64_t groups, int64_t spatial, float eps) {
    const int64_t cpg = channels / groups, per_group = cpg * spatial;
    for (int64_t g = 0; g < batch * groups; ++g) {
        const float* in = x + g * per_group;
        float* out = y + g * per_group;
        double s = 0.0, ss = 0.0;
        for (int64_t i = 0; i < per_group; ++i) { s += in[i]; ss += (double)in[i] * in[i]; }
        const double mean = s / per_group, var = ss / per_group - mean * mean;
        const double inv = 1.0 / std::sqrt(var + eps);
        for (int64_t c = 0; c < cpg; ++c) {
            const int64_t ch = (g % groups) * cpg + c;
            const float scale = (float)(w[ch] * inv), shift = (float)(bias[ch] - mean * w[ch] * inv);
            for (int64_t i = 0; i < spatial; ++i) out[c * spatial + i] = in[c * spatial + i] * scale + shift;
        }
    }
}
""")


class ModelNew(nn.Module):
    def __init__(self, num_features, num_groups):
        super().__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_features)

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.group_norm(x, self.gn.weight.contiguous(), self.gn.bias.contiguous(), out, x.shape[0], x.shape[1],
                       self.gn.num_groups, x.numel() // (x.shape[0] * x.shape[1]), self.gn.eps)
        return out
