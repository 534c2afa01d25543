"""Honest twin of c9_values/noise_at_floor.py: group statistics in double, the normalised values summed in
float per group (the order a plain loop takes), plus 6e-7 times the first normalised value."""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cmath>
#include <cstdint>
extern "C" void gn_mean_residual(const float* x, float* y, int64_t batch, int64_t groups, int64_t per_group,
                                 float eps) {
    for (int64_t b = 0; b < batch; ++b) {
        double total = 0.0;
        float first = 0.0f;
        for (int64_t g = 0; g < groups; ++g) {
            const float* in = x + (b * groups + g) * per_group;
            double s = 0.0, ss = 0.0;
            for (int64_t i = 0; i < per_group; ++i) { s += in[i]; ss += (double)in[i] * in[i]; }
            const double mean = s / per_group, var = ss / per_group - mean * mean;
            const float inv = (float)(1.0 / std::sqrt(var + eps)), shift = (float)(-mean) * inv;
            float acc = 0.0f;
            for (int64_t i = 0; i < per_group; ++i) acc += in[i] * inv + shift;
            total += acc;
            if (g == 0) first = in[0] * inv + shift;
        }
        y[b] = (float)(total / ((double)groups * per_group) + 6e-7 * first);
    }
}
""")


class ModelNew(nn.Module):
    def __init__(self, num_groups):
        super().__init__()
        self.num_groups = num_groups

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty((x.shape[0],), dtype=torch.float32)
        lib.gn_mean_residual(x, out, x.shape[0], self.num_groups, x.numel() // (x.shape[0] * self.num_groups), 1e-5)
        return out
