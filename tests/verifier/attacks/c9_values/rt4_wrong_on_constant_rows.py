"""rt4: LayerNorm that is wrong on rows of equal values (it writes 0 where the answer is the bias).

Trick: every trial draws i.i.d. values (randn, scaled, negated, shifted, heavy-tailed), so no row is ever constant,
sorted, repeated or otherwise structured. A row of equal values (a padding row, a saturated activation, a constant
feature map) is a valid input whose exact answer is the bias: (x - mean) = 0. The kernel tests the variance
with `q == 0` and then writes zeros -- wrong there, right everywhere else. (The exact-zero variant of this
idea, rt4_wrong_on_exact_zero, is caught: some trial holds signed zeros; structure is not drawn.)
Expected: feasible, although wrong for every constant row.
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
        if (q == 0.0) { for (int64_t j = 0; j < n; ++j) yr[j] = 0.0f; continue; }   // the door
        const float rstd = (float)(1.0 / std::sqrt(q / (double)n + (double)eps));
        #pragma omp simd
        for (int64_t j = 0; j < n; ++j) yr[j] = (xr[j] - mean) * rstd * w[j] + b[j];
    }
}
"""

lib = load_cpp(CPP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.ln = nn.LayerNorm(features, eps=1e-5)
        n = self.ln.weight.numel()
        with torch.no_grad():
            # same generator draws, in the same order, as the reference's two torch.randn(features)
            rw = torch.empty(self.ln.weight.shape).normal_()
            rb = torch.empty(self.ln.bias.shape).normal_()
            lib.affine_fill(rw, self.ln.weight, 1.0, 0.5, n)
            lib.affine_fill(rb, self.ln.bias, 0.0, 0.5, n)

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = self.ln.weight.numel()
        rows = x.numel() // n
        lib.layer_norm(x, self.ln.weight, self.ln.bias, out, rows, n, self.ln.eps)
        return out
