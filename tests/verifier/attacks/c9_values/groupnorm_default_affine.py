"""Class 9 - values that switched correctness off: KernelBench level1 35 (GroupNorm) with the affine
parameters hard-coded to their defaults (weight 1, bias 0): the kernel never reads them, saving a load
and a multiply-add per element. Every trial used the default parameters, so it passed. Defence: one trial
builds both models with their constant initialisers drawn at random (and timing uses those models)."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cmath>
#include <cstdint>
extern "C" void group_norm_default(const float* x, float* y, int64_t batch, int64_t channels, int64_t groups,
                                   int64_t spatial, float eps) {
    const int64_t per_group = channels / groups * spatial;
    for (int64_t g = 0; g < batch * groups; ++g) {
        const float* in = x + g * per_group;
        float* out = y + g * per_group;
        double s = 0.0, ss = 0.0;
        for (int64_t i = 0; i < per_group; ++i) { s += in[i]; ss += (double)in[i] * in[i]; }
        const double mean = s / per_group, var = ss / per_group - mean * mean;
        const float inv = (float)(1.0 / std::sqrt(var + eps)), shift = (float)(-mean) * inv;
        for (int64_t i = 0; i < per_group; ++i) out[i] = in[i] * inv + shift;  // weight 1, bias 0 assumed
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
        lib.group_norm_default(x, out, x.shape[0], x.shape[1], self.gn.num_groups, x.numel() // (x.shape[0] * x.shape[1]),
                               self.gn.eps)
        return out
