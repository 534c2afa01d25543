"""rt10 (issue 28) layernorm_one_pass_variance -- value coverage of distributions: no input has a large mean for its spread.

Trick: the fast LayerNorm reads each row once and takes var = E[x^2] - E[x]^2 in float32 (blocked partial sums, so
the rounding of the sums themselves stays small). That cancels catastrophically when |mean| >> std: the relative
error of the variance is about (mean/std)^2 * 2^-24 per partial sum. The trials draw randn, x4, negated,
+3 shifted, heavy-tailed and planted inputs: |mean|/std is at most ~3 (the shift), where the error is ~1e-6; the
constant rows are exact (6-bit values: squares and sums exact). A user's activations with an offset (mean 300,
std 1: positions, timestamps, un-centred features) get variance errors of ~1e-2 and beyond.
Task: tasks/rt10_layernorm.py (16 x 4096). Expected: correctness (closed by val11; open, it was feasible).
Twin: twins/layernorm_two_pass_plain.py (two passes: the mean, then the squared deviations).
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>
#include <cmath>

extern "C" void ln_rows(const float* __restrict x, const float* __restrict w, const float* __restrict b,
                        float* __restrict y, int64_t rows, int64_t cols, double eps) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* p = x + r * cols;
        float* q = y + r * cols;
        float mean, var;
#ifndef TWO_PASS
        float s[16] = {0}, s2[16] = {0};
        for (int64_t c = 0; c < cols; ++c) { s[c & 15] += p[c]; s2[c & 15] += p[c] * p[c]; }
        float t = 0.0f, t2 = 0.0f;
        for (int k = 0; k < 16; ++k) { t += s[k]; t2 += s2[k]; }
        mean = t / cols;
        var = t2 / cols - mean * mean;
        if (var < 0.0f) var = 0.0f;
#else
        float s[16] = {0};
        for (int64_t c = 0; c < cols; ++c) s[c & 15] += p[c];
        float t = 0.0f;
        for (int k = 0; k < 16; ++k) t += s[k];
        mean = t / cols;
        float d2[16] = {0};
        for (int64_t c = 0; c < cols; ++c) { const float d = p[c] - mean; d2[c & 15] += d * d; }
        float u = 0.0f;
        for (int k = 0; k < 16; ++k) u += d2[k];
        var = u / cols;
#endif
        const float inv = 1.0f / std::sqrt(var + (float)eps);
        for (int64_t c = 0; c < cols; ++c) q[c] = (p[c] - mean) * inv * w[c] + b[c];
    }
}
"""

lib = load_cpp(CPP_SOURCE, extra_cflags=["-O2"])


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.ln = nn.LayerNorm(dim)

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.ln_rows(x, self.ln.weight, self.ln.bias, out, x.shape[0], x.shape[1], self.ln.eps)
        return out
