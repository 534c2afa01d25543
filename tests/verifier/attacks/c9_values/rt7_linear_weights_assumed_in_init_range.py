"""A Linear kernel that stores its weights as 16-bit fixed point scaled to PyTorch's *initial* range.

CLASS: c2_values
TASK: task_linear.py
SET: batch_size=16 in_features=256 out_features=128
BACKEND: cpu
SUCCESS: feasible
NEW: yes (parameter value coverage: a Linear/Conv weight is only ever drawn from its default init)

Trick: nn.Linear draws W from U(-1/sqrt(in), 1/sqrt(in)); the verifier builds both models from the same seeds and
(for norms only) redraws constant initialisers, so a weight outside that bound never occurs in a verdict. The
kernel stores W as 31-bit fixed point with the fixed scale (1/sqrt(in))/2^30, saturating: as exact as float32
inside the initial range (a 16-bit version failed the special trial: 1e8 inputs amplify the step), but any trained weight beyond 1/sqrt(in) (most real
checkpoints) is clamped, a wrong answer. The bias is handled the same way.
Expected: feasible, although the kernel is wrong for every Linear whose weights left their initial range.
Answered (2026-11-29, attacks/run.py): FEASIBLE (0.46x); the 16-bit version failed the special trial, the 31-bit saturating one passes. SUCCEEDED.
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP_SOURCE = r"""
#include <cstdint>
#include <cmath>
static inline float q16(float w, float bound) {  // 31-bit fixed point on [-bound, bound], saturating
    double t = (double)w / bound * 1073741823.0;
    t = t > 1073741823.0 ? 1073741823.0 : (t < -1073741823.0 ? -1073741823.0 : t);
    return (float)((double)(int32_t)std::llrint(t) * (bound / 1073741823.0));
}
extern "C" void linear_q16(const float* x, const float* w, const float* b, float* y,
                           int64_t n, int64_t in, int64_t out) {
    const float bound = 1.0f / std::sqrt((float)in);
    #pragma omp parallel for
    for (int64_t o = 0; o < out; ++o) {
        float wq[4096];
        for (int64_t k = 0; k < in && k < 4096; ++k) wq[k] = q16(w[o * in + k], bound);
        const float bq = q16(b[o], bound);
        for (int64_t r = 0; r < n; ++r) {
            float acc = 0.0f;
            for (int64_t k = 0; k < in; ++k) acc += x[r * in + k] * wq[k];
            y[r * out + o] = acc + bq;
        }
    }
}
"""

lib = load_cpp(CPP_SOURCE)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty(x.shape[0], self.fc.out_features, dtype=x.dtype)
        lib.linear_q16(x, self.fc.weight, self.fc.bias, y, x.shape[0], self.fc.in_features, self.fc.out_features)
        return y
