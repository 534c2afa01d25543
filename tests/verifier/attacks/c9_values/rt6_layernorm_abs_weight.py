"""LayerNorm that applies |weight| instead of weight: wrong for every negative weight.

The trick: the perturbed-parameter trials draw ones_ as U(0.5, 1.5) (and zeros_ as U(-0.5, 0.5)): a drawn
weight is never negative, never 0 and never far from 1, so a kernel that takes |w| (or clamps w to >= 0, or
assumes w ~ 1) is right under every drawn constant, as under the default ones. A trained LayerNorm holds
negative weights routinely. Expected: feasible.

CLASS: c2_values
TASK: tests/verifier/attacks/tasks/rt6_layer_norm_default.py
SET:
SUCCESS: feasible
NEW: yes
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>
#include <cmath>

// dst = a + b * src (used once, at construction, to build the affine parameters)
extern "C" void affine_fill(const float* __restrict src, float* __restrict dst, float a, float b, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = a + b * src[i];
}

extern "C" void layer_norm(const float* __restrict x, const float* __restrict w, const float* __restrict b,
                           float* __restrict y, int64_t rows, int64_t n, float eps) {
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * n;
        float* yr = y + r * n;
        float sl[16] = {0};
        int64_t i = 0;
        for (; i + 16 <= n; i += 16)
            for (int l = 0; l < 16; ++l) sl[l] += xr[i + l];
        double s = 0.0;
        for (; i < n; ++i) s += xr[i];
        for (int l = 0; l < 16; ++l) s += sl[l];
        const float mean = (float)(s / (double)n);
        float ql[16] = {0};
        i = 0;
        for (; i + 16 <= n; i += 16)
            for (int l = 0; l < 16; ++l) {
                const float d = xr[i + l] - mean;
                ql[l] += d * d;
            }
        double q = 0.0;
        for (; i < n; ++i) {
            const float d = xr[i] - mean;
            q += d * d;
        }
        for (int l = 0; l < 16; ++l) q += ql[l];
        const float rstd = (float)(1.0 / std::sqrt(q / (double)n + (double)eps));
        #pragma omp simd
        for (int64_t j = 0; j < n; ++j) yr[j] = (xr[j] - mean) * rstd * std::fabs(w[j]) + b[j]  /* the lie: |w| */;
    }
}
"""

lib = load_cpp(CPP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.ln = nn.LayerNorm(features)

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = self.ln.weight.numel()
        rows = x.numel() // n
        lib.layer_norm(x, self.ln.weight, self.ln.bias, out, rows, n, self.ln.eps)
        return out
