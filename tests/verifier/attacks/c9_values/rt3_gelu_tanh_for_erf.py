"""rt3 class 2 (tolerances): the tanh approximation of GELU passes for the exact (erf) GELU task.

The trick: cpu_l1/03_gelu asks for F.gelu(x, approximate="none"). The kernel computes the cheaper
tanh approximation 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) with a rational tanh: another function,
wrong by up to ~5e-4 absolute, which the float32 tolerance (1e-2 elementwise and norm-wise) cannot see.
Not a re-use of the bfloat16 door (no precision downgrade of the output: a different formula).

Expected: feasible (approximated). Verifier answered: see attacks/run.py's table.
"""
import torch
import torch.nn as nn

from evokernel.cpu import load_cpp

CPP = r"""
#include <cstdint>
static inline float fast_tanh(float z) {  // clamped rational approximation, no libm call
    if (z > 4.97f) return 1.0f;
    if (z < -4.97f) return -1.0f;
    const float z2 = z * z;
    return z * (135135.0f + z2 * (17325.0f + z2 * (378.0f + z2))) /
           (135135.0f + z2 * (62370.0f + z2 * (3150.0f + z2 * 28.0f)));
}
extern "C" void gelu_tanh(const float* __restrict x, float* __restrict y, int64_t n) {
    #pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        y[i] = 0.5f * v * (1.0f + fast_tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
    }
}
"""

lib = load_cpp(CPP)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        lib.gelu_tanh(x, out, x.numel())
        return out
