"""RMSNorm whose kernel saturates the weight to [-4, 4] (a fixed-point store of the parameter).

CLASS: c2_values
TASK: evokernel/suites/cpu_l1/14_rms_norm.py
SET: batch_size=64 features=256
SUCCESS: feasible
NEW: yes
The trick: the task's weight is `nn.Parameter(1.0 + 0.5 * torch.randn(features))` -- a plain torch.randn in the
constructor, not an nn.init initialiser, so init_perturbation's widening (scale factor + outliers) never touches it;
it never leaves ~[-1.5, 3.5]. A kernel that clamps the weight to [-4, 4] is wrong for any checkpoint holding a
larger weight, yet right in every trial. Expected: feasible. (Verdict: see run.py table.)
"""
import torch
import torch.nn as nn
from evokernel.cpu import load_cpp

SRC = r"""
#include <cstdint>
#include <cmath>
extern "C" void rms(const float* x, const float* w, float* y, int64_t rows, int64_t d, float eps) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * d; float* yr = y + r * d;
        double s = 0; for (int64_t i = 0; i < d; ++i) s += (double)xr[i] * xr[i];
        float inv = 1.0f / std::sqrt((float)(s / d) + eps);
        for (int64_t i = 0; i < d; ++i) { float wi = w[i]; wi = wi > 4.f ? 4.f : (wi < -4.f ? -4.f : wi);
            yr[i] = xr[i] * inv * wi; }
    }
}
"""
lib = load_cpp(SRC)


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
