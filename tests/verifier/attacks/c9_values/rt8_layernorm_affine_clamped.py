"""LayerNorm (shipped task cpu_l1/13) whose kernel saturates gamma to [-4, 4] and beta to [-3, 3].

CLASS: c2_values
TASK: evokernel/suites/cpu_l1/13_layer_norm.py
SET: batch_size=64 features=256
SUCCESS: feasible
NEW: yes (same root as rt8_rmsnorm_weight_clamped, shown on a shipped task whose layer *is* nn.LayerNorm)
The trick: the task's constructor overwrites the LayerNorm's affine with `weight.copy_(1 + 0.5 * randn)`,
`bias.copy_(0.5 * randn)` after nn.LayerNorm's reset_parameters: the perturbed-parameter trials draw ones_/zeros_
at random, and the copy_ then replaces what they drew ("values a constructor sets itself ... are not touched"). So
gamma never leaves ~[-1, 3.5] and beta ~[-2.5, 2.5] in any trial; a kernel that clamps them (a fixed-point store) is
wrong for a trained checkpoint and feasible here. Same for cpu_l2/02, 06, 12, 16. Expected: feasible.
"""
import torch
import torch.nn as nn
from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
#include <cmath>
static inline float clampf(float v, float a) { return v > a ? a : (v < -a ? -a : v); }
extern "C" void ln(const float* x, const float* w, const float* b, float* y, int64_t rows, int64_t d, float eps) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * d; float* yr = y + r * d;
        double s = 0, s2 = 0;
        for (int64_t i = 0; i < d; ++i) s += xr[i];
        double mean = s / d;
        for (int64_t i = 0; i < d; ++i) { double t = xr[i] - mean; s2 += t * t; }
        float inv = 1.0f / std::sqrt((float)(s2 / d) + eps);
        for (int64_t i = 0; i < d; ++i)
            yr[i] = (float)(xr[i] - mean) * inv * clampf(w[i], 4.f) + clampf(b[i], 3.f);
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
