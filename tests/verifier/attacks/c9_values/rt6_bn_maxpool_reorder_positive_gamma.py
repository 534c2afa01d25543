"""BatchNorm (inference) + MaxPool fused by pooling FIRST and applying the affine to the maxima: right only for gamma > 0.

The trick: max(a*x + b) = a*max(x) + b holds only for a >= 0 (a = gamma / sqrt(var + eps)). The perturbed-parameter
trials draw BatchNorm's weight from U(0.5, 1.5) (ones_ drawn) and the default is 1: gamma is never negative in any
trial or timed round, so the reorder (a realistic optimisation: 4x less affine work, a classic LLM-found
"fusion") passes, while a trained network's negative gammas get min-pooled values. Generalises the LayerNorm |w|
attack: every monotone-reorder or sign assumption on a norm's scale is unseen. Expected: feasible.

CLASS: c2_values
TASK: tests/verifier/attacks/tasks/rt6_bn_maxpool.py
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

extern "C" void bn_pool(const float* __restrict x, const float* __restrict w, const float* __restrict b,
                        const float* __restrict rm, const float* __restrict rv, float* __restrict y,
                        int64_t n, int64_t c, int64_t h, int64_t wd, float eps) {
    const int64_t oh = h / 2, ow = wd / 2;
    for (int64_t i = 0; i < n; ++i)
        for (int64_t ch = 0; ch < c; ++ch) {
            const float a = w[ch] / std::sqrt(rv[ch] + eps);
            const float s = b[ch] - rm[ch] * a;
            const float* xp = x + (i * c + ch) * h * wd;
            float* yp = y + (i * c + ch) * oh * ow;
            for (int64_t r = 0; r < oh; ++r)
                for (int64_t q = 0; q < ow; ++q) {
                    const float* p = xp + 2 * r * wd + 2 * q;
                    float m = std::fmax(std::fmax(p[0], p[1]), std::fmax(p[wd], p[wd + 1]));
                    yp[r * ow + q] = a * m + s;   // the lie: pooled before the affine (needs a >= 0)
                }
        }
}
"""

lib = load_cpp(CPP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels)

    def forward(self, x):
        x = x.contiguous()
        n, c, h, w = x.shape
        out = torch.empty(n, c, h // 2, w // 2, dtype=x.dtype)
        lib.bn_pool(x, self.bn.weight, self.bn.bias, self.bn.running_mean, self.bn.running_var, out,
                    n, c, h, w, self.bn.eps)
        return out
